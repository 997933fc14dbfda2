import ArgumentParser
import ChorusSimulation
import Foundation
import GroupSync
import MediaClock
import MediaPipeline

/// `chorus-bench video`: pictures, measured.
///
/// - CPU: `chorus play` beside `mpv` and `ffplay` on the same files (generated 1080p30 and
///   720p60 H.264 with AAC, or the files given), each in a window of the same size on the
///   same display, sound through ALSA's default device, one after the other, measured
///   whole-process with `wait4`.
/// - From Chorus's own capture (`--capture`: every period of sound and every picture the
///   window presented, on the machine's clock): pictures dropped, each picture against its
///   sound (lip-sync), and the time to the first picture.
/// - A group: a leader without a window and two followers with windows side by side, the
///   second joining late; the same picture's presentation on both screens, each screen's
///   pictures against its sound, and the late joiner's time to its first picture.
///
/// Figures from the capture are Chorus's own account of when it handed each picture to the
/// display (right after SDL's present returned), not a camera's.
struct VideoBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "video",
        abstract: "Pictures: CPU against mpv and ffplay, dropped pictures, lip-sync, and a group's screens against each other.")

    /// Half a 60 Hz refresh, in nanoseconds: two screens within it show a picture at the
    /// same refresh.
    static let sameRefreshTolerance: Int64 = 8_333_333
    /// Seconds of each capture left out at its start: the first pictures of a start.
    static let settleSeconds = 1.0

    @Argument(help: "Video files with sound (default: generated 1080p30 and 720p60 H.264 with AAC).")
    var files: [String] = []

    @Option(name: .long, help: "The chorus program to measure (chorus-sim for the group).")
    var chorus = "chorus"

    @Option(name: .long, help: "Seconds of each file to play.")
    var seconds = 15.0

    @Option(name: .long, help: "The window's size, WxH, for every player.")
    var size = "960x540"

    @Option(name: .long, help: "A directory for generated media and captures.")
    var workDir = "/tmp/chorus-bench-video"

    @Option(name: .long, help: "The group's UDP port (and the next one up for HTTP; the impaired run takes the two after).")
    var port = 47_950

    @Flag(name: .long, help: "Skip mpv and ffplay (Chorus's own figures only).")
    var noPeers = false

    @Option(name: .long, help: "Append headline figures to this file (for scripts/bench.sh).")
    var summary: String?

    func validate() throws {
        guard seconds >= 3, seconds.isFinite else { throw ValidationError("--seconds must be at least 3") }
        guard size.split(separator: "x").compactMap({ Int($0) }).count == 2 else { throw ValidationError("--size must be WxH") }
        guard ProcessInfo.processInfo.environment["DISPLAY"] != nil || ProcessInfo.processInfo.environment["WAYLAND_DISPLAY"] != nil else {
            throw ValidationError("no display: run under one (make bench starts a private Xvfb)")
        }
    }

    func run() throws {
        try FileManager.default.createDirectory(atPath: workDir, withIntermediateDirectories: true)
        let media = files.isEmpty ? try generate() : files
        let sink = SummaryFile(path: summary)
        for file in media { try measurePlayers(file, sink: sink) }
        if let first = media.first {
            try measureGroup(first, impaired: false, sink: sink)
            try measureGroup(first, impaired: true, sink: sink)
        }
    }

    /// The default files: 1080p30 and 720p60 H.264 (x264 "veryfast", as a download would
    /// be coded) with AAC stereo, `seconds` long.
    private func generate() throws -> [String] {
        let specs = [("1080p30", "1920x1080", 30), ("720p60", "1280x720", 60)]
        return try specs.map { name, dimensions, rate in
            let path = "\(workDir)/\(name)-\(Int(seconds))s.mp4"
            if FileManager.default.fileExists(atPath: path) { return path }
            let made = try ChildProcess(["ffmpeg", "-v", "error", "-y",
                                         "-f", "lavfi", "-i", "testsrc2=size=\(dimensions):rate=\(rate):duration=\(seconds)",
                                         "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=\(seconds)",
                                         "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-g", "\(rate)",
                                         "-c:a", "aac", "-ac", "2", "-shortest", path]).run()
            guard made.succeeded else { throw BenchError("ffmpeg could not make \(path)") }
            return path
        }
    }

    private func measurePlayers(_ file: String, sink: SummaryFile) throws {
        let name = URL(fileURLWithPath: file).lastPathComponent
        let capture = "\(workDir)/play-\(name).cap"
        let dimensions = size.split(separator: "x").map(String.init)
        let end = String(format: "%.3f", seconds)
        var players: [(String, ChildProcess)] = [
            ("chorus", ChildProcess([chorus, "play", "--output", "alsa:default", "--quiet", "--video", "window",
                                     "--geometry", "\(size)+0+0", "--capture", capture, "--log-level", "error", file])),
        ]
        if !noPeers {
            players.append(("mpv", ChildProcess(["mpv", "--no-config", "--really-quiet", "--vo=sdl", "--ao=alsa", "--geometry=\(size)+0+0",
                                                 "--end=\(end)", file])))
            players.append(("ffplay", ChildProcess(["ffplay", "-autoexit", "-loglevel", "error", "-x", dimensions[0], "-y", dimensions[1],
                                                    "-left", "0", "-top", "0", "-t", end, file],
                                                   environment: ["SDL_AUDIODRIVER": "alsa"])))
        }
        var outcomes: [(String, ChildProcess.Outcome)] = []
        var launched = HostTime.now()
        for (player, process) in players {
            if player == "chorus" { launched = HostTime.now() }
            let outcome = try process.run()
            guard outcome.succeeded else { throw BenchError("\(player) failed (exit \(outcome.exitStatus)): \(process.commandLine)") }
            outcomes.append((player, outcome))
        }
        var table = Table(title: "video: \(name), \(size) window, sound through ALSA (lower is better)",
                          command: "chorus-bench video --seconds \(Int(seconds)) \(file)",
                          header: ["player", "wall s", "CPU s", "CPU % of wall", "peak RSS MB"])
        for (player, outcome) in outcomes {
            table.add([player, Format.fixed(outcome.wall.seconds, 2), Format.fixed(outcome.usage.cpu.seconds, 2),
                       Format.fixed(100 * outcome.usage.cpu.seconds / outcome.wall.seconds, 1),
                       Format.fixed(Double(outcome.usage.peakResidentKiB) / 1024, 1)])
        }
        let mine = outcomes[0].1
        for (player, outcome) in outcomes.dropFirst() {
            let ratio = Format.ratio(mine.usage.cpu.seconds / mine.wall.seconds, outcome.usage.cpu.seconds / outcome.wall.seconds)
            table.add(["chorus/\(player)", "", "", ratio, ""])
            sink.record("video \(name)", "CPU chorus/\(player) (per second played)", ratio, aim: "≤ 1.2 × mpv")
        }
        let log = try RenderCaptureLog(path: capture)
        let settle = Int64(Self.settleSeconds * 1e9)
        let presented = Set(log.pictures.filter { $0.itemNanoseconds >= settle }.map(\.itemNanoseconds)).count
        let frameRate = try MediaSource(url: file).info.preferredVideoTrack?.frameRate ?? 0
        let played = (log.pictures.last.map { Double($0.itemNanoseconds) / 1e9 } ?? 0) - Self.settleSeconds
        let expected = max(0, Int((played * frameRate).rounded()) + 1)
        let dropped = max(0, expected - presented)
        let lipSync = log.pictureToSound(skip: settle)
        let firstPicture = log.pictures.first.map { Double($0.host - launched.nanoseconds) / 1e9 }
        table.notes = [
            "chorus: `\(players[0].1.commandLine)`",
            noPeers ? "peers skipped (--no-peers)" : "mpv: `\(players[1].1.commandLine)`; ffplay: `\(players[2].1.commandLine)` (SDL_AUDIODRIVER=alsa)",
            "the same window size and display for all; each to the end of \(end) s, one after the other; wait4 CPU over the whole process; ratios per second played",
            "chorus, from its capture after the first \(Self.settleSeconds) s: \(presented) of \(expected) pictures presented (\(dropped) dropped)"
                + (firstPicture.map { String(format: "; first picture %.2f s after launch", $0) } ?? ""),
            Self.describe("chorus, picture against its sound (positive: picture late)", lipSync),
        ]
        table.print()
        sink.record("video \(name)", "pictures dropped (chorus)", "\(dropped) of \(expected)")
        if let stats = Self.signedSummary(lipSync) {
            sink.record("video \(name)", "picture − sound median / p99 |·| ms", stats, aim: "±5 ms median, p99 within a frame")
        }
        if let firstPicture { sink.record("video \(name)", "time to first picture, play", String(format: "%.2f s", firstPicture)) }
    }

    /// Runs the group; `impaired` puts each screen's clock messages behind the project's
    /// own relay on the sync benchmark's impaired path (5 ms ± 2 ms each way, 10 % loss).
    private func measureGroup(_ file: String, impaired: Bool, sink: SummaryFile) throws {
        let dir = "\(workDir)/group\(impaired ? "-impaired" : "")"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let dimensions = size.split(separator: "x").compactMap { Int($0) }
        // A port pair of its own for each run, so the second never meets the first's sockets.
        let groupPort = port + (impaired ? 2 : 0)
        let listen = "127.0.0.1:\(groupPort)"
        var relays: [ImpairmentRelay] = []
        defer { relays.forEach { $0.stop() } }
        var targets = [listen, listen]
        if impaired {
            guard let leaderEndpoint = UDPEndpoint(parsing: listen) else { throw BenchError("bad address \(listen)") }
            for index in 0..<2 {
                var impairment = SyncBenchmark.impairment
                impairment.seed = UInt64(index + 1)
                do {
                    let relay = try ImpairmentRelay(listeningOn: .loopbackIPv4(port: 0), forwardingTo: leaderEndpoint, impairment: impairment)
                    relays.append(relay)
                    targets[index] = relay.listenEndpoint.description
                } catch {
                    throw BenchError("cannot start a relay: \(error)")
                }
            }
        }
        let leader = NodeProcess(name: "leader", arguments: [chorus, "lead", file, "--listen", listen, "--output", "null", "--quiet",
                                                            "--capture", "\(dir)/leader.cap"], logPath: "\(dir)/leader.log")
        var followers: [NodeProcess] = []
        for index in 0..<2 {
            followers.append(NodeProcess(name: "screen\(index + 1)",
                                         arguments: [chorus, "follow", targets[index], "--name", "screen\(index + 1)", "--output", "alsa:default",
                                                     "--video", "window", "--geometry", "\(dimensions[0] / 2)x\(dimensions[1] / 2)+\(index * dimensions[0] / 2)+0",
                                                     "--capture", "\(dir)/screen\(index + 1).cap"],
                                         logPath: "\(dir)/screen\(index + 1).log"))
        }
        defer { (followers + [leader]).reversed().forEach { $0.stop() } }
        try leader.start()
        Thread.sleep(forTimeInterval: 0.5)
        try followers[0].start()
        // The second screen joins mid-item.
        let lateJoin = min(3.0, seconds / 3)
        Thread.sleep(forTimeInterval: lateJoin)
        try followers[1].start()
        Thread.sleep(forTimeInterval: max(1, seconds - lateJoin - 1.5))
        followers.forEach { $0.stop() }
        leader.stop()
        let first = try RenderCaptureLog(path: "\(dir)/screen1.cap"), second = try RenderCaptureLog(path: "\(dir)/screen2.cap")
        // Compared from a second after the late joiner's first picture.
        let joinedAt = second.pictures.first?.itemNanoseconds ?? 0
        let skip = joinedAt + Int64(Self.settleSeconds * 1e9)
        let offsets = second.pictureOffsets(against: first, skip: skip)
        let share = second.samePictureShare(against: first, skip: skip, tolerance: Self.sameRefreshTolerance)
        let joinTime = second.pictures.first.map { Double($0.host - followers[1].launchedAt.nanoseconds) / 1e9 }
        let path = impaired ? "the impaired path (the project's relay: 5 ms ± 2 ms, 10 % loss)" : "loopback"
        var table = Table(title: "video group over \(path): two screens of one leader, the second joining \(Format.fixed(lateJoin, 1)) s in",
                          command: "chorus-bench video --seconds \(Int(seconds)) \(file)",
                          header: ["figure", "value"])
        table.add(["same picture at the same refresh (after the join + \(Self.settleSeconds) s)", share.map { Format.fixed($0 * 100, 2) + " %" } ?? "n/a"])
        table.add(["screen 2 − screen 1, |median| / p99 / max ms", Self.magnitudes(offsets)])
        table.add(["screen 1 picture − sound, median / p99 |·| ms", Self.signedSummary(first.pictureToSound(skip: skip)) ?? "n/a"])
        table.add(["screen 2 picture − sound, median / p99 |·| ms", Self.signedSummary(second.pictureToSound(skip: skip)) ?? "n/a"])
        table.add(["late joiner: launch to first picture", joinTime.map { Format.fixed($0, 2) + " s" } ?? "n/a"])
        table.notes = [
            "leader: `\(leader.commandLine)`; screens like: `\(followers[1].commandLine)`",
            "one machine, one display, real clocks (no simulation)\(impaired ? "; clock messages through the project's own relay, the media over HTTP direct" : ", loopback"); captures give each presentation on the machine's clock",
            "a refresh of the display is \(Self.sameRefreshTolerance * 2 / 1_000_000) ms; screens within half of it show a picture at the same refresh",
        ]
        table.print()
        let group = impaired ? "video group, impaired" : "video group"
        if let share { sink.record(group, "same picture at the same refresh", Format.fixed(share * 100, 2) + " %", aim: "≥ 99.9 %") }
        sink.record(group, "screen offset |median| / p99 / max ms", Self.magnitudes(offsets))
        if let joinTime { sink.record(group, "late joiner to first picture", Format.fixed(joinTime, 2) + " s", aim: "< 2 s") }
    }

    /// "median / p99 / max" of the magnitudes, in ms.
    static func magnitudes(_ offsets: [Double]) -> String {
        guard let a = RenderCaptureLog.Agreement(offsets: offsets) else { return "n/a" }
        return String(format: "%.2f / %.2f / %.2f", a.median * 1e3, a.p99 * 1e3, a.maximum * 1e3)
    }

    /// "signed median / p99 of magnitudes" in ms.
    static func signedSummary(_ offsets: [Double]) -> String? {
        guard !offsets.isEmpty, let a = RenderCaptureLog.Agreement(offsets: offsets) else { return nil }
        let sorted = offsets.sorted()
        return String(format: "%+.2f / %.2f", sorted[sorted.count / 2] * 1e3, a.p99 * 1e3)
    }

    static func describe(_ what: String, _ offsets: [Double]) -> String {
        guard let summary = signedSummary(offsets) else { return "\(what): none" }
        let worst = offsets.map(abs).max() ?? 0
        return "\(what): median \(summary.replacingOccurrences(of: " / ", with: " ms, p99 |·| ")) ms, max |·| \(String(format: "%.2f", worst * 1e3)) ms, \(offsets.count) pictures"
    }
}
