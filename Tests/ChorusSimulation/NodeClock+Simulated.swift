import ChorusSession
import MediaClock

extension NodeClock {
    /// A clock `offset` off the machine's and `skewPPM` fast (negative: slow), as another
    /// machine's would be, pivoting at the moment it is made.
    package static func simulated(offset: Duration, skewPPM: Int64) -> NodeClock {
        let real = MonotonicHostClock()
        let clock = SkewedHostClock(wrapping: real, offset: offset, skewPPM: skewPPM, base: real.now())
        return NodeClock(clock: clock, mapping: { clock.map($0) },
                         description: "offset \(offset.roundedNanoseconds) ns, skew \(clock.skewPPM) ppm, pivot \(clock.base.nanoseconds) ns of CLOCK_MONOTONIC")
    }
}
