import MediaClock
import MutexAnnotations
import Synchronization
internal import CFFmpeg

/// The one reader of an item's container: a thread that reads its packets and hands each to
/// its stream's `PacketQueue`, where that stream's decoder (`AudioReader`, `VideoReader`)
/// takes it. Streams no queue is made for are discarded inside the demuxer, so a file is
/// read once and a network item fetched once, whatever is decoded from it.
///
/// Flow: the demuxer reads while any queue it feeds has room. When the pictures' queue is
/// full (their decoder has fallen behind, or no display takes pictures) and the sound's
/// wants more, picture packets are dropped up to the next keyframe, so a display that
/// falls behind costs pictures, never sound.
///
/// Seeks come here once per item, to the earliest position any decoder needs (the sound's
/// pre-roll before its target, the keyframe before that); each queue then gets a flush
/// marker with the seek's serial, and each decoder discards up to its own target.
///
/// Contract: `start()` once; `seek`, `stopReadingPictures`, `stopReadingSound` and `stop`
/// from any thread.
// @unchecked: the vars below belong to the demuxer's thread once `start()` has begun it
// (`init` and `continueTimeline(from:)` set them before); other threads reach it through
// Mutexes, atomics and the wake signal.
public final class ItemDemuxer: @unchecked Sendable {
    /// Consecutive read errors tolerated before the input counts as unreadable: single
    /// damaged packets are skipped, a dead file or connection is not retried for ever.
    static let maximumConsecutiveReadErrors = 32
    /// How long the demuxer sleeps when every queue is full or the input has ended; a taken
    /// packet and every command also wake it at once.
    static let idlePoll: Duration = .milliseconds(5)

    public let source: MediaSource
    /// The sound's packets, when the item's sound is decoded.
    let soundQueue: PacketQueue?
    /// The pictures' packets, when the item's pictures are decoded.
    let pictureQueue: PacketQueue?

    private let wake = WakeSignal()
    private let stopRequested = Atomic<Bool>(false)
    private let pendingSeek = Mutex<(itemNanoseconds: Int64, serial: Int)?>(nil)
    private let picturesStopRequested = Atomic<Bool>(false)
    private let soundStopRequested = Atomic<Bool>(false)
    private let thread = ReaderThread(name: "chorus.demuxer")

    private var atEnd = false {
        didSet { endReached.store(atEnd, ordering: .releasing) }
    }
    /// `atEnd`, for other threads.
    private let endReached = Atomic<Bool>(false)
    private var readsPictures: Bool
    private var readsSound: Bool
    /// Where decoded subtitle lines go, when the item's are wanted.
    private let subtitleCues: SubtitleCues?
    /// The decoders of the item's text subtitle streams, by stream index.
    private let subtitleDecoders: [Int32: SubtitleDecoder]
    /// The item's subtitle renditions (an HLS master playlist's), each read on its own.
    private let renditionReaders: [RenditionSubtitleReader]
    /// Where the item's timed metadata goes, when it is wanted.
    private let metadataLog: TimedMetadataLog?
    /// The item's timed metadata streams (ID3 tags in an HLS or MPEG-TS stream), read when
    /// its metadata is wanted.
    private let metadataStreams: Set<Int32>
    /// Whether the input is an HTTP stream that may carry ICY blocks, and its metadata is wanted.
    private let readsICY: Bool
    /// Whether the input is HLS and its metadata is wanted: the ID3 tags its segments begin
    /// with (packed audio) are read as they come (`noteSegmentTags`).
    private let readsSegmentTags: Bool
    /// The input's ICY blocks, asked for after every packet (a copy of a short string, some
    /// forty times a second).
    private var icy = ICYWatcher()
    /// Set when a picture packet was dropped: the rest are dropped up to the next keyframe,
    /// which decodes without what came before.
    private var skipsToKeyframe = false
    private var skippedPictures = 0
    /// The jumps of an input spliced from several (MPEG-TS, HLS), closed up so the item's
    /// timeline runs on as its sound does; nil for inputs whose times never jump.
    private var continuity: TimestampContinuity?
    /// Pictures that met a jump before the sound did, until the sound sets their shift.
    private var heldPictures = PicturesAwaitingShift()
    /// The epochs `continuity` has seen, copied out for an opening that continues this one
    /// (`timestampEpochs`), and the revision copied.
    private let epochRecord = Mutex<[TimestampContinuity.Epoch]?>(nil)
    private var recordedRevision = 0

