// The time unit constants Dispatch defines on Apple's platforms (`dispatch/time.h`) and
// Linux's Dispatch does not export: code that builds a `DispatchTime` or a `CMTime` from
// nanoseconds uses them. Unsigned 64-bit, as there.

#if !canImport(Darwin)
/// Nanoseconds in a second.
public let NSEC_PER_SEC: UInt64 = 1_000_000_000
/// Nanoseconds in a millisecond.
public let NSEC_PER_MSEC: UInt64 = 1_000_000
/// Nanoseconds in a microsecond.
public let NSEC_PER_USEC: UInt64 = 1_000
/// Microseconds in a second.
public let USEC_PER_SEC: UInt64 = 1_000_000
#endif
