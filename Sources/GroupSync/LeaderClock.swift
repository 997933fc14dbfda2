import MediaClock
import Synchronization
import MutexAnnotations

/// The leader's clock as seen from a follower: a `CMClock` whose time is the leader's
/// time, read through the latest `ClockEstimate`. Hand it to the follower's `AVPlayer` as
/// its master clock.
///
/// Times are in nanoseconds (timescale 10^9). Before the first estimate the clock is the
/// identity of the host clock, so it is always usable; callers wait for
/// `FollowerCore.Action.apply` before scheduling playback anyway.
///
/// Thread-safety: `update(_:)` swaps the whole estimate under a mutex and readers copy it
/// under the same mutex, so a reader never sees half of an old estimate and half of a new one.
// @unchecked because a Sendable class cannot be checked when it has a superclass: its only
// field of its own is `current`, a Mutex.
public final class LeaderClock: CMClock, @unchecked Sendable {
    private let current = Mutex<ClockEstimate?>(nil)

    /// A clock reading the leader's time on `hostClock` (the follower's host clock).
    public override init(hostClock: any HostClock) {
        super.init(hostClock: hostClock)
    }

    /// Installs a new estimate (from `FollowerCore.Action.updateClock`); `nil` forgets it.
    public func update(_ estimate: ClockEstimate?) {
        current.withLockAnnotated { $0 = estimate }
    }

    /// The estimate the clock currently reads through.
    public var estimate: ClockEstimate? {
        current.withLockAnnotated { $0 }
    }

    /// The leader's clock speed in leader seconds per follower host second.
    public override var rateRelativeToHost: Double {
        estimate?.rateRelativeToHost ?? 1
    }

    /// The leader time at follower host time `hostTime`, in nanoseconds.
    public override func time(atHostTime hostTime: HostTime) -> CMTime {
        guard let estimate else { return hostTime.cmTime }
        return CMTime(value: estimate.leaderTime(atHost: hostTime).nanoseconds, timescale: HostTime.nanosecondTimescale)
    }

    /// The follower host time at which the leader's clock reads `clockTime`; `nil` for a
    /// non-numeric time or one outside the nanosecond range.
    public override func hostTime(forClockTime clockTime: CMTime) -> HostTime? {
        guard let asNanoseconds = HostTime(clockTime) else { return nil }
        guard let estimate else { return asNanoseconds }
        return estimate.hostTime(atLeader: LeaderTime(nanoseconds: asNanoseconds.nanoseconds))
    }
}
