import Foundation
import MediaClock
import MutexAnnotations
import Synchronization

/// One player's audio path: an output opened once, a ring, the render thread, and the
/// reader of the current item.
///
/// Contract: methods may be called from any thread but are meant to be driven by one owner
/// (the player) that serialises them; the engine guards its own fields with a lock that
/// the render thread never touches.
public final class PlaybackEngine: Sendable {
    /// Decoded audio held ahead of the device: two seconds absorbs a slow network read or a
    /// busy core without a stall, and is what a seek throws away at most.
    public static let readAhead: Duration = .seconds(2)

    public let spec: OutputSpec
    /// Maps the device's real host times onto the player's host clock.
    private let hostMapping: @Sendable (HostTime) -> HostTime
    /// Where the render thread records presentation times, when asked.
    public let capture: RenderCapture?
    /// What the engine has opened and started so far.
    private struct Parts {
        var output: (any AudioOutput)?
        var renderer: AudioRenderer?
        /// The current item's one demuxer, feeding its sound's reader and, when it was loaded
        /// with a display, its pictures' reader.
        var demuxer: ItemDemuxer?
        /// Items loaded so far: the number of the current one, carried by its blocks and pictures.
        var itemCount = 0
        /// The number of the item being heard (its successors have later ones).
        var currentNumber = 0
        var reader: AudioReader?
        /// What the current reader's events go to, for a reverse reader made later.
        var readerEvents: (@Sendable (AudioReaderEvent) -> Void)?
        /// The current item's sound played backwards, made at its first reverse run.
        var reverseReader: ReverseAudioReader?
        /// The current item's pictures played backwards, made at its first reverse run.
        var reverseVideoReader: ReverseVideoReader?
        var readerError: MediaError?
        /// The current item's pictures, when it has a video track and someone shows them.
        var videoReader: VideoReader?
        /// Whether the pictures' reader is fed by `demuxer` (else by a demuxer of its own).
        var videoSharesDemuxer = false
        /// The pictures' reader of the item's earlier opening while `videoReader` takes over
        /// from it (`reloadItem`): it reads on until then, and stops itself once taken over.
        var outgoingVideo: VideoReader?
        var videoError: MediaError?
        /// The items to be heard after the current one without a gap, in order: each one's
        /// reader is attached to the one before it and waits for its end.
        var successors: [Successor] = []
        /// Why a successor shows no pictures, by its number, until it becomes current.
        var successorVideoErrors: [Int: MediaError] = [:]
        /// Set by `shutdown`: an output opened after it is closed at once.
        var isShutDown = false
        /// Whether the output is the fallback `prepare` was given, `spec`'s having failed.
        var onFallback = false

        /// The current item's sound is read anew by `reader` from `demuxer` (another of its
        /// tracks or variants, `reloadSound`, `reloadItem`): the reverse reader, the
        /// successors and the error of the reading before go with it (the caller stops them).
        mutating func takeSound(demuxer: ItemDemuxer, reader: AudioReader, events: @escaping @Sendable (AudioReaderEvent) -> Void) {
            self.demuxer = demuxer
            self.reader = reader
            readerEvents = events
            readerError = nil
            reverseReader = nil
            successors = []
            successorVideoErrors = [:]
        }
    }
    private let parts = Mutex(Parts())

    /// A queued item's sound: its demuxer (reading ahead already) and its reader, waiting
    /// for the item before it to end; and, while pictures are shown, its pictures' reader,
    /// waiting for the pictures before them.
    struct Successor {
        let demuxer: ItemDemuxer
        let reader: AudioReader
        var pictures: VideoReader?
        /// The engine's number for the item (carried by its blocks).
        let number: Int
        /// The caller's name for it.
        let token: Int
        /// What its reader's events go to.
        let events: @Sendable (AudioReaderEvent) -> Void
    }
    /// Where readers and demuxers no longer wanted are stopped (it waits for their threads),
    /// so that a seek or an item's promotion, made under a caller's lock, never waits.
    private let retireQueue = DispatchQueue(label: "chorus.engine.retire")

    /// Decoded pictures of the current item, for whichever display shows them; nil only
    /// when memory ran out making it.
    public let videoQueue = VideoFrameQueue()
    /// Where item time stands on the host clock for the pictures, as the player publishes it.
    public let videoTimeline = Published(VideoTimeline(serial: 0, anchorHost: HostTime(nanoseconds: 0),
                                                       anchorItemNanoseconds: 0, rate: 0))
    /// Whether pictures are decoded at all: only while something shows them (a layer or a
    /// video output), since decoding them costs far more than the sound.
    private let videoWanted = Atomic<Bool>(false)

    /// An engine for `spec`. `hostMapping` converts the real CLOCK_MONOTONIC times devices
    /// report into the host clock the player uses (identity, unless the process simulates
    /// another machine's clock); `capture` records every period's presentation time.
    public init(spec: OutputSpec, hostMapping: @escaping @Sendable (HostTime) -> HostTime = { $0 },
                capture: RenderCapture? = nil) {
        self.spec = spec
        self.hostMapping = hostMapping
        self.capture = capture
    }

    deinit { shutdown() }

    /// The output's format, once open.
    public var format: AudioFormat? { parts.withLockAnnotated { $0.output?.format } }
    /// The output's name, once open.
    public var outputName: String { parts.withLockAnnotated { $0.output?.name } ?? spec.description }
    /// Whether frames are heard in real time (false when rendering to a file).
    public var isRealtime: Bool { parts.withLockAnnotated { $0.output?.isRealtime } ?? true }
    /// Whether the output open is the fallback, the asked-for one having failed to open.
    public var isOnFallback: Bool { parts.withLockAnnotated { $0.onFallback } }
    /// Device underruns recovered so far.
    public var underrunCount: Int { parts.withLockAnnotated { $0.output?.underrunCount } ?? 0 }

