import Foundation
import MediaClock
import MutexAnnotations
import Synchronization
internal import CFFmpeg

/// A live stream that carries no time its listeners could share, passed on as a live HLS
/// stream of its own, which does.
///
/// An Icecast or SHOUTcast station over plain HTTP starts each listener where the station
/// stands when it connects, and the listener's demuxer counts time from there: two rooms
/// that connect a second apart hear the station a second apart, and nothing in what they
/// read says so. A group's leader reads such a stream once, through a relay, which copies
/// its packets unchanged (no decoding, no encoding) into one-second segments of a live
/// HLS playlist in a folder of its own. The leader plays the playlist and serves the
/// folder, and each follower plays the same playlist from it: the same packets with the
/// same timestamps in every room, which a live HLS item keeps as its item time, so the rooms
/// align as on any other item.
///
/// A connection to the station that drops, or that the station closes, is made again
/// within FFmpeg's reconnection limit (`MediaSource.reconnectLimit`), and the relay goes on
/// from where the station then stands: the rooms hear a jump, not an end.
/// The relay reads until the station is gone or fails, or until `stop()`; then it closes the
/// playlist (`EXT-X-ENDLIST`), so every player reaches its end after the last segment
/// instead of waiting for more. Its own thread does the reading; nothing here is on a
/// real-time path.
///
/// A station's titles (its ICY `StreamTitle`) go into the relayed stream as ID3 tags on a
/// timed metadata track, at the point of the sound they came with, and again each segment:
/// every room reads the same titles at the same item times, as any HLS stream's timed
/// metadata. Only MPEG-TS segments carry the track; a station relayed in fragmented MP4
/// (Vorbis, FLAC) has its sound relayed without titles.
public final class LiveRelay: Sendable {
    /// Each segment's length, in seconds (FFmpeg's `hls_time`): one second, so that a player
    /// opening the playlist starts about three seconds behind the station and a segment is
    /// out a second after its first packet came, while a segment of 128 kbit/s sound (16 kB)
    /// still far outweighs its request.
    public static let segmentSeconds = 1
    /// Segments the playlist lists (`hls_list_size`): the last thirty seconds, which a room
    /// may seek or join within.
    public static let listedSegments = 30
    /// Segments kept on disk after they leave the list (`hls_delete_threshold`), for a
    /// player still reading one it found there a moment before.
    static let keptSegments = 5
    /// How much must be relayed before the playlist is played, in seconds: the segments a
    /// player starts behind the end (FFmpeg's live start, `HLSLiveWindow.defaultStartFromEnd`)
    /// and the one being written, so that a player's first reading already holds all it starts with.
    public static let readySeconds = Double((HLSLiveWindow.defaultStartFromEnd + 1) * segmentSeconds)
    /// Codecs an MPEG transport stream carries, which the relay's segments are by default;
    /// anything else goes in fragmented MP4 segments.
    static let transportStreamCodecs: Set<String> = ["mp3", "mp2", "aac", "ac3", "eac3", "opus", "h264", "hevc", "mpeg2video"]
    /// How often the station's current title is written into the relayed stream, in seconds
    /// of it: once a segment, so that a room that joins late, or a player that opens the
    /// playlist anew, reads it from its first segment instead of waiting for the next song.
    static let titleRepeatSeconds = Double(segmentSeconds)
    /// The muxer's interleaving limit, in microseconds: the least there is, as the relay
    /// writes in time order already (see `Muxer`).
    static let interleaveDelta: Int64 = 1

    /// The playlist, a file in the relay's folder.
    public let playlist: URL
    /// The folder the playlist and its segments are written to, removed by `stop()`.
    public let folder: URL
    /// The station relayed.
    public let url: String

    private let source: MediaSource
    private let thread = ReaderThread(name: "chorus.relay")
    private let ready = WakeSignal()
    private let shared = Shared()

    /// What the relay's thread and its callers share (a lock cannot be captured by itself).
    private final class Shared: Sendable {
        let progress = Mutex(Progress())
    }

