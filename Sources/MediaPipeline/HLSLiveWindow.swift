import Foundation
import MediaClock
import MutexAnnotations
import Synchronization
internal import CFFmpeg

/// One reading of a live HLS media playlist: the segments it lists, in order.
public struct HLSMediaPlaylist: Sendable, Equatable {
    /// The sequence number of the first segment listed (`EXT-X-MEDIA-SEQUENCE`).
    public var firstSequence: Int
    /// Each listed segment's duration, in seconds (`EXTINF`).
    public var durations: [Double]
    /// Each listed segment's URI, as the playlist gives it (often relative to it).
    public var uris: [String]
    /// The most a segment may last, in seconds (`EXT-X-TARGETDURATION`).
    public var targetDuration: Double
    /// Whether the playlist is complete (`EXT-X-ENDLIST`): it no longer moves.
    public var ended: Bool
    /// Each listed segment's date, when the playlist dates them (`EXT-X-PROGRAM-DATE-TIME`,
    /// carried on to segments without one: `HLSProgramDates.segmentDates(of:)`).
    public var dates: [Date?]

    /// The playlist in `text`; nil when it lists no segment or is not a media playlist.
    public init?(parsing text: String) {
        let parsed = HLSPlaylistCut(parsing: text)
        guard !parsed.isMaster, !parsed.segments.isEmpty else { return nil }
        firstSequence = parsed.headerValue(of: "#EXT-X-MEDIA-SEQUENCE").flatMap { Int($0) } ?? 0
        durations = parsed.segments.map(\.duration)
        uris = parsed.segments.map { $0.lines.last { !$0.hasPrefix("#") } ?? "" }
        dates = HLSProgramDates.segmentDates(of: parsed.segments)
        let target = parsed.headerValue(of: "#EXT-X-TARGETDURATION").flatMap { Double($0) } ?? 0
        targetDuration = target > 0 ? target : durations.max() ?? 0
        ended = parsed.trailer.contains("#EXT-X-ENDLIST") || parsed.segments.contains { $0.lines.contains("#EXT-X-ENDLIST") }
    }

    /// The sequence number one past the last segment listed.
    public var endSequence: Int { firstSequence + durations.count }

    /// The index of the first segment listed that one of `urls` (absolute URLs, in the
    /// order they were opened) fetched, with the playlist read from `base`; nil when none did.
    /// A URI listed more than once (byte ranges of one file) tells no segment apart.
    public func firstIndex(fetchedByOneOf urls: [String], base: String) -> Int? {
        let baseURL = URL(string: base)
        var listed: [String: Int] = [:]
        for uri in uris { listed[uri, default: 0] += 1 }
        for url in urls {
            if let index = uris.firstIndex(where: { uri in
                listed[uri] == 1 &&
                // Resolved in full: variants often name their segments alike in folders of
                // their own.
                !uri.isEmpty && (url == uri || url == URL(string: uri, relativeTo: baseURL)?.absoluteString)
            }) {
                return index
            }
        }
        return nil
    }
}

/// A live HLS playlist followed as it moves, placed on an item's time (a live stream's own
/// stream time, `MediaSource`): which segments it holds now, and where each begins, in
/// seconds. The segment the item was opened at begins where that opening's first packet
/// was stamped: it is told by name among the inputs the opening fetched, since the playlist
/// may have moved on between the opening's reading and this one's first; failing that, it is
/// the segment FFmpeg starts a live playlist at, counted from the end.
///
/// It reads the media playlist again every half target duration on a thread of its own,
/// and carries its mapping on from one reading to the next by the segments they share (the
/// durations of a segment seen in one reading place the segments after it in the next).
/// From it come the item's seekable range and the segment to reopen the stream at for a
/// seek (`segmentIndex(for:)`, FFmpeg's `live_start_index`).
public final class HLSLiveWindow: Sendable {
    /// Where the end of the seekable range stands back from the playlist's end, in target
    /// durations: the HLS specification's least distance from the end a client may start
    /// at, so that the next segment is out before it is needed.
    public static let holdBackTargetDurations = 3.0
    /// How far back from the end FFmpeg's HLS demuxer starts a live playlist by default, in
    /// segments (its `live_start_index` of −3): where item time zero is placed at first.
    public static let defaultStartFromEnd = 3
    /// The shortest and longest wait between readings of the playlist.
    static let shortestPoll: Duration = .milliseconds(250)
    static let longestPoll: Duration = .seconds(5)

