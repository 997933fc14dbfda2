import Foundation
import MediaPipeline
import MutexAnnotations

/// An item's log of network access (`AVPlayerItemAccessLog`): see `AVPlayerItem.accessLog()`.
public final class AVPlayerItemAccessLog: Sendable {
    /// The events, oldest first.
    public let events: [AVPlayerItemAccessLogEvent]

    init(events: [AVPlayerItemAccessLogEvent]) { self.events = events }

    /// The log in the W3C Extended Log File Format, as Apple's: a header naming the fields
    /// (Apple's names for them), then a line per event, in `extendedLogDataStringEncoding`;
    /// "-" for what is not known.
    public func extendedLogData() -> Data? {
        var lines = ["#Version: 1.0", "#Software: Chorus",
                     "#Date: \(W3CLog.dateTime(Date()))",
                     "#Fields: date time s-ip cs-guid uri s-ip-changes sc-count c-start-time c-duration-watched bytes "
                        + "c-observed-bitrate sc-indicated-bitrate c-stalls c-frames-dropped c-startup-time c-overdue "
                        + "s-playback-type sc-wwan-count c-switch-bitrate c-transfer-duration"]
        for event in events {
            lines.append([
                event.playbackStartDate.map(W3CLog.dateTime) ?? "- -",
                event.serverAddress ?? "-", event.playbackSessionID ?? "-", event.uri.map(W3CLog.field) ?? "-",
                W3CLog.count(event.numberOfServerAddressChanges), W3CLog.count(event.numberOfMediaRequests),
                W3CLog.number(event.playbackStartOffset), W3CLog.number(event.durationWatched),
                W3CLog.count(Int(clamping: event.numberOfBytesTransferred)),
                W3CLog.number(event.observedBitrate), W3CLog.number(event.indicatedBitrate),
                W3CLog.count(event.numberOfStalls), W3CLog.count(event.numberOfDroppedVideoFrames),
                W3CLog.number(event.startupTime), W3CLog.count(event.downloadOverdue),
                event.playbackType ?? "-", W3CLog.count(event.mediaRequestsWWAN),
                W3CLog.number(event.switchBitrate), W3CLog.number(event.transferDuration),
            ].joined(separator: " "))
        }
        return Data((lines.joined(separator: "\n") + "\n").utf8)
    }

    /// The encoding of `extendedLogData()`: UTF-8.
    public var extendedLogDataStringEncoding: UInt { String.Encoding.utf8.rawValue }
}

/// One event of an access log (`AVPlayerItemAccessLogEvent`). As on Apple's platforms, a
/// figure this player does not measure is negative (-1), and a text it does not know is nil.
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
    /// Seconds spent reading this stretch's bytes (the time `observedBitrate` is measured
    /// over).
    public let transferDuration: TimeInterval
    /// The item's playback, the same in every event of its logs.
    public let playbackSessionID: String?
    /// "LIVE" for a live stream, "VOD" for an on-demand HLS stream, "FILE" for a file
    /// read over HTTP.
    public let playbackType: String?
    /// Where in the item this stretch of playback began, in seconds (-1: not kept).
    public let playbackStartOffset: TimeInterval
    /// Changes of server address: 0, as one address serves an item here.
    public let numberOfServerAddressChanges: Int
    /// Media requests made in this stretch: not counted here (-1).
    public let numberOfMediaRequests: Int
    /// Pictures dropped in this stretch: not counted here (-1).
    public let numberOfDroppedVideoFrames: Int
    /// Seconds from the first request to the first sound: not measured here (-1).
    public let startupTime: TimeInterval
    /// The bit rate whose measure made the player change variants (-1: not kept).
    public let switchBitrate: Double
    /// The variant's declared average bit rate (`AVERAGE-BANDWIDTH`; -1: not read).
    public let indicatedAverageBitrate: Double
    /// The video's and the sound's average bit rates (-1: not measured apart).
    public let averageVideoBitrate: Double
    public let averageAudioBitrate: Double
    /// Seconds of media downloaded (-1: not counted).
    public let segmentsDownloadedDuration: TimeInterval
    /// Segments that arrived after they were due (-1: not counted).
    public let downloadOverdue: Int
    /// Requests over a cellular network: 0, as this player has none.
    public let mediaRequestsWWAN: Int

    init(uri: String?, serverAddress: String?, playbackStartDate: Date?, durationWatched: TimeInterval,
         numberOfStalls: Int, indicatedBitrate: Double, observedBitrate: Double, numberOfBytesTransferred: Int64,
         transferDuration: TimeInterval = -1, playbackSessionID: String? = nil, playbackType: String? = nil) {
        self.uri = uri
        self.serverAddress = serverAddress
        self.playbackStartDate = playbackStartDate
        self.durationWatched = durationWatched
        self.numberOfStalls = numberOfStalls
        self.indicatedBitrate = indicatedBitrate
        self.observedBitrate = observedBitrate
        self.numberOfBytesTransferred = numberOfBytesTransferred
        self.transferDuration = transferDuration
        self.playbackSessionID = playbackSessionID
        self.playbackType = playbackType
        numberOfServerAddressChanges = 0
        playbackStartOffset = -1
        numberOfMediaRequests = -1
        numberOfDroppedVideoFrames = -1
        startupTime = -1
        switchBitrate = -1
        indicatedAverageBitrate = -1
        averageVideoBitrate = -1
        averageAudioBitrate = -1
        segmentsDownloadedDuration = -1
        downloadOverdue = -1
        mediaRequestsWWAN = 0
    }
}

