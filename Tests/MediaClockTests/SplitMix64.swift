/// Deterministic pseudo-random generator (SplitMix64) so property tests are
/// reproducible: a failing seed fails the same way every run.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Random CMTime ingredients biased toward the timescales media code actually uses.
enum Sample {
    /// Timescales seen in practice plus awkward ones (primes, 1, the maximum).
    static let commonTimescales: [Int32] = [1, 2, 3, 7, 600, 1000, 44_100, 48_000, 90_000, 1_000_000, 1_000_000_000, 999_999_937, 0x7fff_ffff]

    static func timescale(_ rng: inout SplitMix64) -> Int32 {
        if Bool.random(using: &rng) {
            return commonTimescales.randomElement(using: &rng) ?? 1
        }
        return Int32.random(in: 1...1_000_000, using: &rng)
    }

    /// Values up to 2^40 in magnitude: large enough to be interesting, small enough that
    /// sums rarely overflow.
    static func value(_ rng: inout SplitMix64) -> Int64 {
        let limit: Int64 = 1 << 40
        return Int64.random(in: -limit...limit, using: &rng)
    }
}
