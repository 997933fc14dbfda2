internal import CFFmpeg
import Foundation
import MediaClock
import MutexAnnotations
import Synchronization

/// The producer of an item's sound played backwards (a negative rate): it decodes the item
/// in chunks from the playhead toward the start, each chunk forward after a seek (with the
/// codec's pre-roll, as a forward seek has, so every sample is the one a forward decode
/// gives), and writes each chunk's frames into the ring in reverse order.
///
/// The ring's frames for a reverse run count the other way: item frame *f* is written as
/// frame −(*f* + 1), so the render thread plays them in ascending order as it always does,
/// and frame −*n* is heard at item time *n* / rate, exactly as frame *n* is going forward.
/// The run ends at `endFrame` (the item's start, or its reverse end time) with an end marker
/// at −`endFrame`.
///
/// It opens the item a second time, on its own thread (the forward reader's demuxer keeps
/// its place), when it is first asked to read.
// @unchecked: `request`, `opened` and `stopRequested` are the only state shared with other
// threads (Mutexes and an atomic); everything else belongs to the reader's thread.
public final class ReverseAudioReader: @unchecked Sendable {
    /// Seconds decoded at a time. Each chunk costs a seek and the codec's pre-roll
    /// (`AudioReader.seekPreroll`, decoded and dropped): half a second keeps that under a
    /// fifth of the work for the longest pre-roll, and is a quarter of the ring, so the next
    /// chunk is decoded while the one before plays.
    static let chunkSeconds = 0.5
    /// How long the thread sleeps between looks when it has nothing to do or the ring is full.
    static let idlePoll: Duration = .milliseconds(20)

    /// Where to read from and under which serial; nil frame: write nothing (the forward
    /// reader has the ring).
    private struct Request {
        var frame: Int64?
        var serial: Int
        var endFrame: Int64
    }

    private let url: String
    /// Where the bytes its openings read are counted (the item's).
    private let networkActivity: NetworkActivity?
    /// The sound stream to read (the item's chosen language); nil for FFmpeg's choice.
    private let audioStream: Int?
    /// The variant limit the item was opened with (an HLS master playlist's).
    private let variantLimit: VariantLimit
    private let ring: AudioRing
    private let item: Int
    private let onEvent: @Sendable (AudioReaderEvent) -> Void
    private let request = Mutex<Request?>(nil)
    private let stopRequested = Atomic<Bool>(false)
    private let wake = WakeSignal()
    private let thread = ReaderThread(name: "chorus.reader.reverse")
    /// The opened input, for `stop` to interrupt a read that waits on the network.
    private let opened = Mutex<MediaSource?>(nil)

    // The reader thread's own.
    private var source: MediaSource?
    private var decoder: AudioDecoder?
    private let gain: ItemGain
    private let gainTrackID: Int32?
    private var serial = 0
    /// The item frame the next chunk ends at (exclusive), or nil when idle.
    private var upper: Int64?
    private var endFrame: Int64 = 0
    private var announcedReady = false

    /// A reverse reader for the item at `url`, writing into `ring` blocks tagged with item
    /// number `item`; `onEvent` as for `AudioReader` (its frames in the ring's reversed count).
    /// `gain` is the item's audio mix, its curve for track `gainTrackID` applied to the sound read.
    public init(url: String, audioStream: Int? = nil, variantLimit: VariantLimit = .none, ring: AudioRing, item: Int,
                gain: ItemGain = ItemGain(), gainTrackID: Int32? = nil, networkActivity: NetworkActivity? = nil,
                onEvent: @escaping @Sendable (AudioReaderEvent) -> Void) {
        self.url = url
        self.networkActivity = networkActivity
        self.audioStream = audioStream
        self.variantLimit = variantLimit
        self.gain = gain
        self.gainTrackID = gainTrackID
        self.ring = ring
        self.item = item
        self.onEvent = onEvent
    }

    /// Plays backwards from item frame `frame` (the first frame heard is the one before it)
    /// to `endFrame`, under `serial`. Starts the thread the first time.
    public func seek(toFrame frame: Int64, serial: Int, endFrame: Int64) {
        request.withLockAnnotated { $0 = Request(frame: max(0, frame), serial: serial, endFrame: max(0, endFrame)) }
        wake.signal()
        thread.start { [self] in run() }
    }

