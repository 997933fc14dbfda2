import Foundation
import MediaClock

/// Smooths a sound device's presentation-time reports into a straight line.
///
/// A device's reports jitter and wander: a card's timestamp is taken when the driver gets
/// round to it, and a sound server's latency figure comes from its client library's own
/// interpolation, which PulseAudio's ALSA plugin lets drift by a few hundred microseconds
/// over seconds, most of all in the first seconds of a stream. The frames themselves leave at
/// the device's steady rate, so the true presentation times of successive periods lie on a
/// straight line. This filter estimates that line, offset and slope, with a second-order loop
/// (a delay-locked loop, after Fons Adriaensen's "Using a DLL to filter time") whose
/// bandwidth narrows as the stream ages: `growingWindowBandwidth / age`, which makes it a
/// least-squares fit over everything reported since the start, until the settled bandwidth
/// is reached. The line then averages the reports over tens of seconds, so playback that
/// follows it moves only with the device, not with its reports' noise.
///
/// The reports are not always honest: under load, PulseAudio's ALSA plugin has been seen to
/// report a timeline milliseconds off, ramping and jumping for seconds, while the sink kept
/// playing the stream at its steady rate. A report further than `outlierThreshold` from the
/// line is therefore not used, as long as such a run of reports ends within
/// `shiftConfirmationTime`. Reports that stay on one side of the line longer than that mean
/// the line is wrong: a sound server really moved the stream's timeline without the ALSA
/// device seeing an underrun (PulseAudio has been seen to play a stream 10 ms later after a
/// starved start), or the rate learned from a start's wandering reports is off, and the
/// playback that follows it drifts from the device by as much. The line then restarts on
/// the reports, its rate corrected by how fast the run drifted. It also restarts on an
/// underrun or a flush, which the render thread reports with `reset()`, and on a report
/// further off than `jumpThreshold`.
///
/// Real-time safe: plain arithmetic on a few doubles. Render thread only.
struct DeviceTimingFilter {
    /// Bandwidth (Hz) times the seconds since the start while the loop is narrowing: a
    /// second-order loop of bandwidth 0.45/t behaves like a least-squares line fitted to the
    /// last t seconds of reports, which is the best estimate of a straight line in noise.
    static let growingWindowBandwidth = 0.45
    /// Bandwidth (Hz) right after a (re)start: a device's first reports can be off by
    /// milliseconds, and a wide loop catches up within a few periods.
    static let startingBandwidth = 8.0
    /// Bandwidth (Hz) once narrowed, after about 45 s: passes a tenth of a sound server's
    /// report wander (seconds long), and still follows a crystal's thermal drift (under a
    /// ppm a minute) with a few microseconds of lag.
    static let settledBandwidth = 0.01
    /// A report this far from the line (seconds) is a restart: an underrun of a 100 ms
    /// buffer moves the timeline by about the buffer, far beyond any report's error.
    static let jumpThreshold = 20e-3
    /// A report further than this from the line (seconds) is not used: four times the
    /// wander of an honest sound server's reports.
    static let outlierThreshold = 1e-3
    /// The learned rate is fed forward once its standard error is below the lower of these
    /// (ppm), not at all above the higher, in proportion between (`trustedFrameDurationRatio`):
    /// an exact device's rate is known within a few periods, a sound server's wandering
    /// reports take seconds to average.
    static let trustedRateError = 2.0
    static let untrustedRateError = 20.0
    /// A learned rate beyond ±0.1 % is not a crystal: keep within reason.
    static let maximumRateDeviation = 1e-3
    /// For this long after a (re)start (seconds) the line is not yet established, and a
    /// report beyond `outlierThreshold` restarts it at once: a device's first reports,
    /// taken before it runs, can be milliseconds off.
    static let establishingTime = 0.5
    /// How long (seconds) reports must stay off the line on one side before the line follows
    /// them: twice the second-long excursions of a starved server's reports seen in
    /// practice, which the line must ride out.
    static let shiftConfirmationTime = 2.0
    /// Reports over which the spread of the reports around the line is averaged.
    static let spreadPeriods = 100.0

    /// Predicted presentation time (ns after `origin`) of the next period's first frame.
    private var next: Double?
    /// The host time the line's times are counted from: a host clock's nanoseconds can be
    /// near 2e18 (a clock moved by libfaketime counts from the epoch), where a double
    /// resolves only 256 ns; times a few hours from the origin resolve to under a nanosecond.
    private var origin: Int64 = 0
    /// Seconds of device time since the loop (re)started: how wide its offset tracking is.
    private var age = 0.0
    /// Seconds of device time since the rate began to be learned: a restart of the stream
    /// (a flush, an underrun) moves the timeline but does not change the crystal, so the
    /// rate keeps learning narrowly across it.
    private var rateAge = 0.0
    /// Predicted duration of one frame (ns), learned.
    private var frameNanoseconds: Double
    private let nominalFrameNanoseconds: Double
    /// Reports not used since the line (re)started.
    private(set) var outliers = 0
    /// Times the line followed reports that stayed off it.
    private(set) var shifts = 0
    /// The first error (ns) of the run of outliers on one side of the line, and how long
    /// the run has lasted (s).
    private var shiftError: Double?
    private var shiftElapsed = 0.0
    /// Mean square distance of the used reports from the line (ns²), and how many.
    private var spread = 0.0
    private var used = 0.0

