import Foundation
import MediaClock
import MediaPipeline
import MutexAnnotations
import Synchronization

/// Snapcast and Chorus side by side, measured the same way from outside: each client (or
/// follower) plays through ALSA's `pulse` device into a PulseAudio null sink of its own, and
/// each sink's monitor is recorded through ALSA with `ALSACapture`, which stamps every
/// click's first loud sample with the host time it came out of the sink. The offset between
/// two clients is the difference of their host times for the same click.
///
/// Every client's clock is put off by an outside tool, as separate machines' clocks would
/// be: each snapclient and each Chorus follower runs under libfaketime (`FAKETIME="+3.25
/// x1.0002"`: seconds off, and running ppm fast or slow), which moves every clock the
/// process reads, CLOCK_MONOTONIC included, while the sound server and the kernel keep the
/// real time. So both systems must sync their clocks to their server and play to a sound
/// card whose rate, seen from their own clock, is off by the skew. Without libfaketime the
/// snapclients run on the real clock and Chorus's followers on `--clock-offset` and
/// `--clock-skew`, as the notes say. Chorus's followers' render captures of the same run
/// are printed next to the sink captures, which shows how much of the figure is the
/// capture path's noise.
struct SnapcastComparison {
    static let sinkPrefix = "chorus_bench_sync"
    static let format = AudioFormat(sampleRate: SyncMedia.sampleRate, channels: SyncMedia.channels)
    /// Capture period: small, because each sink renders ahead (and its monitor hears early)
    /// by the smallest latency a stream asks for; 2 ms keeps four capture threads affordable.
    static let capturePeriod: Duration = .milliseconds(2)
    /// Clicks heard before this long after the last client started are not counted.
    static let warmUp: Duration = .seconds(5)
    /// The join through the sinks: every pair of clients within this (seconds) of each other
    /// for `joinHold` seconds, as the sync benchmark's join is against the leader.
    static let joinTolerance = 100e-6
    static let joinHold = 1.0
    /// Two clients' onsets are the same click when closer than this (clicks are 125 ms apart).
    static let pairingWindow = 0.05

    let chorus: String
    let media: String
    let raw: String
    let workDir: String
    let seconds: Int
    let clients: Int
    let port: UInt16
    let leaderNode: SyncBenchmark.SimulatedNode
    let followerNodes: [SyncBenchmark.SimulatedNode]
    /// Whether clients run on clocks libfaketime moves (else on --clock-offset/--clock-skew).
    let fakeTime: Bool
    /// Whether each sink's monitor is also captured through ALSA (`ALSACapture`). Each
    /// capture asks its sink for `capturePeriod` of latency, so the server must serve every
    /// stream of the sink in 2 ms steps and post each step to four recording clients: a
    /// load of its own, which a busy machine may not carry. The one recording of all sinks
    /// (parec, 20 ms) is taken either way.
    var sinkCaptures = true
    let summary: SummaryFile
    /// The sinks' configured latencies (seconds), read at the end of the phase being measured.
    var latencyCorrections: [Double?] = []

    private var sinks: [String] { (1...clients).map { "\(Self.sinkPrefix)\($0)" } }

    /// libfaketime's thread-safe build, as Debian's `faketime` package installs it.
    static let fakeTimeLibrary = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"
    static var fakeTimeInstalled: Bool { FileManager.default.fileExists(atPath: fakeTimeLibrary) }

    /// The environment that runs a process on `node`'s clock through libfaketime: its
    /// offset in seconds and its skew as a speed factor.
    static func fakeTimeEnvironment(_ node: SyncBenchmark.SimulatedNode) -> [String: String] {
        let offset = node.clockOffset >= 0 ? "+\(node.clockOffset)" : "\(node.clockOffset)"
        let speed = String(format: "%.6f", 1 + Double(node.skewPPM) / 1e6)
        return ["LD_PRELOAD": fakeTimeLibrary, "FAKETIME": "\(offset) x\(speed)"]
    }

    mutating func run() {
        var table = Table(
            title: "sync/snapcast: offsets between clients through ALSA into \(clients) PulseAudio null sinks, \(seconds) s each",
            command: "chorus-bench sync --scenario snapcast --capture-seconds \(seconds) --clients \(clients)",
            header: ["system", "measured by", "pair", "samples", "median µs", "p99 µs", "max µs", "signed median µs"])
        var notes: [String] = []
        do {
            try measure(&table, &notes)
        } catch {
            notes.append("stopped: \(error)")
        }
        table.notes = notes
        table.print()
    }

    // MARK: - The measurement

