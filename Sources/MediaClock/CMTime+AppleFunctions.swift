// CoreMedia's C-style free functions and constants, as thin wrappers over `CMTime`'s
// Swift API so that code ported from Apple platforms compiles unchanged.

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

/// See `CMTime.*(CMTime, Int32)`.
public func CMTimeMultiply(_ time: CMTime, multiplier: Int32) -> CMTime {
    time * multiplier
}

/// See `CMTime.*(CMTime, Float64)`.
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
public func CMTIME_IS_POSITIVE_INFINITY(_ time: CMTime) -> Bool {
    time.isPositiveInfinity
}

/// Whether `time` is -infinity.
public func CMTIME_IS_NEGATIVE_INFINITY(_ time: CMTime) -> Bool {
    time.isNegativeInfinity
}

/// Whether `time` carries the `hasBeenRounded` flag.
public func CMTIME_HAS_BEEN_ROUNDED(_ time: CMTime) -> Bool {
    time.hasBeenRounded
}

/// The time's description (`CMTime.description`), as CoreMedia's function returns it. The
/// allocator is accepted for source compatibility and unused.
public func CMTimeCopyDescription(allocator: Any?, time: CMTime) -> String? {
    time.description
}
