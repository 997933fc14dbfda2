import MediaClock
import MutexAnnotations
import Synchronization
internal import CFFmpeg

/// The pixel layouts the video path hands to a display: the two that every display API
/// shows as textures without converting (SDL's IYUV and NV12). Anything else a decoder
/// produces is converted to `yuv420p` on the decoder's thread.
public enum VideoPixelFormat: Sendable, Equatable {
    /// Three planes: Y at full size, then U and V at half width and half height (I420).
    case yuv420p
    /// Two planes: Y, then U and V interleaved at half width and half height.
    case nv12

    /// How many planes a frame of this layout has.
    public var planeCount: Int { self == .yuv420p ? 3 : 2 }
}

/// How a frame's YUV values map to colour.
public enum VideoColorMatrix: Sendable, Equatable {
    /// Standard definition, limited range (ITU-R BT.601).
    case bt601
    /// High definition, limited range (ITU-R BT.709).
    case bt709
    /// Full range BT.601, as JPEG and many cameras write it.
    case fullRange601
}

/// What is known of one decoded picture, apart from its pixels.
public struct VideoFrameInfo: Sendable, Equatable {
    /// The seek serial the picture was decoded under; pictures of an older serial are stale.
    public var serial: Int
    /// The item the picture belongs to (the engine numbers each item it loads).
    public var item: Int = 0
    /// The picture's number in the order the reader produced it, from 0: an identity that
    /// survives copies (a display reports which picture it showed by it).
    public var number: Int64
    /// When the picture is due, in item time (nanoseconds from item time zero).
    public var itemNanoseconds: Int64
    /// How long the picture lasts until the next is due, in nanoseconds (the stream's nominal
    /// frame period when the container does not say).
    public var durationNanoseconds: Int64
    /// The picture's coded size in pixels.
    public var width: Int
    public var height: Int
    /// How its planes are laid out.
    public var format: VideoPixelFormat
    /// How its YUV values become colour.
    public var colorMatrix: VideoColorMatrix

    /// When the picture is due, as exact item time.
    public var itemTime: CMTime { CMTime(value: itemNanoseconds, timescale: 1_000_000_000) }
}

/// A view of a decoded picture's planes, valid while its queue keeps it (the picture on
/// display stays until a newer one replaces it, or the queue is flushed by its reader).
public struct VideoPlanes: @unchecked Sendable {
    // @unchecked: the pointers are into an AVFrame of the queue's; who may read them, and
    // until when, is the queue's contract above, not something the type can state.
    /// What is known of the picture.
    public var info: VideoFrameInfo
    /// Plane base addresses (nil past `format.planeCount`).
    public var plane0: UnsafePointer<UInt8>?
    public var plane1: UnsafePointer<UInt8>?
    public var plane2: UnsafePointer<UInt8>?
    /// Bytes from one row of each plane to the next.
    public var stride0: Int
    public var stride1: Int
    public var stride2: Int
}

/// A bounded queue of decoded pictures between one reader at a time (the producer: an item's
/// reader, then the next item's, which queues only once the one before has finished) and
/// one display (the consumer), in presentation order.
///
/// The pictures live in a fixed set of slots, each an `AVFrame` made once: decoding never
/// allocates a picture of its own beyond FFmpeg's pools, and the consumer, a display's
/// real-time thread, never frees one. The consumer takes the lock only with a try (a
/// contended refresh keeps the picture it has); the producer waits on a wake signal when
/// every slot is full.
///
/// The consumer's picture on display is never reused until the consumer moves past it, so
/// its planes stay valid between one `next(at:...)` and the next.
public final class VideoFrameQueue: Sendable {
    /// Slots, pictures decoded ahead of the one on display. Eight: three at 60 fps
    /// (50 ms) covers a display's refresh jitter and a decoder's hiccup; frame-threaded
    /// decoders also hold a few pictures of their own.
    public static let defaultCapacity = 8