    /// Opens the output on first use (in `preferred` format, or as near as the device
    /// allows) and starts the render thread. Later calls return the open format. Blocks
    /// while the device opens (a sound server's round trips), but without the engine's lock:
    /// status, control and seeks from other threads go on meanwhile.
    ///
    /// `fallback`: an output to open instead when `spec`'s cannot be (an item without sound
    /// on a machine whose sound device is missing still keeps a timeline, on that output).
    @discardableResult
    public func prepare(preferred: AudioFormat, fallback: OutputSpec? = nil) throws(MediaError) -> AudioFormat {
        if let format = parts.withLockAnnotated({ $0.output?.format }) { return format }
        var candidate = spec.makeOutput()
        var onFallback = false
        do {
            try candidate.open(preferred: preferred)
        } catch {
            guard let fallback else { throw error }
            candidate = fallback.makeOutput()
            try candidate.open(preferred: preferred)
            onFallback = true
        }
        let ring = AudioRing(format: candidate.format, capacity: Self.readAhead)
        let renderer = AudioRenderer(output: candidate, ring: ring, hostMapping: hostMapping, capture: capture)
        enum Outcome: Sendable { case installed, alreadyOpen(AudioFormat), shutDown }
        let outcome = parts.withLockAnnotated { parts -> Outcome in
            if parts.isShutDown { return .shutDown }
            if let output = parts.output { return .alreadyOpen(output.format) }
            parts.output = candidate
            parts.renderer = renderer
            parts.onFallback = onFallback
            renderer.start()
            return .installed
        }
        switch outcome {
        case .installed:
            return candidate.format
        case .alreadyOpen(let format):
            candidate.close()
            return format
        case .shutDown:
            candidate.close()
            throw .outputFailure(device: spec.description, reason: "the player was closed")
        }
    }

    /// Makes the readers of `source` under `serial` from item frame `startFrame`: one
    /// demuxer (`ItemDemuxer`) feeding the sound's reader, into the ring, and, when pictures
    /// are wanted and the item has them, the pictures' reader. Any previous item's are
    /// stopped first. They start unless `start` is false (then `startReader()` starts them).
    /// The render thread stays idle until told to play.
    ///
    /// `forwardBuffer` (zero: the defaults) is how far ahead of the playhead to read: what the
    /// ring does not hold waits as packets. The item's text subtitles are decoded into
    /// `subtitles` when it is given, and its timed metadata into `metadata`.
    ///
    /// With `continuing`, `source` is the item loaded now opened again (a live stream, for a
    /// seek): a jump in its times that the earlier opening closed up is closed up the same
    /// way (`TimestampContinuity`), so the item's time runs on as it did. Otherwise, with
    /// `splices` (another player's `timelineSplices` for the same live stream, a group's
    /// leader's), the item counts as that player does: its first packets take the shift
    /// of the splice whose stretch they fall in (`TimelineSplice.itemNanoseconds`).
    public func load(source: MediaSource, serial: Int, startFrame: Int64, start: Bool = true, forwardBuffer: Duration = .zero,
                     subtitles: SubtitleCues? = nil, metadata: TimedMetadataLog? = nil, continuing: Bool = false,
                     splices: [TimelineSplice] = [],
                     onEvent: @escaping @Sendable (AudioReaderEvent) -> Void) throws(MediaError) {
        let earlierEpochs = continuing ? parts.withLockAnnotated({ $0.demuxer?.timestampEpochs }) : nil
        unload()
        let ring: AudioRing? = parts.withLockAnnotated { $0.renderer?.ring }
        guard let ring else { throw .outputFailure(device: spec.description, reason: "output not open") }
        source.resetInterrupt()
        parts.withLockAnnotated { $0.readerError = nil }
        let sampleRate = ring.format.sampleRate
        let item = parts.withLockAnnotated { parts -> Int in
            parts.itemCount += 1
            parts.currentNumber = parts.itemCount
            return parts.itemCount
        }
        let pictureQueue = videoWanted.load(ordering: .acquiring) && source.info.preferredVideoTrack != nil ? videoQueue : nil
        let wantsPictures = pictureQueue != nil
        let demuxer = ItemDemuxer(source: source, sound: true, pictures: wantsPictures, forwardBuffer: forwardBuffer, subtitles: subtitles,
                                  metadata: metadata)
        if let earlierEpochs {
            demuxer.continueTimeline(from: earlierEpochs)
        } else if !splices.isEmpty {
            demuxer.continueTimeline(from: TimestampContinuity.epochs(after: splices), near: source.openedAtNanoseconds(after: splices))
        }
        let events: @Sendable (AudioReaderEvent) -> Void = { [weak self] event in
            if case .failed(_, _, let error) = event { self?.parts.withLockAnnotated { $0.readerError = error } }
            onEvent(event)
        }
        let newReader = try AudioReader(demuxer: demuxer, ring: ring, serial: serial, startFrame: startFrame, item: item, onEvent: events)
        let startNanoseconds = Self.nanoseconds(ofFrame: startFrame, sampleRate: sampleRate)
        let pictures = pictureQueue.flatMap { queue in
            picturesReader(on: demuxer, serial: serial) { events throws(MediaError) in
                try VideoReader(demuxer: demuxer, queue: queue, serial: serial, startNanoseconds: startNanoseconds, item: item, onEvent: events)
            }
        }
        if startFrame > 0 {
            demuxer.seek(toItemNanoseconds: demuxerTarget(demuxer, frame: startFrame, sampleRate: sampleRate), serial: serial)
        }
        parts.withLockAnnotated { parts in
            parts.demuxer = demuxer
            parts.reader = newReader
            parts.readerEvents = events
            parts.videoReader = pictures
            parts.videoSharesDemuxer = pictures != nil
        }
        if start {
            if demuxer.readsAnything { demuxer.start() }
            newReader.start()
            pictures?.start()
        }
    }