    /// A demuxer of `source` for its preferred audio track (when `sound`) and its preferred
    /// video track (when `pictures`); every other stream is discarded. Reading starts at the
    /// top unless `seek` is called before `start`.
    ///
    /// `forwardBuffer` (zero: the defaults) is how far ahead of the playhead to read, counting
    /// the ring's `readAhead` of decoded sound.
    ///
    /// With `subtitles`, every text subtitle stream is read too, and its lines decoded into
    /// it as they come (they weigh nothing beside the sound).
    public init(source: MediaSource, sound: Bool, pictures: Bool, forwardBuffer: Duration = .zero,
                readAhead: Duration = PlaybackEngine.readAhead, subtitles: SubtitleCues? = nil, metadata: TimedMetadataLog? = nil) {
        self.source = source
        let limits = PacketQueue.limits(forwardBuffer: forwardBuffer, readAhead: readAhead)
        let context = source.formatContext
        func queue(for track: TrackInfo?, limits: PacketQueue.Limits, wake: WakeSignal) -> PacketQueue? {
            guard let track, track.streamIndex < Int(context.pointee.nb_streams),
                  let stream = context.pointee.streams[track.streamIndex] else { return nil }
            return PacketQueue(streamIndex: Int32(track.streamIndex), timeBase: stream.pointee.time_base,
                               limits: limits, producerSignal: wake)
        }
        soundQueue = sound ? queue(for: source.info.preferredAudioTrack, limits: limits.sound, wake: wake) : nil
        pictureQueue = pictures ? queue(for: source.info.preferredVideoTrack, limits: limits.pictures, wake: wake) : nil
        readsPictures = pictureQueue != nil
        readsSound = soundQueue != nil
        var decoders: [Int32: SubtitleDecoder] = [:]
        if subtitles != nil {
            for track in source.info.tracks where track.kind == .subtitle && track.streamIndex < Int(context.pointee.nb_streams) {
                guard let stream = context.pointee.streams[track.streamIndex],
                      let decoder = SubtitleDecoder(stream: stream, index: track.streamIndex, itemStart: source.info.startTime) else { continue }
                decoders[Int32(track.streamIndex)] = decoder
            }
        }
        subtitleCues = subtitles
        subtitleDecoders = decoders
        renditionReaders = subtitles.map { cues in
            source.info.tracks.compactMap { track in
                track.renditionURL.map { RenditionSubtitleReader(url: $0, streamIndex: track.streamIndex, cues: cues) }
            }
        } ?? []
        var metadataStreams: Set<Int32> = []
        if metadata != nil {
            for index in 0..<Int(context.pointee.nb_streams) where context.pointee.streams[index]?.pointee.codecpar.pointee.codec_id == AV_CODEC_ID_TIMED_ID3 {
                metadataStreams.insert(Int32(index))
            }
        }
        metadataLog = metadata
        self.metadataStreams = metadataStreams
        readsICY = metadata != nil && source.mayCarryICY
        readsSegmentTags = metadata != nil && source.info.formatName == "hls"
        if let format = context.pointee.iformat, format.pointee.flags & AVFMT_TS_DISCONT != 0 {
            continuity = TimestampContinuity(leadingStream: soundQueue?.streamIndex)
        }
        keptStreams = Set([soundQueue?.streamIndex, pictureQueue?.streamIndex].compactMap { $0 } + decoders.keys + metadataStreams)
        discardStreamsNotKept()
    }

    /// The streams read; every other is discarded inside the demuxer.
    private let keptStreams: Set<Int32>

