import Testing
import ChorusTestSupport
import GroupSync
import MediaClock

@Suite("GroupState", .ownThread)
struct GroupStateTests {
    @Test func anchorMapsLeaderTimeToItemTime() {
        let state = GroupState(itemIndex: 0, itemURL: "a", itemDuration: .indefinite, rate: 1,
                               anchorItemTime: CMTime(value: 30, timescale: 1), anchorLeaderTime: LeaderTime(nanoseconds: 100_000_000_000))
        #expect(state.itemTime(atLeader: LeaderTime(nanoseconds: 102_500_000_000)) == CMTime(value: 32_500, timescale: 1_000))
        var paused = state
        paused.rate = 0
        #expect(paused.itemTime(atLeader: LeaderTime(nanoseconds: 500_000_000_000)) == CMTime(value: 30, timescale: 1))
    }

    /// What a State carries of a live item's splices: starts that rise (a splice met again
    /// after a seek back replaces those from it on), the newest eight.
    @Test func splicesRiseAndTheNewestAreKept() {
        func splice(_ start: Int64) -> TimelineSplice { TimelineSplice(startNanoseconds: start, shiftNanoseconds: -start) }
        #expect(GroupState.rising([splice(1), splice(5), splice(3), splice(4)]) == [splice(1), splice(3), splice(4)])
        #expect(GroupState.rising([splice(2), splice(2)]) == [splice(2)])
        let many = (1...12).map { splice(Int64($0)) }
        let state = GroupState(itemIndex: 0, itemURL: "a", itemDuration: .indefinite, rate: 1, anchorItemTime: .zero,
                               anchorLeaderTime: LeaderTime(nanoseconds: 0), splices: many)
        #expect(state.splices == Array(many.suffix(GroupState.maximumSplices)))
    }
}
