/// The real monotonic clock of this machine (`CLOCK_MONOTONIC`).
///
/// Stateless, so it is freely shareable between threads.
public struct MonotonicHostClock: HostClock {
    /// Creates a handle on the machine's monotonic clock.
    public init() {}

    /// Reads `CLOCK_MONOTONIC`; see `HostTime.now()`.
    public func now() -> HostTime {
        HostTime.now()
    }
}
