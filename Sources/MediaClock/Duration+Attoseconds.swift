/// Exact conversions between `Duration` and integer counts, used by `HostTime` and
/// `CMTime` so that no conversion passes through floating point.
extension Duration {
    /// Attoseconds in one second: `Duration`'s native resolution.
    static let attosecondsPerSecond: Int128 = 1_000_000_000_000_000_000

    /// Attoseconds in one nanosecond, the resolution of `HostTime`.
    static let attosecondsPerNanosecond: Int128 = 1_000_000_000

    /// The whole duration as a signed count of attoseconds (exact).
    var totalAttoseconds: Int128 {
        let parts = components
        return Int128(parts.seconds) * Self.attosecondsPerSecond + Int128(parts.attoseconds)
    }

    /// Builds a duration from attoseconds, saturating at the range `Duration` can
    /// express through its public initializer (about ±2.9e11 years).
    init(totalAttoseconds: Int128) {
        let seconds = totalAttoseconds / Self.attosecondsPerSecond
        let attoseconds = totalAttoseconds % Self.attosecondsPerSecond
        if seconds > Int128(Int64.max) {
            self.init(secondsComponent: .max, attosecondsComponent: 0)
        } else if seconds < Int128(Int64.min) {
            self.init(secondsComponent: .min, attosecondsComponent: 0)
        } else {
            self.init(secondsComponent: Int64(seconds), attosecondsComponent: Int64(attoseconds))
        }
    }

    /// Builds a duration from a (possibly huge) nanosecond count, exactly.
    init(totalNanoseconds: Int128) {
        let seconds = totalNanoseconds / 1_000_000_000
        let nanoseconds = totalNanoseconds % 1_000_000_000
        self.init(totalAttoseconds: seconds * Self.attosecondsPerSecond + nanoseconds * Self.attosecondsPerNanosecond)
    }

    /// The duration in whole nanoseconds, rounded half away from zero.
    package var roundedNanoseconds: Int128 {
        // Dividing by 1e9 cannot overflow, so the optional is always present.
        ExactArithmetic.multiplyDivide(
            totalAttoseconds, 1, Self.attosecondsPerNanosecond, rounding: .halfAwayFromZero
        )?.value ?? 0
    }
}
