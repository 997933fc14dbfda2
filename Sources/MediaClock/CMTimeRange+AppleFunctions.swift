// CoreMedia's C-style range functions and constants, as thin wrappers.

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