    struct Entry: Equatable {
        var slot: Int
        var info: VideoFrameInfo
    }

    /// Pictures in order, in a ring of fixed capacity: taking the first moves an index
    /// instead of the rest (an array's `removeFirst` made a new buffer each time, an
    /// allocation on the display's thread).
    struct EntryRing: Sequence {
        /// What an empty place holds: no slot, no picture.
        private static let vacant = Entry(slot: -1, info: VideoFrameInfo(serial: 0, number: -1, itemNanoseconds: 0, durationNanoseconds: 0,
                                                                         width: 0, height: 0, format: .yuv420p, colorMatrix: .bt601))
        private var storage: [Entry]
        private var head = 0
        private(set) var count = 0

        init(capacity: Int) { storage = Array(repeating: Self.vacant, count: Swift.max(1, capacity)) }

        var isEmpty: Bool { count == 0 }

        subscript(index: Int) -> Entry {
            get { storage[(head + index) % storage.count] }
            set { storage[(head + index) % storage.count] = newValue }
        }

        /// Adds at the end; the ring holds at most one entry per slot, so it never overflows.
        mutating func append(_ entry: Entry) {
            storage[(head + count) % storage.count] = entry
            count += 1
        }

        mutating func removeFirst() -> Entry {
            let entry = self[0]
            head = (head + 1) % storage.count
            count -= 1
            return entry
        }

        mutating func removeFirst(_ k: Int) {
            for _ in 0..<k { _ = removeFirst() }
        }

        mutating func removeLast(_ k: Int) { count -= Swift.min(k, count) }

        mutating func removeAll() {
            head = 0
            count = 0
        }

        func makeIterator() -> AnyIterator<Entry> {
            var index = 0
            return AnyIterator {
                guard index < count else { return nil }
                defer { index += 1 }
                return self[index]
            }
        }
    }

    struct State {
        /// Pictures decoded, in presentation order, not yet shown.
        var ready: EntryRing
        /// Slots the producer may fill.
        var free: [Int]
        /// The picture on display, held until the consumer moves on.
        var displayed: Entry?
        /// The serial the consumer wants; older pictures are dropped as they are met.
        var wantedSerial: Int
        /// Pictures of the wanted serial skipped because they were late.
        var dropped: Int
        /// Pictures shown.
        var shown: Int
        /// A serial whose pictures count as a newer one's (`carryOn`).
        var carried: (old: Int, new: Int)?
        /// Whether the wanted serial plays backwards: its pictures come newest first, and
        /// each is due when the timeline, running down, reaches its end.
        var backwards = false
        /// Producers whose pictures are refused from now on: readers others have taken over
        /// from (`claimTakeover`). One a move between variants, a handful in an item's life.
        var retiredProducers: Set<Int> = []

        /// Where picture `info` falls on the axis the wanted serial runs along, timed by a
        /// timeline of `items`: going forward, when it is due on that timeline (the next
        /// item's pictures after the join, `VideoItems.timelineNanoseconds(of:)`); going
        /// backwards, its end negated. Either way pictures come in ascending order and one is
        /// due once the axis reaches it. `Int64.max` (never due) for an item not yet joined on.
        func axisTime(of info: VideoFrameInfo, _ items: VideoItems) -> Int64 {
            if backwards { return -(info.itemNanoseconds &+ info.durationNanoseconds) }
            return items.timelineNanoseconds(of: info) ?? .max
        }

        /// Whether picture `info` is left over: of an older serial, or of an item before the
        /// one `items` names.
        func isStale(_ info: VideoFrameInfo, _ items: VideoItems) -> Bool {
            info.serial < wantedSerial || items.isPast(info)
        }

        /// Item time `due` on that axis.
        func axis(_ due: Int64) -> Int64 { backwards ? -due : due }
    }

