import MediaClock
import Synchronization
import MutexAnnotations

/// A deterministic host clock for tests: its time moves only when told to, by
/// `advance(by:)` or `set(_:)`, like NIO's `EmbeddedEventLoop.advanceTime`.
///
/// Thread-safe: reads and moves are serialized by an internal mutex, so a test may
/// advance time on one thread while the code under test reads it on another.
public final class SimulatedHostClock: HostClock {
    private let current: Mutex<HostTime>

    /// Creates a clock frozen at `start` (the origin by default).
    public init(start: HostTime = HostTime(nanoseconds: 0)) {
        current = Mutex(start)
    }

    /// The frozen current time.
    public func now() -> HostTime {
        current.withLockAnnotated { $0 }
    }

    /// Moves time by `duration` (rounded to nanoseconds, saturating). A negative
    /// duration moves it backwards, which real monotonic clocks never do; tests use
    /// that only to probe robustness.
    public func advance(by duration: Duration) {
        current.withLockAnnotated { $0 = $0 + duration }
    }

    /// Jumps to `time`, forwards or backwards.
    public func set(_ time: HostTime) {
        current.withLockAnnotated { $0 = time }
    }
}