    /// A pictures' reader on `demuxer`, the item's, made by `make` with the events it is to
    /// tell (a failure is kept for `lastVideoError`, then told the owner). A failure to make
    /// it costs the pictures, never the sound: the demuxer stops reading pictures, and the
    /// failure is kept and told likewise.
    private func picturesReader(on demuxer: ItemDemuxer, serial: Int,
                                _ make: (@escaping @Sendable (VideoReaderEvent) -> Void) throws(MediaError) -> VideoReader) -> VideoReader? {
        let handler = onVideoEvent
        do throws(MediaError) {
            return try make { [weak self] event in
                if case .failed(_, let error) = event { self?.parts.withLockAnnotated { $0.videoError = error } }
                handler?(event)
            }
        } catch {
            demuxer.stopReadingPictures()
            parts.withLockAnnotated { $0.videoError = error }
            handler?(.failed(serial: serial, error: error))
            return nil
        }
    }

    /// Where `demuxer` goes for a seek to item frame `frame`: the sound's pre-roll before it
    /// when it reads the sound (the pictures' keyframe lies at or before that too), else the
    /// pictures' target itself.
    private func demuxerTarget(_ demuxer: ItemDemuxer, frame: Int64, sampleRate: Int) -> Int64 {
        demuxer.soundQueue != nil
            ? AudioReader.demuxerTarget(forFrame: frame, sampleRate: sampleRate)
            : Self.nanoseconds(ofFrame: frame, sampleRate: sampleRate)
    }

    /// Item nanoseconds of item frame `frame` at `sampleRate`, saturating.
    private static func nanoseconds(ofFrame frame: Int64, sampleRate: Int) -> Int64 {
        guard sampleRate > 0 else { return 0 }
        let (scaled, overflow) = max(0, frame).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? Int64.max / 4 : scaled / Int64(sampleRate)
    }

    /// Makes a pictures' reader with a demuxer of its own, for an item whose sound is already
    /// under way. A failure here costs the pictures, never the sound: it is kept for
    /// `lastVideoError` and reported through `onEvent`.
    /// The item is opened as `url` was, for the sound `audioStream` within `variantLimit`, so
    /// that its pictures are those of the variant the sound is read from.
    private func loadVideo(url: String, audioStream: Int?, variantLimit: VariantLimit, networkActivity: NetworkActivity?, serial: Int, startFrame: Int64,
                           sampleRate: Int, item: Int, onEvent: (@Sendable (VideoReaderEvent) -> Void)?) {
        guard videoWanted.load(ordering: .acquiring), let queue = videoQueue else { return }
        let startNanoseconds = Self.nanoseconds(ofFrame: startFrame, sampleRate: sampleRate)
        do throws(MediaError) {
            let source = try MediaSource(url: url, audioStream: audioStream, variantLimit: variantLimit)
            source.networkActivity = networkActivity
            // The pictures run on the sound's timeline, across any splice its demuxer closed up.
            let demuxer = ItemDemuxer(source: source, sound: false, pictures: true)
            if let epochs = parts.withLockAnnotated({ $0.demuxer?.timestampEpochs }) { demuxer.continueTimeline(from: epochs) }
            let reader = try VideoReader(demuxer: demuxer, owned: true, queue: queue, serial: serial, startNanoseconds: startNanoseconds,
                                         item: item) { [weak self] event in
                if case .failed(_, let error) = event { self?.parts.withLockAnnotated { $0.videoError = error } }
                onEvent?(event)
            }
            if startNanoseconds > 0 { demuxer.seek(toItemNanoseconds: startNanoseconds, serial: serial) }
            parts.withLockAnnotated { parts in
                parts.videoReader = reader
                parts.videoSharesDemuxer = false
            }
            reader.start()
        } catch {
            parts.withLockAnnotated { $0.videoError = error }
            onEvent?(.failed(serial: serial, error: error))
        }
    }

