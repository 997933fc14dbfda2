/// One Chorus datagram: the header's sender, sequence and group, and a typed payload.
///
/// See protocol.md for the byte layout. `WireCodec` encodes and decodes it.
public struct GroupMessage: Sendable, Equatable {
    /// Longest group name in UTF-8 bytes.
    public static let maximumGroupNameBytes = 64

    /// Checks that `group` can name a group on the wire: 1 to 64 UTF-8 bytes.
    static func validateGroupName(_ group: String) throws(EncodeError) {
        let groupBytes = group.utf8.count
        guard groupBytes > 0, groupBytes <= maximumGroupNameBytes else {
            throw .invalidGroupName(byteCount: groupBytes)
        }
    }

    /// Random per process start; identifies the sending node.
    public var senderID: UInt64
    /// Strictly increasing per sender, starting at 1 (replay protection).
    public var sequence: UInt64
    /// The group this message belongs to; other groups' messages are dropped.
    public var group: String
    /// The message type and its fields.
    public var payload: Payload

    /// A message with every header field given.
    public init(senderID: UInt64, sequence: UInt64, group: String, payload: Payload) {
        self.senderID = senderID
        self.sequence = sequence
        self.group = group
        self.payload = payload
    }

    /// The wire message type of `payload`.
    public var type: MessageType { payload.type }

    /// The typed body of a message.
    public enum Payload: Sendable, Equatable {
        /// Follower to leader: join or keep alive.
        case hello(Hello)
        /// Leader to follower: reply to Hello.
        case welcome(Welcome)
        /// Follower to leader: a clock probe.
        case clockRequest(ClockRequest)
        /// Leader to follower: the probe's answer.
        case clockReply(ClockReply)
        /// Leader to followers: what is playing and when.
        case state(GroupState)
        /// Either way: the sender is leaving.
        case goodbye

        /// The wire message type of this payload.
        public var type: MessageType {
            switch self {
            case .hello: .hello
            case .welcome: .welcome
            case .clockRequest: .clockRequest
            case .clockReply: .clockReply
            case .state: .state
            case .goodbye: .goodbye
            }
        }
    }

    /// Hello body: who the follower is.
    public struct Hello: Sendable, Equatable {
        /// Human-readable follower name (at most 255 UTF-8 bytes).
        public var followerName: String
        /// The follower's output latency offset in microseconds (informational).
        public var latencyOffsetMicroseconds: Int32

        /// A Hello body.
        public init(followerName: String, latencyOffsetMicroseconds: Int32 = 0) {
            self.followerName = followerName
            self.latencyOffsetMicroseconds = latencyOffsetMicroseconds
        }
    }

    /// Welcome body: the leader's identity and how to reach its items.
    public struct Welcome: Sendable, Equatable {
        /// The leader's sender ID; a change means a new leader.
        public var leaderID: UInt64
        /// How often the leader sends State, in milliseconds.
        public var statePeriodMilliseconds: UInt32
        /// HTTP base URL where the leader serves items (range requests).
        public var baseURL: String

        /// A Welcome body.
        public init(leaderID: UInt64, statePeriodMilliseconds: UInt32, baseURL: String) {
            self.leaderID = leaderID
            self.statePeriodMilliseconds = statePeriodMilliseconds
            self.baseURL = baseURL
        }
    }

    /// ClockRequest body: the follower's transmit time.
    public struct ClockRequest: Sendable, Equatable {
        /// Matches the reply to the request.
        public var requestID: UInt32
        /// Follower host time at transmit (ns).
        public var t1: Int64

        /// A ClockRequest body.
        public init(requestID: UInt32, t1: Int64) {
            self.requestID = requestID
            self.t1 = t1
        }
    }

    /// ClockReply body: the request echoed and the leader's receive and transmit times.
    public struct ClockReply: Sendable, Equatable {
        /// The request's ID.
        public var requestID: UInt32
        /// The request's t1, echoed.
        public var t1: Int64
        /// Leader time at which the request was received (ns).
        public var t2: Int64
        /// Leader time at which this reply was sent (ns).
        public var t3: Int64

        /// A ClockReply body.
        public init(requestID: UInt32, t1: Int64, t2: Int64, t3: Int64) {
            self.requestID = requestID
            self.t1 = t1
            self.t2 = t2
            self.t3 = t3
        }
    }
}
