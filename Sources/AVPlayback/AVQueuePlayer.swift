import Foundation
import MediaClock
import MediaPipeline
import MutexAnnotations
import Synchronization

/// A player of items in sequence: Apple's `AVQueuePlayer`.
///
/// The queue is the current item followed by the items waiting their turn (`items()`). When
/// the current item ends, the queue advances (`actionAtItemEnd` is `.advance` by default) and
/// the next item plays at the same rate; after the last one the player has no current item
/// and waits, so an item inserted then starts at once. An item is in one queue at a time.
///
/// Items follow one another without a gap: while the current item plays, the next one is
/// opened, and its sound is decoded on from the current one's last sample, so the two are
/// heard joined, sample to sample, with the encoders' delay and padding trimmed where the
/// container says so (an MP3's LAME header, an MP4's edit list, Opus's pre-skip). The current
/// item changes, and the end notification of the one before is posted, as the join is heard.
/// An item's pictures join with its sound. An item without sound, and one that cannot be
/// opened in time, follow as `replaceCurrentItem(with:)` does: once the current one's end is
/// heard.
/// A change to the queue after the next item's sound was decoded re-reads the current item
/// from where it stands (a short break), since what was decoded cannot be taken back.
// @unchecked: the waiting items sit behind `waiting` (a Mutex); changes to the queue are made
// one at a time under `changes`, a recursive lock, since an observer told of a change may
// change the queue again from inside the change.
open class AVQueuePlayer: AVPlayer, @unchecked Sendable {
    /// The items after the current one, in order.
    private let waiting = Mutex<[AVPlayerItem]>([])
    private let changes = NSRecursiveLock()

    // Apple's queue player inherits its player's initializers; here each is overridden
    // (designated, so a subclass inherits them all in turn) to make the item given the
    // queue's own and to advance at each item's end.

    /// A queue of `items` on the default output; the first becomes the current item. An item
    /// given twice, or already in another queue or player, is left out.
    public init(items: [AVPlayerItem]) {
        let accepted = Self.acceptable(items)
        super.init(playerItem: accepted.first, output: .defaultOutput)
        becomeQueue(of: accepted)
    }

    /// A queue of `items` that renders to `output` (a Chorus addition, as on `AVPlayer`).
    public init(items: [AVPlayerItem], output: OutputSpec) {
        let accepted = Self.acceptable(items)
        super.init(playerItem: accepted.first, output: output)
        becomeQueue(of: accepted)
    }

    /// An empty queue.
    public override init() {
        super.init()
        becomeQueue(of: [])
    }

    /// A queue of the media at `url`.
    public override init(url: URL) {
        let item = AVPlayerItem(url: url)
        super.init(playerItem: item)
        becomeQueue(of: [item])
    }

    /// A queue of `item` alone (none for nil).
    public override init(playerItem item: AVPlayerItem?) {
        let accepted = Self.acceptable(item.map { [$0] } ?? [])
        super.init(playerItem: accepted.first)
        becomeQueue(of: accepted)
    }

    /// A queue of `item` alone that renders to `output`.
    public override init(playerItem item: AVPlayerItem?, output: OutputSpec) {
        let accepted = Self.acceptable(item.map { [$0] } ?? [])
        super.init(playerItem: accepted.first, output: output)
        becomeQueue(of: accepted)
    }

    /// `items` without repeats and without those in another queue or player.
    private static func acceptable(_ items: [AVPlayerItem]) -> [AVPlayerItem] {
        var accepted: [AVPlayerItem] = []
        for item in items where !accepted.contains(where: { $0 === item }) && item.player == nil && item.queue == nil {
            accepted.append(item)
        }
        return accepted
    }

    /// Makes `items` (the first already current) this queue's, and the queue advance at each
    /// item's end.
    private func becomeQueue(of items: [AVPlayerItem]) {
        for item in items { item.queue = self }
        waiting.withLockAnnotated { $0 = Array(items.dropFirst()) }
        actionAtItemEnd = .advance
    }

