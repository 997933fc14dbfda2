#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
internal import CKernelClock

/// The kernel's own clocks, read by system call, and the conversion of kernel timestamps to
/// host time.
///
/// `HostTime.now()` reads the clock through the C library, as every other clock read of the
/// process does. A tool that runs a process on a moved clock (libfaketime, used to give one
/// node of a group a clock seconds off and hundreds of ppm fast) interposes on that function,
/// so the process's host time is no longer the kernel's. Timestamps the kernel takes itself,
/// a datagram's receive stamp or a sound card's position stamp, stay in the kernel's time.
/// Comparing such a stamp with host time directly would then be off by the seconds the
/// tool adds and drift by its skew; what carries over between the two is an age. A stamp is
/// converted by how long ago it was on the kernel's clock, subtracted from host time now.
/// Over the microseconds to milliseconds of a stamp's age, a skew of hundreds of ppm is
/// nanoseconds of error. Without such a tool both reads agree and nothing changes.
public enum KernelClock {
    /// Nanoseconds on the kernel's clock `clock` (`CLOCK_REALTIME`, `CLOCK_MONOTONIC`), or
    /// nil if the system call fails.
    public static func nanoseconds(_ clock: Int32) -> Int128? {
        var spec = timespec()
        guard chorus_kernel_clock_gettime(clockid_t(clock), &spec) == 0 else { return nil }
        return Int128(spec.tv_sec) * 1_000_000_000 + Int128(spec.tv_nsec)
    }

    /// Reads of host, kernel, host clock tried when converting a stamp, keeping the pair of
    /// host reads closest together: five cover a preemption or two on a loaded machine.
    static let bracketAttempts = 5
    /// A bracket this narrow is taken at once: a read of each clock costs tens of ns (a few
    /// hundred through libfaketime), so an unpreempted bracket is well within it.
    static let tightBracket: Duration = .microseconds(2)

    private static func bracketedRead(_ clock: Int32) -> (before: HostTime, kernel: Int128, after: HostTime)? {
        let before = HostTime.now()
        guard let kernelNow = nanoseconds(clock) else { return nil }
        return (before, kernelNow, HostTime.now())
    }

    /// The host time of a stamp the kernel took on `clock` (`stamp` nanoseconds), given as
    /// its age on that clock subtracted from host time now. Nil when the age is negative
    /// beyond `slack` or older than `maximumAge`: the clock was stepped in between, or the
    /// stamp is not from the kernel's `clock`. Never later than host time now.
    public static func hostTime(ofStamp stamp: Int128, on clock: Int32, maximumAge: Duration,
                                slack: Duration = .microseconds(10)) -> HostTime? {
        // The kernel read lies between two host reads. A thread preempted between them
        // would place it anywhere in a bracket of many µs, and a stamp misplaced by half of
        // that makes an exchange look faster than the path allows: the one bound a clock
        // estimate trusts most. So the reads are retried, keeping the tightest bracket.
        guard var (before, kernelNow, after) = bracketedRead(clock) else { return nil }
        for _ in 1..<bracketAttempts where after - before > tightBracket {
            guard let retry = bracketedRead(clock) else { return nil }
            if retry.after - retry.before < after - before { (before, kernelNow, after) = retry }
        }
        return hostTime(ofStamp: stamp, kernelNow: kernelNow, readBetween: before, and: after,
                        maximumAge: maximumAge, slack: slack)
    }

    /// The conversion itself, given a kernel read of `kernelNow` that was made between the
    /// host times `before` and `after`: the read is placed at their midpoint and the stamp's
    /// age subtracted, never past `after`.
    static func hostTime(ofStamp stamp: Int128, kernelNow: Int128, readBetween before: HostTime, and after: HostTime,
                         maximumAge: Duration, slack: Duration) -> HostTime? {
        let age = kernelNow - stamp
        guard age >= -slack.roundedNanoseconds, age <= maximumAge.roundedNanoseconds else { return nil }
        let now = before.nanoseconds / 2 + after.nanoseconds / 2 + (before.nanoseconds % 2 + after.nanoseconds % 2) / 2
        let converted = Int128(now) - max(0, age)
        return HostTime(nanoseconds: ExactArithmetic.clampToInt64(min(converted, Int128(after.nanoseconds))))
    }
}
