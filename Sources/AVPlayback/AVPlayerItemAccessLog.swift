import Foundation

/// An item's log of network access, one event per stretch of playback from one server
/// (`AVPlayerItemAccessLog`). `AVPlayerItem.accessLog()` returns none here; the type exists
/// so that code reading the log compiles and takes its nil branch.
public final class AVPlayerItemAccessLog: Sendable {
    /// The events, oldest first.
    public let events: [AVPlayerItemAccessLogEvent]

    init(events: [AVPlayerItemAccessLogEvent]) { self.events = events }
}

/// One event of an access log (`AVPlayerItemAccessLogEvent`): the best-known of Apple's fields.
public final class AVPlayerItemAccessLogEvent: Sendable {
    /// The address played from.
    public let uri: String?
    /// The server's IP address.
    public let serverAddress: String?
    /// When playback of this stretch began.
    public let playbackStartDate: Date?
    /// Seconds played in this stretch.
    public let durationWatched: TimeInterval
    /// Stalls during this stretch.
    public let numberOfStalls: Int
    /// The bit rate the playlist gave the variant played, in bits per second.
    public let indicatedBitrate: Double
    /// The bit rate measured while downloading, in bits per second.
    public let observedBitrate: Double
    /// Bytes read in this stretch.
    public let numberOfBytesTransferred: Int64

    init(uri: String?, serverAddress: String?, playbackStartDate: Date?, durationWatched: TimeInterval,
         numberOfStalls: Int, indicatedBitrate: Double, observedBitrate: Double, numberOfBytesTransferred: Int64) {
        self.uri = uri
        self.serverAddress = serverAddress
        self.playbackStartDate = playbackStartDate
        self.durationWatched = durationWatched
        self.numberOfStalls = numberOfStalls
        self.indicatedBitrate = indicatedBitrate
        self.observedBitrate = observedBitrate
        self.numberOfBytesTransferred = numberOfBytesTransferred
    }
}

/// An item's log of network errors (`AVPlayerItemErrorLog`). `AVPlayerItem.errorLog()`
/// returns none here, as `accessLog()`.
public final class AVPlayerItemErrorLog: Sendable {
    /// The events, oldest first.
    public let events: [AVPlayerItemErrorLogEvent]

    init(events: [AVPlayerItemErrorLogEvent]) { self.events = events }
}

/// One event of an error log (`AVPlayerItemErrorLogEvent`).
public final class AVPlayerItemErrorLogEvent: Sendable {
    /// When the error happened.
    public let date: Date?
    /// The address being read.
    public let uri: String?
    /// The server's IP address.
    public let serverAddress: String?
    /// The error's code (an HTTP status, say).
    public let errorStatusCode: Int
    /// The error's domain.
    public let errorDomain: String
    /// What went wrong, in words.
    public let errorComment: String?

    init(date: Date?, uri: String?, serverAddress: String?, errorStatusCode: Int, errorDomain: String, errorComment: String?) {
        self.date = date
        self.uri = uri
        self.serverAddress = serverAddress
        self.errorStatusCode = errorStatusCode
        self.errorDomain = errorDomain
        self.errorComment = errorComment
    }
}