    /// Discards, in the source's input, every stream not kept (and one whose reading
    /// stopped).
    private func discardStreamsNotKept() {
        let context = source.formatContext
        let stopped = Set([picturesStopRequested.load(ordering: .acquiring) ? pictureQueue?.streamIndex : nil,
                           soundStopRequested.load(ordering: .acquiring) ? soundQueue?.streamIndex : nil].compactMap { $0 })
        for index in 0..<Int(context.pointee.nb_streams) where !keptStreams.contains(Int32(index)) || stopped.contains(Int32(index)) {
            context.pointee.streams[index]?.pointee.discard = AVDISCARD_ALL
        }
    }

    /// The stretches between the jumps this input's times made so far, for an opening that
    /// continues its timeline (`continueTimeline(from:)`); nil for an input whose times never
    /// jump, or before any jump.
    var timestampEpochs: [TimestampContinuity.Epoch]? { epochRecord.withLockAnnotated { $0 } }

    /// Whether reading has met the input's end or given up on it, until the next seek.
    var hasReadToEnd: Bool { endReached.load(ordering: .acquiring) }

    /// Continues the timeline of an earlier opening of the same stream (a live stream opened
    /// again for a seek), given its `timestampEpochs`: a jump that opening closed up is
    /// closed up the same way here. Before `start()`, and before the seek to the opening's
    /// first position.
    ///
    /// With `near` (ns of item time), the first packets read take the epoch whose shift
    /// puts them nearest it, as after a seek there (an opening of a live stream after a jump
    /// another player closed up, counting as that player does).
    func continueTimeline(from epochs: [TimestampContinuity.Epoch], near target: Int64? = nil) {
        guard continuity != nil else { return }
        var continued = TimestampContinuity(leadingStream: soundQueue?.streamIndex, earlier: epochs)
        if let target { _ = continued.prepareSeek(to: target) }
        continuity = continued
        epochRecord.withLockAnnotated { $0 = epochs }
    }

    /// Whether any stream is read at all (a silent item shown nowhere reads none).
    var readsAnything: Bool { soundQueue != nil || pictureQueue != nil || !subtitleDecoders.isEmpty || !renditionReaders.isEmpty }

    /// Starts the demuxer's thread (and its subtitle renditions' readers).
    public func start() {
        for reader in renditionReaders { reader.start() }
        thread.start { [self] in run() }
    }

    /// Moves reading to the keyframe at or before `itemNanoseconds`; the queues get the
    /// marker of `serial`.
    public func seek(toItemNanoseconds itemNanoseconds: Int64, serial: Int) {
        pendingSeek.withLockAnnotated { $0 = (itemNanoseconds, serial) }
        wake.signal()
    }

    /// Stops reading the pictures (nobody shows them any more); the sound reads on.
    public func stopReadingPictures() {
        picturesStopRequested.store(true, ordering: .releasing)
        pictureQueue?.clear()
        wake.signal()
    }

    /// Stops reading the sound (a new sound track is read on a demuxer of its own); the
    /// pictures and subtitles read on. The sound's queue is emptied and fed no more.
    public func stopReadingSound() {
        soundStopRequested.store(true, ordering: .releasing)
        soundQueue?.clear()
        wake.signal()
    }

    /// Stops the thread and waits for it to end (bounded by FFmpeg's interrupt).
    public func stop() {
        stopRequested.store(true, ordering: .releasing)
        source.interrupt()
        wake.signal()
        for reader in renditionReaders { reader.stop() }
        thread.waitForEnd()
    }

    private var stopping: Bool { stopRequested.load(ordering: .acquiring) }

    /// The queues being fed.
    private var feeding: [PacketQueue] { [readsSound ? soundQueue : nil, readsPictures ? pictureQueue : nil].compactMap { $0 } }

    // MARK: - The demuxer's thread

