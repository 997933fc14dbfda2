import ChorusSimulation
import Testing
import ChorusTestSupport
import GroupSync
import MediaClock

@Suite("LeaderClock", .ownThread)
struct LeaderClockTests {
    @Test func readsTheLeaderTimeThroughTheLatestEstimate() {
        let host = SimulatedHostClock(start: HostTime(nanoseconds: 2_000_000_000))
        let clock = LeaderClock(hostClock: host)
        #expect(clock.time == CMTime(value: 2, timescale: 1)) // identity before any estimate
        clock.update(ClockEstimate(referenceHostTime: HostTime(nanoseconds: 2_000_000_000), offset: .milliseconds(-500), ratePPT: -50_000_000))
        #expect(clock.time == CMTime(value: 1_500_000_000, timescale: 1_000_000_000))
        host.advance(by: .seconds(10))
        #expect(clock.time == CMTime(value: 11_499_500_000, timescale: 1_000_000_000))
        #expect(abs(clock.rateRelativeToHost - 0.99995) < 1e-12)
        #expect(clock.hostTime(forClockTime: CMTime(value: 11_499_500_000, timescale: 1_000_000_000)) == HostTime(nanoseconds: 12_000_000_000))
        #expect(clock.hostTime(forClockTime: .invalid) == nil)
        #expect(CMSyncConvertTime(clock.time, from: clock, to: CMClock(hostClock: host)) == host.now().cmTime)
    }

    @Test func concurrentReadersNeverSeeATornEstimate() async {
        let host = SimulatedHostClock(start: HostTime(nanoseconds: 0))
        let clock = LeaderClock(hostClock: host)
        // Two estimates that agree at host time 0 only if read whole: offset and rate
        // change together so that a mixed read gives a different answer at 1 s.
        let a = ClockEstimate(referenceHostTime: HostTime(nanoseconds: 0), offset: .seconds(1), ratePPT: 0)
        let b = ClockEstimate(referenceHostTime: HostTime(nanoseconds: 0), offset: .seconds(2), ratePPT: 400_000_000)
        let valid: Set<Int64> = [2_000_000_000, 3_000_400_000]
        // Read through an estimate from the start: a reader scheduled before the writer's
        // first update would otherwise read the host's own time, which is not a torn read.
        clock.update(a)
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for index in 0..<20_000 { clock.update(index.isMultiple(of: 2) ? a : b) }
                return true
            }
            for _ in 0..<2 {
                group.addTask {
                    for _ in 0..<20_000 where !valid.contains(clock.time(atHostTime: HostTime(nanoseconds: 1_000_000_000)).value) {
                        return false
                    }
                    return true
                }
            }
            for await ok in group { #expect(ok) }
        }
    }
}