    private struct Progress {
        /// Seconds relayed so far.
        var seconds = 0.0
        /// Set when the relay has stopped reading: the station ended, failed, or `stop()`.
        var ended = false
        /// Why the relay stopped, when it was not asked to.
        var failure: MediaError?
        var stopping = false
        var removed = false
    }

    /// Whether `info` is a stream a group must relay: read over the network, not HLS (whose
    /// stream times every client shares), and without a duration (no file, but a stream that
    /// goes on).
    public static func needsRelay(_ info: MediaInfo, url: String) -> Bool {
        let scheme = URL(string: url)?.scheme?.lowercased()
        return (scheme == "http" || scheme == "https") && info.formatName != "hls" && !info.duration.isNumeric
            && (info.preferredAudioTrack != nil || info.preferredVideoTrack != nil)
    }

    /// Opens `url` and, when it is a stream a group must relay (`needsRelay`), starts relaying
    /// it into a new folder inside `directory`; nil when it is not (a file, an HLS playlist),
    /// or it cannot be opened (the item's own opening then says why).
    public static func start(url: String, in directory: URL) -> LiveRelay? {
        guard let source = try? MediaSource(url: url), needsRelay(source.info, url: url) else { return nil }
        source.reconnectWhenDroppedOrEnded()
        return try? LiveRelay(source: source, in: directory)
    }

    /// Starts relaying the opened `source` into a new folder inside `directory`.
    public init(source: MediaSource, in directory: URL) throws(MediaError) {
        self.source = source
        url = source.url
        folder = directory.appendingPathComponent("relay-\(UUID().uuidString)", isDirectory: true)
        playlist = folder.appendingPathComponent("live.m3u8")
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw .outputFailure(device: folder.path, reason: "cannot make the relay's folder: \(error.localizedDescription)")
        }
        let muxer: Muxer
        do throws(MediaError) {
            muxer = try Muxer(source: source, playlist: playlist, folder: folder)
        } catch {
            try? FileManager.default.removeItem(at: folder)
            throw error
        }
        let shared = self.shared
        let ready = self.ready
        thread.start { [source] in
            let failure = muxer.run(source: source) { seconds in
                shared.progress.withLockAnnotated { $0.seconds = seconds }
                if seconds >= Self.readySeconds { ready.signal() }
            }
            shared.progress.withLockAnnotated { progress in
                progress.ended = true
                if !progress.stopping { progress.failure = failure ?? .networkFailure(url: source.url, reason: "the stream ended") }
            }
            ready.signal()
        }
    }

    deinit { stop() }

    /// Waits until `readySeconds` have been relayed, the relay has stopped, or `timeout` has
    /// passed. Returns whether the playlist holds what a player starts with.
    public func waitUntilReady(timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            let (seconds, ended) = shared.progress.withLockAnnotated { ($0.seconds, $0.ended) }
            if seconds >= Self.readySeconds { return true }
            if ended { return false }
            let left = deadline - ContinuousClock.now
            if left <= .zero { return false }
            ready.wait(timeout: left)
        }
    }

    /// Seconds of the stream relayed so far.
    public var secondsRelayed: Double { shared.progress.withLockAnnotated { $0.seconds } }

    /// Why the relay stopped by itself (the station ended or failed); nil while it reads, and
    /// after `stop()`.
    public var failure: MediaError? { shared.progress.withLockAnnotated { $0.failure } }

    /// Stops reading, closes the playlist, waits for the relay's thread and removes its
    /// folder. Safe to call more than once, from any thread but the relay's.
    public func stop() {
        let first = shared.progress.withLockAnnotated { progress -> Bool in
            defer { progress.stopping = true; progress.removed = true }
            return !progress.removed
        }
        guard first else { return }
        source.interrupt()
        thread.waitForEnd()
        try? FileManager.default.removeItem(at: folder)
    }
}

