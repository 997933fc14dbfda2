import Foundation
import MediaClock
import Synchronization
import MutexAnnotations
internal import CFFmpeg

/// What a reader tells its owner. Delivered on the reader's own thread.
public enum AudioReaderEvent: Sendable, Equatable {
    /// The first block of `serial` is in the ring; it starts at `itemFrame`.
    case ready(serial: Int, itemFrame: Int64)
    /// Decoding of `serial` reached the end of the input at `itemFrame`.
    case decodedToEnd(serial: Int, itemFrame: Int64)
    /// Reading stopped for good: the input failed at `itemFrame`.
    case failed(serial: Int, itemFrame: Int64, error: MediaError)
    /// Damaged data was skipped; `count` is the running total of damaged packets.
    case damaged(count: Int)
    /// Decoding of `serial` reached the end of the input at `itemFrame`, and the next item's
    /// reader (its successor) carries the ring on from there under the same serial, its
    /// frames numbered on from this item's: the two are heard with no gap between them.
    case continued(serial: Int, itemFrame: Int64)
}

/// Whether a reader's end goes on into a successor's sound (gapless) or ends the stream.
/// Guarded by the reader's lock; the reader's thread reads it as it reaches the end, the
/// engine's callers change it.
private struct Handoff {
    /// The reader that carries the ring on at this one's end.
    var successor: AudioReader?
    /// This serial's end has been written (a marker) or handed over: a successor given now
    /// would never be reached.
    var ended = false
    /// The successor was started: its sound follows this one's in the ring.
    var handedOver = false
    /// A successor is being opened: at the end, wait for it rather than end the stream.
    var expecting = false
}

/// What a reader does at the end of its input.
private enum EndAction {
    case handOver(AudioReader)
    case end
    /// A successor is on its way (or a seek is): ask again.
    case wait
}

/// The producer of one item's PCM: decode the sound's packets, which the item's
/// `ItemDemuxer` queues, and convert them on a thread of its own into an `AudioRing`,
/// following seek commands.
///
/// Contract: `start()` once; `seek` and `stop` from any thread. Events arrive on the reader's
/// thread and must not block it for long. A seek reaches the demuxer separately (the
/// engine sends it to both); the reader drops what its queue holds until the demuxer's
/// marker of that seek.
// @unchecked: the vars (read position, serial, flags) and the decoder are the reader
// thread's alone once `start()` has begun it (`init` sets them before); other threads reach
// it only through `pendingSeek` (a Mutex), the atomics and the wake signal.
public final class AudioReader: @unchecked Sendable {
    /// How far before a seek target decoding starts, so codecs that need earlier packets to
    /// rebuild their state (MP3's bit reservoir, AAC's overlap, Opus's 80 ms pre-roll) give
    /// exact samples at the target. The extra output is decoded and dropped.
    public static let seekPreroll: Duration = .milliseconds(200)
    /// How long the reader sleeps when the ring is full or it has nothing to do; it is also
    /// woken at once by every command.
    static let idlePoll: Duration = .milliseconds(5)
    /// A file that ends more than this short of its declared duration is reported as
    /// truncated. Generous, because durations of VBR files without an index are estimates.
    static let truncationSlack: Duration = .seconds(1)
    /// ...or more than this fraction of its declared duration short, whichever is larger.
    static let truncationSlackFraction = 0.02

