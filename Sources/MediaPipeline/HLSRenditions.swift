internal import CFFmpeg
import Foundation
import MediaClock
import MutexAnnotations
import Synchronization

/// The subtitle renditions of an HLS master playlist (`#EXT-X-MEDIA:TYPE=SUBTITLES`), which
/// FFmpeg's HLS demuxer leaves out ("Can't support the subtitle"): read from the playlist's
/// text here, offered as subtitle tracks of the item, and each read by a
/// `RenditionSubtitleReader` of its own.
///
/// A rendition's track has a stream index of its own from `firstStreamIndex` on, past any
/// index FFmpeg gives, in the playlist's order: every reader of the same playlist numbers
/// them alike, so a group's leader can name one to its followers.
enum HLSRenditions {
    /// The stream index of a playlist's first subtitle rendition.
    static let firstStreamIndex = 1_000
    /// The most of a master playlist read, in bytes: a master playlist lists renditions and
    /// variants, a few kilobytes; more is not a master playlist.
    static let largestPlaylist = 1 << 20

    /// Whether FFmpeg opened `context` from a master playlist: its HLS demuxer tags every
    /// stream of a variant with the variant's bandwidth, which a master playlist must give
    /// and a media playlist cannot. Only then is the playlist fetched a second time.
    static func isMasterPlaylist(_ context: UnsafeMutablePointer<AVFormatContext>) -> Bool {
        for index in 0..<Int(context.pointee.nb_streams) {
            guard let stream = context.pointee.streams[index],
                  let entry = av_dict_get(stream.pointee.metadata, "variant_bitrate", nil, 0),
                  let value = entry.pointee.value else { continue }
            if let bandwidth = Int(String(cString: value)), bandwidth > 0 { return true }
        }
        return false
    }

    /// The subtitle renditions of the master playlist at `target` (as `MediaSource` opens
    /// it), as tracks; none when it lists none or cannot be read again.
    static func subtitleTracks(of target: String, interrupt: AVIOInterruptCB, fields: HTTPRequestFields? = nil) -> [TrackInfo] {
        guard let text = readPlaylist(target, interrupt: interrupt, fields: fields) else { return [] }
        return parse(text, base: URL(string: target) ?? URL(fileURLWithPath: target))
    }

