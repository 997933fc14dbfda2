internal import CFFmpeg
import Foundation
import MediaClock
import MutexAnnotations
import Synchronization

/// The producer of an item's pictures played backwards (a negative rate): it decodes the
/// item a group of pictures at a time from the playhead toward the start, each group
/// forward from the keyframe at or before its end, and queues its pictures newest first.
///
/// The pictures keep their own item times; the queue is told it runs backwards
/// (`VideoFrameQueue.flush(toSerial:backwards:)`), so a picture is due when the timeline,
/// running down, reaches its end. The stash holds as many pictures as fit its memory
/// (`stashBudgetBytes`), so a group of pictures that fits is decoded once; a longer one is
/// read again for the part before what was kept: each pass gives at least one picture, so
/// the reader always moves on.
///
/// It opens the item a second time, on its own thread, when it is first asked to read, as
/// `ReverseAudioReader` does for the sound.
// @unchecked: `request`, `opened`, `stopRequested` and `decodedCount` are the only state
// shared with other threads (Mutexes and atomics); everything else belongs to the reader's
// thread.
public final class ReverseVideoReader: @unchecked Sendable {
    /// The memory the stash holds pictures in by default, in bytes: a group of pictures
    /// whose pictures fit it is decoded once going backwards. 256 MiB holds over ten seconds of
    /// 30 fps at 480p (x264's default keyframe interval is 250 pictures), 6.5 s at 720p and
    /// 2.9 s at 1080p (`bytesPerPixel`).
    public static let defaultStashBudgetBytes = 256 << 20
    /// What a picture held costs a pixel, in bytes: 8-bit 4:2:0, as every picture is once
    /// moved into the stash (`VideoDecoder.move(into:)` converts any other format), the
    /// decoder's row padding aside (a few percent).
    static let bytesPerPixel = 1.5
    /// The fewest pictures held whatever their size: a second and a half of 30 fps (149 MB
    /// at 1080p, 600 MB at 4K), so that large pictures are not decoded more often than that.
    static let minimumStash = 48
    /// The most pictures held whatever their size: 40 s of 25 fps, past any keyframe
    /// interval an encoder uses for playback.
    static let maximumStash = 1000
    /// How long the thread sleeps between looks when it has nothing to do or the queue is full.
    static let idlePoll: Duration = .milliseconds(10)

    /// Where to read from and under which serial; nil: queue nothing (a forward run has the
    /// queue).
    private struct Request {
        var nanoseconds: Int64?
        var serial: Int
        var endNanoseconds: Int64
    }

    private let url: String
    /// Where the bytes its openings read are counted (the item's).
    private let networkActivity: NetworkActivity?
    /// The item's sound and variant limit: the pictures are those of the variant it plays.
    private let audioStream: Int?
    private let variantLimit: VariantLimit
    private let queue: VideoFrameQueue
    private let item: Int
    private let onEvent: @Sendable (VideoReaderEvent) -> Void
    private let request = Mutex<Request?>(nil)
    private let stopRequested = Atomic<Bool>(false)
    private let wake = WakeSignal()
    private let thread = ReaderThread(name: "chorus.video.reverse")
    /// The opened input, for `stop` to interrupt a read that waits on the network.
    private let opened = Mutex<MediaSource?>(nil)

    // The reader thread's own.
    private var source: MediaSource?
    private var decoder: VideoDecoder?
    private var serial = 0
    /// The item time the next group ends at, or nil when idle; the first group of a run also
    /// takes the picture showing at it.
    private var upper: Int64?
    private var takesShowing = false
    private var endNanoseconds: Int64 = 0
    private var announcedReady = false
    private var nextNumber: Int64 = 0
    private var damaged = 0
    /// Decoded pictures waiting to be queued, oldest first, and what is known of each.
    private var stash: [UnsafeMutablePointer<AVFrame>] = []
    private var stashInfo: [VideoFrameInfo] = []
    /// The memory the stash may hold its pictures in, and how many that makes for the
    /// pictures decoded last.
    private let stashBudgetBytes: Int
    private let decodedCount = Atomic<Int>(0)
    /// Pictures decoded over the reader's life, those passed over included: what playing
    /// backwards cost, against the pictures queued.
    public var picturesDecoded: Int { decodedCount.load(ordering: .relaxed) }

