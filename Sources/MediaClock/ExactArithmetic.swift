/// Integer helpers shared by the time types so that every conversion that can be
/// done exactly is done exactly (no detour through `Double`).
///
/// All functions are pure and therefore trivially thread-safe.
package enum ExactArithmetic {
    /// How an inexact quotient is turned into an integer.
    package enum Rounding: Sendable {
        case halfAwayFromZero
        case towardZero
        case awayFromZero
        case towardPositiveInfinity
        case towardNegativeInfinity
    }

    /// Computes `a * b / c` rounded as requested, with a 256-bit intermediate product
    /// so that no input combination can overflow before the division.
    ///
    /// - Parameter c: must be positive; a non-positive divisor yields `nil` rather than a trap.
    /// - Returns: the rounded quotient and whether it was exact, or `nil` if the
    ///   quotient does not fit in `Int128`.
    package static func multiplyDivide(
        _ a: Int128, _ b: Int128, _ c: Int128, rounding: Rounding
    ) -> (value: Int128, isExact: Bool)? {
        guard c > 0 else { return nil }
        let negative = (a < 0) != (b < 0)
        let divisor = c.magnitude
        let product = a.magnitude.multipliedFullWidth(by: b.magnitude)
        // The quotient only fits in 128 bits when the high half is below the divisor.
        guard product.high < divisor else { return nil }
        let (quotient, remainder) = divisor.dividingFullWidth(product)
        var magnitude = quotient
        let isExact = remainder == 0
        if !isExact {
            let roundUp: Bool
            switch rounding {
            case .towardZero: roundUp = false
            case .awayFromZero: roundUp = true
            case .halfAwayFromZero: roundUp = remainder >= divisor - remainder
            case .towardPositiveInfinity: roundUp = !negative
            case .towardNegativeInfinity: roundUp = negative
            }
            if roundUp {
                let (sum, overflow) = magnitude.addingReportingOverflow(1)
                guard !overflow else { return nil }
                magnitude = sum
            }
        }
        return signed(magnitude, negative: negative).map { ($0, isExact) }
    }

    /// Applies a sign to a magnitude, or `nil` if the result does not fit in `Int128`.
    static func signed(_ magnitude: UInt128, negative: Bool) -> Int128? {
        if negative {
            // Int128.min has a magnitude one larger than Int128.max.
            guard magnitude <= Int128.max.magnitude + 1 else { return nil }
            return Int128(truncatingIfNeeded: 0 &- magnitude)
        }
        return Int128(exactly: magnitude)
    }

    /// Greatest common divisor of two magnitudes (gcd(0, x) == x).
    static func gcd(_ a: UInt64, _ b: UInt64) -> UInt64 {
        var (x, y) = (a, b)
        while y != 0 { (x, y) = (y, x % y) }
        return x
    }

    /// Splits a finite, non-zero `Double` into `mantissa * 2^exponent` with an odd
    /// mantissa, which is the exact rational value of the double.
    ///
    /// - Returns: `nil` for zero, NaN and infinities.
    static func decompose(_ x: Double) -> (mantissa: Int128, exponent: Int)? {
        guard x.isFinite, x != 0 else { return nil }
        // `significand` is in [1, 2) with at most 53 significant bits, so scaling by
        // 2^52 yields an exact integer (subnormals are normalized by Swift).
        let significandBits = 52
        var mantissa = UInt64(x.significand * Double(sign: .plus, exponent: significandBits, significand: 1))
        var exponent = Int(x.exponent) - significandBits
        let trailing = mantissa.trailingZeroBitCount
        mantissa >>= UInt64(trailing)
        exponent += trailing
        let signedMantissa = x < 0 ? -Int128(mantissa) : Int128(mantissa)
        return (signedMantissa, exponent)
    }

    /// Number of significant bits in the magnitude of `x` (0 for 0).
    static func bitLength(_ x: Int128) -> Int {
        UInt128.bitWidth - x.magnitude.leadingZeroBitCount
    }

    /// Clamps a 128-bit integer into `Int64`, for callers whose contract is saturation.
    package static func clampToInt64(_ x: Int128) -> Int64 {
        if x > Int128(Int64.max) { return .max }
        if x < Int128(Int64.min) { return .min }
        return Int64(x)
    }

    /// Computes `a * b / 2^shift` truncated toward zero, for shifts too large for the
    /// divisor to fit in `Int128`. Requires `|a * b| < 2^(126 + 127)`, which every caller
    /// satisfies by a wide margin.
    static func truncatedProductShift(_ a: Int128, _ b: Int128, shift: Int) -> (value: Int128, isExact: Bool) {
        // 2^126 is the largest power of two that is a valid positive Int128 divisor.
        let largestDivisorShift = 126
        let firstShift = min(max(shift, 0), largestDivisorShift)
        guard let first = multiplyDivide(a, b, Int128(1) << firstShift, rounding: .towardZero) else {
            return (0, false)
        }
        let rest = shift - firstShift
        if rest == 0 { return first }
        if rest >= UInt128.bitWidth { return (0, first.value == 0 && first.isExact) }
        let magnitude = first.value.magnitude
        let lostBits = magnitude & ((UInt128(1) << rest) - 1)
        let shifted = signed(magnitude >> rest, negative: first.value < 0) ?? 0
        return (shifted, first.isExact && lostBits == 0)
    }
}

extension ExactArithmetic {
    /// `numerator / divisor` rounded half away from zero, using the divisor's exact binary
    /// value so that inverting a dyadic rate (0.5, 2, 1.25...) is exact.
    ///
    /// - Returns: `nil` for a zero or non-finite divisor, or when the quotient does not
    ///   fit in `Int128`. Divisors whose binary exponent lies outside ±64 (far from any
    ///   playback rate) fall back to `Double` division.
    static func divide(_ numerator: Int128, by divisor: Double) -> Int128? {
        guard let (mantissa, exponent) = decompose(divisor) else { return nil }
        // Shift limits keep `mantissa << exponent` (53 + 64 bits) and `1 << -exponent`
        // inside Int128.
        let shiftLimit = 64
        let denominatorIsNegative = mantissa < 0
        let signedNumerator = denominatorIsNegative ? -numerator : numerator
        let magnitude = Int128(mantissa.magnitude)
        if exponent >= 0 && exponent <= shiftLimit {
            return multiplyDivide(signedNumerator, 1, magnitude << exponent, rounding: .halfAwayFromZero)?.value
        }
        if exponent < 0 && -exponent <= shiftLimit {
            return multiplyDivide(signedNumerator, Int128(1) << -exponent, magnitude, rounding: .halfAwayFromZero)?.value
        }
        let quotient = (Double(numerator) / divisor).rounded(.toNearestOrAwayFromZero)
        // Doubles at or beyond ±2^127 do not convert; treat them as out of range.
        let int128Limit = 0x1p127
        guard quotient.isFinite, abs(quotient) < int128Limit else { return nil }
        return Int128(quotient)
    }
}
