import Foundation
import MutexAnnotations
import Synchronization

extension AVPlayer {
    /// Whether the display is kept awake while the player plays video; true by default, as
    /// on Apple's platforms. Kept and observable, not applied: the window that shows pictures
    /// (`AVPlayerView`'s, through SDL) keeps the display awake while it is open, whatever
    /// this says.
    public var preventsDisplaySleepDuringVideoPlayback: Bool {
        get { DisplaySleepSettings.shared.value(for: self) }
        set {
            let old = DisplaySleepSettings.shared.set(newValue, for: self)
            observationRegistry.notify(\AVPlayer.preventsDisplaySleepDuringVideoPlayback, old: old, new: newValue)
        }
    }
}

/// `preventsDisplaySleepDuringVideoPlayback` for the players that changed it, beside the
/// players rather than in them so that the setting stays out of the player's own state.
///
/// Each entry holds its player weakly and counts only while that player lives, so that an
/// identifier reused by a later object never inherits a setting; entries of players gone are
/// dropped at the next change.
private final class DisplaySleepSettings: Sendable {
    static let shared = DisplaySleepSettings()

    private struct Entry {
        weak var player: AVPlayer?
        var prevents: Bool
    }

    private let entries = Mutex<[ObjectIdentifier: Entry]>([:])

    /// Apple's default.
    private static let defaultValue = true

    func value(for player: AVPlayer) -> Bool {
        entries.withLockAnnotated { entries in
            guard let entry = entries[ObjectIdentifier(player)], entry.player === player else { return Self.defaultValue }
            return entry.prevents
        }
    }

    /// Records `prevents` for `player`; returns the value it had.
    func set(_ prevents: Bool, for player: AVPlayer) -> Bool {
        entries.withLockAnnotated { entries in
            entries = entries.filter { $0.value.player != nil }
            let key = ObjectIdentifier(player)
            let old = entries[key].flatMap { $0.player === player ? $0.prevents : nil } ?? Self.defaultValue
            entries[key] = Entry(player: player, prevents: prevents)
            return old
        }
    }
}

extension AVPlayerItem {
    /// Posted (object: the item) when an entry is added to the item's access log. Declared
    /// for code that observes it; never posted here, since the item keeps no access log
    /// (see `accessLog()`).
    public static let newAccessLogEntryNotification = Notification.Name("AVPlayerItemNewAccessLogEntryNotification")
    /// Posted (object: the item) when an entry is added to the item's error log. Declared
    /// for code that observes it; never posted here (see `errorLog()`).
    public static let newErrorLogEntryNotification = Notification.Name("AVPlayerItemNewErrorLogEntryNotification")

    /// The date of the current time, for streams whose playlist dates its segments
    /// (`EXT-X-PROGRAM-DATE-TIME`); nil when the media has no dates, which here is always:
    /// FFmpeg's demuxer does not hand the dates on.
    public func currentDate() -> Date? { nil }

    /// The item's network access log; nil, as Apple's is before any network activity. Chorus
    /// keeps no such log (FFmpeg does its own reading); errors reach the item's `error` and
    /// `failedToPlayToEndTimeNotification` instead.
    public func accessLog() -> AVPlayerItemAccessLog? { nil }

    /// The item's network error log; nil, as `accessLog()`.
    public func errorLog() -> AVPlayerItemErrorLog? { nil }
}

extension NSNotification.Name {
    /// `AVPlayerItem.newAccessLogEntryNotification`.
    public static let AVPlayerItemNewAccessLogEntry = AVPlayerItem.newAccessLogEntryNotification
    /// `AVPlayerItem.newErrorLogEntryNotification`.
    public static let AVPlayerItemNewErrorLogEntry = AVPlayerItem.newErrorLogEntryNotification
}
