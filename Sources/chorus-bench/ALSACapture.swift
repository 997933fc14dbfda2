import CALSA
import Foundation
import MediaClock
import MediaPipeline
import Synchronization
import MutexAnnotations

/// Records an ALSA capture device on a thread of its own, maps every captured frame to the
/// host time at which it was captured, and finds onsets: sound after a stretch of silence,
/// timed to a fraction of a frame where its edge first reaches half its early peak.
///
/// The half-level crossing, not the first sample above the silence threshold, is what times
/// an edge: a player that resamples by a fraction of a frame (band-limited interpolation,
/// as Chorus's soft correction does) plays a step as a step slightly delayed, whose
/// pre-ringing crosses a -40 dBFS threshold up to three or four frames before the step,
/// varying with the fractional delay. The half-level point of a band-limited step is the
/// step's own time, so players that resample and players that do not are timed alike.
///
/// Recording PulseAudio's null-sink monitor this way tells when a player's sound actually
/// came out of the sink, measured outside the player. Timing comes the way ALSA offers it,
/// as for playback: after each read, `snd_pcm_status` gives a CLOCK_MONOTONIC timestamp and
/// the frames captured but not yet read, so the next frame to read was captured that many
/// frames before the timestamp. Each read gives one estimate of the host time of
/// capture frame 0; an onset is placed with the median of the estimates around it, which
/// removes the jitter of single latency reports. What this cannot remove is any constant
/// error in the capture path's own latency report (see `StartBenchmark`'s notes).
// @unchecked: the PCM and status handles are used by the capture thread while it runs, and
// otherwise (opening, the drop after `stop` has waited for the thread, deinit) by one
// thread with none running; what the capture learns is in `state`, a Mutex.
final class ALSACapture: @unchecked Sendable {
    /// Frames per read by default: 5 ms gives two hundred timestamp estimates a second.
    static let defaultPeriod: Duration = .milliseconds(5)
    /// The capture buffer: 200 ms rides out this thread being scheduled late on a busy
    /// two-core machine without an overrun.
    static let bufferDuration: Duration = .milliseconds(200)
    /// A sample louder than this (linear, full scale 1) is sound: -40 dBFS, far above the
    /// 16-bit quantisation a sound server adds, far below the test tone.
    static let silenceThreshold: Float = 0.01
    /// An onset must follow at least this much silence, so the tail of earlier sound is
    /// never taken for the start of new sound.
    static let minimumSilenceBeforeOnset: Duration = .milliseconds(100)
    /// Frames after an onset's first loud sample in which its early peak is found and its
    /// half-level crossing must lie: a millisecond, a quarter of the test tone's period.
    static let edgeFrames = 48
    /// Timestamp estimates from reads this close to an onset (either side) place it.
    static let estimateWindow: Duration = .milliseconds(250)
    /// A status timestamp further than this from the host clock read around it is not
    /// trusted (some plugins leave it at zero); the host clock is used instead.
    static let timestampTrustWindow: Duration = .milliseconds(20)
    /// Estimates kept: enough for several seconds of reads at the shortest period used.
    static let estimatesKept = 2_000

    /// Where an onset was heard.
    struct Onset {
        /// Capture frame index of the first loud sample.
        var frame: Int64
        /// Where the edge crosses half its early peak, in frames after `frame` (fractional;
        /// negative when the first loud sample is itself past half the peak).
        var edge: Double
        /// Host time at which that frame was captured.
        var hostTime: HostTime
        /// Spread (max - min) of the timestamp estimates that placed it: how much single
        /// latency reports of the capture path disagree.
        var estimateSpread: Duration
    }

    /// The capture thread's findings, shared with the benchmark thread.
    private struct State {
        var framesRead: Int64 = 0
        /// (frames read after a read, host nanoseconds estimated for capture frame 0).
        var estimates: [(frames: Int64, originNanoseconds: Int64)] = []
        var silentFrames: Int64 = 0
        var onsets: [Int64] = []
        /// Each onset's edge (see `Onset.edge`), once its following frames are read.
        var edges: [Int64: Double] = [:]
        /// The onset whose edge is being measured: the loudness of the frame before it and of
        /// the frames read since.
        var measuring: (frame: Int64, before: Float, levels: [Float])?
        /// Loudness of the last frame read.
        var lastLevel: Float = 0
        var overruns = 0
        /// Estimates before this frame are from before the last overrun: frames were lost,
        /// so their mapping from frame to host time no longer holds.
        var validFrom: Int64 = 0
        var failure: String?
    }

    let device: String
    let format: AudioFormat
    /// The period asked of the device.
    let period: Duration
    private let pcm: OpaquePointer
    private let status: OpaquePointer
    private let periodFrames: Int
    private let state = Mutex(State())
    private let running = Atomic<Bool>(false)
    private let exited = DispatchSemaphore(value: 0)

