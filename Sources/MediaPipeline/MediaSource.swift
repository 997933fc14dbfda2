import Foundation
import MediaClock
import Synchronization
import MutexAnnotations
internal import CFFmpeg

/// An opened input: FFmpeg's demuxer for one file or URL.
///
/// Not thread-safe: one thread uses a source at a time (the asset loader while probing, then
/// the reader thread while playing). `interrupt()` alone may be called from any thread; it
/// makes a blocked read return promptly so that a player never hangs on a dead server.
// @unchecked: the FFmpeg context is used by one thread at a time, handed over whole (the
// asset loader, then the player's event queue, then the reader thread); `interrupt()`,
// the one call from anywhere, touches only atomics.
public final class MediaSource: @unchecked Sendable {
    /// How long one network read may block before the input is declared unreachable.
    /// Five seconds: long enough for a slow LAN server, short enough that a bad URL is
    /// reported while the user is still looking.
    public static let readTimeout: Duration = .seconds(5)
    /// The total time allowed for opening and probing a network input. Probing may read a
    /// few megabytes; on a reachable server that takes well under this. A local file has no
    /// such limit: reading it cannot hang, and on a busy machine probing a video (which
    /// decodes its first pictures) was seen to outlast it.
    public static let openTimeout: Duration = .seconds(15)
    /// The longest FFmpeg's HTTP layer waits between tries to reconnect a dropped stream
    /// before giving up (its retries wait 1, 2, 4 s...): a server that went away fails the
    /// item within about ten seconds, well inside the decoded sound a listener would miss.
    public static let reconnectLimit: Duration = .seconds(4)

    /// The largest embedded picture (cover art) whose bytes are kept, in bytes: 16 MiB, about
    /// the most a FLAC `PICTURE` block can hold (its length is 24 bits) and far more than a
    /// real cover needs (a 3000×3000 JPEG is a few MiB). The bytes are copied each time the
    /// item is opened and kept with its description for as long as the asset lives; a
    /// "picture" past this is more likely a damaged or hostile file than art, so it is left out.
    public static let maximumPictureBytes = 16 << 20
    /// The most bytes of embedded pictures kept for one item, in bytes: 32 MiB, a few
    /// generous covers. Pictures past it are left out, in stream order, so that a file of
    /// many pictures cannot make every opening of it copy without bound.
    public static let maximumPicturesBytes = 32 << 20

    /// Schemes FFmpeg is asked to open; anything else is refused before FFmpeg sees it.
    static let networkSchemes: Set<String> = ["http", "https", "rtsp", "rtp", "udp", "tcp", "hls", "rtmp", "ftp"]

    public let url: String
    /// What the input holds, with the tracks to play in `preferredAudioTrack` and
    /// `preferredVideoTrack` (see `choose(audioStream:variantLimit:)`).
    public private(set) var info: MediaInfo
    /// The variant limit the tracks to play were chosen under: what a reader that opens the
    /// same item again (pictures for a display that came later, reverse play) opens it with.
    public private(set) var variantLimit: VariantLimit = .none
    /// `info` as described, before any choice: FFmpeg's own tracks.
    private let described: MediaInfo
    /// The stream time of the first packet this opening read (the container's start time):
    /// where a live stream's item time stood when it was opened here.
    public let openedAt: CMTime
    /// For a live HLS stream, the URLs of the segments and playlists FFmpeg's demuxer opened
    /// while this opening read its first packets, in order: the first of the followed
    /// playlist's segments among them is the one `openedAt` stamps (`HLSLiveWindow`). Empty
    /// for any other input.
    public let liveOpenings: [String]
    /// The user agent and header fields every fetch of this opening carries (its asset's,
    /// `HTTPRequestFields`): for the playlists read apart from it.
    public let requestFields: HTTPRequestFields?
    /// `openedAt` in nanoseconds on the timeline `splices` describe (another player's jumps
    /// of the same stream, closed up: `TimelineSplice.itemNanoseconds`).
    public func openedAtNanoseconds(after splices: [TimelineSplice]) -> Int64 {
        let opened = openedAt.convertScale(1_000_000_000, method: .roundHalfAwayFromZero).value
        return TimelineSplice.itemNanoseconds(ofStream: opened, after: splices)
    }
    /// The input: replaced only by `reopen(fromSeconds:)`, on the thread reading the source.
    private(set) var formatContext: UnsafeMutablePointer<AVFormatContext>
    private let interruptState: InterruptState
    /// The context's `opaque`: released only after the context is closed (deinit's body runs
    /// before the stored properties go). Replaced with the context.
    private var fetchPolicy: FetchPolicy
    /// Whether the input is an on-demand HLS stream opened whole, whose media playlist may
    /// be spliced (`splicedPlaylist`), and what FFmpeg opened for it.
    private let mayBeSpliced: Bool
    private let target: String
    /// `splicedPlaylist` once read, by the reading thread alone.
    private var splicedPlaylistRead: HLSPlaylistCut??

    /// For an on-demand HLS stream spliced from several (an `EXT-X-DISCONTINUITY` in the
    /// media playlist FFmpeg reads first): that playlist, by which a seek past a splice
    /// opens the stream again at a later segment (`reopen(fromSeconds:)`); nil otherwise.
    /// Read at the first call, which a seek makes (one or two small fetches), so that an
    /// opening never sought in (an asset's load, most items) costs nothing more. On the
    /// thread reading the source.
    var splicedPlaylist: HLSPlaylistCut? {
        if let read = splicedPlaylistRead { return read }
        guard mayBeSpliced else { return nil }
        interruptState.arm(deadline: .now() + Self.openTimeout)
        defer { interruptState.arm(deadline: nil) }
        let read = Self.readSplicedPlaylist(at: target, interrupt: formatContext.pointee.interrupt_callback, fields: requestFields)
        // A read cut short by a stop is not taken for the answer.
        if !interruptState.cancelled { splicedPlaylistRead = .some(read) }
        return read
    }
    /// Where the input was last opened again (`reopen(fromSeconds:)`), in seconds of the
    /// playlist's time; nil while it reads the stream as first opened.
    private(set) var reopenedAt: Double?
    /// The segment tags already taken (`takeSegmentTags()`), by the reading thread alone.
    private var segmentTagsTaken: Int64 = 0
    private let gainHolder: Mutex<ItemGain>
    /// Where the bytes this source reads are counted (an item's, across all its openings);
    /// nil: not counted. Set before reading starts.
    private let counterHolder = Mutex<NetworkActivity?>(nil)
    /// The bytes already added to the counter, by the reading thread alone.
    private let countedBytes = Atomic<Int64>(0)
    /// How long opening and probing took (ns): the bytes they read are counted at the first
    /// read, over this time as well as that read's.
    private let openingNanoseconds: Int64
    /// The failed fetches already told to the counter, by the reading thread alone.
    private let toldFailures = Atomic<Int32>(0)
    /// Whether reads count in the throughput (`noteHeldBack`), by the reading thread alone.
    private let measuring = Atomic<Bool>(true)

