import Foundation
import MediaClock
import Testing

@testable import GroupSync

/// How `DelayBalance` reads the shape of a direction's floor: a timer's tick added to a jitter
/// ramps up from the floor, a queue piles crossings on it.
@Suite("DelayBalance") struct DelayBalanceTests {
    /// Delays (ns) of `count` crossings drawn by `draw` from a seeded generator.
    static func delays(_ count: Int, seed: UInt64, _ draw: (inout SeededGenerator) -> Double) -> [Double] {
        var generator = SeededGenerator(seed: seed)
        return (0..<count).map { _ in draw(&generator) }
    }

    /// A uniform jitter of 2 ms plus a uniform wait of up to a 2 ms tick: the density rises
    /// linearly from the floor. Judged over many seeds, so that a verdict that holds only by
    /// chance fails.
    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6, 7, 8])
    func aTickAddedToAJitterRampsUp(seed: UInt64) {
        let ticked = Self.delays(2048, seed: seed) { 2_000_000 * $0.unit() + 2_000_000 * $0.unit() }
        let spread = Self.deviation(ticked)
        #expect(DelayBalance.isRamped(ticked, spread: spread), "seed \(seed)")
    }

    /// A uniform jitter alone is flat at its floor, an exponential queue densest there, and
    /// neither is ramped, over many seeds.
    @Test(arguments: [UInt64(11), 12, 13, 14, 15, 16, 17, 18])
    func queuesAndPlainJitterAreNotRamped(seed: UInt64) {
        let uniform = Self.delays(2048, seed: seed) { 4_000_000 * $0.unit() }
        #expect(!DelayBalance.isRamped(uniform, spread: Self.deviation(uniform)), "uniform, seed \(seed)")
        let queued = Self.delays(2048, seed: seed) { -1_500_000 * log(1 - $0.unit()) }
        #expect(!DelayBalance.isRamped(queued, spread: Self.deviation(queued)), "exponential, seed \(seed)")
    }

    /// A host's Gaussian timestamping noise rises from its extreme too, but too few crossings
    /// lie near it to be read as a floor's shape.
    @Test func timestampNoiseIsNotReadAsARamp() {
        let noisy = Self.delays(2048, seed: 21) { 3_000_000 + 20_000 * $0.normal() }
        #expect(!DelayBalance.isRamped(noisy, spread: Self.deviation(noisy)))
        // Nor are a few crossings enough, however they lie.
        let few = Self.delays(100, seed: 22) { 2_000_000 * $0.unit() + 2_000_000 * $0.unit() }
        #expect(!DelayBalance.isRamped(few, spread: Self.deviation(few)))
    }

    /// A single crossing stamped a millisecond early stands below a flat floor; the bands
    /// count from the second fastest, so it does not make the floor read as ramped.
    @Test(arguments: [UInt64(41), 42, 43, 44])
    func aLoneEarlyCrossingDoesNotMakeAFloorRamped(seed: UInt64) {
        var flat = Self.delays(2048, seed: seed) { 4_000_000 * $0.unit() }
        flat[1000] = -1_000_000
        #expect(!DelayBalance.isRamped(flat, spread: Self.deviation(flat)), "seed \(seed)")
    }

    /// Directions that do not spread at all are alike, not unlike (their ratio is not a
    /// number).
    @Test func unspreadDirectionsAreAlike() {
        let x = (0..<128).map { Double($0) * 1_000_000 }
        let judged = DelayBalance(x: x, upper: x.map { _ in 2_000 }, lower: x.map { _ in -2_000 }, slope: 0, offset: 0)
        #expect(judged.spreadsWithin(1.6) == true)
        #expect(judged.spreadsAlike == true)
    }

    /// Requests spread over a jitter and a tick while every reply comes out on the same tick:
    /// the spreads are as unlike as a busier queue's, yet the balance trusts the centre, which
    /// lies a millisecond from the floors' line.
    @Test func tickLockedRepliesLeaveTheCentreTrusted() {
        var generator = SeededGenerator(seed: 31)
        var x: [Double] = [], upper: [Double] = [], lower: [Double] = []
        for index in 0..<2048 {
            // True offset 0: requests take 2 to 6 ms, replies 4 ms less up to 30 µs of noise.
            let request = 2_000_000 + 2_000_000 * generator.unit() + 2_000_000 * generator.unit()
            let reply = 3_970_000 + 30_000 * generator.unit()
            x.append(Double(index - 2047) * 20_000_000)
            upper.append(request)
            lower.append(-reply)
        }
        // The floors' line: midway between the fastest request and the fastest reply.
        let floors = ((upper.min() ?? 0) + (lower.max() ?? 0)) / 2
        let judged = DelayBalance(x: x, upper: upper, lower: lower, slope: 0, offset: floors)
        #expect(judged.spreadsAlike == false)
        #expect(judged.rampedFloor == true)
        #expect(judged.trustsCentre == true)
        guard let shift = judged.shift else {
            Issue.record("the centre was not found off the floors' line (floors' line at \(floors) ns)")
            return
        }
        // The centre lies near the true offset, 0, a millisecond from the floors' line.
        #expect(abs(floors) > 500_000)
        #expect(abs(floors + shift.offset) < 50_000, "floors' line \(floors) ns, shift \(shift.offset) ns")
    }

    /// The winsorized standard deviation is the balance's; a plain one serves these shapes.
    static func deviation(_ values: [Double]) -> Double {
        let mean = values.reduce(0, +) / Double(values.count)
        return (values.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(values.count - 1)).squareRoot()
    }
}