    /// Reads the current item's sound anew from `source` (the item opened for another of its
    /// sound tracks), from item frame `startFrame` under `serial`, and leaves its pictures'
    /// reader reading: the pictures carry on under `serial`, where loading the item afresh
    /// would restart them from a keyframe (a moment's still, seconds of one with long groups
    /// of pictures). The item's demuxer, if it fed both, goes on for the pictures (and the
    /// subtitles) alone, and a new one reads the sound. With no pictures being read, this is
    /// `load`, `continuing` as there. Nothing new starts before `startReader()`.
    public func reloadSound(source: MediaSource, serial: Int, startFrame: Int64, forwardBuffer: Duration = .zero,
                            subtitles: SubtitleCues? = nil, metadata: TimedMetadataLog? = nil, continuing: Bool = false,
                            onEvent: @escaping @Sendable (AudioReaderEvent) -> Void) throws(MediaError) {
        let (video, shared, ring, item) = parts.withLockAnnotated { ($0.videoReader, $0.videoSharesDemuxer, $0.renderer?.ring, $0.currentNumber) }
        guard let video, let ring else {
            try load(source: source, serial: serial, startFrame: startFrame, start: false, forwardBuffer: forwardBuffer,
                     subtitles: subtitles, metadata: metadata, continuing: continuing, onEvent: onEvent)
            return
        }
        source.resetInterrupt()
        // The subtitles and metadata stay with a demuxer that reads on for the pictures.
        let demuxer = ItemDemuxer(source: source, sound: true, pictures: false, forwardBuffer: forwardBuffer,
                                  subtitles: shared ? nil : subtitles, metadata: shared ? nil : metadata)
        let events: @Sendable (AudioReaderEvent) -> Void = { [weak self] event in
            if case .failed(_, _, let error) = event { self?.parts.withLockAnnotated { $0.readerError = error } }
            onEvent(event)
        }
        let newReader = try AudioReader(demuxer: demuxer, ring: ring, serial: serial, startFrame: startFrame, item: item, onEvent: events)
        if startFrame > 0 {
            demuxer.seek(toItemNanoseconds: demuxerTarget(demuxer, frame: startFrame, sampleRate: ring.format.sampleRate), serial: serial)
        }
        readFirstSound(demuxer)
        let (oldDemuxer, oldReader, oldReverse, successors) = parts.withLockAnnotated { parts -> (ItemDemuxer?, AudioReader?, ReverseAudioReader?, [Successor]) in
            defer {
                parts.takeSound(demuxer: demuxer, reader: newReader, events: events)
                parts.videoSharesDemuxer = false
            }
            return (parts.demuxer, parts.reader, parts.reverseReader, parts.successors)
        }
        for successor in successors { Self.stop(successor) }
        takeOutgoingVideo()?.stop()
        if shared, let oldDemuxer {
            oldDemuxer.stopReadingSound()
            video.keepReading(on: oldDemuxer, serial: serial)
        } else {
            video.keepReading(on: nil, serial: serial)
            oldDemuxer?.stop()
        }
        oldReverse?.stop()
        oldReader?.stop()
    }

    /// Reads the current item anew from `source`, the item opened again for another of an
    /// HLS master playlist's variants: its sound from item frame `startFrame` under `serial`,
    /// as `reloadSound` does, and its pictures without a break. The pictures' reader of the
    /// earlier opening reads on, its pictures counted as `serial`'s, until a reader of the
    /// new one, started at the keyframe before `picturesFromNanoseconds`, has a picture
    /// after every picture queued (`VideoReader.init(takingOverFrom:...)`); from there the
    /// pictures are the new variant's, and the earlier reader stops. Loading the item afresh
    /// would instead drop the pictures queued and restart them from a keyframe, a still of
    /// as long as the new opening takes. With no pictures being read, or none in `source`,
    /// this is `reloadSound`. Nothing new starts before `startReader()`. With `continuing`,
    /// as for `load`: a live stream opened again runs on the timeline its earlier opening
    /// closed up, so that the two openings' pictures fall on one item time.
    public func reloadItem(source: MediaSource, serial: Int, startFrame: Int64, picturesFromNanoseconds: Int64,
                           forwardBuffer: Duration = .zero, subtitles: SubtitleCues? = nil, metadata: TimedMetadataLog? = nil,
                           continuing: Bool = false, onEvent: @escaping @Sendable (AudioReaderEvent) -> Void) throws(MediaError) {
        let (current, shared, ring, item) = parts.withLockAnnotated { ($0.videoReader, $0.videoSharesDemuxer, $0.renderer?.ring, $0.currentNumber) }
        guard let video = current, let ring, source.info.preferredVideoTrack != nil else {
            try reloadSound(source: source, serial: serial, startFrame: startFrame, forwardBuffer: forwardBuffer, subtitles: subtitles,
                            metadata: metadata, continuing: continuing, onEvent: onEvent)
            return
        }
        source.resetInterrupt()
        let demuxer = ItemDemuxer(source: source, sound: true, pictures: true, forwardBuffer: forwardBuffer, subtitles: subtitles,
                                  metadata: metadata)
        if continuing, let epochs = parts.withLockAnnotated({ $0.demuxer?.timestampEpochs }) { demuxer.continueTimeline(from: epochs) }
        let events: @Sendable (AudioReaderEvent) -> Void = { [weak self] event in
            if case .failed(_, _, let error) = event { self?.parts.withLockAnnotated { $0.readerError = error } }
            onEvent(event)
        }
        let newReader = try AudioReader(demuxer: demuxer, ring: ring, serial: serial, startFrame: startFrame, item: item, onEvent: events)
        // Without a new reader, the earlier opening's pictures read on, as for another sound alone.
        let pictures = picturesReader(on: demuxer, serial: serial) { events throws(MediaError) in
            try VideoReader(takingOverFrom: video, demuxer: demuxer, serial: serial, startNanoseconds: picturesFromNanoseconds,
                            item: item, onEvent: events)
        }
        let soundTarget = demuxerTarget(demuxer, frame: startFrame, sampleRate: ring.format.sampleRate)
        let target = pictures == nil ? soundTarget : min(soundTarget, picturesFromNanoseconds)
        if startFrame > 0 || target > 0 { demuxer.seek(toItemNanoseconds: max(0, target), serial: serial) }
        readFirstSound(demuxer)
        // The earlier opening's demuxer goes to its pictures' reader before that reader is
        // published as the one taken over from, so that a seek stopping it meanwhile stops
        // the demuxer too (`keepReading(on:serial:)`).
        let earlierDemuxer = parts.withLockAnnotated { $0.demuxer }
        if shared, let earlierDemuxer {
            earlierDemuxer.stopReadingSound()
            video.keepReading(on: earlierDemuxer, serial: serial)
        } else {
            video.keepReading(on: nil, serial: serial)
        }
        let (oldDemuxer, oldReader, oldReverse, oldReverseVideo, successors, earlierOutgoing) = parts.withLockAnnotated {
            parts -> (ItemDemuxer?, AudioReader?, ReverseAudioReader?, ReverseVideoReader?, [Successor], VideoReader?) in
            defer {
                parts.takeSound(demuxer: demuxer, reader: newReader, events: events)
                // Made again, for the new opening, at the next reverse run.
                parts.reverseVideoReader = pictures == nil ? parts.reverseVideoReader : nil
                parts.videoReader = pictures ?? video
                parts.videoSharesDemuxer = pictures != nil
                parts.outgoingVideo = pictures == nil ? nil : video
            }
            return (parts.demuxer, parts.reader, parts.reverseReader, pictures == nil ? nil : parts.reverseVideoReader, parts.successors,
                    parts.outgoingVideo)
        }
        for successor in successors { Self.stop(successor) }
        earlierOutgoing?.stop()
        if !shared { oldDemuxer?.stop() }
        oldReverse?.stop()
        oldReverseVideo?.stop()
        oldReader?.stop()
    }

