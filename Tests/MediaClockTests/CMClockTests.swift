import ChorusSimulation
import Testing
import ChorusTestSupport
import MediaClock

@Suite("CMClock", .ownThread)
struct CMClockTests {
    @Test func hostClockOfANodeIsTheIdentity() {
        let host = SimulatedHostClock(start: HostTime(nanoseconds: 5_000_000_000))
        let clock = CMClock(hostClock: host)
        #expect(clock.time == CMTime(value: 5, timescale: 1))
        #expect(clock.time.timescale == 1_000_000_000)
        host.advance(by: .milliseconds(250))
        #expect(CMClockGetTime(clock) == CMTime(value: 5_250, timescale: 1000))
        #expect(clock.rateRelativeToHost == 1)
        #expect(clock.hostTime(forClockTime: CMTime(value: 7, timescale: 2)) == HostTime(nanoseconds: 3_500_000_000))
        #expect(clock.hostTime(forClockTime: .indefinite) == nil)
    }

    @Test func realHostTimeClock() {
        #expect(CMClockGetHostTimeClock() === CMClock.hostTimeClock)
        #expect(CMClock.hostTimeClock.rateRelativeToHost == 1)
        let first = CMClock.hostTimeClock.time
        #expect(first.timescale == 1_000_000_000 && first.isNumeric)
        #expect(CMClock.hostTimeClock.time >= first)
    }

    @Test func affineClockAndItsInverse() {
        let host = SimulatedHostClock()
        let clock = CMClock(hostClock: host, anchorHostTime: HostTime(nanoseconds: 1_000_000_000),
                            anchorTime: CMTime(value: 100, timescale: 1), rate: 2)
        #expect(clock.time(atHostTime: HostTime(nanoseconds: 1_500_000_000)) == CMTime(value: 101, timescale: 1))
        #expect(clock.time(atHostTime: HostTime(nanoseconds: 0)) == CMTime(value: 98, timescale: 1))
        #expect(clock.hostTime(forClockTime: CMTime(value: 101, timescale: 1)) == HostTime(nanoseconds: 1_500_000_000))
        var rng = SplitMix64(seed: 50)
        for _ in 0..<1_000 {
            let hostTime = HostTime(nanoseconds: Int64.random(in: -(1 << 50)...(1 << 50), using: &rng))
            #expect(clock.hostTime(forClockTime: clock.time(atHostTime: hostTime)) == hostTime)
        }
        let stopped = CMClock(hostClock: host, anchorHostTime: HostTime(nanoseconds: 0), anchorTime: .zero, rate: 0)
        #expect(stopped.hostTime(forClockTime: .zero) == nil)
    }

    @Test func syncConvertTimeGoesThroughHostTime() {
        let host = SimulatedHostClock()
        let identity = CMClock(hostClock: host)
        let shifted = CMClock(hostClock: host, anchorHostTime: HostTime(nanoseconds: 0),
                              anchorTime: CMTime(value: 10, timescale: 1), rate: 0.5)
        let converted = CMSyncConvertTime(CMTime(value: 4, timescale: 1), from: identity, to: shifted)
        #expect(converted == CMTime(value: 12, timescale: 1))
        #expect(CMSyncConvertTime(converted, from: shifted, to: identity) == CMTime(value: 4, timescale: 1))
        #expect(!CMSyncConvertTime(.invalid, from: identity, to: shifted).isValid)
        let same = CMTime(value: 1, timescale: 3)
        #expect(CMSyncConvertTime(same, from: shifted, to: shifted).timescale == 3)
    }
}
