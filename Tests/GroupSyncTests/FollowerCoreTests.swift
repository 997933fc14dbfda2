import Testing
import ChorusTestSupport
import GroupSync
import MediaClock

@Suite("FollowerCore", .ownThread)
struct FollowerCoreTests {
    static func playing(at leaderTime: LeaderTime, item: UInt32 = 0) -> GroupState {
        GroupState(itemIndex: item, itemURL: "items/\(item)", itemDuration: CMTime(value: 180, timescale: 1),
                   rate: 1, anchorItemTime: CMTime(value: 10, timescale: 1), anchorLeaderTime: leaderTime)
    }

    /// A session whose follower has been following a playing leader for two seconds, its
    /// actions so far taken.
    static func following() throws -> SimulatedSession {
        var session = try session()
        session.leaderStateChanged(playing(at: LeaderTime(session.now)))
        session.startFollower()
        session.run(for: .seconds(2))
        _ = session.takeFollowerActions()
        return session
    }

    static func session() throws -> SimulatedSession {
        let leader = try LeaderCore(group: "house", baseURL: "http://10.0.0.1:8080/", senderID: 111)
        let follower = try FollowerCore(group: "house", leader: SimulatedSession.leaderEndpoint, followerName: "kitchen", senderID: 222)
        return SimulatedSession(leader: leader, follower: follower)
    }

    @Test func wholeSessionJoinsSyncsAndApplies() throws {
        var session = try Self.session()
        session.leaderStateChanged(Self.playing(at: LeaderTime(session.now + .seconds(1))))
        session.startFollower()
        let first = session.takeFollowerActions()
        let sent = first.compactMap { if case let .send(datagram) = $0 { datagram.message.type } else { nil } }
        #expect(sent == [.hello, .clockRequest])
        #expect(session.follower.phase == .joining)

        session.run(for: .milliseconds(300))
        let actions = session.takeFollowerActions()
        #expect(actions.contains(.joined(.init(leaderID: 111, statePeriodMilliseconds: 250, baseURL: "http://10.0.0.1:8080/"))))
        #expect(session.follower.phase == .following)
        #expect(session.follower.leaderID == 111)
        let applied = actions.compactMap(\.applied)
        // The state is played once the estimate has converged (within the join burst on
        // this quiet path), and that first estimate is already good enough that later ones
        // never move the anchor materially: one apply.
        let (state, estimate) = try #require(applied.last)
        #expect(applied.count == 1)
        #expect(estimate.converged)
        #expect(applied.allSatisfy { $0.0.sequence == 2 })
        #expect(state.itemURL == "items/0")
        // The applied estimate places the anchor within 20 µs of the truth.
        let anchorOnFollower = estimate.hostTime(atLeader: state.anchorLeaderTime)
        let error = session.trueLeaderTime(atFollower: anchorOnFollower) - state.anchorLeaderTime
        #expect(abs(error.microsecondsValue) < 20)
        #expect(session.follower.estimator.sampleCount >= ClockEstimator.burstCount)
        #expect(actions.contains { if case .updateClock = $0 { true } else { false } })

        // A change on the leader reaches the follower within one delivery, with a new sequence.
        session.leaderStateChanged(Self.playing(at: LeaderTime(session.now), item: 1))
        session.run(for: .milliseconds(5))
        let change = session.takeFollowerActions().compactMap(\.applied)
        #expect(change.map(\.0.sequence) == [3])
        #expect(change.first?.0.itemIndex == 1)

        // Periodic repeats of the same state do not re-apply.
        session.run(for: .seconds(5))
        let later = session.takeFollowerActions()
        #expect(later.compactMap(\.applied).allSatisfy { $0.0.sequence == 3 })
        #expect(session.follower.estimator.isConverged)
        #expect(session.follower.dropCounters.total == 0)
        #expect(session.leader.dropCounters.total == 0)
    }

    @Test func clockRequestsGoOutOnWakeUpsNeverStraightAfterAFit() throws {
        // A reply is fitted before anything after it is sent: a request stamped on arrival
        // would count the fit as forward delay. Requests go out on ticks, and an adapter
        // that wakes at `nextPollAt` keeps the converging pace between its 5 ms ticks.
        var session = try Self.session()
        session.startFollower()
        var requestsFromReplies = 0
        var requestsFromWakeUps = 0
        let end = session.now + .milliseconds(300)
        while session.now < end {
            let before = session.followerActions.count
            session.run(for: .microseconds(100))
            let new = session.followerActions[before...]
            let requests = new.filter { if case let .send(datagram) = $0 { datagram.message.type == .clockRequest } else { false } }.count
            let replies = new.filter { if case .updateClock = $0 { true } else { false } }.count
            if replies > 0 { requestsFromReplies += requests } else { requestsFromWakeUps += requests }
        }
        // Replies arrive 600 µs after their request here; a tenth-of-a-millisecond step
        // holds a reply and a wake-up together only if they fall within it.
        #expect(requestsFromReplies <= 2, "\(requestsFromReplies) requests went out with replies")
        // 300 ms: the 8-request burst, then a request every 2 ms until the estimate joins
        // (within the burst on this quiet path) and every 20 ms after: more than the 5 ms
        // tick alone would send before joining, and at least the settling pace after.
        #expect(requestsFromWakeUps >= ClockEstimator.burstCount + 10, "\(requestsFromWakeUps) requests")
        #expect(session.follower.estimator.sampleCount >= requestsFromWakeUps - 2)
    }

