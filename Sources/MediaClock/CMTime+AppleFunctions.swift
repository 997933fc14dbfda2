// CoreMedia's C-style free functions and constants, as thin wrappers over `CMTime`'s
// Swift API so that code ported from Apple platforms compiles unchanged.

import Foundation

/// Zero seconds (`CMTime.zero`).
public let kCMTimeZero = CMTime.zero
/// The invalid time (`CMTime.invalid`).
public let kCMTimeInvalid = CMTime.invalid
/// The indefinite time (`CMTime.indefinite`).
public let kCMTimeIndefinite = CMTime.indefinite
/// +infinity (`CMTime.positiveInfinity`).
public let kCMTimePositiveInfinity = CMTime.positiveInfinity
/// -infinity (`CMTime.negativeInfinity`).
public let kCMTimeNegativeInfinity = CMTime.negativeInfinity

/// `value / timescale` seconds; a non-positive timescale gives invalid.
public func CMTimeMake(value: Int64, timescale: Int32) -> CMTime {
    CMTime(value: value, timescale: timescale)
}

/// `value / timescale` seconds in the given epoch; a non-positive timescale gives invalid.
public func CMTimeMakeWithEpoch(value: Int64, timescale: Int32, epoch: Int64) -> CMTime {
    guard timescale > 0 else { return .invalid }
    return CMTime(value: value, timescale: timescale, flags: .valid, epoch: epoch)
}

/// See `CMTime.init(seconds:preferredTimescale:)`.
public func CMTimeMakeWithSeconds(_ seconds: Float64, preferredTimescale: Int32) -> CMTime {
    CMTime(seconds: seconds, preferredTimescale: preferredTimescale)
}

/// See `CMTime.seconds`.
public func CMTimeGetSeconds(_ time: CMTime) -> Float64 {
    time.seconds
}

/// See `CMTime.+`.
public func CMTimeAdd(_ lhs: CMTime, _ rhs: CMTime) -> CMTime {
    lhs + rhs
}

/// See `CMTime.-`.
public func CMTimeSubtract(_ lhs: CMTime, _ rhs: CMTime) -> CMTime {
    lhs - rhs
}

/// The product with an integer: same timescale, halved while the value overflows,
/// ±infinity past timescale 1. Infinities take the product's sign; an infinity times zero is
/// invalid.
public func CMTimeMultiply(_ time: CMTime, multiplier: Int32) -> CMTime {
    time * multiplier
}

/// The product with a `Float64`, exact for the multiplier's binary value: a timescale below
/// 65536 is doubled until it reaches 65536, then halved while the value overflows. NaN gives
/// invalid; infinities take the product's sign.
public func CMTimeMultiplyByFloat64(_ time: CMTime, multiplier: Float64) -> CMTime {
    time * multiplier
}

/// See `CMTime.multiplyByRatio(_:multiplier:divisor:)`.
public func CMTimeMultiplyByRatio(_ time: CMTime, multiplier: Int32, divisor: Int32) -> CMTime {
    CMTime.multiplyByRatio(time, multiplier: multiplier, divisor: divisor)
}

/// See `CMTime.convertScale(_:method:)`.
public func CMTimeConvertScale(_ time: CMTime, timescale: Int32, method: CMTimeRoundingMethod) -> CMTime {
    time.convertScale(timescale, method: method)
}

/// See `CMTime.compare(_:_:)`: -1, 0 or 1.
public func CMTimeCompare(_ time1: CMTime, _ time2: CMTime) -> Int32 {
    CMTime.compare(time1, time2)
}

/// The lesser time per `CMTimeCompare` (the first one when equal).
public func CMTimeMinimum(_ time1: CMTime, _ time2: CMTime) -> CMTime {
    CMTime.compare(time2, time1) < 0 ? time2 : time1
}

/// The greater time per `CMTimeCompare` (the first one when equal).
public func CMTimeMaximum(_ time1: CMTime, _ time2: CMTime) -> CMTime {
    CMTime.compare(time2, time1) > 0 ? time2 : time1
}

/// See `CMTime.absoluteValue`.
public func CMTimeAbsoluteValue(_ time: CMTime) -> CMTime {
    time.absoluteValue
}

/// Whether `time` is valid (numeric, infinite or indefinite).
public func CMTIME_IS_VALID(_ time: CMTime) -> Bool {
    time.isValid
}

/// Whether `time` is invalid.
public func CMTIME_IS_INVALID(_ time: CMTime) -> Bool {
    !time.isValid
}

/// Whether `time` is a finite number of seconds.
public func CMTIME_IS_NUMERIC(_ time: CMTime) -> Bool {
    time.isNumeric
}

/// Whether `time` is indefinite.
public func CMTIME_IS_INDEFINITE(_ time: CMTime) -> Bool {
    time.isIndefinite
}

/// Whether `time` is +infinity.
public func CMTIME_IS_POSITIVEINFINITY(_ time: CMTime) -> Bool {
    time.isPositiveInfinity
}

/// Whether `time` is -infinity.
public func CMTIME_IS_NEGATIVEINFINITY(_ time: CMTime) -> Bool {
    time.isNegativeInfinity
}

/// Whether `time` carries the `hasBeenRounded` flag.
public func CMTIME_HAS_BEEN_ROUNDED(_ time: CMTime) -> Bool {
    time.hasBeenRounded
}