    /// How long a new opening that follows on from the sound playing (`reloadSound`,
    /// `reloadItem`) is given to read its first sound before the old reader stops: long
    /// enough for a stream's segment fetched over a slow link, short enough that a stalled
    /// server holds the player's setup only briefly (the new sound then comes when it can,
    /// as it did before this wait).
    static let followOnReadPatience: Duration = .milliseconds(500)

    /// How much sound, in packets, a new opening that follows on reads before the old
    /// reader stops: the seek's pre-roll (`AudioReader.seekPreroll`), from which its reader
    /// decodes, and then as much as a device holds (`ALSAOutput.bufferDuration`), which the
    /// old sound can have been written ahead by when the device is told to follow on.
    static let followOnReadAhead: Duration = AudioReader.seekPreroll + ALSAOutput.bufferDuration

    /// Starts `demuxer`, a new opening's, and waits (at most `followOnReadPatience`) until
    /// it has read `followOnReadAhead` of sound, or all it can. Its first reads (for a live
    /// stream, a segment's fetch, perhaps two) then happen while the old reader still feeds
    /// the device, rather than after the device was told to follow on: the device holds only
    /// 60 to 100 ms, and a live stream's new opening came a period late without this. Its
    /// reader, started later, finds the packets.
    private func readFirstSound(_ demuxer: ItemDemuxer) {
        guard let sound = demuxer.soundQueue else { return }
        demuxer.start()
        let wanted = Self.followOnReadAhead.nanosecondsClamped
        let deadline = HostTime.now() + Self.followOnReadPatience
        while sound.queuedNanoseconds < wanted, !sound.isFull, !demuxer.hasReadToEnd, HostTime.now() < deadline {
            usleep(Self.firstSoundPollMicroseconds)
        }
    }

    /// How often `readFirstSound` looks, in microseconds: a tenth of a 10 ms period.
    static let firstSoundPollMicroseconds: UInt32 = 1_000

    /// Takes the pictures' reader being taken over from out of the parts, for the caller to stop.
    private func takeOutgoingVideo() -> VideoReader? {
        parts.withLockAnnotated { parts in
            defer { parts.outgoingVideo = nil }
            return parts.outgoingVideo
        }
    }

    /// Starts the pictures of the item already loaded (a display came after it), at item
    /// frame `startFrame` under `serial`. Blocks while the input opens.
    public func loadVideoForCurrentItem(serial: Int, startFrame: Int64) {
        let (reader, hasVideo, rate, item) = parts.withLockAnnotated { ($0.reader, $0.videoReader != nil, $0.output?.format.sampleRate, $0.currentNumber) }
        guard let reader, !hasVideo, let rate, reader.source.info.preferredVideoTrack != nil else { return }
        loadVideo(url: reader.source.url, audioStream: reader.source.info.preferredAudioTrack?.streamIndex,
                  variantLimit: reader.source.variantLimit, networkActivity: reader.source.networkActivity, serial: serial,
                  startFrame: startFrame, sampleRate: rate, item: item,
                  onEvent: onVideoEvent)
    }

    /// Stops the current item's pictures, and those of the items queued to follow it,
    /// keeping their sound.
    public func unloadVideo() {
        let (old, demuxer, backwards, following): (VideoReader?, ItemDemuxer?, ReverseVideoReader?, [Successor]) = parts.withLockAnnotated { parts in
            defer {
                parts.videoReader = nil
                parts.reverseVideoReader = nil
                for index in parts.successors.indices { parts.successors[index].pictures = nil }
            }
            return (parts.videoReader, parts.demuxer, parts.reverseVideoReader, parts.successors)
        }
        backwards?.stop()
        old?.stop()
        takeOutgoingVideo()?.stop()
        // The demuxers read on for the sound alone.
        demuxer?.stopReadingPictures()
        for successor in following where successor.pictures != nil {
            successor.pictures?.stop()
            successor.demuxer.stopReadingPictures()
        }
    }

    /// The player's host time of a real CLOCK_MONOTONIC instant (they differ only where the
    /// process simulates another machine's clock).
    public func playerHostTime(ofReal real: HostTime) -> HostTime { hostMapping(real) }

    /// Whether the pictures of items loaded from now on are decoded (a display or video
    /// output asks for them).
    public var decodesVideo: Bool {
        get { videoWanted.load(ordering: .acquiring) }
        set { videoWanted.store(newValue, ordering: .releasing) }
    }

    /// Events of the pictures' reader (the first picture, its end, a failure, damage).
    public var onVideoEvent: (@Sendable (VideoReaderEvent) -> Void)? {
        get { videoEventHandler.current }
        set { videoEventHandler.publish(newValue) }
    }
    private let videoEventHandler = Published<(@Sendable (VideoReaderEvent) -> Void)?>(nil)

