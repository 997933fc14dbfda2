import Testing
import GroupSync
import MediaClock

@Suite("LeaderCore")
struct LeaderCoreTests {
    static let follower = UDPEndpoint.loopbackIPv4(port: 6000)

    static func datagram(_ payload: GroupMessage.Payload, sequence: UInt64, sender: UInt64 = 77) throws -> [UInt8] {
        try WireCodec().encode(GroupMessage(senderID: sender, sequence: sequence, group: "g", payload: payload))
    }

    static func sent(_ actions: [LeaderCore.Action]) -> [GroupMessage] {
        actions.compactMap { if case let .send(datagram) = $0 { datagram.message } else { nil } }
    }

    @Test func helloIsWelcomedWithTheStateAtOnce() throws {
        var leader = try LeaderCore(group: "g", baseURL: "http://h:1/", senderID: 9)
        let actions = leader.handle(.received(try Self.datagram(.hello(.init(followerName: "den", latencyOffsetMicroseconds: 12)), sequence: 1),
                                              from: Self.follower, receivedAt: HostTime(nanoseconds: 100)), at: HostTime(nanoseconds: 200))
        let messages = Self.sent(actions)
        #expect(messages.map(\.type) == [.welcome, .state])
        #expect(messages.first?.payload == .welcome(.init(leaderID: 9, statePeriodMilliseconds: 250, baseURL: "http://h:1/")))
        #expect(messages.map(\.sequence) == [1, 2])
        #expect(messages.allSatisfy { $0.senderID == 9 && $0.group == "g" })
        if case let .state(state) = messages.last?.payload { #expect(state.stopped && state.sequence == 1) }
        #expect(leader.followers[77]?.name == "den")
        #expect(leader.followers[77]?.latencyOffsetMicroseconds == 12)
        #expect(actions.contains { if case .followerJoined = $0 { true } else { false } })
    }

    @Test func clockRequestsAreAnsweredWithReceiveAndSendTimes() throws {
        var leader = try LeaderCore(group: "g", baseURL: "", senderID: 9)
        let actions = leader.handle(.received(try Self.datagram(.clockRequest(.init(requestID: 4, t1: -5)), sequence: 1),
                                              from: Self.follower, receivedAt: HostTime(nanoseconds: 1_000)), at: HostTime(nanoseconds: 1_250))
        #expect(Self.sent(actions).map(\.payload) == [.clockReply(.init(requestID: 4, t1: -5, t2: 1_000, t3: 1_250))])
        if case let .send(datagram) = actions.first { #expect(datagram.destination == Self.follower) }
    }

    @Test func stateGoesOutEveryPeriodAndOnEveryChange() throws {
        var leader = try LeaderCore(group: "g", baseURL: "", senderID: 9)
        var now = HostTime(nanoseconds: 0)
        _ = leader.handle(.received(try Self.datagram(.hello(.init(followerName: "a")), sequence: 1), from: Self.follower, receivedAt: now), at: now)
        var periodic = 0
        for _ in 0..<100 { // one second in 10 ms ticks
            now += .milliseconds(10)
            periodic += Self.sent(leader.handle(.tick, at: now)).filter { $0.type == .state }.count
        }
        #expect(periodic == 4)
        var state = GroupState.stoppedState
        state.stopped = false
        state.rate = 1
        let change = Self.sent(leader.handle(.stateChanged(state), at: now))
        #expect(change.count == 1)
        if case let .state(sent) = change.first?.payload { #expect(sent.sequence == 2 && sent.rate == 1) }
        #expect(leader.state.sequence == 2)
    }

    @Test func silentFollowersTimeOutAndGoodbyeRemoves() throws {
        var leader = try LeaderCore(group: "g", baseURL: "", senderID: 9)
        var now = HostTime(nanoseconds: 0)
        _ = leader.handle(.received(try Self.datagram(.hello(.init(followerName: "a")), sequence: 1), from: Self.follower, receivedAt: now), at: now)
        _ = leader.handle(.received(try Self.datagram(.hello(.init(followerName: "b")), sequence: 1, sender: 78), from: Self.follower, receivedAt: now), at: now)
        now += LeaderCore.defaultFollowerTimeout - .milliseconds(10)
        _ = leader.handle(.received(try Self.datagram(.hello(.init(followerName: "b")), sequence: 2, sender: 78), from: Self.follower, receivedAt: now), at: now)
        now += .milliseconds(20)
        let left = leader.handle(.tick, at: now).compactMap { if case let .followerLeft(f) = $0 { f.name } else { nil } }
        #expect(left == ["a"])
        let bye = leader.handle(.received(try Self.datagram(.goodbye, sequence: 3, sender: 78), from: Self.follower, receivedAt: now), at: now)
        #expect(bye.contains { if case .followerLeft = $0 { true } else { false } })
        #expect(leader.followers.isEmpty)
        #expect(Self.sent(leader.handle(.tick, at: now + .seconds(1))).isEmpty)
    }

    @Test func leaderMessagesAtALeaderAreCountedAsUnexpected() throws {
        var leader = try LeaderCore(group: "g", baseURL: "", senderID: 9)
        let actions = leader.handle(.received(try Self.datagram(.state(.stoppedState), sequence: 1), from: Self.follower,
                                              receivedAt: HostTime(nanoseconds: 0)), at: HostTime(nanoseconds: 0))
        #expect(actions.isEmpty)
        #expect(leader.dropCounters.unexpected == 1)
    }

    @Test func stopSaysGoodbyeToEveryFollower() throws {
        var leader = try LeaderCore(group: "g", baseURL: "", senderID: 9)
        let now = HostTime(nanoseconds: 0)
        for sender in UInt64(1)...3 {
            _ = leader.handle(.received(try Self.datagram(.hello(.init(followerName: "\(sender)")), sequence: 1, sender: sender),
                                        from: UDPEndpoint.loopbackIPv4(port: UInt16(7000 + sender)), receivedAt: now), at: now)
        }
        let goodbyes = leader.handle(.stop, at: now).compactMap { if case let .send(d) = $0 { d } else { nil } }
        #expect(goodbyes.map(\.message.type) == [.goodbye, .goodbye, .goodbye])
        #expect(Set(goodbyes.map(\.destination.port)) == [7001, 7002, 7003])
    }
}