/// The HLS muxer the relay writes through, with the stream it copies. Used by the relay's
/// thread alone once made.
// Not Sendable by nature (FFmpeg contexts); @unchecked because it is made on the caller's
// thread and then handed whole to the relay's thread, which alone uses it from then on.
private final class Muxer: @unchecked Sendable {
    private let output: UnsafeMutablePointer<AVFormatContext>
    /// Input stream index → output stream index, for the streams relayed.
    private let mapping: [Int32: Int32]
    private let inputTimeBases: [Int32: AVRational]
    private let url: String
    /// The output's timed metadata track (ID3), in MPEG-TS segments; nil in MP4 ones.
    private let titleStream: Int32?
    /// The input's sound stream, whose times set the shift across a jump.
    private let soundStream: Int32?
    /// Nanoseconds, as FFmpeg's rational time base.
    private static let nanosecondBase = AVRational(num: 1, den: 1_000_000_000)

    init(source: MediaSource, playlist: URL, folder: URL) throws(MediaError) {
        url = source.url
        let relayed = [source.info.preferredAudioTrack, source.info.preferredVideoTrack].compactMap { $0 }
        let transportStream = relayed.allSatisfy { LiveRelay.transportStreamCodecs.contains($0.codec) }
        var made: UnsafeMutablePointer<AVFormatContext>?
        guard avformat_alloc_output_context2(&made, nil, "hls", playlist.path) >= 0, let output = made else {
            throw .outputFailure(device: playlist.path, reason: "FFmpeg has no HLS muxer")
        }
        // Vorbis (a station in Ogg) goes into MP4 only as FFmpeg's experimental mapping.
        output.pointee.strict_std_compliance = FF_COMPLIANCE_EXPERIMENTAL
        var mapping: [Int32: Int32] = [:]
        var timeBases: [Int32: AVRational] = [:]
        let input = source.formatContext
        for track in relayed {
            guard track.streamIndex >= 0, track.streamIndex < Int(input.pointee.nb_streams),
                  let inStream = input.pointee.streams[track.streamIndex],
                  let outStream = avformat_new_stream(output, nil),
                  avcodec_parameters_copy(outStream.pointee.codecpar, inStream.pointee.codecpar) >= 0 else {
                avformat_free_context(output)
                throw .outputFailure(device: playlist.path, reason: "cannot relay the stream's \(track.codec)")
            }
            outStream.pointee.codecpar.pointee.codec_tag = 0
            outStream.pointee.time_base = inStream.pointee.time_base
            mapping[Int32(track.streamIndex)] = outStream.pointee.index
            timeBases[Int32(track.streamIndex)] = inStream.pointee.time_base
        }
        var titleStream: Int32?
        if transportStream, source.mayCarryICY, let stream = avformat_new_stream(output, nil) {
            stream.pointee.codecpar.pointee.codec_type = AVMEDIA_TYPE_DATA
            stream.pointee.codecpar.pointee.codec_id = AV_CODEC_ID_TIMED_ID3
            stream.pointee.time_base = AVRational(num: 1, den: 90_000)
            titleStream = stream.pointee.index
        }
        self.titleStream = titleStream
        soundStream = source.info.preferredAudioTrack.map { Int32($0.streamIndex) }
        // Packets are written in the station's order, the titles among them by time. The
        // muxer's interleaving would otherwise hold the sound back until the title track has
        // a packet too: for ever at a station that sends no titles (up to its 10 s limit),
        // and a second between two titles.
        output.pointee.max_interleave_delta = LiveRelay.interleaveDelta
        var options: OpaquePointer?
        av_dict_set(&options, "hls_time", String(LiveRelay.segmentSeconds), 0)
        av_dict_set(&options, "hls_list_size", String(LiveRelay.listedSegments), 0)
        av_dict_set(&options, "hls_delete_threshold", String(LiveRelay.keptSegments), 0)
        // A segment is written under a temporary name and renamed when whole, so a follower
        // never fetches half of one; old ones are removed as the window moves on.
        av_dict_set(&options, "hls_flags", "delete_segments+temp_file", 0)
        av_dict_set(&options, "hls_segment_type", transportStream ? "mpegts" : "fmp4", 0)
        let segmentName = transportStream ? "segment%d.ts" : "segment%d.m4s"
        av_dict_set(&options, "hls_segment_filename", folder.appendingPathComponent(segmentName).path, 0)
        let status = avformat_write_header(output, &options)
        av_dict_free(&options)
        guard status >= 0 else {
            avformat_free_context(output)
            throw .outputFailure(device: playlist.path, reason: "cannot start the relay's playlist (\(FFmpegCall.message(status)))")
        }
        self.output = output
        self.mapping = mapping
        inputTimeBases = timeBases
    }