    /// Where the bytes this source reads from the network are added as it reads them:
    /// an item's counter, shared by every opening of it (its access log's bytes transferred).
    public var networkActivity: NetworkActivity? {
        get { counterHolder.withLockAnnotated { $0 } }
        set { counterHolder.withLockAnnotated { $0 = newValue } }
    }

    /// From now on, the connection is made again when it drops or ends, for an input that
    /// is a stream going on for ever (a station): it is joined again where the station then
    /// stands. FFmpeg's HTTP layer otherwise reconnects only an input it can resume within,
    /// and a station that closes the connection looks like its end. Set on the open
    /// connection rather than at the open, so that telling a file from a station first
    /// costs a file nothing: reconnecting at the end would hold a file's probe at its end for
    /// the reconnection limit. On the thread using the source.
    func reconnectWhenDroppedOrEnded() {
        guard let input = formatContext.pointee.pb else { return }
        _ = av_opt_set(input, "reconnect_streamed", "1", AV_OPT_SEARCH_CHILDREN)
        _ = av_opt_set(input, "reconnect_at_eof", "1", AV_OPT_SEARCH_CHILDREN)
    }

    /// Reads the next packet, as `av_read_frame`, and adds the bytes its inputs read
    /// meanwhile to the transfer counter, with the time the read took. On the thread reading
    /// the source.
    func readFrame(_ packet: UnsafeMutablePointer<AVPacket>) -> Int32 {
        let started = HostTime.now()
        let status = av_read_frame(formatContext, packet)
        let ended = HostTime.now()
        let took = (ended - started).nanosecondsClamped
        let total = chorus_fetch_policy_bytes(fetchPolicy.pointer, formatContext)
        let before = countedBytes.exchange(total, ordering: .relaxed)
        let added = total - before
        let measured = measuring.load(ordering: .relaxed)
        // A read that waited for the network found nothing the system held (it would have
        // returned that at once): it, and the reads after it, measure the network again.
        let waited = took >= Self.networkWaitNanoseconds
        if !measured, waited { measuring.store(true, ordering: .relaxed) }
        // A live stream's read that took long waited for its playlist to list the next
        // segment (FFmpeg's demuxer sleeps until it does), not for the network: its bytes
        // count, its time does not.
        let waitedForTheStream = described.isLiveHLS && took >= Self.liveEdgeWaitNanoseconds
        if added > 0, let counter = counterHolder.withLockAnnotated({ $0 }) {
            if waitedForTheStream {
                counter.addUnmeasured(added)
            } else if measured || waited {
                counter.add(added, from: started.nanoseconds - (before == 0 ? openingNanoseconds : 0), to: ended.nanoseconds)
            } else {
                counter.addUnmeasured(added)
            }
        }
        // A fetch refused for its server's certificate fails the item, where a segment
        // merely missing is skipped: what such a server sends cannot be told from an
        // attacker's.
        if fetchPolicy.certificateRefusals > 0 {
            if status >= 0 { av_packet_unref(packet) }
            return FFmpegCall.certificateRefused
        }
        // A fetch that failed while reading (a segment the demuxer then skipped).
        let failures = fetchPolicy.pointer.pointee.failure_count
        if failures != toldFailures.exchange(failures, ordering: .relaxed), let counter = counterHolder.withLockAnnotated({ $0 }) {
            let failedURL = fetchPolicy.pointer.pointee.last_failed_url.map { String(cString: $0) } ?? url
            counter.fetchFailed(url: failedURL, reason: FFmpegCall.message(fetchPolicy.pointer.pointee.last_failed_status))
        }
        return status
    }

    /// The ID3 tags the input's segments began with since the last call (an HLS stream of
    /// packed audio: each segment's timestamp, and a station's titles), oldest first; a
    /// few segments' worth are kept between calls. On the thread reading the source.
    func takeSegmentTags() -> [[UInt8]] {
        let policy = fetchPolicy.pointer
        let written = policy.pointee.segment_tags_written
        guard written > segmentTagsTaken else { return [] }
        let first = max(segmentTagsTaken, written - Int64(CHORUS_SEGMENT_TAGS))
        segmentTagsTaken = written
        return (first..<written).compactMap { number in
            let length = Int(chorus_segment_tag_length(policy, number))
            guard length > 0, let bytes = chorus_segment_tag_bytes(policy, number) else { return nil }
            return Array(UnsafeBufferPointer(start: bytes, count: length))
        }
    }

    /// Why a read failed with `FFmpegCall.certificateRefused`: the fetch refused, as an
    /// error of this item. On the thread reading the source.
    var certificateRefusal: MediaError? { fetchPolicy.certificateRefusal(of: url) }

    /// How an error says that a server's certificate did not check out.
    public static let untrustedCertificate = "the server's certificate is not trusted"

    /// The reader was held back (its queues full, however briefly): what the system
    /// receives meanwhile comes at once when it reads again, which says nothing of the
    /// network, so its reads count as bytes but not in the throughput until one waits for
    /// the network (`networkWaitNanoseconds`), which counts again. On the thread reading
    /// the source.
    func noteHeldBack() { measuring.store(false, ordering: .relaxed) }

    /// How long a read takes when it waited for the network rather than found its bytes
    /// already received (ns): well above a read served from the system's buffers (tens of
    /// µs), well below a network's round trip or a slow link's next packet.
    static let networkWaitNanoseconds: Int64 = 2_000_000

    /// How long a live stream's read takes when it waited at the live edge for the next
    /// segment rather than for the network (ns): FFmpeg's demuxer waits a good part of a
    /// target duration (seconds) there, while a read on a slow link returns with the next
    /// bytes that came, in milliseconds.
    static let liveEdgeWaitNanoseconds: Int64 = 200_000_000

    /// Whether the input is a single HTTP(S) stream, whose server may interleave ICY
    /// metadata blocks (a SHOUTcast or Icecast station; FFmpeg asks for them).
    var mayCarryICY: Bool {
        guard url.hasPrefix("http://") || url.hasPrefix("https://"), formatContext.pointee.pb != nil,
              let name = formatContext.pointee.iformat?.pointee.name else { return false }
        return String(cString: name) != "hls"
    }

    /// The input's latest ICY metadata block, as the server sent it; nil before the first
    /// (or when the input sends none). On the thread reading the source.
    func icyMetadataBlock() -> [UInt8]? {
        guard let input = formatContext.pointee.pb else { return nil }
        var value: UnsafeMutablePointer<UInt8>? = nil
        guard av_opt_get(input, "icy_metadata_packet", AV_OPT_SEARCH_CHILDREN, &value) >= 0, let value else { return nil }
        defer { av_free(value) }
        let length = strlen(value)
        guard length > 0 else { return nil }
        return Array(UnsafeBufferPointer(start: value, count: length))
    }

