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

/// The producer of one item's pictures: demux the video stream, decode it and queue the
/// pictures on a thread of its own, following seek commands.
///
/// It reads its own `MediaSource` (opened on the same URL as the sound's, with every other
/// stream discarded), so pictures and sound never wait on each other's demuxing; both are
/// tagged with the player's seek serials and timed on the same item time.
///
/// Contract as `AudioReader`'s: `start()` once; `seek` and `stop` from any thread.
// @unchecked: the vars below belong to the reader thread once `start()` has begun it
// (`init` sets them before); other threads reach it only through `pendingSeek` (a Mutex),
// the atomics, the queue and the wake signal.
public final class VideoReader: @unchecked Sendable {
    /// Consecutive demuxer errors tolerated before the input counts as unreadable.
    static let maximumConsecutiveReadErrors = 32
    /// How long the reader sleeps when the queue is full or it has nothing to do; every
    /// command and every freed slot also wakes it at once.
    static let idlePoll: Duration = .milliseconds(5)

    /// The reader's own demuxer of the item.
    public let source: MediaSource
    /// Where the pictures go.
    public let queue: VideoFrameQueue
    /// The video track read.
    public let track: TrackInfo
    private let decoder: VideoDecoder
    private let onEvent: @Sendable (VideoReaderEvent) -> Void
    private let pendingSeek = Mutex<(itemNanoseconds: Int64, serial: Int)?>(nil)
    private let stopRequested = Atomic<Bool>(false)
    private let thread = ReaderThread(name: "chorus.video.reader")

    private var serial: Int
    /// Pictures due before this item time are decoded and dropped (a seek's target), except
    /// the one showing at the target itself.
    private var discardBefore: Int64 = 0
    private var announcedReady = false
    private var atEnd = false
    private var damaged = 0
    private var nextNumber: Int64 = 0
    /// Item time of the picture before the next, to time pictures that carry no timestamp.
    private var lastItemNanoseconds: Int64?

    /// Opens the decoder for the source's preferred video track. Pictures start at
    /// `startNanoseconds` of item time under seek serial `serial`.
    public init(source: MediaSource, queue: VideoFrameQueue, serial: Int, startNanoseconds: Int64 = 0,
                onEvent: @escaping @Sendable (VideoReaderEvent) -> Void) throws(MediaError) {
        guard let track = source.info.preferredVideoTrack else { throw .noPlayableTrack(url: source.url) }
        self.source = source
        self.queue = queue
        self.track = track
        self.onEvent = onEvent
        self.serial = serial
        decoder = try VideoDecoder(source: source, track: track)
        // Only the pictures' stream is read: the demuxer skips every other stream's packets.
        for index in 0..<Int(source.formatContext.pointee.nb_streams) where index != track.streamIndex {
            source.formatContext.pointee.streams[index]?.pointee.discard = AVDISCARD_ALL
        }
        queue.restart(atSerial: serial)
        if startNanoseconds > 0 { pendingSeek.withLockAnnotated { $0 = (startNanoseconds, serial) } }
    }

    /// Starts the reader thread.
    public func start() {
        thread.start { [self] in run() }
    }

    /// Moves reading to `itemNanoseconds`; pictures decoded after this carry `serial`, and
    /// the queue drops older ones at once.
    public func seek(toItemNanoseconds itemNanoseconds: Int64, serial: Int) {
        pendingSeek.withLockAnnotated { $0 = (itemNanoseconds, serial) }
        queue.flush(toSerial: serial)
        queue.spaceFreed.signal()
    }

    /// Stops the thread and waits for it to end (bounded by FFmpeg's interrupt).
    public func stop() {
        stopRequested.store(true, ordering: .releasing)
        source.interrupt()
        queue.spaceFreed.signal()
        thread.waitForEnd()
    }

    private var stopping: Bool { stopRequested.load(ordering: .acquiring) }
    private var pendingSeekIsEmpty: Bool { pendingSeek.withLockAnnotated { $0 == nil } }

