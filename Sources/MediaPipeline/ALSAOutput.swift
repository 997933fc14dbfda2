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
/// counted. A stream that stops taking frames (`StallWatch`) is replaced by a fresh one,
/// opened on a thread of the output's own (`StreamReopener`) while the render thread waits
/// without blocking, and counted as a restart.
// @unchecked: as `AudioOutput` requires, `open` and `close` run while no render thread uses
// the output, and everything else on the render thread alone, so the stream and the timing
// state have one thread at a time; the reopener's threads meet the render thread only
// through `StreamReopener`'s try-locked exchange, and other threads read only atomics.
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
    /// How long the render thread sleeps when the device woke it with no period free: a
    /// tenth of a period, so a spurious wake-up costs little and a broken one cannot spin.
    static let wakeWithoutSpaceBackoff: Duration = .milliseconds(1)
    /// While a stalled stream is replaced, how long the render thread sleeps between looks
    /// for the fresh one: a period, so the new stream is taken up within a period of being
    /// ready, and a real-time thread with nothing to play does not spin meanwhile.
    static let restartPollInterval: Duration = periodDuration
    /// How long the reopening thread waits after a failed open before trying again: a sound
    /// server that is restarting, or a card still held by the stream being closed (a card's
    /// device opens once at a time), is back in that time or longer; four tries a second
    /// cost a server nothing and take the device back within a quarter of a second.
    static let reopenRetryInterval: Duration = .milliseconds(250)

    public let device: String
    public var name: String { "alsa:\(device)" }
    public private(set) var format = AudioFormat.fallback
    public private(set) var periodFrames = 480
    public private(set) var bufferFrames = 4800
    public let isRealtime = true
    /// False when the device is a sound server's plugin (PulseAudio's, in practice). The
    /// server's main thread, which serves the plugin's stream (connections, requests for
    /// data, a stream's creation and removal), is an ordinary thread, and so is the
    /// plugin's own client thread: a render thread at real-time priority runs ahead of
    /// both. Under load (`chorus-bench sync --scenario snapcast --load`) three followers'
    /// render threads at SCHED_FIFO 4 left the server unable to serve their streams for
    /// most of the run (0 to 8 of 200 clicks heard per sink, in five runs; the server's
    /// main thread was seen waiting on its sink thread while `pactl` timed out); as
    /// ordinary threads, 161 to 179. The server holds the real deadline, and the 100 ms
    /// buffer leaves the render thread time enough at ordinary priority.
    public private(set) var wantsRealtimePriority = true
    /// ALSA's configuration to open `device` in, instead of the system's (a test's device of
    /// its own); nil for the system's.
    let configuration: String?
    /// The PulseAudio server that configuration's device plays to, for the probe; nil for
    /// libpulse's choice, as the plugin's.
    let pulseServer: String?
    /// How a retired stream is closed, on a thread of its own (a test holds it, as a sound
    /// server that never answers would).
    private let closeRetired: @Sendable (PCMStream) -> Void
    private let underruns = Atomic<Int>(0)
    private let restarts = Atomic<Int>(0)
    /// Underruns ALSA reported, and the moves of a sound server's stream its figures showed
    /// (the server ran dry: the pulse plugin does not report that as an underrun, yet the
    /// stream plays later by the gap).
    public var underrunCount: Int { underruns.load(ordering: .relaxed) }
    /// Streams given up because they stopped taking frames, each replaced by a fresh one.
    public var streamRestartCount: Int { restarts.load(ordering: .relaxed) }
    /// The stream played; nil while a stalled one is being replaced.
    private var stream: PCMStream?
    /// A stalled stream the reopener could not take yet (its lock was busy).
    private var retiring: PCMStream?
    /// Opens a fresh stream when one stalls; nil while closed.
    private var reopener: StreamReopener<PCMStream>?
    /// Whether the stream is still taking frames.
    private var stall = StallWatch(openedAt: HostTime(nanoseconds: 0))
    /// Frames written and when, for the PulseAudio probe.
    private let written = PulseLatencyProbe.WriteCounter()
    /// The stream's probe's timeline moves already counted as underruns.
    private var probeMovesCounted = 0
    /// Whether the timing is needed only now and then, for a fresh stream's probe too.
    private var isRelaxed = false
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
    /// When the stream played was opened (render thread reads it).
    private var openedAt = HostTime(nanoseconds: 0)

    /// Settled once the server's figures time the stream, or when there is no server to ask,
    /// or when it has not answered within `probeSettlingLimit`.
    public var isTimingSettled: Bool {
        stream?.probe == nil || isTimedByServer || HostTime.now() - openedAt > Self.probeSettlingLimit
    }

    public convenience init(device: String = "default") {
        self.init(device: device, configuration: nil)
    }

    /// An output for `device` as ALSA's `configuration` defines it (nil: the system's),
    /// playing to `pulseServer` when that is a PulseAudio plugin's, whose stalled streams are
    /// closed by `closeRetired` (by default, closed).
    init(device: String, configuration: String?, pulseServer: String? = nil,
         closeRetired: @escaping @Sendable (PCMStream) -> Void = { $0.close() }) {
        self.device = device
        self.configuration = configuration
        self.pulseServer = pulseServer
        self.closeRetired = closeRetired
    }

    deinit { close() }

    public func open(preferred: AudioFormat) throws(MediaError) {
        let opened = try Self.openStream(device: device, configuration: configuration, pulseServer: pulseServer,
                                         preferred: preferred, name: name, counter: written)
        format = opened.format
        periodFrames = opened.periodFrames
        bufferFrames = opened.bufferFrames
        wantsRealtimePriority = !opened.isPlugin
        install(opened)
        // A fresh stream must be what the ring and the renderer's buffers were made for.
        let (device, configuration, pulseServer, name, counter) = (device, configuration, pulseServer, name, written)
        let (format, periodFrames) = (format, periodFrames)
        reopener = StreamReopener(label: "chorus.alsa.reopen", retryInterval: Self.reopenRetryInterval, open: {
            let fresh = try Self.openStream(device: device, configuration: configuration, pulseServer: pulseServer,
                                            preferred: preferred, name: name, counter: counter)
            guard fresh.format == format, fresh.periodFrames == periodFrames else {
                fresh.close()
                throw MediaError.outputFailure(device: name, reason: "reopened as \(fresh.format) in periods of \(fresh.periodFrames) frames")
            }
            return fresh
        }, close: closeRetired)
    }

    /// Opens the device and, for a plugin, starts its probe.
    private static func openStream(device: String, configuration: String?, pulseServer: String?, preferred: AudioFormat,
                                   name: String, counter: PulseLatencyProbe.WriteCounter) throws(MediaError) -> PCMStream {
        var opened = try PCMStream.open(device: device, configuration: configuration, preferred: preferred,
                                        bufferDuration: bufferDuration, periodDuration: periodDuration, name: name)
        if opened.isPlugin {
            opened.probe = PulseLatencyProbe(counter: counter, sampleRate: opened.format.sampleRate, server: pulseServer)
        }
        return opened
    }

    /// Starts playing `opened`: its timing is new, and its probe's points are about it alone.
    private func install(_ opened: PCMStream) {
        stream = opened
        opened.probe?.isRelaxed = isRelaxed
        opened.probe?.streamRestarted(atFrame: written.frames.load(ordering: .relaxed))
        probeMovesCounted = 0
        probePoint = nil
        pointsValidFrom.store(written.frames.load(ordering: .relaxed), ordering: .relaxed)
        openedAt = .now()
        stall = StallWatch(openedAt: openedAt)
    }

    public var relaxedWriteFrames: Int {
        min(bufferFrames / 2, max(periodFrames, Int(format.frames(in: Self.relaxedWriteDuration))))
    }

    public func setTimingPrecision(_ precision: TimingPrecision) {
        isRelaxed = precision == .relaxed
        stream?.probe?.isRelaxed = isRelaxed
    }

    /// Ends the sleep before a large write early (`interruptWait`).
    private let largeWriteWake = WakeSignal()

    public func interruptWait() { largeWriteWake.signal() }

    public func waitUntilWritable(frames: Int, timeout: Duration) -> Int {
        countProbeMoves()
        if stream == nil && !takeFreshStream() {
            // A stalled stream is being replaced: nothing to play into yet. Look again in a
            // period rather than spin (the render thread may run at real-time priority).
            Self.sleep(Self.restartPollInterval)
            return 0
        }
        let available = waitForSpace(frames: frames, timeout: timeout)
        guard stream != nil else { return 0 }
        if stall.isStalled(periodFree: available >= periodFrames, at: .now()) {
            retireStalledStream()
            return 0
        }
        return available
    }

    /// Hands a stream that stopped taking frames to the reopener, which closes it and opens
    /// the device afresh off this thread. Its queued frames are lost: counted as a restart,
    /// so the renderer places its content afresh on the new stream's timing.
    private func retireStalledStream() {
        guard let stalled = stream else { return }
        countProbeMoves()
        stream = nil
        restarts.add(1, ordering: .relaxed)
        if reopener?.retire(stalled) != true { retiring = stalled }
    }

    /// Takes the reopener's fresh stream, if it is ready (never waits); first hands over a
    /// stalled stream the reopener could not yet take.
    private func takeFreshStream() -> Bool {
        guard let reopener else { return false }
        if let stalled = retiring {
            guard reopener.retire(stalled) else { return false }
            retiring = nil
        }
        guard let fresh = reopener.takeReady() else { return false }
        install(fresh)
        return true
    }

    /// Counts the probe's newly confirmed moves of the stream's timeline as underruns, so
    /// `underrunCount` is one atomic any thread may read.
    private func countProbeMoves() {
        guard let moves = stream?.probe?.timelineMoves, moves != probeMovesCounted else { return }
        underruns.add(moves - probeMovesCounted, ordering: .relaxed)
        probeMovesCounted = moves
    }

    private static func sleep(_ duration: Duration) {
        var request = timespec(tv_sec: Int(duration.components.seconds),
                               tv_nsec: Int(duration.components.attoseconds / 1_000_000_000))
        nanosleep(&request, nil)
    }

    private func waitForSpace(frames: Int, timeout: Duration) -> Int {
        guard let stream else { return 0 }
        let pcm = stream.handle
        var available = snd_pcm_avail_update(pcm)
        if available < 0 {
            recover(Int32(available))
            available = snd_pcm_avail_update(pcm)
        }
        let wanted = min(max(frames, stream.periodFrames), stream.bufferFrames)
        if available >= wanted { return Int(available) }
        if wanted > stream.periodFrames && available >= 0 {
            // The device wakes a waiter every period; for a larger write the thread sleeps
            // until about that much has played instead (never past `timeout`, so a stop is
            // still seen promptly), then waits for the device as usual.
            let missing = Double(wanted - Int(available)) / Double(max(1, format.sampleRate))
            let seconds = min(missing, Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
            let interrupted = largeWriteWake.wait(timeout: .nanoseconds(Int64(seconds * 1e9)))
            available = snd_pcm_avail_update(pcm)
            if available >= wanted { return Int(available) }
            if available < 0 { recover(Int32(available)); return 0 }
            // Woken for a new control: back to the render thread with what is free now.
            if available >= stream.periodFrames || interrupted { return Int(available) }
        }
        let millis = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        let waited = snd_pcm_wait(pcm, max(1, millis))
        if waited < 0 { recover(waited) }
        available = snd_pcm_avail_update(pcm)
        if available < 0 { recover(Int32(available)); return 0 }
        if available < stream.periodFrames {
            // Woken with no period free: a plugin whose stream has gone bad can return at
            // once, every time. Never spin on it (this thread may be real-time and would
            // starve the sound server itself); `StallWatch` then has the stream replaced.
            Self.sleep(Self.wakeWithoutSpaceBackoff)
        }
        return Int(available)
    }

    public func presentationTimestamp() -> PresentationTimestamp {
        guard let stream, snd_pcm_status(stream.handle, stream.status) >= 0 else { return PresentationTimestamp(host: .now()) }
        let status = stream.status
        let now = HostTime.now()
        let state = snd_pcm_status_get_state(status)
        let running = state == SND_PCM_STATE_RUNNING || state == SND_PCM_STATE_DRAINING
        let fromProbe = running ? probeReport(stream.probe, now: now) : nil
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
            delay = Int64(stream.bufferFrames) - Int64(snd_pcm_status_get_avail(status))
        }
        return PresentationTimestamp(host: base, queuedFrames: Double(max(0, delay)), isRunning: running)
    }

    /// When the next frame will be heard by the PulseAudio server's own figures: the newest
    /// probe point, with the frames written since it queued behind its own.
    private func probeReport(_ probe: PulseLatencyProbe?, now: HostTime) -> PresentationTimestamp? {
        if let point = probe?.point { probePoint = point }
        guard let point = probePoint, point.frames >= pointsValidFrom.load(ordering: .relaxed),
              now - point.answeredAt < Self.probePointLifetime else { return nil }
        let frames = written.frames.load(ordering: .relaxed) - point.frames
        return PresentationTimestamp(host: point.host, queuedFrames: point.queuedFrames + Double(frames))
    }

    public func write(_ samples: UnsafePointer<Float>, frames: Int) -> Int {
        guard let pcm = stream?.handle else { return frames }
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
        guard let stream else { return }
        if code == chorus_epipe() || code == chorus_estrpipe() { underruns.add(1, ordering: .relaxed) }
        if code == chorus_eagain() || code == chorus_eintr() { return }
        snd_pcm_recover(stream.handle, code, 1)
        pointsValidFrom.store(written.frames.load(ordering: .relaxed), ordering: .relaxed)
        stream.probe?.streamRestarted(atFrame: written.frames.load(ordering: .relaxed))
    }

    public func flush() {
        guard let stream else { return }
        snd_pcm_drop(stream.handle)
        snd_pcm_prepare(stream.handle)
        pointsValidFrom.store(written.frames.load(ordering: .relaxed), ordering: .relaxed)
        stream.probe?.streamRestarted(atFrame: written.frames.load(ordering: .relaxed))
    }

    /// Closes the stream played, and stops any reopening without waiting for it: a stream
    /// still opening is closed by the reopener when it opens, one stalled on its own thread.
    public func close() {
        if let reopener { reopener.shutDown(closing: retiring) } else { retiring?.close() }
        reopener = nil
        retiring = nil
        stream?.close()
        stream = nil
        probePoint = nil
    }
}