    @Test func staleStatesAreIgnored() throws {
        var session = try Self.session()
        session.leaderStateChanged(Self.playing(at: LeaderTime(session.now)))
        session.startFollower()
        session.run(for: .milliseconds(300))
        session.leaderStateChanged(Self.playing(at: LeaderTime(session.now), item: 5))
        session.run(for: .milliseconds(300))
        _ = session.takeFollowerActions()
        #expect(session.follower.state?.sequence == 3)
        // An older state (sequence 2) arriving late, in a fresh datagram.
        var old = Self.playing(at: LeaderTime(session.now), item: 4)
        old.sequence = 2
        let bytes = try WireCodec().encode(GroupMessage(senderID: 111, sequence: 1_000_000, group: "house", payload: .state(old)))
        session.deliverToFollower(bytes)
        #expect(session.takeFollowerActions().compactMap(\.applied).isEmpty)
        #expect(session.follower.staleStateCount == 1)
        #expect(session.follower.state?.itemIndex == 5)
    }

    /// On an open group, one forged datagram with the leader's ID at the top of the
    /// sequence counter (and a State at the top of the state counter) makes every real one
    /// look replayed or stale. The follower falls silent, fades out as for a gone leader,
    /// and then hears the real leader again, instead of staying locked out until the
    /// leader restarts.
    @Test func aForgedTopSequenceLocksTheLeaderOutOnlyUntilTheFollowerWaits() throws {
        var session = try Self.following()
        var forgedState = Self.playing(at: LeaderTime(session.now), item: 7)
        forgedState.sequence = .max
        let forged = GroupMessage(senderID: 111, sequence: .max, group: "house", payload: .state(forgedState))
        session.deliverToFollower(try WireCodec().encode(forged))
        session.run(for: FollowerCore.defaultHoldoverLimit + .seconds(2))
        let actions = session.takeFollowerActions()
        let faded = try #require(actions.firstIndex(of: .fadeOutAndWait))
        let back = actions[faded...]
        #expect(back.contains(.rejoin(newLeader: false)))
        #expect(session.follower.phase == .following)
        #expect(back.compactMap(\.applied).last?.0.itemIndex == 0)
    }

    /// A clock reply that answers no request of the follower's, from any sender ID, is
    /// counted and ignored: it neither resets the clock as a new leader's message would
    /// nor counts as hearing the leader.
    @Test func aReplyToNoRequestResetsNothing() throws {
        var session = try Self.following()
        let samples = session.follower.estimator.sampleCount
        let unexpected = session.follower.dropCounters.unexpected
        let stray = GroupMessage(senderID: 999, sequence: 1, group: "house",
                                 payload: .clockReply(.init(requestID: 12_345, t1: 1, t2: 2, t3: 3)))
        session.deliverToFollower(try WireCodec().encode(stray))
        #expect(session.follower.leaderID == 111)
        #expect(session.follower.estimator.sampleCount >= samples)
        #expect(session.follower.dropCounters.unexpected == unexpected + 1)
        #expect(!session.takeFollowerActions().contains(.rejoin(newLeader: true)))
    }

    /// A follower whose leader answers nothing (another key or group, or no leader there)
    /// asks for the time no faster than `unansweredPollInterval` after its join burst,
    /// instead of a thousand times a second.
    @Test func aFollowerNoLeaderAnswersPollsSlowly() throws {
        var session = try Self.session()
        session.leaderReachable = false
        session.startFollower()
        session.run(for: .seconds(2))
        let requests = session.takeFollowerActions().filter {
            if case let .send(datagram) = $0 { datagram.message.type == .clockRequest } else { false }
        }.count
        let most = ClockEstimator.burstCount + Int(Duration.seconds(2) / FollowerCore.unansweredPollInterval) + 1
        #expect(requests > ClockEstimator.burstCount)
        #expect(requests <= most, "\(requests) clock requests in 2 s")
        #expect(session.follower.phase == .joining)
    }

