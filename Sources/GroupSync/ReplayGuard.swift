/// Per-sender high-water marks of accepted sequence numbers: a message is fresh only if
/// its sequence is above the last one accepted from its sender.
///
/// Bounded: at most `capacity` senders are remembered; when full, the sender heard from
/// least recently is forgotten. (A forgotten sender's old messages could be replayed
/// once; with keys that needs a captured message *and* a flood of valid senders, which
/// only key holders can produce.)
public struct ReplayGuard: Sendable {
    /// Senders remembered: far above any real group (tens of rooms), small enough to scan.
    public static let defaultCapacity = 256

    private struct Mark {
        var sequence: UInt64
        var lastUsed: UInt64
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

    /// Whether `sequence` from `sender` is fresh; if so it becomes the sender's mark.
    public mutating func accept(sender: UInt64, sequence: UInt64) -> Bool {
        clock &+= 1
        if let mark = marks[sender] {
            guard sequence > mark.sequence else { return false }
            marks[sender] = Mark(sequence: sequence, lastUsed: clock)
            return true
        }
        if marks.count >= capacity, let oldest = marks.min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key {
            marks[oldest] = nil
        }
        marks[sender] = Mark(sequence: sequence, lastUsed: clock)
        return true
    }

    /// Forgets every sender.
    public mutating func reset() {
        marks = [:]
    }
}
