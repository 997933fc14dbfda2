import Foundation
import Testing
import ChorusTestSupport
@testable import MediaClock

/// Exact rational equality of a CMTime with numerator/denominator, independent of timescale.
private func represents(_ time: CMTime, numerator: Int128, denominator: Int128) -> Bool {
    time.isNumeric && Int128(time.value) * denominator == numerator * Int128(time.timescale)
}

private let propertyIterations = 2_000

@Suite("CMTime", .ownThread)
struct CMTimeTests {
    // MARK: Construction

    @Test func constantsHaveCoreMediaFields() {
        #expect(CMTime.zero.value == 0 && CMTime.zero.timescale == 1 && CMTime.zero.flags == .valid)
        #expect(CMTime.invalid.flags.isEmpty && !CMTime.invalid.isValid)
        #expect(CMTime.indefinite.isIndefinite && CMTime.indefinite.isValid && !CMTime.indefinite.isNumeric)
        #expect(CMTime.positiveInfinity.isPositiveInfinity && !CMTime.positiveInfinity.isNumeric)
        #expect(CMTime.negativeInfinity.isNegativeInfinity && !CMTime.negativeInfinity.isNumeric)
        #expect(CMTimeFlags.impliedValueFlagsMask == [.positiveInfinity, .negativeInfinity, .indefinite])
        #expect(CMTimeFlags.indefinite.rawValue == 16)
        #expect(CMTimeRoundingMethod.default == .roundHalfAwayFromZero)
        #expect(CMTimeRoundingMethod.roundTowardNegativeInfinity.rawValue == 6)
    }

    @Test(arguments: [Int32(0), -1, Int32.min])
    func nonPositiveTimescaleIsInvalid(_ timescale: Int32) {
        #expect(!CMTime(value: 5, timescale: timescale).isValid)
        #expect(!CMTime(seconds: 1.5, preferredTimescale: timescale).isValid)
        #expect(!CMTimeMake(value: 1, timescale: timescale).isValid)
        #expect(!CMTime(.seconds(1), timescale: timescale).isValid)
        #expect(!CMTime(value: 1, timescale: 1).convertScale(timescale, method: .default).isValid)
    }

    @Test func numericLookingTimeWithZeroTimescaleIsTreatedAsInvalid() {
        let broken = CMTime(value: 1, timescale: 0, flags: .valid, epoch: 0)
        #expect(!broken.isValid)
        #expect(!(broken + CMTime(value: 1, timescale: 1)).isValid)
        #expect(broken.seconds.isNaN)
    }

    @Test func secondsInitializerHandlesSpecialValues() {
        #expect(!CMTime(seconds: .nan, preferredTimescale: 600).isValid)
        #expect(CMTime(seconds: .infinity, preferredTimescale: 600).isPositiveInfinity)
        #expect(CMTime(seconds: -.infinity, preferredTimescale: 600).isNegativeInfinity)
        #expect(CMTime(seconds: 1e300, preferredTimescale: 600).isPositiveInfinity)
        #expect(CMTime(seconds: -1e300, preferredTimescale: 600).isNegativeInfinity)
        let zero = CMTime(seconds: 0, preferredTimescale: 600)
        #expect(zero.value == 0 && zero.timescale == 600 && !zero.hasBeenRounded)
    }

    @Test func secondsInitializerIsExactForDyadicValuesAndFlagsInexactOnes() {
        let half = CMTime(seconds: 0.5, preferredTimescale: 600)
        #expect(half.value == 300 && half.timescale == 600 && !half.hasBeenRounded)
        let negative = CMTime(seconds: -2.25, preferredTimescale: 4)
        #expect(negative.value == -9 && !negative.hasBeenRounded)
        // 0.1 is not exactly representable in binary, so 60/600 is a rounding of it.
        let tenth = CMTime(seconds: 0.1, preferredTimescale: 600)
        #expect(tenth.value == 60 && tenth.hasBeenRounded)
        let third = CMTime(seconds: 1.0 / 3.0, preferredTimescale: 3)
        #expect(third.value == 1 && third.hasBeenRounded)
        let tiny = CMTime(seconds: 1e-300, preferredTimescale: 1_000_000_000)
        #expect(tiny.value == 0 && tiny.hasBeenRounded)
    }

