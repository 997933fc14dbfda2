import ChorusSimulation
import Foundation
import Testing
import ChorusTestSupport
import MediaClock

/// CoreMedia's C-style functions as ported code calls them: range mapping and folding, and
/// conversions between clocks and timebases.
@Suite(.ownThread) struct CoreMediaFunctionTests {
    let second = CMTime(value: 1, timescale: 1)

    @Test func rangePredicatesAndDescriptions() {
        #expect(CMTIMERANGE_IS_INVALID(.invalid) && !CMTIMERANGE_IS_INVALID(.zero))
        let forever = CMTimeRange(start: .zero, duration: .positiveInfinity)
        #expect(CMTIMERANGE_IS_INDEFINITE(CMTimeRange(start: .zero, duration: .indefinite)) && !CMTIMERANGE_IS_INDEFINITE(forever))
        #expect(CMTIME_IS_POSITIVEINFINITY(.positiveInfinity) && CMTIME_IS_NEGATIVEINFINITY(.negativeInfinity))
        #expect(!CMTIME_IS_POSITIVEINFINITY(.negativeInfinity))
        let range = CMTimeRange(start: .zero, duration: CMTime(value: 3, timescale: 2))
        #expect(CMTimeRangeCopyDescription(allocator: nil, range: range) == "{{0/1 = 0.000}, {3/2 = 1.500}}")
    }

