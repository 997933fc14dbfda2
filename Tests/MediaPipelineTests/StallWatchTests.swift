import Testing
import ChorusTestSupport
import MediaClock
@testable import MediaPipeline

/// When a stream is taken for dead, on made-up instants.
@Suite(.ownThread)
struct StallWatchTests {
    let opened = HostTime(nanoseconds: 1_000_000_000_000)

    /// One look at the device (outside `#expect`, which cannot take a mutating call).
    func look(_ watch: inout StallWatch, free: Bool, at now: HostTime) -> Bool {
        watch.isStalled(periodFree: free, at: now)
    }

    @Test func aStreamThatTakesNothingIsNotJudgedWithinItsGrace() {
        var watch = StallWatch(openedAt: opened)
        // An idle sink may hold a new stream's writes for a second: no verdict before the grace.
        #expect(!look(&watch, free: false, at: opened + StallWatch.grace))
        #expect(look(&watch, free: false, at: opened + StallWatch.grace + .nanoseconds(1)))
    }

    @Test func aStreamThatStopsFreeingPeriodsIsGivenUpAfterTheLimit() {
        var watch = StallWatch(openedAt: opened)
        let lastFree = opened + .seconds(10)
        #expect(!look(&watch, free: true, at: lastFree))
        #expect(!look(&watch, free: false, at: lastFree + StallWatch.limit))
        #expect(look(&watch, free: false, at: lastFree + StallWatch.limit + .nanoseconds(1)))
    }

    @Test func aFreePeriodStartsTheCountAgain() {
        var watch = StallWatch(openedAt: opened)
        var now = opened + .seconds(5)
        #expect(!look(&watch, free: true, at: now))
        // A slow stream that frees a period every 400 ms is slow, not dead.
        for _ in 0..<10 {
            #expect(!look(&watch, free: false, at: now + .milliseconds(399)))
            #expect(!look(&watch, free: true, at: now + .milliseconds(400)))
            now = now + .milliseconds(400)
        }
        #expect(watch.lastProgress == now)
    }
}
