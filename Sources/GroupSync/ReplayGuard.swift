/// Per-sender windows of accepted sequence numbers: a message is fresh if its sequence is
/// above the highest accepted from its sender, or below it by less than `windowSize` and
/// not seen before.
///
/// A network may reorder datagrams; on a path with milliseconds of jitter, clock replies
/// sent 2 ms apart overtake each other often, and a high-water mark alone dropped one
/// reply in ten as a replay while each was unique. The window (a bitmap of the sequences
/// below the highest, as IPsec's anti-replay window keeps) accepts each sequence once,
/// whatever its order, and refuses duplicates, replays, and anything older than the
/// window.
///
/// Bounded: at most `capacity` senders are remembered; when full, the sender heard from
/// least recently is forgotten. (A forgotten sender's old messages could be replayed
/// once; with keys that needs a captured message *and* a flood of valid senders, which
/// only key holders can produce.)
public struct ReplayGuard: Sendable {
    /// Senders remembered: far above any real group (tens of rooms), small enough to scan.
    public static let defaultCapacity = 256
    /// Sequences below a sender's highest that are still told apart (bits of the window).
    /// A leader numbers everything it sends from one counter, so the reordering a follower
    /// sees is the leader's message rate times the path's jitter: a few dozen followers
    /// joining at 500 polls a second over 4 ms of jitter stay inside 1024.
    public static let windowSize = 1024
    private static let words = windowSize / 64

    private struct Mark {
        var highest: UInt64
        /// Bit i of word i / 64 set: sequence `highest − i` was accepted.
        var seen: [UInt64]
        var lastUsed: UInt64

        /// Whether `sequence` is fresh; if so it is marked as seen.
        mutating func accept(_ sequence: UInt64) -> Bool {
            if sequence > highest {
                ReplayGuard.shift(&seen, by: sequence - highest)
                seen[0] |= 1
                highest = sequence
                return true
            }
            let age = highest - sequence
            guard age < UInt64(ReplayGuard.windowSize) else { return false }
            let word = Int(age / 64), bit = UInt64(1) << (age % 64)
            guard seen[word] & bit == 0 else { return false }
            seen[word] |= bit
            return true
        }
    }

    /// Most senders remembered at once.
    public let capacity: Int
    private var marks: [UInt64: Mark] = [:]
    private var clock: UInt64 = 0

    /// An empty guard remembering up to `capacity` senders (at least 1).
    public init(capacity: Int = ReplayGuard.defaultCapacity) {
        self.capacity = max(1, capacity)
    }

    /// Senders currently remembered.
    public var count: Int { marks.count }

    /// Whether `sequence` from `sender` is fresh; if so it is marked as seen.
    public mutating func accept(sender: UInt64, sequence: UInt64) -> Bool {
        clock &+= 1
        // Through optional chaining the mark is changed in place: its bitmap is not copied.
        if let accepted = marks[sender]?.accept(sequence) {
            if accepted { marks[sender]?.lastUsed = clock }
            return accepted
        }
        if marks.count >= capacity, let oldest = marks.min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key {
            marks[oldest] = nil
        }
        var seen = [UInt64](repeating: 0, count: Self.words)
        seen[0] = 1
        marks[sender] = Mark(highest: sequence, seen: seen, lastUsed: clock)
        return true
    }

    /// Ages the window by `distance` sequences: bit i moves to bit i + distance.
    private static func shift(_ seen: inout [UInt64], by distance: UInt64) {
        guard distance < UInt64(windowSize) else {
            for index in seen.indices { seen[index] = 0 }
            return
        }
        let wordShift = Int(distance / 64), bitShift = distance % 64
        for index in stride(from: words - 1, through: 0, by: -1) {
            let source = index - wordShift
            var value: UInt64 = source >= 0 ? seen[source] << bitShift : 0
            if bitShift > 0, source - 1 >= 0 { value |= seen[source - 1] >> (64 - bitShift) }
            seen[index] = value
        }
    }

    /// Forgets one sender's window: its next message is taken as its first.
    public mutating func forget(sender: UInt64) {
        marks[sender] = nil
    }

    /// Forgets every sender.
    public mutating func reset() {
        marks = [:]
    }
}