    /// The gain curves of the item this source plays, which its sound's readers apply to
    /// what they decode: given at the open, or set before reading starts (by default, none).
    public var gain: ItemGain {
        get { gainHolder.withLockAnnotated { $0 } }
        set { gainHolder.withLockAnnotated { $0 = newValue } }
    }

    /// Opens and probes `url` (a path, a file:// URL, or an http(s) URL).
    ///
    /// `audioStream` chooses the sound by FFmpeg stream index (an item's chosen language);
    /// nil, or an index that is not a decodable audio stream, keeps FFmpeg's own choice.
    /// `variantLimit`, for an HLS master playlist, chooses the variant whose sound and
    /// pictures play (`MediaInfo.playedTracks(audioStream:within:)`); the others are never
    /// fetched once reading begins. `gain` is the item's audio mix, which the sound's readers
    /// apply to what they decode.
    public convenience init(url: String, audioStream: Int? = nil, variantLimit: VariantLimit = .none,
                            gain: ItemGain = ItemGain()) throws(MediaError) {
        try self.init(url: url, audioStream: audioStream, allowedSegmentExtensions: nil, variantLimit: variantLimit, gain: gain)
    }

    /// As `init(url:audioStream:)`; `allowedSegmentExtensions`, for an HLS media playlist,
    /// replaces the list of segment types FFmpeg's HLS demuxer opens (a subtitle rendition's
    /// WebVTT segments are not on its default list). An HLS master playlist opened without
    /// it has its subtitle renditions added to its tracks.
    /// Opens a live HLS stream at segment `liveStartIndex` of its playlist as it stands now
    /// (FFmpeg's `live_start_index`; negative counts from the end).
    public convenience init(url: String, audioStream: Int? = nil, variantLimit: VariantLimit = .none, liveStartIndex: Int,
                            gain: ItemGain = ItemGain()) throws(MediaError) {
        try self.init(url: url, audioStream: audioStream, allowedSegmentExtensions: nil, liveStartIndex: liveStartIndex,
                      variantLimit: variantLimit, gain: gain)
    }

    /// The certificate authorities TLS servers are checked against instead of the system's:
    /// the PEM file named by `CHORUS_CA_FILE`, if set.
    static let certificateAuthorities: String? = ProcessInfo.processInfo.environment["CHORUS_CA_FILE"].flatMap { $0.isEmpty ? nil : $0 }

    /// `certificateAuthorities` as the C string every FFmpeg open is given: made once for the
    /// process (Swift initialises a static once, whichever thread asks first) and never freed,
    /// so that every context's fetch policy may point to it for as long as the context lives.
    /// Nil when no file is named, or when the copy could not be made; FFmpeg then checks
    /// against the system's authorities, which refuses a server only a private authority
    /// vouches for rather than letting it through.
    // nonisolated(unsafe): a pointer is not Sendable, but this one's bytes are never written
    // after the copy is made, and the pointer itself is a constant.
    nonisolated(unsafe) static let certificateAuthoritiesPath: UnsafePointer<CChar>? =
        certificateAuthorities.flatMap { strdup($0) }.map { UnsafePointer($0) }

    /// Adds to `options` the certificate checks every open is given: the server must prove
    /// who it is over TLS, as to any player (FFmpeg checks nothing unless asked), against
    /// the system's authorities or those in the PEM file `authorities` (by default the file
    /// `CHORUS_CA_FILE` names: a home server's own authority).
    static func addCertificateChecks(to options: inout OpaquePointer?, authorities: String? = certificateAuthorities) {
        // The dictionary keeps copies of its strings; a temporary C string will do here.
        if let authorities {
            _ = authorities.withCString { chorus_add_certificate_checks(&options, $0) }
        } else {
            _ = chorus_add_certificate_checks(&options, nil)
        }
    }

