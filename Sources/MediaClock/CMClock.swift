/// A read-only clock: an affine function of host time (`CMClock`).
///
/// The base class maps host time `h` to
/// `anchorTime + (h - anchorHostTime) * rateRelativeToHost`, with the anchors fixed at
/// initialization. `CMClock(hostClock:)` is the identity mapping: the host time clock
/// of the machine (or simulated node) that `hostClock` represents. Clocks that re-fit
/// their mapping over time (a clock slaved to a remote leader, an audio device clock)
/// subclass and override `time(atHostTime:)`, `hostTime(forClockTime:)` and
/// `rateRelativeToHost`, keeping the two mapping functions inverse to each other.
///
/// Thread-safety: instances of this class are immutable and may be used from any
/// thread; subclasses must keep their overrides thread-safe.
// @unchecked only because the class is open (a non-final class cannot be checked): its
// fields are lets of Sendable types, and each subclass answers for its own.
open class CMClock: @unchecked Sendable {
    /// The host clock this clock is a function of; also what `time` reads.
    public let hostClock: any HostClock
    /// The host time at which the clock reads `anchorTime`.
    public let anchorHostTime: HostTime
    /// The clock's reading at `anchorHostTime`.
    public let anchorTime: CMTime
    private let rate: Double

    /// The host time clock of this machine (`CMClockGetHostTimeClock()`): reads
    /// `CLOCK_MONOTONIC` with a nanosecond timescale. Immutable and shared.
    public static let hostTimeClock = CMClock(hostClock: MonotonicHostClock())

    /// The identity clock of `hostClock`: its time is the host time, in nanoseconds.
    /// Tests pass a simulated clock (ChorusSimulation's `SimulatedHostClock`) to drive it
    /// deterministically.
    public init(hostClock: any HostClock) {
        self.hostClock = hostClock
        anchorHostTime = HostTime(nanoseconds: 0)
        anchorTime = CMTime(value: 0, timescale: HostTime.nanosecondTimescale)
        rate = 1
    }

    /// A clock that reads `anchorTime` at `anchorHostTime` and advances `rate` seconds per
    /// host second from there. A non-numeric anchor is replaced by zero and a non-finite
    /// rate by 0 (a stopped clock), since neither describes a usable clock.
    public init(hostClock: any HostClock, anchorHostTime: HostTime, anchorTime: CMTime, rate: Double) {
        self.hostClock = hostClock
        self.anchorHostTime = anchorHostTime
        self.anchorTime = anchorTime.isNumeric ? anchorTime : CMTime(value: 0, timescale: HostTime.nanosecondTimescale)
        self.rate = rate.isFinite ? rate : 0
    }

    /// The clock's current time: `time(atHostTime: hostClock.now())`.
    public var time: CMTime {
        time(atHostTime: hostClock.now())
    }

    /// The clock's speed in clock seconds per host second (1.0 for a host time clock).
    open var rateRelativeToHost: Double {
        rate
    }

    /// The clock's reading at host time `hostTime`. Exact when the rate is a dyadic
    /// rational such as 1, 0.5 or 2; otherwise rounded to the nanosecond.
    open func time(atHostTime hostTime: HostTime) -> CMTime {
        let elapsed = CMTime(hostTime - anchorHostTime, timescale: HostTime.nanosecondTimescale)
        let scaled = rate == 1 ? elapsed : elapsed * rate
        return anchorTime + scaled
    }

    /// The host time at which the clock reads `clockTime` (the inverse of
    /// `time(atHostTime:)`), rounded to the nanosecond; `nil` for a non-numeric time, a
    /// stopped clock, or a host time outside the `Int64` nanosecond range.
    open func hostTime(forClockTime clockTime: CMTime) -> HostTime? {
        guard clockTime.isNumeric, rate != 0 else { return nil }
        let sinceAnchor = clockTime - anchorTime
        guard let elapsed = sinceAnchor.duration else { return nil }
        let hostElapsed: Int128
        if rate == 1 {
            hostElapsed = elapsed.roundedNanoseconds
        } else {
            guard let nanoseconds = ExactArithmetic.divide(elapsed.roundedNanoseconds, by: rate) else { return nil }
            hostElapsed = nanoseconds
        }
        let result = Int128(anchorHostTime.nanoseconds) + hostElapsed
        guard let nanoseconds = Int64(exactly: result) else { return nil }
        return HostTime(nanoseconds: nanoseconds)
    }
}