/// The W3C Extended Log File Format's fields, as the logs' `extendedLogData()` write them.
enum W3CLog {
    /// "date time" in UTC, as the format's `date` and `time` fields.
    static func dateTime(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss.SSS"
        return formatter.string(from: date)
    }

    /// A figure, "-" when it is not known (negative).
    static func number(_ value: Double) -> String { value < 0 || !value.isFinite ? "-" : String(format: "%.3f", value) }

    /// A count, "-" when it is not known (negative).
    static func count(_ value: Int) -> String { value < 0 ? "-" : "\(value)" }

    /// A text field, quoted when it holds a space (the format's separator).
    static func field(_ text: String) -> String {
        text.contains(" ") || text.contains("\"") ? "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : text
    }
}

/// An item's log of network errors (`AVPlayerItemErrorLog`): see `AVPlayerItem.errorLog()`.
public final class AVPlayerItemErrorLog: Sendable {
    /// The events, oldest first.
    public let events: [AVPlayerItemErrorLogEvent]

    init(events: [AVPlayerItemErrorLogEvent]) { self.events = events }

    /// The log in the W3C Extended Log File Format, as Apple's: a header naming the fields,
    /// then a line per event, in `extendedLogDataStringEncoding`.
    public func extendedLogData() -> Data? {
        var lines = ["#Version: 1.0", "#Software: Chorus",
                     "#Date: \(W3CLog.dateTime(Date()))",
                     "#Fields: date time s-ip uri status domain comment cs-guid"]
        for event in events {
            lines.append([
                event.date.map(W3CLog.dateTime) ?? "- -", event.serverAddress ?? "-", event.uri.map(W3CLog.field) ?? "-",
                "\(event.errorStatusCode)", W3CLog.field(event.errorDomain), event.errorComment.map(W3CLog.field) ?? "-",
                event.playbackSessionID ?? "-",
            ].joined(separator: " "))
        }
        return Data((lines.joined(separator: "\n") + "\n").utf8)
    }

    /// The encoding of `extendedLogData()`: UTF-8.
    public var extendedLogDataStringEncoding: UInt { String.Encoding.utf8.rawValue }
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
    /// The item's playback, the same in every event of its logs.
    public let playbackSessionID: String?

    init(date: Date?, uri: String?, serverAddress: String?, errorStatusCode: Int, errorDomain: String, errorComment: String?,
         playbackSessionID: String? = nil) {
        self.date = date
        self.uri = uri
        self.serverAddress = serverAddress
        self.errorStatusCode = errorStatusCode
        self.errorDomain = errorDomain
        self.errorComment = errorComment
        self.playbackSessionID = playbackSessionID
    }
}

/// What an item's logs are made from, behind the item's `networkLog` lock (a leaf: nothing
/// else is locked while it is held).
struct NetworkLog {
    /// One access log event's stretch of playback: from the item's first play, and from
    /// each move to another variant (`AVPlayerItem.noteVariantMove`), by what the network
    /// brings or by a changed limit.
    struct Stretch {
        var startDate: Date
        /// Seconds played in it (its player's `timeControlStatus` `.playing` while the item
        /// was current).
        var watched: Double = 0
        var stalls = 0
        /// The bit rate the media declares for what it plays.
        var indicatedBitrate: Double
        /// The item's byte counts when it began (`NetworkActivity`): all, and measured.
        var bytesAtStart: Int64
        var measuredAtStart: (bytes: Int64, nanoseconds: Int64)
    }

    /// The stretches, oldest first; none until the item first played (the access log is
    /// empty until then).
    var stretches: [Stretch] = []
    /// Every stall of the item, in a stretch or before the first.
    var stalls = 0
    var errors: [AVPlayerItemErrorLogEvent] = []
}

