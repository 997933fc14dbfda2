import Foundation
import MediaClock

/// Fits a straight line to a sound device's timing reports: when each frame of its stream
/// is heard.
///
/// A device reports a moment and how many frames it then held ahead of the next one to be
/// written: a point of the line "frame n is heard at host time t". Points jitter and wander
/// (a card's timestamp is taken when the driver gets round to it; a sound server's latency is
/// read at a moment known only to within a round trip), while the frames themselves leave at
/// the device's steady rate, so the truth is a straight line. This filter is the
/// least-squares line through every report since the stream (re)started, computed
/// recursively in centred form; once the line is `settledWindow` old, older reports are
/// forgotten exponentially at that time constant, so it follows a crystal's thermal drift.
/// The fit is exact from the second report of an exact device, and on noisy reports its
/// error falls as fast as any estimate can. The slope is the device's rate on the host
/// clock. No rate is assumed in reading a report: the rate only carries the line from the
/// frame a report describes to the frame about to be written.
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
/// further off than `jumpThreshold`; a restart keeps the learned rate and its certainty,
/// since the crystal did not change.
///
/// A report can be the same measurement again: a sound server's figures come every few
/// periods, and in between the output carries the last one forward by the frames written
/// since, which describes the same frame at the same moment. The fit takes each report as
/// it comes (a measurement then weighs as long as it stood), but the rate's standard error
/// counts only distinct measurements: counted by reports, two measurements made a line
/// look known to 0.05 ppm, and a start went ahead on a rate still hundreds of ppm off.
///
/// Real-time safe: plain arithmetic on a few doubles. Render thread only.
struct DeviceTimingFilter {
    /// Once the line is this old (seconds), reports are forgotten at this time constant: a
    /// window long against a sound server's report wander (seconds long), short against a
    /// crystal's thermal drift (under a ppm a minute, a few µs of lag).
    static let settledWindow = 45.0
    /// A report this far from the line (seconds) is a restart: an underrun of a 100 ms
    /// buffer moves the timeline by about the buffer, far beyond any report's error.
    static let jumpThreshold = 20e-3
    /// A report further than this from the line (seconds) is not used: four times the
    /// wander of an honest sound server's reports.
    static let outlierThreshold = 1e-3
    /// A learned rate beyond ±2 % is not a device: keep within reason. The host clock the
    /// rate is learned against may itself be skewed by 1 % or more (a simulated or faked
    /// node clock, as `ClockEstimator.maximumRatePPM` allows), and the device be 0.1 % off
    /// on top (PulseAudio's null sink has been seen 700 ppm fast).
    static let maximumRateDeviation = 2e-2
    /// The prior on a new device's rate: nominal, give or take this much (ppm), the most any
    /// device has been seen off (PulseAudio's null sink, 700 ppm fast against the host
    /// clock), so that it only decides the slope until the first two reports do.
    static let priorRateSpreadPPM = 1000.0
    /// The report noise (seconds) the prior is weighed against: a sound server's.
    static let priorReportNoise = 20e-6
    /// The least report noise (ns) the fit assumes: a timestamp's resolution.
    static let noiseFloor = 1.0
    /// For this long after a (re)start (seconds) the line is not yet established, and a
    /// report beyond `outlierThreshold` restarts it at once: a device's first reports,
    /// taken before it runs, can be milliseconds off.
    static let establishingTime = 0.5
    /// A report placing the same frame as the last one fitted (within this many frames) at the
    /// same moment is a repeat of it: the frames written in between count exactly, so only
    /// rounding separates the two.
    static let repeatTolerance = 0.01
    /// How long (seconds) reports must stay off the line on one side before the line follows
    /// them: twice the second-long excursions of a starved server's reports seen in
    /// practice, which the line must ride out.
    static let shiftConfirmationTime = 2.0

    /// The fit since the last restart, in frames since `frameOrigin` (x) and nanoseconds
    /// since `origin` (y): the weight of the reports, their means, and the centred sums of
    /// squares and products. Empty (weight 0) until the first report after a restart.
    private var weight = 0.0
    private var meanFrame = 0.0
    private var meanTime = 0.0
    private var frameSquares = 0.0
    private var frameTimeProducts = 0.0
    private var timeSquares = 0.0
    /// The slope the fit is drawn toward (ns per frame), and the evidence behind it from
    /// fits before a restart (in frames², as `frameSquares`): nominal and none for a new
    /// device, the learned rate with all its certainty after a restart of the stream. On top
    /// of that evidence the slope is held within `priorRateSpreadPPM` of it, a prior weighed
    /// against the reports' own noise.
    private var priorSlope: Double
    private var priorWeight = 0.0
    /// Whether a restart is due at the next report.
    private var restartPending = true
    /// Frames written so far: the index of the next one.
    private var writtenFrames = 0.0
    /// The frame index and host time the fit counts from: a host clock's nanoseconds can be
    /// near 2e18 (a clock moved by libfaketime counts from the epoch), where a double
    /// resolves only 256 ns; times a few hours from the origin resolve to under a nanosecond.
    private var frameOrigin = 0.0
    private var origin: Int64 = 0
    /// Seconds of device time since the line (re)started.
    private(set) var age = 0.0
    private let nominalFrameNanoseconds: Double
    /// Reports not used since the line (re)started.
    private(set) var outliers = 0
    /// The distinct measurements in the fit (forgotten as the reports are), and the last
    /// one fitted, to know a repeat of it: its moment and the frame it placed.
    private var measurements = 0.0
    private var lastFitted: (host: HostTime, frame: Double)?
    /// Times the line followed reports that stayed off it.
    private(set) var shifts = 0
    /// The first error (ns) of the run of outliers on one side of the line, and how long
    /// the run has lasted (s).
    private var shiftError: Double?
    private var shiftElapsed = 0.0