    init(sampleRate: Int) {
        nominalFrameNanoseconds = 1e9 / Double(sampleRate)
        frameNanoseconds = nominalFrameNanoseconds
    }

    /// The device's learned rate against the host clock: host time per device frame over
    /// its nominal value (above 1: the device runs slow, each frame lasts longer).
    var frameDurationRatio: Double { frameNanoseconds / nominalFrameNanoseconds }

    /// The standard error of the learned rate (ppm), as for a straight line fitted to
    /// reports of the spread seen over the seconds the rate has been learned.
    var rateStandardErrorPPM: Double {
        guard used >= 3, rateAge > 0 else { return .infinity }
        return spread.squareRoot() / 1e9 * 12.0.squareRoot() / (rateAge * used.squareRoot()) * 1e6
    }

    /// The learned rate as far as it can be trusted yet: nominal (1) while its standard
    /// error is large, the learned rate once it is small, a blend between, so that what is
    /// fed forward changes no faster than the correction loop can follow.
    var trustedFrameDurationRatio: Double {
        let weight = min(1, max(0, (Self.untrustedRateError - rateStandardErrorPPM) / (Self.untrustedRateError - Self.trustedRateError)))
        return 1 + (frameDurationRatio - 1) * weight
    }

    /// Forgets the line; the next report starts it again. The learned rate is kept: the
    /// crystal did not change because the stream restarted.
    mutating func reset() {
        next = nil
    }

    /// The loop bandwidth (Hz) at `age` seconds after a (re)start.
    static func bandwidth(atAge age: Double) -> Double {
        min(startingBandwidth, max(settledBandwidth, growingWindowBandwidth / max(age, 1e-3)))
    }

    /// Takes the report `reported` for the frame about to be written and returns the
    /// smoothed presentation time of that frame; `frames` frames will then be written.
    mutating func filter(_ reported: HostTime, frames: Int) -> HostTime {
        let (difference, overflow) = reported.nanoseconds.subtractingReportingOverflow(origin)
        guard !overflow else { return restart(at: reported, frames: frames) }
        let measured = Double(difference)
        let periodSeconds = Double(frames) * frameNanoseconds / 1e9
        guard let predicted = next, abs(measured - predicted) < Self.jumpThreshold * 1e9 else {
            return restart(at: reported, frames: frames)
        }
        let error = measured - predicted
        if abs(error) > Self.outlierThreshold * 1e9 {
            if age < Self.establishingTime { return restart(at: reported, frames: frames) }
            outliers += 1
            if let first = shiftError, (first > 0) == (error > 0) {
                shiftElapsed += periodSeconds
            } else {
                shiftError = error
                shiftElapsed = 0
            }
            if let first = shiftError, shiftElapsed >= Self.shiftConfirmationTime {
                // How fast the reports drifted from the line over the run is how far its
                // rate is off (0 for a plain move of the timeline).
                let drift = (error - first) / (shiftElapsed * 1e9)
                frameNanoseconds = min(max(frameNanoseconds * (1 + drift), nominalFrameNanoseconds * (1 - Self.maximumRateDeviation)),
                                       nominalFrameNanoseconds * (1 + Self.maximumRateDeviation))
                shifts += 1
                return restart(at: reported, frames: frames)
            }
            // Not used: the line carries on as predicted.
            next = predicted + Double(frames) * frameNanoseconds
            return host(predicted)
        }
        shiftError = nil
        shiftElapsed = 0
        used += 1
        spread += (error * error - spread) / min(used, Self.spreadPeriods)
        age += periodSeconds
        rateAge += periodSeconds
        // The offset follows at the bandwidth of its own age, the rate at that of the rate's:
        // after a restart the offset is caught quickly while the rate stays as narrow as it
        // was (a smaller rate gain only damps the loop more).
        let omega = 2 * Double.pi * Self.bandwidth(atAge: age) * periodSeconds
        let rateOmega = 2 * Double.pi * Self.bandwidth(atAge: max(age, rateAge)) * periodSeconds
        let b = 2.0.squareRoot() * omega
        let c = rateOmega * rateOmega
        let current = predicted + b * error
        frameNanoseconds += c * error / Double(frames)
        frameNanoseconds = min(max(frameNanoseconds, nominalFrameNanoseconds * (1 - Self.maximumRateDeviation)),
                               nominalFrameNanoseconds * (1 + Self.maximumRateDeviation))
        next = current + Double(frames) * frameNanoseconds
        return host(current)
    }

    /// The host time `time` nanoseconds after the origin.
    private func host(_ time: Double) -> HostTime {
        HostTime(nanoseconds: origin &+ Int64(time.rounded()))
    }

    private mutating func restart(at reported: HostTime, frames: Int) -> HostTime {
        origin = reported.nanoseconds
        next = Double(frames) * frameNanoseconds
        age = 0
        outliers = 0
        shiftError = nil
        shiftElapsed = 0
        return reported
    }
}
