import Foundation
import MediaClock
import Synchronization
internal import CALSA

/// A real sound device through ALSA (and through ALSA's `pulse` plugin, a PulseAudio or
/// PipeWire server).
///
/// Opened for interleaved float with monotonic timestamps. Timing comes from
/// `snd_pcm_status` each period: the status timestamp (CLOCK_MONOTONIC) and the reported
/// delay in frames, which the renderer plays out at the device's learned rate to find when
/// the next written frame will be heard. Underruns are recovered with `snd_pcm_recover` and
/// counted.
// @unchecked: as `AudioOutput` requires, `open` and `close` run while no render thread uses
// the output, and everything else on the render thread alone, so the PCM handles and the
// timing state have one thread at a time; other threads read only atomics.
public final class ALSAOutput: AudioOutput, @unchecked Sendable {
    /// The buffer asked of the device: 100 ms rides out a render thread scheduled late on a
    /// loaded two-core machine, and is still a small share of a sound server's own latency.
    public static let bufferDuration: Duration = .milliseconds(100)
    /// The period asked of the device: 10 ms, so timing is re-read a hundred times a second.
    public static let periodDuration: Duration = .milliseconds(10)
    /// How much plain play writes at a time (no schedule needs the timing every period):
    /// four periods, so the thread wakes 25 times a second instead of 100, and the device
    /// still holds at least 60 ms when it is written to, more than a loaded machine's
    /// scheduling delays. Through PulseAudio each write and each wake-up costs system calls
    /// in the plugin and the server; at 10 ms, `chorus play` took twice ffplay's CPU.
    public static let relaxedWriteDuration: Duration = .milliseconds(40)
    /// A status timestamp older than this (on host time, or failing that on the kernel's
    /// clock) is not trusted; the host clock read next to the status call is used instead
    /// (some plugins leave the timestamp at zero).
    static let timestampTrustWindow: Duration = .milliseconds(20)
    /// A stream that frees no period for this long, while frames wait in it, is taken for
    /// dead and opened afresh: five buffers' worth. A sound server's plugin can be left with
    /// a stream the server no longer plays (seen through PulseAudio on a loaded machine,
    /// after underruns made the plugin re-create its stream: the stream's sink input was
    /// gone, or empty while the plugin waited for the server to ask for more), and then
    /// reports neither space nor an error. A card that stops would be caught the same way.
    static let stallLimit: Duration = .milliseconds(500)
    /// For this long after opening, a stream that takes nothing is not judged: an idle
    /// PulseAudio sink holds a new stream's first writes for up to a second while it wakes.
    static let stallGrace: Duration = .seconds(2)
    /// How long the render thread sleeps when the device woke it with no period free: a
    /// tenth of a period, so a spurious wake-up costs little and a broken one cannot spin.
    static let wakeWithoutSpaceBackoff: Duration = .milliseconds(1)

    public let device: String
    public var name: String { "alsa:\(device)" }
    public private(set) var format = AudioFormat.fallback
    public private(set) var periodFrames = 480
    public private(set) var bufferFrames = 4800
    public let isRealtime = true
    private let underruns = Atomic<Int>(0)
    /// What `open` was asked for, to open a dead stream afresh the same way.
    private var openedPreferred: AudioFormat?
    /// When the device last had a period free (or was opened): the render thread's alone.
    private var lastProgress = HostTime(nanoseconds: 0)
    /// Underruns ALSA reported, and the moves of a sound server's stream its figures showed
    /// (the server ran dry: the pulse plugin does not report that as an underrun, yet the
    /// stream plays later by the gap).
    public var underrunCount: Int { underruns.load(ordering: .relaxed) + (probe?.timelineMoves ?? 0) }
    private var pcm: OpaquePointer?
    private var status: OpaquePointer?
    /// Frames written and when, for the PulseAudio probe.
    private let written = PulseLatencyProbe.WriteCounter()
    /// Asks PulseAudio for this stream's latency when the device is a plugin (see
    /// `PulseLatencyProbe`); nil for a sound card.
    private var probe: PulseLatencyProbe?
    /// The probe's newest point as last read: the probe never takes a point back, so this
    /// stands in when its lock is busy (the render thread does not wait for it).
    private var probePoint: PulseLatencyProbe.Point?
    /// Points of the probe about frames before this index describe a stream since dropped
    /// (a flush or an underrun makes the plugin start a new one).
    private let pointsValidFrom = Atomic<Int64>(0)
    /// Whether the last report came from the probe, and how often the source changed.
    private(set) var isTimedByServer = false
    private let sourceChanges = Atomic<Int>(0)
    public var timingSourceChanges: Int { sourceChanges.load(ordering: .relaxed) }
    /// A probe point older than this is not used: the server stopped answering quickly.
    static let probePointLifetime: Duration = .milliseconds(500)
    /// How long after opening a scheduled start may wait for the probe's first point: it
    /// comes within a few hundred ms of the stream starting when the server answers at all;
    /// past this the plugin's own reports stand (a server too slow to answer, or a stream it
    /// cannot tell apart).
    static let probeSettlingLimit: Duration = .seconds(1)
    /// When the device was opened (render thread reads it).
    private var openedAt = HostTime(nanoseconds: 0)

