import Glibc
import MediaClock

/// The host clock the window's refreshes are timed on: CLOCK_MONOTONIC, read as the rest of
/// Chorus reads it (`HostTime`), so a presentation stamp means the same instant to the
/// player that asked for the picture.
enum HostClock {
    static let nanosecondsPerSecond: Int64 = 1_000_000_000

    static func now() -> Int64 { HostTime.now().nanoseconds }

    /// Sleeps until a host-clock instant. A relative sleep, recomputed from a fresh reading,
    /// as every timed wait in Chorus is: an absolute deadline is read by the kernel in its own
    /// time, which a tool such as libfaketime moves apart from the process's.
    static func sleep(until instant: Int64) {
        let remaining = instant - now()
        guard remaining > 0 else { return }
        var request = timespec(tv_sec: Int(remaining / 1_000_000_000), tv_nsec: Int(remaining % 1_000_000_000))
        var left = timespec()
        while nanosleep(&request, &left) == -1 && errno == EINTR { request = left }
    }
}
