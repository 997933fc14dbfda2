import Foundation
import MediaClock

/// Smooths a sound device's presentation-time reports with a delay-locked loop.
///
/// A device's reports jitter: a sound server's latency figure is refreshed only now and
/// then, and a card's timestamp is taken when the driver gets round to it. The frames
/// themselves leave at a steady rate, so the true presentation times of successive periods
/// lie on a straight line. This second-order loop (after Fons Adriaensen's "Using a DLL to
/// filter time") tracks that line: its offset follows the reports through a low-pass
/// filter of bandwidth `bandwidth`, and its slope learns the device's real rate, so a
/// device that runs fast or slow is followed with no standing error. A report further off
/// than `jumpThreshold` means the device restarted (an underrun, a flush): the loop starts
/// again from that report.
///
/// Real-time safe: plain arithmetic on a few doubles. Render thread only.
struct DeviceTimingFilter {
    /// Loop bandwidth in hertz once settled: 0.5 Hz averages report jitter over a couple of
    /// seconds while following a crystal's thermal drift, which changes over minutes.
    static let bandwidth = 0.5
    /// Loop bandwidth right after a (re)start, in hertz: a device's first reports can be off
    /// by milliseconds while it starts, and a wide loop catches up with its real timeline
    /// within a fraction of a second instead of several.
    static let startingBandwidth = 8.0
    /// How long the bandwidth takes to narrow from the starting to the settled value.
    static let settlingTime = 2.0
    /// A report this far from the line is a restart, not jitter.
    static let jumpThreshold: Duration = .milliseconds(5)

    /// Predicted presentation time (ns) of the next period's first frame.
    private var next: Double?
    /// Seconds of device time since the loop (re)started, for narrowing its bandwidth.
    private var age = 0.0
    /// Predicted duration of one frame (ns), learned.
    private var frameNanoseconds: Double
    private let nominalFrameNanoseconds: Double

    init(sampleRate: Int) {
        nominalFrameNanoseconds = 1e9 / Double(sampleRate)
        frameNanoseconds = nominalFrameNanoseconds
    }

    /// Forgets the line; the next report starts it again.
    mutating func reset() {
        next = nil
    }

    /// Takes the report `reported` for the frame about to be written and returns the
    /// smoothed presentation time of that frame; `frames` frames will then be written.
    mutating func filter(_ reported: HostTime, frames: Int) -> HostTime {
        let measured = Double(reported.nanoseconds)
        let periodSeconds = Double(frames) * frameNanoseconds / 1e9
        // Narrows geometrically from the starting to the settled bandwidth.
        let progress = min(1, age / Self.settlingTime)
        let bandwidth = Self.startingBandwidth * pow(Self.bandwidth / Self.startingBandwidth, progress)
        let omega = 2 * Double.pi * bandwidth * periodSeconds
        let b = 2.0.squareRoot() * omega
        let c = omega * omega
        guard let predicted = next,
              abs(measured - predicted) < Double(Self.jumpThreshold.components.attoseconds) / 1e9
                + Double(Self.jumpThreshold.components.seconds) * 1e9 else {
            next = measured + Double(frames) * frameNanoseconds
            age = 0
            return reported
        }
        age += periodSeconds
        let error = measured - predicted
        let current = predicted + b * error
        frameNanoseconds += c * error / Double(frames)
        // A learned rate beyond ±0.1 % is not a crystal: keep within reason.
        frameNanoseconds = min(max(frameNanoseconds, nominalFrameNanoseconds * 0.999), nominalFrameNanoseconds * 1.001)
        next = current + Double(frames) * frameNanoseconds
        return HostTime(nanoseconds: Int64(current.rounded()))
    }
}