    init(sampleRate: Int) {
        nominalFrameNanoseconds = 1e9 / Double(sampleRate)
        priorSlope = nominalFrameNanoseconds
    }

    /// The weight (frames²) of the prior that the rate is within `priorRateSpreadPPM` of
    /// `priorSlope`: the reports' noise variance over the prior's, so that the prior yields
    /// to two reports of an exact device and to a second or so of a sound server's. Before
    /// the noise is seen, a sound server's is assumed.
    private var rangePriorWeight: Double {
        let spread = Self.priorRateSpreadPPM * 1e-6 * nominalFrameNanoseconds
        return noiseVariance / (spread * spread)
    }

    /// The reports' variance around the fitted line (ns²): their residuals' sum of squares
    /// over the degrees of freedom a line leaves. Until three reports are in, a sound
    /// server's noise is assumed.
    private var noiseVariance: Double {
        guard weight >= 3, frameSquares > 0 else { return Self.priorNoiseVariance }
        return max(residualSquares / (weight - 2), Self.noiseFloor * Self.noiseFloor)
    }

    /// The reports' sum of squares about the fitted line (ns², each report counted).
    private var residualSquares: Double {
        frameSquares > 0 ? max(timeSquares - frameTimeProducts * frameTimeProducts / frameSquares, 0) : 0
    }

    /// The learned duration of one device frame on the host clock (ns).
    private var frameNanoseconds: Double {
        let prior = priorWeight + rangePriorWeight
        let slope = (frameTimeProducts + prior * priorSlope) / (frameSquares + prior)
        return min(max(slope, nominalFrameNanoseconds * (1 - Self.maximumRateDeviation)),
                   nominalFrameNanoseconds * (1 + Self.maximumRateDeviation))
    }

    /// The device's learned rate against the host clock: host time per device frame over
    /// its nominal value (above 1: the device runs slow, each frame lasts longer).
    var frameDurationRatio: Double { frameNanoseconds / nominalFrameNanoseconds }

    /// The standard error of the learned rate (ppm): the measurements' noise around the line
    /// over the spread of the frames they describe, as for any least-squares slope. Each
    /// measurement counts once however many reports repeated it: the fit's sums are then
    /// worth `measurements / weight` of what they hold, and a line through fewer than three
    /// measurements says nothing of its noise.
    var rateStandardErrorPPM: Double {
        if measurements < 3 {
            guard priorWeight > 0 else { return .infinity }
            return (Self.priorNoiseVariance / priorWeight).squareRoot() / nominalFrameNanoseconds * 1e6
        }
        let share = measurements / weight
        let variance = max(residualSquares * share / (measurements - 2), Self.noiseFloor * Self.noiseFloor)
        return (variance / (frameSquares * share + priorWeight + rangePriorWeight)).squareRoot() / nominalFrameNanoseconds * 1e6
    }

    /// A sound server's report variance (ns²), assumed where none has been seen.
    private static var priorNoiseVariance: Double { priorReportNoise * 1e9 * priorReportNoise * 1e9 }

    /// Forgets the line; the next report starts it again. The learned rate is kept when
    /// `keepingRate` (the crystal did not change because the stream restarted); else the
    /// reports it came from are disowned and the rate is learned again from the prior.
    mutating func reset(keepingRate: Bool = true) {
        restartPending = true
        if !keepingRate {
            weight = 0
            priorWeight = 0
            priorSlope = nominalFrameNanoseconds
        }
    }

    /// Takes the report `reported` for the frame about to be written and returns the
    /// smoothed presentation time of that frame; `frames` frames will then be written.
    mutating func filter(_ reported: HostTime, frames: Int) -> HostTime {
        filter(PresentationTimestamp(host: reported), frames: frames)
    }

