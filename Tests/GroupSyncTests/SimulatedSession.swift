import ChorusSimulation
import GroupSync
import MediaClock

/// A leader and a follower on a simulated network, driven event by event in true time.
/// The leader's host clock is the true clock; the follower's is offset and skewed.
struct SimulatedSession {
    static let leaderEndpoint = UDPEndpoint.loopbackIPv4(port: 5000)
    static let followerEndpoint = UDPEndpoint.loopbackIPv4(port: 5001)
    static let oneWayDelay: Duration = .microseconds(300)
    static let tick: Duration = .milliseconds(5)

    var leader: LeaderCore
    var follower: FollowerCore
    let followerClock: SkewedHostClock
    var now = HostTime(nanoseconds: 50_000_000_000)
    var inFlight: [(at: HostTime, toLeader: Bool, bytes: [UInt8])] = []
    var leaderReachable = true
    /// Welcomes from the leader still to be lost on the way.
    var welcomesToLose = 0
    var followerActions: [FollowerCore.Action] = []
    var leaderActions: [LeaderCore.Action] = []
    private var nextTick: HostTime

    init(leader: LeaderCore, follower: FollowerCore, offset: Duration = .seconds(-12) + .milliseconds(345), skewPPM: Int64 = 150) {
        self.leader = leader
        self.follower = follower
        followerClock = SkewedHostClock(wrapping: SimulatedHostClock(), offset: offset, skewPPM: skewPPM, base: HostTime(nanoseconds: 50_000_000_000))
        nextTick = now
    }

    var followerNow: HostTime { followerClock.map(now) }

    /// The true leader time at a follower host time.
    func trueLeaderTime(atFollower time: HostTime) -> LeaderTime {
        GroupSyncTests.trueLeaderTime(atFollower: time, clock: followerClock)
    }

    mutating func startFollower() {
        route(follower.handle(.start, at: followerNow))
    }

    mutating func leaderStateChanged(_ state: GroupState) {
        route(leader.handle(.stateChanged(state), at: now))
    }

    /// Runs for `duration` of true time, delivering datagrams and ticking both cores.
    mutating func run(for duration: Duration) {
        let end = now + duration
        while true {
            let nextDelivery = inFlight.map(\.at).min()
            // The follower is also woken when its next clock request is due, as its adapter
            // is (on its own clock: the skew is ppm of a few ms).
            let nextPoll = follower.nextPollAt.map { now + ($0 - followerNow) }
            let wake = min(nextTick, nextPoll.map { max($0, now) } ?? nextTick)
            let next = min(nextDelivery ?? wake, wake)
            guard next <= end else { break }
            now = next
            if let index = inFlight.firstIndex(where: { $0.at == next }) {
                let packet = inFlight.remove(at: index)
                if packet.toLeader {
                    route(leader.handle(.received(packet.bytes, from: Self.followerEndpoint, receivedAt: now), at: now))
                } else {
                    route(follower.handle(.received(packet.bytes, from: Self.leaderEndpoint, receivedAt: followerNow), at: followerNow))
                }
            } else if next == nextTick {
                nextTick = now + Self.tick
                route(leader.handle(.tick, at: now))
                route(follower.handle(.tick, at: followerNow))
            } else {
                route(follower.handle(.tick, at: followerNow))
            }
        }
        now = end
    }

    /// Delivers a datagram to the follower as if from the leader, now.
    mutating func deliverToFollower(_ bytes: [UInt8]) {
        route(follower.handle(.received(bytes, from: Self.leaderEndpoint, receivedAt: followerNow), at: followerNow))
    }

    mutating func route(_ actions: [FollowerCore.Action]) {
        followerActions += actions
        for case let .send(datagram) in actions where leaderReachable {
            inFlight.append((now + Self.oneWayDelay, true, datagram.bytes))
        }
    }

    mutating func route(_ actions: [LeaderCore.Action]) {
        leaderActions += actions
        for case let .send(datagram) in actions where leaderReachable {
            if datagram.message.type == .welcome, welcomesToLose > 0 {
                welcomesToLose -= 1
                continue
            }
            inFlight.append((now + Self.oneWayDelay, false, datagram.bytes))
        }
    }

    /// Removes and returns the follower actions so far.
    mutating func takeFollowerActions() -> [FollowerCore.Action] {
        defer { followerActions = [] }
        return followerActions
    }
}

extension FollowerCore.Action {
    var applied: (GroupState, ClockEstimate)? {
        if case let .apply(state, estimate) = self { return (state, estimate) }
        return nil
    }
}