    /// Replaces the current item, keeping the items waiting after it.
    open override func replaceCurrentItem(with item: AVPlayerItem?) {
        CallerObservers.holding { changes.withLock {
            let old = currentItem
            item?.queue = self
            super.replaceCurrentItem(with: item)
            if let old, old !== item, !waiting.withLockAnnotated({ $0.contains(where: { $0 === old }) }) { old.queue = nil }
        } }
    }

    /// The current item followed by the items waiting their turn.
    open func items() -> [AVPlayerItem] {
        CallerObservers.holding { changes.withLock {
            (currentItem.map { [$0] } ?? []) + waiting.withLockAnnotated { $0 }
        } }
    }

    /// Ends the current item and plays the next, at the player's rate. With no next item the
    /// player is left without a current item.
    open func advanceToNextItem() {
        CallerObservers.holding { changes.withLock {
            let next: AVPlayerItem? = waiting.withLockAnnotated { $0.isEmpty ? nil : $0.removeFirst() }
            replaceCurrentItem(with: next)
        } }
    }

    /// Whether `item` may go into the queue after `afterItem` (nil: at the end): not when it
    /// is already queued here or in another player, nor when `afterItem` is not in this
    /// queue.
    open func canInsert(_ item: AVPlayerItem, after afterItem: AVPlayerItem?) -> Bool {
        CallerObservers.holding { changes.withLock {
            let queued = items()
            if queued.contains(where: { $0 === item }) { return false }
            if item.queue != nil || item.player != nil { return false }
            if let afterItem, !queued.contains(where: { $0 === afterItem }) { return false }
            return true
        } }
    }

    /// Puts `item` into the queue after `afterItem` (nil: at the end), when `canInsert` allows.
    /// Into an empty queue, it becomes the current item.
    open func insert(_ item: AVPlayerItem, after afterItem: AVPlayerItem?) {
        CallerObservers.holding { changes.withLock {
            guard canInsert(item, after: afterItem) else { return }
            guard currentItem != nil else {
                replaceCurrentItem(with: item)
                return
            }
            item.queue = self
            waiting.withLockAnnotated { waiting in
                if let afterItem, afterItem !== currentItem, let index = waiting.firstIndex(where: { $0 === afterItem }) {
                    waiting.insert(item, at: index + 1)
                } else if afterItem != nil {
                    // After the current item.
                    waiting.insert(item, at: 0)
                } else {
                    waiting.append(item)
                }
            }
            refreshSuccessors()
        } }
    }

    /// Takes `item` out of the queue; the current item's removal advances the queue.
    open func remove(_ item: AVPlayerItem) {
        CallerObservers.holding { changes.withLock {
            if item === currentItem {
                advanceToNextItem()
                return
            }
            let removed = waiting.withLockAnnotated { waiting -> Bool in
                guard let index = waiting.firstIndex(where: { $0 === item }) else { return false }
                waiting.remove(at: index)
                return true
            }
            if removed {
                item.queue = nil
                refreshSuccessors()
            }
        } }
    }

    /// Empties the queue: no current item, nothing waiting.
    open func removeAllItems() {
        CallerObservers.holding { changes.withLock {
            let dropped = waiting.withLockAnnotated { waiting in defer { waiting.removeAll() }; return waiting }
            for item in dropped { item.queue = nil }
            replaceCurrentItem(with: nil)
        } }
    }

    /// The current item ended with `actionAtItemEnd` `.advance`: the next one plays.
    open override func advanceAfterItemEnd() {
        advanceToNextItem()
    }

    /// The waiting items, to follow the current one gaplessly.
    open override func itemsQueuedAfterCurrent() -> [AVPlayerItem] {
        waiting.withLockAnnotated { $0 }
    }

    /// The gapless join is heard: `item` leaves the waiting items, as it becomes current.
    open override func takeQueuedItem(_ item: AVPlayerItem, after current: AVPlayerItem) -> Bool {
        let taken = waiting.withLockAnnotated { waiting in
            guard waiting.first === item else { return false }
            waiting.removeFirst()
            return true
        }
        // The item that ended leaves the queue, and may be queued again (a looper's copy).
        if taken { current.queue = nil }
        return taken
    }
}
