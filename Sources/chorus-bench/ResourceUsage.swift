import Foundation

/// CPU time and peak resident memory, as `getrusage` and `wait4` report them.
///
/// Differences of two readings of the same process give the cost of what ran between them;
/// a child's reading from `wait4` is that child's whole life.
struct ResourceUsage: Sendable {
    /// Time spent running the program's own code.
    var user: Duration
    /// Time the kernel spent on the program's behalf (reads, page faults, ALSA ioctls).
    var system: Duration
    /// The largest resident set seen, in kibibytes (Linux's `ru_maxrss` unit).
    var peakResidentKiB: Int

    /// User plus system time: what the work cost a core.
    var cpu: Duration { user + system }

    init(user: Duration, system: Duration, peakResidentKiB: Int) {
        self.user = user
        self.system = system
        self.peakResidentKiB = peakResidentKiB
    }

    init(_ usage: rusage) {
        user = Self.duration(usage.ru_utime)
        system = Self.duration(usage.ru_stime)
        peakResidentKiB = Int(usage.ru_maxrss)
    }

    /// This process so far, every thread included.
    static func ofThisProcess() -> ResourceUsage {
        var usage = rusage()
        _ = getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return ResourceUsage(usage)
    }

    /// CPU spent between `earlier` and `self`; the peak is `self`'s (peaks do not subtract).
    func since(_ earlier: ResourceUsage) -> ResourceUsage {
        ResourceUsage(user: user - earlier.user, system: system - earlier.system, peakResidentKiB: peakResidentKiB)
    }

    private static func duration(_ value: timeval) -> Duration {
        .seconds(Int64(value.tv_sec)) + .microseconds(Int64(value.tv_usec))
    }
}

extension Duration {
    /// This duration in seconds, as a floating-point number for reporting.
    var seconds: Double {
        let (whole, attoseconds) = components
        return Double(whole) + Double(attoseconds) / 1e18
    }

    /// This duration in milliseconds, for reporting.
    var milliseconds: Double { seconds * 1_000 }

    /// This duration in microseconds, for reporting.
    var microseconds: Double { seconds * 1_000_000 }
}
