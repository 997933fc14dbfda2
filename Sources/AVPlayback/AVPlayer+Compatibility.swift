import Foundation

extension AVPlayerItem {
    /// Posted (object: the item) when an entry is added to the item's access log: when a
    /// network item first plays (see `accessLog()`).
    public static let newAccessLogEntryNotification = Notification.Name("AVPlayerItemNewAccessLogEntryNotification")
    /// Posted (object: the item) when an entry is added to the item's error log (see
    /// `errorLog()`).
    public static let newErrorLogEntryNotification = Notification.Name("AVPlayerItemNewErrorLogEntryNotification")

    /// The date of the current time, for streams whose playlist dates its segments
    /// (`EXT-X-PROGRAM-DATE-TIME`); nil when the media has no dates, which here is always:
    /// FFmpeg's demuxer does not hand the dates on.
    public func currentDate() -> Date? { nil }
}

extension NSNotification.Name {
    /// `AVPlayerItem.newAccessLogEntryNotification`.
    public static let AVPlayerItemNewAccessLogEntry = AVPlayerItem.newAccessLogEntryNotification
    /// `AVPlayerItem.newErrorLogEntryNotification`.
    public static let AVPlayerItemNewErrorLogEntry = AVPlayerItem.newErrorLogEntryNotification
}
