import Synchronization

/// What a block in the ring holds.
public enum AudioBlockKind: UInt8, Sendable {
    /// PCM frames.
    case samples
    /// The item's last frame has been delivered; `itemFrame` is the item's end.
    case endOfStream
    /// Reading stopped on an error; `itemFrame` is where the good data ends.
    case failure
}

/// The description of one block, written by the producer before it publishes the block.
public struct AudioBlockHeader: Sendable {
    /// The seek serial the block belongs to; blocks of an older serial are stale.
    public var serial: Int
    /// The item frame (at the ring's sample rate) of the block's first frame.
    public var itemFrame: Int64
    /// How many frames the block holds (0 for markers).
    public var frameCount: Int
    public var kind: AudioBlockKind
    /// The item the block belongs to (the engine numbers each item it loads), so that the
    /// blocks of two items can share the ring.
    public var item: Int = 0
}

/// A single-producer, single-consumer queue of fixed-size PCM blocks.
///
/// Contract: exactly one thread produces (the reader thread) and one consumes (the render
/// thread) at any time. Neither side allocates, locks or waits: all storage is allocated in
/// `init`, and the two sides meet only through two atomic counters. The producer fills the
/// block at `writeCount`, then publishes it with a release store; the consumer reads it after
/// an acquire load and hands it back the same way. Blocks are tagged with a seek serial so
/// that the consumer can drop stale data after a seek without the producer's help (ffplay's
/// scheme).
// @unchecked: the sample and header buffers are raw memory shared by one producer and one
// consumer; a block is the producer's until `written` is stored with release ordering and
// the consumer's until `read` is, so each block has one owner at a time.
public final class AudioRing: @unchecked Sendable {
    /// Frames one block holds. 1024 frames is one AAC frame and about 21 ms at 48 kHz: small
    /// enough that a seek discards little, large enough that per-block overhead is noise.
    public static let framesPerBlock = 1024

    public let format: AudioFormat
    public let blockCount: Int
    private let samples: UnsafeMutablePointer<Float>
    private let headers: UnsafeMutablePointer<AudioBlockHeader>
    private let written = Atomic<Int>(0)
    private let read = Atomic<Int>(0)

    /// A ring that holds at least `capacity` of audio in `format`.
    public init(format: AudioFormat, capacity: Duration) {
        self.format = format
        let frames = Int(format.frames(in: capacity))
        blockCount = max(4, (frames + Self.framesPerBlock - 1) / Self.framesPerBlock)
        let sampleCount = blockCount * Self.framesPerBlock * format.channels
        samples = .allocate(capacity: sampleCount)
        samples.initialize(repeating: 0, count: sampleCount)
        headers = .allocate(capacity: blockCount)
        headers.initialize(repeating: AudioBlockHeader(serial: -1, itemFrame: 0, frameCount: 0, kind: .samples), count: blockCount)
    }

    deinit {
        samples.deallocate()
        headers.deallocate()
    }

    // MARK: Producer side

    /// Whether a block can be written now.
    public var hasSpace: Bool {
        written.load(ordering: .relaxed) - read.load(ordering: .acquiring) < blockCount
    }

    /// The sample storage of the next block to write (`framesPerBlock * channels` floats),
    /// or nil when the ring is full. Producer only.
    public func nextWritableBlock() -> UnsafeMutablePointer<Float>? {
        let index = written.load(ordering: .relaxed)
        guard index - read.load(ordering: .acquiring) < blockCount else { return nil }
        return samples + (index % blockCount) * Self.framesPerBlock * format.channels
    }

    /// Publishes the block obtained from `nextWritableBlock()`. Producer only.
    public func commitBlock(_ header: AudioBlockHeader) {
        let index = written.load(ordering: .relaxed)
        headers[index % blockCount] = header
        written.store(index + 1, ordering: .releasing)
    }

    // MARK: Consumer side

    /// The oldest unread block, or nil when the ring is empty. Consumer only.
    public func peek() -> (header: AudioBlockHeader, samples: UnsafePointer<Float>)? {
        let index = read.load(ordering: .relaxed)
        guard index < written.load(ordering: .acquiring) else { return nil }
        let slot = index % blockCount
        return (headers[slot], UnsafePointer(samples + slot * Self.framesPerBlock * format.channels))
    }

    /// Hands the oldest block back to the producer. Consumer only.
    public func pop() {
        let index = read.load(ordering: .relaxed)
        guard index < written.load(ordering: .acquiring) else { return }
        read.store(index + 1, ordering: .releasing)
    }

    /// The newest block's header, when any waits: once published it is the consumer's until
    /// read, so reading it races nothing. Consumer only.
    public var newestHeader: AudioBlockHeader? {
        let newest = written.load(ordering: .acquiring) - 1
        guard newest >= read.load(ordering: .relaxed) else { return nil }
        return headers[newest % blockCount]
    }

    /// How many blocks are waiting to be read; safe from any thread, approximate.
    public var queuedBlocks: Int {
        max(0, written.load(ordering: .acquiring) - read.load(ordering: .acquiring))
    }
}