    /// The tracks `text` (a master playlist found at `base`) lists as subtitle renditions.
    static func parse(_ text: String, base: URL) -> [TrackInfo] {
        var tracks: [TrackInfo] = []
        for line in text.split(whereSeparator: \.isNewline) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("#EXT-X-MEDIA:") else { continue }
            let attributes = Self.attributes(of: trimmed.dropFirst("#EXT-X-MEDIA:".count))
            guard attributes["TYPE"] == "SUBTITLES", let uri = attributes["URI"], !uri.isEmpty,
                  let resolved = URL(string: uri, relativeTo: base)?.absoluteURL else { continue }
            let index = firstStreamIndex + tracks.count
            var track = TrackInfo(trackID: Int32(index + 1), streamIndex: index, kind: .subtitle, codec: "webvtt",
                                  timeRange: .invalid, sampleRate: nil, channels: nil, channelLayout: nil, width: nil, height: nil,
                                  frameRate: nil, bitRate: nil, rotationDegrees: 0, sampleAspectRatio: nil, pixelFormat: nil,
                                  isAttachedPicture: false, language: attributes["LANGUAGE"])
            track.title = attributes["NAME"]
            var roles: TrackRoles = []
            if attributes["DEFAULT"] == "YES" { roles.insert(.default) }
            if attributes["FORCED"] == "YES" { roles.insert(.forced) }
            if let characteristics = attributes["CHARACTERISTICS"],
               characteristics.contains("public.accessibility.describes-music-and-sound") {
                roles.insert(.hearingImpaired)
            }
            track.roles = roles
            track.renditionURL = resolved.isFileURL ? resolved.path : resolved.absoluteString
            tracks.append(track)
        }
        return tracks
    }

    /// The attributes of a tag's list (`NAME="English",DEFAULT=YES,...`), quoted values
    /// unquoted (a comma inside quotes is part of the value).
    static func attributes(of list: Substring) -> [String: String] {
        var result: [String: String] = [:]
        var name = ""
        var value = ""
        var inName = true
        var quoted = false
        func finish() {
            let key = name.trimmingCharacters(in: .whitespaces)
            if !key.isEmpty { result[key] = value }
            name = ""
            value = ""
            inName = true
        }
        for character in list {
            if inName {
                if character == "=" { inName = false } else if character == "," { finish() } else { name.append(character) }
            } else if character == "\"" {
                quoted.toggle()
            } else if character == "," && !quoted {
                finish()
            } else {
                value.append(character)
            }
        }
        finish()
        return result
    }

    /// The text at `target` when it is small enough for a master playlist and says it is one
    /// (variants listed); nil otherwise.
    private static func readPlaylist(_ target: String, interrupt: AVIOInterruptCB, fields: HTTPRequestFields?) -> String? {
        readText(target, interrupt: interrupt, fields: fields).flatMap { $0.text.contains("#EXT-X-STREAM-INF") ? $0.text : nil }
    }

    /// The text at `target` when it is small enough for a playlist (a live media playlist
    /// read again as it moves); nil otherwise. Over TLS the server's certificate is checked
    /// against the system's authorities or those in the PEM file `authorities` (by default
    /// `CHORUS_CA_FILE`'s), as every fetch of an item is.
    static func readMediaPlaylist(_ target: String, interrupt: AVIOInterruptCB, fields: HTTPRequestFields? = nil,
                                  authorities: String? = MediaSource.certificateAuthorities) -> String? {
        readText(target, interrupt: interrupt, fields: fields, authorities: authorities)?.text
    }

    /// As `readMediaPlaylist`, with the URL the text came from (after any redirect): what
    /// the URIs in it are relative to.
    static func readPlaylistAndLocation(_ target: String, interrupt: AVIOInterruptCB,
                                        fields: HTTPRequestFields? = nil) -> (text: String, location: String)? {
        readText(target, interrupt: interrupt, fields: fields)
    }

    /// The media playlist a player of `target` reads first: `target`'s own text, or for a
    /// master playlist its first variant's (resolved against where the master came from,
    /// after any redirect); nil when either cannot be read.
    static func readFirstMediaPlaylist(_ target: String, interrupt: AVIOInterruptCB, fields: HTTPRequestFields? = nil) -> String? {
        guard let (text, location) = readPlaylistAndLocation(target, interrupt: interrupt, fields: fields) else { return nil }
        guard let variant = HLSLiveWindow.firstVariant(in: text, base: location) else { return text }
        return readMediaPlaylist(variant, interrupt: interrupt, fields: fields)
    }

    /// The text at `target`, read whole, when it is no larger than `largestPlaylist`, and
    /// where it came from (`target`, or where a server redirected its request).
    private static func readText(_ target: String, interrupt: AVIOInterruptCB, fields: HTTPRequestFields?,
                                 authorities: String? = MediaSource.certificateAuthorities) -> (text: String, location: String)? {
        var callback = interrupt
        var context: UnsafeMutablePointer<AVIOContext>?
        var options: OpaquePointer?
        av_dict_set(&options, "rw_timeout", String(Int64(MediaSource.readTimeout.components.seconds) * 1_000_000), 0)
        // Opened here, not by a demuxer, so not through a context's fetch policy: the same
        // certificate checks are given directly.
        MediaSource.addCertificateChecks(to: &options, authorities: authorities)
        // The item's own user agent and header fields, as its other fetches carry.
        fields?.add(to: &options)
        let status = avio_open2(&context, target, AVIO_FLAG_READ, &callback, &options)
        av_dict_free(&options)
        guard status >= 0, let context else { return nil }
        defer { var closing: UnsafeMutablePointer<AVIOContext>? = context; avio_closep(&closing) }
        var bytes = [UInt8](repeating: 0, count: largestPlaylist)
        var filled = 0
        while filled < largestPlaylist {
            let read = bytes.withUnsafeMutableBufferPointer { buffer in
                avio_read(context, buffer.baseAddress! + filled, Int32(largestPlaylist - filled))
            }
            if read <= 0 { break }
            filled += Int(read)
        }
        guard filled < largestPlaylist else { return nil }
        var value: UnsafeMutablePointer<UInt8>? = nil
        var location = target
        if av_opt_get(context, "location", AV_OPT_SEARCH_CHILDREN, &value) >= 0, let value {
            location = String(cString: value)
            av_free(value)
        }
        return (String(decoding: bytes[0..<filled], as: UTF8.self), location.isEmpty ? target : location)
    }
}

