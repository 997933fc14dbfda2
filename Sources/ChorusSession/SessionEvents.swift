import AVPlayback
import Foundation
import Logging
import MutexAnnotations
import Synchronization

/// What a session is told to do: by keys, a script's commands, a JSON API or a remote.
/// Every session takes every command; one that means nothing to it (a follower asked to
/// seek: the leader decides the group's position) is answered with a warning event.
public enum SessionCommand: Sendable, Equatable {
    /// Play (resume) at the chosen speed.
    case play
    /// Pause where the sound is.
    case pause
    /// Pause if playing, play if paused.
    case togglePause
    /// Move to an item time, keeping the play state.
    case seek(to: CMTime)
    /// Move by an interval from where the sound is now (negative: back).
    case skip(by: CMTime)
    /// Play at this speed from now on, and after a pause, and for the items after.
    case rate(Float)
    /// The next item; on the last item, nothing.
    case next
    /// The previous item, or the start of this one when it has played for a while.
    case previous
    /// While paused, move by this many pictures (back when negative), showing the one
    /// landed on; nothing while playing or for an item without pictures.
    case step(by: Int)
    /// The output's linear volume, from 0 to 1.
    case volume(Float)
    /// The current item's next sound track (another language, a commentary), round to the
    /// first; for a leader, every room's.
    case cycleAudio
    /// The current item's next subtitles, then none, round to the first.
    case cycleSubtitles
    /// End the session (a leader says Goodbye first, so every room fades out).
    case stop
}

/// Where playback stands, as a status line shows it.
public enum SessionPlaybackState: String, Sendable, Equatable {
    case playing, paused, waiting, stopped
}

/// A follower's clock and output figures.
public struct ClockStatistics: Sendable, Equatable {
    /// The leader's clock minus this node's, and its one-sigma uncertainty; nil before the
    /// first estimate.
    public var offset: Duration?
    public var offsetUncertainty: Duration?
    /// The leader's clock rate against this node's (ppm), with its uncertainty.
    public var ratePPM: Double?
    public var rateUncertaintyPPM: Double?
    /// The fastest recent round trip.
    public var roundTrip: Duration?
    /// How far the output is from the group's timeline (positive: late), and the soft
    /// correction (ppm).
    public var outputError: Duration
    public var correctionPPM: Double
    /// Restarts on the timeline since the last start, and device underruns.
    public var hardResyncs: Int
    public var underruns: Int
    /// Streams the output gave up because they stopped taking frames, each replaced by a
    /// fresh one (through a sound server's plugin: a stream the server no longer serves).
    /// Counted apart from underruns; content is placed afresh after each all the same.
    public var streamRestarts: Int = 0
    /// The follower's phase (joining, following, holdover, waiting).
    public var phase: String
    /// Datagrams dropped, and by reason.
    public var droppedDatagrams: Int
    public var dropBreakdown: String

    /// One line, as `chorus follow --stats` prints it.
    public var line: String {
        func seconds(_ duration: Duration) -> Double {
            Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        }
        let offset = self.offset.map { String(format: "%+.6f s", seconds($0)) } ?? "-"
        let uncertainty = offsetUncertainty.map { String(format: "±%.1f µs", seconds($0) * 1e6) } ?? ""
        let rate = ratePPM.map { String(format: "%+.2f ppm ±%.2f", $0, rateUncertaintyPPM ?? 0) } ?? "-"
        let rtt = roundTrip.map { String(format: "%.3f ms", seconds($0) * 1e3) } ?? "-"
        let drops = droppedDatagrams == 0 ? "0" : "\(droppedDatagrams) (\(dropBreakdown))"
        let figures = String(format: "error %+.1f µs correction %+.1f ppm", seconds(outputError) * 1e6, correctionPPM)
        return "offset \(offset) \(uncertainty) rate \(rate) rtt \(rtt) \(figures) resyncs \(hardResyncs) underruns \(underruns) restarts \(streamRestarts) phase \(phase) drops \(drops)"
    }
}

/// What a session reports.
public enum SessionEvent: Sendable {
    /// Playing, paused, waiting, stopped.
    case state(SessionPlaybackState)
    /// Where the sound is in the item, its duration (indefinite for a live stream), and the
    /// speed chosen; a few times a second while a position interval is set.
    case position(CMTime, duration: CMTime, rate: Float)
    /// An item began: its place in the list, the list's length, and where it is.
    case item(index: Int, count: Int, url: URL)
    /// What the item says plays now, as it changes: a station's current title, a stream's
    /// ID3 title (with its performer when given, "Performer - Title"); nil when it stops
    /// saying (another item).
    case title(String?)
    /// A follower's clock and output figures.
    case clock(ClockStatistics)
    /// Something a person should know, with its severity: an item that cannot play, a
    /// leader gone quiet, datagrams dropped.
    case message(Logger.Level, String)
    /// The session ended; `succeeded` is false when any item failed.
    case finished(succeeded: Bool)
}

/// Reports the title `player`'s current item says is playing (`SessionEvent.title`) into
/// `channel` whenever it changes; the session keeps the returned observation while it runs.
func watchTitles(of player: AVPlayer, into channel: EventChannel) -> NSKeyValueObservation {
    let last = Mutex<String?>(nil)
    return player.observe(\.currentItem?.timedMetadata, options: [.new]) { _, change in
        let items = (change.newValue ?? nil) ?? []
        let title = nowPlaying(in: items)
        let changed = last.withLockAnnotated { seen -> Bool in
            defer { seen = title }
            return seen != title
        }
        if changed { channel.yield(.title(title)) }
    }
}

/// The title `items` (timed metadata in effect) say is playing: the performer and title
/// joined as a station writes them, when both are there; nil when neither is.
func nowPlaying(in items: [AVMetadataItem]) -> String? {
    let title = items.first { $0.commonKey == .commonKeyTitle }?.stringValue
    let artist = items.first { $0.commonKey == .commonKeyArtist }?.stringValue
    switch (artist, title) {
    case let (artist?, title?) where !artist.isEmpty && !title.isEmpty: return "\(artist) - \(title)"
    case let (_, title?) where !title.isEmpty: return title
    case let (artist?, _) where !artist.isEmpty: return artist
    default: return nil
    }
}

/// A session's event stream: yielded from any thread, read by one consumer. Events before
/// the consumer reads are kept (up to `bufferedEvents`); a slow consumer loses the oldest.
final class EventChannel: Sendable {
    /// How many unread events are kept: many seconds of positions and statistics.
    static let bufferedEvents = 1024

    let stream: AsyncStream<SessionEvent>
    private let continuation: AsyncStream<SessionEvent>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: SessionEvent.self, bufferingPolicy: .bufferingNewest(Self.bufferedEvents))
    }

    func yield(_ event: SessionEvent) { continuation.yield(event) }

    func message(_ level: Logger.Level, _ text: String) { continuation.yield(.message(level, text)) }

    func finish() { continuation.finish() }
}
