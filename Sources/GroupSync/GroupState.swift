import MediaClock

/// What the group is playing, as the leader announces it in every State message.
///
/// The anchor maps item time to leader time: at leader time `L` the item time is
/// `anchorItemTime + (L - anchorLeaderTime) * rate`. A follower converts
/// `anchorLeaderTime` to its own host time with a `ClockEstimate` and calls
/// `AVPlayer.setRate(rate, time: anchorItemTime, atHostTime: ...)`.
public struct GroupState: Sendable, Equatable {
    /// Bumped by the leader on every change; followers ignore states whose sequence is not
    /// above the last one applied (out-of-order or duplicated delivery). Assigned by
    /// `LeaderCore` when it receives `.stateChanged`, so callers may leave it 0.
    public var sequence: UInt64
    /// Index of the current item in the leader's playlist.
    public var itemIndex: UInt32
    /// Where followers fetch the item: absolute, or relative to the Welcome's base URL.
    public var itemURL: String
    /// The item's duration; `.indefinite` when unknown (timescale 0 on the wire).
    public var itemDuration: CMTime
    /// Playback rate; 0 when paused.
    public var rate: Double
    /// The item time at `anchorLeaderTime`.
    public var anchorItemTime: CMTime
    /// The leader time at which the item is at `anchorItemTime`.
    public var anchorLeaderTime: LeaderTime
    /// The item has played to its end.
    public var ended: Bool
    /// Playback is stopped or there is no item; followers stay silent.
    public var stopped: Bool
    /// The item's sound track every room plays, by the container's stream index; nil for
    /// the item's own default (`noSelection` on the wire).
    public var audioStream: Int32?
    /// The item's subtitles every screen shows, by stream index; nil for none.
    public var subtitleStream: Int32?

    /// This item followed the one before it without a gap, and the anchor is where that
    /// one ended: a follower that has it queued joins it on rather than opening it afresh.
    public var joinsPrevious: Bool
    /// The item that follows this one without a gap, as `itemURL` names items, once the
    /// leader has it open to follow; empty when none does. A follower queues it so that it
    /// joins on at the same sample as the leader's.
    public var nextItemURL: String
    /// Where the times of a live item jumped and the leader closed them up (an advertisement
    /// spliced into a broadcast), oldest first: a follower that opens the item after such a
    /// jump counts as the leader does (`AVPlayerItem.countsAcrossSplices`). Empty for an item
    /// whose times never jumped; at most `maximumSplices`, the newest.
    public var splices: [TimelineSplice]

    /// The wire's value for "no stream chosen".
    public static let noSelection: Int32 = -1
    /// The most splices a State carries: the newest, since a room opens a live item near its
    /// end. An advertisement break makes two (in and out), and a live playlist lists a few
    /// minutes: eight cover four breaks in it, in 128 bytes.
    public static let maximumSplices = 8

    /// A state with every field given; `sequence` defaults to 0 for `LeaderCore` to assign.
    public init(
        sequence: UInt64 = 0,
        itemIndex: UInt32,
        itemURL: String,
        itemDuration: CMTime,
        rate: Double,
        anchorItemTime: CMTime,
        anchorLeaderTime: LeaderTime,
        ended: Bool = false,
        stopped: Bool = false,
        audioStream: Int32? = nil,
        subtitleStream: Int32? = nil,
        nextItemURL: String = "",
        joinsPrevious: Bool = false,
        splices: [TimelineSplice] = []
    ) {
        self.sequence = sequence
        self.itemIndex = itemIndex
        self.itemURL = itemURL
        self.itemDuration = itemDuration
        self.rate = rate
        self.anchorItemTime = anchorItemTime
        self.anchorLeaderTime = anchorLeaderTime
        self.ended = ended
        self.stopped = stopped
        self.audioStream = audioStream
        self.subtitleStream = subtitleStream
        self.nextItemURL = nextItemURL
        self.joinsPrevious = joinsPrevious
        self.splices = Self.rising(splices)
    }

    /// `splices` as the wire carries them: starts that rise (a later splice that starts no
    /// later than one before it replaces it, as a stream read again after a seek back
    /// replaces what it met before), the newest `maximumSplices`.
    public static func rising(_ splices: [TimelineSplice]) -> [TimelineSplice] {
        var kept: [TimelineSplice] = []
        for splice in splices {
            while let last = kept.last, last.startNanoseconds >= splice.startNanoseconds { kept.removeLast() }
            kept.append(splice)
        }
        return Array(kept.suffix(maximumSplices))
    }

    /// The "nothing is playing" state a leader announces before its first item.
    public static let stoppedState = GroupState(
        itemIndex: 0, itemURL: "", itemDuration: .indefinite, rate: 0,
        anchorItemTime: .zero, anchorLeaderTime: LeaderTime(nanoseconds: 0), stopped: true
    )

    /// The item time at leader time `leaderTime` (the anchor extrapolated at `rate`).
    public func itemTime(atLeader leaderTime: LeaderTime) -> CMTime {
        let elapsed = CMTime(value: (leaderTime - anchorLeaderTime).nanosecondCount.clampedToInt64,
                             timescale: HostTime.nanosecondTimescale)
        if rate == 0 { return anchorItemTime }
        return anchorItemTime + (rate == 1 ? elapsed : elapsed * rate)
    }
}

extension Int128 {
    var clampedToInt64: Int64 { LeaderTime.clamp(self) }
}
