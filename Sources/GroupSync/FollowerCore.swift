import MediaClock

/// The follower's protocol logic, with no I/O: feed it events with the current host time
/// and perform the actions it returns.
///
/// It says Hello at start, every `unwelcomedHelloInterval` until the leader's Welcome
/// arrives and every `helloInterval` after, polls the leader's clock on the
/// estimator's schedule, and tells the player what to play (`apply`) when a newer State
/// arrives or the clock estimate moves materially. When the leader goes quiet it reports
/// `holdover` (keep playing on the last estimate) after `holdoverTimeout`, then
/// `fadeOutAndWait` after `holdoverLimit`, and `rejoin` when the leader is heard again; a
/// different leader ID resets the clock estimate and the state sequence.
///
/// Driving it: `handle(.start, at:)` once; `handle(.received(bytes, from:, receivedAt:),
/// at:)` for every datagram from `UDPSocket` (`receivedAt` is t4 of a clock exchange);
/// `handle(.tick, at:)` every `tickInterval` or so and again at `nextPollAt`;
/// `handle(.stop, at:)` on exit.
/// Not thread-safe: drive it from one serial context.
public struct FollowerCore: Sendable {
    // MARK: Tuning constants

    /// Hello keepalive period; the leader forgets a follower after five missed ones.
    public static let helloInterval: Duration = .seconds(1)
    /// Hello period until the leader has answered with a Welcome, which carries the base
    /// URL relative item URLs need: a lost Hello or Welcome (one in ten each way on a bad
    /// Wi-Fi path) then costs a tenth of a second of the join instead of a second.
    public static let unwelcomedHelloInterval: Duration = .milliseconds(100)
    /// Clock requests go no faster than this after the join burst while no leader has
    /// answered anything: the burst's eight are all lost only on a path losing most
    /// datagrams, and a leader that ignores the follower (another key or group, or none
    /// there) was otherwise asked a thousand times a second.
    public static let unansweredPollInterval: Duration = .milliseconds(100)
    /// Silence from the leader after which the follower is in holdover: eight State periods,
    /// so bursts of loss on Wi-Fi do not flap. Playback continues on the last estimate,
    /// which drifts by at most the residual rate error (a few ppm: microseconds per second).
    public static let defaultHoldoverTimeout: Duration = .seconds(2)
    /// Silence after which the follower fades out and waits: ten seconds of free-running at
    /// a few ppm is still inaudible, beyond it rooms may audibly part.
    public static let defaultHoldoverLimit: Duration = .seconds(10)
    /// Offset uncertainty (one standard deviation) an estimate must reach before a state is
    /// played on it: a follower that starts on a looser estimate starts off by as much and
    /// spends seconds slewing toward the leader at the soft tier's bounded rate (a start
    /// 600 µs off took 2.4 s to stay within 100 µs). Two deviations of it are inside the
    /// 100 µs a joined follower is held to. A quiet path is there within its burst; on one
    /// with milliseconds of jitter and a blurred floor an honest estimate gets there within
    /// about half a second (polling every `ClockEstimator.startingInterval`), where 30 µs
    /// took a second longer.
    public static let startingUncertainty: Duration = .microseconds(50)
    /// Exchanges after which a state is played even on an estimate not yet that sure: a
    /// path so disturbed that its estimate is still unsure after about a second of the
    /// join's fast polling plays roughly in step rather than not at all.
    public static let unconvergedPlayAfterSamples = 400
    /// A new estimate that moves the predicted leader time by more than this re-applies the
    /// state: smaller moves are left to the player's soft correction (dead band).
    public static let materialEstimateChange: Duration = .microseconds(100)
    /// Outstanding clock requests remembered; older ones are forgotten (replies then count
    /// as unexpected). At the converging poll (2 ms) this covers 64 ms: six times the
    /// slowest round trip of a 5 ms ± 2 ms path.
    public static let maximumPendingRequests = 32
    /// The latest a transmit stamp may fall after its request's clock read (the encoding,
    /// the send call, a driver's queue): a millisecond covers a preempted sender; a later
    /// stamp is taken for another datagram's and ignored.
    public static let maximumTransmitDelay: Duration = .milliseconds(1)
    /// A suggested tick period for the adapter: keepalives, silence detection and the
    /// slower polls; the converging poll is faster still and is woken for (`nextPollAt`).
    public static let tickInterval: Duration = .milliseconds(5)

    /// Where the follower stands.
    public enum Phase: Sendable, Equatable {
        /// Not started, or stopped.
        case idle
        /// Started; no message from a leader yet.
        case joining
        /// Hearing the leader.
        case following
        /// The leader is quiet; playing on the last estimate.
        case holdover
        /// The leader is gone (quiet past the limit, or said Goodbye); faded out.
        case waiting
    }

