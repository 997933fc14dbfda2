import Testing
import GroupSync
import MediaClock

@Suite("ImpairmentRelay", .serialized)
struct ImpairmentRelayTests {
    @Test func relaysBothWaysAndCountsLoss() throws {
        let server = try UDPSocket(bindingTo: .loopbackIPv4(port: 0))
        let client = try UDPSocket(bindingTo: .loopbackIPv4(port: 0))
        defer { server.close(); client.close() }
        let relay = try ImpairmentRelay(listeningOn: .loopbackIPv4(port: 0), forwardingTo: server.localEndpoint,
                                        impairment: .init(delay: .milliseconds(1), jitter: .microseconds(500), lossProbability: 0.3, seed: 5))
        defer { relay.stop() }
        let serverInbox = Inbox(), clientInbox = Inbox()
        server.startReceiving { serverInbox.put($0); try? server.send($0.bytes, to: $0.source) }
        client.startReceiving { clientInbox.put($0) }
        for index in 0..<100 { try client.send([UInt8(index)], to: relay.listenEndpoint) }
        var echoed = 0
        while clientInbox.next(timeout: .milliseconds(300)) != nil { echoed += 1 }
        let counters = relay.counters
        #expect(counters.lost > 20)
        #expect(echoed > 20 && echoed < 100)
        // Every datagram that was not lost was forwarded (both directions counted).
        #expect(counters.forwarded >= echoed)
    }

    @Test func duplicatesAndReordersWhenAsked() throws {
        let server = try UDPSocket(bindingTo: .loopbackIPv4(port: 0))
        let client = try UDPSocket(bindingTo: .loopbackIPv4(port: 0))
        defer { server.close(); client.close() }
        let relay = try ImpairmentRelay(listeningOn: .loopbackIPv4(port: 0), forwardingTo: server.localEndpoint,
                                        impairment: .init(reorderProbability: 0.3, reorderDelay: .milliseconds(20), duplicateProbability: 0.3, seed: 9))
        defer { relay.stop() }
        let inbox = Inbox()
        server.startReceiving { inbox.put($0) }
        for index in 0..<50 { try client.send([UInt8(index)], to: relay.listenEndpoint) }
        var received: [UInt8] = []
        while let datagram = inbox.next(timeout: .milliseconds(300)) { received += datagram.bytes }
        #expect(received.count > 50)
        #expect(received != received.sorted())
        #expect(relay.counters.duplicated > 0 && relay.counters.reordered > 0)
    }

    /// A follower behind a lossy, jittery relay still joins and converges: lost burst
    /// requests are retried by the 250 ms converging polls.
    @Test func followerConvergesThroughALossyRelay() throws {
        let leaderSocket = try UDPSocket(bindingTo: .loopbackIPv4(port: 0))
        let relay = try ImpairmentRelay(listeningOn: .loopbackIPv4(port: 0), forwardingTo: leaderSocket.localEndpoint,
                                        impairment: .init(delay: .milliseconds(2), jitter: .microseconds(300), lossProbability: 0.25,
                                                          reorderProbability: 0.05, duplicateProbability: 0.05, seed: 42))
        let followerSocket = try UDPSocket(bindingTo: .loopbackIPv4(port: 0))
        defer { followerSocket.close(); relay.stop(); leaderSocket.close() }
        let leaderInbox = Inbox(), followerInbox = Inbox()
        leaderSocket.startReceiving { leaderInbox.put($0) }
        followerSocket.startReceiving { followerInbox.put($0) }
        var leader = try LeaderCore(group: "lossy", baseURL: "")
        var follower = try FollowerCore(group: "lossy", leader: relay.listenEndpoint, followerName: "f")
        _ = leader.handle(.stateChanged(GroupState(itemIndex: 0, itemURL: "x", itemDuration: .indefinite, rate: 1,
                                                   anchorItemTime: .zero, anchorLeaderTime: LeaderTime(.now()))), at: .now())
        func send(_ actions: [FollowerCore.Action]) throws {
            for case let .send(d) in actions { try followerSocket.send(d.bytes, to: d.destination) }
        }
        try send(follower.handle(.start, at: .now()))
        // Bounded: at most 600 rounds of ~5 ms, whatever the scheduler does.
        var rounds = 0
        while rounds < 600, !(follower.estimator.isConverged && follower.estimator.sampleCount >= ClockEstimator.burstCount) {
            rounds += 1
            while let datagram = leaderInbox.next(timeout: .milliseconds(5)) {
                for action in leader.handle(.received(datagram.bytes, from: datagram.source, receivedAt: datagram.receivedAt), at: .now()) {
                    if case let .send(d) = action { try leaderSocket.send(d.bytes, to: d.destination) }
                }
            }
            while let datagram = followerInbox.next(timeout: .milliseconds(1)) {
                try send(follower.handle(.received(datagram.bytes, from: datagram.source, receivedAt: datagram.receivedAt), at: .now()))
            }
            try send(follower.handle(.tick, at: .now()))
            for action in leader.handle(.tick, at: .now()) {
                if case let .send(d) = action { try leaderSocket.send(d.bytes, to: d.destination) }
            }
        }
        #expect(follower.estimator.isConverged)
        #expect(follower.estimator.sampleCount >= ClockEstimator.burstCount)
        #expect(relay.counters.lost > 0)
        #expect(follower.state != nil)
        let estimate = try #require(follower.estimator.estimate)
        #expect(abs(estimate.offset(atHost: .now()).microsecondsValue) < 2_000)
    }
}