    // MARK: - The reader thread

    private func run() {
        guard let packet = av_packet_alloc() else {
            onEvent(.failed(serial: serial, error: .outputFailure(device: source.url, reason: "out of memory")))
            return
        }
        defer { var p: UnsafeMutablePointer<AVPacket>? = packet; av_packet_free(&p) }
        var consecutiveErrors = 0
        while !stopping {
            if let seek = pendingSeek.withLockAnnotated({ value -> (itemNanoseconds: Int64, serial: Int)? in defer { value = nil }; return value }) {
                perform(seek: seek)
                consecutiveErrors = 0
            }
            if atEnd {
                queue.spaceFreed.wait(timeout: Self.idlePoll)
                continue
            }
            let status = av_read_frame(source.formatContext, packet)
            if status == FFmpegCall.eof {
                _ = decoder.send(nil)
                receiveAll()
                if pendingSeekIsEmpty && !stopping {
                    atEnd = true
                    onEvent(.decodedToEnd(serial: serial))
                }
                continue
            }
            if status < 0 {
                if stopping { break }
                consecutiveErrors += 1
                if status == FFmpegCall.invalidData && consecutiveErrors < Self.maximumConsecutiveReadErrors {
                    reportDamage()
                    continue
                }
                atEnd = true
                let error: MediaError = source.url.contains("://") && !source.url.hasPrefix("file://")
                    ? .networkFailure(url: source.url, reason: FFmpegCall.message(status))
                    : .corruptData(url: source.url, reason: FFmpegCall.message(status))
                onEvent(.failed(serial: serial, error: error))
                continue
            }
            consecutiveErrors = 0
            defer { av_packet_unref(packet) }
            guard packet.pointee.stream_index == decoder.streamIndex else { continue }
            let sent = sendRetrying({ decoder.send(packet) }, receiveAll: receiveAll,
                                    shouldGiveUp: { stopping || !pendingSeekIsEmpty })
            if sent < 0 && sent != FFmpegCall.again {
                reportDamage()
                continue
            }
            receiveAll()
        }
    }

    private func reportDamage() {
        damaged += 1
        onEvent(.damaged(count: damaged))
    }

    private func perform(seek: (itemNanoseconds: Int64, serial: Int)) {
        serial = seek.serial
        discardBefore = seek.itemNanoseconds
        announcedReady = false
        atEnd = false
        lastItemNanoseconds = nil
        let start = source.info.startTime.convertScale(1_000_000, method: .roundTowardNegativeInfinity).value
        let target = start &+ max(0, seek.itemNanoseconds) / 1000
        // The keyframe at or before the target: the pictures from there to it are decoded
        // and dropped, so the one showing at the target is exact.
        let status = avformat_seek_file(source.formatContext, -1, Int64.min, target, target, 0)
        if status < 0 && seek.itemNanoseconds > 0 {
            _ = avformat_seek_file(source.formatContext, -1, Int64.min, start, start, 0)
        }
        decoder.flush()
    }

    private func receiveAll() {
        while !stopping, pendingSeekIsEmpty, let result = decoder.receive() {
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
            decoder.discard()
            return
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
            let info = VideoFrameInfo(serial: serial, number: nextNumber, itemNanoseconds: due, durationNanoseconds: duration,
                                      width: decoded.width, height: decoded.height, format: format, colorMatrix: matrix)
            nextNumber += 1
            queue.commit(slot: slot.slot, info: info)
            if !announcedReady {
                announcedReady = true
                onEvent(.ready(serial: serial, itemNanoseconds: due))
            }
        }
    }

    /// Waits for a free slot; nil when a seek or stop arrived meanwhile.
    private func waitForSlot() -> (slot: Int, frame: UnsafeMutablePointer<AVFrame>)? {
        while true {
            if stopping || !pendingSeekIsEmpty { return nil }
            if let slot = queue.takeFreeSlot() { return slot }
            queue.spaceFreed.wait(timeout: Self.idlePoll)
        }
    }
}
