import ChorusSimulation
import Foundation
import Synchronization
import MutexAnnotations
import Testing
import ChorusTestSupport
import MediaClock

/// Collects notification names posted by one timebase.
private final class NotificationLog: Sendable {
    private let names = Mutex<[Notification.Name]>([])

    init(center: NotificationCenter, timebase: CMTimebase) {
        for name in [CMTimebase.timeJumpedNotification, CMTimebase.effectiveRateChangedNotification] {
            // The observer lives as long as the private center, which the test owns.
            _ = center.addObserver(forName: name, object: timebase, queue: nil) { [self] notification in
                record(notification.name)
            }
        }
    }

    private func record(_ name: Notification.Name) {
        names.withLockAnnotated { $0.append(name) }
    }

    func drain() -> [Notification.Name] {
        names.withLockAnnotated { current in
            defer { current.removeAll() }
            return current
        }
    }
}

private func seconds(_ value: Int64, _ timescale: Int32 = 1) -> CMTime {
    CMTime(value: value, timescale: timescale)
}

@Suite("CMTimebase", .ownThread)
struct CMTimebaseTests {
    let host = SimulatedHostClock(start: HostTime(nanoseconds: 10_000_000_000))
    var clock: CMClock { CMClock(hostClock: host) }

    @Test func newTimebaseIsStoppedAtZero() throws {
        let timebase = CMTimebase(sourceClock: clock)
        #expect(timebase.time == .zero)
        #expect(timebase.rate == 0 && timebase.effectiveRate == 0)
        host.advance(by: .seconds(5))
        #expect(CMTimebaseGetTime(timebase) == .zero)
        #expect(timebase.sourceClock != nil && timebase.sourceTimebase == nil)
        let viaAllocator = try CMTimebase(allocator: nil, sourceClock: clock)
        #expect(viaAllocator.time == .zero)
    }

    @Test func rateChangesKeepTimeContinuous() throws {
        let timebase = CMTimebase(sourceClock: clock)
        try timebase.setRate(1)
        host.advance(by: .seconds(2))
        #expect(timebase.time == seconds(2))
        try timebase.setRate(3)
        #expect(timebase.time == seconds(2))
        host.advance(by: .milliseconds(500))
        #expect(timebase.time == CMTime(value: 3_500, timescale: 1000))
        try timebase.setRate(-0.5)
        host.advance(by: .seconds(1))
        #expect(timebase.time == seconds(3))
        try timebase.setRate(0)
        host.advance(by: .seconds(100))
        #expect(timebase.time == seconds(3))
        #expect(CMTimebaseGetRate(timebase) == 0)
    }

    @Test func setRateAndAnchorTimeMapsSourceTime() throws {
        let timebase = CMTimebase(sourceClock: clock)
        // At clock time 10 s (now) the timebase reads 100 s and runs at double speed.
        try timebase.setRateAndAnchorTime(rate: 2, anchorTime: seconds(100), referenceTime: host.now().cmTime)
        #expect(timebase.time == seconds(100))
        host.advance(by: .milliseconds(1500))
        #expect(timebase.time == seconds(103))
        #expect(timebase.time(atHostTime: HostTime(nanoseconds: 9_000_000_000)) == seconds(98))
        // An anchor in the past is honoured: at clock time 11.5 s it reads 200 s.
        try timebase.setAnchorTime(seconds(200), referenceTime: CMTime(value: 23, timescale: 2))
        #expect(timebase.time == seconds(200))
        #expect(CMTimebaseSetRateAndAnchorTime(timebase, rate: 1, anchorTime: seconds(0), immediateSourceTime: seconds(0)) == noErr)
        #expect(timebase.time == CMTime(value: 11_500, timescale: 1000))
    }

    @Test func setTimeJumpsAndKeepsRate() throws {
        let timebase = CMTimebase(sourceClock: clock)
        try timebase.setRate(1)
        try timebase.setTime(CMTime(value: 30, timescale: 600))
        #expect(timebase.time == CMTime(value: 1, timescale: 20))
        host.advance(by: .seconds(1))
        #expect(timebase.time == CMTime(value: 21, timescale: 20))
        #expect(CMTimebaseSetTime(timebase, time: .invalid) == kCMTimebaseError_InvalidParameter)
        #expect(CMTimebaseSetRate(timebase, rate: .infinity) == kCMTimebaseError_InvalidParameter)
        #expect(throws: CMTimebaseError.invalidParameter) { try timebase.setTime(.indefinite) }
        #expect(timebase.time == CMTime(value: 21, timescale: 20))
    }

    @Test func chainedTimebasesMultiplyEffectiveRates() throws {
        let parent = CMTimebase(sourceClock: clock)
        let child = CMTimebase(sourceTimebase: parent)
        #expect(child.sourceTimebase === parent && child.sourceClock == nil)
        #expect(child.ultimateSourceClock === parent.sourceClock)
        try parent.setRate(2)
        try child.setRate(0.25)
        #expect(child.effectiveRate == 0.5)
        #expect(CMTimebaseGetEffectiveRate(child) == 0.5)
        host.advance(by: .seconds(4))
        #expect(parent.time == seconds(8))
        #expect(child.time == seconds(2))
        let grandchild = CMTimebase(sourceTimebase: child)
        try grandchild.setRate(-4)
        #expect(grandchild.effectiveRate == -2)
        host.advance(by: .seconds(1))
        #expect(grandchild.time == seconds(-2))
    }

