import Foundation
import Testing
import ChorusTestSupport
import GroupSync
import MediaClock
import Synchronization
import MutexAnnotations

/// Collects datagrams from a receive thread and lets a test wait for them (bounded).
final class Inbox: Sendable {
    private let items = Mutex<[UDPSocket.Datagram]>([])
    private let arrived = DispatchSemaphore(value: 0)

    func put(_ datagram: UDPSocket.Datagram) {
        items.withLockAnnotated { $0.append(datagram) }
        arrived.signal()
    }

    /// Every datagram until none has come for `quiet`, the first waited for up to `first`:
    /// a relay thread a loaded machine holds off a while still delivers all it will. (With
    /// 300 ms for the first, a run beside other suites once collected none.)
    func drain(first: Duration = .seconds(10), quiet: Duration = .seconds(1)) -> [UDPSocket.Datagram] {
        var all: [UDPSocket.Datagram] = []
        while let datagram = next(timeout: all.isEmpty ? first : quiet) { all.append(datagram) }
        return all
    }

    /// The next datagram, or nil after `timeout` (a guard against hangs, not a timing assertion).
    func next(timeout: Duration = .seconds(5)) -> UDPSocket.Datagram? {
        let nanoseconds = Int(timeout.components.seconds) * 1_000_000_000 + Int(timeout.components.attoseconds / 1_000_000_000)
        guard arrived.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success else { return nil }
        return items.withLockAnnotated { $0.isEmpty ? nil : $0.removeFirst() }
    }
}

@Suite("UDPSocket", .serialized, .ownThread)
struct UDPSocketTests {
    @Test func exchangesDatagramsOnLoopbackWithReceiveTimes() throws {
        let a = try UDPSocket(bindingTo: .loopbackIPv4(port: 0))
        let b = try UDPSocket(bindingTo: .loopbackIPv4(port: 0))
        defer { a.close(); b.close() }
        #expect(a.localEndpoint.port != 0)
        let inbox = Inbox()
        b.startReceiving { inbox.put($0) }
        let before = HostTime.now()
        for index in 0..<3 { try a.send([UInt8(index), 1, 2], to: b.localEndpoint) }
        for index in 0..<3 {
            let datagram = try #require(inbox.next())
            #expect(datagram.bytes == [UInt8(index), 1, 2])
            #expect(datagram.source == a.localEndpoint)
            #expect(datagram.receivedAt >= before - .milliseconds(1))
            #expect(datagram.receivedAt <= HostTime.now())
        }
    }

    @Test func aStampedSendSaysWhenTheDatagramLeft() throws {
        let a = try UDPSocket(bindingTo: .loopbackIPv4(port: 0))
        let b = try UDPSocket(bindingTo: .loopbackIPv4(port: 0))
        defer { a.close(); b.close() }
        let inbox = Inbox(), echoes = Inbox()
        b.startReceiving { inbox.put($0) }
        // The sender receives too: its loop must get past the error queue's wake-ups.
        a.startReceiving { echoes.put($0) }
        for index in 0..<20 {
            let before = HostTime.now()
            let left = try #require(try a.sendStamped([UInt8(index)], to: b.localEndpoint))
            #expect(left >= before && left <= HostTime.now())
            let datagram = try #require(inbox.next())
            #expect(datagram.bytes == [UInt8(index)])
            // Looped back as it left: received no earlier than that.
            #expect(datagram.receivedAt >= left)
            try b.send([UInt8(index), 9], to: a.localEndpoint)
            #expect(echoes.next()?.bytes == [UInt8(index), 9])
        }
        // Plain sends ask for no stamp, and stamped ones still get theirs after them.
        try a.send([1], to: b.localEndpoint)
        #expect(inbox.next()?.bytes == [1])
        #expect(try a.sendStamped([2], to: b.localEndpoint) != nil)
    }

    @Test func leaderAndFollowerCoresTalkOverRealSockets() throws {
        let leaderSocket = try UDPSocket(bindingTo: .loopbackIPv4(port: 0))
        let followerSocket = try UDPSocket(bindingTo: .loopbackIPv4(port: 0))
        defer { leaderSocket.close(); followerSocket.close() }
        let leaderInbox = Inbox(), followerInbox = Inbox()
        leaderSocket.startReceiving { leaderInbox.put($0) }
        followerSocket.startReceiving { followerInbox.put($0) }
        var leader = try LeaderCore(group: "loop", baseURL: "http://127.0.0.1:1/")
        var follower = try FollowerCore(group: "loop", leader: leaderSocket.localEndpoint, followerName: "f")
        func send(_ actions: [FollowerCore.Action]) throws {
            for case let .send(d) in actions { try followerSocket.send(d.bytes, to: d.destination) }
        }
        try send(follower.handle(.start, at: .now()))
        var applied = false
        var rounds = 0
        while !applied, rounds < 200 {
            rounds += 1
            while let datagram = leaderInbox.next(timeout: .milliseconds(30)) {
                for case let .send(d) in leader.handle(.received(datagram.bytes, from: datagram.source, receivedAt: datagram.receivedAt), at: .now()) {
                    try leaderSocket.send(d.bytes, to: d.destination)
                }
            }
            while let datagram = followerInbox.next(timeout: .milliseconds(1)) {
                let actions = follower.handle(.received(datagram.bytes, from: datagram.source, receivedAt: datagram.receivedAt), at: .now())
                applied = applied || actions.contains { $0.applied != nil }
                try send(actions)
            }
            try send(follower.handle(.tick, at: .now()))
        }
        #expect(applied)
        #expect(follower.leaderID == leader.senderID)
        let estimate = try #require(follower.estimator.estimate)
        // Same machine, same clock: the offset is the loopback asymmetry, well under a millisecond.
        #expect(abs(estimate.offset(atHost: .now()).microsecondsValue) < 1_000)
    }

    @Test func closeWakesTheLoopAndGarbageDoesNotCrash() throws {
        let socket = try UDPSocket(bindingTo: .anyIPv6(port: 0))
        let inbox = Inbox()
        socket.startReceiving { inbox.put($0) }
        let sender = try UDPSocket(bindingTo: .loopbackIPv4(port: 0))
        defer { sender.close() }
        try sender.send([], to: .loopbackIPv4(port: socket.localEndpoint.port))
        try sender.send(Array(repeating: 0xFF, count: 9_000), to: .loopbackIPv4(port: socket.localEndpoint.port))
        #expect(inbox.next()?.bytes.isEmpty == true)
        #expect(inbox.next()?.bytes.count == 9_000)
        socket.close()
        socket.close()
        #expect(throws: UDPSocket.SocketError.self) { try socket.send([1], to: sender.localEndpoint) }
    }

    @Test func bindingATakenPortFailsWithAnError() throws {
        let first = try UDPSocket(bindingTo: .loopbackIPv4(port: 0))
        defer { first.close() }
        #expect(throws: UDPSocket.SocketError.self) { try UDPSocket(bindingTo: first.localEndpoint) }
    }
}
