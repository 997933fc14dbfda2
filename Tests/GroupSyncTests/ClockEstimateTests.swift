import Testing
import ChorusTestSupport
import GroupSync
import MediaClock

@Suite("ClockEstimate", .ownThread)
struct ClockEstimateTests {
    @Test func mapsBothWaysExactly() {
        let estimate = ClockEstimate(referenceHostTime: HostTime(nanoseconds: 1_000_000_000), offset: .seconds(5), ratePPT: 100_000_000) // +100 ppm
        #expect(estimate.leaderTime(atHost: HostTime(nanoseconds: 1_000_000_000)) == LeaderTime(nanoseconds: 6_000_000_000))
        #expect(estimate.leaderTime(atHost: HostTime(nanoseconds: 11_000_000_000)) == LeaderTime(nanoseconds: 16_001_000_000))
        #expect(estimate.hostTime(atLeader: LeaderTime(nanoseconds: 16_001_000_000)) == HostTime(nanoseconds: 11_000_000_000))
        #expect(estimate.ratePPM == 100)
        var rng = SplitMix64(seed: 9)
        for _ in 0..<2_000 {
            let host = HostTime(nanoseconds: Int64.random(in: -(1 << 60)...(1 << 60), using: &rng))
            let roundTrip = estimate.hostTime(atLeader: estimate.leaderTime(atHost: host))
            #expect(abs(roundTrip.nanoseconds - host.nanoseconds) <= 1)
        }
    }

    @Test func saturatesInsteadOfTrapping() {
        let estimate = ClockEstimate(referenceHostTime: HostTime(nanoseconds: .min), offset: .seconds(1_000_000_000), ratePPT: 500_000_000)
        #expect(estimate.leaderTime(atHost: HostTime(nanoseconds: .max)) == LeaderTime(nanoseconds: .max))
        _ = estimate.hostTime(atLeader: LeaderTime(nanoseconds: .min))
    }
}