    let capacity: Int
    // @unchecked would be needed for an array of pointers; a tuple-free wrapper keeps the
    // frames as an immutable array of opaque addresses, each owned by the queue.
    private let frames: [FramePointer]
    private let state: Mutex<State>
    /// Wakes the producer when a slot is freed.
    let spaceFreed = WakeSignal()

    struct FramePointer: @unchecked Sendable {
        // @unchecked: the AVFrame is written by the producer only while its slot is out of
        // the queue's state (taken from `free`), and read by the consumer only while it is in
        // `ready` or `displayed`; the Mutex hands each slot over.
        let frame: UnsafeMutablePointer<AVFrame>
    }

    /// Makes a queue of `capacity` slots. Nil only when memory runs out.
    public init?(capacity: Int = VideoFrameQueue.defaultCapacity) {
        var made: [FramePointer] = []
        for _ in 0..<max(2, capacity) {
            guard let frame = av_frame_alloc() else {
                for pointer in made { var f: UnsafeMutablePointer<AVFrame>? = pointer.frame; av_frame_free(&f) }
                return nil
            }
            made.append(FramePointer(frame: frame))
        }
        self.capacity = made.count
        frames = made
        let ready = EntryRing(capacity: made.count)
        var free = Array(0..<made.count)
        free.reserveCapacity(made.count)
        state = Mutex(State(ready: ready, free: free, displayed: nil, wantedSerial: 0, dropped: 0, shown: 0))
    }

    deinit {
        for pointer in frames { var f: UnsafeMutablePointer<AVFrame>? = pointer.frame; av_frame_free(&f) }
    }

    // MARK: - Producer

    /// A free slot's frame to decode into, emptied of what it held; nil when all are taken.
    func takeFreeSlot() -> (slot: Int, frame: UnsafeMutablePointer<AVFrame>)? {
        let slot: Int? = state.withLockAnnotated { $0.free.popLast() }
        guard let slot else { return nil }
        av_frame_unref(frames[slot].frame)
        return (slot, frames[slot].frame)
    }

    /// Gives back a slot taken and not queued, letting go of any picture it holds.
    func returnSlot(_ slot: Int) {
        av_frame_unref(frames[slot].frame)
        state.withLockAnnotated { $0.free.append(slot) }
    }

    /// A number no other producer of any queue has: what a reader commits under, so that
    /// another reader can take over from it (`claimTakeover(by:from:itemNanoseconds:)`).
    static func newProducer() -> Int { producers.add(1, ordering: .relaxed).newValue }
    private static let producers = Atomic<Int>(0)

    /// Queues a filled slot's picture after those already queued (or, of an older serial,
    /// drops it: the queue has moved on). False only when `producer` has been taken over
    /// from (`claimTakeover`): the picture is refused, and so will every later one be.
    @discardableResult
    func commit(slot: Int, info: VideoFrameInfo, producer: Int? = nil) -> Bool {
        state.withLockAnnotated { state in
            var info = info
            if let carried = state.carried, info.serial == carried.old { info.serial = carried.new }
            if let producer, state.retiredProducers.contains(producer) {
                state.free.append(slot)
                return false
            }
            if info.serial != state.wantedSerial, info.serial < state.wantedSerial {
                state.free.append(slot)
                return true
            }
            state.ready.append(Entry(slot: slot, info: info))
            return true
        }
    }

    /// A reader `claimant` of the same item's pictures from another source (another variant
    /// of an HLS stream) taking over from the reader `outgoing` without a break: true when
    /// its picture due at `itemNanoseconds` comes after every picture of the wanted serial
    /// queued or on display, and from then on `outgoing`'s pictures are refused, so the
    /// claimant's follow on in order. False while `outgoing` is still ahead (that picture is
    /// dropped, and the claimant tries its next), and for good once the claimant has itself
    /// been taken over from (a second move made before the first one's takeover). Forward
    /// play only.
    func claimTakeover(by claimant: Int, from outgoing: Int, itemNanoseconds: Int64) -> Bool {
        state.withLockAnnotated { state in
            if state.retiredProducers.contains(claimant) { return false }
            if state.retiredProducers.contains(outgoing) { return true }
            let wanted = state.wantedSerial
            var newest: Int64?
            if let displayed = state.displayed, displayed.info.serial >= wanted { newest = displayed.info.itemNanoseconds }
            for entry in state.ready where entry.info.serial >= wanted {
                newest = max(newest ?? entry.info.itemNanoseconds, entry.info.itemNanoseconds)
            }
            if let newest, itemNanoseconds <= newest { return false }
            state.retiredProducers.insert(outgoing)
            return true
        }
    }