    /// Opens `device` for capture as interleaved float at `format`.
    init(device: String, format: AudioFormat, period: Duration = ALSACapture.defaultPeriod) throws {
        self.device = device
        self.period = period
        self.format = format
        chorus_alsa_quiet()
        var handle: OpaquePointer?
        var code = snd_pcm_open(&handle, device, SND_PCM_STREAM_CAPTURE, 0)
        guard code >= 0, let handle else { throw Self.failure(device, "cannot open for capture", code) }
        var configured = false
        defer { if !configured { snd_pcm_close(handle) } }

        var hw: OpaquePointer?
        guard snd_pcm_hw_params_malloc(&hw) >= 0, let hw else { throw Self.failure(device, "out of memory", -ENOMEM) }
        defer { snd_pcm_hw_params_free(hw) }
        code = snd_pcm_hw_params_any(handle, hw)
        if code >= 0 { code = snd_pcm_hw_params_set_access(handle, hw, SND_PCM_ACCESS_RW_INTERLEAVED) }
        if code >= 0 { code = snd_pcm_hw_params_set_format(handle, hw, SND_PCM_FORMAT_FLOAT_LE) }
        if code >= 0 { code = snd_pcm_hw_params_set_channels(handle, hw, UInt32(format.channels)) }
        // Exactly the rate asked: a resampler in the capture path would smear the onset.
        if code >= 0 { code = snd_pcm_hw_params_set_rate(handle, hw, UInt32(format.sampleRate), 0) }
        var bufferMicros = UInt32(Self.bufferDuration.microseconds)
        var periodMicros = UInt32(period.microseconds)
        if code >= 0 { code = snd_pcm_hw_params_set_buffer_time_near(handle, hw, &bufferMicros, nil) }
        if code >= 0 { code = snd_pcm_hw_params_set_period_time_near(handle, hw, &periodMicros, nil) }
        if code >= 0 { code = snd_pcm_hw_params(handle, hw) }
        guard code >= 0 else { throw Self.failure(device, "cannot capture \(format)", code) }
        var period: snd_pcm_uframes_t = 0
        snd_pcm_hw_params_get_period_size(hw, &period, nil)
        periodFrames = max(1, Int(period))

        var sw: OpaquePointer?
        guard snd_pcm_sw_params_malloc(&sw) >= 0, let sw else { throw Self.failure(device, "out of memory", -ENOMEM) }
        defer { snd_pcm_sw_params_free(sw) }
        code = snd_pcm_sw_params_current(handle, sw)
        if code >= 0 { code = snd_pcm_sw_params_set_tstamp_mode(handle, sw, SND_PCM_TSTAMP_ENABLE) }
        if code >= 0 { code = snd_pcm_sw_params_set_tstamp_type(handle, sw, SND_PCM_TSTAMP_TYPE_MONOTONIC) }
        if code >= 0 { code = snd_pcm_sw_params(handle, sw) }
        guard code >= 0 else { throw Self.failure(device, "cannot set software parameters", code) }
        var statusHandle: OpaquePointer?
        guard snd_pcm_status_malloc(&statusHandle) >= 0, let statusHandle else { throw Self.failure(device, "out of memory", -ENOMEM) }
        code = snd_pcm_prepare(handle)
        guard code >= 0 else {
            snd_pcm_status_free(statusHandle)
            throw Self.failure(device, "cannot prepare", code)
        }
        pcm = handle
        status = statusHandle
        configured = true
    }

    deinit {
        stop()
        snd_pcm_close(pcm)
        snd_pcm_status_free(status)
    }

    private static func failure(_ device: String, _ what: String, _ code: Int32) -> BenchError {
        BenchError("capture \(device): \(what): \(String(cString: snd_strerror(code)))")
    }

    /// Starts recording.
    func start() {
        guard !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let thread = Thread { [self] in
            record()
            exited.signal()
        }
        thread.name = "chorus-bench.capture"
        thread.qualityOfService = .userInteractive
        thread.start()
    }

