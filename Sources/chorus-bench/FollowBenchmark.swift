import ArgumentParser
import AVPlayback
import Foundation
import MediaPipeline

/// `chorus-bench follow FILE`: how closely a player on a master clock holds the clock's
/// timeline on a real-time device.
///
/// Each run opens a fresh player on FILE, gives it a master clock `--clock-ppm` fast against
/// the host (a group leader's, as a follower sees it), and starts item time 0 at `--rate`,
/// `--lead-ms` ahead, on that clock. Every `sampleInterval` it reads:
/// - the render thread's timeline error: how far the content it last wrote is from where the
///   timeline puts it (on the null device, whose timing is exact, this is the truth);
/// - `currentTime()` against the item time the master clock itself says is due, counted from
///   the start (and from the change) by the clock, not by the player.
/// With `--change-rate R`, half-way through the run the rate changes to R 300 ms ahead,
/// continuing the timeline, as a group leader changes speed. Figures are printed per stretch
/// of the run: the start (its first second), settled (from `settledAfter` to the change or the
/// end), and after the change (from `settledAfter` past it). The player's tests check what it
/// asks of the render thread, and FollowModeTests how the render loop holds a drifting device
/// to a timeline on a simulated one; this is the same on a real one, in real time.
struct FollowBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "follow",
        abstract: "How closely a player on a master clock holds its timeline, through a start and a rate change.")

    /// How often the player is read: a device period, so every period's report is seen.
    static let sampleInterval: Duration = .milliseconds(10)
    /// How long to wait for the item to be ready before giving up on a run.
    static let readyTimeout: Duration = .seconds(10)
    /// The start's stretch: the first second from the scheduled instant, while the render
    /// thread's loop acquires.
    static let startStretch: Duration = .seconds(1)
    /// When a stretch counts as settled: after the soft tier's settling time and its loop's
    /// first pulls (TimelineServo.settlingTime is 1.5 s).
    static let settledAfter: Duration = .seconds(2)
    /// How far ahead a rate change is scheduled: as a group leader schedules one, far enough
    /// for every room to hear of it first.
    static let changeLead: Duration = .milliseconds(300)
    /// A `currentTime()` call that took longer than this was preempted: when it read the
    /// clock is too uncertain, and its reading is dropped (as `chorus-bench start` does).
    static let maximumReadingDuration: Duration = .microseconds(200)

    @Argument(help: "Media to play (a tone or music; 48 kHz plays without resampling on the null device).")
    var file: String

    @Option(name: .long, help: "Outputs to measure, repeatable: null[:drift=PPM], alsa[:DEVICE].")
    var output: [String] = ["null:drift=-80"]

    @Option(name: .customLong("clock-ppm"), help: "How fast the master clock runs against the host, in ppm.")
    var clockPPM = 300.0

    @Option(name: .long, help: "The playback rate of the start.")
    var rate: Float = 1

    @Option(name: .customLong("change-rate"), help: "A rate to change to half-way through, continuing the timeline.")
    var changeRate: Float?

    @Option(name: .long, help: "Seconds of play per run (the item must be at least this long).")
    var seconds = 8.0

    @Option(name: .long, help: "Runs per output.")
    var runs = 3

    @Option(name: .customLong("lead-ms"), help: "How far ahead the start is scheduled, in ms.")
    var leadMilliseconds = 300

    @Option(name: .long, help: "Append headline figures to this file (for scripts/bench.sh).")
    var summary: String?

    func validate() throws {
        guard runs >= 1 else { throw ValidationError("--runs must be at least 1") }
        guard leadMilliseconds >= 50 else { throw ValidationError("--lead-ms must leave the player time to prepare (>= 50)") }
        guard seconds >= 2 * Self.settledAfter.seconds + 1 else {
            throw ValidationError("--seconds must leave a settled stretch before and after the change (>= \(2 * Self.settledAfter.seconds + 1))")
        }
        guard abs(clockPPM) < 10_000 else { throw ValidationError("--clock-ppm must be within ±10000") }
        for rate in [rate] + (changeRate.map { [$0] } ?? []) where !(rate > 0 && rate.isFinite) {
            throw ValidationError("rates must be positive")
        }
        for spec in output {
            let parsed: OutputSpec
            do throws(MediaError) { parsed = try OutputSpec(parsing: spec) } catch { throw ValidationError(error.description) }
            if case .wav = parsed { throw ValidationError("a WAV file is not played in real time; use null or alsa") }
        }
    }

    /// One reading of a run.
    struct Reading {
        /// Since the scheduled start.
        var elapsed: Duration
        /// The render thread's timeline error (s, positive: late).
        var timelineError: Double
        /// currentTime() minus the item time the master clock puts now (s); nil when the call
        /// was preempted (`maximumReadingDuration`).
        var currentTimeError: Double?
    }

    /// What one run found.
    struct Run {
        var readings: [Reading] = []
        /// When the change was asked for, and when it was made (`changeLead` later), since
        /// the start.
        var changeAskedAt: Duration?
        var changeAt: Duration?
        var hardResyncs = 0
        var timelineBreaks = 0
        var stalls = 0
    }

    /// A stretch of every run: a name and which readings fall in it.
    struct Stretch {
        var name: String
        var contains: (Reading, Run) -> Bool
    }

    func run() throws {
        let specs = try output.map { text throws -> OutputSpec in
            do throws(MediaError) { return try OutputSpec(parsing: text) } catch { throw BenchError(error.description) }
        }
        let changeText = changeRate.map { ", rate \($0) from half-way" } ?? ""
        var table = Table(
            title: "follow: a player on a master clock \(Format.fixed(clockPPM, 0)) ppm fast at rate \(rate)\(changeText), \(runs) runs of \(Format.fixed(seconds, 1)) s each",
            command: command,
            header: ["output", "stretch", "readings", "|timeline error| median µs", "p95 µs", "max µs",
                     "|currentTime - clock| median µs", "max µs", "hard resyncs", "breaks", "stalls"])
        let sink = SummaryFile(path: summary)
        for spec in specs {
            var found: [Run] = []
            for _ in 0..<runs { found.append(try measure(spec: spec)) }
            let settledEnd: (Run) -> Duration = { $0.changeAskedAt ?? .seconds(1_000_000) }
            var stretches = [
                Stretch(name: "start (first \(Format.fixed(Self.startStretch.seconds, 0)) s)") { reading, _ in reading.elapsed < Self.startStretch },
                Stretch(name: "settled (from \(Format.fixed(Self.settledAfter.seconds, 0)) s)") { reading, run in
                    reading.elapsed >= Self.settledAfter && reading.elapsed < settledEnd(run)
                },
            ]
            if changeRate != nil {
                // Between the call and the change, what the device has queued is already
                // past the change: it is reported apart.
                stretches.append(Stretch(name: "lead-in to the change (\(Format.fixed(Self.changeLead.milliseconds, 0)) ms)") { reading, run in
                    guard let asked = run.changeAskedAt, let change = run.changeAt else { return false }
                    return reading.elapsed >= asked && reading.elapsed < change
                })
                stretches.append(Stretch(name: "first second after the change") { reading, run in
                    guard let change = run.changeAt else { return false }
                    return reading.elapsed >= change && reading.elapsed < change + .seconds(1)
                })
                stretches.append(Stretch(name: "settled after the change (from \(Format.fixed(Self.settledAfter.seconds, 0)) s)") { reading, run in
                    guard let change = run.changeAt else { return false }
                    return reading.elapsed >= change + Self.settledAfter
                })
            }
            for (index, stretch) in stretches.enumerated() {
                let readings = found.flatMap { run in run.readings.filter { stretch.contains($0, run) } }
                let timeline = Statistics(readings.map { abs($0.timelineError) * 1e6 })
                let current = Statistics(readings.compactMap(\.currentTimeError).map { abs($0) * 1e6 })
                // The counters are the runs' totals, given once.
                let counters = index == 0
                    ? ["\(found.map(\.hardResyncs).reduce(0, +))", "\(found.map(\.timelineBreaks).reduce(0, +))", "\(found.map(\.stalls).reduce(0, +))"]
                    : ["", "", ""]
                table.add(["\(spec)", stretch.name, "\(readings.count)", Format.fixed(timeline.median, 1),
                           Format.fixed(timeline.percentile(95), 1), Format.fixed(timeline.maximum, 1),
                           Format.fixed(current.median, 1), Format.fixed(current.maximum, 1)] + counters)
                sink.record("follow", "\(spec) \(stretch.name) |timeline error| median / p95 / max µs",
                            "\(Format.fixed(timeline.median, 1)) / \(Format.fixed(timeline.percentile(95), 1)) / \(Format.fixed(timeline.maximum, 1))")
            }
            sink.record("follow", "\(spec) hard resyncs in \(runs) runs", "\(found.map(\.hardResyncs).reduce(0, +))", aim: "0")
        }
        table.notes = [
            "timeline error: the render thread's own report of how far the content it wrote is from the timeline; on the null device, whose timing is exact, that is where it is heard",
            "currentTime - clock: AVPlayer.currentTime() against the item time the master clock says is due (its time since the start times the rate), each reading quantised to a frame (20.8 µs at 48 kHz)",
            "breaks: device underruns after which content was placed afresh; stalls: the ring ran dry",
        ]
        table.print()
    }

    private var command: String {
        var words = ["chorus-bench", "follow"]
        for spec in output { words += ["--output", spec] }
        words += ["--clock-ppm", Format.fixed(clockPPM, 1), "--rate", "\(rate)"]
        if let changeRate { words += ["--change-rate", "\(changeRate)"] }
        words += ["--seconds", Format.fixed(seconds, 1), "--runs", "\(runs)", "--lead-ms", "\(leadMilliseconds)", file]
        return words.map(ChildProcess.quoted).joined(separator: " ")
    }

    // MARK: - One run

    private func measure(spec: OutputSpec) throws -> Run {
        let item = AVPlayerItem(url: URL(fileURLWithPath: file))
        let player = AVPlayer(playerItem: item, output: spec)
        defer { player.close() }
        player.automaticallyWaitsToMinimizeStalling = false
        let deadline = HostTime.now() + Self.readyTimeout
        while item.status != .readyToPlay {
            if item.status == .failed { throw BenchError("\(file): \(item.error.map { $0.localizedDescription } ?? "failed")") }
            guard HostTime.now() < deadline else { throw BenchError("timed out waiting for \(file) on \(spec)") }
            usleep(UInt32(Self.sampleInterval.microseconds))
        }
        guard item.duration.seconds >= seconds else { throw BenchError("\(file) is shorter than --seconds \(seconds)") }
        let now = HostTime.now()
        let master = CMClock(hostClock: MonotonicHostClock(), anchorHostTime: now, anchorTime: .zero, rate: 1 + clockPPM * 1e-6)
        player.masterClock = master
        let startHost = now + .milliseconds(leadMilliseconds)
        player.setRate(rate, time: .zero, atHostTime: startHost.cmTime)
        // The item time the master clock puts at a host time: from the start, or from the
        // change once it is past, at the rate then, in the clock's seconds.
        var anchors = [(host: startHost, itemSeconds: 0.0, rate: Double(rate))]
        func expectedItemSeconds(at host: HostTime) -> Double {
            let anchor = anchors.last { $0.host <= host } ?? anchors[0]
            return anchor.itemSeconds + anchor.rate * (master.time(atHostTime: host) - master.time(atHostTime: anchor.host)).seconds
        }
        var result = Run()
        let end = startHost + .nanoseconds(Int64(seconds * 1e9))
        let changeHost = changeRate.map { _ in startHost + .nanoseconds(Int64(seconds / 2 * 1e9)) }
        var changed = false
        while HostTime.now() < end {
            usleep(UInt32(Self.sampleInterval.microseconds))
            let status = player.renderStatus
            let before = HostTime.now()
            let current = player.currentTime()
            let after = HostTime.now()
            if status.phase == .playing, player.timeControlStatus == .playing, current.isNumeric {
                let middle = before + (after - before) / 2
                let currentError = after - before <= Self.maximumReadingDuration ? current.seconds - expectedItemSeconds(at: middle) : nil
                result.readings.append(Reading(elapsed: middle - startHost, timelineError: status.timelineError / .seconds(1),
                                               currentTimeError: currentError))
            }
            if let changeRate, let changeHost, !changed, after >= changeHost {
                changed = true
                let asked = HostTime.now()
                let at = asked + Self.changeLead
                let time = player.itemTime(forHostTime: at.cmTime)
                player.setRate(changeRate, time: time, atHostTime: at.cmTime)
                anchors.append((at, expectedItemSeconds(at: at), Double(changeRate)))
                result.changeAskedAt = asked - startHost
                result.changeAt = at - startHost
            }
        }
        let status = player.renderStatus
        result.hardResyncs = status.hardResyncs
        result.timelineBreaks = status.timelineBreaks
        result.stalls = status.stalls
        return result
    }
}