    /// What happened.
    public enum Event: Sendable {
        /// Begin: say Hello and start the clock burst.
        case start
        /// A datagram arrived; `receivedAt` is the adapter's receive time (kernel
        /// timestamp when available), used as t4 of a clock exchange.
        case received([UInt8], from: UDPEndpoint, receivedAt: HostTime)
        /// Time passed: keepalives, clock polls, silence detection.
        case tick
        /// Leaving: Goodbye to the leader.
        case stop
        /// The clock request `requestID` left at `at` by the kernel's transmit stamp: a
        /// truer t1 than the clock read the request carries, which is kept for matching
        /// the reply's echo.
        case transmitted(requestID: UInt32, at: HostTime)
    }

    /// What to do.
    public enum Action: Sendable, Equatable {
        /// Send this datagram now.
        case send(OutgoingDatagram)
        /// A leader welcomed us: its ID, state period and base URL for items.
        case joined(GroupMessage.Welcome)
        /// A new clock estimate: install it in the `LeaderClock`.
        case updateClock(ClockEstimate)
        /// Play `state` using `estimate`: convert `anchorLeaderTime` with
        /// `estimate.hostTime(atLeader:)` and call `setRate(_:time:atHostTime:)`.
        case apply(GroupState, ClockEstimate)
        /// The leader went quiet: keep playing on the last estimate.
        case holdover
        /// The leader is gone: fade out and wait for it.
        case fadeOutAndWait
        /// The leader is heard again after holdover or waiting; `newLeader` when it is a
        /// different leader (the estimate was reset and a new `apply` will follow).
        case rejoin(newLeader: Bool)
    }

    /// The leader's endpoint, where Hello and clock requests go.
    public let leader: UDPEndpoint
    /// Silence before holdover.
    public let holdoverTimeout: Duration
    /// Silence before fading out.
    public let holdoverLimit: Duration
    /// This follower's sender ID.
    public var senderID: UInt64 { sender.senderID }
    /// The current phase.
    public private(set) var phase: Phase = .idle
    /// The current leader's ID, once heard.
    public private(set) var leaderID: UInt64?
    /// The clock estimator (for statistics: `estimate`, `stepCount`...).
    public private(set) var estimator = ClockEstimator()
    /// The newest clock exchange completed (for logging beside the estimate it gave).
    public private(set) var lastSample: ClockSample?
    /// The newest state received.
    public private(set) var state: GroupState?
    /// States ignored as older than one already received.
    public private(set) var staleStateCount = 0
    /// Datagrams dropped, by reason.
    public var dropCounters: DropCounters { gate.counters }
    /// Which senders' datagrams were dropped and why, as lines due in the log at `now`
    /// (`DropReport`).
    public mutating func dropReportLines(now: HostTime, finally: Bool = false) -> [String] {
        gate.dropReportLines(now: now, finally: finally)
    }

    private let hello: GroupMessage.Hello
    private var sender: MessageSender
    private var gate: MessageGate
    private var lastHeard: HostTime?
    private var nextHelloAt: HostTime?
    /// Whether the current leader has answered a Hello with a Welcome.
    private var welcomed = false
    /// When the next clock request is due (follower host time), or `nil` when none will be
    /// sent. While the clock converges this is sooner than the next tick: an adapter wakes
    /// for it (a `DeadlineTimer`) and delivers a `.tick`, so that the poll keeps the pace
    /// `ClockEstimator.nextPollInterval` asks for.
    public private(set) var nextPollAt: HostTime?
    private var requestsSent = 0
    private var nextRequestID: UInt32 = 0
    /// Requests awaiting replies: the t1 each carries (a reply must echo it) and when it
    /// left, which is t1 until a transmit stamp says otherwise.
    private var pending: [(id: UInt32, t1: HostTime, sentAt: HostTime)] = []
    private var appliedEstimate: ClockEstimate?
    private var appliedSequence: UInt64?

    /// A follower of the leader at `leader` in `group`. With an authenticator every
    /// message is tagged and untagged ones are dropped. Throws if the group name is empty
    /// or over 64 UTF-8 bytes, or the name is over 255.
    public init(
        group: String,
        leader: UDPEndpoint,
        followerName: String,
        latencyOffsetMicroseconds: Int32 = 0,
        authenticator: MessageAuthenticator? = nil,
        holdoverTimeout: Duration = FollowerCore.defaultHoldoverTimeout,
        holdoverLimit: Duration = FollowerCore.defaultHoldoverLimit,
        senderID: UInt64 = UInt64.random(in: 1...UInt64.max)
    ) throws(EncodeError) {
        try GroupMessage.validateGroupName(group)
        guard followerName.utf8.count <= WireCodec.maximumNameBytes else {
            throw .stringTooLong(field: "follower name", byteCount: followerName.utf8.count)
        }
        let codec = WireCodec(authenticator: authenticator)
        sender = MessageSender(senderID: senderID, group: group, codec: codec)
        gate = MessageGate(group: group, codec: codec)
        self.leader = leader
        self.holdoverTimeout = holdoverTimeout
        self.holdoverLimit = max(holdoverLimit, holdoverTimeout)
        hello = GroupMessage.Hello(followerName: followerName, latencyOffsetMicroseconds: latencyOffsetMicroseconds)
    }