    /// The item (read by its demuxer, not by the reader).
    public let source: MediaSource
    public let ring: AudioRing
    /// The track whose curve of the item's audio mix applies to the sound read; nil without sound.
    private let gainTrackID: Int32?
    /// The sound's packets; nil for a silent item.
    private let packets: PacketQueue?
    /// The demuxer this reader started and stops itself; nil when it shares the item's.
    private let ownDemuxer: ItemDemuxer?
    /// Nil for an item with pictures and no sound: then the reader writes silence for the
    /// item's length, so its timeline (the clock, seeks, rates, a group's alignment) runs
    /// exactly as for any item, on the output's clock.
    private let decoder: AudioDecoder?
    /// Where a silent item ends, in item frames at the ring's rate.
    private let silentEndFrame: Int64
    /// Where the sound ends by the container's own account, when the codec's last packet
    /// carries padding that the decoder does not trim itself (AAC in MP4: the edit list
    /// gives the length, and FFmpeg drops the encoder's priming but not the padding).
    private let trimmedEnd: Int64?
    private let onEvent: @Sendable (AudioReaderEvent) -> Void
    private let pendingSeek = Mutex<(frame: Int64, serial: Int)?>(nil)
    private let handoff = Mutex(Handoff())
    /// A successor's start: the serial and the frame offset its blocks carry on with,
    /// set once by the reader before it (`begin`).
    private let beginning = Mutex<(serial: Int, offset: Int64)?>(nil)
    private let stopRequested = Atomic<Bool>(false)
    /// The queue's signal (a packet came, a seek, a stop), or a signal of its own when silent.
    private let wake: WakeSignal
    private let thread = ReaderThread(name: "chorus.reader")
    /// Drops what the queue held from before the latest seek.
    private var gate = SeekMarkerGate()

    private var serial: Int
    /// The item's number, carried by every block.
    private let item: Int
    /// Item frame of the next converted sample, or nil until a decoded timestamp sets it.
    private var nextFrame: Int64?
    /// Output before this item frame is dropped (the seek target).
    private var discardBefore: Int64
    private var announcedReady = false
    /// A successor waits, decoding nothing, until the reader before it hands over the ring.
    private var waitingForHandover: Bool
    /// Added to every block's item frame: where this item's frame 0 falls in the run of
    /// items joined gaplessly under one serial (0 after any seek).
    private var frameOffset: Int64 = 0
    private var atEnd = false
    private var damagedPackets = 0

    /// Opens the decoder for the source's preferred audio track, converting to `ring.format`,
    /// fed from `demuxer`'s sound queue. Playback starts at item frame `startFrame` under seek
    /// serial `serial` (the demuxer is sent there by the engine).
    convenience init(demuxer: ItemDemuxer, ring: AudioRing, serial: Int, startFrame: Int64, item: Int,
         onEvent: @escaping @Sendable (AudioReaderEvent) -> Void) throws(MediaError) {
        try self.init(demuxer: demuxer, owned: false, ring: ring, serial: serial, startFrame: startFrame, item: item, onEvent: onEvent)
    }

    /// A successor: the reader of the item to be heard right after another's (see
    /// `attach(successor:)`), from its start, fed from `demuxer`'s sound queue. Its thread,
    /// once started, waits for the reader before it to reach its end.
    convenience init(successorOf demuxer: ItemDemuxer, ring: AudioRing, item: Int,
                     onEvent: @escaping @Sendable (AudioReaderEvent) -> Void) throws(MediaError) {
        try self.init(demuxer: demuxer, owned: false, ring: ring, serial: 0, startFrame: 0, item: item, onEvent: onEvent)
        waitingForHandover = true
    }

    /// A reader of `source`'s sound alone, with a demuxer of its own that it seeks, starts
    /// and stops itself (for a decoder on its own, as `chorus-bench decode` runs it).
    public convenience init(source: MediaSource, ring: AudioRing, serial: Int, startFrame: Int64,
                            onEvent: @escaping @Sendable (AudioReaderEvent) -> Void) throws(MediaError) {
        let demuxer = ItemDemuxer(source: source, sound: true, pictures: false)
        try self.init(demuxer: demuxer, owned: true, ring: ring, serial: serial, startFrame: startFrame, item: 0, onEvent: onEvent)
        if startFrame > 0 {
            demuxer.seek(toItemNanoseconds: Self.demuxerTarget(forFrame: startFrame, sampleRate: ring.format.sampleRate), serial: serial)
        }
    }

