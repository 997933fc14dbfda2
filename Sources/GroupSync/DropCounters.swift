/// Received datagrams that a node dropped, counted by reason.
///
/// Exposed as live statistics; a rising `forged` or `replayed` count means someone is
/// sending to the group's port who should not, or that two groups share a port.
public struct DropCounters: Sendable, Equatable {
    /// Missing or wrong HMAC tag on a keyed node, or a tagged message on an unkeyed node
    /// (which cannot authenticate it).
    public var forged = 0
    /// Sequence number not above the last one accepted from that sender (replays,
    /// duplicates, and packets overtaken in the network).
    public var replayed = 0
    /// Another group's name.
    public var wrongGroup = 0
    /// Structurally invalid (any `DecodeError` except a version mismatch).
    public var malformed = 0
    /// Another protocol version.
    public var wrongVersion = 0
    /// Well-formed and authentic but not meaningful here (a follower's message at a
    /// follower, a reply to no outstanding request, a stale State).
    public var unexpected = 0
    /// Hellos from new followers a leader had no room for: it already served as many from
    /// that address as it allows (`LeaderCore.maximumFollowersPerAddress`), or as many as
    /// it allows at all (`LeaderCore.maximumFollowers`).
    public var refused = 0

    /// Counters all at zero.
    public init() {}

    /// Every dropped datagram.
    public var total: Int { forged + replayed + wrongGroup + malformed + wrongVersion + unexpected + refused }
}