    /// Stops recording and waits for the thread, which notices within one period (a PCM
    /// must not be dropped from another thread while a read is in progress on it).
    func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        exited.wait()
        snd_pcm_drop(pcm)
    }

    /// Frames captured so far: onsets after this mark are new.
    var mark: Int64 { state.withLockAnnotated { $0.framesRead } }

    /// Overruns recovered so far.
    var overruns: Int { state.withLockAnnotated { $0.overruns } }

    /// Waits for the first onset after capture frame `mark` and for the reads around it,
    /// then places it in host time. Nil when none came within `timeout`.
    func waitForOnset(after mark: Int64, timeout: Duration) throws -> Onset? {
        let deadline = ContinuousClock.now + timeout
        let window = format.frames(in: Self.estimateWindow)
        while ContinuousClock.now < deadline {
            let onset: Onset? = try state.withLockAnnotated { state throws(BenchError) in
                if let failure = state.failure { throw BenchError(failure) }
                guard let frame = state.onsets.first(where: { $0 > mark }), state.framesRead >= frame + window,
                      let edge = state.edges[frame] else { return nil }
                let nearby = state.estimates
                    .filter { $0.frames >= max(frame - window, state.validFrom) && $0.frames <= frame + window }
                    .map { Double($0.originNanoseconds) }
                guard !nearby.isEmpty else { return nil }
                let origins = Statistics(nearby)
                return Onset(frame: frame, edge: edge,
                             hostTime: HostTime(nanoseconds: Int64(origins.median + edge * 1e9 / Double(format.sampleRate)))
                                + format.duration(ofFrames: frame),
                             estimateSpread: .nanoseconds(Int64(origins.maximum - origins.minimum)))
            }
            if let onset { return onset }
            usleep(UInt32(period.microseconds))
        }
        return nil
    }

    // MARK: - The capture thread

    private func record() {
        let channels = format.channels
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: periodFrames * channels)
        defer { buffer.deallocate() }
        let minimumSilence = format.frames(in: Self.minimumSilenceBeforeOnset)
        snd_pcm_start(pcm)
        while running.load(ordering: .acquiring) {
            let got = snd_pcm_readi(pcm, buffer, snd_pcm_uframes_t(periodFrames))
            if got < 0 {
                let code = Int32(got)
                if code == chorus_eagain() || code == chorus_eintr() { continue }
                if snd_pcm_recover(pcm, code, 1) < 0 {
                    state.withLockAnnotated { $0.failure = "capture \(device): \(String(cString: snd_strerror(code)))" }
                    return
                }
                snd_pcm_start(pcm)
                state.withLockAnnotated { state in
                    state.overruns += 1
                    state.validFrom = state.framesRead
                    state.silentFrames = 0
                }
                continue
            }
            let frames = Int(got)
            let origin = captureOrigin()
            state.withLockAnnotated { state in
                for index in 0..<frames {
                    var level: Float = 0
                    for channel in 0..<channels { level = max(level, abs(buffer[index * channels + channel])) }
                    let frame = state.framesRead + Int64(index)
                    if var measuring = state.measuring {
                        measuring.levels.append(level)
                        state.measuring = measuring
                        if measuring.levels.count >= Self.edgeFrames {
                            state.edges[measuring.frame] = Self.edge(before: measuring.before, levels: measuring.levels)
                            state.measuring = nil
                        }
                    }
                    if level > Self.silenceThreshold {
                        if state.silentFrames >= minimumSilence {
                            state.onsets.append(frame)
                            state.measuring = (frame, state.lastLevel, [level])
                        }
                        state.silentFrames = 0
                    } else {
                        state.silentFrames += 1
                    }
                    state.lastLevel = level
                }
                state.framesRead += Int64(frames)
                if let origin {
                    state.estimates.append((state.framesRead, origin - format.nanoseconds(ofFrames: state.framesRead)))
                    if state.estimates.count > Self.estimatesKept { state.estimates.removeFirst(state.estimates.count / 2) }
                }
            }
        }
    }

    /// Where a rising edge crosses half its peak, in frames from `levels[0]` (the first loud
    /// frame), interpolated linearly between the frames either side of the crossing, plus
    /// half a frame: a step from silence straight to full level at frame n crosses half
    /// way between frames n-1 and n, and is timed at n, its first loud frame, as before.
    static func edge(before: Float, levels: [Float]) -> Double {
        guard let peak = levels.max(), peak > 0 else { return 0 }
        let half = peak / 2
        var previous = before
        for (index, level) in levels.enumerated() {
            if level >= half {
                let rise = level - previous
                let fraction = rise > 0 ? Double((half - previous) / rise) : 1
                return Double(index) - 0.5 + fraction
            }
            previous = level
        }
        return 0
    }

    /// The host time, in nanoseconds, at which the next frame to read was captured: the
    /// status timestamp less the frames waiting before it. Nil when the device gave no status.
    ///
    /// The frames waiting are the larger of the reported delay and the frames available:
    /// ALSA's pulse plugin reports a capture delay clamped at zero when PulseAudio's own
    /// figure is negative, as it is for a monitor source (the monitor receives a sink's
    /// audio before the sink's clock presents it), while the available frames are certainly
    /// captured already.
    private func captureOrigin() -> Int64? {
        let before = HostTime.now()
        guard snd_pcm_status(pcm, status) >= 0 else { return nil }
        let after = HostTime.now()
        var stamp = timespec()
        snd_pcm_status_get_htstamp(status, &stamp)
        var base = HostTime(nanoseconds: Int64(stamp.tv_sec) * 1_000_000_000 + Int64(stamp.tv_nsec))
        if base > after || before - base > Self.timestampTrustWindow {
            base = before + (after - before) / 2
        }
        let waiting = max(Int64(snd_pcm_status_get_delay(status)), Int64(snd_pcm_status_get_avail(status)))
        return (base - format.duration(ofFrames: max(0, waiting))).nanoseconds
    }
}
