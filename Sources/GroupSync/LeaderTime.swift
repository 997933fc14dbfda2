import MediaClock

/// An instant on the group leader's monotonic clock, in nanoseconds since the leader's
/// (arbitrary) origin.
///
/// A distinct type from `HostTime` because the two time lines differ by an unknown offset
/// and rate until a `ClockEstimate` relates them; mixing them up is the classic sync bug.
/// On the leader itself, leader time is its host time (`init(_ hostTime:)`).
/// Arithmetic saturates at the `Int64` range, since leader times arrive from the network.
public struct LeaderTime: Sendable, Hashable, Comparable {
    /// Nanoseconds since the leader clock's origin.
    public var nanoseconds: Int64

    /// A leader time from a nanosecond count.
    public init(nanoseconds: Int64) {
        self.nanoseconds = nanoseconds
    }

    /// The leader's own host time as leader time (only meaningful on the leader).
    public init(_ hostTime: HostTime) {
        nanoseconds = hostTime.nanoseconds
    }

    /// Orders leader times chronologically.
    public static func < (lhs: LeaderTime, rhs: LeaderTime) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }

    /// The instant `duration` later, rounded to the nanosecond and saturated.
    public static func + (time: LeaderTime, duration: Duration) -> LeaderTime {
        LeaderTime(nanoseconds: clamp(Int128(time.nanoseconds) + duration.nanosecondCount))
    }

    /// The exact interval from `rhs` to `lhs`.
    public static func - (lhs: LeaderTime, rhs: LeaderTime) -> Duration {
        .nanoseconds(clamp(Int128(lhs.nanoseconds) - Int128(rhs.nanoseconds)))
    }

    static func clamp(_ value: Int128) -> Int64 {
        if value > Int128(Int64.max) { return .max }
        if value < Int128(Int64.min) { return .min }
        return Int64(value)
    }
}

extension LeaderTime: CustomStringConvertible {
    /// Nanoseconds with a unit and an "L" to tell it from host time, e.g. "L1500000000ns".
    public var description: String { "L\(nanoseconds)ns" }
}

extension Duration {
    /// Whole nanoseconds, truncated toward zero (attoseconds below a nanosecond dropped).
    var nanosecondCount: Int128 {
        let (seconds, attoseconds) = components
        return Int128(seconds) * 1_000_000_000 + Int128(attoseconds / 1_000_000_000)
    }
}
