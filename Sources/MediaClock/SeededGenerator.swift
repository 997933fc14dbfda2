/// SplitMix64: a small, fast, seedable generator so impairment runs and simulations are
/// reproducible: a failing seed fails the same way every run.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator whose sequence is fixed by `seed`.
    public init(seed: UInt64) {
        state = seed
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform double in [0, 1).
    public mutating func unit() -> Double {
        Double(next() >> 11) * 0x1p-53
    }

    /// A standard normal deviate (Box-Muller).
    public mutating func normal() -> Double {
        let u1 = max(unit(), 0x1p-53)
        let u2 = unit()
        return (-2 * _log(u1)).squareRoot() * _cos(2 * Double.pi * u2)
    }
}

#if canImport(Glibc)
import Glibc
private func _log(_ x: Double) -> Double { Glibc.log(x) }
private func _cos(_ x: Double) -> Double { Glibc.cos(x) }
#elseif canImport(Musl)
import Musl
private func _log(_ x: Double) -> Double { Musl.log(x) }
private func _cos(_ x: Double) -> Double { Musl.cos(x) }
#endif
