// CoreMedia's C-style timebase functions, returning `OSStatus` instead of throwing.

/// Creates a timebase driven by `sourceClock` into `timebaseOut`
/// (`CMTimebaseCreateWithSourceClock`); the allocator is ignored. Returns `noErr`.
public func CMTimebaseCreateWithSourceClock(
    allocator: Any?, sourceClock: CMClock, timebaseOut: inout CMTimebase?
) -> OSStatus {
    timebaseOut = CMTimebase(sourceClock: sourceClock)
    return noErr
}

/// Creates a timebase driven by `sourceTimebase` into `timebaseOut`
/// (`CMTimebaseCreateWithSourceTimebase`); the allocator is ignored. Returns `noErr`.
public func CMTimebaseCreateWithSourceTimebase(
    allocator: Any?, sourceTimebase: CMTimebase, timebaseOut: inout CMTimebase?
) -> OSStatus {
    timebaseOut = CMTimebase(sourceTimebase: sourceTimebase)
    return noErr
}

/// `CMTimebaseCreateWithSourceClock` under its older name (`CMTimebaseCreateWithMasterClock`),
/// which code written before the rename still calls.
public func CMTimebaseCreateWithMasterClock(
    allocator: Any?, masterClock: CMClock, timebaseOut: inout CMTimebase?
) -> OSStatus {
    CMTimebaseCreateWithSourceClock(allocator: allocator, sourceClock: masterClock, timebaseOut: &timebaseOut)
}

/// `CMTimebaseCreateWithSourceTimebase` under its older name
/// (`CMTimebaseCreateWithMasterTimebase`).
public func CMTimebaseCreateWithMasterTimebase(
    allocator: Any?, masterTimebase: CMTimebase, timebaseOut: inout CMTimebase?
) -> OSStatus {
    CMTimebaseCreateWithSourceTimebase(allocator: allocator, sourceTimebase: masterTimebase, timebaseOut: &timebaseOut)
}

/// The clock driving `timebase` directly; nil when a timebase drives it
/// (`CMTimebaseCopySourceClock`).
public func CMTimebaseCopySourceClock(_ timebase: CMTimebase) -> CMClock? {
    timebase.sourceClock
}

/// The timebase driving `timebase`; nil when a clock drives it (`CMTimebaseCopySourceTimebase`).
public func CMTimebaseCopySourceTimebase(_ timebase: CMTimebase) -> CMTimebase? {
    timebase.sourceTimebase
}

/// The clock at the end of `timebase`'s chain of sources (`CMTimebaseCopyUltimateSourceClock`).
public func CMTimebaseCopyUltimateSourceClock(_ timebase: CMTimebase) -> CMClock {
    timebase.ultimateSourceClock
}

/// `CMTimebaseCopySourceClock` under its older name (`CMTimebaseGetMasterClock`).
public func CMTimebaseGetMasterClock(_ timebase: CMTimebase) -> CMClock? { CMTimebaseCopySourceClock(timebase) }

/// `CMTimebaseCopySourceTimebase` under its older name (`CMTimebaseGetMasterTimebase`).
public func CMTimebaseGetMasterTimebase(_ timebase: CMTimebase) -> CMTimebase? { CMTimebaseCopySourceTimebase(timebase) }

/// `CMTimebaseCopyUltimateSourceClock` under its older name (`CMTimebaseGetUltimateMasterClock`).
public func CMTimebaseGetUltimateMasterClock(_ timebase: CMTimebase) -> CMClock { CMTimebaseCopyUltimateSourceClock(timebase) }

/// See `CMTimebase.time`.
public func CMTimebaseGetTime(_ timebase: CMTimebase) -> CMTime {
    timebase.time
}

/// The current time converted to `timescale` with `method` (`CMTimebaseGetTimeWithTimeScale`).
public func CMTimebaseGetTimeWithTimeScale(
    _ timebase: CMTimebase, timescale: CMTimeScale, method: CMTimeRoundingMethod
) -> CMTime {
    timebase.time.convertScale(timescale, method: method)
}

/// See `CMTimebase.setTime(_:)`; returns the error's status instead of throwing.
public func CMTimebaseSetTime(_ timebase: CMTimebase, time: CMTime) -> OSStatus {
    status { try timebase.setTime(time) }
}

/// See `CMTimebase.setRate(_:)`; returns the error's status instead of throwing.
public func CMTimebaseSetRate(_ timebase: CMTimebase, rate: Float64) -> OSStatus {
    status { try timebase.setRate(rate) }
}

/// See `CMTimebase.rate`.
public func CMTimebaseGetRate(_ timebase: CMTimebase) -> Float64 {
    timebase.rate
}

/// See `CMTimebase.effectiveRate`.
public func CMTimebaseGetEffectiveRate(_ timebase: CMTimebase) -> Float64 {
    timebase.effectiveRate
}

/// See `CMTimebase.setRateAndAnchorTime(rate:anchorTime:referenceTime:)`; the
/// immediate source time is the reference time in the source's time line.
public func CMTimebaseSetRateAndAnchorTime(
    _ timebase: CMTimebase, rate: Float64, anchorTime: CMTime, immediateSourceTime: CMTime
) -> OSStatus {
    status { try timebase.setRateAndAnchorTime(rate: rate, anchorTime: anchorTime, referenceTime: immediateSourceTime) }
}

/// See `CMTimebase.setAnchorTime(_:referenceTime:)`.
public func CMTimebaseSetAnchorTime(
    _ timebase: CMTimebase, timebaseTime: CMTime, immediateSourceTime: CMTime
) -> OSStatus {
    status { try timebase.setAnchorTime(timebaseTime, referenceTime: immediateSourceTime) }
}

/// Runs a throwing timebase call and reports its outcome as an `OSStatus`.
private func status(_ body: () throws -> Void) -> OSStatus {
    do {
        try body()
        return noErr
    } catch let error as CMTimebaseError {
        return error.status
    } catch {
        // Timebase calls only throw CMTimebaseError; anything else is a bad argument.
        return kCMTimebaseError_InvalidParameter
    }
}

/// The timebase's time and rate read together, as at one instant
/// (`CMTimebaseGetTimeAndRate`). Either output may be nil.
@discardableResult
public func CMTimebaseGetTimeAndRate(_ timebase: CMTimebase, time timeOut: UnsafeMutablePointer<CMTime>?,
                                     rate rateOut: UnsafeMutablePointer<Float64>?) -> OSStatus {
    let (time, rate) = timebase.timeAndRate
    timeOut?.pointee = time
    rateOut?.pointee = rate
    return noErr
}
