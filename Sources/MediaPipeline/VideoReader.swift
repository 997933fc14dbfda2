import Foundation
import MediaClock
import Synchronization
import MutexAnnotations
internal import CFFmpeg

/// What a video reader tells its owner. Delivered on the reader's own thread.
public enum VideoReaderEvent: Sendable, Equatable {
    /// The first picture of `serial` is queued; it is due at `itemNanoseconds`.
    case ready(serial: Int, itemNanoseconds: Int64)
    /// Decoding of `serial` reached the end of the input.
    case decodedToEnd(serial: Int)
    /// Reading pictures stopped for good (the sound, read by its own reader, goes on).
    case failed(serial: Int, error: MediaError)
    /// Damaged data was skipped; `count` is the running total of damaged packets and pictures.
    case damaged(count: Int)
}

/// The producer of one item's pictures: decode the video stream's packets, which an
/// `ItemDemuxer` queues, and queue the pictures on a thread of its own, following seek
/// commands.
///
/// Normally the demuxer is the item's own, shared with its sound. A display that comes in
/// the middle of an item gets a reader with a demuxer of its own (`ownDemuxer`), started
/// where the pictures are wanted, so the sound, read seconds ahead, is not disturbed.
/// Pictures and sound are tagged with the player's seek serials and timed on the same
/// item time.
///
/// Contract as `AudioReader`'s: `start()` once; `seek` and `stop` from any thread.
// @unchecked: the vars below belong to the reader thread once `start()` has begun it
// (`init` sets them before); other threads reach it only through `pendingSeek` (a Mutex),
// the atomics, the queue and the wake signal.
public final class VideoReader: @unchecked Sendable {
    /// How long the reader sleeps when the queue is full or it has nothing to do; every
    /// command and every freed slot also wakes it at once.
    static let idlePoll: Duration = .milliseconds(5)

    /// The item (read by a demuxer, not by the reader).
    public let source: MediaSource
    /// The pictures' packets.
    private let packets: PacketQueue
    /// The demuxer this reader started and stops itself; nil when it shares the item's.
    private let ownDemuxer: ItemDemuxer?
    /// The item's demuxer once it was handed over (`keepReading(on:serial:)`): started
    /// already, stopped and sought by this reader from then on.
    private let handedDemuxer = Mutex<ItemDemuxer?>(nil)
    /// A serial to carry on under, without a seek (`keepReading(on:serial:)`).
    private let pendingSerial = Mutex<Int?>(nil)
    /// Where the pictures go.
    public let queue: VideoFrameQueue
    /// The video track read.
    public let track: TrackInfo
    private let decoder: VideoDecoder
    private let onEvent: @Sendable (VideoReaderEvent) -> Void
    private let pendingSeek = Mutex<(itemNanoseconds: Int64, serial: Int)?>(nil)
    /// Seeks asked for, each counted before it is posted, and how many had been asked for
    /// when the reader last queued its final picture: it has finished when the two agree (a
    /// seek asked for since makes that end stale). What the next item's pictures' reader
    /// waits for.
    private let progress = Mutex<(seeks: Int, finishedAt: Int?)>((0, nil))
    /// The seeks counted when the reader performed its latest one (the reader thread's).
    private var seeksPerformed = 0
    /// A successor's wait (`init(successorOf:...)`): the serial its pictures may be queued
    /// under once the pictures before them all are, nil until then. Nil for any other reader.
    private var awaitsTurn: (@Sendable () -> Int?)?
    private let stopRequested = Atomic<Bool>(false)
    private let thread = ReaderThread(name: "chorus.video.reader")
    /// What this reader commits its pictures under (`VideoFrameQueue.newProducer()`).
    let producer = VideoFrameQueue.newProducer()
    /// The reader this one takes over from (`init(takingOverFrom:...)`), until its first
    /// picture is queued after that reader's last; nil for any other reader.
    private var takingOverFrom: Int?
    /// Another reader has taken over: this one's pictures are refused, and it reads no more.
    private var retired = false
    /// Another reader is taking over from this one (`init(takingOverFrom:...)`): a failure
    /// of this one's (its variant's segments gone, say) is not reported, since the other's
    /// pictures go on, and only that one's failure is the item's.
    private let beingTakenOver = Atomic<Bool>(false)