    /// Settled once the server's figures time the stream, or when there is no server to ask,
    /// or when it has not answered within `probeSettlingLimit`.
    public var isTimingSettled: Bool {
        probe == nil || isTimedByServer || HostTime.now() - openedAt > Self.probeSettlingLimit
    }

    public init(device: String = "default") { self.device = device }

    deinit { close() }

    public func open(preferred: AudioFormat) throws(MediaError) {
        chorus_alsa_quiet()
        var handle: OpaquePointer?
        var code = snd_pcm_open(&handle, device, SND_PCM_STREAM_PLAYBACK, 0)
        guard code >= 0, let handle else { throw failure("cannot open", code) }
        pcm = handle
        var hw: OpaquePointer?
        guard snd_pcm_hw_params_malloc(&hw) >= 0, let hw else { throw failure("out of memory", -ENOMEM) }
        defer { snd_pcm_hw_params_free(hw) }
        code = snd_pcm_hw_params_any(handle, hw)
        if code >= 0 { code = snd_pcm_hw_params_set_access(handle, hw, SND_PCM_ACCESS_RW_INTERLEAVED) }
        if code >= 0 { code = snd_pcm_hw_params_set_format(handle, hw, SND_PCM_FORMAT_FLOAT_LE) }
        guard code >= 0 else { close(); throw failure("does not take 32-bit float samples", code) }
        var channels = UInt32(preferred.channels)
        code = snd_pcm_hw_params_set_channels_near(handle, hw, &channels)
        var rate = UInt32(preferred.sampleRate)
        if code >= 0 { code = snd_pcm_hw_params_set_rate_near(handle, hw, &rate, nil) }
        var bufferMicros = UInt32(Self.bufferDuration.components.attoseconds / 1_000_000_000_000)
        var periodMicros = UInt32(Self.periodDuration.components.attoseconds / 1_000_000_000_000)
        if code >= 0 { code = snd_pcm_hw_params_set_buffer_time_near(handle, hw, &bufferMicros, nil) }
        if code >= 0 { code = snd_pcm_hw_params_set_period_time_near(handle, hw, &periodMicros, nil) }
        if code >= 0 { code = snd_pcm_hw_params(handle, hw) }
        guard code >= 0 else { close(); throw failure("cannot configure \(preferred)", code) }
        var period: snd_pcm_uframes_t = 0
        var buffer: snd_pcm_uframes_t = 0
        snd_pcm_hw_params_get_period_size(hw, &period, nil)
        snd_pcm_hw_params_get_buffer_size(hw, &buffer)
        format = AudioFormat(sampleRate: Int(rate), channels: Int(channels))
        periodFrames = max(1, Int(period))
        bufferFrames = max(periodFrames, Int(buffer))

        var sw: OpaquePointer?
        guard snd_pcm_sw_params_malloc(&sw) >= 0, let sw else { close(); throw failure("out of memory", -ENOMEM) }
        defer { snd_pcm_sw_params_free(sw) }
        code = snd_pcm_sw_params_current(handle, sw)
        if code >= 0 { code = snd_pcm_sw_params_set_avail_min(handle, sw, snd_pcm_uframes_t(periodFrames)) }
        // Start as soon as the first period is queued, so start time is what timing predicts.
        if code >= 0 { code = snd_pcm_sw_params_set_start_threshold(handle, sw, snd_pcm_uframes_t(periodFrames)) }
        if code >= 0 { code = snd_pcm_sw_params_set_tstamp_mode(handle, sw, SND_PCM_TSTAMP_ENABLE) }
        if code >= 0 { code = snd_pcm_sw_params_set_tstamp_type(handle, sw, SND_PCM_TSTAMP_TYPE_MONOTONIC) }
        if code >= 0 { code = snd_pcm_sw_params(handle, sw) }
        guard code >= 0 else { close(); throw failure("cannot set software parameters", code) }
        var statusHandle: OpaquePointer?
        guard snd_pcm_status_malloc(&statusHandle) >= 0, let statusHandle else { close(); throw failure("out of memory", -ENOMEM) }
        status = statusHandle
        code = snd_pcm_prepare(handle)
        guard code >= 0 else { close(); throw failure("cannot prepare", code) }
        // A plugin (PulseAudio's, in practice) has a server behind it to ask; a card does not.
        openedAt = .now()
        if snd_pcm_type(handle) == SND_PCM_TYPE_IOPLUG {
            probe = PulseLatencyProbe(counter: written, sampleRate: format.sampleRate)
        }
        openedPreferred = preferred
        lastProgress = openedAt
    }