    /// Stops writing (a forward run has the ring under `serial`).
    public func park(serial: Int) {
        request.withLockAnnotated { $0 = Request(frame: nil, serial: serial, endFrame: 0) }
        wake.signal()
    }

    /// Stops the thread and waits for it.
    public func stop() {
        stopRequested.store(true, ordering: .releasing)
        opened.withLockAnnotated { $0 }?.interrupt()
        wake.signal()
        thread.waitForEnd()
    }

    private var stopping: Bool { stopRequested.load(ordering: .acquiring) }
    private var requestPending: Bool { request.withLockAnnotated { $0 != nil } }

    // MARK: - The reader's thread

    private func run() {
        guard let packet = av_packet_alloc() else {
            onEvent(.failed(serial: serial, itemFrame: 0, error: .outputFailure(device: url, reason: "out of memory")))
            return
        }
        defer { var freed: UnsafeMutablePointer<AVPacket>? = packet; av_packet_free(&freed) }
        let chunkFrames = max(AudioRing.framesPerBlock, Int(Self.chunkSeconds * Double(ring.format.sampleRate)))
        let channels = ring.format.channels
        var chunk = [Float](repeating: 0, count: chunkFrames * channels)
        while !stopping {
            if let next = request.withLockAnnotated({ value -> Request? in defer { value = nil }; return value }) {
                serial = next.serial
                upper = next.frame
                endFrame = next.endFrame
                announcedReady = false
            }
            guard let hi = upper else {
                wake.wait(timeout: Self.idlePoll)
                continue
            }
            guard openIfNeeded() else {
                upper = nil
                continue
            }
            let top = min(hi, lengthFrames)
            if top <= endFrame {
                guard waitForSpace() != nil else { continue }
                ring.commitBlock(AudioBlockHeader(serial: serial, itemFrame: -endFrame, frameCount: 0, kind: .endOfStream, item: item))
                onEvent(.decodedToEnd(serial: serial, itemFrame: -endFrame))
                upper = nil
                continue
            }
            let lo = max(endFrame, top - Int64(chunkFrames))
            let count = chunk.withUnsafeMutableBufferPointer { decode(from: lo, to: top, into: $0.baseAddress!, packet: packet) }
            if stopping || requestPending { continue }
            // What could not be decoded (a damaged stretch) is heard as silence, in its place.
            chunk.withUnsafeMutableBufferPointer { buffer in
                let frames = Int(top - lo)
                if count < frames { (buffer.baseAddress! + count * channels).update(repeating: 0, count: (frames - count) * channels) }
                write(buffer.baseAddress!, frames: frames, top: top)
            }
            if stopping || requestPending { continue }
            upper = lo
        }
    }

    /// The item's length in frames at the ring's rate, or no bound when it is unknown.
    private var lengthFrames: Int64 {
        guard let duration = source?.info.duration, duration.isNumeric else { return Int64.max }
        let frames = duration.convertScale(Int32(ring.format.sampleRate), method: .roundTowardNegativeInfinity)
        return frames.isNumeric ? frames.value : Int64.max
    }

    private func openIfNeeded() -> Bool {
        if decoder != nil { return true }
        do throws(MediaError) {
            let input = try MediaSource(url: url, audioStream: audioStream, variantLimit: variantLimit)
            input.networkActivity = networkActivity
            opened.withLockAnnotated { $0 = input }
            if stopping { input.interrupt() }
            guard let track = input.info.preferredAudioTrack else { throw .noPlayableTrack(url: url) }
            decoder = try AudioDecoder(source: input, streamIndex: Int32(track.streamIndex), output: ring.format)
            source = input
            return true
        } catch {
            onEvent(.failed(serial: serial, itemFrame: 0, error: error))
            return false
        }
    }

