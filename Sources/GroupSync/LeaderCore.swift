import MediaClock

/// The leader's protocol logic, with no I/O: feed it events with the current host time
/// and perform the actions it returns.
///
/// It answers clock requests at once, registers followers that say Hello (and forgets
/// them after `followerTimeout` of silence), welcomes them, and sends the group state to
/// every follower every `statePeriod` and immediately on every change, so a lost State or
/// a late joiner costs at most one period.
///
/// Driving it: call `handle(.received(bytes, from:, receivedAt:), at: HostTime.now())`
/// for every datagram from `UDPSocket`, `handle(.tick, at:)` every `tickInterval` or so,
/// and `handle(.stateChanged(state), at:)` when the player's state changes; send every
/// `.send` action's bytes right away (its ClockReply carries t3 = `now`).
/// Not thread-safe: drive it from one serial context.
public struct LeaderCore: Sendable {
    // MARK: Tuning constants

    /// How often State is repeated: a lost State or a late joiner costs at most this.
    public static let defaultStatePeriod: Duration = .milliseconds(250)
    /// A follower silent this long is forgotten: five missed one-second Hellos.
    public static let defaultFollowerTimeout: Duration = .seconds(5)
    /// Most followers served: bounds memory and the State fan-out against Hello floods.
    public static let maximumFollowers = 128
    /// Most followers served from one address: more rooms than one machine drives (a
    /// video wall's host, a test rig), and a sender cycling through sender IDs from one
    /// machine then holds at most this many slots, leaving the rest to the other rooms.
    public static let maximumFollowersPerAddress = 16
    /// A suggested tick period for the adapter: fine enough for `statePeriod` timing.
    public static let tickInterval: Duration = .milliseconds(10)

    /// A follower the leader is serving.
    public struct Follower: Sendable, Equatable {
        /// The follower's sender ID.
        public var senderID: UInt64
        /// Where it sends from, and so where State goes.
        public var endpoint: UDPEndpoint
        /// Its name from Hello.
        public var name: String
        /// Its latency offset from Hello, in microseconds.
        public var latencyOffsetMicroseconds: Int32
        /// When it was last heard from (leader host time).
        public var lastHeard: HostTime
    }

    /// What happened.
    public enum Event: Sendable {
        /// A datagram arrived from `from`; `receivedAt` is the adapter's receive time
        /// (kernel timestamp when available), used as t2 of a clock exchange.
        case received([UInt8], from: UDPEndpoint, receivedAt: HostTime)
        /// Time passed; sends periodic State and expires followers.
        case tick
        /// The group's playback changed; the core assigns the state sequence and sends it.
        case stateChanged(GroupState)
        /// The live item playing has jumped in time again and the leader closed the jump up:
        /// its State carries `splices` from its next repeat on, for the rooms that open the
        /// item after the jump. The sequence stays: what plays has not changed.
        case splicesFound([TimelineSplice])
        /// The leader is shutting down: Goodbye to every follower; later events are ignored.
        case stop
    }

    /// What to do.
    public enum Action: Sendable, Equatable {
        /// Send this datagram now.
        case send(OutgoingDatagram)
        /// A new follower said Hello.
        case followerJoined(Follower)
        /// A follower said Goodbye or timed out.
        case followerLeft(Follower)
        /// A message could not be encoded (a URL too long for its field); nothing was sent.
        case encodingFailed(EncodeError)
    }

    /// The leader's sender ID (the "leader ID" followers see).
    public var senderID: UInt64 { sender.senderID }
    /// How often State is repeated.
    public let statePeriod: Duration
    /// Silence after which a follower is forgotten.
    public let followerTimeout: Duration
    /// Where followers fetch items.
    public let baseURL: String
    /// The state announced, with the sequence the core assigned.
    public private(set) var state: GroupState
    /// Datagrams dropped, by reason.
    public var dropCounters: DropCounters { gate.counters }
    /// Which senders' datagrams were dropped and why, as lines due in the log at `now`
    /// (`DropReport`).
    public mutating func dropReportLines(now: HostTime, finally: Bool = false) -> [String] {
        gate.dropReportLines(now: now, finally: finally)
    }
    /// Followers being served, by sender ID.
    public private(set) var followers: [UInt64: Follower] = [:]

    private var sender: MessageSender
    private var gate: MessageGate
    private var nextStateAt: HostTime?
    private var stopped = false

    /// A leader for `group`, serving items under `baseURL`. With an authenticator every
    /// message is tagged and untagged ones are dropped. `senderID` is random by default,
    /// as the protocol requires (one per process start). Throws if the group name is
    /// empty or over 64 UTF-8 bytes.
    public init(
        group: String,
        baseURL: String,
        authenticator: MessageAuthenticator? = nil,
        statePeriod: Duration = LeaderCore.defaultStatePeriod,
        followerTimeout: Duration = LeaderCore.defaultFollowerTimeout,
        senderID: UInt64 = UInt64.random(in: 1...UInt64.max)
    ) throws(EncodeError) {
        try GroupMessage.validateGroupName(group)
        let codec = WireCodec(authenticator: authenticator)
        sender = MessageSender(senderID: senderID, group: group, codec: codec)
        gate = MessageGate(group: group, codec: codec)
        self.statePeriod = statePeriod
        self.followerTimeout = followerTimeout
        self.baseURL = baseURL
        var initial = GroupState.stoppedState
        initial.sequence = 1
        state = initial
    }

