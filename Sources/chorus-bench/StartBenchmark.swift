import ArgumentParser
import AVPlayback
import Foundation
import MediaPipeline

/// `chorus-bench start FILE`: how exactly a scheduled start keeps its host time.
///
/// Each run opens a fresh player on FILE (whose item frame 0 must be a loud sample after
/// nothing: a tone that starts at full level), asks it to present item time 0 at a host time
/// `--lead-ms` ahead, and finds when frame 0 was presented:
/// - predicted: what the player itself says. Through the public API (`--api player`),
///   `AVPlayer.currentTime()` sampled many times after the start and extrapolated back to
///   frame 0; through the pipeline (`--api engine`), `PlaybackEngine.status`'s anchor.
///   On the null device this is the truth: the null device presents each frame exactly when
///   its model says.
/// - captured (ALSA outputs only): when the tone's first sample came out of PulseAudio's
///   null sink, recorded from its monitor through ALSA by `ALSACapture`, measured outside
///   the player.
/// Errors are presented minus requested host time; the table gives |error| statistics.
struct StartBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "start",
        abstract: "Accuracy of setRate(_:time:atHostTime:) on the null device and through ALSA.")

    /// The device format the test media is made for; the same rate end to end means no
    /// resampler anywhere to smear the onset.
    static let deviceFormat = AudioFormat(sampleRate: 48_000, channels: 2)
    /// How long to wait for an item or a reader to be ready before giving up on a run.
    static let readyTimeout: Duration = .seconds(10)
    /// Poll interval while waiting for readiness or the render thread.
    static let pollMicroseconds: UInt32 = 1_000
    /// How long after the requested start the player's own report is read: a few device
    /// periods, so the render thread has played and anchored the start.
    static let settleAfterStart: Duration = .milliseconds(60)
    /// `currentTime()` readings averaged per run. Each is quantised to a frame (20.8 µs at
    /// 48 kHz); readings at spread phases average that out.
    static let currentTimeSamples = 40
    /// Spacing of those readings: not a whole number of frames, so they fall at different
    /// phases of the frame grid.
    static let currentTimeSpacingMicroseconds: UInt32 = 737
    /// A reading whose `currentTime()` call took longer than this was preempted; its time
    /// of reading is too uncertain and it is dropped.
    static let maximumReadingDuration: Duration = .microseconds(200)
    /// How long to wait for the captured onset after the requested start: the sound
    /// server's latency plus the capture window, with a wide margin.
    static let captureTimeout: Duration = .seconds(3)
    /// Silence left between runs so that each run's onset follows silence in the capture.
    static let gapBetweenRuns: Duration = .milliseconds(250)
    /// One frame period at the device rate, the null device's aim.
    static var framePeriod: Duration { deviceFormat.duration(ofFrames: 1) }
    /// The aim through ALSA and a sound server.
    static let alsaAim: Duration = .milliseconds(2)

    /// Which API drives the player.
    enum API: String, ExpressibleByArgument, CaseIterable {
        case player, engine
    }

    @Argument(help: "Media whose item frame 0 is the first loud sample (48 kHz stereo).")
    var file: String

    @Option(name: .long, help: "Outputs to measure, repeatable: null, alsa[:DEVICE].")
    var output: [String] = ["null"]

    @Option(name: .long, help: "APIs to drive the start with, repeatable: player (AVPlayer), engine (PlaybackEngine).")
    var api: [API] = [.player]

    @Option(name: .long, help: "Runs per output and API.")
    var runs = 20

    @Option(name: .customLong("lead-ms"), help: "How far ahead the start is scheduled, in ms.")
    var leadMilliseconds = 300

    @Option(name: .long, help: "ALSA capture device for ALSA outputs (records what the sound server plays).")
    var captureDevice = "pulse"

    @Option(name: .long, help: "PulseAudio source the capture device records (sets PULSE_SOURCE).")
    var monitorSource = "chorus_null.monitor"

    /// 1 ms: the null sink renders ahead by the smallest latency any stream asks for, and
    /// its monitor hears audio that much early; a 1 ms capture period keeps that small.
    @Option(name: .customLong("capture-period-ms"), help: "Period of the capture device, in ms (the sink's render-ahead follows it).")
    var capturePeriodMilliseconds = 1

    @Option(name: .long, help: "Append headline figures to this file (for scripts/bench.sh).")
    var summary: String?

    func validate() throws {
        guard runs >= 1 else { throw ValidationError("--runs must be at least 1") }
        guard leadMilliseconds >= 50 else { throw ValidationError("--lead-ms must leave the player time to prepare (>= 50)") }
        for spec in output {
            let parsed: OutputSpec
            do throws(MediaError) { parsed = try OutputSpec(parsing: spec) } catch { throw ValidationError(error.description) }
            if case .wav = parsed { throw ValidationError("a WAV file has no presentation time; use null or alsa") }
        }
    }

    /// One run's findings, as signed offsets from the requested host time.
    struct Measurement {
        var predicted: Duration?
        var captured: Duration?
        var captureSpread: Duration?
        /// The null sink's configured latency read right after the onset was captured.
        var sinkLatency: Duration?
        /// The captured offset corrected for the monitor hearing audio one sink latency early.
        var corrected: Duration? {
            guard let captured, let sinkLatency else { return nil }
            return captured + sinkLatency
        }
    }

    func run() throws {
        let specs = try output.map { text throws -> OutputSpec in
            do throws(MediaError) { return try OutputSpec(parsing: text) } catch { throw BenchError(error.description) }
        }
        var capture: ALSACapture?
        if specs.contains(where: { if case .alsa = $0 { return true } else { return false } }) {
            // The capture goes through the same pulse plugin; this picks the sink's monitor.
            setenv("PULSE_SOURCE", monitorSource, 1)
            capture = try ALSACapture(device: captureDevice, format: Self.deviceFormat, period: .milliseconds(capturePeriodMilliseconds))
            capture?.start()
        }
        defer { capture?.stop() }

        var table = Table(
            title: "start: |presented - requested| host time of item frame 0, \(runs) runs each, start \(leadMilliseconds) ms ahead",
            command: command,
            header: ["output", "api", "measured by", "runs", "median µs", "p95 µs", "max µs", "signed median µs", "aim µs"])
        var notes: [String] = []
        for spec in specs {
            for api in api {
                var measurements: [Measurement] = []
                for _ in 0..<runs {
                    let outputCapture: ALSACapture? = if case .alsa = spec { capture } else { nil }
                    measurements.append(try measure(spec: spec, api: api, capture: outputCapture))
                    Thread.sleep(forTimeInterval: Self.gapBetweenRuns.seconds)
                }
                let isALSA = if case .alsa = spec { true } else { false }
                let aim = isALSA ? Self.alsaAim : Self.framePeriod
                let predictedBy = api == .player ? "player: currentTime()" : "engine: status anchor"
                addRow(&table, spec, api, predictedBy, measurements.compactMap(\.predicted), aim: isALSA ? nil : aim)
                let silent = measurements.filter { $0.predicted == nil }.count
                if silent > 0 {
                    notes.append("\(spec)/\(api.rawValue): \(silent) run(s) in which the player reported nothing playing \(Format.fixed(Self.settleAfterStart.milliseconds, 0)) ms after the requested start")
                }
                if isALSA {
                    let captured = measurements.compactMap(\.captured)
                    addRow(&table, spec, api, "capture, raw", captured, aim: nil)
                    addRow(&table, spec, api, "capture + sink latency", measurements.compactMap(\.corrected), aim: aim)
                    let spreads = Statistics(measurements.compactMap(\.captureSpread).map(\.microseconds))
                    if captured.count < measurements.count {
                        notes.append("\(spec)/\(api.rawValue): \(measurements.count - captured.count) run(s) without a captured onset")
                    }
                    if !spreads.isEmpty {
                        notes.append("\(spec)/\(api.rawValue): capture timestamp estimates around each onset spread by median \(Format.fixed(spreads.median, 0)) µs, max \(Format.fixed(spreads.maximum, 0)) µs (median of them used)")
                    }
                }
            }
        }
        if let capture {
            let bound = configuredSinkLatency().map { "\(Format.fixed($0.microseconds, 0)) µs" } ?? "unknown"
            notes.append("capture: \(captureDevice) with PULSE_SOURCE=\(monitorSource), \(Self.deviceFormat), period \(capturePeriodMilliseconds) ms, \(capture.overruns) overrun(s); captured host time of a frame = snd_pcm_status htstamp - max(delay, avail), median over reads within \(Format.fixed(ALSACapture.estimateWindow.milliseconds, 0)) ms of the onset")
            notes.append("capture caveat: the null sink renders ahead of its clock by its configured latency (\(bound) now; it follows the smallest latency a stream asks, here the capture's period) and hands that audio to its monitor at once. PulseAudio reports this as a negative capture latency, which ALSA's pulse plugin clamps to 0, so raw captures read EARLY by about that latency. 'capture + sink latency' adds the configured latency read by pactl after each run: on this machine the raw offset tracked it 1:1 (1 ms and 2 ms capture periods gave -1.0 and -1.9 ms raw), but that correction is a model of the sound server, not a measurement; treat the corrected figure as good to a few hundred µs")
            SummaryFile(path: summary).record("start", "null sink configured latency (raw captures early by ~this)", bound)
        }
        notes.append("predicted on null = the null device's own presentation model: exact by construction, so this measures the player's scheduling arithmetic, not a device")
        notes.append("player: AVPlayer(playerItem:output:), automaticallyWaitsToMinimizeStalling = false, setRate(1, time: .zero, atHostTime: now + \(leadMilliseconds) ms); frame 0's time from \(Self.currentTimeSamples) currentTime() readings, each quantised to one frame, averaged")
        notes.append("engine: PlaybackEngine prepare/load/render(.play(serial:frame: 0, hostTime:)); frame 0's time = status.anchorHost - anchorFrame / rate")
        table.notes = notes
        table.print()
    }

    private var command: String {
        var words = ["chorus-bench", "start"]
        for spec in output { words += ["--output", spec] }
        for api in api { words += ["--api", api.rawValue] }
        words += ["--runs", "\(runs)", "--lead-ms", "\(leadMilliseconds)", file]
        return words.map(ChildProcess.quoted).joined(separator: " ")
    }

    private func addRow(_ table: inout Table, _ spec: OutputSpec, _ api: API, _ by: String, _ errors: [Duration], aim: Duration?) {
        let magnitudes = Statistics(errors.map { abs($0.microseconds) })
        let signed = Statistics(errors.map(\.microseconds))
        table.add(["\(spec)", api.rawValue, by, "\(errors.count)", Format.fixed(magnitudes.median, 1),
                   Format.fixed(magnitudes.percentile(95), 1), Format.fixed(magnitudes.maximum, 1),
                   Format.fixed(signed.median, 1), aim.map { Format.fixed($0.microseconds, 1) } ?? "-"])
        let sink = SummaryFile(path: summary)
        let name = "\(spec) \(api.rawValue) \(by.components(separatedBy: ":").first ?? by)"
        sink.record("start", "\(name) |error| median / p95 / max µs",
                    "\(Format.fixed(magnitudes.median, 1)) / \(Format.fixed(magnitudes.percentile(95), 1)) / \(Format.fixed(magnitudes.maximum, 1))",
                    aim: aim.map { "< \(Format.fixed($0.microseconds, 1)) µs" } ?? "")
    }

    // MARK: - One run

    private func measure(spec: OutputSpec, api: API, capture: ALSACapture?) throws -> Measurement {
        switch api {
        case .player: return try measureWithPlayer(spec: spec, capture: capture)
        case .engine: return try measureWithEngine(spec: spec, capture: capture)
        }
    }

    private func measureWithPlayer(spec: OutputSpec, capture: ALSACapture?) throws -> Measurement {
        let item = AVPlayerItem(url: URL(fileURLWithPath: file))
        let player = AVPlayer(playerItem: item, output: spec)
        defer { player.close() }
        player.automaticallyWaitsToMinimizeStalling = false
        try waitUntil("\(file) ready on \(spec)") {
            if item.status == .failed { throw BenchError("\(file): \(item.error.map { $0.localizedDescription } ?? "failed")") }
            return item.status == .readyToPlay
        }
        let mark = capture?.mark
        let requested = HostTime.now() + .milliseconds(leadMilliseconds)
        player.setRate(1, time: .zero, atHostTime: requested.cmTime)
        sleep(until: requested + Self.settleAfterStart)
        let predicted = frameZeroFromCurrentTime(player, frameRateRatio: Self.frameRateRatio(spec)).map { $0 - requested }
        var measurement = Measurement(predicted: predicted)
        if let capture, let mark, let onset = try capture.waitForOnset(after: mark, timeout: Self.captureTimeout) {
            measurement.captured = onset.hostTime - requested
            measurement.captureSpread = onset.estimateSpread
            measurement.sinkLatency = configuredSinkLatency()
        }
        return measurement
    }

    private func measureWithEngine(spec: OutputSpec, capture: ALSACapture?) throws -> Measurement {
        let engine = PlaybackEngine(spec: spec)
        defer { engine.shutdown() }
        let format: AudioFormat
        let ready = DispatchSemaphore(value: 0)
        let serial = 1
        do throws(MediaError) {
            format = try engine.prepare(preferred: Self.deviceFormat)
            let source = try MediaSource(url: file)
            try engine.load(source: source, serial: serial, startFrame: 0) { event in
                if case .ready = event { ready.signal() }
            }
        } catch {
            throw BenchError(error.description)
        }
        guard ready.wait(timeout: .now() + Self.readyTimeout.seconds) == .success else {
            throw BenchError("\(file): the reader produced nothing on \(spec)")
        }
        let mark = capture?.mark
        let requested = HostTime.now() + .milliseconds(leadMilliseconds)
        engine.render { $0.mode = .play(serial: serial, frame: 0, hostTime: requested) }
        sleep(until: requested + Self.settleAfterStart)
        // A start that never plays is reported as a missing figure, not an abort.
        let status = engine.status
        let playing = status.serial == serial && status.phase == .playing
        let frameZero = status.anchorHost - .nanoseconds(Int64((Double(format.nanoseconds(ofFrames: status.anchorFrame)) / Self.frameRateRatio(spec)).rounded()))
        var measurement = Measurement(predicted: playing ? frameZero - requested : nil)
        if let capture, let mark, let onset = try capture.waitForOnset(after: mark, timeout: Self.captureTimeout) {
            measurement.captured = onset.hostTime - requested
            measurement.captureSpread = onset.estimateSpread
            measurement.sinkLatency = configuredSinkLatency()
        }
        return measurement
    }

    /// How much faster than nominal the device plays its frames, where that is known: a
    /// null device's drift (1 + ppm / 10⁶); 1 for ALSA, whose crystal is measured from outside.
    /// Frame 0 is projected back from a later frame at that rate: at the nominal rate, the
    /// 160 ms from a start to its anchor would read 32 µs off on a device 200 ppm fast.
    static func frameRateRatio(_ spec: OutputSpec) -> Double {
        if case .null(let drift) = spec { return 1 + drift / 1e6 }
        return 1
    }

    /// Host time of item frame 0 implied by `currentTime()`: each reading says which frame
    /// is presented at the moment of the call, so frame 0 was presented that many frame
    /// periods earlier (at the device's rate, `frameRateRatio`). Readings are averaged to
    /// remove their one-frame quantisation.
    private func frameZeroFromCurrentTime(_ player: AVPlayer, frameRateRatio: Double) -> HostTime? {
        var offsets: [Double] = []
        var reference: HostTime?
        for _ in 0..<Self.currentTimeSamples {
            let before = HostTime.now()
            let time = player.currentTime()
            let after = HostTime.now()
            usleep(Self.currentTimeSpacingMicroseconds)
            guard after - before <= Self.maximumReadingDuration, time.isNumeric, time.value > 0, time.timescale > 0 else { continue }
            let base = reference ?? before
            reference = base
            let middle = Double((before - base).nanosecondsClamped) + Double((after - before).nanosecondsClamped) / 2
            offsets.append(middle - Double(time.value) * 1e9 / Double(time.timescale) / frameRateRatio)
        }
        guard let reference, !offsets.isEmpty else { return nil }
        return reference + .nanoseconds(Int64(Statistics(offsets).mean.rounded()))
    }

    /// The configured latency of the sink whose monitor is recorded: how far ahead of its
    /// clock the sink renders, so how early its monitor can hear audio.
    private func configuredSinkLatency() -> Duration? {
        let sinkName = monitorSource.hasSuffix(".monitor") ? String(monitorSource.dropLast(".monitor".count)) : monitorSource
        return PulseControl.configuredLatency(of: sinkName).map { .microseconds(Int64(($0 * 1e6).rounded())) }
    }

    private func sleep(until time: HostTime) {
        let remaining = time - HostTime.now()
        if remaining > .zero { Thread.sleep(forTimeInterval: remaining.seconds) }
    }

    private func waitUntil(_ what: String, _ condition: () throws -> Bool) throws {
        let deadline = HostTime.now() + Self.readyTimeout
        while try !condition() {
            guard HostTime.now() < deadline else { throw BenchError("timed out waiting for \(what)") }
            usleep(Self.pollMicroseconds)
        }
    }
}
