import Foundation
import MediaPipeline
import MutexAnnotations
import Synchronization

/// What a legible output's delegate hears: the subtitle text showing from a given item
/// time, each time it changes.
public protocol AVPlayerItemLegibleOutputPushDelegate: AVPlayerItemOutputPushDelegate {
    /// From `itemTime`, `strings` show (one per line of text on screen); an empty list
    /// clears what showed. `nativeSamples` is always empty: Chorus decodes the text itself.
    func legibleOutput(_ output: AVPlayerItemLegibleOutput, didOutputAttributedStrings strings: [NSAttributedString],
                       nativeSampleBuffers nativeSamples: [Any], forItemTime itemTime: CMTime)
}

/// What every pushing output's delegate may hear (`AVPlayerItemLegibleOutput`'s,
/// `AVPlayerItemMetadataOutput`'s).
public protocol AVPlayerItemOutputPushDelegate: AnyObject {
    /// The item jumped (a seek): what was delivered before no longer applies, and what is
    /// in effect where it landed follows.
    func outputSequenceWasFlushed(_ output: AVPlayerItemOutput)
}

extension AVPlayerItemOutputPushDelegate {
    public func outputSequenceWasFlushed(_ output: AVPlayerItemOutput) {}
}

/// An output that hands an item's chosen subtitles, as text, to a delegate as they come
/// due, for an app that draws them itself.
///
/// The text is that of the item's current `.legible` choice (`AVPlayerItem.select(_:in:)`):
/// nothing while subtitles are off. Deliveries come from the player's monitor, within its
/// tick (10 ms) of the cue's time, `advanceIntervalForDelegateInvocation` early if asked.
// @unchecked restates its superclass's: its own state is in `settings`, a Mutex.
public final class AVPlayerItemLegibleOutput: AVPlayerItemOutput, @unchecked Sendable {
    struct Settings {
        var delegate = WeakDelegate<any AVPlayerItemLegibleOutputPushDelegate>()
        var delegateQueue: DispatchQueue?
        var advance: TimeInterval = 0
        /// What was last delivered, and for which stream; nil before the first delivery.
        var delivered: (stream: Int?, cues: [SubtitleCue])?
    }
    private let settings = Mutex(Settings())

    /// A legible output.
    public override init() { super.init() }

    /// A legible output; native representations are not offered, so `subtypes` is accepted
    /// for source compatibility and otherwise unused.
    public convenience init(mediaSubtypesForNativeRepresentation subtypes: [NSNumber]) {
        self.init()
    }

    /// Sets the delegate and the queue it is told on (nil: no deliveries).
    public func setDelegate(_ delegate: (any AVPlayerItemLegibleOutputPushDelegate)?, queue: DispatchQueue?) {
        let held = WeakDelegate(delegate)
        settings.withLockAnnotated { $0.delegate = held; $0.delegateQueue = queue }
    }

    /// The delegate set by `setDelegate(_:queue:)`.
    public var delegate: (any AVPlayerItemLegibleOutputPushDelegate)? { settings.withLockAnnotated { $0.delegate }.value }
    /// The queue the delegate is told on.
    public var delegateQueue: DispatchQueue? { settings.withLockAnnotated { $0.delegateQueue } }

    /// How long before a text is due the delegate hears of it, in seconds (0 by default): time
    /// for an app to lay the text out.
    public var advanceIntervalForDelegateInvocation: TimeInterval {
        get { settings.withLockAnnotated { $0.advance } }
        set { settings.withLockAnnotated { $0.advance = newValue.isFinite ? max(0, newValue) : 0 } }
    }

    /// On the player's monitor: tells the delegate when the text showing at `time` (plus the
    /// advance) differs from what it heard last. `jumped`: the item's time jumped since.
    func deliver(cues: SubtitleCues, stream: Int?, at time: CMTime, jumped: Bool) {
        guard time.isNumeric else { return }
        let advance = advanceIntervalForDelegateInvocation
        let due = advance > 0 ? time + CMTime(seconds: advance, preferredTimescale: 1_000_000) : time
        let showing = stream.map { cues.cues(stream: $0, at: due) } ?? []
        let tell = settings.withLockAnnotated { current -> (delegate: WeakDelegate<any AVPlayerItemLegibleOutputPushDelegate>, queue: DispatchQueue, flush: Bool, before: [SubtitleCue])? in
            let delegate = current.delegate
            guard delegate.value != nil, let queue = current.delegateQueue else { return nil }
            if !jumped, let delivered = current.delivered, delivered.stream == stream, delivered.cues == showing { return nil }
            let flush = jumped && current.delivered != nil
            let before = current.delivered?.cues ?? []
            current.delivered = (stream, showing)
            return (delegate, queue, flush, before)
        }
        guard let tell else { return }
        // The time the change belongs to, not the tick that noticed it: the newest line's
        // start, or, when lines went, the end of those that ended.
        let ended = tell.before.filter { !showing.contains($0) }.map(\.end).filter { $0.isNumeric && $0 <= due }.max()
        let from = showing.map(\.start).max() ?? ended ?? due
        let lines = showing.map(\.text)
        tell.queue.async { [self] in
            guard let delegate = tell.delegate.value else { return }
            if tell.flush { delegate.outputSequenceWasFlushed(self) }
            delegate.legibleOutput(self, didOutputAttributedStrings: lines.map { NSAttributedString(string: $0) },
                                        nativeSampleBuffers: [], forItemTime: from)
        }
    }
}

extension AVPlayerItem {
    /// The legible outputs added to the item.
    var legibleOutputs: [AVPlayerItemLegibleOutput] {
        outputList.withLockAnnotated { $0.compactMap { $0 as? AVPlayerItemLegibleOutput } }
    }

    /// Whether the player's layers draw the item's subtitles (no legible output asked them
    /// not to).
    var layersDrawSubtitles: Bool { !legibleOutputs.contains { $0.suppressesPlayerRendering } }
}