    private var serial: Int
    /// The item's number, carried by every picture.
    private let item: Int
    /// Pictures due before this item time are decoded and dropped (a seek's target), except
    /// the one showing at the target itself.
    private var discardBefore: Int64 = 0
    private var announcedReady = false
    private var atEnd = false
    private var damaged = 0
    private var nextNumber: Int64 = 0
    /// Item time of the picture before the next, to time pictures that carry no timestamp.
    private var lastItemNanoseconds: Int64?
    /// Drops what the queue held from before the latest seek.
    private var gate = SeekMarkerGate()
    /// The latest picture passed over before a seek's target, held by reference as decoded
    /// (`heldPicture`): when the stream ends before any picture reaches the target (a seek
    /// to the item's end, or to a time after its last picture, such as a pause at the end),
    /// it is the picture standing there, and is queued; otherwise it is let go once a
    /// picture at the target is queued. Only a picture queued is converted for display.
    private var passedOver: (itemNanoseconds: Int64, durationNanoseconds: Int64)?
    /// Where `passedOver` is held (the reader thread's).
    private let heldPicture: UnsafeMutablePointer<AVFrame>

    /// Opens the decoder for the preferred video track of `demuxer`'s item, fed from its
    /// pictures' queue. Pictures start at `startNanoseconds` of item time under seek serial
    /// `serial` (a shared demuxer is sent there by the engine).
    convenience init(demuxer: ItemDemuxer, queue: VideoFrameQueue, serial: Int, startNanoseconds: Int64 = 0, item: Int = 0,
         onEvent: @escaping @Sendable (VideoReaderEvent) -> Void) throws(MediaError) {
        try self.init(demuxer: demuxer, owned: false, queue: queue, serial: serial, startNanoseconds: startNanoseconds, item: item,
                      onEvent: onEvent)
    }

    /// A reader with a demuxer of its own on `source`, for pictures alone: a display that
    /// came after the item's sound was under way. It seeks its demuxer itself.
    public convenience init(source: MediaSource, queue: VideoFrameQueue, serial: Int, startNanoseconds: Int64 = 0, item: Int = 0,
                            onEvent: @escaping @Sendable (VideoReaderEvent) -> Void) throws(MediaError) {
        let demuxer = ItemDemuxer(source: source, sound: false, pictures: true)
        try self.init(demuxer: demuxer, owned: true, queue: queue, serial: serial, startNanoseconds: startNanoseconds, item: item,
                      onEvent: onEvent)
        if startNanoseconds > 0 { demuxer.seek(toItemNanoseconds: startNanoseconds, serial: serial) }
    }

    /// A successor: the reader of the pictures of the item to be heard right after another's
    /// without a gap, from its start, fed from `demuxer`'s pictures' queue into the same
    /// `queue`. It opens its decoder and decodes its first picture at once, but queues it only
    /// when `turn` gives the serial to queue under (the item's sound has begun, and the item
    /// before it has queued its last picture), so the queue holds one item's pictures after
    /// the other's, in order, and the first picture is there when the join comes.
    public convenience init(successorOf demuxer: ItemDemuxer, queue: VideoFrameQueue, item: Int,
                            turn: @escaping @Sendable () -> Int?,
                            onEvent: @escaping @Sendable (VideoReaderEvent) -> Void) throws(MediaError) {
        try self.init(demuxer: demuxer, owned: false, queue: queue, serial: 0, startNanoseconds: 0, item: item,
                      restartsQueue: false, onEvent: onEvent)
        awaitsTurn = turn
    }

    /// A reader taking over from `outgoing` without a break in the pictures: the same item's
    /// pictures read from `demuxer` (the item opened again for another HLS variant), from
    /// the keyframe before `startNanoseconds` (the engine sends the shared demuxer there).
    /// `outgoing` reads on meanwhile; the first picture this one decodes that comes after
    /// every picture queued is queued after them, and `outgoing` is refused from then on and
    /// stops reading (`VideoFrameQueue.claimTakeover`). Nothing queued is dropped, so the
    /// picture on display changes variant between one picture and the next.
    public convenience init(takingOverFrom outgoing: VideoReader, demuxer: ItemDemuxer, serial: Int, startNanoseconds: Int64, item: Int,
                            onEvent: @escaping @Sendable (VideoReaderEvent) -> Void) throws(MediaError) {
        try self.init(demuxer: demuxer, owned: false, queue: outgoing.queue, serial: serial, startNanoseconds: startNanoseconds, item: item,
                      restartsQueue: false, onEvent: onEvent)
        takingOverFrom = outgoing.producer
        outgoing.beingTakenOver.store(true, ordering: .relaxed)
    }

