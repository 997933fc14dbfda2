import Foundation
import MediaPipeline
import MutexAnnotations
import Synchronization

/// A collection of timed metadata items that hold over one time range (`AVTimedMetadataGroup`).
public final class AVTimedMetadataGroup: Sendable {
    /// The items, in the order the stream gave them.
    public let items: [AVMetadataItem]
    /// Where in the item they hold: from their time, for as long as is known (an invalid
    /// duration while the next group has not been read).
    public let timeRange: CMTimeRange

    /// A group of `items` holding over `timeRange`.
    public init(items: [AVMetadataItem], timeRange: CMTimeRange) {
        self.items = items
        self.timeRange = timeRange
    }
}

/// What a metadata output's delegate hears: each group of the item's timed metadata as
/// playback reaches it.
public protocol AVPlayerItemMetadataOutputPushDelegate: AVPlayerItemOutputPushDelegate {
    /// `groups` have come due, oldest first. `track` is nil: Chorus reads the metadata from
    /// the container and the station, not from a track of the item's own.
    func metadataOutput(_ output: AVPlayerItemMetadataOutput, didOutputTimedMetadataGroups groups: [AVTimedMetadataGroup],
                        from track: AVPlayerItemTrack?)
}

/// An output that hands an item's timed metadata to a delegate as playback reaches it:
/// what a radio app shows as "now playing".
///
/// Two sources are read:
/// - a SHOUTcast or Icecast station's in-stream titles, in the `.icy` key space
///   (`icy/StreamTitle`, `icy/StreamUrl`), from the packet of sound they came with (a
///   packet early at most, while the input has not read ahead of its demuxer);
/// - ID3 tags in an HLS or MPEG-TS stream's timed metadata track, in the `.id3` key space
///   (`id3/TIT2`, `id3/TPE1`, `id3/TXXX`...), at their own times. Text frames are read;
///   pictures and private frames are not.
///
/// A group reaches the delegate from the player's monitor, within its tick (10 ms) of its
/// time, `advanceIntervalForDelegateInvocation` early if asked. Playback that starts or
/// jumps into the middle of a group hears that group first. A group of a stream that
/// repeats its tags unchanged is not delivered again.
// @unchecked restates its superclass's: its own state is in `settings`, a Mutex.
public final class AVPlayerItemMetadataOutput: AVPlayerItemOutput, @unchecked Sendable {
    struct Settings {
        var delegate = WeakDelegate<any AVPlayerItemMetadataOutputPushDelegate>()
        var delegateQueue: DispatchQueue?
        var advance: TimeInterval = 0
        /// The item time up to which groups were delivered; nil before the first look.
        var deliveredThrough: CMTime?
        /// The time of the group delivered last.
        var lastGroup: CMTime?
    }
    private let settings = Mutex(Settings())
    /// The identifiers delivered (`id3/TIT2`...); nil for all.
    private let identifiers: Set<String>?

    /// An output of the item's timed metadata with one of `identifiers` ("icy/StreamTitle",
    /// `AVMetadataIdentifier.id3MetadataTitleDescription.rawValue`...); nil for all of it.
    public init(identifiers: [String]?) {
        self.identifiers = identifiers.map(Set.init)
        super.init()
    }

    /// Sets the delegate and the queue it is told on (nil: no deliveries).
    public func setDelegate(_ delegate: (any AVPlayerItemMetadataOutputPushDelegate)?, queue: DispatchQueue?) {
        let held = WeakDelegate(delegate)
        settings.withLockAnnotated { $0.delegate = held; $0.delegateQueue = queue }
    }

    /// The delegate set by `setDelegate(_:queue:)`.
    public var delegate: (any AVPlayerItemMetadataOutputPushDelegate)? { settings.withLockAnnotated { $0.delegate }.value }
    /// The queue the delegate is told on.
    public var delegateQueue: DispatchQueue? { settings.withLockAnnotated { $0.delegateQueue } }

    /// How long before a group is due the delegate hears of it, in seconds (0 by default).
    public var advanceIntervalForDelegateInvocation: TimeInterval {
        get { settings.withLockAnnotated { $0.advance } }
        set { settings.withLockAnnotated { $0.advance = newValue.isFinite ? max(0, newValue) : 0 } }
    }

    /// On the player's monitor: tells the delegate of the groups of `log` that came due by
    /// `time` (plus the advance) since it last heard; after a jump, at the first look, or when
    /// the group in effect there is one it has not heard (read late), of that group.
    /// Backwards, each group is told as the falling time enters it.
    func deliver(log: TimedMetadataLog, at time: CMTime, jumped: Bool, info: MediaInfo) {
        guard time.isNumeric else { return }
        let advance = advanceIntervalForDelegateInvocation
        let due = advance > 0 ? time + CMTime(seconds: advance, preferredTimescale: 1_000_000) : time
        let tell = settings.withLockAnnotated { current -> (delegate: WeakDelegate<any AVPlayerItemMetadataOutputPushDelegate>, queue: DispatchQueue, flush: Bool, groups: [TimedMetadataGroup])? in
            let delegate = current.delegate
            guard delegate.value != nil, let queue = current.delegateQueue else { return nil }
            var groups: [TimedMetadataGroup] = []
            let flush = jumped && current.deliveredThrough != nil
            if let through = current.deliveredThrough, !jumped, due >= through {
                groups = log.groups(after: through, through: due)
            }
            if groups.isEmpty, let inEffect = log.group(at: due)?.group, jumped || inEffect.time != current.lastGroup {
                // The first look, a jump, backwards into an earlier group, or a group read
                // only once playback had passed its time (at the start of a stream, whose
                // reader has not yet read where playback stands).
                groups = [inEffect]
            }
            current.deliveredThrough = due
            if let last = groups.last { current.lastGroup = last.time }
            guard flush || !groups.isEmpty else { return nil }
            return (delegate, queue, flush, groups)
        }
        guard let tell else { return }
        let made = tell.groups.compactMap { group -> AVTimedMetadataGroup? in
            let items = AVMetadataItem.items(of: group, until: log.group(at: group.time)?.until, info: info)
                .filter { item in identifiers.map { wanted in item.identifier.map { wanted.contains($0.rawValue) } ?? false } ?? true }
            guard !items.isEmpty else { return nil }
            return AVTimedMetadataGroup(items: items, timeRange: CMTimeRange(start: group.time, duration: items[0].duration))
        }
        guard tell.flush || !made.isEmpty else { return }
        tell.queue.async { [self] in
            guard let delegate = tell.delegate.value else { return }
            if tell.flush { delegate.outputSequenceWasFlushed(self) }
            if !made.isEmpty { delegate.metadataOutput(self, didOutputTimedMetadataGroups: made, from: nil) }
        }
    }
}

extension AVPlayerItem {
    /// The metadata outputs added to the item.
    var metadataOutputs: [AVPlayerItemMetadataOutput] {
        outputList.withLockAnnotated { $0.compactMap { $0 as? AVPlayerItemMetadataOutput } }
    }
}