    private init(demuxer: ItemDemuxer, owned: Bool, ring: AudioRing, serial: Int, startFrame: Int64, item: Int,
                 onEvent: @escaping @Sendable (AudioReaderEvent) -> Void) throws(MediaError) {
        let source = demuxer.source
        self.item = item
        waitingForHandover = false
        ownDemuxer = owned ? demuxer : nil
        self.source = source
        self.ring = ring
        self.onEvent = onEvent
        self.serial = serial
        gainTrackID = source.info.preferredAudioTrack?.trackID
        packets = demuxer.soundQueue
        wake = demuxer.soundQueue?.consumerSignal ?? WakeSignal()
        if let track = source.info.preferredAudioTrack {
            guard let queue = demuxer.soundQueue, queue.streamIndex == Int32(track.streamIndex) else {
                throw .unsupportedFormat(url: source.url, reason: "the sound's stream is not demuxed")
            }
            decoder = try AudioDecoder(source: source, streamIndex: Int32(track.streamIndex), output: ring.format)
            silentEndFrame = 0
            trimmedEnd = Self.containerEnd(of: track, in: source.info, sampleRate: ring.format.sampleRate)
        } else if let video = source.info.preferredVideoTrack {
            decoder = nil
            let length = source.info.duration.isNumeric ? source.info.duration
                : (video.timeRange.isValid ? video.timeRange.duration : .invalid)
            guard length.isNumeric, length > .zero else {
                throw .unsupportedFormat(url: source.url, reason: "a video without sound and without a known length")
            }
            let frames = length.convertScale(Int32(ring.format.sampleRate), method: .roundHalfAwayFromZero)
            silentEndFrame = frames.isNumeric ? frames.value : 0
            trimmedEnd = nil
        } else {
            throw .noPlayableTrack(url: source.url)
        }
        discardBefore = startFrame
        if startFrame > 0 {
            pendingSeek.withLockAnnotated { $0 = (startFrame, serial) }
        } else {
            nextFrame = nil
        }
    }

    /// Starts the reader thread (and its own demuxer's).
    public func start() {
        ownDemuxer?.start()
        thread.start { [self] in run() }
    }

    /// Moves reading to item frame `frame`; blocks produced after this carry `serial`.
    public func seek(toFrame frame: Int64, serial: Int) {
        pendingSeek.withLockAnnotated { $0 = (frame, serial) }
        wake.signal()
        ownDemuxer?.seek(toItemNanoseconds: Self.demuxerTarget(forFrame: frame, sampleRate: ring.format.sampleRate), serial: serial)
    }

    /// Stops writing, as for a seek to `serial` that reads nothing (the item plays backwards,
    /// and a `ReverseAudioReader` has the ring); a later `seek` resumes.
    public func park(serial: Int) {
        pendingSeek.withLockAnnotated { $0 = (Self.parkedFrame, serial) }
        wake.signal()
    }

    /// The seek target that parks the reader.
    private static let parkedFrame = Int64.min

    /// Stops the thread and waits for it to finish. After it returns the ring may be given
    /// to another reader.
    public func stop() {
        stopRequested.store(true, ordering: .releasing)
        wake.signal()
        thread.waitForEnd()
        ownDemuxer?.stop()
    }

    private var stopping: Bool { stopRequested.load(ordering: .acquiring) }

    // MARK: - Gapless succession

    /// Gives this reader a successor: at the end of its input, instead of ending the
    /// stream, it starts `successor` on the same serial with frames numbered on from its
    /// own, so the two items are heard joined, sample to sample. False when it is too late
    /// (this serial's end was already written or handed over) or a successor is set: the
    /// caller keeps `successor` and stops it.
    public func attach(successor: AudioReader) -> Bool {
        let attached = handoff.withLockAnnotated { handoff in
            guard !handoff.ended, handoff.successor == nil else { return false }
            handoff.successor = successor
            return true
        }
        if attached { wake.signal() }
        return attached
    }

    /// Whether a successor is being opened: while one is, the reader waits at its end for it
    /// (`attach(successor:)`) instead of ending the stream, so an item shorter than the ring
    /// (decoded to its end before the next is open) still joins the next without a gap.
    /// Withdrawn, a reader waiting at its end ends the stream.
    public func expectSuccessor(_ expected: Bool) {
        handoff.withLockAnnotated { $0.expecting = expected }
        wake.signal()
    }

    /// Takes the successor away, if it has not begun; returns it (the caller stops it).
    public func detachUnbegunSuccessor() -> AudioReader? {
        handoff.withLockAnnotated { handoff in
            guard !handoff.handedOver, let successor = handoff.successor else { return nil }
            handoff.successor = nil
            return successor
        }
    }

