import Testing
import ChorusTestSupport
import GroupSync
import MediaClock

@Suite("LeaderCore", .ownThread)
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

    /// A flood of Hellos under ever new sender IDs from one machine takes at most that
    /// machine's share of the slots; another machine's follower still gets in. Before, such
    /// a flood filled all 128 and locked every later room out.
    @Test func aSenderCyclingIDsFromOneAddressHoldsAtMostItsShare() throws {
        var leader = try LeaderCore(group: "g", baseURL: "", senderID: 9)
        let now = HostTime(nanoseconds: 0)
        for id in UInt64(1)...300 {
            let source = UDPEndpoint(address: .ipv4(10, 0, 0, 1), port: UInt16(20_000 + id))
            _ = leader.handle(.received(try Self.datagram(.hello(.init(followerName: "x")), sequence: 1, sender: id),
                                        from: source, receivedAt: now), at: now)
        }
        #expect(leader.followers.count == LeaderCore.maximumFollowersPerAddress)
        #expect(leader.dropCounters.refused == 300 - LeaderCore.maximumFollowersPerAddress)
        let lines = leader.dropReportLines(now: now)
        #expect(lines.contains { $0.contains("Hellos from new followers with no room left") })

        let room = UDPEndpoint(address: .ipv4(10, 0, 0, 2), port: 7000)
        let actions = leader.handle(.received(try Self.datagram(.hello(.init(followerName: "den")), sequence: 1, sender: 1_000),
                                              from: room, receivedAt: now), at: now)
        #expect(Self.sent(actions).map(\.type) == [.welcome, .state])
        #expect(leader.followers[1_000]?.name == "den")
        // A follower already served is never refused: its repeated Hellos keep its slot.
        let again = leader.handle(.received(try Self.datagram(.hello(.init(followerName: "x")), sequence: 2, sender: 1),
                                            from: UDPEndpoint(address: .ipv4(10, 0, 0, 1), port: 20_001), receivedAt: now), at: now)
        #expect(Self.sent(again).map(\.type) == [.welcome, .state])
    }

    /// Past the per-address share, the total is bounded too.
    @Test func noMoreThanTheMostFollowersAreServed() throws {
        var leader = try LeaderCore(group: "g", baseURL: "", senderID: 9)
        let now = HostTime(nanoseconds: 0)
        for id in UInt64(1)...200 {
            let source = UDPEndpoint(address: .ipv4(10, 0, UInt8(id / 10), UInt8(id % 10)), port: 7000)
            _ = leader.handle(.received(try Self.datagram(.hello(.init(followerName: "x")), sequence: 1, sender: id),
                                        from: source, receivedAt: now), at: now)
        }
        #expect(leader.followers.count == LeaderCore.maximumFollowers)
        #expect(leader.dropCounters.refused == 200 - LeaderCore.maximumFollowers)
    }

    /// A follower restarted on the same port (a new sender ID from the same endpoint) takes
    /// its old slot over at once, instead of the old one holding it until it times out.
    @Test func aFollowerRestartedOnItsPortTakesItsSlotOver() throws {
        var leader = try LeaderCore(group: "g", baseURL: "", senderID: 9)
        let now = HostTime(nanoseconds: 0)
        _ = leader.handle(.received(try Self.datagram(.hello(.init(followerName: "den")), sequence: 1, sender: 5),
                                    from: Self.follower, receivedAt: now), at: now)
        let actions = leader.handle(.received(try Self.datagram(.hello(.init(followerName: "den")), sequence: 1, sender: 6),
                                              from: Self.follower, receivedAt: now), at: now)
        #expect(leader.followers.keys.sorted() == [6])
        #expect(actions.contains { if case let .followerLeft(old) = $0 { old.senderID == 5 } else { false } })
        #expect(actions.contains { if case let .followerJoined(new) = $0 { new.senderID == 6 } else { false } })
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

    /// A live item's later jump goes out with the repeats of the State that names it, under
    /// the same sequence (what plays has not changed), for a room that opens the item after
    /// it; a stopped group carries none.
    @Test func splicesFoundGoOutWithTheRepeats() throws {
        var leader = try LeaderCore(group: "g", baseURL: "", senderID: 9)
        var now = HostTime(nanoseconds: 0)
        _ = leader.handle(.received(try Self.datagram(.hello(.init(followerName: "a")), sequence: 1), from: Self.follower, receivedAt: now), at: now)
        let splice = TimelineSplice(startNanoseconds: 63_427_000_000, shiftNanoseconds: -50_000_000_000)
        #expect(Self.sent(leader.handle(.splicesFound([splice]), at: now)).isEmpty)
        #expect(leader.state.splices.isEmpty, "the stopped state carries none")
        var state = GroupState.stoppedState
        state.stopped = false
        state.rate = 1
        _ = leader.handle(.stateChanged(state), at: now)
        let sequence = leader.state.sequence
        #expect(Self.sent(leader.handle(.splicesFound([splice]), at: now)).isEmpty, "sent with the next repeat, not at once")
        var repeats: [GroupState] = []
        for _ in 0..<30 {
            now += .milliseconds(10)
            for message in Self.sent(leader.handle(.tick, at: now)) { if case let .state(sent) = message.payload { repeats.append(sent) } }
        }
        #expect(repeats.count == 1)
        #expect(repeats.first?.splices == [splice])
        #expect(repeats.first?.sequence == sequence)
    }

    @Test func silentFollowersTimeOutAndGoodbyeRemoves() throws {
        var leader = try LeaderCore(group: "g", baseURL: "", senderID: 9)
        var now = HostTime(nanoseconds: 0)
        _ = leader.handle(.received(try Self.datagram(.hello(.init(followerName: "a")), sequence: 1), from: Self.follower, receivedAt: now), at: now)
        // Another follower: another socket (one endpoint is one follower).
        let other = UDPEndpoint.loopbackIPv4(port: 6001)
        _ = leader.handle(.received(try Self.datagram(.hello(.init(followerName: "b")), sequence: 1, sender: 78), from: other, receivedAt: now), at: now)
        now += LeaderCore.defaultFollowerTimeout - .milliseconds(10)
        _ = leader.handle(.received(try Self.datagram(.hello(.init(followerName: "b")), sequence: 2, sender: 78), from: other, receivedAt: now), at: now)
        now += .milliseconds(20)
        let left = leader.handle(.tick, at: now).compactMap { if case let .followerLeft(f) = $0 { f.name } else { nil } }
        #expect(left == ["a"])
        let bye = leader.handle(.received(try Self.datagram(.goodbye, sequence: 3, sender: 78), from: other, receivedAt: now), at: now)
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
