#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An instant on a host's monotonic clock (`CLOCK_MONOTONIC`), in nanoseconds since
/// an arbitrary, boot-relative origin.
///
/// Host times are only comparable with other host times of the same machine (or of
/// the same `HostClock`). Intervals between them are Swift `Duration`s. Arithmetic
/// saturates at the `Int64` range instead of trapping, because a host time is often
/// derived from untrusted input (e.g. a remote peer's clock report).
///
/// A value type; safe to share between threads.
public struct HostTime: Sendable, Hashable, Comparable, Codable {
    /// Nanoseconds since the clock's origin.
    public var nanoseconds: Int64

    /// The timescale of `cmTime`: host time ticks in nanoseconds.
    public static let nanosecondTimescale: Int32 = 1_000_000_000

    /// Creates a host time from a nanosecond count on the host's monotonic clock.
    public init(nanoseconds: Int64) {
        self.nanoseconds = nanoseconds
    }

    /// Reads the real monotonic clock of this machine (`clock_gettime(CLOCK_MONOTONIC)`).
    ///
    /// Thread-safe; never goes backwards within one boot.
    public static func now() -> HostTime {
        var spec = timespec()
        // CLOCK_MONOTONIC cannot fail on Linux; on the impossible failure the zeroed
        // timespec yields the origin rather than garbage.
        _ = clock_gettime(CLOCK_MONOTONIC, &spec)
        let nanoseconds = Int128(spec.tv_sec) * 1_000_000_000 + Int128(spec.tv_nsec)
        return HostTime(nanoseconds: ExactArithmetic.clampToInt64(nanoseconds))
    }

    /// Orders host times chronologically.
    public static func < (lhs: HostTime, rhs: HostTime) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }

    /// The instant `duration` after `time`, rounded to the nearest nanosecond (ties away
    /// from zero) and saturated at the representable range.
    public static func + (time: HostTime, duration: Duration) -> HostTime {
        HostTime(nanoseconds: ExactArithmetic.clampToInt64(Int128(time.nanoseconds) + duration.roundedNanoseconds))
    }

    /// The instant `duration` before `time`, rounded and saturated like `+`.
    public static func - (time: HostTime, duration: Duration) -> HostTime {
        HostTime(nanoseconds: ExactArithmetic.clampToInt64(Int128(time.nanoseconds) - duration.roundedNanoseconds))
    }

    /// The exact interval from `rhs` to `lhs` (negative when `lhs` is earlier).
    public static func - (lhs: HostTime, rhs: HostTime) -> Duration {
        Duration(totalNanoseconds: Int128(lhs.nanoseconds) - Int128(rhs.nanoseconds))
    }

    /// Moves `time` forward by `duration` (see `+`).
    public static func += (time: inout HostTime, duration: Duration) {
        time = time + duration
    }

    /// Moves `time` backward by `duration` (see `-`).
    public static func -= (time: inout HostTime, duration: Duration) {
        time = time - duration
    }

    /// This instant as a `CMTime` with a nanosecond timescale (exact).
    public var cmTime: CMTime {
        CMTime(value: nanoseconds, timescale: Self.nanosecondTimescale)
    }

    /// Converts a `CMTime` on the host time line to a host time, rounding to the
    /// nearest nanosecond.
    ///
    /// Returns `nil` for non-numeric times (invalid, indefinite, infinite) and for times
    /// outside the nanosecond range of `Int64`. The epoch is ignored.
    public init?(_ time: CMTime) {
        guard time.isNumeric else { return nil }
        let converted = time.convertScale(Self.nanosecondTimescale, method: .roundHalfAwayFromZero)
        guard converted.isNumeric else { return nil }
        self.init(nanoseconds: converted.value)
    }
}

extension HostTime: CustomStringConvertible {
    /// Nanoseconds with a unit, e.g. "1500000000ns".
    public var description: String { "\(nanoseconds)ns" }
}