    init(demuxer: ItemDemuxer, owned: Bool, queue: VideoFrameQueue, serial: Int, startNanoseconds: Int64, item: Int,
         restartsQueue: Bool = true, onEvent: @escaping @Sendable (VideoReaderEvent) -> Void) throws(MediaError) {
        let source = demuxer.source
        self.item = item
        guard let track = source.info.preferredVideoTrack else { throw .noPlayableTrack(url: source.url) }
        guard let packets = demuxer.pictureQueue, packets.streamIndex == Int32(track.streamIndex) else {
            throw .unsupportedFormat(url: source.url, reason: "the pictures' stream is not demuxed")
        }
        self.source = source
        self.packets = packets
        ownDemuxer = owned ? demuxer : nil
        self.queue = queue
        self.track = track
        self.onEvent = onEvent
        self.serial = serial
        decoder = try VideoDecoder(source: source, track: track)
        guard let held = av_frame_alloc() else { throw .outputFailure(device: source.url, reason: "out of memory") }
        heldPicture = held
        if restartsQueue { queue.restart(atSerial: serial) }
        if startNanoseconds > 0 { pendingSeek.withLockAnnotated { $0 = (startNanoseconds, serial) } }
    }

    deinit {
        var held: UnsafeMutablePointer<AVFrame>? = heldPicture
        av_frame_free(&held)
    }

    /// Starts the reader thread (and its own demuxer's).
    public func start() {
        ownDemuxer?.start()
        thread.start { [self] in run() }
    }

    /// Moves reading to `itemNanoseconds`; pictures decoded after this carry `serial`, and
    /// the queue drops older ones at once.
    public func seek(toItemNanoseconds itemNanoseconds: Int64, serial: Int) {
        countSeek()
        pendingSeek.withLockAnnotated { $0 = (itemNanoseconds, serial) }
        queue.flush(toSerial: serial)
        queue.spaceFreed.signal()
        packets.consumerSignal.signal()
        ownDemuxer?.seek(toItemNanoseconds: itemNanoseconds, serial: serial)
        handedDemuxer.withLockAnnotated { $0 }?.seek(toItemNanoseconds: itemNanoseconds, serial: serial)
    }

    /// Goes on reading where it is under `serial` and, given `demuxer` (the item's, which it
    /// shared until now), on that demuxer alone, which it now stops and seeks itself: the
    /// item's sound is read anew on a demuxer of its own, and the pictures carry on without
    /// a restart from a keyframe. Pictures already queued count as `serial`'s.
    public func keepReading(on demuxer: ItemDemuxer?, serial: Int) {
        if let demuxer {
            handedDemuxer.withLockAnnotated { $0 = demuxer }
            // Stopped meanwhile (`stop()` sets its flag before it looks for a demuxer to
            // stop): the demuxer handed over is stopped here, or no one would.
            if stopping { demuxer.stop() }
        }
        pendingSerial.withLockAnnotated { $0 = serial }
        queue.carryOn(as: serial)
        packets.consumerSignal.signal()
    }

    /// Stops queueing pictures until the next `seek`: a reverse run has the queue under
    /// `serial` (its own reader fills it). What the demuxer reads meanwhile is dropped, as
    /// anything before a seek's marker is.
    public func park(serial: Int) {
        countSeek()
        pendingSeek.withLockAnnotated { $0 = (0, serial) }
        queue.spaceFreed.signal()
        packets.consumerSignal.signal()
    }

    /// Whether the reader has queued its last picture under the latest seek (decoded to its
    /// end, or failed for good), or stopped: nothing more of it will be queued.
    public var hasFinished: Bool {
        stopping || progress.withLockAnnotated { $0.finishedAt == $0.seeks }
    }

    /// Counts a seek, before it is posted: an end the reader reaches before performing it is
    /// stale, and performing it reads a count that includes it.
    private func countSeek() {
        progress.withLockAnnotated { $0.seeks += 1 }
    }

    /// On the reader's thread: nothing more will be queued until the next seek.
    private func noteFinished() {
        let performed = seeksPerformed
        progress.withLockAnnotated { if $0.seeks == performed { $0.finishedAt = performed } }
    }

    /// Stops the thread and waits for it to end (bounded by FFmpeg's interrupt).
    public func stop() {
        stopRequested.store(true, ordering: .releasing)
        queue.spaceFreed.signal()
        packets.consumerSignal.signal()
        thread.waitForEnd()
        ownDemuxer?.stop()
        handedDemuxer.withLockAnnotated { $0 }?.stop()
    }