    /// A reverse reader for the pictures of the item at `url` (those that go with the sound
    /// `audioStream` within `variantLimit`, as `MediaSource` chooses them), queued into `queue`
    /// tagged with item number `item`; `onEvent` as for `VideoReader`. Pictures waiting to be
    /// queued are held in up to `stashBudgetBytes` of memory.
    public init(url: String, audioStream: Int? = nil, variantLimit: VariantLimit = .none, queue: VideoFrameQueue, item: Int,
                networkActivity: NetworkActivity? = nil, stashBudgetBytes: Int = ReverseVideoReader.defaultStashBudgetBytes,
                onEvent: @escaping @Sendable (VideoReaderEvent) -> Void) {
        self.url = url
        self.stashBudgetBytes = max(0, stashBudgetBytes)
        self.networkActivity = networkActivity
        self.audioStream = audioStream
        self.variantLimit = variantLimit
        self.queue = queue
        self.item = item
        self.onEvent = onEvent
    }

    /// Plays backwards from item time `nanoseconds` (the picture showing there first) to
    /// `endNanoseconds`, under `serial`. Starts the thread the first time. The queue must
    /// already want `serial`, backwards.
    public func seek(toItemNanoseconds nanoseconds: Int64, serial: Int, endNanoseconds: Int64) {
        request.withLockAnnotated { $0 = Request(nanoseconds: max(0, nanoseconds), serial: serial, endNanoseconds: max(0, endNanoseconds)) }
        wake.signal()
        queue.spaceFreed.signal()
        thread.start { [self] in run() }
    }

    /// Stops queueing (a forward run has the queue under `serial`).
    public func park(serial: Int) {
        request.withLockAnnotated { $0 = Request(nanoseconds: nil, serial: serial, endNanoseconds: 0) }
        wake.signal()
        queue.spaceFreed.signal()
    }

    /// Stops the thread and waits for it.
    public func stop() {
        stopRequested.store(true, ordering: .releasing)
        opened.withLockAnnotated { $0 }?.interrupt()
        wake.signal()
        queue.spaceFreed.signal()
        thread.waitForEnd()
    }

    private var stopping: Bool { stopRequested.load(ordering: .acquiring) }
    private var requestPending: Bool { request.withLockAnnotated { $0 != nil } }

    // MARK: - The reader's thread

    private func run() {
        guard let packet = av_packet_alloc() else {
            onEvent(.failed(serial: serial, error: .outputFailure(device: url, reason: "out of memory")))
            return
        }
        defer {
            var freed: UnsafeMutablePointer<AVPacket>? = packet
            av_packet_free(&freed)
            for frame in stash {
                var freedFrame: UnsafeMutablePointer<AVFrame>? = frame
                av_frame_free(&freedFrame)
            }
        }
        while !stopping {
            if let next = request.withLockAnnotated({ value -> Request? in defer { value = nil }; return value }) {
                // What the run before held is not this one's.
                emptyStash()
                serial = next.serial
                upper = next.nanoseconds
                endNanoseconds = next.endNanoseconds
                takesShowing = true
                announcedReady = false
            }
            guard let hi = upper else {
                wake.wait(timeout: Self.idlePoll)
                continue
            }
            guard openIfNeeded(), stashReady() else {
                upper = nil
                continue
            }
            let kept = decodeGroup(below: hi, packet: packet)
            if stopping || requestPending { continue }
            queueStash(count: kept)
            if stopping || requestPending { continue }
            // On from the earliest picture queued; done at the start (or the reverse end),
            // or when nothing came out (an input that cannot be read there).
            // (A run's first group may end at the very picture showing at its top.)
            let earliest = kept > 0 ? stashInfo[0].itemNanoseconds : nil
            let first = takesShowing
            takesShowing = false
            if let earliest, earliest > endNanoseconds, earliest < hi || (first && earliest == hi) {
                upper = earliest
            } else {
                upper = nil
                onEvent(.decodedToEnd(serial: serial))
            }
        }
    }