    private func run() {
        guard let packet = av_packet_alloc() else {
            for queue in feeding { queue.push(.failure(.outputFailure(device: source.url, reason: "out of memory"))) }
            return
        }
        defer { var p: UnsafeMutablePointer<AVPacket>? = packet; av_packet_free(&p); dropReadAhead() }
        var consecutiveErrors = 0
        while !stopping {
            if readsPictures && picturesStopRequested.load(ordering: .acquiring) {
                readsPictures = false
                if let index = pictureQueue?.streamIndex { source.formatContext.pointee.streams[Int(index)]?.pointee.discard = AVDISCARD_ALL }
                pictureQueue?.clear()
            }
            if readsSound && soundStopRequested.load(ordering: .acquiring) {
                readsSound = false
                if let index = soundQueue?.streamIndex { source.formatContext.pointee.streams[Int(index)]?.pointee.discard = AVDISCARD_ALL }
                soundQueue?.clear()
            }
            if let seek = pendingSeek.withLockAnnotated({ value -> (itemNanoseconds: Int64, serial: Int)? in defer { value = nil }; return value }) {
                perform(seek: seek)
                consecutiveErrors = 0
            }
            let queues = feeding
            if atEnd || queues.isEmpty || queues.allSatisfy(\.isFull) {
                if !atEnd && !queues.isEmpty { source.noteHeldBack() }
                wake.wait(timeout: Self.idlePoll)
                continue
            }
            let status: Int32
            if readAhead.isEmpty {
                status = source.readFrame(packet)
            } else {
                var next: UnsafeMutablePointer<AVPacket>? = readAhead.removeFirst()
                av_packet_move_ref(packet, next)
                av_packet_free(&next)
                status = 0
            }
            if status == FFmpegCall.eof {
                // Pictures still held at the end keep their guess.
                continuity?.acceptGuess()
                releaseHeldPictures(continuity)
                atEnd = true
                for queue in queues { queue.push(.end) }
                continue
            }
            if status < 0 {
                if stopping { break }
                consecutiveErrors += 1
                if status == FFmpegCall.invalidData && consecutiveErrors < Self.maximumConsecutiveReadErrors {
                    ((readsSound ? soundQueue : nil) ?? queues.first)?.push(.damaged)
                    continue
                }
                atEnd = true
                let error = readFailure(status)
                for queue in queues { queue.push(.failure(error)) }
                continue
            }
            consecutiveErrors = 0
            if closeUp(packet) { continue }
            if readsICY { noteICY(after: packet) }
            if readsSegmentTags { noteSegmentTags(after: packet) }
            route(packet)
            av_packet_unref(packet)
        }
    }

    /// Adds the input's ICY block to the metadata when it changed, at the time of `packet`
    /// (the one just read, which the block came in or just before; earlier only by what
    /// the input read ahead of the demuxer).
    private func noteICY(after packet: UnsafeMutablePointer<AVPacket>) {
        guard let entries = icy.newFields(of: source), let time = itemTime(of: packet) else { return }
        metadataLog?.add(TimedMetadataGroup(time: time, entries: entries))
    }