    /// Decodes item frames `lo..<hi` into `out` (interleaved): a seek with the pre-roll, then
    /// packets in order until `hi` is passed or the input ends. Returns the frames filled
    /// from `lo` on.
    private func decode(from lo: Int64, to hi: Int64, into out: UnsafeMutablePointer<Float>, packet: UnsafeMutablePointer<AVPacket>) -> Int {
        guard let source, let decoder else { return 0 }
        let channels = ring.format.channels
        let target = source.seekTimestamp(itemNanoseconds: AudioReader.demuxerTarget(forFrame: lo, sampleRate: ring.format.sampleRate))
        _ = avformat_seek_file(source.formatContext, -1, Int64.min, target, target, 0)
        decoder.flush()
        var nextFrame: Int64?
        var filled = 0
        // Takes what the decoder has ready, keeping the part inside the chunk.
        func receiveAll() {
            while let result = decoder.receive() {
                guard case .success(let decoded) = result else { continue }
                if nextFrame == nil { nextFrame = decoded.pts.map { itemFrame(forPTS: $0, decoder: decoder, source: source) } ?? lo }
                guard let position = nextFrame else { continue }
                let first = max(position, lo)
                let last = min(position + Int64(decoded.frames), hi)
                if last > first {
                    let offsetIn = Int(first - position)
                    let offsetOut = Int(first - lo)
                    (out + offsetOut * channels).update(from: decoder.converted + offsetIn * channels, count: Int(last - first) * channels)
                    filled = max(filled, offsetOut + Int(last - first))
                }
                nextFrame = position + Int64(decoded.frames)
            }
        }
        while !stopping && !requestPending {
            if let position = nextFrame, position >= hi { return filled }
            let status = source.readFrame(packet)
            if status < 0 {
                // The end of the input (or a read failure): what the decoder holds is the rest.
                _ = decoder.send(nil)
                receiveAll()
                return filled
            }
            defer { av_packet_unref(packet) }
            guard packet.pointee.stream_index == decoder.streamIndex else { continue }
            _ = sendRetrying({ decoder.send(packet) }, receiveAll: receiveAll, shouldGiveUp: { stopping || requestPending })
            receiveAll()
        }
        return filled
    }

    /// The item frame a stream timestamp stands for at the output rate.
    private func itemFrame(forPTS pts: Int64, decoder: AudioDecoder, source: MediaSource) -> Int64 {
        let base = decoder.timeBase
        guard base.den > 0 else { return 0 }
        let stamp = CMTime(value: pts, timescale: base.den) * base.num
        let frames = (stamp - source.info.startTime).convertScale(Int32(ring.format.sampleRate), method: .roundHalfAwayFromZero)
        return frames.isNumeric ? frames.value : 0
    }

    /// Writes item frames `top - frames..<top` (held in `chunk` in forward order) into the
    /// ring backwards: the block written first starts at ring frame −`top`.
    private func write(_ chunk: UnsafeMutablePointer<Float>, frames: Int, top: Int64) {
        let channels = ring.format.channels
        // The item's audio mix, by each frame's place in the item, read afresh for every chunk.
        if let gainTrackID, let curve = gain.curve(forTrack: gainTrackID) {
            curve.apply(to: chunk, frames: frames, channels: channels, firstFrame: top - Int64(frames), sampleRate: ring.format.sampleRate)
        }
        var written = 0
        while written < frames {
            guard let block = waitForSpace() else { return }
            let count = min(AudioRing.framesPerBlock, frames - written)
            for index in 0..<count {
                // The frame `written + index` places from the top, going down.
                let source = chunk + (frames - 1 - written - index) * channels
                (block + index * channels).update(from: source, count: channels)
            }
            let ringFrame = -top + Int64(written)
            ring.commitBlock(AudioBlockHeader(serial: serial, itemFrame: ringFrame, frameCount: count, kind: .samples, item: item))
            if !announcedReady {
                announcedReady = true
                onEvent(.ready(serial: serial, itemFrame: ringFrame))
            }
            written += count
        }
    }

    /// Waits for a free block; nil when a new request or a stop arrived meanwhile.
    private func waitForSpace() -> UnsafeMutablePointer<Float>? {
        while true {
            if stopping || requestPending { return nil }
            if let block = ring.nextWritableBlock() { return block }
            wake.wait(timeout: Self.idlePoll)
        }
    }
}