    /// Processes one event at host time `now` and returns what to do, in order.
    public mutating func handle(_ event: Event, at now: HostTime) -> [Action] {
        var actions: [Action] = []
        guard !stopped else { return actions }
        switch event {
        case let .received(bytes, source, receivedAt):
            receive(bytes, from: source, receivedAt: receivedAt, now: now, into: &actions)
        case .tick:
            expireFollowers(now: now, into: &actions)
            if let due = nextStateAt, now >= due { broadcastState(now: now, into: &actions) }
        case let .stateChanged(newState):
            var stamped = newState
            stamped.sequence = state.sequence + 1
            state = stamped
            broadcastState(now: now, into: &actions)
        case let .splicesFound(splices):
            if !state.stopped { state.splices = GroupState.rising(splices) }
        case .stop:
            for follower in followers.values.sorted(by: { $0.senderID < $1.senderID }) {
                append(.goodbye, to: follower.endpoint, into: &actions)
            }
            followers = [:]
            nextStateAt = nil
            stopped = true
        }
        return actions
    }

    private mutating func receive(_ bytes: [UInt8], from source: UDPEndpoint, receivedAt: HostTime, now: HostTime, into actions: inout [Action]) {
        guard let message = gate.admit(bytes, from: source) else { return }
        switch message.payload {
        case let .hello(hello):
            let isNew = followers[message.senderID] == nil
            if isNew {
                // One socket is one follower: a new sender ID from an endpoint already served
                // is that follower restarted on the same port (or a sender cycling IDs), and
                // takes its slot over instead of holding a second until the first times out.
                for previous in followers.values where previous.endpoint == source {
                    followers[previous.senderID] = nil
                    actions.append(.followerLeft(previous))
                }
                let fromAddress = followers.values.filter { $0.endpoint.address == source.address }.count
                if fromAddress >= Self.maximumFollowersPerAddress || followers.count >= Self.maximumFollowers {
                    gate.countRefused(from: source)
                    return
                }
            }
            let follower = Follower(
                senderID: message.senderID, endpoint: source, name: hello.followerName,
                latencyOffsetMicroseconds: hello.latencyOffsetMicroseconds, lastHeard: now
            )
            followers[message.senderID] = follower
            if isNew { actions.append(.followerJoined(follower)) }
            let period = UInt32(clamping: statePeriod.nanosecondCount / 1_000_000)
            append(.welcome(.init(leaderID: senderID, statePeriodMilliseconds: period, baseURL: baseURL)), to: source, into: &actions)
            // A joiner gets the state at once instead of waiting up to a period.
            append(.state(state), to: source, into: &actions)
            if nextStateAt == nil { nextStateAt = now + statePeriod }
        case let .clockRequest(request):
            if var follower = followers[message.senderID] {
                follower.lastHeard = now
                follower.endpoint = source
                followers[message.senderID] = follower
            }
            let reply = GroupMessage.ClockReply(
                requestID: request.requestID, t1: request.t1,
                t2: receivedAt.nanoseconds, t3: now.nanoseconds
            )
            append(.clockReply(reply), to: source, into: &actions)
        case .goodbye:
            if let follower = followers.removeValue(forKey: message.senderID) {
                actions.append(.followerLeft(follower))
            }
        case .welcome, .clockReply, .state:
            // Another leader in the same group, or a reflection: not for a leader.
            gate.countUnexpected()
        }
    }

    private mutating func expireFollowers(now: HostTime, into actions: inout [Action]) {
        let expired = followers.values.filter { now - $0.lastHeard >= followerTimeout }
        for follower in expired.sorted(by: { $0.senderID < $1.senderID }) {
            followers[follower.senderID] = nil
            actions.append(.followerLeft(follower))
        }
    }

    private mutating func broadcastState(now: HostTime, into actions: inout [Action]) {
        for follower in followers.values.sorted(by: { $0.senderID < $1.senderID }) {
            append(.state(state), to: follower.endpoint, into: &actions)
        }
        nextStateAt = now + statePeriod
    }

    /// `datagram` again with t3 moved to `t3` if it is a clock reply (unchanged otherwise,
    /// or if `t3` would come before the request's arrival): the adapter reads its clock
    /// again just before sending, so that t3 leaves out the time spent on the request
    /// (checking, deciding, encoding: tens of µs on a cold path) that would otherwise
    /// count as reply delay, and half of it as offset.
    public func restamped(_ datagram: OutgoingDatagram, t3: HostTime) -> OutgoingDatagram {
        guard case .clockReply(var reply) = datagram.message.payload, t3.nanoseconds >= reply.t2 else { return datagram }
        reply.t3 = t3.nanoseconds
        var message = datagram.message
        message.payload = .clockReply(reply)
        guard let bytes = try? sender.codec.encode(message) else { return datagram }
        return OutgoingDatagram(bytes: bytes, destination: datagram.destination, message: message)
    }

    private mutating func append(_ payload: GroupMessage.Payload, to destination: UDPEndpoint, into actions: inout [Action]) {
        switch sender.datagram(payload, to: destination) {
        case let .success(datagram): actions.append(.send(datagram))
        case let .failure(error): actions.append(.encodingFailed(error))
        }
    }
}