    @Test func secondsInitializerHalvesTimescaleOnOverflow() {
        // 1e10 s at 1e9 ticks/s is 1e19 > Int64.max; at 5e8 it fits exactly.
        let big = CMTime(seconds: 1e10, preferredTimescale: 1_000_000_000)
        #expect(big.timescale == 500_000_000)
        #expect(big.value == 5_000_000_000_000_000_000)
        #expect(!big.hasBeenRounded)
    }

    @Test func secondsRoundTripsForRandomTicks() {
        var rng = SplitMix64(seed: 1)
        for _ in 0..<propertyIterations {
            let timescale = Sample.timescale(&rng)
            let value = Int64.random(in: -(1 << 50)...(1 << 50), using: &rng)
            let time = CMTime(value: value, timescale: timescale)
            let back = CMTime(seconds: time.seconds, preferredTimescale: timescale)
            #expect(back.value == value, "\(time)")
        }
    }

    @Test func secondsOfSpecialValues() {
        #expect(CMTime.invalid.seconds.isNaN)
        #expect(CMTime.indefinite.seconds.isNaN)
        #expect(CMTime.positiveInfinity.seconds == .infinity)
        #expect(CMTime.negativeInfinity.seconds == -.infinity)
        #expect(CMTime(value: 3, timescale: 4).seconds == 0.75)
        #expect(CMTimeGetSeconds(CMTimeMake(value: -1, timescale: 8)) == -0.125)
    }

    // MARK: Addition and subtraction laws

    @Test func additionIsCommutative() {
        var rng = SplitMix64(seed: 2)
        for _ in 0..<propertyIterations {
            let a = CMTime(value: Sample.value(&rng), timescale: Sample.timescale(&rng))
            let b = CMTime(value: Sample.value(&rng), timescale: Sample.timescale(&rng))
            let ab = a + b
            let ba = b + a
            #expect(ab == ba && ab.timescale == ba.timescale && ab.flags == ba.flags, "\(a) \(b)")
        }
    }

    @Test func additionIsExactInTheLeastCommonMultiple() {
        var rng = SplitMix64(seed: 3)
        var exactCount = 0
        for _ in 0..<propertyIterations {
            let a = CMTime(value: Sample.value(&rng), timescale: Sample.timescale(&rng))
            let b = CMTime(value: Sample.value(&rng), timescale: Sample.timescale(&rng))
            let sum = a + b
            let numerator = Int128(a.value) * Int128(b.timescale) + Int128(b.value) * Int128(a.timescale)
            let denominator = Int128(a.timescale) * Int128(b.timescale)
            if sum.hasBeenRounded {
                // Rounded to the nearest tick of the result's timescale.
                let error = (Int128(sum.value) * denominator - numerator * Int128(sum.timescale)).magnitude
                #expect(error * 2 <= denominator.magnitude, "\(a) + \(b) = \(sum)")
            } else {
                exactCount += 1
                #expect(represents(sum, numerator: numerator, denominator: denominator), "\(a) + \(b) = \(sum)")
            }
        }
        #expect(exactCount > propertyIterations / 10)
    }

    @Test func additionIsAssociativeOnExactValues() {
        var rng = SplitMix64(seed: 4)
        var checked = 0
        for _ in 0..<propertyIterations {
            let a = CMTime(value: Sample.value(&rng), timescale: Sample.timescale(&rng))
            let b = CMTime(value: Sample.value(&rng), timescale: Sample.timescale(&rng))
            let c = CMTime(value: Sample.value(&rng), timescale: Sample.timescale(&rng))
            let left = (a + b) + c
            let right = a + (b + c)
            guard !left.hasBeenRounded, !right.hasBeenRounded else { continue }
            checked += 1
            #expect(left == right, "\(a) \(b) \(c)")
        }
        #expect(checked > propertyIterations / 10)
    }

    @Test func addingThenSubtractingRestoresTheValue() {
        var rng = SplitMix64(seed: 5)
        var checked = 0
        for _ in 0..<propertyIterations {
            let a = CMTime(value: Sample.value(&rng), timescale: Sample.timescale(&rng))
            let b = CMTime(value: Sample.value(&rng), timescale: Sample.timescale(&rng))
            let result = a + b - b
            guard !result.hasBeenRounded else { continue }
            checked += 1
            #expect(result == a, "\(a) \(b)")
            #expect(a - a == .zero)
        }
        #expect(checked > propertyIterations / 10)
    }

