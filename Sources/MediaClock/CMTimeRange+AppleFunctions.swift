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
