// CoreMedia's C-style clock functions.

/// The host time clock of this machine (`CMClock.hostTimeClock`).
public func CMClockGetHostTimeClock() -> CMClock {
    CMClock.hostTimeClock
}

/// The clock's current time (`clock.time`).
public func CMClockGetTime(_ clock: CMClock) -> CMTime {
    clock.time
}

/// Converts `time` on clock `from` to the simultaneous time on clock `to`, going
/// through host time (`CMSyncConvertTime`).
///
/// Returns `time` unchanged when both are the same clock, and `.invalid` when `from`
/// cannot map the time to host time (non-numeric time or stopped clock). Both clocks
/// are assumed to share a host time line.
public func CMSyncConvertTime(_ time: CMTime, from fromClock: CMClock, to toClock: CMClock) -> CMTime {
    if fromClock === toClock { return time }
    guard let hostTime = fromClock.hostTime(forClockTime: time) else { return .invalid }
    return toClock.time(atHostTime: hostTime)
}

/// Converts a raw `CLOCK_MONOTONIC` reading in nanoseconds (this platform's "system
/// units") to a host-time-clock `CMTime` (`CMClockMakeHostTimeFromSystemUnits`).
/// Readings beyond `Int64.max` saturate.
public func CMClockMakeHostTimeFromSystemUnits(_ hostTime: UInt64) -> CMTime {
    CMTime(value: Int64(clamping: hostTime), timescale: HostTime.nanosecondTimescale)
}
