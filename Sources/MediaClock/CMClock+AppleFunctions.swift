// CoreMedia's C-style clock functions.

/// The host time clock of this machine (`CMClock.hostTimeClock`).
public func CMClockGetHostTimeClock() -> CMClock {
    CMClock.hostTimeClock
}

/// The clock's current time (`clock.time`).
public func CMClockGetTime(_ clock: CMClock) -> CMTime {
    clock.time
}

/// A clock or a timebase, as CoreMedia's synchronization functions take either
/// (`CMClockOrTimebase`). Any other object is neither, and those functions answer it with
/// an invalid time or a rate of 0.
public typealias CMClockOrTimebase = AnyObject

/// The host time at which `clockOrTimebase` reads `time`; nil when it never does (a stopped
/// timebase, a time that is not numeric) or it is neither a clock nor a timebase.
private func hostTime(of clockOrTimebase: CMClockOrTimebase, reading time: CMTime) -> HostTime? {
    if let clock = clockOrTimebase as? CMClock { return clock.hostTime(forClockTime: time) }
    if let timebase = clockOrTimebase as? CMTimebase { return timebase.hostTime(forTime: time) }
    return nil
}

/// What `clockOrTimebase` reads at `hostTime`; invalid when it is neither a clock nor a
/// timebase.
private func reading(of clockOrTimebase: CMClockOrTimebase, atHostTime hostTime: HostTime) -> CMTime {
    if let clock = clockOrTimebase as? CMClock { return clock.time(atHostTime: hostTime) }
    if let timebase = clockOrTimebase as? CMTimebase { return timebase.time(atHostTime: hostTime) }
    return .invalid
}

/// Converts `time` on clock or timebase `from` to the simultaneous time on `to`, going
/// through host time (`CMSyncConvertTime`).
///
/// Returns `time` unchanged when both are the same object, and `.invalid` when `from`
/// cannot map the time to host time (a time that is not numeric, a stopped clock or
/// timebase) or either is neither a clock nor a timebase. Both are assumed to share a host
/// time line.
public func CMSyncConvertTime(_ time: CMTime, from fromClockOrTimebase: CMClockOrTimebase,
                              to toClockOrTimebase: CMClockOrTimebase) -> CMTime {
    if fromClockOrTimebase === toClockOrTimebase { return time }
    guard let hostTime = hostTime(of: fromClockOrTimebase, reading: time) else { return .invalid }
    return reading(of: toClockOrTimebase, atHostTime: hostTime)
}

/// The current time of a clock or a timebase (`CMSyncGetTime`); invalid for any other object.
public func CMSyncGetTime(_ clockOrTimebase: CMClockOrTimebase) -> CMTime {
    if let clock = clockOrTimebase as? CMClock { return clock.time }
    if let timebase = clockOrTimebase as? CMTimebase { return timebase.time }
    return .invalid
}

/// How fast `clockOrTimebase` runs against `relativeTo`, in its seconds per second of the
/// other (`CMSyncGetRelativeRate`): each one's rate against host time (a timebase's effective
/// rate times its ultimate clock's), divided. 0 when either is neither a clock nor a
/// timebase, or `relativeTo` is stopped.
public func CMSyncGetRelativeRate(_ clockOrTimebase: CMClockOrTimebase, relativeTo: CMClockOrTimebase) -> Float64 {
    func rateAgainstHost(_ object: CMClockOrTimebase) -> Float64? {
        if let clock = object as? CMClock { return clock.rateRelativeToHost }
        if let timebase = object as? CMTimebase { return timebase.effectiveRate * timebase.ultimateSourceClock.rateRelativeToHost }
        return nil
    }
    guard let rate = rateAgainstHost(clockOrTimebase), let other = rateAgainstHost(relativeTo), other != 0 else { return 0 }
    return rate / other
}

/// Whether two clocks or timebases may drift apart (`CMSyncMightDrift`): false when both
/// come down to the same clock, or to clocks that run at fixed rates against this machine's
/// host time; true for clocks that re-fit their mapping over time (a follower's clock of
/// its leader), which are subclasses, and for clocks of other (simulated) host clocks.
public func CMSyncMightDrift(_ clockOrTimebase1: CMClockOrTimebase, _ clockOrTimebase2: CMClockOrTimebase) -> Bool {
    func clock(_ object: CMClockOrTimebase) -> CMClock? {
        (object as? CMClock) ?? (object as? CMTimebase)?.ultimateSourceClock
    }
    guard let first = clock(clockOrTimebase1), let second = clock(clockOrTimebase2) else { return true }
    if first === second { return false }
    // Base-class clocks are fixed affine functions of their host clock, and every clock of
    // this machine's monotonic clock reads the same one.
    let fixed = type(of: first) == CMClock.self && type(of: second) == CMClock.self
    let sameHost = first.hostClock is MonotonicHostClock && second.hostClock is MonotonicHostClock
    return !(fixed && sameHost)
}

/// Converts a raw `CLOCK_MONOTONIC` reading in nanoseconds (this platform's "system
/// units") to a host-time-clock `CMTime` (`CMClockMakeHostTimeFromSystemUnits`).
/// Readings beyond `Int64.max` saturate.
public func CMClockMakeHostTimeFromSystemUnits(_ hostTime: UInt64) -> CMTime {
    CMTime(value: Int64(clamping: hostTime), timescale: HostTime.nanosecondTimescale)
}

/// A host-time-clock time as a raw `CLOCK_MONOTONIC` reading in nanoseconds, this platform's
/// "system units" (`CMClockConvertHostTimeToSystemUnits`): the inverse of
/// `CMClockMakeHostTimeFromSystemUnits`. Rounded to the nanosecond; 0 for a time that is not
/// numeric or is negative, and saturated past `UInt64.max`.
public func CMClockConvertHostTimeToSystemUnits(_ hostTime: CMTime) -> UInt64 {
    guard hostTime.isNumeric, let duration = hostTime.duration else { return 0 }
    let nanoseconds = duration.roundedNanoseconds
    return nanoseconds <= 0 ? 0 : UInt64(clamping: nanoseconds)
}

/// Whether two clocks may drift apart (`CMClockMightDrift`): `CMSyncMightDrift` for two
/// clocks.
public func CMClockMightDrift(_ clock: CMClock, otherClock: CMClock) -> Bool {
    CMSyncMightDrift(clock, otherClock)
}

/// Marks a clock as no longer in use (`CMClockInvalidate`). A Chorus clock holds nothing
/// that needs releasing early, so this only reports success.
@discardableResult
public func CMClockInvalidate(_ clock: CMClock) -> OSStatus { noErr }

extension CMClock {
    /// A raw `CLOCK_MONOTONIC` reading in nanoseconds as a host-time-clock time
    /// (`CMClockMakeHostTimeFromSystemUnits`).
    public static func makeHostTime(fromSystemUnits hostTime: UInt64) -> CMTime {
        CMClockMakeHostTimeFromSystemUnits(hostTime)
    }

    /// A host-time-clock time as a raw `CLOCK_MONOTONIC` reading in nanoseconds
    /// (`CMClockConvertHostTimeToSystemUnits`).
    public static func convertHostTimeToSystemUnits(_ hostTime: CMTime) -> UInt64 {
        CMClockConvertHostTimeToSystemUnits(hostTime)
    }

    /// Whether this clock and `otherClock` may drift apart (`CMClockMightDrift`).
    public func mightDrift(relativeTo otherClock: CMClock) -> Bool {
        CMSyncMightDrift(self, otherClock)
    }

    /// Marks the clock as no longer in use (`CMClockInvalidate`): nothing to release here.
    public func invalidate() {}
}