    /// For a seek (sent first, with `seek`): this reader's end is to come again, so a
    /// successor may be attached again. A successor that had begun holds blocks of the old
    /// serial only; it is returned for the caller to stop. One that had not stays.
    public func rearmAfterSeek() -> AudioReader? {
        handoff.withLockAnnotated { handoff in
            handoff.ended = false
            guard handoff.handedOver else { return nil }
            handoff.handedOver = false
            defer { handoff.successor = nil }
            return handoff.successor
        }
    }

    /// Whether this reader, a successor, has been started by the one before it.
    public var hasBegun: Bool { beginning.withLockAnnotated { $0 != nil } }

    /// The serial this reader, a successor, carries the ring on under, once it has begun.
    public var begunSerial: Int? { beginning.withLockAnnotated { $0?.serial } }

    /// The reader before this one reached its end: go on from there, under `serial`, with
    /// item frames offset by `offset`.
    private func begin(serial: Int, offset: Int64) {
        beginning.withLockAnnotated { $0 = (serial, offset) }
        wake.signal()
    }

    /// On the reader's thread, as it reaches the end: the successor to start, if there is
    /// one and no seek is on its way (a seek makes this end stale); either way this
    /// serial's end is settled.
    private func endAction() -> EndAction {
        handoff.withLockAnnotated { handoff in
            guard pendingSeekIsEmpty else { return .wait }
            if let successor = handoff.successor {
                handoff.ended = true
                handoff.handedOver = true
                return .handOver(successor)
            }
            if handoff.expecting { return .wait }
            handoff.ended = true
            return .end
        }
    }

    /// A successor's wait for its turn; false when stopped first.
    private func awaitHandover() -> Bool {
        guard waitingForHandover else { return true }
        while !stopping {
            if let start = beginning.withLockAnnotated({ $0 }) {
                serial = start.serial
                frameOffset = start.offset
                waitingForHandover = false
                return true
            }
            wake.wait(timeout: Self.idlePoll)
        }
        return false
    }

    // MARK: - The reader thread

    private func run() {
        guard awaitHandover() else { return }
        guard let decoder, let packets else {
            runSilence()
            return
        }
        while !stopping {
            if let seek = pendingSeek.withLockAnnotated({ value -> (frame: Int64, serial: Int)? in defer { value = nil }; return value }) {
                perform(seek: seek)
            }
            if atEnd {
                wake.wait(timeout: Self.idlePoll)
                continue
            }
            guard let taken = packets.take() else {
                wake.wait(timeout: Self.idlePoll)
                continue
            }
            guard let entry = gate.admit(taken) else { continue }
            switch entry {
            case .packet(let packet):
                let sent = sendRetrying({ decoder.send(packet.pointer) }, receiveAll: receiveAll,
                                        shouldGiveUp: { stopping || !pendingSeekIsEmpty })
                if sent < 0 && sent != FFmpegCall.again {
                    damagedPackets += 1
                    onEvent(.damaged(count: damagedPackets))
                    continue
                }
                receiveAll()
            case .end:
                drain()
                finish(failure: nil)
            case .failure(let error):
                drain()
                finish(failure: error)
            case .damaged:
                damagedPackets += 1
                onEvent(.damaged(count: damagedPackets))
            case .flush, .skipped:
                continue
            }
        }
    }

    /// The silent item's loop: blocks of zeros from the current position to its end.
    private func runSilence() {
        let channels = ring.format.channels
        while !stopping {
            if let seek = pendingSeek.withLockAnnotated({ value -> (frame: Int64, serial: Int)? in defer { value = nil }; return value }) {
                serial = seek.serial
                frameOffset = 0
                announcedReady = false
                atEnd = seek.frame == Self.parkedFrame
                nextFrame = min(max(0, seek.frame), silentEndFrame)
            }
            if atEnd {
                wake.wait(timeout: Self.idlePoll)
                continue
            }
            var position = nextFrame ?? discardBefore
            if position >= silentEndFrame {
                nextFrame = silentEndFrame
                finish(failure: nil)
                continue
            }
            guard let block = waitForSpace() else { continue }
            let count = Int(min(Int64(AudioRing.framesPerBlock), silentEndFrame - position))
            block.update(repeating: 0, count: count * channels)
            ring.commitBlock(AudioBlockHeader(serial: serial, itemFrame: position + frameOffset, frameCount: count, kind: .samples, item: item))
            if !announcedReady {
                announcedReady = true
                onEvent(.ready(serial: serial, itemFrame: position))
            }
            position += Int64(count)
            nextFrame = position
        }
    }

