/// CoreMedia's time arithmetic, done exactly in 128/256-bit integers and rounded
/// only where the result cannot be represented.
extension CMTime {
    /// Smallest timescale `CMTimeMultiplyByFloat64` computes in, as CoreMedia does, so
    /// that fractional multipliers keep sub-millisecond precision: 2^16 ticks per second.
    static let minimumFloatProductTimescale: Int32 = 65_536

    /// The time whose value is `a * b * T / c`, rounded half away from zero, in the first
    /// timescale `T` that keeps the value within `Int64`.
    ///
    /// `preferredTimescale` is tried first; then `fallbackTimescale`, halved repeatedly down
    /// to 1 as CoreMedia does; if even timescale 1 overflows the result is ±infinity.
    /// Callers keep `|a| <= 2^95` so that `a * T` fits in `Int128`; `b` may use all 127 bits.
    static func fitting(
        _ a: Int128,
        times b: Int128,
        over c: Int128,
        preferredTimescale: Int32?,
        fallbackTimescale: Int32,
        epoch: CMTimeEpoch,
        alreadyRounded: Bool
    ) -> CMTime {
        func attempt(_ timescale: Int32) -> CMTime? {
            let (scaled, overflow) = a.multipliedReportingOverflow(by: Int128(timescale))
            guard !overflow,
                  let quotient = ExactArithmetic.multiplyDivide(scaled, b, c, rounding: .halfAwayFromZero),
                  let value = Int64(exactly: quotient.value)
            else { return nil }
            var flags: CMTimeFlags = .valid
            if alreadyRounded || !quotient.isExact { flags.insert(.hasBeenRounded) }
            return CMTime(value: value, timescale: timescale, flags: flags, epoch: epoch)
        }
        if let preferred = preferredTimescale, preferred > 0, let result = attempt(preferred) {
            return result
        }
        var timescale = fallbackTimescale
        while timescale > 0 {
            if let result = attempt(timescale) { return result }
            timescale /= 2
        }
        // Only a non-zero product can overflow, so the sign is well defined.
        return ((a < 0) != (b < 0)) ? .negativeInfinity : .positiveInfinity
    }

    /// The infinity with the given sign.
    static func infinity(negative: Bool) -> CMTime {
        negative ? .negativeInfinity : .positiveInfinity
    }

    /// Sum or difference with CoreMedia's rules for non-numeric operands and epochs.
    static func combine(_ lhs: CMTime, _ rhs: CMTime, subtracting: Bool) -> CMTime {
        let left = lhs.kind
        var right = rhs.kind
        if left == .invalid || right == .invalid { return .invalid }
        // Subtracting an infinity is adding the opposite infinity.
        if subtracting {
            if right == .positiveInfinity { right = .negativeInfinity } else if right == .negativeInfinity { right = .positiveInfinity }
        }
        let leftInfinite = left == .positiveInfinity || left == .negativeInfinity
        let rightInfinite = right == .positiveInfinity || right == .negativeInfinity
        switch (leftInfinite, rightInfinite) {
        case (true, true):
            return left == right ? infinity(negative: left == .negativeInfinity) : .invalid
        case (true, false):
            return infinity(negative: left == .negativeInfinity)
        case (false, true):
            return infinity(negative: right == .negativeInfinity)
        case (false, false):
            break
        }
        if left == .indefinite || right == .indefinite { return .indefinite }

        // Epoch 0 is a duration and combines with any epoch; two equal non-zero epochs
        // yield a duration; different non-zero epochs have an unknown distance.
        let epoch: CMTimeEpoch
        if lhs.epoch == rhs.epoch {
            epoch = 0
        } else if rhs.epoch == 0 {
            epoch = lhs.epoch
        } else if lhs.epoch == 0 {
            epoch = rhs.epoch
        } else {
            return .invalid
        }

        let leftScale = Int128(lhs.timescale)
        let rightScale = Int128(rhs.timescale)
        let leftPart = Int128(lhs.value) * rightScale
        let rightPart = Int128(rhs.value) * leftScale
        // |parts| <= 2^94 each, so the sum stays within the 2^95 bound of `fitting`.
        let numerator = subtracting ? leftPart - rightPart : leftPart + rightPart
        let divisor = leftScale * rightScale
        let gcd = Int128(ExactArithmetic.gcd(UInt64(lhs.timescale), UInt64(rhs.timescale)))
        let lcm = leftScale / gcd * rightScale
        let preferred: Int32? = lcm <= Int128(kCMTimeMaxTimescale) ? Int32(lcm) : nil
        return fitting(
            numerator, times: 1, over: divisor,
            preferredTimescale: preferred,
            fallbackTimescale: max(lhs.timescale, rhs.timescale),
            epoch: epoch,
            alreadyRounded: lhs.hasBeenRounded || rhs.hasBeenRounded
        )
    }

