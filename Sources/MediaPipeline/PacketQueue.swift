import MediaClock
import MutexAnnotations
import Synchronization
internal import CFFmpeg

/// One demuxed packet, owned: freed when the last reference goes.
// @unchecked: the packet is written by the demuxer before it is queued and read only by the
// one decoder that takes it afterwards; the queue's lock orders the two.
final class OwnedPacket: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<AVPacket>

    /// Takes `packet`'s reference (leaving it blank); nil when memory ran out.
    init?(movingFrom packet: UnsafeMutablePointer<AVPacket>) {
        guard let pointer = av_packet_alloc() else { return nil }
        av_packet_move_ref(pointer, packet)
        self.pointer = pointer
    }

    deinit {
        var p: UnsafeMutablePointer<AVPacket>? = pointer
        av_packet_free(&p)
    }
}

/// What a stream's queue carries from the item's demuxer to the stream's decoder.
enum PacketQueueEntry: Sendable {
    case packet(OwnedPacket)
    /// The demuxer has moved for the seek of `serial`: packets before this marker belong to
    /// the position before it.
    case flush(serial: Int)
    /// The input ended here.
    case end
    /// The input failed here for good.
    case failure(MediaError)
    /// The demuxer skipped a damaged packet of the input.
    case damaged
    /// The demuxer dropped `count` picture packets (and the pictures they held) because the
    /// decoder had fallen behind while the sound wanted more data.
    case skipped(count: Int)
}

/// A decoder's side of the seek markers: what it takes from its queue passes only once the
/// demuxer's marker of the decoder's latest seek has come (what was queued before it belongs to
/// the position before the seek).
struct SeekMarkerGate {
    private var awaited = Int.min
    private var latest = Int.min

    /// From now on, entries pass only after the marker of the seek of `serial`.
    mutating func awaitMarker(ofSerial serial: Int) { awaited = serial }

    /// `entry` when it belongs to the latest seek's position; nil for a marker, or for what
    /// the demuxer read before it moved.
    mutating func admit(_ entry: PacketQueueEntry) -> PacketQueueEntry? {
        if case .flush(let serial) = entry {
            latest = max(latest, serial)
            return nil
        }
        return latest >= awaited ? entry : nil
    }
}

/// A bounded FIFO of one stream's packets, between the item's demuxer (`ItemDemuxer`) and
/// the stream's decoder thread. Bounded by the duration of the packets queued (with a cap
/// on bytes and on count for streams whose packets carry no duration), not by a fixed
/// number of packets, so a queue holds about the same stretch of time for any codec.
///
/// The decoder is woken by `consumerSignal` when the demuxer adds to an empty queue, and the
/// demuxer by `producerSignal` when a full queue has drained to half its limits: so the
/// demuxer reads in bursts and neither thread is woken for every packet (which cost a FLAC
/// decode a quarter more CPU).
final class PacketQueue: Sendable {
    /// How much a queue may hold before it counts as full.
    struct Limits: Sendable {
        var nanoseconds: Int64
        var bytes: Int
        var count: Int
    }

    /// The sound's queue: a second of packets, on top of the ring's read-ahead of decoded
    /// sound (`PlaybackEngine.readAhead`).
    static let soundLimits = Limits(nanoseconds: 1_000_000_000, bytes: 16 << 20, count: 2_000)
    /// The pictures' queue: longer than the sound's read-ahead and its own queue together
    /// (two and one seconds), so that while the sound's decoder fills its ring after a start
    /// or a seek the pictures' packets for that stretch still fit; only a picture decoder
    /// that falls further behind than that costs pictures.
    static let pictureLimits = Limits(nanoseconds: 4_000_000_000, bytes: 64 << 20, count: 1_000)
    /// The most a pictures' queue may hold in bytes however long a buffer is asked for.
    static let largestPictureBytes = 256 << 20

    /// The queues' limits for a forward buffer of `forwardBuffer` (an item's
    /// `preferredForwardBufferDuration`; zero: the defaults): the sound's queue holds what the
    /// ring (`readAhead`) does not, and the pictures' still holds more than the sound reads
    /// ahead, so a long buffer does not cost pictures at a start.
    static func limits(forwardBuffer: Duration, readAhead: Duration) -> (sound: Limits, pictures: Limits) {
        let wanted = forwardBuffer.nanosecondsClamped - readAhead.nanosecondsClamped
        guard wanted > soundLimits.nanoseconds else { return (soundLimits, pictureLimits) }
        let factor = Double(wanted) / Double(soundLimits.nanoseconds)
        let sound = Limits(nanoseconds: wanted, bytes: soundLimits.bytes, count: Int(Double(soundLimits.count) * factor))
        let pictureNanoseconds = pictureLimits.nanoseconds - soundLimits.nanoseconds + wanted
        let pictureFactor = Double(pictureNanoseconds) / Double(pictureLimits.nanoseconds)
        let pictures = Limits(nanoseconds: pictureNanoseconds,
                              bytes: min(largestPictureBytes, Int(Double(pictureLimits.bytes) * pictureFactor)),
                              count: Int(Double(pictureLimits.count) * pictureFactor))
        return (sound, pictures)
    }

