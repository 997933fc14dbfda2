import ChorusSimulation
import Foundation
import GroupSync
import MediaClock

/// The relay's seeded generator serves the simulations too, so they are reproducible.
typealias SplitMix64 = SeededGenerator

/// A simulated network path for clock exchanges: the leader's clock is the true clock,
/// the follower's is a `SkewedHostClock` of it; each direction gets a base delay, uniform
/// jitter and occasional one-way spikes.
struct SimulatedPath {
    var baseDelay: Duration = .microseconds(150)
    var jitter: Duration = .zero
    var spikeProbability = 0.0
    var spike: Duration = .milliseconds(20)
    var leaderProcessing: Duration = .microseconds(20)
    /// Mean of a wake-up latency added to each crossing (gamma, shape 2): a forwarding
    /// thread's, which blurs the floor.
    var wakeup: Duration = .zero
    /// When set, a relay on the leader's (the true) clock holds each crossing for its
    /// timer's next tick, this far apart from `tickOrigin` (`ImpairmentRelay.releaseTick`).
    var releaseTick: Duration?
    var tickOrigin = HostTime(nanoseconds: 0)
    /// Mean of an exponential queueing delay added to requests only: a queue busier one way.
    var forwardQueueing: Duration = .zero
    var rng: SplitMix64

    init(seed: UInt64) {
        rng = SplitMix64(seed: seed)
    }

    /// A path behind a relay releasing on its timer's ticks: `base` ± `jitter` each way,
    /// then held for the next tick of `tick` from `tickOrigin`, with a leader that takes
    /// 30 µs to reply.
    static func ticking(seed: UInt64, base: Duration, jitter: Duration, tick: Duration, tickOrigin: HostTime) -> SimulatedPath {
        var path = SimulatedPath(seed: seed)
        path.baseDelay = base
        path.jitter = jitter
        path.releaseTick = tick
        path.tickOrigin = tickOrigin
        path.leaderProcessing = .microseconds(30)
        return path
    }

    mutating func oneWay() -> Duration {
        var delay = baseDelay
        if jitter > .zero {
            delay += jitter * Double.random(in: -1...1, using: &rng)
        }
        if Double.random(in: 0..<1, using: &rng) < spikeProbability { delay += spike }
        if wakeup > .zero {
            // Shape 2: two exponentials of half the mean.
            let half = wakeup / 2
            delay += half * -log(1 - Double.random(in: 0..<1, using: &rng)) + half * -log(1 - Double.random(in: 0..<1, using: &rng))
        }
        return max(delay, .microseconds(1))
    }

    /// One exchange starting at true time `start`, with the follower clock `follower`.
    mutating func exchange(at start: HostTime, follower: SkewedHostClock) -> ClockSample {
        var forward = oneWay()
        let backward = oneWay()
        if forwardQueueing > .zero {
            forward += forwardQueueing * -log(1 - Double.random(in: 0..<1, using: &rng))
        }
        let t2 = ImpairmentRelay.release(at: start + forward, tick: releaseTick, origin: tickOrigin)
        let t3 = t2 + leaderProcessing
        let arrival = ImpairmentRelay.release(at: t3 + backward, tick: releaseTick, origin: tickOrigin)
        return ClockSample(
            t1: follower.map(start), t2: LeaderTime(t2), t3: LeaderTime(t3), t4: follower.map(arrival)
        )
    }
}

/// The exact leader time at follower reading `followerTime`, inverting the skewed map.
func trueLeaderTime(atFollower followerTime: HostTime, clock: SkewedHostClock) -> LeaderTime {
    // follower = base + offset + (t - base) * (1e6 + skew) / 1e6  =>  t = base + (follower - base - offset) * 1e6 / (1e6 + skew)
    let sinceBase = Int128(followerTime.nanoseconds) - Int128(clock.base.nanoseconds)
        - Int128(clock.offset.components.seconds) * 1_000_000_000 - Int128(clock.offset.components.attoseconds / 1_000_000_000)
    let scaled = sinceBase * 1_000_000 / (1_000_000 + Int128(clock.skewPPM))
    return LeaderTime(nanoseconds: Int64(Int128(clock.base.nanoseconds) + scaled))
}

/// The true rate of the leader relative to a follower clock skewed by `skewPPM`, in ppm.
func trueRatePPM(skewPPM: Int64) -> Double {
    (1_000_000 / (1_000_000 + Double(skewPPM)) - 1) * 1_000_000
}

extension Duration {
    var microsecondsValue: Double {
        Double(components.seconds) * 1e6 + Double(components.attoseconds) / 1e12
    }
}