    /// Adds the ID3 tags of the segments opened so far to the metadata (which keeps a group
    /// only where it differs from the one before: a stream repeats its tag in every
    /// segment). A tag that stamps its segment (packed audio) waits for a packet of the sound
    /// or the pictures stamped within `segmentTagReach` of it, and takes that packet's shift
    /// onto the item's closed-up timeline: the demuxer opens a segment before the packets
    /// before it are out, so across a splice the shift in force when the tag came is the
    /// stretch before's. The stamp's 33 bits are unwrapped to the packet's time. A tag with
    /// no stamp is placed at `packet`'s time.
    private func noteSegmentTags(after packet: UnsafeMutablePointer<AVPacket>) {
        for tag in source.takeSegmentTags() {
            let entries = TimedMetadataFormat.id3TextFrames(tag)
            guard !entries.isEmpty else { continue }
            if let stamp = TimedMetadataFormat.transportStreamTimestamp(inTag: tag) {
                if pendingSegmentTags.count >= Self.mostPendingSegmentTags { pendingSegmentTags.removeFirst() }
                pendingSegmentTags.append((av_rescale_q(stamp, Self.transportStreamBase, Self.nanosecondBase), entries))
            } else if let time = itemTime(of: packet) {
                metadataLog?.add(TimedMetadataGroup(time: max(time, .zero), entries: entries))
            }
        }
        let index = packet.pointee.stream_index
        guard !pendingSegmentTags.isEmpty, index == soundQueue?.streamIndex || index == pictureQueue?.streamIndex,
              index < Int32(source.formatContext.pointee.nb_streams), let stream = source.formatContext.pointee.streams[Int(index)] else { return }
        let base = stream.pointee.time_base
        let stamp = packet.pointee.pts != FFmpegCall.noPTS ? packet.pointee.pts : packet.pointee.dts
        guard stamp != FFmpegCall.noPTS, base.num > 0, base.den > 0 else { return }
        // The packet was moved by its stream's shift (`closeUp`): its own time is that less it.
        let shift = continuity?.shift(of: index) ?? 0
        let own = av_rescale_q(stamp, base, Self.nanosecondBase) &- shift
        let start = source.info.startTime.convertScale(1_000_000_000, method: .roundTowardNegativeInfinity).value
        pendingSegmentTags.removeAll { tag in
            let turns = ((Double(own) - Double(tag.nanoseconds)) / Double(Self.transportStreamWrapNanoseconds)).rounded()
            guard turns.magnitude < 16 else { return false }
            let unwrapped = tag.nanoseconds &+ Int64(turns) &* Self.transportStreamWrapNanoseconds
            guard (unwrapped &- own).magnitude <= UInt64(Self.segmentTagReachNanoseconds) else { return false }
            // FFmpeg 5.1 stamps a packed-audio stream's first two segments from the second's
            // tag (its demuxer reads the next segment's tag before the first's packets are
            // stamped), then jumps back a segment, which is closed up: the item starts where
            // its first sound is stamped, a segment after where its first tag says. A tag
            // before the item's start holds from the start.
            let time = CMTime(value: max(unwrapped &+ shift &- start, 0), timescale: HostTime.nanosecondTimescale)
            metadataLog?.add(TimedMetadataGroup(time: time, entries: tag.entries))
            return true
        }
    }

    /// Segment tags awaiting a packet near the time they stamp (ns, 33 bits of the 90 kHz
    /// clock), with their text frames.
    private var pendingSegmentTags: [(nanoseconds: Int64, entries: [TimedMetadataEntry])] = []
    /// The most segment tags awaiting their packets: a few segments' worth (the demuxer
    /// opens one segment ahead, two across a splice); a tag whose packets never come (a
    /// forged stamp) gives way to newer ones.
    static let mostPendingSegmentTags = 8
    /// How near a packet's own time a segment tag's stamp must be for the packet to place it
    /// (ns): a segment's length and more (they run seconds; FFmpeg's first stamps are a
    /// segment off), far short of any splice's jump.
    static let segmentTagReachNanoseconds: Int64 = 30_000_000_000
    /// The MPEG-TS clock's time base, on which a packed-audio segment's tag stamps it.
    static let transportStreamBase = AVRational(num: 1, den: 90_000)
    /// How long the MPEG-TS clock's 33 bits last before they wrap (ns): 2³³ ticks of 90 kHz,
    /// about 26.5 hours.
    static let transportStreamWrapNanoseconds: Int64 = (1 << 33) * 1_000_000_000 / 90_000

    /// The item time of `packet`'s presentation (its decoding time when it has none).
    private func itemTime(of packet: UnsafeMutablePointer<AVPacket>) -> CMTime? {
        let index = Int(packet.pointee.stream_index)
        guard index >= 0, index < Int(source.formatContext.pointee.nb_streams),
              let stream = source.formatContext.pointee.streams[index] else { return nil }
        var stamp = packet.pointee.pts
        if stamp == FFmpegCall.noPTS { stamp = packet.pointee.dts }
        let tb = stream.pointee.time_base
        guard stamp != FFmpegCall.noPTS, tb.num > 0, tb.den > 0 else { return nil }
        let time = CMTime(value: stamp, timescale: tb.den) * tb.num - source.info.startTime
        return time.isNumeric ? time : nil
    }