    /// The playlist as last read, and the start of its first segment in item seconds.
    public struct Reading: Sendable, Equatable {
        public var playlist: HLSMediaPlaylist
        public var firstStart: Double

        /// Where segment `index` of the listing begins, in item seconds.
        public func start(ofIndex index: Int) -> Double {
            firstStart + playlist.durations.prefix(max(0, min(index, playlist.durations.count))).reduce(0, +)
        }

        /// The listing's dates on the item's timeline; nil when it dates no segment.
        public var programDates: HLSProgramDates? {
            HLSProgramDates(durations: playlist.durations, dates: playlist.dates, firstStart: firstStart)
        }

        /// Where the listing ends, in item seconds.
        public var end: Double { start(ofIndex: playlist.durations.count) }

        /// The span a seek may reach, in item seconds: from the first segment listed to the
        /// hold-back before the end.
        public var seekable: ClosedRange<Double> {
            let lower = max(0, firstStart)
            let upper = max(lower, end - HLSLiveWindow.holdBackTargetDurations * playlist.targetDuration)
            return lower...upper
        }

        /// The listing's index of the segment that holds item second `seconds` (the first or
        /// the last when it lies outside the listing), and where that segment begins.
        public func segment(holding seconds: Double) -> (index: Int, start: Double) {
            var start = firstStart
            for (index, duration) in playlist.durations.enumerated() {
                if seconds < start + duration || index == playlist.durations.count - 1 { return (index, start) }
                start += duration
            }
            return (0, firstStart)
        }
    }

    private let url: String
    /// The item's user agent and header fields, for its playlist's readings.
    private let fields: HTTPRequestFields?
    private let reading = Mutex<Reading?>(nil)
    private let stopRequested = Atomic<Bool>(false)
    private let wake = WakeSignal()
    private let thread = ReaderThread(name: "chorus.hls.live")
    private let interrupt: InterruptFlag

    /// Follows the media playlist at `url`, opened at item second `openedAt` (where the
    /// opened segment begins): the first segment it lists that one of `openings` fetched (the
    /// URLs the opening fetched, in order: `MediaSource.liveOpenings`), or failing that the
    /// one `startFromEnd` segments from its end.
    public init(url: String, openedAt: Double, openings: [String] = [], fields: HTTPRequestFields? = nil,
                startFromEnd: Int = HLSLiveWindow.defaultStartFromEnd) {
        self.url = url
        self.fields = fields
        interrupt = InterruptFlag()
        let opening = Opening(seconds: openedAt, fetched: openings, startFromEnd: startFromEnd)
        thread.start { [self] in run(opening: opening) }
    }

    /// Where the stream was opened: the item second its opened segment begins at, and how
    /// that segment is found in the first reading.
    struct Opening: Sendable {
        var seconds: Double
        /// The URLs the opening fetched, in order.
        var fetched: [String]
        /// Counted from the playlist's end, when none of `fetched` is listed.
        var startFromEnd: Int
    }

    deinit { stop() }

    /// The playlist as last read, placed on item time; nil until the first reading.
    public var current: Reading? { reading.withLockAnnotated { $0 } }

    /// Stops following the playlist (a read under way is cut short).
    public func stop() {
        guard !stopRequested.exchange(true, ordering: .acquiringAndReleasing) else { return }
        interrupt.set()
        wake.signal()
        thread.waitForEnd()
    }

    private var stopping: Bool { stopRequested.load(ordering: .acquiring) }