    /// `cutAt` (s of the playlist's time) opens an on-demand HLS stream at the segment that
    /// holds it (`HLSPlaylistCut`), interrupted through `interruptState` and limited to the
    /// protocols `protocols` names (FFmpeg's list): the opening `reopen(fromSeconds:)` takes
    /// the input of.
    init(url: String, audioStream: Int? = nil, allowedSegmentExtensions: String?, liveStartIndex: Int? = nil,
         variantLimit: VariantLimit = .none, gain: ItemGain = ItemGain(),
         cutAt: Double? = nil, interruptState: InterruptState? = nil, protocols: String? = nil) throws(MediaError) {
        self.url = url
        gainHolder = Mutex(gain)
        let target = try Self.resolve(url)
        // FFmpeg prints to stderr by default; every failure is reported through MediaError.
        chorus_av_quiet()
        let state = interruptState ?? InterruptState()
        let isNetwork = URL(string: target).flatMap(\.scheme).map { Self.networkSchemes.contains($0.lowercased()) } ?? false
        state.arm(deadline: isNetwork ? .now() + Self.openTimeout : nil)
        self.interruptState = state

        guard let context = avformat_alloc_context() else {
            throw .outputFailure(device: url, reason: "out of memory")
        }
        context.pointee.interrupt_callback.callback = chorusInterruptCallback
        context.pointee.interrupt_callback.opaque = Unmanaged.passUnretained(state).toOpaque()
        // Every fetch the demuxer makes (an HLS playlist's segments, variants and refreshes
        // as well as the first) goes through the fetch policy, which adds the certificate
        // checks: the options below reach the first connection alone.
        let policy = FetchPolicy()
        fetchPolicy = policy
        // The asset's own user agent and header fields, on every fetch of this opening.
        requestFields = HTTPRequestFields.fields(for: url)
        policy.setRequestFields(requestFields)
        guard chorus_fetch_policy_install(context, policy.pointer) >= 0 else {
            avformat_free_context(context)
            throw .networkFailure(url: url, reason: "cannot check servers' certificates")
        }

        // Kept until the demuxer has read its playlists, which happens inside the open.
        let cut = cutAt.map(PlaylistCutRequest.init(seconds:))
        if let cut {
            policy.pointer.pointee.rewrite_playlist = PlaylistCutRequest.rewrite
            policy.pointer.pointee.rewrite_opaque = Unmanaged.passUnretained(cut).toOpaque()
        }
        defer {
            policy.pointer.pointee.rewrite_playlist = nil
            policy.pointer.pointee.rewrite_opaque = nil
            }

        var options: OpaquePointer? = nil
        // A playlist the cut opens in place of the one fetched is not an HTTP connection,
        // and the demuxer must not ask it for the next playlist as it would a kept-alive one.
        if cut != nil { av_dict_set(&options, "http_persistent", "0", 0) }
        // An input opened from memory (the cut playlist) brings no list of the protocols its
        // nested fetches may use, as an HTTP or file input does: the first opening's is given,
        // with `data:` for the playlists handed over.
        if let protocols { av_dict_set(&options, "protocol_whitelist", protocols.contains("data") ? protocols : protocols + ",data", 0) }
        av_dict_set(&options, "rw_timeout", String(Int64(Self.readTimeout.components.seconds) * 1_000_000), 0)
        // Servers that drop the connection mid-file are reconnected by FFmpeg's HTTP layer,
        // for `reconnectLimit` at most: its own default (two minutes of retries, doubling the
        // wait) held a read, and the item, silent for that long when a server went away.
        av_dict_set(&options, "reconnect", "1", 0)
        av_dict_set(&options, "reconnect_delay_max", String(Int64(Self.reconnectLimit.components.seconds)), 0)
        if let allowedSegmentExtensions { av_dict_set(&options, "allowed_extensions", allowedSegmentExtensions, 0) }
        if let liveStartIndex { av_dict_set(&options, "live_start_index", String(liveStartIndex), 0) }
        // The fetch policy adds these to every open; given here too for a demuxer that makes
        // its own connections from the options rather than through io_open.
        Self.addCertificateChecks(to: &options)
        var opened: UnsafeMutablePointer<AVFormatContext>? = context
        let openingStarted = HostTime.now()
        // A cut opening's input is a playlist in memory, with no name or type to tell it by.
        let format = cutAt == nil ? nil : av_find_input_format("hls")
        let openStatus = avformat_open_input(&opened, target, format, &options)
        av_dict_free(&options)
        guard openStatus >= 0, let context = opened else {
            // avformat_open_input frees the context on failure.
            if !state.timedOut, let failed = policy.failedFetch(of: url, other: target) { throw failed }
            throw Self.openError(openStatus, url: url, isNetwork: state.timedOut)
        }
        formatContext = context

        let probeStatus = avformat_find_stream_info(context, nil)
        if probeStatus < 0 {
            var closing: UnsafeMutablePointer<AVFormatContext>? = context
            avformat_close_input(&closing)
            if state.timedOut { throw .networkFailure(url: url, reason: "timed out") }
            if let failed = policy.failedFetch(of: url, other: target) { throw failed }
            throw .corruptData(url: url, reason: "cannot read stream information (\(FFmpegCall.message(probeStatus)))")
        }
        withExtendedLifetime(cut) {}
        // Segments that begin with an ID3 tag (packed audio: AAC or MP3 with a timestamp
        // tag): each is fetched on a connection of its own, so that every one's tag is seen
        // (`takeSegmentTags`). A kept-alive connection fetches the next segment without
        // an open anyone outside FFmpeg sees.
        if policy.pointer.pointee.segment_tags_written > 0, let options = context.pointee.priv_data,
           let name = context.pointee.iformat?.pointee.name, String(cString: name) == "hls" {
            _ = av_opt_set(options, "http_persistent", "0", 0)
        }
        openingNanoseconds = (HostTime.now() - openingStarted).nanosecondsClamped
        var described = Self.describe(context, url: url)
        openedAt = described.startTime
        // A live stream's item time is its own stream time, not counted from where this
        // opening began: a live stream's timestamps run on across its segments and are the
        // same for every client, so the item keeps its time when it is opened again at
        // another segment (a seek), and every room of a group that opened it at its own
        // moment stands on the same time for the same sound.
        if described.isLiveHLS { described.startTime = .zero }
        if allowedSegmentExtensions == nil, cutAt == nil, described.formatName == "hls", HLSRenditions.isMasterPlaylist(context) {
            described.tracks += HLSRenditions.subtitleTracks(of: target, interrupt: context.pointee.interrupt_callback, fields: requestFields)
            described.variants = HLSVariant.variants(of: context)
        }
        mayBeSpliced = allowedSegmentExtensions == nil && cutAt == nil && described.formatName == "hls" && !described.isLiveHLS
        liveOpenings = described.isLiveHLS ? policy.openedURLs : []
        self.target = target
        self.described = described
        info = described
        choose(audioStream: audioStream, variantLimit: variantLimit)
        state.arm(deadline: nil)
    }

    /// The media playlist FFmpeg's HLS demuxer reads first at `target` (its first variant's,
    /// for a master playlist), when it is spliced (`splicedPlaylist`).
    private static func readSplicedPlaylist(at target: String, interrupt: AVIOInterruptCB, fields: HTTPRequestFields?) -> HLSPlaylistCut? {
        guard let text = HLSRenditions.readFirstMediaPlaylist(target, interrupt: interrupt, fields: fields) else { return nil }
        let playlist = HLSPlaylistCut(parsing: text)
        return playlist.firstDiscontinuity == nil ? nil : playlist
    }

    /// Opens the input again at the segment of its (spliced, on-demand HLS) playlist that
    /// holds `seconds` of the playlist's time, in place of the input as it was, which is
    /// closed; the streams must be those of the first opening, in the same order, or the
    /// input stays as it was and the open's failure is thrown. The item's description and
    /// its time (`openedAt`, `info.startTime`) stay the first opening's. On the thread
    /// reading the source, which then reads the new input from its top (no seek is needed,
    /// and none made). The bytes the opening read count as the item's.
    func reopen(fromSeconds seconds: Double) throws(MediaError) {
        // The opening arms the shared interrupt's deadline and clears it only if it opens.
        defer { interruptState.arm(deadline: nil) }
        let protocols = formatContext.pointee.protocol_whitelist.map { String(cString: $0) }
        let fresh = try MediaSource(url: url, allowedSegmentExtensions: nil, cutAt: seconds, interruptState: interruptState,
                                    protocols: protocols)
        guard Self.sameStreams(formatContext, fresh.formatContext) else {
            throw .corruptData(url: url, reason: "the streams after \(seconds) s are not those before it")
        }
        // Swapped: `fresh` closes the input this source read, with that input's policy.
        swap(&formatContext, &fresh.formatContext)
        swap(&fetchPolicy, &fresh.fetchPolicy)
        reopenedAt = seconds
        segmentTagsTaken = 0
        let opened = chorus_fetch_policy_bytes(fetchPolicy.pointer, formatContext)
        countedBytes.store(opened, ordering: .relaxed)
        toldFailures.store(fetchPolicy.pointer.pointee.failure_count, ordering: .relaxed)
        if opened > 0, let counter = counterHolder.withLockAnnotated({ $0 }) { counter.addUnmeasured(opened) }
    }

