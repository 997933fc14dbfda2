import Foundation

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