    /// Processes one event at host time `now` and returns what to do, in order.
    public mutating func handle(_ event: Event, at now: HostTime) -> [Action] {
        var actions: [Action] = []
        switch event {
        case .start:
            guard phase == .idle else { break }
            phase = .joining
            lastHeard = nil
            welcomed = false
            sendHello(now: now, into: &actions)
            restartBurst(now: now)
            poll(now: now, into: &actions)
        case let .received(bytes, source, receivedAt):
            guard phase != .idle else { break }
            receive(bytes, from: source, receivedAt: receivedAt, now: now, into: &actions)
        case .tick:
            guard phase != .idle else { break }
            if let due = nextHelloAt, now >= due { sendHello(now: now, into: &actions) }
            if let due = nextPollAt, now >= due { poll(now: now, into: &actions) }
            checkSilence(now: now, into: &actions)
        case let .transmitted(requestID, at):
            // A stamp that cannot be this request's (before its clock read, or later than
            // any send takes) is ignored: the clock read stands.
            guard let index = pending.firstIndex(where: { $0.id == requestID }),
                  at >= pending[index].t1, at - pending[index].t1 <= Self.maximumTransmitDelay else { break }
            pending[index].sentAt = at
        case .stop:
            guard phase != .idle else { break }
            append(.goodbye, into: &actions)
            phase = .idle
            nextHelloAt = nil
            nextPollAt = nil
        }
        return actions
    }

    private mutating func receive(_ bytes: [UInt8], from source: UDPEndpoint, receivedAt: HostTime, now: HostTime, into actions: inout [Action]) {
        guard let message = gate.admit(bytes, from: source) else { return }
        switch message.payload {
        case .hello, .clockRequest:
            gate.countUnexpected()
            return
        case .welcome, .clockReply, .state, .goodbye:
            break
        }
        // A clock reply counts only as the answer to a request of ours (its ID and echoed
        // t1): one that answers nothing must neither reset the clock as a new leader's would
        // nor keep a leader that has gone counted as heard.
        var answered: (id: UInt32, t1: HostTime, sentAt: HostTime)?
        if case let .clockReply(reply) = message.payload {
            guard let index = pending.firstIndex(where: { $0.id == reply.requestID && $0.t1.nanoseconds == reply.t1 }) else {
                gate.countUnexpected()
                return
            }
            answered = pending.remove(at: index)
        }
        heardFrom(message.senderID, now: now, into: &actions)
        switch message.payload {
        case let .welcome(welcome):
            if !welcomed, nextHelloAt != nil { nextHelloAt = now + Self.helloInterval }
            welcomed = true
            actions.append(.joined(welcome))
        case let .clockReply(reply):
            guard let request = answered else { return }
            let sample = ClockSample(
                t1: request.sentAt, t2: LeaderTime(nanoseconds: reply.t2),
                t3: LeaderTime(nanoseconds: reply.t3), t4: receivedAt
            )
            // No request is sent from here even when one is due: its t1 would be read
            // before the fit below and the datagram sent after it, and tens of µs of fit
            // would count as forward delay. The adapter wakes for `nextPollAt` instead.
            lastSample = sample
            let added = estimator.add(sample)
            guard let estimate = added else { return }
            actions.append(.updateClock(estimate))
            guard let state, playableEstimate != nil else { return }
            if let applied = appliedEstimate, Self.differsMaterially(estimate, applied, now: now, anchor: state.anchorLeaderTime) {
                apply(state, estimate, into: &actions)
            } else if appliedSequence != state.sequence {
                apply(state, estimate, into: &actions)
            }
        case let .state(newState):
            // Equal sequences are the periodic repeats; lower ones were overtaken in the network.
            if let current = state, newState.sequence < current.sequence {
                staleStateCount += 1
                return
            }
            state = newState
            if appliedSequence != newState.sequence, let estimate = playableEstimate {
                apply(newState, estimate, into: &actions)
            }
        case .goodbye:
            if phase != .waiting {
                phase = .waiting
                actions.append(.fadeOutAndWait)
            }
            lastHeard = nil
            appliedSequence = nil
        case .hello, .clockRequest:
            break
        }
    }