    private var stopping: Bool { stopRequested.load(ordering: .acquiring) }
    private var pendingSeekIsEmpty: Bool { pendingSeek.withLockAnnotated { $0 == nil } }

    // MARK: - The reader thread

    private func run() {
        while !stopping && !retired {
            if let seek = pendingSeek.withLockAnnotated({ value -> (itemNanoseconds: Int64, serial: Int)? in defer { value = nil }; return value }) {
                perform(seek: seek)
            }
            // (A seek made since, under a newer serial, has the last word.)
            if let carried = pendingSerial.withLockAnnotated({ value -> Int? in defer { value = nil }; return value }), carried > serial {
                serial = carried
            }
            if atEnd {
                noteIfTakenOver()
                packets.consumerSignal.wait(timeout: Self.idlePoll)
                continue
            }
            guard let taken = packets.take() else {
                noteIfTakenOver()
                packets.consumerSignal.wait(timeout: Self.idlePoll)
                continue
            }
            guard let entry = gate.admit(taken) else { continue }
            switch entry {
            case .packet(let packet):
                let sent = sendRetrying({ decoder.send(packet.pointer) }, receiveAll: receiveAll,
                                        shouldGiveUp: { stopping || retired || !pendingSeekIsEmpty })
                if sent < 0 && sent != FFmpegCall.again {
                    reportDamage()
                    continue
                }
                receiveAll()
            case .end:
                _ = decoder.send(nil)
                receiveAll()
                if pendingSeekIsEmpty && !stopping {
                    queuePassedOver()
                    atEnd = true
                    noteFinished()
                    onEvent(.decodedToEnd(serial: serial))
                }
            case .failure(let error):
                atEnd = true
                noteFinished()
                if !beingTakenOver.load(ordering: .relaxed) { onEvent(.failed(serial: serial, error: error)) }
            case .damaged:
                reportDamage()
            case .skipped(let count):
                // The decoder starts again at a keyframe: what it held refers to pictures
                // that never came.
                decoder.flush()
                queue.countDropped(count)
            case .flush:
                continue
            }
        }
        releasePassedOver()
        // Taken over: the demuxer this reader was left (the item's earlier opening) reads no
        // further; the reader's owner stops the thread, already ended, later.
        if retired {
            handedDemuxer.withLockAnnotated { $0 }?.stop()
            ownDemuxer?.stop()
        }
    }

    /// While idle (at its end, or waiting for packets), a reader another took over from
    /// learns it without a picture to commit, and stops reading.
    private func noteIfTakenOver() {
        if queue.isRetired(producer) { retired = true }
    }

    private func reportDamage() {
        damaged += 1
        onEvent(.damaged(count: damaged))
    }

    private func perform(seek: (itemNanoseconds: Int64, serial: Int)) {
        // Read after the seek was taken, so the count includes it; a seek counted since is
        // pending and performed next, and makes any end reached before then stale.
        seeksPerformed = progress.withLockAnnotated { $0.seeks }
        // A sought successor is the current item's reader: its turn has come. A reader
        // taking over is the only one left once it is sought under a new serial (the queue
        // starts afresh there); its own start, under its first serial, is the takeover's.
        awaitsTurn = nil
        if seek.serial != serial { takingOverFrom = nil }
        serial = seek.serial
        discardBefore = seek.itemNanoseconds
        announcedReady = false
        atEnd = false
        lastItemNanoseconds = nil
        releasePassedOver()
        // The demuxer goes to a keyframe at or before the target: the pictures from there to
        // it are decoded and dropped, so the one showing at the target is exact.
        gate.awaitMarker(ofSerial: seek.serial)
        decoder.flush()
    }

    private func receiveAll() {
        while !stopping, !retired, pendingSeekIsEmpty, let result = decoder.receive() {
            switch result {
            case .failure:
                reportDamage()
            case .success(let decoded):
                deliver(decoded)
            }
        }
    }

    /// Item time, in nanoseconds, of a stream timestamp.
    private func itemNanoseconds(ofPTS pts: Int64) -> Int64 {
        let tb = decoder.timeBase
        guard tb.den > 0, tb.num > 0 else { return 0 }
        let stamp = CMTime(value: pts, timescale: tb.den) * tb.num
        let item = (stamp - source.info.startTime).convertScale(1_000_000_000, method: .roundHalfAwayFromZero)
        return item.isNumeric ? item.value : 0
    }