    /// The sum (`CMTimeAdd`).
    ///
    /// Mixed timescales are added exactly in their least common multiple. When the LCM
    /// exceeds `kCMTimeMaxTimescale` or the value overflows, the larger operand timescale
    /// is used instead (halved further while the value still overflows) with default
    /// rounding and `hasBeenRounded`; past timescale 1 the result is ±infinity.
    /// (CoreMedia documents `kCMTimeMaxTimescale` rather than the larger operand timescale
    /// as its fallback; the larger operand timescale keeps results in a familiar scale.)
    /// Non-numeric operands and epochs follow `CMTimeAdd`: invalid wins, `+inf + -inf` is
    /// invalid, an infinity absorbs finite and indefinite values, indefinite absorbs finite.
    public static func + (lhs: CMTime, rhs: CMTime) -> CMTime {
        combine(lhs, rhs, subtracting: false)
    }

    /// The difference (`CMTimeSubtract`), with the same rules as `+`.
    public static func - (lhs: CMTime, rhs: CMTime) -> CMTime {
        combine(lhs, rhs, subtracting: true)
    }

    /// The negation: infinities swap, indefinite and invalid are unchanged. Negating the
    /// most negative value halves the timescale (rounding) rather than trapping.
    public static prefix func - (time: CMTime) -> CMTime {
        switch time.kind {
        case .invalid: return .invalid
        case .indefinite: return .indefinite
        case .positiveInfinity: return .negativeInfinity
        case .negativeInfinity: return .positiveInfinity
        case .numeric:
            if time.value != .min {
                return CMTime(value: -time.value, timescale: time.timescale, flags: time.flags, epoch: time.epoch)
            }
            return time * Int32(-1)
        }
    }

    /// Adds in place (see `+`).
    public static func += (lhs: inout CMTime, rhs: CMTime) {
        lhs = lhs + rhs
    }

    /// Subtracts in place (see `-`).
    public static func -= (lhs: inout CMTime, rhs: CMTime) {
        lhs = lhs - rhs
    }

    /// The product with an integer (`CMTimeMultiply`): same timescale, halved while the
    /// value overflows, ±infinity past timescale 1. Infinities take the product's sign;
    /// an infinity times zero is invalid (the product is undefined).
    ///
    /// The `*` operators are the package's own, not public: Apple's CoreMedia overlay has
    /// no `*` for `CMTime`, so apps define their own, and a public one here would make their
    /// `time * 2` ambiguous. Apps multiply with `CMTimeMultiply` and
    /// `CMTimeMultiplyByFloat64`, as on Apple's platforms. Disfavoured, so that code in the
    /// package that declares its own, as an app would (the tests), gets its own.
    @_disfavoredOverload
    package static func * (time: CMTime, multiplier: Int32) -> CMTime {
        multiplyByRatio(time, multiplier: multiplier, divisor: 1)
    }

    /// The product with an integer, commuted.
    @_disfavoredOverload
    package static func * (multiplier: Int32, time: CMTime) -> CMTime {
        time * multiplier
    }

    /// `time * multiplier / divisor` (`CMTimeMultiplyByRatio`), exact where it can be, as
    /// CoreMedia's is.
    ///
    /// The result keeps the operand's timescale when the value is exact in it; otherwise it
    /// takes the exact value's own (reduced) timescale when that fits in 32 bits; failing
    /// both, it is rounded once in the largest timescale (`kCMTimeMaxTimescale`), which
    /// rounds least, or, when the value overflows there, in the operand's (halved while it
    /// overflows). A zero divisor gives invalid.
    public static func multiplyByRatio(_ time: CMTime, multiplier: Int32, divisor: Int32) -> CMTime {
        guard divisor != 0 else { return .invalid }
        let negativeFactor = (multiplier < 0) != (divisor < 0)
        switch time.kind {
        case .invalid: return .invalid
        case .indefinite: return .indefinite
        case .positiveInfinity, .negativeInfinity:
            guard multiplier != 0 else { return .invalid }
            return infinity(negative: (time.kind == .negativeInfinity) != negativeFactor)
        case .numeric:
            var numerator = Int128(time.value) * Int128(multiplier)
            var denominator = Int128(time.timescale) * Int128(divisor)
            if denominator < 0 {
                numerator = -numerator
                denominator = -denominator
            }
            // Exact in the operand's timescale: kept (9/600 × 2/3 stays in 600ths). Else the
            // exact value's own timescale, when it fits (1/3 × 1/2 is 1/6, not 1/3 rounded);
            // else the largest, which rounds least.
            var exactTimescale: Int32?
            if (numerator * Int128(time.timescale)) % denominator != 0 {
                // gcd(n, d) = gcd(n mod d, d); d is below 2^62 (two 31-bit factors).
                let common = Int128(ExactArithmetic.gcd(UInt64(numerator.magnitude % denominator.magnitude), UInt64(denominator)))
                exactTimescale = (common > 0 ? Int32(exactly: denominator / common) : nil) ?? kCMTimeMaxTimescale
            }
            return fitting(
                numerator, times: 1, over: denominator,
                preferredTimescale: exactTimescale, fallbackTimescale: time.timescale,
                epoch: time.epoch, alreadyRounded: time.hasBeenRounded
            )
        }
    }