    @Test("a time and a duration map from one range onto another exactly, by the ratio of their durations")
    func mapping() {
        let from = CMTimeRange(start: second, duration: CMTime(value: 2, timescale: 1))
        let to = CMTimeRange(start: CMTime(value: 10, timescale: 1), duration: CMTime(value: 4, timescale: 1))
        #expect(CMTimeMapTimeFromRangeToRange(CMTime(value: 2, timescale: 1), fromRange: from, toRange: to) == CMTime(value: 12, timescale: 1))
        #expect(CMTimeMapTimeFromRangeToRange(from.start, fromRange: from, toRange: to) == to.start)
        // Outside the range it maps on by the same line.
        #expect(CMTimeMapTimeFromRangeToRange(.zero, fromRange: from, toRange: to) == CMTime(value: 8, timescale: 1))
        #expect(CMTimeMapDurationFromRangeToRange(CMTime(value: 1, timescale: 3), fromRange: from, toRange: to)
                == CMTime(value: 2, timescale: 3))
        // A third of a 1001-tick frame onto a range three times as long: exactly one frame.
        let frame = CMTime(value: 1001, timescale: 30_000)
        let tripled = CMTimeRange(start: .zero, duration: CMTime(value: 3, timescale: 1))
        let mapped = CMTimeMapDurationFromRangeToRange(CMTime(value: 1001, timescale: 90_000), fromRange: CMTimeRange(start: .zero, duration: second),
                                                       toRange: tripled)
        #expect(mapped == frame && !mapped.hasBeenRounded)
        #expect(!CMTimeMapTimeFromRangeToRange(.invalid, fromRange: from, toRange: to).isValid)
        #expect(!CMTimeMapTimeFromRangeToRange(second, fromRange: CMTimeRange(start: .zero, duration: .zero), toRange: to).isValid)
        #expect(!CMTimeMapDurationFromRangeToRange(second, fromRange: from, toRange: CMTimeRange(start: .zero, duration: .indefinite)).isValid)
        // An empty or backward range maps nothing, as CoreMedia's.
        #expect(!CMTimeMapTimeFromRangeToRange(second, fromRange: from, toRange: CMTimeRange(start: second, duration: .zero)).isValid)
        #expect(!CMTimeMapDurationFromRangeToRange(second, fromRange: CMTimeRange(start: .zero, duration: CMTime(value: -1, timescale: 1)),
                                                   toRange: to).isValid)
    }

    @Test("a time folds into a range as a loop over the range plays it")
    func folding() {
        let range = CMTimeRange(start: second, duration: CMTime(value: 2, timescale: 1))
        #expect(CMTimeFoldIntoRange(CMTime(value: 2, timescale: 1), foldRange: range) == CMTime(value: 2, timescale: 1))
        #expect(CMTimeFoldIntoRange(CMTime(value: 11, timescale: 2), foldRange: range) == CMTime(value: 3, timescale: 2))
        #expect(CMTimeFoldIntoRange(CMTime(value: -1, timescale: 2), foldRange: range) == CMTime(value: 3, timescale: 2))
        // The range's end is the next loop's start.
        #expect(CMTimeFoldIntoRange(range.end, foldRange: range) == range.start)
        #expect(!CMTimeFoldIntoRange(.positiveInfinity, foldRange: range).isValid)
        #expect(!CMTimeFoldIntoRange(second, foldRange: CMTimeRange(start: .zero, duration: .zero)).isValid)
    }

    @Test("times convert between clocks and timebases through host time; anything else is neither")
    func syncConversions() throws {
        let host = SimulatedHostClock(start: HostTime(nanoseconds: 5_000_000_000))
        let clock = CMClock(hostClock: host)
        var made: CMTimebase?
        #expect(CMTimebaseCreateWithMasterClock(allocator: nil, masterClock: clock, timebaseOut: &made) == noErr)
        let timebase = try #require(made)
        #expect(CMTimebaseGetMasterClock(timebase) === clock && CMTimebaseCopySourceClock(timebase) === clock)
        #expect(CMTimebaseGetMasterTimebase(timebase) == nil && CMTimebaseCopyUltimateSourceClock(timebase) === clock)
        #expect(CMTimebaseSetTime(timebase, time: CMTime(value: 10, timescale: 1)) == noErr)
        #expect(CMTimebaseSetRate(timebase, rate: 2) == noErr)
        // Timebase time 12 comes a second of host time from now; the clock then reads 6 s.
        #expect(CMSyncConvertTime(CMTime(value: 12, timescale: 1), from: timebase, to: clock) == CMTime(value: 6, timescale: 1))
        #expect(CMSyncConvertTime(CMTime(value: 6, timescale: 1), from: clock, to: timebase) == CMTime(value: 12, timescale: 1))
        #expect(CMSyncConvertTime(second, from: timebase, to: timebase) == second)
        #expect(CMSyncGetTime(timebase) == CMTime(value: 10, timescale: 1))
        #expect(CMSyncGetTime(clock) == CMTime(value: 5, timescale: 1))
        #expect(CMSyncGetRelativeRate(timebase, relativeTo: clock) == 2)
        #expect(CMSyncGetRelativeRate(clock, relativeTo: timebase) == 0.5)
        #expect(!CMSyncMightDrift(timebase, clock))
        // A timebase driven by another converts through both.
        var child: CMTimebase?
        #expect(CMTimebaseCreateWithMasterTimebase(allocator: nil, masterTimebase: timebase, timebaseOut: &child) == noErr)
        let inner = try #require(child)
        #expect(CMTimebaseSetTime(inner, time: .zero) == noErr)
        #expect(CMTimebaseSetRate(inner, rate: 1) == noErr)
        #expect(CMSyncConvertTime(CMTime(value: 4, timescale: 1), from: inner, to: clock) == CMTime(value: 7, timescale: 1))
        #expect(CMSyncGetRelativeRate(inner, relativeTo: clock) == 2)
        // A stopped timebase reads no host time, and an object that is neither answers nothing.
        #expect(CMTimebaseSetRate(timebase, rate: 0) == noErr)
        #expect(!CMSyncConvertTime(CMTime(value: 12, timescale: 1), from: timebase, to: clock).isValid)
        #expect(CMSyncGetRelativeRate(clock, relativeTo: timebase) == 0)
        let stranger = NSObject()
        #expect(!CMSyncGetTime(stranger).isValid)
        #expect(!CMSyncConvertTime(second, from: clock, to: stranger).isValid)
        #expect(CMSyncMightDrift(clock, stranger))
    }

    @Test func hostTimeInSystemUnitsRoundTrips() {
        let host = CMClockMakeHostTimeFromSystemUnits(1_234_567_890)
        #expect(CMClockConvertHostTimeToSystemUnits(host) == 1_234_567_890)
        #expect(CMClockConvertHostTimeToSystemUnits(CMTime(value: 3, timescale: 2)) == 1_500_000_000)
        #expect(CMClockConvertHostTimeToSystemUnits(.invalid) == 0)
        #expect(CMClockConvertHostTimeToSystemUnits(CMTime(value: -1, timescale: 1)) == 0)
        // Apple's Swift spellings of the same.
        #expect(CMClock.makeHostTime(fromSystemUnits: 42) == CMTime(value: 42, timescale: 1_000_000_000))
        #expect(CMClock.convertHostTimeToSystemUnits(CMTime(value: 1, timescale: 4)) == 250_000_000)
    }

    @Test("two clocks of the host's clock do not drift apart, and invalidating a clock succeeds")
    func clocksMightDrift() {
        let host = CMClockGetHostTimeClock()
        let other = CMClock(hostClock: MonotonicHostClock(), anchorHostTime: HostTime(nanoseconds: 0), anchorTime: .zero, rate: 1)
        #expect(!host.mightDrift(relativeTo: other) && !CMClockMightDrift(host, otherClock: host))
        #expect(CMClockInvalidate(host) == noErr)
    }

    @Test("a timebase's time and rate are read together")
    func timebaseTimeAndRate() throws {
        let timebase = CMTimebase(sourceClock: CMClockGetHostTimeClock(), notificationCenter: NotificationCenter())
        try timebase.setRate(0)
        try timebase.setTime(CMTime(value: 5, timescale: 1))
        var time = CMTime.invalid
        var rate = -1.0
        #expect(CMTimebaseGetTimeAndRate(timebase, time: &time, rate: &rate) == noErr)
        #expect(time == CMTime(value: 5, timescale: 1) && rate == 0)
        #expect(CMTimebaseGetTimeAndRate(timebase, time: nil, rate: &rate) == noErr)
    }
}