    deinit { avformat_free_context(output) }

    /// Copies packets until the input ends, fails or is interrupted, reporting the seconds
    /// relayed after each; then closes the playlist. Returns why reading stopped (nil when
    /// it was interrupted).
    func run(source: MediaSource, relayed: (Double) -> Void) -> MediaError? {
        guard let packet = av_packet_alloc() else {
            av_write_trailer(output)
            return .outputFailure(device: url, reason: "out of memory")
        }
        defer { var freed: UnsafeMutablePointer<AVPacket>? = packet; av_packet_free(&freed) }
        var state = RelayState(soundStream: soundStream)
        var failure: MediaError?
        while failure == nil {
            let status = av_read_frame(source.formatContext, packet)
            if status < 0 {
                // The end of the stream, or an interruption (`stop()`), is no failure of its own.
                if status != chorus_averror_exit() && status != chorus_averror_eof() {
                    failure = .networkFailure(url: url, reason: FFmpegCall.message(status))
                }
                // Pictures still held at the end keep their guess.
                state.continuity.acceptGuess()
                failure = releaseHeld(&state, source: source, relayed: relayed) ?? failure
                break
            }
            defer { av_packet_unref(packet) }
            let index = packet.pointee.stream_index
            guard let inBase = inputTimeBases[index] else { continue }
            // A jump in the station's times (a chained Ogg stream's next song, a server's
            // restart, a reconnection) is closed up, so the relayed time runs on without a
            // hole or a step back, and a picture keeps its place beside its sound.
            let noTime = FFmpegCall.noPTS
            let stamp = packet.pointee.dts != noTime ? packet.pointee.dts : packet.pointee.pts
            var shift: Int64 = 0
            if stamp != noTime {
                let duration = packet.pointee.duration > 0 ? av_rescale_q(packet.pointee.duration, inBase, Self.nanosecondBase) : 0
                shift = state.continuity.shift(stream: index, at: av_rescale_q(stamp, inBase, Self.nanosecondBase), duration: duration)
            }
            // A picture that met a jump before the sound did waits until the sound sets the
            // shift (its own times are written, shifted as its stream is then).
            if index != soundStream, state.held.hold(packet, stream: index, shift: shift, continuity: &state.continuity) { continue }
            if let failed = releaseHeld(&state, source: source, relayed: relayed) { failure = failed; break }
            failure = write(packet, state: &state, source: source, relayed: relayed)
        }
        av_write_trailer(output)
        return failure
    }

    /// What `run` keeps from packet to packet.
    private struct RelayState {
        /// The jumps of the station's times, closed up (`TimestampContinuity`).
        var continuity: TimestampContinuity
        /// Pictures held back while their shift is a guess.
        var held = PicturesAwaitingShift()
        /// Per input stream: the last decoding time written, in its own time base.
        var written: [Int32: Int64] = [:]
        /// The relayed time of the first packet written, in seconds.
        var first: Double?
        var titles = TitleWriter()

        init(soundStream: Int32?) { continuity = TimestampContinuity(leadingStream: soundStream) }
    }

    /// Writes the held pictures, once their stream's shift is no longer a guess.
    private func releaseHeld(_ state: inout RelayState, source: MediaSource,
                             relayed: (Double) -> Void) -> MediaError? {
        guard let pictures = state.held.stream else { return nil }
        for (packet, _) in state.held.release(stream: pictures, continuity: state.continuity) {
            if let failure = write(packet.pointer, state: &state, source: source, relayed: relayed) { return failure }
        }
        return nil
    }