    private func perform(seek: (frame: Int64, serial: Int)) {
        if seek.frame == Self.parkedFrame {
            // Nothing to read until the next seek, whose marker drops what the queue holds.
            serial = seek.serial
            atEnd = true
            return
        }
        serial = seek.serial
        frameOffset = 0
        discardBefore = seek.frame
        announcedReady = false
        atEnd = false
        nextFrame = nil
        gate.awaitMarker(ofSerial: seek.serial)
        decoder?.flush()
    }

    /// Where the demuxer goes for a seek of the sound to item frame `frame` at `sampleRate`:
    /// `seekPreroll` before it, so codecs that need earlier packets to rebuild their state
    /// give exact samples at the target.
    static func demuxerTarget(forFrame frame: Int64, sampleRate: Int) -> Int64 {
        guard sampleRate > 0 else { return 0 }
        let (scaled, overflowed) = max(0, frame).multipliedReportingOverflow(by: 1_000_000_000)
        // Overflow-safe: a frame past any real item's end seeks to the end.
        let target = overflowed ? Int64.max / 4 : scaled / Int64(sampleRate)
        let preroll = Int64(seekPreroll.components.seconds) * 1_000_000_000 + seekPreroll.components.attoseconds / 1_000_000_000
        // Not bounded at 0: an encoder's priming packets come before the item's time 0 (an
        // MP4's AAC, at -1024 samples), and a seek near the start must land on them, or the
        // first frames are decoded without the packet their overlap needs.
        return target - preroll
    }

    private func drain() {
        _ = decoder?.send(nil)
        receiveAll()
    }

    private func receiveAll() {
        while !stopping, pendingSeekIsEmpty, let result = decoder?.receive() {
            switch result {
            case .failure:
                damagedPackets += 1
                onEvent(.damaged(count: damagedPackets))
            case .success(let decoded):
                deliver(decoded)
            }
        }
    }

    private var pendingSeekIsEmpty: Bool { pendingSeek.withLockAnnotated { $0 == nil } }

    /// The item frame a stream timestamp stands for at the output rate.
    private func itemFrame(forPTS pts: Int64) -> Int64 {
        guard let tb = decoder?.timeBase else { return 0 }
        guard tb.den > 0 else { return 0 }
        let stamp = CMTime(value: pts, timescale: tb.den) * tb.num
        let item = stamp - source.info.startTime
        let frames = item.convertScale(Int32(ring.format.sampleRate), method: .roundHalfAwayFromZero)
        return frames.isNumeric ? frames.value : 0
    }

    private func deliver(_ decoded: AudioDecoder.Decoded) {
        if nextFrame == nil {
            nextFrame = decoded.pts.map(itemFrame(forPTS:)) ?? discardBefore
        }
        guard var position = nextFrame else { return }
        let channels = ring.format.channels
        var offset = 0
        if position < discardBefore {
            offset = Int(min(Int64(decoded.frames), discardBefore - position))
            position += Int64(offset)
        }
        // The container's own end (an MP4 edit list's): the encoder's padding after it is
        // not the item's sound.
        var usable = decoded.frames
        if let trimmedEnd {
            usable = Int(min(Int64(decoded.frames), max(Int64(offset), Int64(offset) + trimmedEnd - position)))
        }
        while offset < usable {
            guard let block = waitForSpace() else { return }
            let count = min(AudioRing.framesPerBlock, usable - offset)
            guard let converted = decoder?.converted else { return }
            block.update(from: converted + offset * channels, count: count * channels)
            // The item's audio mix, read afresh for every block, so a change is heard from
            // the next block decoded.
            if let trackID = gainTrackID, let curve = source.gain.curve(forTrack: trackID) {
                curve.apply(to: block, frames: count, channels: channels, firstFrame: position, sampleRate: ring.format.sampleRate)
            }
            ring.commitBlock(AudioBlockHeader(serial: serial, itemFrame: position + frameOffset, frameCount: count, kind: .samples, item: item))
            if !announcedReady {
                announcedReady = true
                onEvent(.ready(serial: serial, itemFrame: position))
            }
            offset += count
            position += Int64(count)
        }
        nextFrame = position
    }