    /// Takes a device's report for the frame about to be written (a moment on the host clock
    /// and the frames queued ahead of that frame then) and returns the smoothed presentation
    /// time of that frame; `frames` frames will then be written.
    ///
    /// The report is a point of the line itself: at `timestamp.host` the device plays the
    /// frame `queuedFrames` before the next one. (Read at the nominal rate instead, a sound
    /// server's 100 ms queue would put the line 10 µs off for every 100 ppm the device is
    /// off.)
    mutating func filter(_ timestamp: PresentationTimestamp, frames: Int) -> HostTime {
        let nextFrame = writtenFrames
        writtenFrames += Double(frames)
        // The frame playing at `timestamp.host`.
        let playing = nextFrame - (timestamp.queuedFrames.isFinite ? timestamp.queuedFrames : 0)
        let periodSeconds = Double(frames) * nominalFrameNanoseconds / 1e9
        guard timestamp.isRunning else {
            // A stopped device's promise: the line starts once it runs.
            restartPending = true
            return timestamp.presentation(frameNanoseconds: frameNanoseconds)
        }
        let (difference, overflow) = timestamp.host.nanoseconds.subtractingReportingOverflow(origin)
        guard !restartPending, !overflow, weight > 0 else {
            return restart(at: timestamp.host, playing: playing, next: nextFrame)
        }
        let measured = Double(difference)
        let predicted = time(ofFrame: playing)
        let error = measured - predicted
        guard abs(error) < Self.jumpThreshold * 1e9 else {
            return restart(at: timestamp.host, playing: playing, next: nextFrame)
        }
        if abs(error) > Self.outlierThreshold * 1e9 {
            if age < Self.establishingTime {
                // The reports the fit had are as suspect as this one: their rate is not kept.
                return restart(at: timestamp.host, playing: playing, next: nextFrame, keepingEvidence: false)
            }
            outliers += 1
            if let first = shiftError, (first > 0) == (error > 0) {
                shiftElapsed += periodSeconds
            } else {
                shiftError = error
                shiftElapsed = 0
            }
            if let first = shiftError, shiftElapsed >= Self.shiftConfirmationTime {
                // How fast the reports drifted from the line over the run is how far its
                // rate is off (0 for a plain move of the timeline); the rate learned before
                // is wrong by that much, so it keeps none of its certainty.
                let drift = (error - first) / (shiftElapsed * 1e9)
                let corrected = frameNanoseconds * (1 + drift)
                shifts += 1
                priorSlope = min(max(corrected, nominalFrameNanoseconds * (1 - Self.maximumRateDeviation)),
                                 nominalFrameNanoseconds * (1 + Self.maximumRateDeviation))
                priorWeight = 0
                return restart(at: timestamp.host, playing: playing, next: nextFrame, keepingEvidence: false)
            }
            // Not used: the line carries on as it was.
            return host(time(ofFrame: nextFrame))
        }
        shiftError = nil
        shiftElapsed = 0
        age += periodSeconds
        let repeated = lastFitted.map { $0.host == timestamp.host && abs($0.frame - playing) < Self.repeatTolerance } ?? false
        add(frame: playing - frameOrigin, time: measured, periodSeconds: periodSeconds, newMeasurement: !repeated)
        lastFitted = (timestamp.host, playing)
        return host(time(ofFrame: nextFrame))
    }

    /// The line's time (ns after `origin`) of frame `frame` (counted from the first written).
    private func time(ofFrame frame: Double) -> Double {
        meanTime + (frame - frameOrigin - meanFrame) * frameNanoseconds
    }

    /// Adds a point to the fit, forgetting old ones once the line is settled.
    private mutating func add(frame: Double, time: Double, periodSeconds: Double, newMeasurement: Bool) {
        let forgetting = age > Self.settledWindow ? exp(-periodSeconds / Self.settledWindow) : 1
        weight = weight * forgetting + 1
        measurements = measurements * forgetting + (newMeasurement ? 1 : 0)
        frameSquares *= forgetting
        frameTimeProducts *= forgetting
        timeSquares *= forgetting
        let frameDeviation = frame - meanFrame
        meanFrame += frameDeviation / weight
        let timeDeviation = time - meanTime
        meanTime += timeDeviation / weight
        frameSquares += frameDeviation * (frame - meanFrame)
        frameTimeProducts += frameDeviation * (time - meanTime)
        timeSquares += timeDeviation * (time - meanTime)
    }

    /// The host time `time` nanoseconds after the origin.
    private func host(_ time: Double) -> HostTime {
        HostTime(nanoseconds: origin &+ Int64(time.rounded()))
    }

    /// Starts a new fit at this report. The rate learned so far stays, with the certainty of
    /// the reports behind it when `keepingEvidence` (else the prior stands as it was).
    private mutating func restart(at reported: HostTime, playing: Double, next: Double,
                                  keepingEvidence: Bool = true) -> HostTime {
        if keepingEvidence && weight > 0 {
            priorSlope = frameNanoseconds
            priorWeight += frameSquares
        }
        origin = reported.nanoseconds
        frameOrigin = playing
        lastFitted = (reported, playing)
        measurements = 1
        weight = 1
        meanFrame = 0
        meanTime = 0
        frameSquares = 0
        frameTimeProducts = 0
        timeSquares = 0
        restartPending = false
        age = 0
        outliers = 0
        shiftError = nil
        shiftElapsed = 0
        return host((next - playing) * frameNanoseconds)
    }
}
