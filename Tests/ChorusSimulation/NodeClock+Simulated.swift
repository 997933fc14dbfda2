import ChorusSession
import MediaClock

extension NodeClock {
    /// A clock `offset` seconds off the machine's and `skewPPM` fast (negative: slow), as
    /// another machine's would be, pivoting at the moment it is made.
    package static func simulated(offset: Double, skewPPM: Int64) -> NodeClock {
        let real = MonotonicHostClock()
        let offsetNanoseconds = Int64((offset * 1e9).rounded())
        let clock = SkewedHostClock(wrapping: real, offset: .nanoseconds(offsetNanoseconds), skewPPM: skewPPM, base: real.now())
        return NodeClock(clock: clock, mapping: { clock.map($0) },
                         description: "offset \(offsetNanoseconds) ns, skew \(clock.skewPPM) ppm, pivot \(clock.base.nanoseconds) ns of CLOCK_MONOTONIC")
    }
}
