import MediaClock

/// Deterministic pseudo-random numbers so property tests are reproducible: a failing seed
/// fails the same way every run.
typealias SplitMix64 = SeededGenerator

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
