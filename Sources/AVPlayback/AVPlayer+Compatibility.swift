import Foundation

extension AVPlayerItem {
    /// Posted (object: the item) when an entry is added to the item's access log: when a
    /// network item first plays (see `accessLog()`).
    public static let newAccessLogEntryNotification = Notification.Name("AVPlayerItemNewAccessLogEntryNotification")
    /// Posted (object: the item) when an entry is added to the item's error log (see
    /// `errorLog()`).
    public static let newErrorLogEntryNotification = Notification.Name("AVPlayerItemNewErrorLogEntryNotification")

    /// The date of the current time, for an HLS stream whose playlist dates its segments
    /// (`EXT-X-PROGRAM-DATE-TIME`); nil for media without dates. A live item's dates come
    /// with its playlist's readings; an on-demand one's are read in the background when a
    /// player opens it, and are nil for the moment that takes.
    public func currentDate() -> Date? {
        programDates?.date(atItemSeconds: currentTime().seconds)
    }

    /// Seeks to the moment `date` of an HLS stream whose playlist dates its segments; true
    /// when the item has that date and the seek is made (`completionHandler` is then told
    /// whether it finished), false otherwise (the handler is then told false at once, on
    /// the caller's thread, so that one awaiting it goes on).
    @discardableResult
    public func seek(to date: Date, completionHandler: (@Sendable (Bool) -> Void)? = nil) -> Bool {
        guard let time = time(at: date) else {
            completionHandler?(false)
            return false
        }
        seek(to: time, toleranceBefore: .zero, toleranceAfter: .zero, completionHandler: completionHandler)
        return true
    }

    /// Seeks to the moment `date` of an HLS stream whose playlist dates its segments; true
    /// once the seek finished there, false when the item has no such date or the seek was
    /// interrupted.
    public func seek(to date: Date) async -> Bool {
        await withCheckedContinuation { continuation in
            _ = seek(to: date) { continuation.resume(returning: $0) }
        }
    }

    /// Where the item's playlist puts `date` on its timeline; nil when it has no such date.
    func time(at date: Date) -> CMTime? {
        guard let seconds = programDates?.itemSeconds(at: date) else { return nil }
        let time = CMTime(seconds: seconds, preferredTimescale: Self.dateSeekTimescale)
        return time.isNumeric ? time : nil
    }

    /// The timescale of a time a date seek goes to: microseconds, finer than any
    /// playlist's dates (milliseconds).
    static let dateSeekTimescale: CMTimeScale = 1_000_000
}

extension NSNotification.Name {
    /// `AVPlayerItem.newAccessLogEntryNotification`.
    public static let AVPlayerItemNewAccessLogEntry = AVPlayerItem.newAccessLogEntryNotification
    /// `AVPlayerItem.newErrorLogEntryNotification`.
    public static let AVPlayerItemNewErrorLogEntry = AVPlayerItem.newErrorLogEntryNotification
}