    @Test func mixedAudioTimescalesAddExactlyInTheirLCM() {
        let sum = CMTime(value: 1, timescale: 44_100) + CMTime(value: 1, timescale: 48_000)
        #expect(sum.timescale == 7_056_000)
        #expect(sum.value == 160 + 147)
        #expect(!sum.hasBeenRounded)
        let difference = CMTimeSubtract(CMTime(value: 1, timescale: 44_100), CMTime(value: 1, timescale: 48_000))
        #expect(difference.value == 13 && difference.timescale == 7_056_000)
    }

    @Test func hugeLCMFallsBackToTheLargerTimescaleWithRounding() {
        let sum = CMTime(value: 1, timescale: 1_000_000_000) + CMTime(value: 1, timescale: 999_999_937)
        #expect(sum.timescale == 1_000_000_000)
        #expect(sum.value == 2)
        #expect(sum.hasBeenRounded)
    }

    @Test func valueOverflowHalvesTimescaleThenBecomesInfinity() {
        let halved = CMTime(value: .max, timescale: 1000) + CMTime(value: 2, timescale: 1000)
        #expect(halved.timescale == 500)
        #expect(halved.hasBeenRounded)
        #expect(halved.value == 4_611_686_018_427_387_905)
        #expect((CMTime(value: .max, timescale: 1) + CMTime(value: 1, timescale: 1)).isPositiveInfinity)
        #expect((CMTime(value: .min, timescale: 1) - CMTime(value: 1, timescale: 1)).isNegativeInfinity)
        #expect((CMTime(value: .max, timescale: 1) * Int32(2)).isPositiveInfinity)
        // Timescale 10 overflows, 5 overflows, 2 fits but -3 * (2^63 - 1) / 5 is inexact.
        let shrunk = CMTime(value: .max, timescale: 10) * Int32(-3)
        #expect(shrunk.timescale == 2 && shrunk.hasBeenRounded && shrunk.value < 0)
    }

    @Test func roundedOperandMarksTheResult() {
        let rounded = CMTime(seconds: 0.1, preferredTimescale: 600)
        #expect((rounded + CMTime(value: 1, timescale: 600)).hasBeenRounded)
        #expect((rounded * Int32(2)).hasBeenRounded)
    }

    @Test func additionTableForNonNumericOperands() {
        let one = CMTime(value: 1, timescale: 1)
        let plus = CMTime.positiveInfinity
        let minus = CMTime.negativeInfinity
        let indefinite = CMTime.indefinite
        let invalid = CMTime.invalid
        let cases: [(CMTime, CMTime, CMTime)] = [
            (invalid, one, invalid), (one, invalid, invalid), (invalid, plus, invalid),
            (plus, plus, plus), (minus, minus, minus), (plus, minus, invalid), (minus, plus, invalid),
            (plus, one, plus), (one, minus, minus), (plus, indefinite, plus), (indefinite, minus, minus),
            (indefinite, one, indefinite), (one, indefinite, indefinite), (indefinite, indefinite, indefinite),
        ]
        for (a, b, expected) in cases {
            let sum = a + b
            #expect(CMTime.compare(sum, expected) == 0 && sum.kind == expected.kind, "\(a) + \(b) = \(sum)")
        }
    }

    @Test func subtractionTableForNonNumericOperands() {
        let one = CMTime(value: 1, timescale: 1)
        let plus = CMTime.positiveInfinity
        let minus = CMTime.negativeInfinity
        let cases: [(CMTime, CMTime, CMTime)] = [
            (plus, plus, .invalid), (minus, minus, .invalid), (plus, minus, plus), (minus, plus, minus),
            (one, plus, minus), (one, minus, plus), (plus, one, plus), (.indefinite, one, .indefinite),
            (one, .invalid, .invalid),
        ]
        for (a, b, expected) in cases {
            let difference = a - b
            #expect(difference.kind == expected.kind, "\(a) - \(b) = \(difference)")
        }
    }