/// Reads one HLS subtitle rendition (a media playlist of WebVTT segments) from its start,
/// into an item's `SubtitleCues` under the rendition's stream index, on a thread of its own,
/// once the item asks for it (`SubtitleCues.ask(for:)`): a master playlist may offer a dozen
/// languages, and only those chosen are fetched. A live rendition is followed as FFmpeg
/// refreshes its playlist, until stopped.
///
/// Cue times are taken as item times: segmenters write WebVTT whose local time 0 is the
/// presentation's start (the `X-TIMESTAMP-MAP` that ties it to the first MPEG-TS timestamp,
/// 126000 at 90 kHz, the same instant the item's time 0 stands for).
final class RenditionSubtitleReader: Sendable {
    /// The segment types FFmpeg's HLS demuxer is allowed to open for a rendition: its
    /// default list leaves WebVTT out, and nothing else is wanted from a subtitle playlist.
    static let allowedExtensions = "vtt,webvtt"
    /// How long to wait before reading again when the input has nothing yet, in µs.
    static let retryMicroseconds: UInt32 = 20_000
    /// How often a rendition not asked for looks again, in µs: a choice starts its reading
    /// within this (its first lines then come as soon as its playlist and first segment are
    /// fetched), and a thread that sleeps between looks costs nothing.
    static let askPollMicroseconds: UInt32 = 50_000

    let url: String
    let streamIndex: Int
    private let cues: SubtitleCues
    private let stopRequested = Atomic<Bool>(false)
    private let opened = Mutex<MediaSource?>(nil)
    private let thread = ReaderThread(name: "chorus.subtitles.rendition")

    init(url: String, streamIndex: Int, cues: SubtitleCues) {
        self.url = url
        self.streamIndex = streamIndex
        self.cues = cues
    }

    func start() {
        thread.start { [self] in run() }
    }

    /// Stops the thread and waits for it (bounded by FFmpeg's interrupt).
    func stop() {
        stopRequested.store(true, ordering: .releasing)
        opened.withLockAnnotated { $0 }?.interrupt()
        thread.waitForEnd()
    }

    private var stopping: Bool { stopRequested.load(ordering: .acquiring) }

    private func run() {
        while !stopping && !cues.isAsked(streamIndex) { usleep(Self.askPollMicroseconds) }
        if stopping { return }
        let source: MediaSource
        do throws(MediaError) {
            source = try MediaSource(url: url, allowedSegmentExtensions: Self.allowedExtensions)
        } catch {
            cues.noteFailure(error, stream: streamIndex)
            return
        }
        opened.withLockAnnotated { $0 = source }
        if stopping { source.interrupt() }
        let context = source.formatContext
        guard let track = source.info.tracks.first(where: { $0.kind == .subtitle }),
              let stream = context.pointee.streams[track.streamIndex],
              let decoder = SubtitleDecoder(stream: stream, index: streamIndex, itemStart: .zero) else {
            cues.noteFailure(.unsupportedFormat(url: url, reason: "no text subtitles in the rendition"), stream: streamIndex)
            return
        }
        guard let packet = av_packet_alloc() else { return }
        defer { var freed: UnsafeMutablePointer<AVPacket>? = packet; av_packet_free(&freed) }
        while !stopping {
            let status = av_read_frame(context, packet)
            if status == FFmpegCall.again {
                usleep(Self.retryMicroseconds)
                continue
            }
            if status < 0 {
                if status != FFmpegCall.eof && !stopping {
                    cues.noteFailure(.networkFailure(url: url, reason: FFmpegCall.message(status)), stream: streamIndex)
                }
                break
            }
            if packet.pointee.stream_index == Int32(track.streamIndex) { decoder.decode(packet, into: cues) }
            av_packet_unref(packet)
        }
    }
}
