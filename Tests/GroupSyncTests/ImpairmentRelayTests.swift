import ChorusSimulation
import Foundation
import Testing
import ChorusTestSupport
import GroupSync
import MediaClock

@Suite("ImpairmentRelay", .serialized, .ownThread)
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
        let echoed = clientInbox.drain().count
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
        let received = inbox.drain().flatMap(\.bytes)
        #expect(received.count > 50)
        #expect(received != received.sorted())
        #expect(relay.counters.duplicated > 0 && relay.counters.reordered > 0)
    }

    /// Released on ticks, a datagram leaves on the first tick at or after it falls due: on
    /// the grid, never early, less than a tick late, for due times either side of the
    /// origin and on the ticks themselves.
    @Test func releaseOnTicksLandsOnTheGrid() {
        let tick: Duration = .milliseconds(1)
        let origin = HostTime(nanoseconds: 5_000_000_123)
        var generator = SeededGenerator(seed: 17)
        var dues = (0..<1000).map { _ in origin + .nanoseconds(Int64(generator.unit() * 40_000_000) - 20_000_000) }
        dues += [origin, origin + tick * 3, origin - tick * 2, origin + .nanoseconds(1), origin - .nanoseconds(1)]
        for due in dues {
            let release = ImpairmentRelay.release(at: due, tick: tick, origin: origin)
            let late = release - due
            #expect(late >= .zero && late < tick, "due \(due.nanoseconds) released \(release.nanoseconds)")
            #expect((release.nanoseconds - origin.nanoseconds) % 1_000_000 == 0, "release \(release.nanoseconds) off the grid")
        }
        #expect(ImpairmentRelay.release(at: origin + tick * 3, tick: tick, origin: origin) == origin + tick * 3)
        #expect(ImpairmentRelay.release(at: origin + .nanoseconds(1), tick: tick, origin: origin) == origin + tick)
        #expect(ImpairmentRelay.release(at: origin - .nanoseconds(1), tick: tick, origin: origin) == origin)
        // No tick: released when due.
        #expect(ImpairmentRelay.release(at: origin + .nanoseconds(7), tick: nil, origin: origin) == origin + .nanoseconds(7))
    }

    /// Through a relay on 10 ms ticks, datagrams sent about 1.3 ms apart reach the server
    /// in bursts, one per tick: each datagram but a burst's first arrives right behind the
    /// one before it. Released when due instead, they would arrive as far apart as they
    /// were sent. The bursts are counted against the ticks the sends themselves span (a
    /// loaded machine's sleeps run long and spread the sends over more ticks), and a relay
    /// woken late only merges bursts, so this holds under load, where the time past each
    /// tick does not.
    @Test func aTickingRelayDeliversOnItsTicks() throws {
        let tick: Duration = .milliseconds(10)
        let origin = HostTime.now()
        let server = try UDPSocket(bindingTo: .loopbackIPv4(port: 0))
        let client = try UDPSocket(bindingTo: .loopbackIPv4(port: 0))
        defer { server.close(); client.close() }
        let relay = try ImpairmentRelay(listeningOn: .loopbackIPv4(port: 0), forwardingTo: server.localEndpoint,
                                        impairment: .init(delay: .milliseconds(1), jitter: .microseconds(500), seed: 3,
                                                          releaseTick: tick, tickPhase: origin))
        defer { relay.stop() }
        let inbox = Inbox()
        server.startReceiving { inbox.put($0) }
        var sent: [Int64] = []
        for index in 0..<40 {
            sent.append(HostTime.now().nanoseconds - origin.nanoseconds)
            try client.send([UInt8(index)], to: relay.listenEndpoint)
            Thread.sleep(forTimeInterval: 0.0013)
        }
        var arrivals = inbox.drain().map { $0.receivedAt.nanoseconds - origin.nanoseconds }
        #expect(arrivals.count == 40)
        arrivals.sort()
        let gaps = zip(arrivals.dropFirst(), arrivals).map { $0 - $1 }
        // The ticks the datagrams fall due on (sent, plus the delay, 0.5 to 1.5 ms): at
        // most that many bursts. Two more are allowed for a datagram whose jitter carries it
        // over a tick, and a burst split by the relay being preempted while it sends it.
        let tickNanoseconds = tick.nanosecondsClamped
        let ticks = Set(sent.flatMap { [($0 + 500_000) / tickNanoseconds, ($0 + 1_500_000) / tickNanoseconds] }).count
        let withinBurst = gaps.filter { $0 < Self.sameBurstNanoseconds }.count
        #expect(withinBurst >= gaps.count - (ticks - 1) - 2,
                "\(withinBurst) of \(gaps.count) within a burst over \(ticks) ticks; arrivals (ns after the first tick): \(arrivals)")
    }

    /// Datagrams sent in one burst arrive closer together than this (ns): a loopback send
    /// takes tens of µs, even under the thread sanitizer, while the datagrams are sent
    /// 1,300 µs apart or more.
    static let sameBurstNanoseconds: Int64 = 250_000

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
