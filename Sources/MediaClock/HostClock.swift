/// A source of host time: the monotonic clock of one machine.
///
/// Conforming types must be thread-safe and must never go backwards unless a test
/// deliberately moves them (see `SimulatedHostClock.set(_:)`). Injecting a
/// `HostClock` instead of reading `HostTime.now()` directly lets tests drive time
/// deterministically and simulate other machines (`SkewedHostClock`).
public protocol HostClock: Sendable {
    /// The current host time of this clock.
    func now() -> HostTime
}
