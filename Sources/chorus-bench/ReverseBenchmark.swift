import ArgumentParser
import Foundation
import MediaClock
import MediaPipeline
import MutexAnnotations
import Synchronization

/// `chorus-bench reverse [FILE]`: the CPU it costs to play a file's pictures backwards from
/// its end to its start, for Chorus's `ReverseVideoReader` and for `mpv --play-dir=backward`,
/// each against a forward decode of the same pictures by ffmpeg.
///
/// Backwards, a decoder still has to go forwards from a keyframe, so a player keeps the
/// pictures of a group decoded until it can show them newest first; a group longer than it
/// can keep is decoded again for the part before them. The default file is the hard case:
/// 12 s of 1080p at 30 fps with one keyframe every ten seconds (a group of 300 pictures).
///
/// Chorus runs in this process: the reader queues into a `VideoFrameQueue` that this thread
/// empties as fast as pictures come (each taken as due the moment the one after it was
/// shown), so its cost is this process's CPU over the run, opening included, and the run is
/// as fast as the decoding allows. mpv runs `--untimed` with no output, which shows each
/// picture as soon as it is decoded; ffmpeg decodes forward to `-f null`. Both are measured
/// from outside by `wait4`, their start-up included (tens of ms). Each figure is the least
/// CPU of `--repeats` runs.
struct ReverseBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reverse",
        abstract: "CPU to play pictures backwards: chorus's reverse reader vs mpv --play-dir=backward, against a forward decode.")

    /// The default file: its length (s), frame rate (fps) and keyframe interval (pictures).
    static let defaultSeconds = 12
    static let defaultFrameRate = 30
    static let defaultKeyframeInterval = 300
    /// How long the drain loop sleeps when no picture is due yet: short next to a picture's
    /// decoding (milliseconds at 1080p), so the reader never waits on a full queue for long.
    static let emptyQueueSleepMicroseconds: UInt32 = 200
    /// The longest one backwards run may take before it counts as stuck.
    static let patience: Duration = .seconds(300)
    /// How far from the item's start the last picture shown may be for the run to have
    /// reached it: a first picture stamped a little after zero (an encoder's delay).
    static let startTolerance: Duration = .milliseconds(100)

    @Argument(help: "The video to play backwards (default: 12 s of 1080p, one keyframe every 10 s).")
    var file: String?

    @Option(name: .long, help: "The mpv program to compare with (\"\" leaves it out).")
    var mpv = "mpv"

    @Option(name: .long, help: "The ffmpeg program (the forward decode, and the default file).")
    var ffmpeg = "ffmpeg"

    @Option(name: .long, help: "Runs of each; the one with the least CPU counts.")
    var repeats = 3

    @Option(name: .long, help: "Append headline figures to this file (for scripts/bench.sh).")
    var summary: String?

    func validate() throws {
        guard repeats >= 1 else { throw ValidationError("--repeats must be at least 1") }
    }

    func run() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("chorus-reverse-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path: String
        if let file {
            path = file
        } else {
            path = folder.appendingPathComponent("long-groups.mp4").path
            try GaplessBenchmark.tool([ffmpeg, "-v", "error", "-y", "-f", "lavfi",
                                       "-i", "testsrc2=size=1920x1080:rate=\(Self.defaultFrameRate):duration=\(Self.defaultSeconds)",
                                       "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p",
                                       "-g", "\(Self.defaultKeyframeInterval)", "-keyint_min", "\(Self.defaultKeyframeInterval)",
                                       "-sc_threshold", "0", path])
        }
        let info: MediaInfo
        do throws(MediaError) {
            info = try MediaSource(url: path).info
        } catch {
            throw BenchError(error.description)
        }
        guard info.preferredVideoTrack != nil, info.duration.isNumeric else { throw BenchError("\(path) has no pictures of known length") }
        let endNanoseconds = info.duration.convertScale(1_000_000_000, method: .roundTowardZero).value

        let forward = try leastCPU(ChildProcess([ffmpeg, "-nostdin", "-v", "error", "-i", path, "-map", "0:v:0", "-f", "null", "-"]))
        var rows: [(name: String, cpu: Duration, decoded: Int?, shown: Int?, peakMiB: Double?)] = []
        let budget = "\(ReverseVideoReader.defaultStashBudgetBytes >> 20) MiB"
        for (name, budget) in [("chorus, \(budget) held", ReverseVideoReader.defaultStashBudgetBytes), ("chorus, 48 pictures held (the fewest)", 0)] {
            var best: (cpu: Duration, decoded: Int, shown: Int)?
            for _ in 0..<repeats {
                let run = try backwards(path, from: endNanoseconds, stashBudgetBytes: budget)
                if best.map({ run.cpu < $0.cpu }) ?? true { best = run }
            }
            if let best { rows.append((name, best.cpu, best.decoded, best.shown, nil)) }
        }
        if !mpv.isEmpty {
            let outcome = try leastOutcome(ChildProcess([mpv, "--no-config", "--really-quiet", "--play-dir=backward", "--start=100%",
                                                         "--untimed", "--vo=null", "--no-audio", path]))
            rows.append(("mpv --play-dir=backward", outcome.usage.cpu, nil, nil,
                         Double(outcome.usage.peakResidentKiB) / PlaybackBenchmark.kibibytesPerMebibyte))
        }

        var table = Table(
            title: "reverse: CPU to play every picture backwards, against ffmpeg decoding them forwards (lower is better)",
            command: (["chorus-bench", "reverse", "--repeats", "\(repeats)"] + (file.map { [$0] } ?? [])).map(ChildProcess.quoted).joined(separator: " "),
            header: ["player", "CPU s", "× forward decode", "pictures decoded", "pictures shown", "peak RSS MB"])
        table.add(["ffmpeg forward (-f null)", Format.fixed(forward.seconds, 3), "1.00", "", "", ""])
        let sink = SummaryFile(path: summary)
        for row in rows {
            let ratio = Format.ratio(row.cpu.seconds, forward.seconds)
            table.add([row.name, Format.fixed(row.cpu.seconds, 3), ratio, row.decoded.map(String.init) ?? "",
                       row.shown.map(String.init) ?? "", row.peakMiB.map { Format.fixed($0, 0) } ?? ""])
            sink.record("reverse", "CPU \(row.name) / forward decode", ratio, aim: "lower is better")
        }
        table.notes = [
            "file: \(file ?? "12 s of testsrc2 at 1920×1080, 30 fps, x264 veryfast, a keyframe every 300 pictures")",
            "chorus: ReverseVideoReader in this process, its queue emptied as fast as pictures come; CPU = this process's getrusage over the run",
            "mpv: `--play-dir=backward --start=100% --untimed --vo=null --no-audio` (its video reversal buffer is 1 GiB by default); ffmpeg and mpv: wait4 rusage, start-up included",
            "least CPU of \(repeats) run(s) each",
        ]
        table.print()
    }

    /// Plays `path`'s pictures backwards from `endNanoseconds` to its start with a stash of
    /// `stashBudgetBytes`: the CPU it cost, the pictures decoded and those shown.
    private func backwards(_ path: String, from endNanoseconds: Int64, stashBudgetBytes: Int) throws -> (cpu: Duration, decoded: Int, shown: Int) {
        guard let queue = VideoFrameQueue() else { throw BenchError("cannot make a picture queue") }
        let ended = Atomic<Bool>(false)
        let failure = Mutex<String?>(nil)
        let before = ResourceUsage.ofThisProcess()
        let reader = ReverseVideoReader(url: path, queue: queue, item: 0, stashBudgetBytes: stashBudgetBytes) { event in
            switch event {
            case .decodedToEnd: ended.store(true, ordering: .relaxed)
            case .failed(_, let error): failure.withLockAnnotated { $0 = error.description }
            default: break
            }
        }
        defer { reader.stop() }
        queue.flush(toSerial: 1, backwards: true)
        reader.seek(toItemNanoseconds: endNanoseconds, serial: 1, endNanoseconds: 0)
        var due = endNanoseconds
        var shown = 0
        var earliestShown = Int64.max
        let deadline = HostTime.now() + Self.patience
        while HostTime.now() < deadline {
            if let failed = failure.withLockAnnotated({ $0 }) { throw BenchError("chorus could not play \(path) backwards: \(failed)") }
            switch queue.next(dueNanoseconds: due, showFirstEarly: false) {
            case .show(let planes):
                shown += 1
                earliestShown = min(earliestShown, planes.info.itemNanoseconds)
                // The picture before it is due as soon as this one has been shown.
                due = planes.info.itemNanoseconds - 1
            case .keep:
                if (ended.load(ordering: .relaxed) && queue.queuedItemNanoseconds().isEmpty) || due < 0 {
                    let cost = ResourceUsage.ofThisProcess().since(before).cpu
                    // A run that ended before the start is a fault, not a cheap run.
                    guard earliestShown <= Self.startTolerance.nanosecondsClamped else {
                        throw BenchError("chorus stopped \(Double(earliestShown) / 1e9) s from the start of \(path) playing backwards")
                    }
                    return (cost, reader.picturesDecoded, shown)
                }
                usleep(Self.emptyQueueSleepMicroseconds)
            }
        }
        throw BenchError("chorus did not reach the start of \(path) within \(Self.patience)")
    }

    private func leastOutcome(_ child: ChildProcess) throws -> ChildProcess.Outcome {
        var best: ChildProcess.Outcome?
        for _ in 0..<repeats {
            let outcome = try child.run()
            guard outcome.succeeded else { throw BenchError("failed (exit \(outcome.exitStatus)): \(child.commandLine)") }
            if best.map({ outcome.usage.cpu < $0.usage.cpu }) ?? true { best = outcome }
        }
        guard let best else { throw BenchError("no run of \(child.commandLine)") }
        return best
    }

    private func leastCPU(_ child: ChildProcess) throws -> Duration { try leastOutcome(child).usage.cpu }
}