    /// Whether two inputs hold the same streams in the same order: their kinds, codecs and
    /// time bases.
    private static func sameStreams(_ a: UnsafeMutablePointer<AVFormatContext>, _ b: UnsafeMutablePointer<AVFormatContext>) -> Bool {
        guard a.pointee.nb_streams == b.pointee.nb_streams else { return false }
        for index in 0..<Int(a.pointee.nb_streams) {
            guard let first = a.pointee.streams[index], let second = b.pointee.streams[index],
                  let one = first.pointee.codecpar, let other = second.pointee.codecpar,
                  one.pointee.codec_type == other.pointee.codec_type, one.pointee.codec_id == other.pointee.codec_id,
                  av_cmp_q(first.pointee.time_base, second.pointee.time_base) == 0 else { return false }
        }
        return true
    }

    /// Chooses the tracks to play again, from those FFmpeg chose at the open: the sound
    /// `audioStream` (nil: FFmpeg's) within `variantLimit`, as the initialiser does
    /// (`MediaInfo.playedTracks(audioStream:within:)`). For a source opened by someone who
    /// did not know the choice (an asset's load, kept for its first item), before it is
    /// read: a demuxer discards the streams it is not given when it is made.
    package func choose(audioStream: Int?, variantLimit: VariantLimit) {
        let played = described.playedTracks(audioStream: audioStream, within: variantLimit)
        info.preferredAudioTrack = played.audio
        info.preferredVideoTrack = played.video
        self.variantLimit = variantLimit
    }

    deinit {
        var context: UnsafeMutablePointer<AVFormatContext>? = formatContext
        avformat_close_input(&context)
    }

    /// Makes any blocked or future read fail at once. Safe from any thread.
    public func interrupt() { interruptState.cancel() }

    /// The timestamp (µs, `AV_TIME_BASE`) a seek to item time `itemNanoseconds` asks the
    /// container for. Before the item's start only for the ISO family (MP4, M4A, MOV): there
    /// the encoder's priming packets come before time 0 (an AAC track's 1,024 samples), and a
    /// seek near the start must land on them, or the first frames are decoded without the
    /// packet their overlap needs. Other containers are asked for their start at the least
    /// (an MP3 asked for a time before it lands elsewhere).
    func seekTimestamp(itemNanoseconds: Int64) -> Int64 {
        let start = info.startTime.convertScale(1_000_000, method: .roundTowardNegativeInfinity).value
        let primes = info.formatName.contains("mp4") || info.formatName.contains("mov")
        let earliest = primes ? -Int64(Int32.max) : 0
        return start &+ max(itemNanoseconds, earliest) / 1000
    }

    /// Clears an earlier `interrupt()`, so a source can be read again by a new reader.
    public func resetInterrupt() { interruptState.reset() }


    // MARK: - Opening

    /// Turns a user's path or URL into what FFmpeg should open, rejecting what cannot work.
    static func resolve(_ url: String) throws(MediaError) -> String {
        if url.isEmpty { throw .badURL(url: url, reason: "empty") }
        let path: String
        if let schemeEnd = url.range(of: "://") {
            let scheme = url[..<schemeEnd.lowerBound].lowercased()
            if scheme == "file" {
                guard let parsed = URL(string: url), parsed.isFileURL else {
                    throw .badURL(url: url, reason: "not a valid file URL")
                }
                path = parsed.path
            } else if networkSchemes.contains(scheme) {
                guard let parsed = URL(string: url), let host = parsed.host, !host.isEmpty else {
                    throw .badURL(url: url, reason: "no host")
                }
                return url
            } else {
                throw .badURL(url: url, reason: "unsupported scheme \"\(scheme)\"")
            }
        } else {
            path = url
        }
        var status = stat()
        guard stat(path, &status) == 0 else {
            if errno == EACCES { throw .networkFailure(url: url, reason: "permission denied") }
            throw .fileNotFound(url: url)
        }
        if (status.st_mode & S_IFMT) == S_IFDIR { throw .unsupportedFormat(url: url, reason: "is a directory") }
        if (status.st_mode & S_IFMT) == S_IFREG && status.st_size == 0 { throw .emptyFile(url: url) }
        guard access(path, R_OK) == 0 else { throw .networkFailure(url: url, reason: "permission denied") }
        // "file:" keeps FFmpeg from reading a colon in a file name as a protocol prefix.
        return "file:" + path
    }

    static func openError(_ status: Int32, url: String, isNetwork: Bool) -> MediaError {
        let message = FFmpegCall.message(status)
        if isNetwork { return .networkFailure(url: url, reason: "timed out") }
        if status == FFmpegCall.invalidData {
            return .unsupportedFormat(url: url, reason: "not a media file FFmpeg recognises")
        }
        if status == -ENOENT { return .fileNotFound(url: url) }
        if status == -EACCES { return .networkFailure(url: url, reason: "permission denied") }
        if url.contains("://") && !url.lowercased().hasPrefix("file://") {
            return .networkFailure(url: url, reason: message)
        }
        return .corruptData(url: url, reason: message)
    }

    // MARK: - Describing