    /// Whether `producer`'s pictures are refused: another reader took over from it.
    func isRetired(_ producer: Int) -> Bool {
        state.withLockAnnotated { $0.retiredProducers.contains(producer) }
    }

    /// Counts `count` pictures lost before decoding (their packets were dropped) as dropped.
    func countDropped(_ count: Int) {
        guard count > 0 else { return }
        state.withLockAnnotated { $0.dropped += count }
    }

    /// From now on only pictures of `serial` count: every queued picture of an older one
    /// is dropped at once (the picture on display stays until a new one replaces it).
    /// `backwards`: the serial plays in reverse, its pictures queued newest first.
    public func flush(toSerial serial: Int, backwards: Bool = false) {
        state.withLockAnnotated { state in
            state.wantedSerial = serial
            state.backwards = backwards
            var kept = 0
            for index in 0..<state.ready.count {
                let entry = state.ready[index]
                if entry.info.serial >= serial {
                    state.ready[kept] = entry
                    kept += 1
                } else {
                    state.free.append(entry.slot)
                }
            }
            state.ready.removeLast(state.ready.count - kept)
        }
        spaceFreed.signal()
    }

    /// The pictures of the serial wanted until now carry on as pictures of `serial` (a new
    /// sound track read under a new serial while the pictures' reader goes on): those
    /// queued, the one on display and any still to come are counted as `serial`'s, and
    /// nothing is dropped.
    public func carryOn(as serial: Int) {
        state.withLockAnnotated { state in
            guard serial > state.wantedSerial else { return }
            let old = state.wantedSerial
            state.wantedSerial = serial
            state.carried = (old, serial)
            for index in 0..<state.ready.count where state.ready[index].info.serial == old {
                state.ready[index].info.serial = serial
            }
            if state.displayed?.info.serial == old { state.displayed?.info.serial = serial }
        }
    }

    /// Drops every queued picture, whatever its serial, and wants `serial` from now on: a
    /// new reader starts a new sequence (the picture on display stays until replaced).
    func restart(atSerial serial: Int) {
        state.withLockAnnotated { state in
            state.wantedSerial = serial
            state.backwards = false
            for entry in state.ready { state.free.append(entry.slot) }
            state.ready.removeAll()
            // The picture on display belongs to the old sequence: any new picture replaces it.
            if let displayed = state.displayed, displayed.info.serial >= serial {
                state.displayed?.info.serial = serial - 1
            }
        }
        spaceFreed.signal()
    }

    // MARK: - Consumer

    /// What the consumer decided at one refresh.
    public enum Pick: Sendable {
        /// Show this picture from now on (it replaces the one on display).
        case show(VideoPlanes)
        /// Keep the picture on display (nothing new is due, or the queue was busy).
        case keep
    }