    /// Makes the stash's first frames once, on this thread (more are made as pictures that
    /// fit the budget need them).
    private func stashReady() -> Bool {
        if !stash.isEmpty { return true }
        for _ in 0..<Self.minimumStash {
            guard let frame = av_frame_alloc() else {
                onEvent(.failed(serial: serial, error: .outputFailure(device: url, reason: "out of memory")))
                return false
            }
            stash.append(frame)
        }
        stashInfo.reserveCapacity(Self.minimumStash)
        return true
    }

    /// How many pictures of `width` × `height` the stash holds.
    static func stashCapacity(width: Int, height: Int, budgetBytes: Int) -> Int {
        let bytes = max(1, Int(Double(max(1, width) * max(1, height)) * bytesPerPixel))
        return min(max(budgetBytes / bytes, minimumStash), maximumStash)
    }

    /// Lets go of the pictures held (a run parked or replaced): their memory goes back.
    private func emptyStash() {
        for frame in stash { av_frame_unref(frame) }
        stashInfo.removeAll(keepingCapacity: true)
    }

    private func openIfNeeded() -> Bool {
        if decoder != nil { return true }
        do throws(MediaError) {
            let input = try MediaSource(url: url, audioStream: audioStream, variantLimit: variantLimit)
            input.networkActivity = networkActivity
            opened.withLockAnnotated { $0 = input }
            if stopping { input.interrupt() }
            guard let track = input.info.preferredVideoTrack else { throw .noPlayableTrack(url: url) }
            decoder = try VideoDecoder(source: input, track: track)
            source = input
            return true
        } catch {
            onEvent(.failed(serial: serial, error: error))
            return false
        }
    }

    /// Decodes the pictures before item time `hi` (and the one showing at it, for a run's
    /// first group) from the keyframe at or before it, keeping the last of them that fit the
    /// stash (`stashCapacity`), oldest first. Returns how many were kept.
    private func decodeGroup(below hi: Int64, packet: UnsafeMutablePointer<AVPacket>) -> Int {
        guard let source, let decoder else { return 0 }
        // The keyframe at or before the last picture wanted: just before `hi`, or at it for
        // the picture showing there. In the pictures' own time base: a seek in microseconds
        // is rounded to the stream's ticks, which took "just before" a group's keyframe to
        // the keyframe itself, so the group before it was never read.
        let target = Self.streamTicks(ofItemNanoseconds: takesShowing ? hi : hi - 1, start: source.info.startTime, timeBase: decoder.timeBase)
        _ = avformat_seek_file(source.formatContext, decoder.streamIndex, Int64.min, target, target, 0)
        decoder.flush()
        for frame in stash { av_frame_unref(frame) }
        stashInfo.removeAll(keepingCapacity: true)
        var passed = false
        var lastDue: Int64?
        func receiveAll() {
            while !stopping, let result = decoder.receive() {
                switch result {
                case .failure:
                    reportDamage()
                case .success(let decoded):
                    decodedCount.add(1, ordering: .relaxed)
                    let (due, duration) = timing(of: decoded, decoder: decoder, source: source, after: lastDue)
                    lastDue = due
                    let wanted = takesShowing ? due <= hi : due < hi
                    guard wanted else {
                        passed = true
                        decoder.discard()
                        continue
                    }
                    // Before the reverse end, only the picture still showing there counts.
                    guard due + duration > endNanoseconds else {
                        decoder.discard()
                        continue
                    }
                    keep(decoded, due: due, duration: duration, decoder: decoder)
                }
            }
        }
        while !stopping && !requestPending && !passed {
            let status = source.readFrame(packet)
            if status < 0 {
                _ = decoder.send(nil)
                receiveAll()
                break
            }
            defer { av_packet_unref(packet) }
            guard packet.pointee.stream_index == decoder.streamIndex else { continue }
            let sent = sendRetrying({ decoder.send(packet) }, receiveAll: receiveAll, shouldGiveUp: { stopping || requestPending })
            if sent < 0 && sent != FFmpegCall.again { reportDamage() }
            receiveAll()
        }
        return stashInfo.count
    }