    private func failure(_ what: String, _ code: Int32) -> MediaError {
        .outputFailure(device: name, reason: "\(what): \(String(cString: snd_strerror(code)))")
    }

    public var relaxedWriteFrames: Int {
        min(bufferFrames / 2, max(periodFrames, Int(format.frames(in: Self.relaxedWriteDuration))))
    }

    public func setTimingPrecision(_ precision: TimingPrecision) {
        probe?.isRelaxed = precision == .relaxed
    }

    public func waitUntilWritable(frames: Int, timeout: Duration) -> Int {
        guard pcm != nil else {
            // Closed after a dead stream could not be opened again: wait, then try again,
            // rather than spin (the render thread may run at real-time priority).
            guard openedPreferred != nil else { return 0 }
            var request = timespec(tv_sec: 0, tv_nsec: Int(Self.periodDuration.components.attoseconds / 1_000_000_000))
            nanosleep(&request, nil)
            if HostTime.now() - lastProgress > Self.stallLimit { reopenStalledStream() }
            return 0
        }
        let available = waitForSpace(frames: frames, timeout: timeout)
        let now = HostTime.now()
        if available >= periodFrames {
            lastProgress = now
        } else if now - lastProgress > Self.stallLimit && now - openedAt > Self.stallGrace {
            reopenStalledStream()
            return 0
        }
        return available
    }

    /// Closes a stream that stopped taking frames and opens the device again as before. The
    /// frames queued in it are lost: counted as an underrun, so the renderer places its
    /// content afresh on the new stream's timing.
    private func reopenStalledStream() {
        guard let preferred = openedPreferred else { return }
        let previous = format
        // The retiring probe's moves stay counted, so the underrun count never goes back.
        underruns.add(1 + (probe?.timelineMoves ?? 0), ordering: .relaxed)
        close()
        openedPreferred = preferred
        do {
            try open(preferred: preferred)
            // The ring and the renderer's buffers were made for the first format.
            if format != previous { close(); openedPreferred = preferred; format = previous }
        } catch {
            close()
            openedPreferred = preferred
            format = previous
        }
        lastProgress = .now()
        pointsValidFrom.store(written.frames.load(ordering: .relaxed), ordering: .relaxed)
    }