    /// The picture to show when the timeline reaches `dueNanoseconds` of item time: the
    /// newest queued picture of the wanted serial due by then (`FrameSchedule`), dropping
    /// the older ones it passes. Real-time safe: a try-lock, no allocation.
    ///
    /// `showFirstEarly`: with nothing of the wanted serial on display yet, show its first
    /// picture even if it is not due (a paused player after a seek, or the first picture of
    /// an item before the timeline starts).
    ///
    /// `timelineSerial`: the serial of the timeline `dueNanoseconds` was read from. A
    /// timeline older than the queue's serial (a seek the player has made but not yet
    /// published) says nothing of the new pictures: then only the first is shown, early,
    /// and none is passed over.
    ///
    /// `items`: whose time `dueNanoseconds` is, and the item joined on after it (the
    /// timeline's `VideoItems`): pictures of items before it are dropped unshown, and the
    /// next item's come due after the join.
    public func next(dueNanoseconds: Int64, showFirstEarly: Bool, timelineSerial: Int = .max, items: VideoItems = .any) -> Pick {
        let picked: Entry?? = state.withLockIfAvailableAnnotated { state -> Entry? in
            // Stale pictures go first: older serials', and items' already left.
            dropStale(&state, items)
            let stale = timelineSerial < state.wantedSerial
            let decision = stale ? .wait : FrameSchedule.choose(count: state.ready.count, time: { state.axisTime(of: state.ready[$0].info, items) },
                                                                due: state.axis(dueNanoseconds))
            let displayedCurrent = state.displayed.map { $0.info.serial == state.wantedSerial } ?? false
            var index: Int
            switch decision {
            case .wait:
                guard showFirstEarly || stale, !displayedCurrent, !state.ready.isEmpty,
                      state.axisTime(of: state.ready[0].info, items) != .max else { return nil }
                index = 0
            case .show(let chosen):
                index = chosen
            }
            // Pictures passed over before the first one of a serial is shown are where a
            // start or a join skipped to, not pictures a display failed to show.
            if index > 0 { release(&state, count: index, countingDrops: displayedCurrent) }
            let entry = state.ready.removeFirst()
            if let old = state.displayed { state.free.append(old.slot) }
            state.displayed = entry
            state.shown += 1
            return entry
        }
        guard let entry = picked ?? nil else { return .keep }
        spaceFreed.signal()
        return .show(planes(of: entry))
    }

    /// Frees every queued picture that is stale (`State.isStale`) unshown, keeping the order
    /// of the rest: a reader of an item left may still have queued one behind the next
    /// item's first pictures.
    private func dropStale(_ state: inout State, _ items: VideoItems) {
        var kept = 0
        for index in 0..<state.ready.count {
            let entry = state.ready[index]
            if state.isStale(entry.info, items) {
                state.free.append(entry.slot)
            } else {
                state.ready[kept] = entry
                kept += 1
            }
        }
        state.ready.removeLast(state.ready.count - kept)
    }

    /// Frees the first `count` queued pictures unshown.
    private func release(_ state: inout State, count: Int, countingDrops: Bool) {
        for index in 0..<count {
            state.free.append(state.ready[index].slot)
            if countingDrops { state.dropped += 1 }
        }
        state.ready.removeFirst(count)
    }

    /// The picture on display, if any.
    public var displayed: VideoPlanes? {
        state.withLockAnnotated { $0.displayed }.map(planes(of:))
    }

    /// `displayed`, for a real-time caller: nil when the queue's lock is busy (ask again).
    public var displayedIfAvailable: VideoPlanes?? {
        state.withLockIfAvailableAnnotated { $0.displayed.map(planes(of:)) }
    }

    /// Pictures of the wanted serial dropped because they came due too late, and shown.
    public var counts: (dropped: Int, shown: Int) {
        state.withLockAnnotated { ($0.dropped, $0.shown) }
    }

    /// Item times of the pictures of item `item` (0: of any item) queued and not yet shown
    /// (for tests and the output API).
    public func queuedItemNanoseconds(item: Int = 0) -> [Int64] {
        let items = VideoItems(current: item)
        return state.withLockAnnotated { state in
            state.ready.filter { !state.isStale($0.info, items) && items.timelineNanoseconds(of: $0.info) != nil }.map(\.info.itemNanoseconds)
        }
    }