    /// Why the current item shows no pictures, when its video track failed.
    public var lastVideoError: MediaError? { parts.withLockAnnotated { $0.videoError } }

    /// Where the times of the item read now jumped and were closed up (a live stream
    /// spliced from several), for another player opening the same stream to count as this
    /// one does (`load(...splices:)`); empty when they never jumped.
    public var timelineSplices: [TimelineSplice] {
        let epochs = parts.withLockAnnotated { $0.demuxer?.timestampEpochs } ?? []
        return epochs.dropFirst().map(\.splice)
    }

    /// The number of the item loaded last (its blocks and pictures carry it); 0 before any.
    public var currentItemNumber: Int { parts.withLockAnnotated { $0.currentNumber } }

    /// Whether the current item's pictures are being read.
    public var hasVideo: Bool { parts.withLockAnnotated { $0.videoReader != nil } }

    /// Starts the current reader, when `load` was told not to.
    public func startReader() {
        let (demuxer, audio, video) = parts.withLockAnnotated { ($0.demuxer, $0.reader, $0.videoReader) }
        if let demuxer, demuxer.readsAnything { demuxer.start() }
        audio?.start()
        video?.start()
    }

    /// Stops the current reader; its blocks become stale at the next serial.
    public func unload() {
        let (demuxer, old, oldVideo, successors, reverse, reverseVideo): (ItemDemuxer?, AudioReader?, VideoReader?, [Successor], ReverseAudioReader?, ReverseVideoReader?) = parts.withLockAnnotated { parts in
            defer {
                parts.demuxer = nil; parts.reader = nil; parts.videoReader = nil; parts.videoError = nil; parts.successors = []; parts.successorVideoErrors = [:]
                parts.reverseReader = nil; parts.reverseVideoReader = nil; parts.readerEvents = nil
            }
            return (parts.demuxer, parts.reader, parts.videoReader, parts.successors, parts.reverseReader, parts.reverseVideoReader)
        }
        takeOutgoingVideo()?.stop()
        for successor in successors { Self.stop(successor) }
        reverse?.stop()
        reverseVideo?.stop()
        // The demuxer first: its read may be waiting on the network, and stopping interrupts it.
        demuxer?.stop()
        old?.stop()
        oldVideo?.stop()
    }

    /// Moves the current reader to item frame `frame` under a new `serial`. A successor
    /// whose sound had begun to follow is dropped, with the ones after it (see
    /// `successorTokens`); one still waiting stays.
    ///
    /// `reverse`: the item plays backwards from `frame` to `reverseEnd` instead, its frames
    /// written reversed (`ReverseAudioReader`) and its pictures queued newest first
    /// (`ReverseVideoReader`) while the forward readers wait.
    public func seek(toFrame frame: Int64, serial: Int, reverse: Bool = false, reverseEnd: Int64 = 0) {
        let (demuxer, audio, video, rate, backwards, backwardsVideo) = parts.withLockAnnotated {
            ($0.demuxer, $0.reader, $0.videoReader, $0.output?.format.sampleRate, $0.reverseReader, $0.reverseVideoReader)
        }
        guard let rate, rate > 0 else { return }
        // A takeover under way is cut short: the new reader alone reads from the seek.
        if let outgoing = takeOutgoingVideo() { retireQueue.async { outgoing.stop() } }
        if reverse {
            audio?.park(serial: serial)
            if let begun = audio?.rearmAfterSeek() { dropSuccessors(from: begun) }
            reverseReader()?.seek(toFrame: frame, serial: serial, endFrame: reverseEnd)
            if video != nil || backwardsVideo != nil, let queue = videoQueue {
                queue.flush(toSerial: serial, backwards: true)
                video?.park(serial: serial)
                reverseVideoReader()?.seek(toItemNanoseconds: Self.nanoseconds(ofFrame: frame, sampleRate: rate), serial: serial,
                                           endNanoseconds: Self.nanoseconds(ofFrame: reverseEnd, sampleRate: rate))
            }
            return
        }
        backwards?.park(serial: serial)
        backwardsVideo?.park(serial: serial)
        // The readers first: each then drops what its queue holds until the demuxer's marker.
        audio?.seek(toFrame: frame, serial: serial)
        if let begun = audio?.rearmAfterSeek() { dropSuccessors(from: begun) }
        video?.seek(toItemNanoseconds: Self.nanoseconds(ofFrame: frame, sampleRate: rate), serial: serial)
        if let demuxer { demuxer.seek(toItemNanoseconds: demuxerTarget(demuxer, frame: frame, sampleRate: rate), serial: serial) }
    }

    /// The current item's reverse reader, made the first time it is wanted.
    private func reverseReader() -> ReverseAudioReader? {
        parts.withLockAnnotated { parts -> ReverseAudioReader? in
            if let existing = parts.reverseReader { return existing }
            guard let reader = parts.reader, let ring = parts.renderer?.ring, let events = parts.readerEvents else { return nil }
            let made = ReverseAudioReader(url: reader.source.url, audioStream: reader.source.info.preferredAudioTrack?.streamIndex,
                                          variantLimit: reader.source.variantLimit, ring: ring, item: parts.currentNumber,
                                          gain: reader.source.gain, gainTrackID: reader.source.info.preferredAudioTrack?.trackID,
                                          networkActivity: reader.source.networkActivity, onEvent: events)
            parts.reverseReader = made
            return made
        }
    }