    /// Waits for a free block; nil when a seek or stop arrived meanwhile.
    private func waitForSpace() -> UnsafeMutablePointer<Float>? {
        while true {
            if stopping || !pendingSeekIsEmpty { return nil }
            if let block = ring.nextWritableBlock() { return block }
            wake.wait(timeout: Self.idlePoll)
        }
    }

    private func finish(failure: MediaError?) {
        atEnd = true
        let end = nextFrame ?? discardBefore
        var error = failure
        if error == nil, let truncated = truncation(endFrame: end) { error = truncated }
        if error == nil {
            waiting: while true {
                switch endAction() {
                case .handOver(let successor):
                    successor.begin(serial: serial, offset: frameOffset + end)
                    onEvent(.continued(serial: serial, itemFrame: end))
                    return
                case .end:
                    break waiting
                case .wait:
                    // A seek or a stop ends the wait; the seek is performed by the loop.
                    if stopping || !pendingSeekIsEmpty { return }
                    wake.wait(timeout: Self.idlePoll)
                }
            }
        } else {
            handoff.withLockAnnotated { $0.ended = true }
        }
        guard waitForSpace() != nil else { return }
        if let error {
            ring.commitBlock(AudioBlockHeader(serial: serial, itemFrame: end + frameOffset, frameCount: 0, kind: .failure, item: item))
            onEvent(.failed(serial: serial, itemFrame: end, error: error))
        } else {
            ring.commitBlock(AudioBlockHeader(serial: serial, itemFrame: end + frameOffset, frameCount: 0, kind: .endOfStream, item: item))
            onEvent(.decodedToEnd(serial: serial, itemFrame: end))
        }
    }

    /// The item frame where `track`'s sound ends by its container's account, for the
    /// containers whose stated length is exact and whose padding the decoder keeps (the
    /// ISO family: MP4, M4A, MOV, whose edit list or media header counts samples); nil for
    /// the rest, whose lengths are estimates (an MP3 without an index) or whose demuxer trims
    /// already (Ogg's granule positions, an MP3's LAME header).
    static func containerEnd(of track: TrackInfo, in info: MediaInfo, sampleRate: Int) -> Int64? {
        guard info.formatName.contains("mp4") || info.formatName.contains("mov"),
              track.timeRange.isValid, track.timeRange.duration.isNumeric, track.timeRange.duration > .zero,
              track.timeRange.start.isNumeric else { return nil }
        let end = track.timeRange.start + track.timeRange.duration - (info.startTime.isNumeric ? info.startTime : .zero)
        let frames = end.convertScale(Int32(sampleRate), method: .roundHalfAwayFromZero)
        return frames.isNumeric && frames.value > 0 ? frames.value : nil
    }

    /// A corrupt-data error when a regular file stopped well short of its declared length.
    private func truncation(endFrame: Int64) -> MediaError? {
        let declared = source.info.duration
        guard declared.isNumeric, source.info.isSeekable, !source.url.contains("://") || source.url.hasPrefix("file://") else { return nil }
        let declaredSeconds = declared.seconds
        let playedSeconds = Double(endFrame) / Double(ring.format.sampleRate)
        let slack = max(Double(Self.truncationSlack.components.seconds), declaredSeconds * Self.truncationSlackFraction)
        guard playedSeconds + slack < declaredSeconds else { return nil }
        return .corruptData(url: source.url, reason: String(format: "truncated: data ends at %.2f s of %.2f s", playedSeconds, declaredSeconds))
    }
}