    private mutating func measure(_ table: inout Table, _ notes: inout [String]) throws {
        try? FileManager.default.removeItem(atPath: workDir)
        try FileManager.default.createDirectory(atPath: workDir, withIntermediateDirectories: true)
        guard PulseControl.pactl(["info"]) != nil else {
            notMeasured(&table, "no PulseAudio server (run through `make bench`, or start one with scripts/pulse.sh)")
            return
        }
        // Each client's sink is a remap of one null sink, so that one recording of it holds
        // every client (see MixRecording); each remap also has a monitor of its own.
        guard let modules = mix.loadSinks(sinks) else {
            notMeasured(&table, "cannot load the null and remap sinks with pactl")
            return
        }
        defer { for module in modules { _ = PulseControl.pactl(["unload-module", module]) } }
        var collectors: [OnsetCollector] = []
        defer { collectors.forEach { $0.stop() } }
        for sink in sinks where sinkCaptures {
            // ALSA's pulse plugin connects to PULSE_SOURCE when it opens.
            setenv("PULSE_SOURCE", "\(sink).monitor", 1)
            let capture = try ALSACapture(device: "pulse", format: Self.format, period: Self.capturePeriod)
            let collector = OnsetCollector(capture: capture)
            collector.start()
            collectors.append(collector)
        }
        unsetenv("PULSE_SOURCE")

        // Snapcast.
        if let missing = ["snapserver", "snapclient"].first(where: { Self.which($0) == nil }) {
            notMeasured(&table, "\(missing) is not installed (apt-get install snapserver snapclient)")
        } else {
            let recording = try startRecording("snapcast")
            let window = try runSnapcast(&notes)
            recording.recorder.stop()
            addMixRows(&table, &notes, system: "snapcast", recording: recording, window: window)
            addCaptureRows(&table, system: "snapcast", collectors: collectors, window: window, notes: &notes)
        }
        Thread.sleep(forTimeInterval: 0.5)

        // Chorus through the same path.
        let recording = try startRecording("chorus")
        let (window, analysis, from) = try runChorus(&notes)
        recording.recorder.stop()
        addMixRows(&table, &notes, system: "chorus", recording: recording, window: window)
        addCaptureRows(&table, system: "chorus", collectors: collectors, window: window, notes: &notes)
        if let analysis {
            var pooled: [Double] = []
            for f in 0..<clients {
                for g in 0..<clients where g > f {
                    let values = analysis.offsets(of: f, minus: g, from: from)
                    pooled += values
                    addRow(&table, "chorus", "render captures (same run)", "\(followerNodes[f].name) − \(followerNodes[g].name)", values)
                }
            }
            addRow(&table, "chorus", "render captures (same run)", "all pairs", pooled)
        }
        let overruns = collectors.map(\.capture.overruns).reduce(0, +)
        notes.append("one recording: every client's sink is a remap onto two channels of one \(2 * clients)-channel null sink (\(MixRecording.masterSink)), whose monitor parec records as float; a click is found on client 1's left channel, matched on each other client's by its first sample above -40 dBFS, and refined to a fraction of a sample by cross-correlating 5 ms of it: offsets between clients in samples of one stream, with no capture timing in them")
        notes.append("capture: ALSA `pulse` with PULSE_SOURCE=<sink>.monitor per sink, \(Self.format), period \(Int(Self.capturePeriod.milliseconds)) ms, \(overruns) overrun(s); each click placed by ALSACapture (first sample above -40 dBFS after 100 ms of silence; host time = median of the status-timestamp estimates within 250 ms) plus that sink's configured latency (its monitor hears audio that much early); clicks from \(Int(Self.warmUp.seconds)) s after the last client started")
        if fakeTime {
            notes.append("clocks: every snapclient and Chorus follower runs under libfaketime (\(followerNodes.map { "\($0.name): FAKETIME=\"\(Self.fakeTimeEnvironment($0)["FAKETIME"] ?? "")\"" }.joined(separator: ", "))), so each syncs its own clock to its server's and plays to a sink that, seen from that clock, runs off by its skew; the sinks, the capture and snapserver are on the real clock")
        } else {
            notes.append("clocks: libfaketime is not used (not installed, or --no-fake-time), so the snapclients share this machine's clock and their clock sync has nothing to do; Chorus's followers run on --clock-offset/--clock-skew")
        }
        notes.append("like for like: both systems play the same click train through ALSA's pulse device into identical null sinks recorded the same way; the Chorus render-capture rows are the same Chorus run seen from inside (device timestamps + delay), for calibrating the capture path. The Chorus-only scenarios above use render captures on null devices: a different method")
    }

    private var mix: MixRecording { MixRecording(clients: clients, sampleRate: SyncMedia.sampleRate) }

    /// Starts recording every sink in one stream, for the phase `name`.
    private func startRecording(_ name: String) throws -> (recorder: NodeProcess, path: String) {
        let path = "\(workDir)/\(name)-all-sinks.f32"
        let recorder = mix.recorder(to: path, logPath: "\(workDir)/\(name)-parec.log")
        try recorder.start()
        return (recorder, path)
    }

    /// Rows from one recording of every sink: the clicks from the window's start on; and the
    /// join, from the last client's launch (`warmUp` before the window) until every pair
    /// stays within 100 µs for a second.
    private func addMixRows(_ table: inout Table, _ notes: inout [String], system: String,
                            recording: (recorder: NodeProcess, path: String), window: ClosedRange<Int64>) {
        let rate = Double(mix.sampleRate)
        let sinceStart = Double(window.lowerBound - recording.recorder.launchedAt.nanoseconds) / 1e9
        let windowFrame = max(0, Int(sinceStart * rate))
        let launchFrame = max(0, Int((sinceStart - Self.warmUp.seconds) * rate))
        let pairs = mix.pairOffsets(path: recording.path, from: launchFrame)
        var pooled: [Double] = []
        for pair in pairs {
            let offsets = zip(pair.frames, pair.offsets).filter { $0.0 >= windowFrame }.map(\.1)
            pooled += offsets
            addRow(&table, system, "one recording of all sinks", "client \(pair.f + 1) − client \(pair.g + 1)", offsets)
        }
        addRow(&table, system, "one recording of all sinks", "all pairs", pooled)
        let p99 = Statistics(pooled.map { abs($0) * 1e6 }).percentile(99)
        summary.record("sync", "\(system) through ALSA, one recording of all sinks: all pairs p99 |offset| µs",
                       pooled.isEmpty ? "not measured" : Format.fixed(p99, 1))
        let join = MixRecording.joinTime(pairs, from: launchFrame, sampleRate: mix.sampleRate,
                                         tolerance: Self.joinTolerance, hold: Self.joinHold)
        let joinText = join.map { "\(Format.fixed($0, 2)) s" } ?? "never"
        notes.append("\(system): join through ALSA (one recording): every pair of clients within \(Int(Self.joinTolerance * 1e6)) µs for \(Int(Self.joinHold)) s from \(joinText) after the last client was launched (the recorder's own start-up, tens of ms, counts against it)")
        summary.record("sync", "\(system) through ALSA, one recording of all sinks: join s (pairs within 100 µs)", join.map { Format.fixed($0, 2) } ?? "never")
    }

    /// A client's environment: its sink, and its clock when libfaketime is there.
    private func clientEnvironment(_ index: Int, sink: String) -> [String: String] {
        var environment = ["PULSE_SINK": sink]
        if fakeTime { environment.merge(Self.fakeTimeEnvironment(followerNodes[index])) { $1 } }
        return environment
    }

    private func notMeasured(_ table: inout Table, _ reason: String) {
        table.add(["snapcast", "not measured", reason, "-", "-", "-", "-", "-"])
    }

    /// Runs snapserver and the clients; returns the window of host times to measure.
    private mutating func runSnapcast(_ notes: inout [String]) throws -> ClosedRange<Int64> {
        let dir = "\(workDir)/snapcast"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let streamPort = port + 2
        let config = """
            [server]
            datadir = \(dir)
            [http]
            enabled = false
            [tcp]
            enabled = false
            [stream]
            bind_to_address = 127.0.0.1
            port = \(streamPort)
            source = file://\(raw)?name=bench&sampleformat=48000:16:2&codec=pcm
            [logging]
            sink = stderr
            filter = *:notice

            """
        let configPath = "\(dir)/snapserver.conf"
        guard FileManager.default.createFile(atPath: configPath, contents: Data(config.utf8)) else {
            throw BenchError("cannot write \(configPath)")
        }
        let server = NodeProcess(name: "snapserver", arguments: ["snapserver", "-c", configPath], logPath: "\(dir)/snapserver.log")
        var processes = [server]
        defer { processes.reversed().forEach { $0.stop() } }
        try server.start()
        Thread.sleep(forTimeInterval: 1)
        guard server.isRunning else {
            throw BenchError("snapserver exited: \(server.errorLines.suffix(3).map(\.text).joined(separator: " / "))")
        }
        var last = HostTime.now()
        for (index, sink) in sinks.enumerated() {
            let client = NodeProcess(name: "snapclient\(index + 1)",
                                     arguments: ["snapclient", "-h", "127.0.0.1", "-p", "\(streamPort)", "--hostID", "chorus-bench-\(index + 1)",
                                                 "-i", "\(index + 1)", "--player", "alsa", "-s", "pulse", "--logsink", "stderr"],
                                     environment: clientEnvironment(index, sink: sink), logPath: "\(dir)/snapclient\(index + 1).log")
            try client.start()
            processes.append(client)
            last = client.launchedAt
        }
        if let example = processes.last { notes.append("snapcast: \(server.commandLine) (config \(configPath): file source, pcm codec, 1000 ms buffer by default); clients like: \(example.commandLine)") }
        let end = last + .seconds(seconds)
        Thread.sleep(forTimeInterval: (end - HostTime.now()).seconds)
        let latencies = sinks.map { PulseControl.configuredLatency(of: $0) }
        latencyCorrections = latencies
        notes.append("snapcast: sink configured latencies \(latencies.map { $0.map { "\(Format.fixed($0 * 1e6, 0)) µs" } ?? "?" }.joined(separator: ", ")); \(processes.filter { !$0.isRunning }.map(\.name).joined(separator: ", ").ifEmpty("all processes ran to the end"))")
        return (last + Self.warmUp).nanoseconds...end.nanoseconds
    }

    /// Runs a Chorus leader on a null device and followers through ALSA into the sinks.
    private mutating func runChorus(_ notes: inout [String]) throws -> (ClosedRange<Int64>, SyncAnalysis?, Int64) {
        let dir = "\(workDir)/chorus"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let address = "127.0.0.1:\(port)"
        let leaderCapture = "\(dir)/leader.cap"
        let leader = NodeProcess(name: "leader",
                                 arguments: [chorus, "lead", media, "--listen", address, "--quiet", "--commands",
                                             "--capture", leaderCapture] + leaderNode.arguments,
                                 stdin: true, logPath: "\(dir)/leader.log")
        var followers: [NodeProcess] = []
        var stopped = false
        func stopAll() {
            guard !stopped else { return }
            stopped = true
            followers.forEach { $0.stop() }
            leader.stop(quit: true)
        }
        defer { stopAll() }
        try leader.start()
        let deadline = HostTime.now() + .seconds(20)
        while ((try? FileManager.default.attributesOfItem(atPath: leaderCapture))?[.size] as? NSNumber)?.intValue ?? 0 == 0 {
            guard HostTime.now() < deadline, leader.isRunning else { throw BenchError("the Chorus leader did not start playing") }
            usleep(20_000)
        }
        var last = HostTime.now()
        for (index, sink) in sinks.enumerated() {
            let node = followerNodes[index]
            let clock = fakeTime ? [] : ["--clock-offset=\(node.clockOffset)", "--clock-skew=\(node.skewPPM)"]
            let follower = NodeProcess(name: node.name,
                                       arguments: [chorus, "follow", address, "--name", node.name, "--stats", "--output", "alsa:pulse"]
                                           + clock + ["--capture", "\(dir)/\(node.name).cap"],
                                       environment: clientEnvironment(index, sink: sink), logPath: "\(dir)/\(node.name).log")
            try follower.start()
            followers.append(follower)
            last = follower.launchedAt
        }
        notes.append("chorus: \(leader.commandLine); followers like: \(followers.last?.commandLine ?? "-") (clock offsets and skews as in the scenarios above; the sinks run on the real clock)")
        let end = last + .seconds(seconds)
        Thread.sleep(forTimeInterval: (end - HostTime.now()).seconds)
        latencyCorrections = sinks.map { PulseControl.configuredLatency(of: $0) }
        notes.append("chorus: sink configured latencies \(latencyCorrections.map { $0.map { "\(Format.fixed($0 * 1e6, 0)) µs" } ?? "?" }.joined(separator: ", "))")
        let dead = followers.filter { !$0.isRunning }.map(\.name)
        stopAll()
        if !dead.isEmpty { notes.append("chorus: exited early: \(dead.joined(separator: ", "))") }
        let window = (last + Self.warmUp).nanoseconds...end.nanoseconds
        let leaderFile = try RenderCaptureFile(path: leaderCapture)
        let files = try followers.map { try RenderCaptureFile(path: "\(dir)/\($0.name).cap") }
        return (window, SyncAnalysis(leader: leaderFile, followers: files), window.lowerBound)
    }


    private func addCaptureRows(_ table: inout Table, system: String, collectors: [OnsetCollector], window: ClosedRange<Int64>,
                                notes: inout [String]) {
        guard sinkCaptures else {
            notes.append("\(system): sink monitor captures not taken (--no-sink-captures)")
            return
        }
        let onsets = collectors.enumerated().map { index, collector in
            let correction = index < latencyCorrections.count ? (latencyCorrections[index] ?? 0) : 0
            return collector.onsets(in: window).map { Double($0) / 1e9 + correction }
        }
        // Kept for plotting offsets over time: one host time (s) per line, per sink.
        for (index, values) in onsets.enumerated() {
            let text = values.map { String(format: "%.9f", $0) }.joined(separator: "\n")
            try? text.write(toFile: "\(workDir)/\(system)-onsets-\(index + 1).txt", atomically: true, encoding: .utf8)
        }
        let failures = collectors.compactMap(\.failure)
        if !failures.isEmpty { notes.append("\(system): capture failed: \(failures.joined(separator: "; "))") }
        notes.append("\(system): clicks captured per sink in the window: \(onsets.map { "\($0.count)" }.joined(separator: ", ")) (expected about \(Int((Double(window.upperBound - window.lowerBound) / 1e9) / SyncMedia.clickInterval.seconds)))")
        var pooled: [Double] = []
        for f in 0..<clients {
            for g in 0..<clients where g > f {
                let values = Self.pairOffsets(onsets[f], onsets[g])
                pooled += values
                addRow(&table, system, "sink monitor capture", "client \(f + 1) − client \(g + 1)", values)
            }
        }
        addRow(&table, system, "sink monitor capture", "all pairs", pooled)
        let p99 = Statistics(pooled.map { abs($0) * 1e6 }).percentile(99)
        summary.record("sync", "\(system) through ALSA, capture: all pairs p99 |offset| µs", pooled.isEmpty ? "not measured" : Format.fixed(p99, 0))
    }

    /// For each onset of `a`, the nearest onset of `b` minus it, when within the pairing window.
    static func pairOffsets(_ a: [Double], _ b: [Double]) -> [Double] {
        guard !b.isEmpty else { return [] }
        var result: [Double] = []
        var j = 0
        for time in a {
            while j + 1 < b.count, abs(b[j + 1] - time) <= abs(b[j] - time) { j += 1 }
            let difference = time - b[j]
            if abs(difference) < pairingWindow { result.append(difference) }
        }
        return result
    }

    private func addRow(_ table: inout Table, _ system: String, _ method: String, _ pair: String, _ offsets: [Double]) {
        let magnitudes = Statistics(offsets.map { abs($0) * 1e6 })
        let signed = Statistics(offsets.map { $0 * 1e6 })
        if offsets.isEmpty {
            table.add([system, method, pair, "0", "not measured", "-", "-", "-"])
            return
        }
        table.add([system, method, pair, "\(offsets.count)", Format.fixed(magnitudes.median, 1), Format.fixed(magnitudes.percentile(99), 1),
                   Format.fixed(magnitudes.maximum, 1), Format.fixed(signed.median, 1)])
    }

    // MARK: - Helpers

    static func which(_ program: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(program)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

/// Collects every onset an `ALSACapture` finds, as host times, on a thread of its own (the
/// capture keeps only a few seconds of timestamp estimates, so onsets are placed as they come).
final class OnsetCollector: Sendable {
    let capture: ALSACapture
    /// The onsets found so far (host nanoseconds), and why collecting stopped early.
    private let found = Mutex<(hosts: [Int64], failed: String?)>(([], nil))
    private let running = Atomic<Bool>(true)
    private let exited = DispatchSemaphore(value: 0)

    init(capture: ALSACapture) { self.capture = capture }

    func start() {
        capture.start()
        let thread = Thread { [self] in
            var mark = capture.mark
            while running.load(ordering: .acquiring) {
                do {
                    if let onset = try capture.waitForOnset(after: mark, timeout: .milliseconds(200)) {
                        mark = onset.frame
                        found.withLockAnnotated { $0.hosts.append(onset.hostTime.nanoseconds) }
                    }
                } catch {
                    found.withLockAnnotated { $0.failed = "\(error)" }
                    break
                }
            }
            exited.signal()
        }
        thread.name = "chorus-bench.onsets"
        thread.start()
    }

    func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        exited.wait()
        capture.stop()
    }

    var failure: String? { found.withLockAnnotated { $0.failed } }

    /// Onsets heard within `window` (host nanoseconds).
    func onsets(in window: ClosedRange<Int64>) -> [Int64] {
        found.withLockAnnotated { $0.hosts.filter { window.contains($0) } }
    }
}

private extension String {
    func ifEmpty(_ replacement: String) -> String { isEmpty ? replacement : self }
}