    /// The current item's reverse pictures' reader, made the first time it is wanted.
    private func reverseVideoReader() -> ReverseVideoReader? {
        let handler = onVideoEvent
        return parts.withLockAnnotated { parts -> ReverseVideoReader? in
            if let existing = parts.reverseVideoReader { return existing }
            guard let video = parts.videoReader, let queue = videoQueue else { return nil }
            let made = ReverseVideoReader(url: video.source.url, audioStream: video.source.info.preferredAudioTrack?.streamIndex,
                                          variantLimit: video.source.variantLimit, queue: queue, item: parts.currentNumber,
                                          networkActivity: video.source.networkActivity) { event in handler?(event) }
            parts.reverseVideoReader = made
            return made
        }
    }

    /// Drops the successor whose sound had begun (`begun`) and the ones after it.
    private func dropSuccessors(from begun: AudioReader) {
        let dropped = parts.withLockAnnotated { parts -> [Successor] in
            guard let index = parts.successors.firstIndex(where: { $0.reader === begun }) else { return [] }
            defer { parts.successors.removeSubrange(index...) }
            return Array(parts.successors[index...])
        }
        retire(dropped)
    }

    // MARK: - Gapless succession

    /// Opens `source` to be heard right after the last item queued (the current one, or the
    /// last successor), with no gap: its demuxer starts reading ahead at once, and its reader
    /// starts at the end of the one before it, carrying the ring on under the same serial
    /// (`AudioReaderEvent.continued`). While pictures are decoded, its pictures' reader
    /// likewise queues them after the pictures of the item before (`picturesTurn`). Blocks
    /// while the decoders open. False when it came too late: the item before it had already
    /// ended the stream.
    ///
    /// `token` names the item for `successorTokens`; `forwardBuffer` is as for `load`.
    public func queueSuccessor(source: MediaSource, token: Int, forwardBuffer: Duration = .zero, subtitles: SubtitleCues? = nil,
                               metadata: TimedMetadataLog? = nil, onEvent: @escaping @Sendable (AudioReaderEvent) -> Void) throws(MediaError) -> Bool {
        let ring: AudioRing? = parts.withLockAnnotated { $0.renderer?.ring }
        guard let ring else { throw .outputFailure(device: spec.description, reason: "output not open") }
        source.resetInterrupt()
        let number = parts.withLockAnnotated { parts -> Int in
            parts.itemCount += 1
            return parts.itemCount
        }
        let wantsPictures = videoWanted.load(ordering: .acquiring) && source.info.preferredVideoTrack != nil && videoQueue != nil
        let demuxer = ItemDemuxer(source: source, sound: true, pictures: wantsPictures, forwardBuffer: forwardBuffer, subtitles: subtitles,
                                  metadata: metadata)
        let reader = try AudioReader(successorOf: demuxer, ring: ring, item: number, onEvent: onEvent)
        var successor = Successor(demuxer: demuxer, reader: reader, number: number, token: token, events: onEvent)
        if wantsPictures, let queue = videoQueue {
            successor.pictures = makeSuccessorPictures(demuxer: demuxer, queue: queue, number: number)
        }
        let attached = parts.withLockAnnotated { parts -> Bool in
            guard let before = parts.successors.last?.reader ?? parts.reader, before.attach(successor: reader) else { return false }
            parts.successors.append(successor)
            return true
        }
        guard attached else {
            successor.pictures?.stop()
            return false
        }
        demuxer.start()
        reader.start()
        successor.pictures?.start()
        return true
    }

    /// The pictures' reader of successor `number`, fed by its `demuxer`; nil (the pictures
    /// then come when it becomes current) when its decoder cannot be opened.
    private func makeSuccessorPictures(demuxer: ItemDemuxer, queue: VideoFrameQueue, number: Int) -> VideoReader? {
        let handler = onVideoEvent
        do throws(MediaError) {
            return try VideoReader(successorOf: demuxer, queue: queue, item: number,
                                   turn: { [weak self] in self?.picturesTurn(ofItem: number) }) { [weak self] event in
                if case .failed(_, let error) = event { self?.noteVideoFailure(error, ofItem: number) }
                handler?(event)
            }
        } catch {
            demuxer.stopReadingPictures()
            noteVideoFailure(error, ofItem: number)
            handler?(.failed(serial: 0, error: error))
            return nil
        }
    }

    /// Keeps why item `number`'s pictures failed: at once for the current item, at its
    /// promotion for a successor.
    private func noteVideoFailure(_ error: MediaError, ofItem number: Int) {
        parts.withLockAnnotated { parts in
            if parts.currentNumber == number { parts.videoError = error } else { parts.successorVideoErrors[number] = error }
        }
    }

    /// The serial under which successor `number`'s pictures may be queued, or nil while they
    /// must wait: its sound must have begun (the serial is the run's its sound carries on),
    /// and the pictures of the item before it must all be queued. An item before it whose
    /// pictures no reader queues (none shown when it was loaded, or its track failed) but
    /// which has them holds them back until this item is current. Once current, its turn
    /// has come: what the item before still queues is left over and dropped by the queue.
    private func picturesTurn(ofItem number: Int) -> Int? {
        parts.withLockAnnotated { parts -> Int? in
            if parts.currentNumber == number { return parts.reader?.begunSerial }
            guard let index = parts.successors.firstIndex(where: { $0.number == number }),
                  let serial = parts.successors[index].reader.begunSerial else { return nil }
            let before = index == 0 ? parts.videoReader : parts.successors[index - 1].pictures
            if let before { return before.hasFinished ? serial : nil }
            let beforeSource = index == 0 ? parts.reader?.source : parts.successors[index - 1].demuxer.source
            return beforeSource?.info.preferredVideoTrack == nil ? serial : nil
        }
    }

