import Testing
import ChorusTestSupport
@testable import MediaPipeline

/// The throughput estimate and the choice of variant it drives, stepped on simulated time.
@Suite(.ownThread) struct AdaptiveVariantTests {
    /// Feeds `estimate` reads of `bitsPerSecond` for `seconds` of transfer, a tenth of a
    /// second at a time, from the totals `totals` (updated).
    static func feed(_ estimate: inout ThroughputEstimate, _ totals: inout (bytes: Int64, nanoseconds: Int64),
                     bitsPerSecond: Double, seconds: Double) {
        let steps = Int((seconds * 10).rounded())
        for _ in 0..<steps {
            totals.bytes += Int64(bitsPerSecond / 8 / 10)
            totals.nanoseconds += 100_000_000
            estimate.update(totalBytes: totals.bytes, transferNanoseconds: totals.nanoseconds)
        }
    }

    @Test("the estimate is the rate the reads brought, once enough was seen; a fall shows within seconds, a short burst does not lift it")
    func theEstimateFollowsFallsAtOnceAndRisesSlowly() {
        var estimate = ThroughputEstimate()
        var totals: (bytes: Int64, nanoseconds: Int64) = (0, 0)
        #expect(estimate.bitsPerSecond == nil)
        Self.feed(&estimate, &totals, bitsPerSecond: 1_000_000, seconds: 0.3)
        #expect(estimate.bitsPerSecond == nil, "before \(ThroughputEstimate.leastEvidence) s of transfer")
        Self.feed(&estimate, &totals, bitsPerSecond: 1_000_000, seconds: 10)
        let steady = estimate.bitsPerSecond ?? 0
        #expect(abs(steady - 1_000_000) < 1_000, "steady at \(steady)")
        // Down to a fifth: the quick average has most of it after two of its half-lives.
        Self.feed(&estimate, &totals, bitsPerSecond: 200_000, seconds: 4)
        #expect((estimate.bitsPerSecond ?? .infinity) < 450_000, "after 4 s at 200 kbit/s: \(estimate.bitsPerSecond ?? 0)")
        // Back up for one second (bytes that waited in the system's buffers): the slow
        // average holds the estimate down.
        Self.feed(&estimate, &totals, bitsPerSecond: 200_000, seconds: 30)
        Self.feed(&estimate, &totals, bitsPerSecond: 10_000_000, seconds: 1)
        #expect((estimate.bitsPerSecond ?? .infinity) < 1_500_000, "after a one-second burst: \(estimate.bitsPerSecond ?? 0)")
    }

    @Test("time without reads, and counters that went back, change nothing")
    func idleTimeSaysNothing() {
        var estimate = ThroughputEstimate()
        var totals: (bytes: Int64, nanoseconds: Int64) = (0, 0)
        Self.feed(&estimate, &totals, bitsPerSecond: 500_000, seconds: 5)
        let before = estimate
        for _ in 0..<100 { estimate.update(totalBytes: totals.bytes, transferNanoseconds: totals.nanoseconds) }
        #expect(estimate == before)
        estimate.update(totalBytes: 10, transferNanoseconds: 10)
        #expect(estimate.bitsPerSecond == before.bitsPerSecond)
    }

    static let ladder = [64_000, 128_000, 256_000]

    @Test("a variant is chosen with room to spare; a fall moves down at once, to the variant it carries")
    func fallsMoveDownAtOnce() throws {
        var choice = try #require(AdaptiveVariantChoice(bandwidths: Self.ladder.reversed(), playing: 256_000))
        #expect(choice.chosenBandwidth == 256_000)
        #expect(choice.carried(by: 400_000) == 2)
        #expect(choice.carried(by: 300_000) == 1, "256 kbit/s is more than 70 % of 300")
        #expect(choice.carried(by: 10_000) == 0, "none is carried: the lowest")
        let moved1 = choice.update(estimate: nil, stalled: false, now: 0)
        #expect(!moved1)
        let moved2 = choice.update(estimate: 1_000_000, stalled: false, now: 1)
        #expect(!moved2)
        let moved3 = choice.update(estimate: 100_000, stalled: false, now: 2)
        #expect(moved3)
        #expect(choice.chosenBandwidth == 64_000)
    }

    @Test("a rise is taken one step at a time, each once it has lasted")
    func risesAreTakenSlowly() throws {
        var choice = try #require(AdaptiveVariantChoice(bandwidths: Self.ladder, playing: 64_000))
        var now = 0.0
        var moves: [(Double, Int)] = []
        while now < 30 {
            if choice.update(estimate: 2_000_000, stalled: false, now: now) { moves.append((now, choice.chosenBandwidth)) }
            now += 0.5
        }
        #expect(moves.map(\.1) == [128_000, 256_000])
        #expect(moves.map(\.0) == [AdaptiveVariantChoice.riseHold, 2 * AdaptiveVariantChoice.riseHold + 0.5])
        // An estimate that dips below the next variant's need starts the wait again.
        var dipping = try #require(AdaptiveVariantChoice(bandwidths: Self.ladder, playing: 64_000))
        for step in 0..<40 {
            let estimate: Double = step % 10 == 9 ? 150_000 : 2_000_000
            _ = dipping.update(estimate: estimate, stalled: false, now: Double(step) * 0.5)
        }
        #expect(dipping.chosenBandwidth == 64_000, "never carried for \(AdaptiveVariantChoice.riseHold) s on end")
    }

    @Test("a stall moves one step down whatever the estimate says, and each such stall waits longer before a rise")
    func stallsBackOff() throws {
        var choice = try #require(AdaptiveVariantChoice(bandwidths: Self.ladder, playing: 256_000))
        let moved4 = choice.update(estimate: 2_000_000, stalled: true, now: 0)
        #expect(moved4)
        #expect(choice.chosenBandwidth == 128_000)
        var now = 0.5
        while choice.chosenBandwidth == 128_000, now < 1_000 {
            _ = choice.update(estimate: 2_000_000, stalled: false, now: now)
            now += 0.5
        }
        #expect(now - 0.5 == AdaptiveVariantChoice.firstBackOff, "rose again at \(now - 0.5) s")
        // A second stall: twice the wait.
        let second = now
        let moved5 = choice.update(estimate: 2_000_000, stalled: true, now: second)
        #expect(moved5)
        while choice.chosenBandwidth == 128_000, now < 1_000 {
            _ = choice.update(estimate: 2_000_000, stalled: false, now: now)
            now += 0.5
        }
        #expect(now - 0.5 - second == 2 * AdaptiveVariantChoice.firstBackOff, "rose again \(now - 0.5 - second) s after")
        // The lowest variant has nowhere to go.
        var lowest = try #require(AdaptiveVariantChoice(bandwidths: Self.ladder, playing: 64_000))
        let moved6 = lowest.update(estimate: nil, stalled: true, now: 0)
        #expect(!moved6)
    }

    @Test("one variant, or none with a bandwidth, leaves nothing to choose")
    func nothingToChoose() {
        #expect(AdaptiveVariantChoice(bandwidths: [128_000], playing: 128_000) == nil)
        #expect(AdaptiveVariantChoice(bandwidths: [0, 0], playing: 0) == nil)
        #expect(AdaptiveVariantChoice(bandwidths: [128_000, 128_000], playing: 128_000) == nil)
        #expect(AdaptiveVariantChoice(bandwidths: [64_000, 128_000], playing: 100_000)?.chosenBandwidth == 128_000)
    }
}