    /// The product with a `Float64` (`CMTimeMultiplyByFloat64`).
    ///
    /// The multiplier is used at its exact binary value, so e.g. `* 0.5` and `* 1.5` are
    /// exact. As CoreMedia does, a timescale below 65536 is doubled until it reaches 65536
    /// so that fractional products keep precision; the timescale is then halved while the
    /// value overflows. NaN gives invalid; an infinite multiplier gives a signed infinity
    /// for non-zero times and invalid for zero; infinite times take the product's sign.
    @_disfavoredOverload
    package static func * (time: CMTime, multiplier: Float64) -> CMTime {
        switch time.kind {
        case .invalid: return .invalid
        case .indefinite: return multiplier.isNaN ? .invalid : .indefinite
        case .positiveInfinity, .negativeInfinity:
            guard !multiplier.isNaN, multiplier != 0 else { return .invalid }
            return infinity(negative: (time.kind == .negativeInfinity) != (multiplier < 0))
        case .numeric:
            break
        }
        guard !multiplier.isNaN else { return .invalid }
        if multiplier.isInfinite {
            guard time.value != 0 else { return .invalid }
            return infinity(negative: (time.value < 0) != (multiplier < 0))
        }
        var preferred = time.timescale
        while preferred < minimumFloatProductTimescale { preferred *= 2 }
        guard let (mantissa, exponent) = ExactArithmetic.decompose(multiplier) else {
            // Multiplying by zero is exact.
            return CMTime(value: 0, timescale: preferred, flags: time.flags.intersection([.valid, .hasBeenRounded]), epoch: time.epoch)
        }
        let value = Int128(time.value)
        let scale = Int128(time.timescale)
        // Exponent bounds keep `mantissa << exponent` below 2^127 and `scale << -exponent`
        // below 2^95, the operand limits of `fitting`.
        let maximumLeftShift = 74
        let maximumRightShift = 64
        if exponent >= 0 && exponent <= maximumLeftShift {
            return fitting(
                value, times: mantissa << exponent, over: scale,
                preferredTimescale: preferred, fallbackTimescale: preferred,
                epoch: time.epoch, alreadyRounded: time.hasBeenRounded
            )
        }
        if exponent < 0 && -exponent <= maximumRightShift {
            return fitting(
                value, times: mantissa, over: scale << -exponent,
                preferredTimescale: preferred, fallbackTimescale: preferred,
                epoch: time.epoch, alreadyRounded: time.hasBeenRounded
            )
        }
        if exponent < 0 {
            // |multiplier| < 2^(53 + exponent) <= 2^-11: the product is far from overflow,
            // so the preferred timescale always works. The divisor ts * 2^k no longer fits,
            // so divide in two steps: first by 2^k to quarter-tick precision, keeping any
            // remainder as a sticky half step, then by ts. Rounding boundaries (multiples of
            // half a tick) fall on the quarter grid, so the sticky step never crosses one.
            let quarterTicksPerTick: Int128 = 4
            let scaledValue = value * Int128(preferred) * quarterTicksPerTick
            let quarters = ExactArithmetic.truncatedProductShift(scaledValue, mantissa, shift: -exponent)
            let negative = (scaledValue < 0) != (mantissa < 0)
            let sticky: Int128 = quarters.isExact ? 0 : (negative ? -1 : 1)
            let eighths = quarters.value * 2 + sticky
            let finished = ExactArithmetic.multiplyDivide(
                eighths, 1, scale * quarterTicksPerTick * 2, rounding: .halfAwayFromZero)
            let result = finished.flatMap { Int64(exactly: $0.value) } ?? 0
            var flags: CMTimeFlags = .valid
            if time.hasBeenRounded || !quarters.isExact || finished?.isExact != true {
                flags.insert(.hasBeenRounded)
            }
            return CMTime(value: result, timescale: preferred, flags: flags, epoch: time.epoch)
        }
        // |multiplier| >= 2^74 with low bits that high: only tiny times survive such a
        // product, and no exact integer path exists within 256 bits; use Float64 as CoreMedia does.
        let seconds = Double(time.value) / Double(time.timescale) * multiplier
        return CMTime(seconds: seconds, preferredTimescale: preferred)
            .withFlags(adding: time.hasBeenRounded ? .hasBeenRounded : [], epoch: time.epoch)
    }

    /// The product with a `Float64`, commuted.
    @_disfavoredOverload
    package static func * (multiplier: Float64, time: CMTime) -> CMTime {
        time * multiplier
    }

    /// A copy with extra flags and the given epoch, keeping non-numeric times untouched.
    func withFlags(adding extra: CMTimeFlags, epoch: CMTimeEpoch) -> CMTime {
        guard isNumeric else { return self }
        return CMTime(value: value, timescale: timescale, flags: flags.union(extra), epoch: epoch)
    }

    /// The absolute value (`CMTimeAbsoluteValue`): -infinity becomes +infinity.
    public var absoluteValue: CMTime {
        switch kind {
        case .negativeInfinity: return .positiveInfinity
        case .numeric where value < 0: return -self
        default: return self
        }
    }
}