    /// The duration of the packets queued, in nanoseconds.
    var queuedNanoseconds: Int64 { state.withLockAnnotated { $0.nanoseconds } }

    private struct State {
        var entries: [PacketQueueEntry] = []
        var head = 0
        var nanoseconds: Int64 = 0
        var bytes = 0
        var packets = 0
    }

    let streamIndex: Int32
    /// The stream's time base, to count packet durations.
    private let timeBase: AVRational
    let limits: Limits
    private let state = Mutex(State())
    /// Signalled when a packet or marker is added.
    let consumerSignal = WakeSignal()
    /// Signalled when one is taken (the demuxer's wake-up).
    private let producerSignal: WakeSignal

    init(streamIndex: Int32, timeBase: AVRational, limits: Limits, producerSignal: WakeSignal) {
        self.streamIndex = streamIndex
        self.timeBase = timeBase
        self.limits = limits
        self.producerSignal = producerSignal
    }

    /// Whether the queue holds as much as its limits allow.
    var isFull: Bool {
        state.withLockAnnotated { state in
            state.nanoseconds >= limits.nanoseconds || state.bytes >= limits.bytes || state.packets >= limits.count
        }
    }

    /// Packets queued (for tests and statistics).
    var packetCount: Int { state.withLockAnnotated { $0.packets } }

    /// Adds an entry at the end.
    func push(_ entry: PacketQueueEntry) {
        let wasEmpty = state.withLockAnnotated { state -> Bool in
            let wasEmpty = state.head == state.entries.count
            if case .packet(let packet) = entry {
                state.packets += 1
                state.bytes += Int(packet.pointer.pointee.size)
                state.nanoseconds += nanoseconds(of: packet)
            }
            state.entries.append(entry)
            return wasEmpty
        }
        if wasEmpty { consumerSignal.signal() }
    }

    /// Whether the queue holds under half of each of its limits: a full queue drained this
    /// far wakes the demuxer.
    private func isBelowHalf(_ state: State) -> Bool {
        state.nanoseconds < limits.nanoseconds / 2 && state.bytes < limits.bytes / 2 && state.packets < limits.count / 2
    }

    /// Takes the first entry, or nil when there is none.
    func take() -> PacketQueueEntry? {
        let (entry, drained): (PacketQueueEntry?, Bool) = state.withLockAnnotated { state in
            guard state.head < state.entries.count else { return (nil, false) }
            let wasAboveHalf = !isBelowHalf(state)
            let entry = state.entries[state.head]
            state.head += 1
            if case .packet(let packet) = entry {
                state.packets -= 1
                state.bytes -= Int(packet.pointer.pointee.size)
                state.nanoseconds -= nanoseconds(of: packet)
            }
            // Compacted once the taken part outweighs the rest: amortised O(1) per entry.
            if state.head >= 64 && state.head * 2 >= state.entries.count {
                state.entries.removeFirst(state.head)
                state.head = 0
            }
            return (entry, wasAboveHalf && isBelowHalf(state))
        }
        if drained { producerSignal.signal() }
        return entry
    }

    /// Drops everything queued and adds the marker of the seek of `serial`.
    func flush(serial: Int) {
        let dropped: [PacketQueueEntry] = state.withLockAnnotated { state in
            let old = Array(state.entries[state.head...])
            state = State()
            state.entries.append(.flush(serial: serial))
            return old
        }
        _ = dropped  // freed here, outside the lock
        consumerSignal.signal()
        producerSignal.signal()
    }

    /// Drops everything queued, markers included (the stream is no longer read).
    func clear() {
        let dropped: [PacketQueueEntry] = state.withLockAnnotated { state in
            defer { state = State() }
            return Array(state.entries[state.head...])
        }
        _ = dropped
        producerSignal.signal()
    }

    /// A packet's duration in nanoseconds; 0 when it carries none.
    private func nanoseconds(of packet: OwnedPacket) -> Int64 {
        let duration = packet.pointer.pointee.duration
        guard duration > 0, timeBase.num > 0, timeBase.den > 0 else { return 0 }
        let (scaled, overflow) = duration.multipliedReportingOverflow(by: Int64(timeBase.num) * 1_000_000_000)
        return overflow ? limits.nanoseconds : scaled / Int64(timeBase.den)
    }
}
