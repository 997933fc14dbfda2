import Testing
import GroupSync
import MediaClock

@Suite("GroupState")
struct GroupStateTests {
    @Test func anchorMapsLeaderTimeToItemTime() {
        let state = GroupState(itemIndex: 0, itemURL: "a", itemDuration: .indefinite, rate: 1,
                               anchorItemTime: CMTime(value: 30, timescale: 1), anchorLeaderTime: LeaderTime(nanoseconds: 100_000_000_000))
        #expect(state.itemTime(atLeader: LeaderTime(nanoseconds: 102_500_000_000)) == CMTime(value: 32_500, timescale: 1_000))
        var paused = state
        paused.rate = 0
        #expect(paused.itemTime(atLeader: LeaderTime(nanoseconds: 500_000_000_000)) == CMTime(value: 30, timescale: 1))
    }
}