    /// Shifts `packet`'s times by its epoch's shift (`TimestampContinuity`): the sound's and
    /// the pictures' packets are watched for jumps, the sparse streams' follow them. Returns
    /// true when the packet was taken to be held back (a picture whose shift is a guess).
    private func closeUp(_ packet: UnsafeMutablePointer<AVPacket>) -> Bool {
        // Taken out for the call and put back, so that its dictionary is changed in place
        // rather than copied at every packet.
        guard var continuity = continuity.take() else { return false }
        defer { self.continuity = continuity }
        let index = packet.pointee.stream_index
        guard index >= 0, index < Int32(source.formatContext.pointee.nb_streams),
              let stream = source.formatContext.pointee.streams[Int(index)] else { return false }
        let base = stream.pointee.time_base
        guard base.num > 0, base.den > 0 else { return false }
        let noTime = FFmpegCall.noPTS
        let stamp = packet.pointee.dts != noTime ? packet.pointee.dts : packet.pointee.pts
        guard stamp != noTime else { return false }
        let isPicture = index == pictureQueue?.streamIndex
        let shift: Int64
        if isPicture || index == soundQueue?.streamIndex {
            let duration = packet.pointee.duration > 0 ? av_rescale_q(packet.pointee.duration, base, Self.nanosecondBase) : 0
            shift = continuity.shift(stream: index, at: av_rescale_q(stamp, base, Self.nanosecondBase), duration: duration)
        } else {
            shift = continuity.sparseShift
        }
        Self.move(packet, by: av_rescale_q(shift, Self.nanosecondBase, base))
        if continuity.revision != recordedRevision {
            recordedRevision = continuity.revision
            epochRecord.withLockAnnotated { $0 = continuity.epochs }
        }
        if isPicture, heldPictures.hold(packet, stream: index, shift: shift, continuity: &continuity) { return true }
        releaseHeldPictures(continuity)
        return false
    }

    /// Routes the held pictures, moved from the shift each was given to the one their
    /// stream takes now, once it is no longer a guess.
    private func releaseHeldPictures(_ continuity: TimestampContinuity?) {
        guard !heldPictures.isEmpty, let pictures = pictureQueue, let continuity,
              let stream = source.formatContext.pointee.streams[Int(pictures.streamIndex)] else { return }
        let base = stream.pointee.time_base
        let final = av_rescale_q(continuity.shift(of: pictures.streamIndex), Self.nanosecondBase, base)
        for (packet, given) in heldPictures.release(stream: pictures.streamIndex, continuity: continuity) {
            Self.move(packet.pointer, by: final &- av_rescale_q(given, Self.nanosecondBase, base))
            route(packet.pointer)
        }
    }

    /// Adds `ticks` to `packet`'s times, those it has.
    private static func move(_ packet: UnsafeMutablePointer<AVPacket>, by ticks: Int64) {
        guard ticks != 0 else { return }
        if packet.pointee.pts != FFmpegCall.noPTS { packet.pointee.pts &+= ticks }
        if packet.pointee.dts != FFmpegCall.noPTS { packet.pointee.dts &+= ticks }
    }

    /// Nanoseconds, as FFmpeg's rational time base.
    private static let nanosecondBase = AVRational(num: 1, den: 1_000_000_000)