extension AVPlayerItem {
    /// The item's network access log: for an item read over HTTP(S) (a file, or an HLS
    /// stream) that has begun to play, one event from its first play, and one more from
    /// each move to another of an HLS playlist's variants (by what the network brings, or
    /// by a changed limit), the last going on growing; nil for local files, and before the
    /// item plays. A new event posts `newAccessLogEntryNotification`.
    ///
    /// An event holds the item's address, when its stretch began, the seconds played and
    /// the stalls in it, the bit rate the media declares for what played (an HLS variant's
    /// `BANDWIDTH`, or the tracks' own rates), and the bytes read from the server for it by
    /// every opening meanwhile (a connection a demuxer keeps open, as FFmpeg's HLS demuxer
    /// keeps the one to its segments, counts when it closes). The observed bit rate is the
    /// bytes over the time the reads that brought them took (as
    /// `NetworkActivity.observedBitsPerSecond`): time the reader was held back by full
    /// queues is not counted, nor are the bytes the system received meanwhile, which come at
    /// once when reading resumes. It is -1 (Apple's value for what is not known) before any
    /// byte came. The server's address is given when the URL names it by number.
    public func accessLog() -> AVPlayerItemAccessLog? {
        guard isNetworkItem else { return nil }
        let stretches = networkLog.withLockAnnotated { $0.stretches }
        guard !stretches.isEmpty else { return nil }
        let url = URL(string: asset.location)
        let host = url?.host
        let numeric = host.map { host -> Bool in
            var v4 = in_addr(), v6 = in6_addr()
            return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
        } ?? false
        let now = (total: networkActivity.total, measured: networkActivity.measured)
        var events: [AVPlayerItemAccessLogEvent] = []
        for (index, stretch) in stretches.enumerated() {
            // Each stretch's bytes run to the next one's start, the last one's to now.
            let next = index + 1 < stretches.count ? stretches[index + 1] : nil
            let bytes = (next?.bytesAtStart ?? now.total) - stretch.bytesAtStart
            let end = next?.measuredAtStart ?? now.measured
            let measured = (bytes: end.bytes - stretch.measuredAtStart.bytes, nanoseconds: end.nanoseconds - stretch.measuredAtStart.nanoseconds)
            let observed = measured.nanoseconds > 0 && measured.bytes > 0 ? Double(measured.bytes) * 8 * 1e9 / Double(measured.nanoseconds) : -1
            events.append(AVPlayerItemAccessLogEvent(uri: asset.location, serverAddress: numeric ? host : nil, playbackStartDate: stretch.startDate,
                                                     durationWatched: stretch.watched, numberOfStalls: stretch.stalls,
                                                     indicatedBitrate: stretch.indicatedBitrate, observedBitrate: observed,
                                                     numberOfBytesTransferred: bytes,
                                                     transferDuration: measured.nanoseconds > 0 ? Double(measured.nanoseconds) / 1e9 : 0,
                                                     playbackSessionID: playbackSessionID, playbackType: playbackType))
        }
        return AVPlayerItemAccessLog(events: events)
    }

    /// The item's network error log, oldest first: one event for each failure of an item
    /// read over HTTP(S) (a server that answered with an error, went away or never
    /// answered; a certificate that did not check out), and one for each fetch that failed
    /// while it played and was gone without (an HLS segment the demuxer skipped, leaving a
    /// gap). Nil when there was none.
    public func errorLog() -> AVPlayerItemErrorLog? {
        let errors = networkLog.withLockAnnotated { $0.errors }
        return errors.isEmpty ? nil : AVPlayerItemErrorLog(events: errors)
    }

    /// What the access log calls the item's playback, in Apple's words: "LIVE" for a live
    /// stream, "VOD" for an on-demand HLS stream, "FILE" for a file read over HTTP; nil before
    /// the item has loaded.
    var playbackType: String? {
        guard let info = loadedInfo ?? asset.loadedMediaInfo else { return nil }
        if !info.duration.isNumeric { return "LIVE" }
        return info.formatName == "hls" ? "VOD" : "FILE"
    }

    /// The bit rate the media declares for what plays, in bits per second: the played HLS
    /// variant's `BANDWIDTH`, or the played tracks' own rates summed; -1 when none is known.
    var indicatedBitrate: Double {
        guard let info = loadedInfo ?? asset.loadedMediaInfo else { return -1 }
        let played = info.playedTracks(audioStream: chosenAudioStream, within: variantLimit)
        let indexes = Set([played.audio, played.video].compactMap { $0?.streamIndex })
        if let variant = info.variants.first(where: { !$0.streamIndexes.isDisjoint(with: indexes) }), variant.bandwidth > 0 {
            return Double(variant.bandwidth)
        }
        let rates = [played.audio, played.video].compactMap { $0?.bitRate }.filter { $0 > 0 }
        return rates.isEmpty ? -1 : Double(rates.reduce(0, +))
    }

