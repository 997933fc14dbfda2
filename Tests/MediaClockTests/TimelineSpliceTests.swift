import MediaClock
import Testing
import ChorusTestSupport

/// A stream time placed on an item's timeline by the splices another player closed up.
@Suite(.ownThread) struct TimelineSpliceTests {
    /// A broadcast at 50 s of its own time cut to an advertisement stamped from 0 at item
    /// time 63.4 s, then back to the broadcast (stamped on from 80 s) at item 73.4 s.
    static let splices = [
        TimelineSplice(startNanoseconds: 63_400_000_000, shiftNanoseconds: 63_400_000_000),
        TimelineSplice(startNanoseconds: 73_400_000_000, shiftNanoseconds: -6_600_000_000),
    ]

    @Test func aStreamTimeTakesTheShiftOfTheStretchItFallsIn() {
        // In the advertisement: 2 s of its own is 65.4 s of the item.
        #expect(TimelineSplice.itemNanoseconds(ofStream: 2_000_000_000, after: Self.splices) == 65_400_000_000)
        // Back in the broadcast: 81 s of its own is 74.4 s.
        #expect(TimelineSplice.itemNanoseconds(ofStream: 81_000_000_000, after: Self.splices) == 74_400_000_000)
        // Before the first splice: the stream's own time.
        #expect(TimelineSplice.itemNanoseconds(ofStream: 60_000_000_000, after: Self.splices) == 60_000_000_000)
        #expect(TimelineSplice.itemNanoseconds(ofStream: 5, after: []) == 5)
    }

    @Test func whereStretchesReuseTheStreamsTimesTheLatestWins() {
        // An encoder restarted at 0 twice: both stretches could hold 1 s of its own time.
        let twice = [
            TimelineSplice(startNanoseconds: 10_000_000_000, shiftNanoseconds: 10_000_000_000),
            TimelineSplice(startNanoseconds: 20_000_000_000, shiftNanoseconds: 20_000_000_000),
        ]
        #expect(TimelineSplice.itemNanoseconds(ofStream: 1_000_000_000, after: twice) == 21_000_000_000)
    }

    @Test func forgedShiftsWrapWithoutTrapping() {
        let forged = [TimelineSplice(startNanoseconds: .min, shiftNanoseconds: .max)]
        #expect(TimelineSplice.itemNanoseconds(ofStream: .max, after: forged) == -2)
        let past = [TimelineSplice(startNanoseconds: .max, shiftNanoseconds: .min)]
        #expect(TimelineSplice.itemNanoseconds(ofStream: .min, after: past) == .min, "no stretch fits: the stream's own time")
    }
}