    /// The item time at which the first queued picture of the wanted serial comes due (its
    /// own, or going backwards its end; the next item's on a timeline of `items`, after the
    /// join), for a display to wake then; nil when none is queued, when the queue is busy,
    /// or when the timeline (of serial `timelineSerial`) predates the queue's serial.
    /// Real-time safe.
    public func nextQueuedItemNanoseconds(timelineSerial: Int, items: VideoItems = .any) -> Int64? {
        let found: Int64?? = state.withLockIfAvailableAnnotated { state -> Int64? in
            guard timelineSerial >= state.wantedSerial else { return nil }
            var index = 0
            while index < state.ready.count {
                let info = state.ready[index].info
                if !state.isStale(info, items) {
                    let axis = state.axisTime(of: info, items)
                    return axis == .max ? nil : state.axis(axis)
                }
                index += 1
            }
            return nil
        }
        return found ?? nil
    }

    /// Whether the wanted serial plays backwards (`flush(toSerial:backwards:)`).
    public var playsBackwards: Bool { state.withLockAnnotated { $0.backwards } }

    /// Whether picture `info` is due by item time `dueNanoseconds` in the queue's direction,
    /// on a timeline of `items`.
    public func isDue(_ info: VideoFrameInfo, by dueNanoseconds: Int64, items: VideoItems = .any) -> Bool {
        state.withLockAnnotated { state in
            let axis = state.axisTime(of: info, items)
            return axis != .max && axis <= state.axis(dueNanoseconds) + FrameSchedule.dueToleranceNanoseconds
        }
    }

    /// The newest queued picture due by `dueNanoseconds` on a timeline of `items` without
    /// taking it, or nil.
    public func peek(dueNanoseconds: Int64, items: VideoItems = .any) -> VideoFrameInfo? {
        state.withLockAnnotated { state in
            let current = state.ready.filter { !state.isStale($0.info, items) }
            switch FrameSchedule.choose(count: current.count, time: { state.axisTime(of: current[$0].info, items) },
                                        due: state.axis(dueNanoseconds)) {
            case .wait: return nil
            case .show(let index): return current[index].info
            }
        }
    }

    private func planes(of entry: Entry) -> VideoPlanes {
        let frame = frames[entry.slot].frame.pointee
        return VideoPlanes(
            info: entry.info,
            plane0: UnsafePointer(frame.data.0), plane1: UnsafePointer(frame.data.1),
            plane2: entry.info.format == .yuv420p ? UnsafePointer(frame.data.2) : nil,
            stride0: Int(frame.linesize.0), stride1: Int(frame.linesize.1),
            stride2: entry.info.format == .yuv420p ? Int(frame.linesize.2) : 0)
    }
}

/// The display policy: which queued picture a refresh shows.
///
/// A picture is shown at the first refresh at or after the moment the timeline reaches its
/// time, so at each refresh the newest picture whose time has come is the one to show, and
/// any older ones not yet shown came due between two refreshes and are dropped as late.
/// Pictures whose time has not come wait.
public enum FrameSchedule {
    /// How far ahead of its time a picture may still count as due, in nanoseconds: rounding
    /// between a timeline's frames and its nanoseconds, never a display-visible amount
    /// (a 240 Hz refresh is 4.2 ms).
    public static let dueToleranceNanoseconds: Int64 = 100_000

    /// What a refresh does.
    public enum Decision: Equatable, Sendable {
        /// Nothing queued is due yet.
        case wait
        /// Show the picture at this index; those before it are dropped.
        case show(index: Int)
    }

    /// The decision for pictures `0..<count` (in presentation order, times from `time`)
    /// when the timeline stands at `due` nanoseconds of item time.
    public static func choose(count: Int, time: (Int) -> Int64, due: Int64) -> Decision {
        var chosen: Int? = nil
        var index = 0
        while index < count, time(index) <= due &+ dueToleranceNanoseconds {
            chosen = index
            index += 1
        }
        return chosen.map { .show(index: $0) } ?? .wait
    }
}