    /// Writes `packet` (with the station's own times) to its output stream, shifted by the
    /// shift its stream takes now, and the station's title before it when one is due.
    private func write(_ packet: UnsafeMutablePointer<AVPacket>, state: inout RelayState, source: MediaSource,
                       relayed: (Double) -> Void) -> MediaError? {
        let index = packet.pointee.stream_index
        guard let outIndex = mapping[index], let inBase = inputTimeBases[index],
              let outStream = output.pointee.streams[Int(outIndex)] else { return nil }
        let noTime = FFmpegCall.noPTS
        let last = state.written[index]
        let stamp = packet.pointee.dts != noTime ? packet.pointee.dts : packet.pointee.pts
        var dts: Int64
        var pts: Int64
        if stamp != noTime {
            let shift = av_rescale_q(state.continuity.shift(of: index), Self.nanosecondBase, inBase)
            dts = stamp &+ shift
            pts = packet.pointee.pts != noTime ? packet.pointee.pts &+ shift : dts
        } else {
            // A packet without times follows the last one written.
            dts = (last ?? 0) &+ 1
            pts = dts
        }
        // The muxer refuses a step back in a stream's decoding times, which a forged stream,
        // or a guess let stand and then corrected, can make: such a packet follows the last
        // one written instead.
        if let last, dts <= last {
            pts = max(pts, last &+ 1)
            dts = last &+ 1
        }
        state.written[index] = dts
        packet.pointee.dts = dts
        packet.pointee.pts = max(pts, dts)
        let seconds = Double(dts) * Double(inBase.num) / Double(max(inBase.den, 1))
        packet.pointee.stream_index = outIndex
        packet.pointee.pos = -1
        if let titleStream, let tag = state.titles.tag(source: source, at: seconds) {
            let time = av_rescale_q(dts, inBase, AVRational(num: 1, den: 90_000))
            let written = writeTag(tag, stream: titleStream, at: time)
            if written < 0 {
                return .outputFailure(device: url, reason: "cannot write the relay's titles (\(FFmpegCall.message(written)))")
            }
        }
        av_packet_rescale_ts(packet, inBase, outStream.pointee.time_base)
        let written = av_interleaved_write_frame(output, packet)
        if written < 0 {
            return .outputFailure(device: url, reason: "cannot write the relay's segment (\(FFmpegCall.message(written)))")
        }
        if state.first == nil { state.first = seconds }
        relayed(seconds - (state.first ?? seconds))
        return nil
    }

    /// Writes `tag` on the timed metadata track at `time` (90 kHz).
    private func writeTag(_ tag: [UInt8], stream: Int32, at time: Int64) -> Int32 {
        guard let packet = av_packet_alloc() else { return FFmpegCall.outOfMemory }
        defer { var freed: UnsafeMutablePointer<AVPacket>? = packet; av_packet_free(&freed) }
        let status = av_new_packet(packet, Int32(tag.count))
        guard status >= 0, let data = packet.pointee.data else { return status < 0 ? status : FFmpegCall.outOfMemory }
        tag.withUnsafeBufferPointer { bytes in
            if let base = bytes.baseAddress { data.update(from: base, count: tag.count) }
        }
        packet.pointee.stream_index = stream
        packet.pointee.pts = time
        packet.pointee.dts = time
        packet.pointee.flags |= AV_PKT_FLAG_KEY
        return av_interleaved_write_frame(output, packet)
    }

    /// When to write the station's title into the relayed stream: as it changes, and once
    /// each `titleRepeatSeconds` of the stream.
    struct TitleWriter {
        private var title: String?
        private var icy = ICYWatcher()
        private var writtenAt: Double?

        /// The tag to write before the packet at `seconds` of the relayed stream, if one is due.
        mutating func tag(source: MediaSource, at seconds: Double) -> [UInt8]? {
            var changed = false
            if let fields = icy.newFields(of: source) {
                if let streamTitle = fields.first(where: { $0.key == "StreamTitle" })?.value, streamTitle != title {
                    title = streamTitle
                    changed = true
                }
            }
            guard let title else { return nil }
            guard changed || writtenAt.map({ seconds - $0 >= LiveRelay.titleRepeatSeconds || seconds < $0 }) ?? true else { return nil }
            writtenAt = seconds
            return TimedMetadataFormat.id3Tag(title: title)
        }
    }
}