    /// Whether another item is being opened to follow the last one queued (the current one,
    /// or the last successor): while one is, that reader waits at its end for it rather than
    /// end the stream (see `AudioReader.expectSuccessor`). Withdraw it when none will come.
    public func expectSuccessor(_ expected: Bool) {
        parts.withLockAnnotated { $0.successors.last?.reader ?? $0.reader }?.expectSuccessor(expected)
    }

    /// The engine's numbers (`VideoFrameInfo.item`) of the item being heard and of the first
    /// one queued to follow it, for a timeline of the pictures (`VideoItems`).
    public var itemNumbers: (current: Int, next: Int?) {
        parts.withLockAnnotated { ($0.currentNumber, $0.successors.first?.number) }
    }

    /// The tokens of the items queued to follow the current one, in order.
    public var successorTokens: [Int] { parts.withLockAnnotated { $0.successors.map(\.token) } }

    /// Drops every successor from the first whose token is not in `keeping` on: those
    /// that have not begun are detached and stopped; one that had begun cannot be taken out
    /// of the ring, so the caller seeks (which drops it) instead. Returns the tokens left.
    @discardableResult
    public func dropSuccessors(keepingPrefix count: Int) -> [Int] {
        let dropped = parts.withLockAnnotated { parts -> [Successor] in
            let keep = min(max(0, count), parts.successors.count)
            guard keep < parts.successors.count else { return [] }
            let before = keep == 0 ? parts.reader : parts.successors[keep - 1].reader
            guard before?.detachUnbegunSuccessor() != nil else { return [] }
            defer { parts.successors.removeSubrange(keep...) }
            return Array(parts.successors[keep...])
        }
        retire(dropped)
        return successorTokens
    }

    /// Whether the successor at `index` has begun: its sound is in the ring.
    public func successorHasBegun(at index: Int) -> Bool {
        parts.withLockAnnotated { parts in index < parts.successors.count && parts.successors[index].reader.hasBegun }
    }

    /// The first successor becomes the current item (its sound is being heard): the item
    /// before it is stopped in the background. Returns its token, or nil when there is none.
    @discardableResult
    public func promoteSuccessor() -> Int? {
        let promoted = parts.withLockAnnotated { parts -> (Successor, ItemDemuxer?, AudioReader?, VideoReader?, ReverseAudioReader?, ReverseVideoReader?)? in
            guard !parts.successors.isEmpty else { return nil }
            let next = parts.successors.removeFirst()
            defer {
                parts.demuxer = next.demuxer
                parts.reader = next.reader
                parts.readerEvents = next.events
                parts.reverseReader = nil
                parts.reverseVideoReader = nil
                parts.videoReader = next.pictures
                parts.videoSharesDemuxer = next.pictures != nil
                parts.videoError = parts.successorVideoErrors.removeValue(forKey: next.number)
                parts.readerError = nil
                parts.currentNumber = next.number
            }
            return (next, parts.demuxer, parts.reader, parts.videoReader, parts.reverseReader, parts.reverseVideoReader)
        }
        guard let (next, demuxer, reader, video, reverse, reverseVideo) = promoted else { return nil }
        let outgoing = takeOutgoingVideo()
        retireQueue.async {
            outgoing?.stop()
            demuxer?.stop()
            reader?.stop()
            video?.stop()
            reverse?.stop()
            reverseVideo?.stop()
        }
        return next.token
    }

    private func retire(_ successors: [Successor]) {
        guard !successors.isEmpty else { return }
        retireQueue.async { for successor in successors { Self.stop(successor) } }
    }

    private static func stop(_ successor: Successor) {
        successor.pictures?.stop()
        successor.demuxer.stop()
        successor.reader.stop()
    }

    /// Makes the render thread's pitch-keeping stage for `mode` ahead of its use, on the
    /// calling thread (a control asking for one made none yet makes it as it is posted).
    public func preparePitchKeeping(_ mode: PitchMode) {
        guard mode != .varispeed else { return }
        parts.withLockAnnotated { $0.renderer }?.prepareKeeper(mode)
    }

    /// Changes what the render thread does.
    public func render(_ change: (inout RenderControl) -> Void) {
        parts.withLockAnnotated { $0.renderer }?.update(change)
    }

    /// Sound read ahead but not yet decoded: the duration of the packets in the sound's queue.
    public var queuedPacketDuration: Duration {
        .nanoseconds(parts.withLockAnnotated { $0.demuxer }?.soundQueue?.queuedNanoseconds ?? 0)
    }

    /// Frames the ring holds when full.
    public var ringCapacityFrames: Int {
        parts.withLockAnnotated { $0.renderer }.map { $0.ring.blockCount * AudioRing.framesPerBlock } ?? 0
    }

    /// Frames decoded and waiting in the ring.
    public var queuedFrames: Int {
        parts.withLockAnnotated { $0.renderer }.map { $0.ring.queuedBlocks * AudioRing.framesPerBlock } ?? 0
    }

    /// The error the current reader stopped on, if it failed.
    public var lastReaderError: MediaError? { parts.withLockAnnotated { $0.readerError } }

    /// The control last posted to the render thread.
    public var currentControl: RenderControl? { parts.withLockAnnotated { $0.renderer }?.currentControl }

    /// The render thread's latest report.
    public var status: RenderStatus { parts.withLockAnnotated { $0.renderer }?.currentStatus ?? RenderStatus() }

    /// Stops reading and rendering and closes the output.
    public func shutdown() {
        unload()
        let (oldRenderer, oldOutput): (AudioRenderer?, (any AudioOutput)?) = parts.withLockAnnotated { parts in
            defer { parts.renderer = nil; parts.output = nil; parts.isShutDown = true }
            return (parts.renderer, parts.output)
        }
        oldRenderer?.stop()
        oldOutput?.close()
        capture?.close()
    }
}
