import MediaClock

/// The three tiers that keep followed content on its timeline, as a pure type: given how
/// far the content about to play is from the timeline, it says whether to restart on the
/// timeline (the hard tier, skipping or padding) or by how many ppm to read faster or
/// slower (the dead band and the soft tier's PI loop). The render thread steps it once a
/// period; tests step it against a simulated device.
///
/// It allocates nothing and keeps only a few numbers, so it runs on the render thread. It
/// works in seconds and ppm as `Double`s, and is internal to the module: the status the
/// render thread publishes carries its error as a `Duration`.
struct TimelineServo: Sendable {
    /// Errors smaller than this (seconds) leave the proportional term alone, and larger ones
    /// count only by their excess over it, so the loop does not chase the clock estimate's
    /// microsecond updates and has no step at the band's edge to cycle on. The error rests
    /// near the band's edge while the device's fed-forward rate is a fraction of a ppm off,
    /// so the band is also the standing error: 3 µs, a seventh of a frame at 48 kHz.
    static let deadBand = 3e-6
    /// The most the soft tier's loop moves the playback rate, in ppm, beyond the device's own
    /// rate (which is fed forward): above the clock estimate's residual and the device rate's
    /// error at a start, and at 0.05 % a pitch change (under a cent) nobody hears.
    static let maximumSoftCorrectionPPM = 500.0
    /// Past this error (seconds) the content is skipped or padded at once instead: at the
    /// soft tier's full rate 3 ms would take six seconds to remove.
    static let hardResyncThreshold = 3e-3
    /// For this long after a start (seconds), the hard tier acts on much smaller errors:
    /// while a device's timing settles its first reports can be a millisecond or two off,
    /// and a skip or pad right at the start is not heard, where the soft tier would take
    /// seconds to pull the error in. Only the device's error counts: as much error as the
    /// timeline itself has moved since the start (a clock estimate still settling on a
    /// jittery path) is left to the soft tier, as at any other time.
    static let settlingTime = 1.5
    /// The hard tier's threshold while settling (seconds): a quarter of a millisecond.
    static let settlingHardResyncThreshold = 250e-6
    /// Settling resyncs allowed per start: two catch a device's start-up error and its
    /// first correction; more would mean the error is not a start-up effect.
    static let maximumSettlingResyncs = 2
    /// Proportional gain, ppm per second of error: 3 ppm per µs. With the integral gain below
    /// the loop is critically damped with a natural frequency of 1.5 rad/s: a step of the
    /// timeline or a device's drift is absorbed in two or three seconds, while the device
    /// timing (already smoothed by `DeviceTimingFilter`) moves the rate by only a few ppm.
    static let proportionalGain = 3e6
    /// Integral gain, ppm per second of error per second: lets the loop settle on a
    /// device's constant drift with no standing error (ζ = Kp·10⁻⁶ / (2·√(Ki·10⁻⁶)) = 1).
    static let integralGain = 2.25e6
    /// Time constant of the low-pass filter on the measured error (seconds): smooths the
    /// sub-millisecond jitter of a sound server's latency reports.
    static let errorFilterTime = 0.2
    /// For this long after a start (seconds of playing), the loop acquires: it runs
    /// `acquisitionSpeedup` times faster. A follower starts on a clock estimate still
    /// firming up (on a jittery path its line moves by 100 µs in the first second while the
    /// rate is learned) and the steady loop, tuned to ignore a sound server's report noise,
    /// lags such a moving target by as much again. Three seconds covers the estimate's
    /// settling on a path with milliseconds of jitter.
    static let acquisitionTime = 3.0
    /// How much faster the acquiring loop is: natural frequency 4 × 1.5 = 6 rad/s, still
    /// critically damped (proportional gain × 4, integral × 16, error filter ÷ 4), so a
    /// timeline moving at 150 ppm is followed within 12 µs instead of 50. The device's rate
    /// is known within `startingRateError` before a start, so its reports move the faster
    /// loop by tens of ppm at most, far below what is heard.
    static let acquisitionSpeedup = 4.0

    /// What to do with the period about to be played.
    enum Action: Sendable, Equatable {
        /// Restart on the timeline: skip or pad to it at once. `settling` says it was the
        /// lower threshold of a start's first moments that called for it.
        case resync(settling: Bool)
        /// Read the content this many ppm faster (negative: slower) than the device's own
        /// rate, which the caller feeds forward.
        case correct(ppm: Double)
    }