    static func describe(_ context: UnsafeMutablePointer<AVFormatContext>, url: String) -> MediaInfo {
        let microseconds = Int32(chorus_av_time_base())
        let fileDuration = context.pointee.duration
        let duration: CMTime = fileDuration == FFmpegCall.noPTS || fileDuration < 0
            ? .indefinite : CMTime(value: fileDuration, timescale: microseconds)
        let fileStart = context.pointee.start_time
        let start: CMTime = fileStart == FFmpegCall.noPTS ? .zero : CMTime(value: fileStart, timescale: microseconds)

        var tracks: [TrackInfo] = []
        let count = Int(context.pointee.nb_streams)
        for index in 0..<count {
            guard let stream = context.pointee.streams[index], let parameters = stream.pointee.codecpar else { continue }
            tracks.append(describe(stream: stream, parameters: parameters, index: index))
        }
        let best = av_find_best_stream(context, AVMEDIA_TYPE_AUDIO, -1, -1, nil, 0)
        let preferred = best >= 0 ? tracks.first { $0.streamIndex == Int(best) } : nil
        let seekable = context.pointee.pb.map { $0.pointee.seekable != 0 } ?? false
        let formatName = context.pointee.iformat.flatMap { $0.pointee.name.map { String(cString: $0) } } ?? "unknown"
        // Cover art is a video stream too; only moving pictures count as a video track. And
        // FFmpeg reads any text file as a "video" of its characters (the tty demuxer), which
        // no one means to play.
        let bestVideo = av_find_best_stream(context, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        let video = formatName == "tty" ? nil
            : tracks.first { $0.streamIndex == Int(bestVideo) && !$0.isAttachedPicture }
            ?? tracks.first { $0.kind == .video && !$0.isAttachedPicture }
        return MediaInfo(
            url: url, duration: duration, startTime: start, formatName: formatName, tracks: tracks,
            isSeekable: seekable, preferredAudioTrack: preferred.flatMap { decoderExists(for: $0) ? $0 : nil },
            preferredVideoTrack: video.flatMap { decoderExists(for: $0) ? $0 : nil },
            metadata: tags(of: context, audioStream: preferred?.streamIndex),
            pictures: pictures(of: context, tracks: tracks))
    }

    /// A copy of the bytes of each attached picture among `tracks` (the encoded picture FFmpeg
    /// read into the stream's `attached_pic` when it opened the input), but for those past
    /// `maximumPictureBytes`, or past `maximumPicturesBytes` with those before them. Copied
    /// here, as the context's own packet goes with the context.
    static func pictures(of context: UnsafeMutablePointer<AVFormatContext>, tracks: [TrackInfo]) -> [AttachedPicture] {
        var result: [AttachedPicture] = []
        var total = 0
        for track in tracks where track.isAttachedPicture {
            guard track.streamIndex < Int(context.pointee.nb_streams), let stream = context.pointee.streams[track.streamIndex] else { continue }
            // The packet's size is the length of the buffer FFmpeg filled; it is checked
            // against the limits (and for a negative or empty one) before any byte is read.
            let size = Int(stream.pointee.attached_pic.size)
            guard size > 0, size <= maximumPictureBytes, total + size <= maximumPicturesBytes,
                  let bytes = stream.pointee.attached_pic.data else { continue }
            // FFmpeg files an ID3 or FLAC picture's description as the stream's title and
            // its type as the comment.
            result.append(AttachedPicture(streamIndex: track.streamIndex, codec: track.codec, data: Data(bytes: bytes, count: size),
                                          caption: streamTag("title", of: stream), pictureType: streamTag("comment", of: stream)))
            total += size
        }
        return result
    }

    /// The stream's tag `key`, if it has one that is not empty.
    static func streamTag(_ key: String, of stream: UnsafeMutablePointer<AVStream>) -> String? {
        guard let entry = av_dict_get(stream.pointee.metadata, key, nil, 0), let value = entry.pointee.value else { return nil }
        let text = String(cString: value)
        return text.isEmpty ? nil : text
    }

    /// Tags that describe a stream rather than the work: a track's language, its handler's
    /// name and vendor (MP4), its length and encoder (Matroska).
    static let streamOnlyTags: Set<String> = ["language", "handler_name", "vendor_id", "duration", "encoder"]

    /// The container's tags, then those of the sound's stream that it does not have (Ogg keeps
    /// its comments there), but for `streamOnlyTags`.
    static func tags(of context: UnsafeMutablePointer<AVFormatContext>, audioStream: Int?) -> [MetadataTag] {
        var result = entries(of: context.pointee.metadata)
        if let audioStream, audioStream < Int(context.pointee.nb_streams), let stream = context.pointee.streams[audioStream] {
            let known = Set(result.map { $0.key.lowercased() })
            result += entries(of: stream.pointee.metadata).filter {
                !known.contains($0.key.lowercased()) && !streamOnlyTags.contains($0.key.lowercased())
            }
        }
        return result
    }

    /// Every entry of an FFmpeg dictionary, in its order.
    static func entries(of dictionary: OpaquePointer?) -> [MetadataTag] {
        var result: [MetadataTag] = []
        var previous: UnsafeMutablePointer<AVDictionaryEntry>? = nil
        while let entry = av_dict_get(dictionary, "", previous, AV_DICT_IGNORE_SUFFIX) {
            if let key = entry.pointee.key, let value = entry.pointee.value {
                result.append(MetadataTag(key: String(cString: key), value: String(cString: value)))
            }
            previous = entry
        }
        return result
    }

    static func decoderExists(for track: TrackInfo) -> Bool {
        track.codec != "none" && avcodec_find_decoder_by_name(track.codec) != nil
            || track.codec.hasPrefix("pcm_")
    }

    static func describe(stream: UnsafeMutablePointer<AVStream>, parameters: UnsafeMutablePointer<AVCodecParameters>, index: Int) -> TrackInfo {
        let p = parameters.pointee
        let kind: MediaKind
        switch p.codec_type {
        case AVMEDIA_TYPE_AUDIO: kind = .audio
        case AVMEDIA_TYPE_VIDEO: kind = .video
        case AVMEDIA_TYPE_SUBTITLE: kind = .subtitle
        case AVMEDIA_TYPE_DATA: kind = .data
        case AVMEDIA_TYPE_ATTACHMENT: kind = .attachment
        default: kind = .unknown
        }
        let codec = avcodec_get_name(p.codec_id).map { String(cString: $0) } ?? "unknown"
        let timeBase = stream.pointee.time_base
        var range = CMTimeRange.invalid
        if timeBase.num > 0, timeBase.den > 0 {
            let scaleOK = timeBase.num == 1
            let start = stream.pointee.start_time == FFmpegCall.noPTS ? 0 : stream.pointee.start_time
            let length = stream.pointee.duration
            if scaleOK, length != FFmpegCall.noPTS, length >= 0 {
                range = CMTimeRange(start: CMTime(value: start, timescale: timeBase.den),
                                    duration: CMTime(value: length, timescale: timeBase.den))
            } else if length != FFmpegCall.noPTS, length >= 0 {
                let toSeconds = Double(timeBase.num) / Double(timeBase.den)
                range = CMTimeRange(start: CMTime(seconds: Double(start) * toSeconds, preferredTimescale: 1_000_000),
                                    duration: CMTime(seconds: Double(length) * toSeconds, preferredTimescale: 1_000_000))
            }
        }
        var layoutName: String? = nil
        var channels: Int? = nil
        if kind == .audio {
            channels = Int(p.ch_layout.nb_channels)
            var buffer = [CChar](repeating: 0, count: 64)
            var layout = p.ch_layout
            if av_channel_layout_describe(&layout, &buffer, buffer.count) > 0 {
                layoutName = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
        }
        func rate(_ r: AVRational) -> Double? { r.num > 0 && r.den > 0 ? Double(r.num) / Double(r.den) : nil }
        let isPicture = (stream.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC) != 0
        var language: String? = nil
        if let entry = av_dict_get(stream.pointee.metadata, "language", nil, 0), let value = entry.pointee.value {
            language = String(cString: value)
        }
        var title: String? = nil
        if let entry = av_dict_get(stream.pointee.metadata, "title", nil, 0), let value = entry.pointee.value {
            title = String(cString: value)
        }
        let disposition = stream.pointee.disposition
        var roles: TrackRoles = []
        let marks: [(Int32, TrackRoles)] = [
            (AV_DISPOSITION_DEFAULT, .default), (AV_DISPOSITION_ORIGINAL, .original), (AV_DISPOSITION_DUB, .dub),
            (AV_DISPOSITION_COMMENT, .comment), (AV_DISPOSITION_FORCED, .forced),
            (AV_DISPOSITION_HEARING_IMPAIRED, .hearingImpaired), (AV_DISPOSITION_VISUAL_IMPAIRED, .visualImpaired),
        ]
        for (flag, role) in marks where disposition & flag != 0 { roles.insert(role) }
        var rotation = 0.0
        var aspect: (width: Int, height: Int)? = nil
        var pixelFormat: String? = nil
        if kind == .video {
            // FFmpeg reports the matrix's angle counter-clockwise; the display turns the
            // other way to undo it.
            let counterClockwise = chorus_stream_rotation(stream)
            if counterClockwise.isFinite {
                let clockwise = (-counterClockwise).truncatingRemainder(dividingBy: 360)
                rotation = clockwise < 0 ? clockwise + 360 : clockwise
                if rotation == 0 { rotation = 0 } // no negative zero in reports
            }
            let ratio = stream.pointee.sample_aspect_ratio.num > 0 ? stream.pointee.sample_aspect_ratio : p.sample_aspect_ratio
            if ratio.num > 0, ratio.den > 0 { aspect = (Int(ratio.num), Int(ratio.den)) }
            if p.format >= 0, let name = av_get_pix_fmt_name(AVPixelFormat(rawValue: p.format)) { pixelFormat = String(cString: name) }
        }
        let containerID = stream.pointee.id
        var frameDuration = CMTime.invalid
        if kind == .video && !isPicture {
            let nominal = stream.pointee.avg_frame_rate.num > 0 && stream.pointee.avg_frame_rate.den > 0
                ? stream.pointee.avg_frame_rate : stream.pointee.r_frame_rate
            if nominal.num > 0, nominal.den > 0 { frameDuration = CMTime(value: Int64(nominal.den), timescale: nominal.num) }
        }
        var track = TrackInfo(
            trackID: containerID > 0 ? containerID : Int32(index + 1),
            streamIndex: index,
            kind: kind,
            codec: codec,
            timeRange: range,
            sampleRate: kind == .audio && p.sample_rate > 0 ? Int(p.sample_rate) : nil,
            channels: channels,
            channelLayout: layoutName,
            width: kind == .video && p.width > 0 ? Int(p.width) : nil,
            height: kind == .video && p.height > 0 ? Int(p.height) : nil,
            frameRate: kind == .video && !isPicture ? (rate(stream.pointee.avg_frame_rate) ?? rate(stream.pointee.r_frame_rate)) : nil,
            bitRate: p.bit_rate > 0 ? Int(p.bit_rate) : nil,
            rotationDegrees: rotation,
            sampleAspectRatio: aspect,
            pixelFormat: pixelFormat,
            isAttachedPicture: isPicture,
            language: language)
        track.frameDuration = frameDuration
        let base = stream.pointee.time_base
        if base.num > 0, base.den > 0 { track.timescale = Int32(clamping: (Int64(base.den) + Int64(base.num) / 2) / Int64(base.num)) }
        track.title = title
        track.roles = roles
        return track
    }
}

extension MediaInfo {
    /// Whether this build of FFmpeg can decode `track`.
    public static func hasDecoder(for track: TrackInfo) -> Bool { MediaSource.decoderExists(for: track) }

    /// Whether `track` is subtitles in text, which Chorus decodes and shows (picture
    /// subtitles, from DVDs and Blu-rays, are not shown).
    public static func isTextSubtitle(_ track: TrackInfo) -> Bool {
        guard track.kind == .subtitle, let descriptor = avcodec_descriptor_get_by_name(track.codec) else { return false }
        return descriptor.pointee.props & Int32(AV_CODEC_PROP_TEXT_SUB) != 0 && avcodec_find_decoder(descriptor.pointee.id) != nil
    }
}

/// What a cut opening (`MediaSource.reopen(fromSeconds:)`) gives the fetch policy's
/// playlist rewrite: where the playlists it fetches are to start.
final class PlaylistCutRequest {
    let seconds: Double

    init(seconds: Double) { self.seconds = seconds }

    /// The fetch policy's `rewrite_playlist`: each playlist fetched, cut to start at the
    /// segment holding `seconds` (a master playlist as it is), as a `data:` URL.
    static let rewrite: ChorusPlaylistRewrite = { opaque, text, url, location in
        guard let opaque, let text else { return nil }
        let request = Unmanaged<PlaylistCutRequest>.fromOpaque(opaque).takeUnretainedValue()
        let asked = url.map { String(cString: $0) }
        let from = location.map { String(cString: $0) }
        let base = from != asked ? from.flatMap(URL.init(string:)) : nil
        let cut = HLSPlaylistCut(parsing: String(cString: text)).text(from: request.seconds, location: base)
        return av_strdup(HLSPlaylistCut.dataURL(cut))
    }
}

/// What the C fetch policy (`chorus_io_open`) keeps for one format context: the io_open it
/// wraps, the certificate authorities, and the first fetch that failed. Its memory stays put
/// for the life of the object, which must outlive the context whose `opaque` it is.
// Not Sendable: the context's one thread at a time writes it (inside FFmpeg's calls) and
// reads it (after them).
final class FetchPolicy {
    let pointer: UnsafeMutablePointer<ChorusFetchPolicy>

    init() {
        pointer = .allocate(capacity: 1)
        var policy = ChorusFetchPolicy()
        policy.ca_file = MediaSource.certificateAuthoritiesPath
        pointer.initialize(to: policy)
    }

    deinit {
        chorus_fetch_policy_clear(pointer)
        pointer.deinitialize(count: 1)
        pointer.deallocate()
    }

    /// The error of item `item` (opened as `target`) when a fetch of another URL failed first
    /// (a segment or playlist the demuxer went on to fetch, a server whose certificate did
    /// not check out): a demuxer reports such a failure as one of its own ("end of file",
    /// "invalid data"), which would hide which fetch failed and why.
    func failedFetch(of item: String, other target: String) -> MediaError? {
        if let refused = certificateRefusal(of: item) { return refused }
        let status = pointer.pointee.failed_status
        guard status < 0, let fetched = pointer.pointee.failed_url.map({ String(cString: $0) }), fetched != target else { return nil }
        return .networkFailure(url: item, reason: "fetching \(fetched) failed: \(FFmpegCall.message(status))")
    }
}

extension FetchPolicy {
    /// Sets the user agent and header fields every fetch carries (none for nil).
    func setRequestFields(_ fields: HTTPRequestFields?) {
        av_freep(&pointer.pointee.user_agent)
        av_freep(&pointer.pointee.headers)
        pointer.pointee.user_agent = fields?.ffmpegUserAgent.flatMap { av_strdup($0) }
        pointer.pointee.headers = fields?.ffmpegHeaders.flatMap { av_strdup($0) }
    }

    /// The URLs of the first inputs an HLS demuxer opened besides its first (its variants'
    /// playlists and first segments), in order.
    var openedURLs: [String] {
        let count = Int(pointer.pointee.opened_count)
        return withUnsafeBytes(of: pointer.pointee.opened_urls) { raw in
            raw.bindMemory(to: UnsafeMutablePointer<CChar>?.self).prefix(count).compactMap { $0.map { String(cString: $0) } }
        }
    }

    /// Fetches refused so far because their server's certificate did not check out.
    var certificateRefusals: Int32 { pointer.pointee.certificate_refusals }

    /// The error of item `item` when a fetch was refused for its server's certificate
    /// (`chorus_tls_certificate_refused`), naming the first such fetch; nil when none was.
    func certificateRefusal(of item: String) -> MediaError? {
        guard certificateRefusals > 0 else { return nil }
        let fetched = pointer.pointee.certificate_refused_url.map { String(cString: $0) } ?? item
        return .networkFailure(url: item, reason: "fetching \(fetched) failed: \(MediaSource.untrustedCertificate)")
    }
}

/// The state FFmpeg's interrupt callback reads: a cancel flag and an optional deadline.
final class InterruptState: Sendable {
    private let cancelledFlag = Atomic<Bool>(false)
    private let timedOutFlag = Atomic<Bool>(false)
    /// Host nanoseconds; `Int64.max` when no deadline is armed.
    private let deadline = Atomic<Int64>(Int64.max)

    func cancel() { cancelledFlag.store(true, ordering: .releasing) }
    func reset() { cancelledFlag.store(false, ordering: .releasing) }
    var cancelled: Bool { cancelledFlag.load(ordering: .acquiring) }
    var timedOut: Bool { timedOutFlag.load(ordering: .acquiring) }

    func arm(deadline newDeadline: HostTime?) {
        timedOutFlag.store(false, ordering: .releasing)
        deadline.store(newDeadline?.nanoseconds ?? Int64.max, ordering: .releasing)
    }

    /// Whether FFmpeg should abandon the blocking call it is in.
    func shouldAbort() -> Bool {
        if cancelled { return true }
        let limit = deadline.load(ordering: .acquiring)
        if limit != Int64.max && HostTime.now().nanoseconds > limit {
            timedOutFlag.store(true, ordering: .releasing)
            return true
        }
        return false
    }
}

private func chorusInterruptCallback(_ opaque: UnsafeMutableRawPointer?) -> Int32 {
    guard let opaque else { return 0 }
    return Unmanaged<InterruptState>.fromOpaque(opaque).takeUnretainedValue().shouldAbort() ? 1 : 0
}

/// Spans of host time (ns) already counted, merged and in order: reads of two openings of
/// an item overlap, and end out of order (a long read begun before a short one ends after
/// it). A pure value type.
struct CoveredTime {
    /// How long a span is remembered after it ended (ns): longer than any read or opening
    /// takes (an opening gives up after `MediaSource.openTimeout`), so a read still under
    /// way when a later one ended finds its overlap.
    static let retention: Int64 = 120_000_000_000

    private(set) var spans: [(start: Int64, end: Int64)] = []

    /// Covers `start..<end`; returns how much of it was not covered before (ns).
    mutating func cover(from start: Int64, to end: Int64) -> Int64 {
        guard end > start else { return 0 }
        var fresh = end - start
        var merged = (start: start, end: end)
        var kept: [(start: Int64, end: Int64)] = []
        kept.reserveCapacity(spans.count + 1)
        for span in spans {
            if span.end < start || span.start > end {
                kept.append(span)
            } else {
                // The spans are apart from each other, so their overlaps with this one add up.
                fresh -= min(span.end, end) - max(span.start, start)
                merged = (min(merged.start, span.start), max(merged.end, span.end))
            }
        }
        let index = kept.firstIndex { $0.start > merged.start } ?? kept.count
        kept.insert(merged, at: index)
        let latest = kept.last?.end ?? end
        spans = kept.filter { $0.end >= latest &- Self.retention }
        return max(fresh, 0)
    }
}

/// What one item's openings and readers did on the network: the bytes they read, and the
/// fetches that failed while they read (a segment an HLS demuxer skipped).
public final class NetworkActivity: Sendable {
    private let bytes = Atomic<Int64>(0)
    /// The reads that measured the network (`MediaSource.noteHeldBack`): their bytes, the
    /// time spent in them (ns: how long the bytes took to come), and the host time they
    /// spanned, so that reads of two openings at once (a display's pictures beside the
    /// sound) count their time once: they share one network, and time counted twice would
    /// halve the rate.
    private let transfers = Mutex<(bytes: Int64, nanoseconds: Int64, covered: CoveredTime)>((0, 0, CoveredTime()))
    private let onFailure: @Sendable (_ url: String, _ reason: String) -> Void

    /// `onFailure` is told of each fetch that failed while reading, on the reading thread.
    public init(onFailure: @escaping @Sendable (_ url: String, _ reason: String) -> Void = { _, _ in }) {
        self.onFailure = onFailure
    }

    /// Bytes counted so far.
    public var total: Int64 { bytes.load(ordering: .relaxed) }

    /// The bytes of the reads that measured the network so far, and the time those reads
    /// took (ns): what a throughput is worked out from.
    public var measured: (bytes: Int64, nanoseconds: Int64) {
        transfers.withLockAnnotated { ($0.bytes, $0.nanoseconds) }
    }

    /// The throughput seen so far (bits a second): the bytes of the reads that measured
    /// the network over the time those reads took, as Apple's access log gives it ("the
    /// empirical throughput across all media downloaded"); nil before any byte came. The
    /// reads after the reader was held back by full queues do not measure it until one
    /// waits for the network (`MediaSource.noteHeldBack`): the bytes the system received
    /// meanwhile come at once. On a network faster than any read waits for, a read still
    /// finds bytes that came while the reader decoded, so it reads high there.
    public var observedBitsPerSecond: Double? {
        let (total, nanoseconds) = measured
        guard nanoseconds > 0, total > 0 else { return nil }
        return Double(total) * 8 * 1e9 / Double(nanoseconds)
    }

    /// Counts `count` bytes, read from host time `start` to `end` (ns), which measure the
    /// network (nothing, when none came). Only the part of that time no read counted before
    /// counts: reads overlap when two openings of the item read at once.
    func add(_ count: Int64, from start: Int64, to end: Int64) {
        guard count > 0 else { return }
        bytes.add(count, ordering: .relaxed)
        transfers.withLockAnnotated { transfers in
            transfers.bytes += count
            transfers.nanoseconds += transfers.covered.cover(from: start, to: end)
        }
    }

    /// Counts `count` bytes that came without measuring the network.
    func addUnmeasured(_ count: Int64) {
        guard count > 0 else { return }
        bytes.add(count, ordering: .relaxed)
    }

    func fetchFailed(url: String, reason: String) { onFailure(url, reason) }
}