    @Test func holdoverThenFadeThenRejoin() throws {
        var session = try Self.following()

        session.leaderReachable = false
        session.run(for: FollowerCore.defaultHoldoverTimeout - .milliseconds(50))
        #expect(!session.takeFollowerActions().contains(.holdover))
        session.run(for: .milliseconds(100))
        #expect(session.takeFollowerActions().contains(.holdover))
        #expect(session.follower.phase == .holdover)
        session.run(for: FollowerCore.defaultHoldoverLimit - FollowerCore.defaultHoldoverTimeout - .milliseconds(100))
        #expect(!session.takeFollowerActions().contains(.fadeOutAndWait))
        session.run(for: .milliseconds(100))
        #expect(session.takeFollowerActions().contains(.fadeOutAndWait))
        #expect(session.follower.phase == .waiting)
        // Keepalive Hellos continue while waiting.
        session.run(for: .seconds(3))
        let waiting = session.takeFollowerActions()
        #expect(waiting.filter { if case let .send(d) = $0 { d.message.type == .hello } else { false } }.count >= 2)
        #expect(waiting.compactMap(\.applied).isEmpty)

        session.leaderReachable = true
        session.run(for: .seconds(2))
        let back = session.takeFollowerActions()
        #expect(back.contains(.rejoin(newLeader: false)))
        #expect(back.compactMap(\.applied).count >= 1)
        #expect(session.follower.phase == .following)
        #expect(session.follower.leaderID == 111)
    }

    @Test func aLostWelcomeIsAskedForAgainWithinATenthOfASecondThenHelloSlowsDown() throws {
        var session = try Self.session()
        session.leaderStateChanged(Self.playing(at: LeaderTime(session.now)))
        session.welcomesToLose = 2
        session.startFollower()
        func hellos(_ actions: [FollowerCore.Action]) -> Int {
            actions.filter { if case let .send(d) = $0 { d.message.type == .hello } else { false } }.count
        }
        // Hellos at 0, 100 and 200 ms; the third one's Welcome arrives.
        session.run(for: .milliseconds(450))
        let joining = session.takeFollowerActions()
        #expect(hellos(joining) == 3)
        #expect(joining.contains { if case .joined = $0 { true } else { false } })
        // Welcomed: the keepalive's once a second.
        session.run(for: .seconds(2))
        #expect(hellos(session.takeFollowerActions()) == 2)
    }

    @Test func aNewLeaderResetsTheEstimatorAndReapplies() throws {
        var session = try Self.session()
        session.leaderStateChanged(Self.playing(at: LeaderTime(session.now)))
        session.startFollower()
        session.run(for: .seconds(30))
        let before = session.follower.estimator.sampleCount
        #expect(before > ClockEstimator.burstCount)
        _ = session.takeFollowerActions()

        // The leader restarts: a new sender ID and its own state sequence from 1.
        session.leader = try LeaderCore(group: "house", baseURL: "http://10.0.0.1:8080/", senderID: 333)
        session.leaderStateChanged(Self.playing(at: LeaderTime(session.now), item: 9))
        session.run(for: .milliseconds(1_100))
        let actions = session.takeFollowerActions()
        #expect(actions.contains(.rejoin(newLeader: true)))
        #expect(session.follower.leaderID == 333)
        // The window started again: no more samples than a fresh join's schedule allows in
        // 1.1 s (the burst, then the fastest poll), and fewer than the old leader's 30 s
        // (a window that kept them would only have grown).
        let freshJoinMost = ClockEstimator.burstCount + Int(Duration.milliseconds(1_100) / ClockEstimator.startingInterval)
        #expect(session.follower.estimator.sampleCount <= freshJoinMost)
        #expect(session.follower.estimator.sampleCount < before)
        let applied = actions.compactMap(\.applied)
        #expect(applied.last?.0.itemIndex == 9)
        #expect(applied.last?.0.sequence == 2)
    }

    @Test func goodbyeFromTheLeaderFadesOutAtOnce() throws {
        var session = try Self.session()
        session.leaderStateChanged(Self.playing(at: LeaderTime(session.now)))
        session.startFollower()
        session.run(for: .seconds(1))
        _ = session.takeFollowerActions()
        session.route(session.leader.handle(.stop, at: session.now))
        session.run(for: .milliseconds(10))
        #expect(session.takeFollowerActions().contains(.fadeOutAndWait))
        #expect(session.follower.phase == .waiting)
    }

    @Test func stopSaysGoodbyeAndIgnoresLaterInput() throws {
        var follower = try FollowerCore(group: "g", leader: SimulatedSession.leaderEndpoint, followerName: "f", senderID: 1)
        _ = follower.handle(.start, at: HostTime(nanoseconds: 0))
        let stop = follower.handle(.stop, at: HostTime(nanoseconds: 1))
        #expect(stop.count == 1)
        if case let .send(datagram) = stop.first { #expect(datagram.message.type == .goodbye) } else { Issue.record("no goodbye") }
        #expect(follower.handle(.tick, at: HostTime(nanoseconds: 10_000_000_000)).isEmpty)
        #expect(throws: EncodeError.self) { try FollowerCore(group: "", leader: SimulatedSession.leaderEndpoint, followerName: "f") }
    }
}
