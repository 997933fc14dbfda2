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
        activity.add(1_000, over: 1_000_000)
        activity.add(1_000, over: 3_000_000)
        activity.add(0, over: 5_000_000)
        activity.add(500, over: -7)
        #expect(activity.total == 2_500)
        // 20,000 bits over 4 ms.
        #expect(activity.observedBitsPerSecond == 20_000 * 1e9 / 4_000_000)
    }

    @Test("bytes that came while the reader was held back count as bytes, not in the rate")
    func heldBackBytesAreNotMeasured() {
        let activity = NetworkActivity()
        activity.add(10_000, over: 80_000_000)
        // 200 kB the system held, read at once.
        activity.addUnmeasured(200_000)
        activity.addUnmeasured(0)
        #expect(activity.total == 210_000)
        #expect(activity.measured == (bytes: 10_000, nanoseconds: 80_000_000))
        #expect(activity.observedBitsPerSecond == 80_000 * 1e9 / 80_000_000)
    }
}
