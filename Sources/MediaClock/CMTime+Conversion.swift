/// Conversions between `CMTime` and seconds, other timescales and `Duration`.
extension CMTime {
    /// Ticks per second of a nanosecond timescale, the default for `Duration` conversion.
    public static let nanosecondTimescale: Int32 = 1_000_000_000

    /// `seconds` expressed in `preferredTimescale` ticks, rounded half away from zero
    /// (`CMTimeMakeWithSeconds`).
    ///
    /// The double is used at its exact binary value. A non-positive timescale or NaN
    /// gives `.invalid`; ±infinity gives the matching infinity. If the value overflows,
    /// the timescale is halved until it fits; past timescale 1 the result is ±infinity.
    /// `hasBeenRounded` is set whenever the result is not exactly `seconds`.
    public init(seconds: Float64, preferredTimescale: CMTimeScale) {
        guard preferredTimescale > 0, !seconds.isNaN else {
            self = .invalid
            return
        }
        if seconds.isInfinite {
            self = seconds < 0 ? .negativeInfinity : .positiveInfinity
            return
        }
        guard let (mantissa, exponent) = ExactArithmetic.decompose(seconds) else {
            self.init(value: 0, timescale: preferredTimescale)
            return
        }
        // Keep `mantissa << exponent` and `1 << -exponent` inside Int128 (bit 126 at most).
        let largestShift = 126
        if exponent >= 0 {
            guard ExactArithmetic.bitLength(mantissa) + exponent <= largestShift else {
                // At least 2^126 seconds: no timescale can hold it.
                self = seconds < 0 ? .negativeInfinity : .positiveInfinity
                return
            }
            self = CMTime.fitting(
                1, times: mantissa << exponent, over: 1,
                preferredTimescale: nil, fallbackTimescale: preferredTimescale,
                epoch: 0, alreadyRounded: false)
        } else if -exponent <= largestShift {
            self = CMTime.fitting(
                1, times: mantissa, over: Int128(1) << -exponent,
                preferredTimescale: nil, fallbackTimescale: preferredTimescale,
                epoch: 0, alreadyRounded: false)
        } else {
            // |seconds| < 2^(53 - 127): far below half a tick of any 31-bit timescale.
            self.init(value: 0, timescale: preferredTimescale, flags: [.valid, .hasBeenRounded], epoch: 0)
        }
    }

    /// The time in seconds (`CMTimeGetSeconds`): NaN for invalid and indefinite times,
    /// ±infinity for infinite ones; the epoch is ignored.
    public var seconds: Float64 {
        switch kind {
        case .invalid, .indefinite: return .nan
        case .positiveInfinity: return .infinity
        case .negativeInfinity: return -.infinity
        case .numeric: return Double(value) / Double(timescale)
        }
    }

    /// This time in `newTimescale` ticks, rounded by `method` (`CMTimeConvertScale`).
    ///
    /// Non-numeric times are returned unchanged; a non-positive timescale gives invalid;
    /// a value that does not fit in `Int64` gives ±infinity. `hasBeenRounded` is set when
    /// the conversion is inexact (and kept if it was already set).
    public func convertScale(_ newTimescale: Int32, method: CMTimeRoundingMethod) -> CMTime {
        guard isNumeric else { return self }
        guard newTimescale > 0 else { return .invalid }
        if newTimescale == timescale { return self }
        let rounding: ExactArithmetic.Rounding
        switch method {
        case .roundHalfAwayFromZero: rounding = .halfAwayFromZero
        case .roundTowardZero: rounding = .towardZero
        case .roundAwayFromZero: rounding = .awayFromZero
        case .roundTowardPositiveInfinity: rounding = .towardPositiveInfinity
        case .roundTowardNegativeInfinity: rounding = .towardNegativeInfinity
        case .quickTime: rounding = newTimescale < timescale ? .towardZero : .awayFromZero
        }
        guard let quotient = ExactArithmetic.multiplyDivide(
            Int128(value), Int128(newTimescale), Int128(timescale), rounding: rounding),
              var converted = Int64(exactly: quotient.value)
        else {
            return value < 0 ? .negativeInfinity : .positiveInfinity
        }
        if method == .quickTime && value < 0 && converted == 0 {
            // QuickTime never rounds a negative time to zero.
            converted = -1
        }
        var newFlags = flags
        if !quotient.isExact { newFlags.insert(.hasBeenRounded) }
        return CMTime(value: converted, timescale: newTimescale, flags: newFlags, epoch: epoch)
    }

    /// `duration` in `timescale` ticks, rounded half away from zero and computed exactly
    /// from its attoseconds. The timescale is halved while the value overflows; a
    /// non-positive timescale gives invalid.
    public init(_ duration: Duration, timescale: CMTimeScale = CMTime.nanosecondTimescale) {
        guard timescale > 0 else {
            self = .invalid
            return
        }
        self = CMTime.fitting(
            1, times: duration.totalAttoseconds, over: Duration.attosecondsPerSecond,
            preferredTimescale: nil, fallbackTimescale: timescale,
            epoch: 0, alreadyRounded: false)
    }

    /// This time as a `Duration`, exact to the attosecond (rounded half away from zero
    /// below that), or `nil` for non-numeric times. The epoch is ignored.
    public var duration: Duration? {
        guard isNumeric else { return nil }
        // |value| * 1e18 < 2^123, so the quotient always exists.
        guard let attoseconds = ExactArithmetic.multiplyDivide(
            Int128(value), Duration.attosecondsPerSecond, Int128(timescale), rounding: .halfAwayFromZero)
        else { return nil }
        return Duration(totalAttoseconds: attoseconds.value)
    }
}
