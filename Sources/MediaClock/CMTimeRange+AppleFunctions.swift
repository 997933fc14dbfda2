// CoreMedia's C-style range functions and constants, as thin wrappers.

import Foundation

/// The empty range at zero (`CMTimeRange.zero`).
public let kCMTimeRangeZero = CMTimeRange.zero
/// The invalid range (`CMTimeRange.invalid`).
public let kCMTimeRangeInvalid = CMTimeRange.invalid

/// See `CMTimeRange.init(start:duration:)`.
public func CMTimeRangeMake(start: CMTime, duration: CMTime) -> CMTimeRange {
    CMTimeRange(start: start, duration: duration)
}

/// See `CMTimeRange.init(start:end:)`.
public func CMTimeRangeFromTimeToTime(start: CMTime, end: CMTime) -> CMTimeRange {
    CMTimeRange(start: start, end: end)
}

/// See `CMTimeRange.end`.
public func CMTimeRangeGetEnd(_ range: CMTimeRange) -> CMTime {
    range.end
}

/// See `CMTimeRange.containsTime(_:)`.
public func CMTimeRangeContainsTime(_ range: CMTimeRange, time: CMTime) -> Bool {
    range.containsTime(time)
}

/// See `CMTimeRange.containsTimeRange(_:)`.
public func CMTimeRangeContainsTimeRange(_ range: CMTimeRange, otherRange: CMTimeRange) -> Bool {
    range.containsTimeRange(otherRange)
}

/// See `CMTimeRange.intersection(_:)`.
public func CMTimeRangeGetIntersection(_ range: CMTimeRange, otherRange: CMTimeRange) -> CMTimeRange {
    range.intersection(otherRange)
}

/// See `CMTimeRange.union(_:)`.
public func CMTimeRangeGetUnion(_ range: CMTimeRange, otherRange: CMTimeRange) -> CMTimeRange {
    range.union(otherRange)
}

/// Whether both ranges have equal starts and durations per `CMTimeCompare`.
public func CMTimeRangeEqual(_ range1: CMTimeRange, _ range2: CMTimeRange) -> Bool {
    range1 == range2
}

/// See `CMTimeRange.isValid`.
public func CMTIMERANGE_IS_VALID(_ range: CMTimeRange) -> Bool {
    range.isValid
}

/// See `CMTimeRange.isEmpty`.
public func CMTIMERANGE_IS_EMPTY(_ range: CMTimeRange) -> Bool {
    range.isEmpty
}

/// Whether `range` is not valid (`!CMTimeRange.isValid`).
public func CMTIMERANGE_IS_INVALID(_ range: CMTimeRange) -> Bool {
    !range.isValid
}

/// See `CMTimeRange.isIndefinite`.
public func CMTIMERANGE_IS_INDEFINITE(_ range: CMTimeRange) -> Bool {
    range.isIndefinite
}

/// The range as CoreMedia's function describes it, the text `CMTimeRangeShow` prints:
/// `{{0/1 = 0.000}, {3/2 = 1.500}}`. The allocator is accepted for source compatibility
/// and unused.
public func CMTimeRangeCopyDescription(allocator: Any?, range: CMTimeRange) -> String? {
    showText(range)
}

/// Whether `range` can carry a time onto another: valid, numeric, and lasting some time
/// forward.
private func isMappable(_ range: CMTimeRange) -> Bool {
    range.isValid && range.start.isNumeric && range.duration.isNumeric && range.duration > .zero
}

/// The time in `toRange` that stands where `time` stands in `fromRange`
/// (`CMTimeMapTimeFromRangeToRange`): `toRange.start` plus the time since
/// `fromRange.start` scaled by the ratio of their durations, exactly where the result can
/// hold it. Invalid, as CoreMedia's, when the time is not numeric or either range is invalid
/// or lasts no time.
public func CMTimeMapTimeFromRangeToRange(_ time: CMTime, fromRange: CMTimeRange, toRange: CMTimeRange) -> CMTime {
    guard time.isNumeric, isMappable(fromRange), isMappable(toRange) else { return .invalid }
    let mapped = CMTimeMapDurationFromRangeToRange(time - fromRange.start, fromRange: fromRange, toRange: toRange)
    return mapped.isNumeric ? toRange.start + mapped : .invalid
}

/// `duration` scaled by the ratio of `toRange`'s duration to `fromRange`'s
/// (`CMTimeMapDurationFromRangeToRange`), exactly where the result can hold it. Invalid, as
/// CoreMedia's, when the duration is not numeric or has an epoch, or either range is invalid
/// or lasts no time.
public func CMTimeMapDurationFromRangeToRange(_ duration: CMTime, fromRange: CMTimeRange, toRange: CMTimeRange) -> CMTime {
    guard duration.isNumeric, duration.epoch == 0, isMappable(fromRange), isMappable(toRange) else { return .invalid }
    let from = fromRange.duration, to = toRange.duration
    // duration × to ÷ from, each a value over its timescale:
    //   (d / ds) × (t / ts) ÷ (f / fs) = (d × fs) × t ÷ (ds × ts × f),
    // which `fitting` computes in 128-bit integers for the result's timescale (the divisor
    // is positive: both ranges last some time forward).
    let numerator = Int128(duration.value) * Int128(from.timescale)
    let denominator = Int128(duration.timescale) * Int128(to.timescale) * Int128(from.value)
    let timescale = max(duration.timescale, to.timescale, toRange.start.timescale)
    return CMTime.fitting(numerator, times: Int128(to.value), over: denominator,
                          preferredTimescale: timescale, fallbackTimescale: timescale, epoch: 0,
                          alreadyRounded: duration.hasBeenRounded || from.hasBeenRounded || to.hasBeenRounded)
}

