/// Where the times of a stream spliced from several (an advertisement cut into a live
/// broadcast, an encoder restarted at zero) jumped, and how the jump was closed up: from item
/// time `startNanoseconds` on, the stream's own times take `shiftNanoseconds` to become item
/// times, so the item's timeline runs on as its sound does.
///
/// A player that has read a live stream across such a jump knows the shift; one that opens
/// the stream after it does not, and would count from the stream's own times, seconds or
/// hours away. A group's leader hands its splices to the rooms that open its live item, so
/// that each counts as the leader does.
public struct TimelineSplice: Sendable, Hashable {
    /// The item time of the first packet after the jump, in nanoseconds.
    public var startNanoseconds: Int64
    /// What is added to the stream's own times from there on, in nanoseconds.
    public var shiftNanoseconds: Int64

    public init(startNanoseconds: Int64, shiftNanoseconds: Int64) {
        self.startNanoseconds = startNanoseconds
        self.shiftNanoseconds = shiftNanoseconds
    }

    /// The item time (ns) of stream time `nanoseconds` after the latest of `splices` (in
    /// order) whose stretch that shift puts it in; the stream's own time when none does (it
    /// lies before the first splice). A stream that jumped back may reuse its own times, so
    /// the latest stretch that fits wins: a live stream is opened near its newest end.
    public static func itemNanoseconds(ofStream nanoseconds: Int64, after splices: [TimelineSplice]) -> Int64 {
        for (index, splice) in splices.enumerated().reversed() {
            let item = nanoseconds &+ splice.shiftNanoseconds
            let end = index + 1 < splices.count ? splices[index + 1].startNanoseconds : Int64.max
            if item >= splice.startNanoseconds && item < end { return item }
        }
        return nanoseconds
    }
}