    /// The last tick of a stream with `timeBase` at or before item time `itemNanoseconds`,
    /// for an item whose time starts at `start` (a time before the item's start is its start).
    static func streamTicks(ofItemNanoseconds itemNanoseconds: Int64, start: CMTime, timeBase: AVRational) -> Int64 {
        let startNanoseconds = start.isNumeric ? start.convertScale(1_000_000_000, method: .roundTowardNegativeInfinity).value : 0
        guard timeBase.num > 0, timeBase.den > 0 else { return 0 }
        let stamp = Int128(max(0, itemNanoseconds)) + Int128(startNanoseconds)
        let scale = Int128(timeBase.num) * 1_000_000_000
        // Floor division, for stamps before zero too.
        let product = stamp * Int128(timeBase.den)
        let ticks = product >= 0 ? product / scale : -((-product + scale - 1) / scale)
        return Int64(clamping: ticks)
    }

    /// A decoded picture's item time and duration, in nanoseconds.
    private func timing(of decoded: VideoDecoder.Decoded, decoder: VideoDecoder, source: MediaSource,
                        after previous: Int64?) -> (Int64, Int64) {
        var duration = decoder.nominalFrameNanoseconds
        let base = decoder.timeBase
        if decoded.duration > 0, base.den > 0 {
            let span = CMTime(value: decoded.duration, timescale: base.den) * base.num
            let nanoseconds = span.convertScale(1_000_000_000, method: .roundHalfAwayFromZero)
            if nanoseconds.isNumeric, nanoseconds.value > 0 { duration = nanoseconds.value }
        }
        guard let pts = decoded.pts, base.den > 0, base.num > 0 else {
            return ((previous ?? 0) + decoder.nominalFrameNanoseconds, duration)
        }
        let stamp = CMTime(value: pts, timescale: base.den) * base.num
        let item = (stamp - source.info.startTime).convertScale(1_000_000_000, method: .roundHalfAwayFromZero)
        return (item.isNumeric ? item.value : 0, duration)
    }

    /// Moves the received picture into the stash; a full stash gives up its oldest.
    private func keep(_ decoded: VideoDecoder.Decoded, due: Int64, duration: Int64, decoder: VideoDecoder) {
        let capacity = Self.stashCapacity(width: decoded.width, height: decoded.height, budgetBytes: stashBudgetBytes)
        if stashInfo.count == stash.count, stash.count < capacity, let frame = av_frame_alloc() {
            stash.append(frame)
        }
        // (A while: pictures grown larger in the group lower the capacity.)
        while !stashInfo.isEmpty, stashInfo.count >= min(capacity, stash.count) {
            let oldest = stash.removeFirst()
            av_frame_unref(oldest)
            stash.append(oldest)
            stashInfo.removeFirst()
        }
        let slot = stash[stashInfo.count]
        switch decoder.move(into: slot) {
        case .failure:
            av_frame_unref(slot)
            reportDamage()
        case .success(let (format, matrix)):
            stashInfo.append(VideoFrameInfo(serial: serial, item: item, number: 0, itemNanoseconds: due, durationNanoseconds: duration,
                                            width: decoded.width, height: decoded.height, format: format, colorMatrix: matrix))
        }
    }

    /// Queues the stash's `count` pictures newest first.
    private func queueStash(count: Int) {
        var index = count - 1
        while index >= 0 {
            guard let slot = waitForSlot() else { return }
            av_frame_move_ref(slot.frame, stash[index])
            var info = stashInfo[index]
            info.number = nextNumber
            nextNumber += 1
            queue.commit(slot: slot.slot, info: info)
            if !announcedReady {
                announcedReady = true
                onEvent(.ready(serial: serial, itemNanoseconds: info.itemNanoseconds))
            }
            index -= 1
        }
    }

    private func reportDamage() {
        damaged += 1
        onEvent(.damaged(count: damaged))
    }

    /// Waits for a free slot; nil when a new request or a stop arrived meanwhile.
    private func waitForSlot() -> (slot: Int, frame: UnsafeMutablePointer<AVFrame>)? {
        while true {
            if stopping || requestPending { return nil }
            if let slot = queue.takeFreeSlot() { return slot }
            queue.spaceFreed.wait(timeout: Self.idlePoll)
        }
    }
}