    /// Hands `packet` to its stream's queue, or drops it.
    private func route(_ packet: UnsafeMutablePointer<AVPacket>) {
        let index = packet.pointee.stream_index
        if metadataStreams.contains(index) {
            if let data = packet.pointee.data, packet.pointee.size > 0, packet.pointee.size <= TimedMetadataFormat.longestTag,
               let time = itemTime(of: packet) {
                let entries = TimedMetadataFormat.id3TextFrames(inTimedPacket: Array(UnsafeBufferPointer(start: data, count: Int(packet.pointee.size))))
                metadataLog?.add(TimedMetadataGroup(time: time, entries: entries))
            }
            return
        }
        if let decoder = subtitleDecoders[index], let cues = subtitleCues {
            decoder.decode(packet, into: cues)
            return
        }
        if let queue = soundQueue, queue.streamIndex == index {
            if readsSound, let owned = OwnedPacket(movingFrom: packet) { queue.push(.packet(owned)) }
            return
        }
        guard readsPictures, let queue = pictureQueue, queue.streamIndex == index else { return }
        if skipsToKeyframe {
            guard packet.pointee.flags & AV_PKT_FLAG_KEY != 0 else {
                skippedPictures += 1
                return
            }
            skipsToKeyframe = false
            queue.push(.skipped(count: skippedPictures))
            skippedPictures = 0
        } else if queue.isFull, readsSound, let sound = soundQueue, !sound.isFull {
            // The pictures are behind and the sound wants data: the pictures give way.
            skipsToKeyframe = true
            skippedPictures = 1
            return
        }
        if let owned = OwnedPacket(movingFrom: packet) { queue.push(.packet(owned)) }
    }

    private func perform(seek: (itemNanoseconds: Int64, serial: Int)) {
        dropReadAhead()
        pendingSegmentTags.removeAll()
        atEnd = false
        skipsToKeyframe = false
        skippedPictures = 0
        heldPictures.removeAll()
        let start = source.info.startTime.convertScale(1_000_000, method: .roundTowardNegativeInfinity).value
        var itemNanoseconds = seek.itemNanoseconds
        if reopenSplicedPlaylist(at: itemNanoseconds) {
            for queue in feeding { queue.flush(serial: seek.serial) }
            for decoder in subtitleDecoders.values { decoder.flush() }
            return
        }
        if continuity != nil {
            // The item's timeline is the closed-up one. An MPEG-TS input seeks on its own
            // times, so the target is moved into them; FFmpeg's HLS demuxer seeks on the
            // playlist's durations, which run on as the closed-up times do.
            let first = source.info.startTime.convertScale(1_000_000_000, method: .roundTowardNegativeInfinity).value
            let own = (continuity?.prepareSeek(to: itemNanoseconds &+ first) ?? itemNanoseconds) &- first
            if source.info.formatName != "hls" { itemNanoseconds = own }
        }
        // A live HLS stream is not sought in: it is opened again at the segment that holds
        // the target (AVPlayer), and its decoders skip to the target from there. FFmpeg's HLS
        // demuxer refuses the seek, but only after libavformat has dropped the packets it
        // read ahead while probing: with pictures, most of a second of that segment, so the
        // stream started past its target.
        if !source.info.isLiveHLS {
            let target = source.seekTimestamp(itemNanoseconds: itemNanoseconds)
            let status = avformat_seek_file(source.formatContext, -1, Int64.min, target, target, 0)
            if status < 0 && target != start {
                // Inputs that cannot seek (pipes, some live streams) restart only from the top.
                _ = avformat_seek_file(source.formatContext, -1, Int64.min, start, start, 0)
                continuity?.restartFromTop()
            }
        }
        for queue in feeding { queue.flush(serial: seek.serial) }
        for decoder in subtitleDecoders.values { decoder.flush() }
    }