    private func deliver(_ decoded: VideoDecoder.Decoded) {
        let due = decoded.pts.map(itemNanoseconds(ofPTS:))
            ?? lastItemNanoseconds.map { $0 + decoder.nominalFrameNanoseconds } ?? discardBefore
        var duration = decoder.nominalFrameNanoseconds
        if decoded.duration > 0, decoder.timeBase.den > 0 {
            let span = CMTime(value: decoded.duration, timescale: decoder.timeBase.den) * decoder.timeBase.num
            let nanoseconds = span.convertScale(1_000_000_000, method: .roundHalfAwayFromZero)
            if nanoseconds.isNumeric, nanoseconds.value > 0 { duration = nanoseconds.value }
        }
        lastItemNanoseconds = due
        // Before a seek's target: only the picture still showing at the target is kept.
        if due + duration <= discardBefore {
            passOver(due: due, duration: duration)
            return
        }
        releasePassedOver()
        // Taking over: only a picture after those the reader before queued.
        if let outgoing = takingOverFrom {
            guard queue.claimTakeover(by: producer, from: outgoing, itemNanoseconds: due) else {
                decoder.discard()
                // Taken over itself before it took over (a second move): it reads no more.
                noteIfTakenOver()
                return
            }
            takingOverFrom = nil
        }
        guard let slot = waitForSlot() else {
            decoder.discard()
            return
        }
        switch decoder.move(into: slot.frame) {
        case .failure:
            queue.returnSlot(slot.slot)
            reportDamage()
            return
        case .success(let (format, matrix)):
            let info = VideoFrameInfo(serial: serial, item: item, number: 0, itemNanoseconds: due, durationNanoseconds: duration,
                                      width: decoded.width, height: decoded.height, format: format, colorMatrix: matrix)
            commit(slot: slot.slot, info: info)
        }
    }

    /// Queues a filled slot's picture, numbered next.
    private func commit(slot: Int, info: VideoFrameInfo) {
        var info = info
        info.number = nextNumber
        nextNumber += 1
        guard queue.commit(slot: slot, info: info, producer: producer) else {
            retired = true
            return
        }
        if !announcedReady {
            announcedReady = true
            onEvent(.ready(serial: serial, itemNanoseconds: info.itemNanoseconds))
        }
    }

    /// Keeps the picture just decoded, before the seek's target, as `passedOver` in place of the one kept
    /// before, so that the stream's end finds the last of them.
    private func passOver(due: Int64, duration: Int64) {
        decoder.hold(into: heldPicture)
        passedOver = (due, duration)
    }

    /// At the stream's end, before any picture at the seek's target was queued: the last
    /// picture passed over is the one standing at the target, and is queued.
    private func queuePassedOver() {
        guard let kept = passedOver else { return }
        passedOver = nil
        if let outgoing = takingOverFrom {
            // Taking over: only after the pictures the reader before queued.
            guard queue.claimTakeover(by: producer, from: outgoing, itemNanoseconds: kept.itemNanoseconds) else {
                av_frame_unref(heldPicture)
                return
            }
            takingOverFrom = nil
        }
        guard !announcedReady, let slot = waitForSlot() else {
            av_frame_unref(heldPicture)
            return
        }
        let (width, height) = (Int(heldPicture.pointee.width), Int(heldPicture.pointee.height))
        switch decoder.move(from: heldPicture, into: slot.frame) {
        case .failure:
            queue.returnSlot(slot.slot)
            reportDamage()
        case .success(let (format, matrix)):
            commit(slot: slot.slot, info: VideoFrameInfo(serial: serial, item: item, number: 0, itemNanoseconds: kept.itemNanoseconds,
                                                         durationNanoseconds: kept.durationNanoseconds, width: width, height: height,
                                                         format: format, colorMatrix: matrix))
        }
    }

    /// Lets go of the picture passed over: a picture at the target was queued, or the
    /// reading moved on.
    private func releasePassedOver() {
        guard passedOver != nil else { return }
        passedOver = nil
        av_frame_unref(heldPicture)
    }

    /// Waits for a free slot (and, for a successor, its turn); nil when a seek or stop
    /// arrived meanwhile.
    private func waitForSlot() -> (slot: Int, frame: UnsafeMutablePointer<AVFrame>)? {
        while true {
            if stopping || !pendingSeekIsEmpty { return nil }
            if let turn = awaitsTurn {
                if let serial = turn() {
                    self.serial = serial
                    awaitsTurn = nil
                } else {
                    queue.spaceFreed.wait(timeout: Self.idlePoll)
                    continue
                }
            }
            if let slot = queue.takeFreeSlot() { return slot }
            queue.spaceFreed.wait(timeout: Self.idlePoll)
        }
    }
}