/// The time as CoreMedia's function describes it, the text `CMTimeShow` prints:
/// `{1/2 = 0.500}`, or `{INVALID}`, `{INDEFINITE}`, `{+INFINITY}`, `{-INFINITY}`. The
/// allocator is accepted for source compatibility and unused.
public func CMTimeCopyDescription(allocator: Any?, time: CMTime) -> String? {
    showText(time)
}

/// Prints `time` to standard output, as CoreMedia's does: `{1/2 = 0.500}` (seconds to three
/// places, `~` before a rounded value, the epoch after a non-zero one), or `{INVALID}`,
/// `{INDEFINITE}`, `{+INFINITY}`, `{-INFINITY}`.
public func CMTimeShow(_ time: CMTime) {
    print(showText(time))
}

/// What `CMTimeShow` prints for `time`. Three places, where `CMTime.description` gives every
/// digit of the `Double`, because that is what code ported from Apple's platforms, and
/// logs compared with theirs, expect to see.
func showText(_ time: CMTime) -> String {
    guard time.isNumeric else { return time.description }
    let rounded = time.hasBeenRounded ? "~" : ""
    let epochPart = time.epoch == 0 ? "" : ", epoch \(time.epoch)"
    return "{\(rounded)\(time.value)/\(time.timescale) = \(String(format: "%.3f", time.seconds))\(epochPart)}"
}

/// The time in `range` nearest to `time` (`CMTimeClampToRange`): `time` itself inside the
/// range, the range's start before it and its end after it (the end, though the half-open
/// range does not contain it, as CoreMedia's does). Invalid when `time` is invalid or the
/// range is invalid or empty.
public func CMTimeClampToRange(_ time: CMTime, range: CMTimeRange) -> CMTime {
    guard time.isValid, range.isValid, !range.isEmpty else { return .invalid }
    if time < range.start { return range.start }
    if time > range.end { return range.end }
    return time
}

/// The key of a time dictionary's value (`kCMTimeValueKey`).
public let kCMTimeValueKey = "value"
/// The key of a time dictionary's timescale (`kCMTimeScaleKey`).
public let kCMTimeScaleKey = "timescale"
/// The key of a time dictionary's flags (`kCMTimeFlagsKey`).
public let kCMTimeFlagsKey = "flags"
/// The key of a time dictionary's epoch (`kCMTimeEpochKey`).
public let kCMTimeEpochKey = "epoch"

/// `time` as a dictionary under CoreMedia's keys (`value`, `timescale`, `flags`, `epoch`),
/// each an `NSNumber` (`CMTimeCopyAsDictionary`), for property lists and user defaults.
///
/// An `NSDictionary` where Apple's returns a `CFDictionary`, which Linux's Foundation does not
/// export; it reads as a `[String: Any]` with `as?`. The allocator is accepted for source
/// compatibility and unused. Never nil here; optional as Apple's is.
public func CMTimeCopyAsDictionary(_ time: CMTime, allocator: Any?) -> NSDictionary? {
    NSDictionary(dictionary: [
        kCMTimeValueKey: NSNumber(value: time.value),
        kCMTimeScaleKey: NSNumber(value: time.timescale),
        kCMTimeFlagsKey: NSNumber(value: time.flags.rawValue),
        kCMTimeEpochKey: NSNumber(value: time.epoch),
    ])
}

/// The time a dictionary from `CMTimeCopyAsDictionary` stands for
/// (`CMTimeMakeFromDictionary`); `.invalid` for nil, or when the value, timescale or flags
/// are missing or not integers in range. A missing epoch is taken as 0.
public func CMTimeMakeFromDictionary(_ dictionaryRepresentation: NSDictionary?) -> CMTime {
    guard let dictionary = dictionaryRepresentation,
          let value = integer(dictionary[kCMTimeValueKey]),
          let scale = integer(dictionary[kCMTimeScaleKey]).flatMap({ Int32(exactly: $0) }),
          let flags = integer(dictionary[kCMTimeFlagsKey]).flatMap({ UInt32(exactly: $0) }) else { return .invalid }
    let epoch: Int64
    if let stored = dictionary[kCMTimeEpochKey] {
        guard let number = integer(stored) else { return .invalid }
        epoch = number
    } else {
        epoch = 0
    }
    return CMTime(value: value, timescale: scale, flags: CMTimeFlags(rawValue: flags), epoch: epoch)
}

/// The time a `[String: Any]` under CoreMedia's keys stands for: as the `NSDictionary` form,
/// for a dictionary read back from a property list or user defaults in Swift's own type.
public func CMTimeMakeFromDictionary(_ dictionaryRepresentation: [String: Any]) -> CMTime {
    CMTimeMakeFromDictionary(NSDictionary(dictionary: dictionaryRepresentation))
}

/// A dictionary entry as an integer: an `NSNumber` holding a whole number, or a Swift integer.
/// A fractional or out-of-range number is not one.
private func integer(_ entry: Any?) -> Int64? {
    switch entry {
    case let number as NSNumber:
        let whole = number.int64Value
        return NSNumber(value: whole) == number ? whole : nil
    case let value as any BinaryInteger:
        return Int64(exactly: value)
    default:
        return nil
    }
}