    @Test func epochRules() {
        let inEpoch = { (value: Int64, epoch: Int64) in CMTime(value: value, timescale: 10, flags: .valid, epoch: epoch) }
        #expect((inEpoch(5, 2) - inEpoch(3, 2)).epoch == 0)
        #expect((inEpoch(5, 2) + inEpoch(3, 0)).epoch == 2)
        #expect((inEpoch(5, 0) + inEpoch(3, 4)).epoch == 4)
        #expect(!(inEpoch(5, 1) + inEpoch(3, 2)).isValid)
        #expect(inEpoch(1, 1) > inEpoch(100, 0))
    }

    @Test func negationAndAbsoluteValue() {
        #expect(-CMTime(value: 3, timescale: 7) == CMTime(value: -3, timescale: 7))
        #expect((-CMTime.positiveInfinity).isNegativeInfinity)
        #expect((-CMTime.indefinite).isIndefinite)
        #expect(!(-CMTime.invalid).isValid)
        let negatedMinimum = -CMTime(value: .min, timescale: 2)
        #expect(negatedMinimum.value == Int64(1) << 62 && negatedMinimum.timescale == 1)
        #expect(CMTimeAbsoluteValue(CMTime(value: -5, timescale: 3)) == CMTime(value: 5, timescale: 3))
        #expect(CMTimeAbsoluteValue(.negativeInfinity).isPositiveInfinity)
    }

    // MARK: Multiplication

    @Test func integerMultiplication() {
        #expect(CMTimeMultiply(CMTime(value: 1, timescale: 3), multiplier: 3) == CMTime(value: 1, timescale: 1))
        #expect((CMTime.positiveInfinity * Int32(-2)).isNegativeInfinity)
        #expect(!(CMTime.positiveInfinity * Int32(0)).isValid)
        #expect((CMTime.indefinite * Int32(5)).isIndefinite)
        #expect(!(CMTime.invalid * Int32(5)).isValid)
    }

    /// CoreMedia's documentation: the exact rational value is kept unless it overflows;
    /// then a timescale is chosen and the value rounded once.
    @Test func ratioMultiplicationIsExactAndRoundsOnlyOnOverflow() {
        let third = CMTimeMultiplyByRatio(CMTime(value: 10, timescale: 1), multiplier: 1, divisor: 3)
        #expect(third == CMTime(value: 10, timescale: 3) && !third.hasBeenRounded)
        let sixth = CMTimeMultiplyByRatio(CMTime(value: 1, timescale: 3), multiplier: 1, divisor: 2)
        #expect(sixth == CMTime(value: 1, timescale: 6) && !sixth.hasBeenRounded)
        let exact = CMTimeMultiplyByRatio(CMTime(value: 9, timescale: 600), multiplier: 2, divisor: -3)
        #expect(exact.value == -6 && exact.timescale == 600 && !exact.hasBeenRounded)
        // A third of a nanosecond needs a timescale of 3 × 10^9, beyond 32 bits: rounded, in
        // a timescale finer than the operand's (which would round it to 0, a third of a
        // nanosecond off).
        let nanoseconds = CMTimeMultiplyByRatio(CMTime(value: 1, timescale: 1_000_000_000), multiplier: 1, divisor: 3)
        #expect(nanoseconds.hasBeenRounded && abs(nanoseconds.seconds - 1 / 3e9) < 0.5 / 3e9, "\(nanoseconds)")
        // Beyond any timescale's reach at the largest: the operand's, halved.
        let huge = CMTimeMultiplyByRatio(CMTime(value: Int64.max / 2, timescale: 7), multiplier: 3, divisor: 11)
        #expect(huge.isNumeric && huge.hasBeenRounded && abs(huge.seconds / (Double(Int64.max / 2) / 7 * 3 / 11) - 1) < 1e-9)
        #expect(!CMTimeMultiplyByRatio(CMTime(value: 1, timescale: 1), multiplier: 1, divisor: 0).isValid)
    }

    @Test func floatMultiplicationIsExactForDyadicMultipliers() {
        let product = CMTimeMultiplyByFloat64(CMTime(value: 3, timescale: 600), multiplier: 0.5)
        // CoreMedia raises small timescales to at least 65536 by doubling.
        #expect(product.timescale == 76_800)
        #expect(product == CMTime(value: 3, timescale: 1200))
        #expect(!product.hasBeenRounded)
        #expect((CMTime(value: 2, timescale: 1_000_000_000) * 1.5) == CMTime(value: 3, timescale: 1_000_000_000))
        let tenth = CMTime(value: 1, timescale: 1) * 0.1
        #expect(tenth.hasBeenRounded && tenth.timescale == 65_536 && tenth.value == 6554)
        #expect(!(CMTime(value: 1, timescale: 1) * Double.nan).isValid)
        #expect((CMTime(value: -1, timescale: 1) * Double.infinity).isNegativeInfinity)
        #expect((CMTime.positiveInfinity * -0.5).isNegativeInfinity)
        #expect((CMTime(value: 7, timescale: 1) * 0.0) == .zero)
    }