/// The most durations of its range a time is folded across (`CMTimeFoldIntoRange`): 10^15,
/// where a `Double`'s count of them still holds whole numbers exactly. A time further out
/// is a fault in its maker, and gives an invalid time.
private let largestFold: Double = 1e15

/// `time` folded into `foldRange` (`CMTimeFoldIntoRange`), as a loop over the range plays
/// it: `time` itself inside the range, otherwise the time as far into the range as `time`
/// is past (or before) a whole number of the range's durations from its start. Invalid when
/// the time is not numeric, the range lasts no time, or the time lies more than
/// `largestFold` durations away.
public func CMTimeFoldIntoRange(_ time: CMTime, foldRange range: CMTimeRange) -> CMTime {
    guard time.isNumeric, isMappable(range) else { return .invalid }
    if range.containsTime(time) { return time }
    let offset = time - range.start
    // Whole durations to step back by, from the seconds; the exact steps below correct a
    // quotient the division rounded one off.
    let loops = (offset.seconds / range.duration.seconds).rounded(.down)
    guard loops.isFinite, abs(loops) < largestFold else { return .invalid }
    var folded = time - range.duration * loops
    while folded < range.start { folded = folded + range.duration }
    while folded >= range.end { folded = folded - range.duration }
    return folded
}

/// Prints `range` to standard output, as CoreMedia's does: its start and duration as
/// `CMTimeShow` prints them, `{{0/1 = 0.000}, {3/2 = 1.500}}`.
public func CMTimeRangeShow(_ range: CMTimeRange) {
    print(showText(range))
}

/// What `CMTimeRangeShow` prints for `range`.
func showText(_ range: CMTimeRange) -> String {
    "{\(showText(range.start)), \(showText(range.duration))}"
}

/// The key of a range dictionary's start, itself a time dictionary (`kCMTimeRangeStartKey`).
public let kCMTimeRangeStartKey = "start"
/// The key of a range dictionary's duration, itself a time dictionary
/// (`kCMTimeRangeDurationKey`).
public let kCMTimeRangeDurationKey = "duration"

/// `range` as a dictionary: its start and duration, each as `CMTimeCopyAsDictionary` makes
/// it (`CMTimeRangeCopyAsDictionary`). An `NSDictionary` for Apple's `CFDictionary`, as there;
/// the allocator is unused. Never nil here.
public func CMTimeRangeCopyAsDictionary(_ range: CMTimeRange, allocator: Any?) -> NSDictionary? {
    var entries: [String: Any] = [:]
    entries[kCMTimeRangeStartKey] = CMTimeCopyAsDictionary(range.start, allocator: allocator)
    entries[kCMTimeRangeDurationKey] = CMTimeCopyAsDictionary(range.duration, allocator: allocator)
    return NSDictionary(dictionary: entries)
}

/// The range a dictionary from `CMTimeRangeCopyAsDictionary` stands for
/// (`CMTimeRangeMakeFromDictionary`); `.invalid` when either time is missing or invalid as a
/// dictionary.
public func CMTimeRangeMakeFromDictionary(_ dictionaryRepresentation: NSDictionary?) -> CMTimeRange {
    guard let dictionary = dictionaryRepresentation else { return .invalid }
    let start = timeDictionary(dictionary[kCMTimeRangeStartKey]).map { CMTimeMakeFromDictionary($0) } ?? .invalid
    let duration = timeDictionary(dictionary[kCMTimeRangeDurationKey]).map { CMTimeMakeFromDictionary($0) } ?? .invalid
    guard start.isValid, duration.isValid else { return .invalid }
    return CMTimeRange(start: start, duration: duration)
}

/// The range a `[String: Any]` under CoreMedia's keys stands for: as the `NSDictionary` form.
public func CMTimeRangeMakeFromDictionary(_ dictionaryRepresentation: [String: Any]) -> CMTimeRange {
    CMTimeRangeMakeFromDictionary(NSDictionary(dictionary: dictionaryRepresentation))
}

/// A range dictionary's entry as a time dictionary, whichever dictionary type holds it.
private func timeDictionary(_ entry: Any?) -> NSDictionary? {
    switch entry {
    case let dictionary as NSDictionary: return dictionary
    case let dictionary as [String: Any]: return NSDictionary(dictionary: dictionary)
    default: return nil
    }
}
