import MediaClock

/// Which senders' datagrams a node dropped, and why, gathered between two lines of its log:
/// a node with a different or missing key, another group on the same port, or someone
/// forging. Said now and then rather than per datagram, so a flood cannot flood the log,
/// and never silently: a follower with the wrong key otherwise waits in silence, and its
/// leader says nothing either.
///
/// Only reasons that point at a misconfigured or hostile sender are reported. Replays
/// (duplicates, and datagrams overtaken on a busy path) and well-formed messages that do not
/// apply here happen on any real network, and are only counted (`DropCounters`).
public struct DropReport: Sendable {
    /// Senders told apart between two reports; datagrams from any more are reported
    /// together, so spoofed source addresses cannot grow the report without bound.
    public static let maximumSenders = 8
    /// Least time between two reports in a node's log: the first drop is said at once (a
    /// wrong key is then plain at a glance), a steady stream of them every ten seconds.
    public static let interval: Duration = .seconds(10)

    private var senders: [(source: UDPEndpoint, counts: DropCounters)] = []
    private var others = DropCounters()
    /// When lines were last taken for the log.
    private var reportedAt: HostTime?

    /// An empty report.
    public init() {}

    /// Whether nothing worth reporting was noted since the last `take()`.
    public var isEmpty: Bool { senders.isEmpty && Self.reportable(others) == 0 }

    /// Notes datagrams from `source` dropped for the reasons counted in `dropped`; only
    /// the reportable reasons are kept.
    public mutating func note(from source: UDPEndpoint, dropped: DropCounters) {
        var change = DropCounters()
        for reason in Self.reportableReasons { change[keyPath: reason] = dropped[keyPath: reason] }
        guard Self.reportable(change) > 0 else { return }
        if let index = senders.firstIndex(where: { $0.source == source }) {
            senders[index].counts.add(change)
        } else if senders.count < Self.maximumSenders {
            senders.append((source, change))
        } else {
            others.add(change)
        }
    }

    /// The lines due in the log at `now`: none when nothing was noted, or when lines were
    /// taken less than `interval` ago, unless `finally` (a node stopping says what is left).
    public mutating func due(now: HostTime, finally: Bool = false) -> [String] {
        guard !isEmpty, finally || reportedAt.map({ now - $0 >= Self.interval }) ?? true else { return [] }
        reportedAt = now
        return take()
    }

    /// One line per sender noted (in the order first seen), and one for any beyond
    /// `maximumSenders`; forgets them.
    public mutating func take() -> [String] {
        var lines = senders.map { "ignored \(Self.describe($0.counts)) from \($0.source)" }
        if Self.reportable(others) > 0 { lines.append("ignored \(Self.describe(others)) from other senders") }
        senders.removeAll()
        others = DropCounters()
        return lines
    }

    /// The reasons that point at a misconfigured or hostile sender.
    private static let reportableReasons: [WritableKeyPath<DropCounters, Int> & Sendable] =
        [\.forged, \.wrongGroup, \.wrongVersion, \.malformed, \.refused]

    private static func reportable(_ counts: DropCounters) -> Int {
        reportableReasons.reduce(0) { $0 + counts[keyPath: $1] }
    }

    private static func describe(_ counts: DropCounters) -> String {
        var parts: [String] = []
        func plural(_ count: Int) -> String { count == 1 ? "1 datagram" : "\(count) datagrams" }
        if counts.forged > 0 {
            parts.append("\(plural(counts.forged)) that failed authentication (a different or missing --key-file, or forged)")
        }
        if counts.wrongGroup > 0 { parts.append("\(plural(counts.wrongGroup)) for another group (--group)") }
        if counts.wrongVersion > 0 { parts.append("\(plural(counts.wrongVersion)) of another protocol version") }
        if counts.malformed > 0 { parts.append("\(plural(counts.malformed)) that were malformed") }
        if counts.refused > 0 {
            parts.append("\(counts.refused == 1 ? "1 Hello" : "\(counts.refused) Hellos") from new followers with no room left (\(LeaderCore.maximumFollowersPerAddress) per address, \(LeaderCore.maximumFollowers) in all)")
        }
        return parts.joined(separator: ", ")
    }
}

extension DropCounters {
    /// Adds another set of counts, reason by reason.
    mutating func add(_ other: DropCounters) {
        forged += other.forged
        replayed += other.replayed
        wrongGroup += other.wrongGroup
        malformed += other.malformed
        wrongVersion += other.wrongVersion
        unexpected += other.unexpected
        refused += other.refused
    }

    /// The reasons with drops, as "forged 3, replayed 5", or "none".
    public var breakdown: String {
        let reasons = [("forged", forged), ("replayed", replayed), ("other group", wrongGroup),
                       ("malformed", malformed), ("other version", wrongVersion), ("unexpected", unexpected), ("refused", refused)]
        let parts = reasons.filter { $0.1 > 0 }.map { "\($0.0) \($0.1)" }
        return parts.isEmpty ? "none" : parts.joined(separator: ", ")
    }
}