    private func waitForSpace(frames: Int, timeout: Duration) -> Int {
        guard let pcm else { return 0 }
        var available = snd_pcm_avail_update(pcm)
        if available < 0 {
            recover(Int32(available))
            available = snd_pcm_avail_update(pcm)
        }
        let wanted = min(max(frames, periodFrames), bufferFrames)
        if available >= wanted { return Int(available) }
        if wanted > periodFrames && available >= 0 {
            // The device wakes a waiter every period; for a larger write the thread sleeps
            // until about that much has played instead (never past `timeout`, so a stop is
            // still seen promptly), then waits for the device as usual.
            let missing = Double(wanted - Int(available)) / Double(max(1, format.sampleRate))
            let seconds = min(missing, Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
            var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
            nanosleep(&request, nil)
            available = snd_pcm_avail_update(pcm)
            if available >= wanted { return Int(available) }
            if available < 0 { recover(Int32(available)); return 0 }
            if available >= periodFrames { return Int(available) }
        }
        let millis = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        let waited = snd_pcm_wait(pcm, max(1, millis))
        if waited < 0 { recover(waited) }
        available = snd_pcm_avail_update(pcm)
        if available < 0 { recover(Int32(available)); return 0 }
        if available < periodFrames {
            // Woken with no period free: a plugin whose stream has gone bad can return at
            // once, every time. Never spin on it (this thread may be real-time and would
            // starve the sound server itself); `stallLimit` then opens the stream afresh.
            var request = timespec(tv_sec: 0, tv_nsec: Int(Self.wakeWithoutSpaceBackoff.components.attoseconds / 1_000_000_000))
            nanosleep(&request, nil)
        }
        return Int(available)
    }

    public func presentationTimestamp() -> PresentationTimestamp {
        guard let pcm, let status, snd_pcm_status(pcm, status) >= 0 else { return PresentationTimestamp(host: .now()) }
        let now = HostTime.now()
        let state = snd_pcm_status_get_state(status)
        let running = state == SND_PCM_STATE_RUNNING || state == SND_PCM_STATE_DRAINING
        let fromProbe = running ? probeReport(now: now) : nil
        if (fromProbe != nil) != isTimedByServer {
            isTimedByServer = fromProbe != nil
            sourceChanges.add(1, ordering: .relaxed)
        }
        if let fromProbe { return fromProbe }
        var stamp = timespec()
        snd_pcm_status_get_htstamp(status, &stamp)
        let stampNanoseconds = Int128(stamp.tv_sec) * 1_000_000_000 + Int128(stamp.tv_nsec)
        var base = HostTime(nanoseconds: Int64(clamping: stampNanoseconds))
        if base > now || now - base > Self.timestampTrustWindow {
            // Not a stamp on host time. A sound card's driver stamps in the kernel's own
            // time, which is not the process's when a tool like libfaketime moves its clock:
            // then the stamp's age carries over. Else (a zero stamp) the host clock read
            // next to the status call stands in.
            base = KernelClock.hostTime(ofStamp: stampNanoseconds, on: CLOCK_MONOTONIC, maximumAge: Self.timestampTrustWindow) ?? now
        }
        let delay: Int64
        if running {
            delay = Int64(snd_pcm_status_get_delay(status))
        } else {
            // Not started yet: what is queued plays once the start threshold is reached.
            delay = Int64(bufferFrames) - Int64(snd_pcm_status_get_avail(status))
        }
        return PresentationTimestamp(host: base, queuedFrames: Double(max(0, delay)), isRunning: running)
    }

    /// When the next frame will be heard by the PulseAudio server's own figures: the newest
    /// probe point, with the frames written since it queued behind its own.
    private func probeReport(now: HostTime) -> PresentationTimestamp? {
        if let point = probe?.point { probePoint = point }
        guard let point = probePoint, point.frames >= pointsValidFrom.load(ordering: .relaxed),
              now - point.answeredAt < Self.probePointLifetime else { return nil }
        let frames = written.frames.load(ordering: .relaxed) - point.frames
        return PresentationTimestamp(host: point.host, queuedFrames: point.queuedFrames + Double(frames))
    }

    public func write(_ samples: UnsafePointer<Float>, frames: Int) -> Int {
        guard let pcm else { return frames }
        return written.write {
            var done = 0
            var attempts = 0
            while done < frames && attempts < 4 {
                let count = snd_pcm_writei(pcm, samples + done * format.channels, snd_pcm_uframes_t(frames - done))
                if count < 0 {
                    attempts += 1
                    recover(Int32(count))
                    continue
                }
                done += Int(count)
            }
            return done
        }
    }

    private func recover(_ code: Int32) {
        guard let pcm else { return }
        if code == chorus_epipe() || code == chorus_estrpipe() { underruns.add(1, ordering: .relaxed) }
        if code == chorus_eagain() || code == chorus_eintr() { return }
        snd_pcm_recover(pcm, code, 1)
        pointsValidFrom.store(written.frames.load(ordering: .relaxed), ordering: .relaxed)
        probe?.streamRestarted(atFrame: written.frames.load(ordering: .relaxed))
    }

    public func flush() {
        guard let pcm else { return }
        snd_pcm_drop(pcm)
        snd_pcm_prepare(pcm)
        pointsValidFrom.store(written.frames.load(ordering: .relaxed), ordering: .relaxed)
        probe?.streamRestarted(atFrame: written.frames.load(ordering: .relaxed))
    }

    public func close() {
        openedPreferred = nil
        probe?.stop()
        probe = nil
        probePoint = nil
        if let pcm { snd_pcm_close(pcm) }
        pcm = nil
        if let status { snd_pcm_status_free(status) }
        status = nil
    }
}
