import MediaClock

/// The receive-side filter every datagram passes before a core sees it: decode, then
/// check group, tag and freshness, dropping and counting what fails.
///
/// Checks, in order (the first failure decides the counter):
/// 1. structure (`DecodeError`): `wrongVersion` for another version, else `malformed`;
/// 2. group name: `wrongGroup`;
/// 3. tag: a keyed gate drops untagged or wrongly tagged messages, an unkeyed gate drops
///    tagged ones (it cannot verify them): `forged`;
/// 4. sequence: not above the sender's high-water mark: `replayed`.
/// The high-water mark only moves for messages that passed 1-3, so forged traffic cannot
/// push a real sender's mark forward.
public struct MessageGate: Sendable {
    /// The codec (and key) used to decode and verify.
    public let codec: WireCodec
    /// The group this node belongs to.
    public let group: String
    /// Drops so far, by reason.
    public private(set) var counters = DropCounters()
    /// The drops that point at a misconfigured or hostile sender, by sender, for the log.
    private var report = DropReport()
    private var replayGuard: ReplayGuard

    /// A gate for `group`, verifying with `codec`'s key if it has one.
    public init(group: String, codec: WireCodec, replayCapacity: Int = ReplayGuard.defaultCapacity) {
        self.group = group
        self.codec = codec
        replayGuard = ReplayGuard(capacity: replayCapacity)
    }

    /// The message in `datagram` if it passes every check; otherwise `nil`, counted (and,
    /// when `source` is given, noted for the drop report).
    public mutating func admit(_ datagram: [UInt8], from source: UDPEndpoint? = nil) -> GroupMessage? {
        let decoded: WireCodec.Decoded
        do {
            decoded = try codec.decode(datagram)
        } catch {
            if case .unsupportedVersion = error { drop(\.wrongVersion, from: source) } else { drop(\.malformed, from: source) }
            return nil
        }
        guard decoded.message.group == group else {
            drop(\.wrongGroup, from: source)
            return nil
        }
        let authenticated = codec.authenticator == nil ? !decoded.isTagged : decoded.isAuthentic
        guard authenticated else {
            drop(\.forged, from: source)
            return nil
        }
        guard replayGuard.accept(sender: decoded.message.senderID, sequence: decoded.message.sequence) else {
            drop(\.replayed, from: source)
            return nil
        }
        return decoded.message
    }

    /// Counts a Hello refused for want of room (`DropCounters.refused`), noted against
    /// `source` for the drop report.
    public mutating func countRefused(from source: UDPEndpoint) {
        drop(\.refused, from: source)
    }

    /// The drop report's lines due in the log (see `DropReport.due(now:finally:)`).
    public mutating func dropReportLines(now: HostTime, finally: Bool = false) -> [String] {
        report.due(now: now, finally: finally)
    }

    private mutating func drop(_ reason: WritableKeyPath<DropCounters, Int>, from source: UDPEndpoint?) {
        counters[keyPath: reason] += 1
        guard let source else { return }
        var one = DropCounters()
        one[keyPath: reason] = 1
        report.note(from: source, dropped: one)
    }

    /// Forgets `sender`'s replay window (see `ReplayGuard.forget(sender:)`).
    public mutating func forgetSequences(of sender: UInt64) {
        replayGuard.forget(sender: sender)
    }

    /// Counts a message the core found meaningless here (see `DropCounters.unexpected`).
    public mutating func countUnexpected() {
        drop(\.unexpected, from: nil)
    }
}