    /// A seek in an on-demand HLS stream spliced from several (`MediaSource.splicedPlaylist`)
    /// to item time `itemNanoseconds`, past its first splice (or back from a later opening):
    /// opens the input again at the segment that holds it, rather than seek. Returns whether
    /// it did; when it could not, the input stays as it was, and is sought in as any other.
    ///
    /// Why: FFmpeg's demuxer finds the segment by the playlist's durations and then skips
    /// every packet stamped before the target, so past a splice whose times go back it would
    /// skip everything to the end. The new input's segment start (`readToSegmentStart`)
    /// takes the epoch that puts it where the playlist places its segment
    /// (`TimestampContinuity.prepareSeek(to:placedAt:anchor:)`).
    private func reopenSplicedPlaylist(at itemNanoseconds: Int64) -> Bool {
        guard let playlist = source.splicedPlaylist, let splice = playlist.firstDiscontinuity else { return false }
        let seconds = Double(max(itemNanoseconds, 0)) / 1e9
        let segment = playlist.segment(holding: seconds)
        guard segment.index >= splice || source.reopenedAt != nil else { return false }
        // An opening that fails (the network, streams that differ after the splice) leaves
        // the input as it was, sought in as before: its reads then tell what is wrong.
        do { try source.reopen(fromSeconds: seconds) } catch { return false }
        discardStreamsNotKept()
        let first = source.info.startTime.convertScale(1_000_000_000, method: .roundTowardNegativeInfinity).value
        let anchor = readToSegmentStart()
        _ = continuity?.prepareSeek(to: itemNanoseconds &+ first, placedAt: Int64(segment.start * 1e9) &+ first, anchor: anchor)
        return true
    }

    /// How many packets an opening at a segment reads at most to find its start
    /// (`readToSegmentStart`): an HLS segment's first picture comes within its first few
    /// dozen packets, after a little sound at most.
    static let segmentStartSearchPackets = 256

    /// Reads the newly opened input up to the first packet of the stream that places its
    /// segments (`placingStream`), keeping what it read before then for the queues (read
    /// again first: `readAhead`); returns that packet's own presentation time (ns), or nil
    /// when none came. The same for every reader of the item, whatever streams it reads,
    /// so that its sound and its pictures stand on the same timeline when read apart.
    private func readToSegmentStart() -> Int64? {
        dropReadAhead()
        let context = source.formatContext
        guard let index = placingStream, index < Int32(context.pointee.nb_streams),
              let stream = context.pointee.streams[Int(index)] else { return nil }
        let base = stream.pointee.time_base
        guard base.num > 0, base.den > 0 else { return nil }
        // Read even when this reader does not decode it (the sound's reader, with the
        // pictures on a reader of their own).
        let discard = stream.pointee.discard
        stream.pointee.discard = AVDISCARD_DEFAULT
        defer { stream.pointee.discard = discard }
        for _ in 0..<Self.segmentStartSearchPackets {
            guard let packet = av_packet_alloc() else { return nil }
            var kept = false
            defer { if !kept { var freed: UnsafeMutablePointer<AVPacket>? = packet; av_packet_free(&freed) } }
            guard source.readFrame(packet) >= 0 else { return nil }
            let found = packet.pointee.stream_index == index
            let stamp = packet.pointee.pts != FFmpegCall.noPTS ? packet.pointee.pts : packet.pointee.dts
            if !found || discard != AVDISCARD_ALL {
                readAhead.append(packet)
                kept = true
            }
            if found { return stamp == FFmpegCall.noPTS ? nil : av_rescale_q(stamp, base, Self.nanosecondBase) }
        }
        return nil
    }

    /// The stream whose first packet after an opening at a segment places the segment: the
    /// item's pictures when it has them (an HLS segmenter starts each segment at a
    /// keyframe, and its durations are the pictures'), else its sound.
    private var placingStream: Int32? {
        (source.info.preferredVideoTrack ?? source.info.preferredAudioTrack).map { Int32($0.streamIndex) }
    }

    /// Packets read ahead of the queues (`readToSegmentStart`), taken before the input is
    /// read again.
    private var readAhead: [UnsafeMutablePointer<AVPacket>] = []

    /// Frees the packets read ahead (a seek leaves them behind).
    private func dropReadAhead() {
        for packet in readAhead {
            var freed: UnsafeMutablePointer<AVPacket>? = packet
            av_packet_free(&freed)
        }
        readAhead.removeAll()
    }

    private func readFailure(_ status: Int32) -> MediaError {
        if status == FFmpegCall.certificateRefused, let refusal = source.certificateRefusal { return refusal }
        if source.url.contains("://") && !source.url.hasPrefix("file://") {
            return .networkFailure(url: source.url, reason: FFmpegCall.message(status))
        }
        return .corruptData(url: source.url, reason: FFmpegCall.message(status))
    }
}