    private func run(opening: Opening) {
        var mediaURL = url
        while !stopping {
            var wait = Self.longestPoll
            var read = HLSRenditions.readPlaylistAndLocation(mediaURL, interrupt: interrupt.callback, fields: fields)
            // A master playlist: its first variant's media playlist is followed (the one
            // FFmpeg's demuxer reads first), its URI relative to where the master came from.
            if let master = read, let variant = Self.firstVariant(in: master.text, base: master.location) {
                mediaURL = variant
                read = HLSRenditions.readPlaylistAndLocation(mediaURL, interrupt: interrupt.callback, fields: fields)
            }
            if let read, let playlist = HLSMediaPlaylist(parsing: read.text) {
                let placed = reading.withLockAnnotated { reading -> Reading in
                    if let previous = reading, Self.isCutShort(playlist, after: previous.playlist) { return previous }
                    // Its segments' URIs are relative to where it came from (after a
                    // redirect, as FFmpeg resolves them).
                    let next = Self.place(playlist, readFrom: read.location, after: reading, opening: opening)
                    reading = next
                    return next
                }
                if placed.playlist.ended { return }
                wait = .nanoseconds(Int64(placed.playlist.targetDuration * 0.5e9))
            }
            wake.wait(timeout: min(max(wait, Self.shortestPoll), Self.longestPoll))
        }
    }

    /// The URI of the first variant a master playlist lists, resolved against `base`; nil
    /// for a media playlist.
    static func firstVariant(in text: String, base: String) -> String? {
        var afterStreamInfo = false
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("#EXT-X-STREAM-INF") {
                afterStreamInfo = true
            } else if afterStreamInfo, !line.isEmpty, !line.hasPrefix("#") {
                return URL(string: line, relativeTo: URL(string: base))?.absoluteString ?? line
            }
        }
        return nil
    }

    /// Whether `playlist` is a reading cut short rather than the playlist as it stands: it
    /// ends before `previous` did without starting before it (a live playlist's end never
    /// moves back; one that starts over starts before). Seen when a read was cut off, or the
    /// file was replaced while a server sent it.
    static func isCutShort(_ playlist: HLSMediaPlaylist, after previous: HLSMediaPlaylist) -> Bool {
        playlist.endSequence < previous.endSequence && playlist.firstSequence >= previous.firstSequence
    }

    /// `playlist` (read from `base`) placed on item time: by the segment it shares with
    /// `previous` (or, having lost sight of them all, by target durations for the segments
    /// not seen), or at first with the opened segment at `opening.seconds`.
    static func place(_ playlist: HLSMediaPlaylist, readFrom base: String, after previous: Reading?, opening: Opening) -> Reading {
        guard let previous else {
            let opened = playlist.firstIndex(fetchedByOneOf: opening.fetched, base: base)
                ?? max(0, playlist.durations.count - opening.startFromEnd)
            return Reading(playlist: playlist, firstStart: opening.seconds - playlist.durations.prefix(opened).reduce(0, +))
        }
        let shift = playlist.firstSequence - previous.playlist.firstSequence
        let firstStart: Double
        if shift >= 0 && shift <= previous.playlist.durations.count {
            firstStart = previous.start(ofIndex: shift)
        } else if shift > 0 {
            let unseen = shift - previous.playlist.durations.count
            firstStart = previous.end + Double(unseen) * playlist.targetDuration
        } else {
            // The playlist went back (a new encoder session): placed before what was known.
            firstStart = previous.firstStart + Double(shift) * playlist.targetDuration
        }
        return Reading(playlist: playlist, firstStart: firstStart)
    }
}

/// A flag an FFmpeg read polls, to cut a blocked read short.
package final class InterruptFlag: Sendable {
    private let flag = Atomic<Bool>(false)

    package init() {}

    package func set() { flag.store(true, ordering: .releasing) }
    package var isSet: Bool { flag.load(ordering: .acquiring) }

    /// The callback FFmpeg polls, bound to this flag (which must outlive the reads).
    var callback: AVIOInterruptCB {
        AVIOInterruptCB(callback: { opaque in
            guard let opaque else { return 0 }
            return Unmanaged<InterruptFlag>.fromOpaque(opaque).takeUnretainedValue().isSet ? 1 : 0
        }, opaque: Unmanaged.passUnretained(self).toOpaque())
    }
}
