import MediaClock
import MutexAnnotations
import Synchronization

/// Where item time stands on the host clock, for the pictures: item time
/// `anchorItemNanoseconds` is reached at host time `anchorHost`, and from then on item time
/// advances `rate` nanoseconds per host nanosecond (0 while paused).
///
/// The player publishes it from the same mapping its sound follows (the render thread's
/// report of when each frame is heard, or a group's timeline), so a picture shown when the
/// timeline reaches its time is shown when its sound is heard.
public struct VideoTimeline: Sendable, Equatable {
    /// The player's seek serial: pictures of older serials are stale.
    public var serial: Int
    /// The host time at which the timeline stands at `anchorItemNanoseconds`.
    public var anchorHost: HostTime
    /// Item time at the anchor, in nanoseconds.
    public var anchorItemNanoseconds: Int64
    /// Item nanoseconds per host nanosecond from the anchor on (0: standing still).
    public var rate: Double
    /// Whether a picture is to be shown at all: false for an item opened ahead of its start
    /// (a group member's, while its clock settles), whose first picture is not yet where
    /// the group stands.
    public var showsPictures: Bool
    /// Whether item time stands still at the anchor until the anchor's host time: a start
    /// scheduled ahead (rather than a timeline already moving, extrapolated back).
    public var holdsBeforeAnchor: Bool
    /// Whose time it is, and the item joined on after it.
    public var items: VideoItems

    public init(serial: Int, anchorHost: HostTime, anchorItemNanoseconds: Int64, rate: Double, showsPictures: Bool = true,
                holdsBeforeAnchor: Bool = false, items: VideoItems = .any) {
        self.serial = serial
        self.anchorHost = anchorHost
        self.anchorItemNanoseconds = anchorItemNanoseconds
        self.rate = rate
        self.showsPictures = showsPictures
        self.holdsBeforeAnchor = holdsBeforeAnchor
        self.items = items
    }

    /// The item time, in nanoseconds, the timeline reaches at host time `host`.
    public func itemNanoseconds(at host: HostTime) -> Int64 {
        guard rate != 0, rate.isFinite, !(holdsBeforeAnchor && host < anchorHost) else { return anchorItemNanoseconds }
        let elapsed = Double((host - anchorHost).nanosecondsClamped) * rate
        return anchorItemNanoseconds &+ Int64(max(-9e18, min(9e18, elapsed.rounded())))
    }

    /// The host time at which the timeline reaches item time `itemNanoseconds`; nil while
    /// it stands still.
    public func hostTime(atItemNanoseconds itemNanoseconds: Int64) -> HostTime? {
        guard rate != 0, rate.isFinite else { return nil }
        let offset = Double(itemNanoseconds &- anchorItemNanoseconds) / rate
        return anchorHost + .nanoseconds(Int64(max(-9e18, min(9e18, offset.rounded()))))
    }
}

/// Which item's time a timeline gives, and the item heard right after it without a gap
/// (by the engine's numbers, `VideoFrameInfo.item`): the timeline runs on through the join in
/// the first item's time, so the next item's pictures, queued behind the first's, come due
/// at the instant its sound is heard, not when the player next looks.
public struct VideoItems: Sendable, Equatable {
    /// The item whose time the timeline gives; 0: any (every picture counts as its).
    public var current: Int
    /// The item joined on after it, once known.
    public var next: Int?
    /// Where the next item's time zero falls, in the current item's time (nanoseconds): the
    /// end of the current item's sound.
    public var nextStartNanoseconds: Int64

    public init(current: Int, next: Int? = nil, nextStartNanoseconds: Int64 = 0) {
        self.current = current
        self.next = next
        self.nextStartNanoseconds = nextStartNanoseconds
    }

    /// A timeline that names no item: pictures of every item count as the current one's.
    public static let any = VideoItems(current: 0)

    /// Whether picture `info` belongs to an item before the current one (left over from it).
    public func isPast(_ info: VideoFrameInfo) -> Bool { current != 0 && info.item < current }

    /// When picture `info` is due on the timeline, in the current item's time (nanoseconds):
    /// its own time for the current item's, shifted by the join for the next item's; nil for
    /// another item's (one not yet joined on, or one left over).
    ///
    /// A current picture due at or past the join (pictures that outlast the sound) counts as
    /// due just before it, so the next item's first picture passes over it.
    public func timelineNanoseconds(of info: VideoFrameInfo) -> Int64? {
        if current == 0 || info.item == current {
            guard next != nil, info.itemNanoseconds >= nextStartNanoseconds else { return info.itemNanoseconds }
            return nextStartNanoseconds &- 1
        }
        guard let next, info.item == next else { return nil }
        return nextStartNanoseconds &+ info.itemNanoseconds
    }
}

/// One published value, read by a real-time thread with a try-lock: a reader that finds it
/// busy keeps the copy it read last.
public final class Published<Value: Sendable>: Sendable {
    private let value: Mutex<Value>

    public init(_ initial: Value) { value = Mutex(initial) }

    /// Replaces the value.
    public func publish(_ newValue: Value) { value.withLockAnnotated { $0 = newValue } }

    /// The value, waiting for the lock (for threads that may wait).
    public var current: Value { value.withLockAnnotated { $0 } }

    /// The value if the lock is free now, else nil.
    public func tryRead() -> Value? { value.withLockIfAvailableAnnotated { $0 } }
}