    @Test func floatMultiplicationMatchesExactRatio() {
        var rng = SplitMix64(seed: 6)
        for _ in 0..<propertyIterations {
            let time = CMTime(value: Sample.value(&rng), timescale: Sample.timescale(&rng))
            let numerator = Int32.random(in: -1000...1000, using: &rng)
            let shift = Int.random(in: 0...10, using: &rng)
            let multiplier = Double(numerator) / Double(1 << shift)
            let viaFloat = time * multiplier
            let expected = Int128(time.value) * Int128(numerator)
            let denominator = Int128(time.timescale) << shift
            if viaFloat.hasBeenRounded {
                let error = (Int128(viaFloat.value) * denominator - expected * Int128(viaFloat.timescale)).magnitude
                #expect(error * 2 <= denominator.magnitude, "\(time) * \(multiplier) = \(viaFloat)")
            } else {
                #expect(represents(viaFloat, numerator: expected, denominator: denominator), "\(time) * \(multiplier)")
            }
        }
    }

    @Test func floatMultiplicationWithTinyMultipliersRoundsCorrectly() throws {
        var rng = SplitMix64(seed: 7)
        for _ in 0..<propertyIterations {
            let time = CMTime(value: Int64.random(in: Int64.min / 2...Int64.max / 2, using: &rng), timescale: 65_536 * Int32.random(in: 1...1000, using: &rng))
            let mantissa = Int128(UInt64.random(in: (1 << 52)..<(1 << 53), using: &rng) | 1)
            let shift = Int.random(in: 65...90, using: &rng)
            let multiplier = Double(sign: .plus, exponent: -shift, significand: Double(UInt64(mantissa)))
            let product = time * multiplier
            let reference = try #require(ExactArithmetic.multiplyDivide(
                Int128(time.value) * Int128(product.timescale), mantissa,
                Int128(time.timescale) << shift, rounding: .halfAwayFromZero))
            #expect(product.timescale == time.timescale)
            #expect(Int128(product.value) == reference.value, "\(time) * \(multiplier)")
            #expect(product.hasBeenRounded == !reference.isExact)
        }
    }

    // MARK: Scale conversion and rounding

    @Test func convertScaleRoundTripsThroughMultiples() {
        var rng = SplitMix64(seed: 8)
        for _ in 0..<propertyIterations {
            let timescale = Int32.random(in: 1...100_000, using: &rng)
            let factor = Int32.random(in: 1...(Int32.max / timescale), using: &rng)
            // |value| <= 2^31 so that value * factor stays within Int64.
            let time = CMTime(value: Int64(Int32.random(in: .min ... .max, using: &rng)), timescale: timescale)
            let finer = time.convertScale(timescale * factor, method: .default)
            #expect(!finer.hasBeenRounded && finer == time)
            let back = finer.convertScale(timescale, method: .roundTowardZero)
            #expect(back.value == time.value && back.timescale == timescale && !back.hasBeenRounded)
        }
    }

    @Test func convertScaleBracketsTheExactValue() {
        var rng = SplitMix64(seed: 9)
        for _ in 0..<propertyIterations {
            // |value| <= 2^31 keeps every conversion to a 31-bit timescale within Int64.
            let time = CMTime(value: Int64(Int32.random(in: .min ... .max, using: &rng)), timescale: Sample.timescale(&rng))
            let target = Sample.timescale(&rng)
            let down = time.convertScale(target, method: .roundTowardNegativeInfinity)
            let up = time.convertScale(target, method: .roundTowardPositiveInfinity)
            #expect(down <= time && time <= up)
            #expect(up.value - down.value == (down.hasBeenRounded ? 1 : 0))
            #expect(down.hasBeenRounded == up.hasBeenRounded)
            let nearest = time.convertScale(target, method: .default)
            #expect(nearest.value == down.value || nearest.value == up.value)
        }
    }

    /// (value at timescale 2 or 4, target timescale, expected per method in declaration order:
    /// halfAway, towardZero, awayFromZero, quickTime, towardPositiveInfinity, towardNegativeInfinity).
    /// Typed here, where the compiler took over a second to infer the literal's type.
    static let roundingCases: [(Int64, Int32, Int32, [Int64])] = [
        (Int64(3), Int32(2), Int32(1), [Int64(2), 1, 2, 1, 2, 1]),
        (Int64(-3), Int32(2), Int32(1), [Int64(-2), -1, -2, -1, -1, -2]),
        (Int64(5), Int32(4), Int32(2), [Int64(3), 2, 3, 2, 3, 2]),
        (Int64(-5), Int32(4), Int32(2), [Int64(-3), -2, -3, -2, -2, -3]),
        (Int64(1), Int32(4), Int32(2), [Int64(1), 0, 1, 0, 1, 0]),
        (Int64(-1), Int32(4), Int32(2), [Int64(-1), 0, -1, -1, 0, -1]),
        (Int64(1), Int32(3), Int32(5), [Int64(2), 1, 2, 2, 2, 1]),
        (Int64(-1), Int32(3), Int32(5), [Int64(-2), -1, -2, -2, -1, -2]),
        (Int64(4), Int32(2), Int32(1), [Int64(2), 2, 2, 2, 2, 2]),
    ]

    @Test(arguments: CMTimeTests.roundingCases)
    func roundingMethods(value: Int64, from: Int32, to: Int32, expected: [Int64]) {
        let time = CMTime(value: value, timescale: from)
        let exact = Int128(value) * Int128(to) % Int128(from) == 0
        for (method, want) in zip(CMTimeRoundingMethod.allCases, expected) {
            let converted = CMTimeConvertScale(time, timescale: to, method: method)
            #expect(converted.value == want && converted.timescale == to, "\(method)")
            #expect(converted.hasBeenRounded == !exact, "\(method)")
        }
    }

    @Test func convertScaleLeavesNonNumericAndDetectsOverflow() {
        #expect(CMTime.indefinite.convertScale(600, method: .default).isIndefinite)
        #expect(CMTime.positiveInfinity.convertScale(600, method: .default).isPositiveInfinity)
        #expect(CMTime(value: .max, timescale: 1).convertScale(2, method: .default).isPositiveInfinity)
        #expect(CMTime(value: .min, timescale: 1).convertScale(2, method: .default).isNegativeInfinity)
    }

    // MARK: Ordering

    @Test func compareIsATotalOrderConsistentWithSeconds() {
        var rng = SplitMix64(seed: 10)
        let specials: [CMTime] = [.invalid, .indefinite, .positiveInfinity, .negativeInfinity]
        func sample() -> CMTime {
            if Int.random(in: 0..<10, using: &rng) == 0 { return specials.randomElement(using: &rng) ?? .invalid }
            return CMTime(value: Int64.random(in: -(1 << 53)...(1 << 53), using: &rng) / Int64.random(in: 1...1 << 20, using: &rng), timescale: Sample.timescale(&rng))
        }
        for _ in 0..<propertyIterations {
            let (a, b, c) = (sample(), sample(), sample())
            #expect(CMTime.compare(a, b) == -CMTime.compare(b, a))
            #expect(CMTime.compare(a, a) == 0)
            if a <= b && b <= c { #expect(a <= c) }
            if a.isNumeric && b.isNumeric && a < b { #expect(a.seconds <= b.seconds, "\(a) \(b)") }
            if a == b { #expect(a.hashValue == b.hashValue) }
        }
    }

    @Test func orderOfNonNumericTimes() {
        let ordered: [CMTime] = [.negativeInfinity, CMTime(value: -1, timescale: 1), CMTime(value: Int64.max, timescale: 1), .indefinite, .positiveInfinity, .invalid]
        for (i, lower) in ordered.enumerated() {
            for upper in ordered[(i + 1)...] {
                #expect(CMTimeCompare(lower, upper) == -1, "\(lower) < \(upper)")
            }
        }
        #expect(CMTime.invalid == CMTime(value: 4, timescale: 0, flags: [], epoch: 9))
        #expect(CMTimeMinimum(.invalid, CMTime(value: 1, timescale: 1)) == CMTime(value: 1, timescale: 1))
        #expect(CMTimeMaximum(.indefinite, .positiveInfinity).isPositiveInfinity)
    }

    @Test func equalValuesAcrossTimescalesAreEqualAndHashAlike() {
        let a = CMTime(value: 1, timescale: 2)
        let b = CMTime(value: 500_000_000, timescale: 1_000_000_000)
        #expect(a == b)
        #expect(Set([a, b]).count == 1)
        #expect(CMTime(value: Int64.max, timescale: Int32.max) > CMTime(value: Int64.max - 1, timescale: Int32.max))
        #expect(CMTime(value: Int64.max, timescale: Int32.max) < CMTime(value: Int64.max, timescale: Int32.max - 1))
    }

    // MARK: Duration, description, Codable, free functions

    @Test func durationConversionsAreExact() throws {
        let time = CMTime(.milliseconds(1500), timescale: 1000)
        #expect(time.value == 1500 && time.timescale == 1000 && !time.hasBeenRounded)
        #expect(CMTime(.seconds(-2)).value == -2_000_000_000)
        let third = try #require(CMTime(value: 1, timescale: 3).duration)
        #expect(third.components.seconds == 0 && third.components.attoseconds == 333_333_333_333_333_333)
        #expect(CMTime.indefinite.duration == nil)
        var rng = SplitMix64(seed: 11)
        for _ in 0..<propertyIterations {
            let nanoseconds = Int64.random(in: -(1 << 62)...(1 << 62), using: &rng)
            let duration = Duration.nanoseconds(nanoseconds)
            #expect(CMTime(duration).duration == duration)
            #expect(CMTime(duration).value == nanoseconds)
        }
        let rounded = CMTime(.nanoseconds(1), timescale: 1000)
        #expect(rounded.value == 0 && rounded.hasBeenRounded)
    }

    @Test func descriptionIsReadable() {
        #expect(CMTime(value: 1, timescale: 2).description == "{1/2 = 0.5}")
        #expect(CMTime.invalid.description == "{INVALID}")
        #expect(CMTime.positiveInfinity.description == "{+INFINITY}")
        #expect(CMTime(seconds: 0.1, preferredTimescale: 600).description.hasPrefix("{~60/600"))
    }

    @Test func codableRoundTripsRawFields() throws {
        let times: [CMTime] = [CMTime(seconds: 0.1, preferredTimescale: 600), .indefinite, .invalid,
                               CMTime(value: -7, timescale: 9, flags: .valid, epoch: 3)]
        for time in times {
            let decoded = try JSONDecoder().decode(CMTime.self, from: JSONEncoder().encode(time))
            #expect(decoded.value == time.value && decoded.timescale == time.timescale)
            #expect(decoded.flags == time.flags && decoded.epoch == time.epoch)
        }
        let corrupt = Data(#"{"value":1,"timescale":0,"flags":1,"epoch":0}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(CMTime.self, from: corrupt) }
    }

    @Test func freeFunctionsWrapTheSwiftAPI() {
        #expect(kCMTimeZero == .zero && !CMTIME_IS_VALID(kCMTimeInvalid))
        #expect(CMTIME_IS_INDEFINITE(kCMTimeIndefinite) && CMTIME_IS_NUMERIC(CMTimeMake(value: 1, timescale: 1)))
        #expect(kCMTimePositiveInfinity.isPositiveInfinity && kCMTimeNegativeInfinity.isNegativeInfinity)
        #expect(CMTimeAdd(CMTimeMake(value: 1, timescale: 2), CMTimeMakeWithSeconds(0.5, preferredTimescale: 2)) == CMTimeMake(value: 1, timescale: 1))
        #expect(CMTimeConvertScale(CMTimeMake(value: 1, timescale: 3), timescale: 600, method: .default).value == 200)
        #expect(CMTIME_HAS_BEEN_ROUNDED(CMTimeMakeWithSeconds(0.1, preferredTimescale: 600)))
        #expect(CMTIME_IS_INVALID(.invalid) && CMTIME_IS_POSITIVEINFINITY(.positiveInfinity) && CMTIME_IS_NEGATIVEINFINITY(.negativeInfinity))
        #expect(CMTimeMakeWithEpoch(value: 1, timescale: 1, epoch: 5).epoch == 5)
    }
}