    @Test func timeJumpedOnAnchoringButNotOnPlainRateChange() throws {
        let center = NotificationCenter()
        let timebase = CMTimebase(sourceClock: clock, notificationCenter: center)
        let log = NotificationLog(center: center, timebase: timebase)
        try timebase.setRate(1)
        #expect(log.drain() == [CMTimebase.effectiveRateChangedNotification])
        try timebase.setRate(1)
        #expect(log.drain().isEmpty)
        try timebase.setTime(seconds(5))
        #expect(log.drain() == [CMTimebase.timeJumpedNotification])
        try timebase.setAnchorTime(seconds(1), referenceTime: seconds(1))
        #expect(log.drain() == [CMTimebase.timeJumpedNotification])
        try timebase.setRateAndAnchorTime(rate: 2, anchorTime: seconds(1), referenceTime: seconds(1))
        #expect(log.drain() == [CMTimebase.timeJumpedNotification, CMTimebase.effectiveRateChangedNotification])
        #expect(CMTimebase.timeJumpedNotification.rawValue == "CMTimebaseNotification_TimeJumped")
    }

    @Test("a timebase driven by another posts when that one's rate changes or its time jumps, unless its own rate holds it")
    func drivenTimebasesPostTheirSourcesChanges() throws {
        let center = NotificationCenter()
        let parent = CMTimebase(sourceClock: clock, notificationCenter: center)
        let child = CMTimebase(sourceTimebase: parent, notificationCenter: center)
        let held = CMTimebase(sourceTimebase: parent, notificationCenter: center)
        let grandchild = CMTimebase(sourceTimebase: child, notificationCenter: center)
        let childLog = NotificationLog(center: center, timebase: child)
        let heldLog = NotificationLog(center: center, timebase: held)
        let grandchildLog = NotificationLog(center: center, timebase: grandchild)
        try child.setRate(1)
        try grandchild.setRate(3)
        _ = childLog.drain(); _ = grandchildLog.drain()
        try parent.setRate(2)
        #expect(childLog.drain() == [CMTimebase.effectiveRateChangedNotification])
        #expect(grandchildLog.drain() == [CMTimebase.effectiveRateChangedNotification])
        try parent.setTime(seconds(10))
        #expect(childLog.drain() == [CMTimebase.timeJumpedNotification])
        #expect(grandchildLog.drain() == [CMTimebase.timeJumpedNotification])
        try parent.setRateAndAnchorTime(rate: 1, anchorTime: seconds(1), referenceTime: seconds(1))
        #expect(childLog.drain() == [CMTimebase.timeJumpedNotification, CMTimebase.effectiveRateChangedNotification])
        // At rate 0 a timebase stands still whatever drives it: neither it nor those it
        // drives post.
        try child.setRate(0)
        _ = childLog.drain(); _ = grandchildLog.drain()
        try parent.setRate(4)
        try parent.setTime(seconds(3))
        #expect(childLog.drain().isEmpty && grandchildLog.drain().isEmpty)
        #expect(heldLog.drain().isEmpty)
    }

    @Test func hostTimeForTimeInvertsTheMapping() throws {
        let parent = CMTimebase(sourceClock: clock)
        #expect(parent.hostTime(forTime: seconds(1)) == nil)
        try parent.setRateAndAnchorTime(rate: 2, anchorTime: seconds(100), referenceTime: seconds(10))
        #expect(parent.hostTime(forTime: seconds(104)) == HostTime(nanoseconds: 12_000_000_000))
        let child = CMTimebase(sourceTimebase: parent)
        try child.setRateAndAnchorTime(rate: 0.5, anchorTime: .zero, referenceTime: seconds(100))
        #expect(child.hostTime(forTime: seconds(1)) == HostTime(nanoseconds: 11_000_000_000))
        var rng = SplitMix64(seed: 60)
        for _ in 0..<500 {
            let hostTime = HostTime(nanoseconds: Int64.random(in: 0...(1 << 45), using: &rng))
            #expect(child.hostTime(forTime: child.time(atHostTime: hostTime)) == hostTime)
        }
        try parent.setRate(0)
        #expect(child.hostTime(forTime: seconds(1)) == nil)
    }

    @Test func createWithSourceClockReturnsStatusAndTimebase() {
        var timebase: CMTimebase?
        #expect(CMTimebaseCreateWithSourceClock(allocator: nil, sourceClock: clock, timebaseOut: &timebase) == noErr)
        #expect(timebase?.time == .zero)
        var child: CMTimebase?
        if let timebase {
            #expect(CMTimebaseCreateWithSourceTimebase(allocator: nil, sourceTimebase: timebase, timebaseOut: &child) == noErr)
        }
        #expect(child?.sourceTimebase === timebase)
        #expect(timebase.map { CMTimebaseGetTimeWithTimeScale($0, timescale: 600, method: .default).timescale } == 600)
    }
}
