import Testing
import ChorusTestSupport
import MediaClock

@Suite("HostTime", .ownThread)
struct HostTimeTests {
    @Test func arithmeticWithDurations() {
        let start = HostTime(nanoseconds: 1_000)
        #expect((start + .seconds(1)).nanoseconds == 1_000_001_000)
        #expect((start - .microseconds(2)).nanoseconds == -1_000)
        #expect(HostTime(nanoseconds: 5_000_000_000) - HostTime(nanoseconds: 1_500_000_000) == .milliseconds(3500))
        #expect(HostTime(nanoseconds: 0) - HostTime(nanoseconds: 7) == .nanoseconds(-7))
        var moving = start
        moving += .nanoseconds(5)
        moving -= .nanoseconds(2)
        #expect(moving.nanoseconds == 1_003)
    }

    @Test func subNanosecondDurationsRoundToNearest() {
        let origin = HostTime(nanoseconds: 0)
        #expect((origin + Duration(secondsComponent: 0, attosecondsComponent: 1_500_000_000)).nanoseconds == 2)
        #expect((origin + Duration(secondsComponent: 0, attosecondsComponent: 1_499_999_999)).nanoseconds == 1)
        #expect((origin - Duration(secondsComponent: 0, attosecondsComponent: 1_500_000_000)).nanoseconds == -2)
    }

    @Test func arithmeticSaturatesInsteadOfTrapping() {
        #expect((HostTime(nanoseconds: .max) + .seconds(1)).nanoseconds == .max)
        #expect((HostTime(nanoseconds: .min) - .seconds(1)).nanoseconds == .min)
        let span = HostTime(nanoseconds: .max) - HostTime(nanoseconds: .min)
        #expect(span.components.seconds == 18_446_744_073)
    }

    @Test func differenceIsExactForRandomPairs() {
        var rng = SplitMix64(seed: 20)
        for _ in 0..<1_000 {
            let a = HostTime(nanoseconds: Int64.random(in: -(1 << 62)...(1 << 62), using: &rng))
            let b = HostTime(nanoseconds: Int64.random(in: -(1 << 62)...(1 << 62), using: &rng))
            #expect(b + (a - b) == a)
            #expect((a < b) == ((a - b) < .zero))
        }
    }

    @Test func cmTimeConversions() throws {
        let time = HostTime(nanoseconds: 123_456_789)
        #expect(time.cmTime.value == 123_456_789 && time.cmTime.timescale == 1_000_000_000)
        #expect(HostTime(time.cmTime) == time)
        #expect(HostTime(CMTime(value: 3, timescale: 2))?.nanoseconds == 1_500_000_000)
        #expect(HostTime(CMTime(value: 1, timescale: 3))?.nanoseconds == 333_333_333)
        #expect(HostTime(CMTime.invalid) == nil)
        #expect(HostTime(CMTime.indefinite) == nil)
        #expect(HostTime(CMTime.positiveInfinity) == nil)
        #expect(HostTime(CMTime(value: .max, timescale: 1)) == nil)
    }

    @Test func nowIsMonotonic() {
        let first = HostTime.now()
        let second = HostTime.now()
        #expect(first <= second)
        #expect(first.nanoseconds > 0)
    }
}