    /// The item played for `seconds` more, as its player's monitor saw. Returns true when
    /// this began its access log (its first play), for the notification.
    func notePlayed(seconds: Double) -> Bool {
        guard isNetworkItem else { return false }
        let opening = networkLog.withLockAnnotated { $0.stretches.isEmpty } ? newStretch() : nil
        return networkLog.withLockAnnotated { log in
            if var opening, log.stretches.isEmpty {
                // What came before the first play (the opening's bytes, the start's stalls)
                // counts in the first stretch.
                opening.stalls = log.stalls
                opening.bytesAtStart = 0
                opening.measuredAtStart = (0, 0)
                log.stretches.append(opening)
                log.stretches[0].watched += seconds
                return true
            }
            if !log.stretches.isEmpty { log.stretches[log.stretches.count - 1].watched += seconds }
            return false
        }
    }

    /// The item is read anew, for another sound or variant: when that is another variant
    /// (another declared bit rate) and the item has played, its access log begins a new
    /// event, as Apple's does. Returns true when it did, for the notification.
    func noteVariantMove() -> Bool {
        guard isNetworkItem else { return false }
        let stretch = newStretch()
        return networkLog.withLockAnnotated { log in
            guard let last = log.stretches.last, last.indicatedBitrate != stretch.indicatedBitrate else { return false }
            log.stretches.append(stretch)
            return true
        }
    }

    /// A stretch beginning now, for what the item plays now.
    private func newStretch() -> NetworkLog.Stretch {
        NetworkLog.Stretch(startDate: Date(), indicatedBitrate: indicatedBitrate, bytesAtStart: networkActivity.total,
                           measuredAtStart: networkActivity.measured)
    }

    /// The item stalled (its sound ran dry while it played).
    func noteStall() {
        networkLog.withLockAnnotated { log in
            log.stalls += 1
            if !log.stretches.isEmpty { log.stretches[log.stretches.count - 1].stalls += 1 }
        }
    }

    /// The item failed with `error`: an error log event when it was read over the network.
    func noteError(_ error: MediaError) {
        guard isNetworkItem else { return }
        let reason: String
        switch error {
        case .networkFailure(_, let why), .badURL(_, let why), .unsupportedFormat(_, let why), .corruptData(_, let why): reason = why
        default: reason = error.description
        }
        let host = URL(string: asset.location)?.host
        let event = AVPlayerItemErrorLogEvent(date: Date(), uri: asset.location, serverAddress: host, errorStatusCode: Self.httpStatus(in: reason) ?? -1,
                                              errorDomain: "CoreMediaErrorDomain", errorComment: reason,
                                              playbackSessionID: playbackSessionID)
        networkLog.withLockAnnotated { $0.errors.append(event) }
        // Where the item's other notifications go out: its failure is told on its player's
        // event queue, and this with it.
        NotificationCenter.default.post(name: AVPlayerItem.newErrorLogEntryNotification, object: self)
    }

    /// A fetch for the item failed while it was read, and the demuxer went on without it
    /// (an HLS segment it skipped): an error log event for `url`. On the reading thread;
    /// the notification goes out from another, so that no observer holds the reading up.
    func noteFetchFailure(url: String, reason: String) {
        let host = URL(string: url)?.host
        let event = AVPlayerItemErrorLogEvent(date: Date(), uri: url, serverAddress: host, errorStatusCode: Self.httpStatus(in: reason) ?? -1,
                                              errorDomain: "CoreMediaErrorDomain", errorComment: reason,
                                              playbackSessionID: playbackSessionID)
        networkLog.withLockAnnotated { $0.errors.append(event) }
        DispatchQueue.global().async { [self] in
            NotificationCenter.default.post(name: AVPlayerItem.newErrorLogEntryNotification, object: self)
        }
    }

    /// The HTTP status a failure's words give ("Server returned 404 Not Found", FFmpeg's
    /// message for one), if any.
    static func httpStatus(in reason: String) -> Int? {
        guard let range = reason.range(of: "Server returned ") else { return nil }
        let digits = reason[range.upperBound...].prefix { $0.isNumber }
        guard digits.count == 3, let status = Int(digits) else { return nil }
        return status
    }
}