    /// The error after the low-pass filter (seconds).
    private(set) var filteredError = 0.0
    /// The integral term: the drift learned so far (ppm).
    private(set) var integralPPM = 0.0
    /// When the loop last ran.
    private var lastStep: HostTime?
    /// When content first played on the current timeline.
    private(set) var startedAt: HostTime?
    /// The timeline as it was when content started (or last resynced) while settling: the
    /// settling tier allows as much more error as the timeline has moved since.
    private var settlingTimeline: RenderTimeline?
    /// Resyncs made at the settling threshold since the start.
    private(set) var settlingResyncs = 0

    init() {}

    /// A new timeline to follow from scratch: the loop forgets what it learned. (When it last
    /// ran is kept: the next step's elapsed time is then long, and the filter takes that
    /// step's error whole.)
    mutating func reset() {
        startedAt = nil
        settlingTimeline = nil
        settlingResyncs = 0
        integralPPM = 0
        filteredError = 0
    }

    /// Content started playing on `timeline` at `host`. Only the first start after a
    /// `reset` counts: a restart after a resync does not begin the settling time again.
    mutating func contentStarted(at host: HostTime, on timeline: RenderTimeline) {
        guard startedAt == nil else { return }
        startedAt = host
        settlingTimeline = timeline
    }

    /// One period: the content about to be heard at `host` is `error` seconds behind
    /// `timeline` (negative: ahead), at `sampleRate`.
    mutating func step(error: Double, at host: HostTime, timeline: RenderTimeline, sampleRate: Int) -> Action {
        // Settling counts from the first start on this timeline, not from resyncs.
        let sinceStart = startedAt.map { Double((host - $0).nanosecondsClamped) / 1e9 } ?? 0
        let settling = sinceStart < Self.settlingTime && settlingResyncs < Self.maximumSettlingResyncs
        let moved = settlingTimeline.map {
            (timeline.due(at: host, sampleRate: sampleRate) - $0.due(at: host, sampleRate: sampleRate)) / Double(sampleRate)
        } ?? 0
        let hard = abs(error) > Self.hardResyncThreshold
        // While settling, the error the timeline's own move explains (and the soft tier is
        // already absorbing) is allowed on top of the settling threshold.
        if hard || (settling && abs(error) > Self.settlingHardResyncThreshold + abs(moved)) {
            if !hard { settlingResyncs += 1 }
            settlingTimeline = timeline
            return .resync(settling: !hard)
        }
        let elapsed = lastStep.map { max(0, Double((host - $0).nanosecondsClamped) / 1e9) } ?? 0
        lastStep = host
        // The gear changes only the loop's speed: the integral (the drift learned so far)
        // carries over, so leaving acquisition moves the rate by the proportional term's
        // share of a few µs of error, a few ppm.
        let speed = sinceStart < Self.acquisitionTime ? Self.acquisitionSpeedup : 1
        let smoothing = elapsed > 0 ? min(1, elapsed * speed / Self.errorFilterTime) : 1
        filteredError += (error - filteredError) * smoothing
        let excess = abs(filteredError) <= Self.deadBand ? 0 : filteredError - (filteredError > 0 ? Self.deadBand : -Self.deadBand)
        let proportional = Self.proportionalGain * speed * excess
        // The integral also sees only the excess: inside the band the learned drift is held
        // still, so the loop rests instead of cycling around the band. Nor does it grow
        // while the output is already at the soft tier's limit in the direction the error
        // pushes (conditional integration): a large step of the timeline (a clock estimate
        // firming up by hundreds of µs) is then slewed out at the limit and met without the
        // overshoot a wound-up integral would carry past it (a 600 µs step overshot by
        // 230 µs).
        let saturated = abs(proportional + integralPPM) >= Self.maximumSoftCorrectionPPM
            && (proportional + integralPPM > 0) == (excess > 0)
        if !saturated {
            integralPPM = min(Self.maximumSoftCorrectionPPM, max(-Self.maximumSoftCorrectionPPM,
                                                                  integralPPM + Self.integralGain * speed * speed * excess * elapsed))
        }
        return .correct(ppm: min(Self.maximumSoftCorrectionPPM, max(-Self.maximumSoftCorrectionPPM, proportional + integralPPM)))
    }
}