    /// Bookkeeping for any leader message: a new leader resets, a returning one rejoins.
    private mutating func heardFrom(_ sender: UInt64, now: HostTime, into actions: inout [Action]) {
        let wasAway = phase == .holdover || phase == .waiting
        if let current = leaderID, current != sender {
            leaderID = sender
            welcomed = false
            estimator.reset()
            state = nil
            appliedSequence = nil
            appliedEstimate = nil
            pending = []
            actions.append(.rejoin(newLeader: true))
            sendHello(now: now, into: &actions)
            restartBurst(now: now)
        } else {
            leaderID = sender
            if wasAway {
                actions.append(.rejoin(newLeader: false))
                appliedSequence = nil
                restartBurst(now: now)
            }
        }
        phase = .following
        lastHeard = now
    }

    private mutating func checkSilence(now: HostTime, into actions: inout [Action]) {
        guard let heard = lastHeard else { return }
        let silence = now - heard
        if phase == .following, silence >= holdoverTimeout {
            phase = .holdover
            actions.append(.holdover)
        }
        if phase == .holdover, silence >= holdoverLimit {
            phase = .waiting
            appliedSequence = nil
            // A leader that seems gone may only be unheard: one datagram bearing its ID and a
            // sequence near the counter's top (forged on an open group) puts every later one
            // below the replay window, and a State with the top state sequence makes every
            // later State stale. Its next message then counts as its first, and its next
            // State is taken. (Its old messages replayed after this do no lasting harm: a
            // clock reply answers no request, and an old State is replaced by the leader's
            // next, within a State period.)
            if let leaderID { gate.forgetSequences(of: leaderID) }
            state = nil
            actions.append(.fadeOutAndWait)
        }
    }

    /// Whether two estimates disagree by more than `materialEstimateChange` about what
    /// matters to the player: the leader time now, and the host time of the anchor.
    static func differsMaterially(_ new: ClockEstimate, _ old: ClockEstimate, now: HostTime, anchor: LeaderTime) -> Bool {
        let atNow = (new.leaderTime(atHost: now) - old.leaderTime(atHost: now)).magnitude
        let atAnchor = (new.hostTime(atLeader: anchor) - old.hostTime(atLeader: anchor)).magnitude
        return max(atNow, atAnchor) > materialEstimateChange
    }

    /// The estimate to play a state by: the latest once it has converged to
    /// `startingUncertainty` (on a quiet path, within the join burst), so the first
    /// alignment is already close rather than a guess corrected over seconds, or once
    /// `unconvergedPlayAfterSamples` exchanges have come in; nil before.
    public var playableEstimate: ClockEstimate? {
        guard let estimate = estimator.estimate,
              Self.canStart(on: estimate) || estimator.sampleCount >= Self.unconvergedPlayAfterSamples else { return nil }
        return estimate
    }

    /// Whether `estimate` is sure enough to start playing on: converged, and within
    /// `startingUncertainty`.
    public static func canStart(on estimate: ClockEstimate) -> Bool {
        estimate.converged && estimate.uncertainty <= startingUncertainty
    }

    private mutating func apply(_ state: GroupState, _ estimate: ClockEstimate, into actions: inout [Action]) {
        appliedSequence = state.sequence
        appliedEstimate = estimate
        actions.append(.apply(state, estimate))
    }

    private mutating func restartBurst(now: HostTime) {
        requestsSent = 0
        nextPollAt = now
    }

    private mutating func sendHello(now: HostTime, into actions: inout [Action]) {
        append(.hello(hello), into: &actions)
        nextHelloAt = now + (welcomed ? Self.helloInterval : Self.unwelcomedHelloInterval)
    }

    private mutating func poll(now: HostTime, into actions: inout [Action]) {
        nextRequestID &+= 1
        pending.append((nextRequestID, now, now))
        if pending.count > Self.maximumPendingRequests { pending.removeFirst(pending.count - Self.maximumPendingRequests) }
        append(.clockRequest(.init(requestID: nextRequestID, t1: now.nanoseconds)), into: &actions)
        requestsSent += 1
        let interval = ClockEstimator.dithered(estimator.nextPollInterval(requestsSent: requestsSent), requestsSent: requestsSent)
        let unanswered = phase == .joining && requestsSent >= ClockEstimator.burstCount
        nextPollAt = now + (unanswered ? max(interval, Self.unansweredPollInterval) : interval)
    }

    private mutating func append(_ payload: GroupMessage.Payload, into actions: inout [Action]) {
        // Every payload a follower sends has bounded fields checked at init, so encoding
        // cannot fail; a failure would only mean nothing is sent this time.
        if case let .success(datagram) = sender.datagram(payload, to: leader) {
            actions.append(.send(datagram))
        }
    }
}
