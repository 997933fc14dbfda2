import Testing
import ChorusTestSupport
@testable import MediaPipeline

/// An item's byte counter and the throughput it observes.
@Suite(.ownThread) struct NetworkActivityTests {
    @Test("the observed rate is the bytes over the time the reads that brought them took, and unknown before any came")
    func observedRateIsBytesOverReadTime() {
        let activity = NetworkActivity()
        #expect(activity.observedBitsPerSecond == nil)
        // A read that brought nothing changes nothing; a time below zero counts as none.
        activity.add(1_000, from: 0, to: 1_000_000)
        activity.add(1_000, from: 2_000_000, to: 5_000_000)
        activity.add(0, from: 6_000_000, to: 11_000_000)
        activity.add(500, from: 12_000_000, to: 11_999_993)
        #expect(activity.total == 2_500)
        // 20,000 bits over 4 ms.
        let expected: Double = 20_000 * 1e9 / 4_000_000
        #expect(activity.observedBitsPerSecond == expected)
    }

    @Test("bytes that came while the reader was held back count as bytes, not in the rate")
    func heldBackBytesAreNotMeasured() {
        let activity = NetworkActivity()
        activity.add(10_000, from: 0, to: 80_000_000)
        // 200 kB the system held, read at once.
        activity.addUnmeasured(200_000)
        activity.addUnmeasured(0)
        #expect(activity.total == 210_000)
        #expect(activity.measured == (bytes: 10_000, nanoseconds: 80_000_000))
        let expected: Double = 80_000 * 1e9 / 80_000_000
        #expect(activity.observedBitsPerSecond == expected)
    }

    @Test("reads of two openings at once count their time once: the rate is what the one network brought")
    func overlappingReadsCountTheirTimeOnce() {
        let activity = NetworkActivity()
        // The sound's reader from 0 to 100 ms, a display's from 50 to 150 ms, then the
        // sound's again from 120 to 200 ms (ended after the other began): 200 ms in all.
        activity.add(10_000, from: 0, to: 100_000_000)
        activity.add(10_000, from: 50_000_000, to: 150_000_000)
        activity.add(5_000, from: 120_000_000, to: 200_000_000)
        #expect(activity.measured == (bytes: 25_000, nanoseconds: 200_000_000))
        // A read wholly inside time already counted adds its bytes, not its time.
        activity.add(5_000, from: 160_000_000, to: 190_000_000)
        #expect(activity.measured == (bytes: 30_000, nanoseconds: 200_000_000))
        let expected: Double = 240_000 * 1e9 / 200_000_000
        #expect(activity.observedBitsPerSecond == expected)
        // Reads that end out of order: a display's opening from 300 to 400 ms, told after
        // a read of the sound's from 350 to 360 ms.
        activity.add(1_000, from: 350_000_000, to: 360_000_000)
        activity.add(1_000, from: 300_000_000, to: 400_000_000)
        #expect(activity.measured == (bytes: 32_000, nanoseconds: 300_000_000))
    }

    @Test("covered time counts each instant once, whatever order its spans come in, and forgets what ended long ago")
    func coveredTime() {
        var covered = CoveredTime()
        #expect(covered.cover(from: 10, to: 20) == 10)
        #expect(covered.cover(from: 30, to: 40) == 10)
        // Across both and the gap between.
        #expect(covered.cover(from: 0, to: 50) == 30)
        #expect(covered.spans.count == 1)
        #expect(covered.cover(from: 5, to: 45) == 0)
        #expect(covered.cover(from: 60, to: 55) == 0)
        // Touching spans merge.
        #expect(covered.cover(from: 50, to: 60) == 10)
        #expect(covered.spans.map(\.start) == [0] && covered.spans.map(\.end) == [60])
        // A span ended longer ago than the retention is let go.
        #expect(covered.cover(from: CoveredTime.retention + 100, to: CoveredTime.retention + 200) == 100)
        #expect(covered.spans.count == 1)
    }
}
