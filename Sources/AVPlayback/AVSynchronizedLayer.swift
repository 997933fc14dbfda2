import Foundation
import MutexAnnotations
import Synchronization

/// A layer whose time is its player item's, as Apple's `AVSynchronizedLayer`: on Apple's
/// platforms the animations of its sublayers run on the item's timeline, pausing, seeking and
/// changing speed with it.
///
/// Linux has no Core Animation, so the layer holds no sublayers and runs no animations; what
/// it keeps is the timing: the item it follows, that item's `timebase`, and the item time now,
/// for an application that draws its own overlays in step with the picture (a caption, a
/// scoreboard) against `currentTime`.
// @unchecked only because the class is open, as Apple's is: its one field is a Mutex.
open class AVSynchronizedLayer: @unchecked Sendable {
    private let item: Mutex<AVPlayerItem?>

    /// A layer following `playerItem`'s timeline.
    public init(playerItem: AVPlayerItem?) {
        item = Mutex(playerItem)
    }

    /// The item whose timeline the layer follows; nil: none (the layer's time stands still).
    open var playerItem: AVPlayerItem? {
        get { item.withLockAnnotated { $0 } }
        set { item.withLockAnnotated { $0 = newValue } }
    }

    /// The followed item's timebase: its time, and the rate it moves at against the host
    /// clock; nil without an item or before the item plays in a player.
    public var timebase: CMTimebase? { playerItem?.timebase }

    /// The followed item's time now; invalid without an item.
    public var currentTime: CMTime { playerItem?.currentTime() ?? .invalid }
}
