import ArgumentParser
import AVPlayback
import Foundation
import MediaClock
import MediaPipeline

/// `chorus-bench seek`: how long a seek takes, from the command to the first sound of the
/// new place heard at the sink, for Chorus's `AVPlayer`, `mpv` and `ffplay` side by side.
///
/// Each item is silent for its first half and loud for its second, so the first loud sample
/// after a seek from the silent half into the loud half is the seek's first sound, heard on
/// the null sink's monitor outside every player (`ALSACapture`).
///
/// - While playing: the player plays the silent half for a while, then is told to seek into
///   the loud half, exactly (zero tolerance; mpv's `absolute+exact`) and by the default
///   (Apple's default tolerance; mpv's `absolute+keyframes`). Chorus is driven in this
///   process through `AVPlayer`; mpv through its JSON IPC socket. ffplay has no interface to
///   send a seek to a running player, so it is not in this table.
/// - At open: each player is launched starting in the loud half (`chorus play --start`,
///   `mpv --start`, `ffplay -ss`), and timed from launch to first sound, start-up included.
struct SeekBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seek",
        abstract: "Seek latency, command to first sound, exact and default: chorus vs mpv (and ffplay at open).")

    /// Seconds of silence, then as many of tone, in each item.
    static let halfSeconds = 20
    /// Where the seek goes, in seconds: well into the loud half, away from its edges, and
    /// not on a keyframe-like boundary (MP3 frames, AAC frames, Opus pages all differ).
    static let target = 27.3
    /// How long a player plays the silent half before the seek (seconds): its output is
    /// running and its read-ahead full, as for a listener who seeks mid-song.
    static let playBeforeSeek = 1.5
    /// Silence left between runs (seconds): the capture needs 100 ms of it before an onset.
    static let pauseBetweenRuns = 0.3
    /// The longest a seek may take to sound before the run counts as a failure.
    static let patience: Duration = .seconds(10)
    /// How long mpv gets to create its IPC socket after launch.
    static let socketPatience: Duration = .seconds(10)

    @OptionGroup var options: HeardPlayersOptions

    var chorus: String { options.chorus }
    var mpv: String { options.mpv }
    var ffplay: String { options.ffplay }
    var runs: Int { options.runs }
    var captureDevice: String { options.captureDevice }
    var monitorSource: String { options.monitorSource }
    var summary: String? { options.summary }

    /// The formats measured: name, file extension, ffmpeg's encoder arguments.
    static let formats: [(name: String, fileExtension: String, codec: [String])] = [
        ("MP3", "mp3", ["-c:a", "libmp3lame", "-b:a", "192k"]),
        ("AAC", "m4a", ["-c:a", "aac", "-b:a", "128k"]),
        ("FLAC", "flac", ["-c:a", "flac"]),
        ("Opus", "opus", ["-c:a", "libopus", "-b:a", "128k"]),
        ("Vorbis", "ogg", ["-c:a", "libvorbis", "-q:a", "5"]),
    ]

    func run() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("chorus-seek-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let half = Double(Self.halfSeconds)
        let tone = "if(gte(t\\,\(half))\\,0.5*cos(2*PI*1000*t)\\,0)"
        let source = "aevalsrc=\(tone)|\(tone):s=48000:d=\(2 * Self.halfSeconds)"
        var files: [(name: String, url: URL)] = []
        for format in Self.formats {
            let file = folder.appendingPathComponent("item.\(format.fileExtension)")
            try GaplessBenchmark.tool(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", source] + format.codec + [file.path])
            files.append((format.name, file))
        }

        setenv("PULSE_SOURCE", monitorSource, 1)
        let capture = try ALSACapture(device: captureDevice, format: AudioFormat(sampleRate: 48_000, channels: 2))
        capture.start()
        defer { capture.stop() }
        let sink = SummaryFile(path: summary)

        var playing = Table(
            title: "seek while playing: command to the first sound of the new place at the sink, median of \(runs) runs, ms (lower is better)",
            command: "chorus-bench seek --runs \(runs)",
            header: ["format", "chorus exact", "mpv exact", "chorus - mpv", "chorus default", "mpv keyframes", "chorus - mpv"])
        var exactDifferences: [Double] = [], defaultDifferences: [Double] = []
        for file in files {
            var medians: [String: Double] = [:]
            for exact in [true, false] {
                let mine = try (0..<runs).compactMap { _ in try chorusSeek(file.url, exact: exact, capture: capture) }
                let theirs = try (0..<runs).compactMap { _ in try mpvSeek(file.url, exact: exact, capture: capture, folder: folder) }
                medians["chorus \(exact)"] = mine.isEmpty ? .nan : Statistics(mine).median
                medians["mpv \(exact)"] = theirs.isEmpty ? .nan : Statistics(theirs).median
            }
            let (ce, me, cd, md) = (medians["chorus true"] ?? .nan, medians["mpv true"] ?? .nan,
                                    medians["chorus false"] ?? .nan, medians["mpv false"] ?? .nan)
            exactDifferences.append(ce - me)
            defaultDifferences.append(cd - md)
            playing.add([file.name, Format.fixed(ce, 0), Format.fixed(me, 0), Format.fixed(ce - me, 0),
                         Format.fixed(cd, 0), Format.fixed(md, 0), Format.fixed(cd - md, 0)])
        }
        playing.notes = [
            "items: \(Self.halfSeconds) s of silence then \(Self.halfSeconds) s of a 1 kHz tone, 48 kHz stereo; each player plays from 0 for \(Self.playBeforeSeek) s, then seeks to \(Self.target) s",
            "chorus: AVPlayer in this process through ALSA's default device, seek(to:toleranceBefore: .zero, toleranceAfter: .zero) and seek(to:); mpv: --ao=alsa, its IPC socket, `seek T absolute+exact` and `absolute+keyframes`",
            "time: from just before the command is sent to the host time of the first loud sample heard on the null sink's monitor",
            "the capture path's own latency report carries a constant error of its own (see start), which moves every figure of a run alike, by up to tens of ms between runs: the difference between the players is the figure to read, and ratios of such small times would mislead",
        ]
        playing.print()
        sink.record("seek", "exact seek while playing: chorus - mpv ms (median over formats)", Format.fixed(median(exactDifferences), 0), aim: "lower is better")
        sink.record("seek", "default seek while playing: chorus - mpv ms (median over formats)", Format.fixed(median(defaultDifferences), 0), aim: "lower is better")

        var atOpen = Table(
            title: "seek at open: launch to the first sound \(Self.target) s in, median of \(runs) runs, ms (lower is better)",
            command: "chorus-bench seek --runs \(runs)",
            header: ["format", "chorus", "mpv", "ffplay", "chorus/mpv", "chorus/ffplay"])
        let start = String(Self.target)
        let players: [(name: String, command: (String) -> [String], environment: [String: String])] = [
            ("chorus", { [chorus, "play", "--quiet", "--output", "alsa:default", "--start", start, $0] }, [:]),
            ("mpv", { [mpv, "--no-config", "--no-video", "--really-quiet", "--ao=alsa", "--audio-device=alsa/default", "--start=\(start)", $0] }, [:]),
            ("ffplay", { [ffplay, "-nodisp", "-autoexit", "-loglevel", "error", "-ss", start, $0] }, ["SDL_AUDIODRIVER": "alsa", "AUDIODEV": "default"]),
        ]
        for file in files {
            var medians: [String: Double] = [:]
            for player in players {
                let times = try (0..<runs).compactMap { _ in
                    try FirstSoundBenchmark.firstSound(player.command(file.url.path), environment: player.environment, capture: capture,
                                                       pause: Self.pauseBetweenRuns, patience: Self.patience)
                }
                medians[player.name] = times.isEmpty ? .nan : Statistics(times).median
            }
            let (c, m, f) = (medians["chorus"] ?? .nan, medians["mpv"] ?? .nan, medians["ffplay"] ?? .nan)
            atOpen.add([file.name, Format.fixed(c, 0), Format.fixed(m, 0), Format.fixed(f, 0), Format.ratio(c, m), Format.ratio(c, f)])
        }
        atOpen.notes = [
            "the same items, each player launched to start at \(Self.target) s: chorus play --start, mpv --start, ffplay -ss; start-up counted, as in first-sound",
        ]
        atOpen.print()
    }

    private func median(_ values: [Double]) -> Double {
        let finite = values.filter(\.isFinite)
        return finite.isEmpty ? .nan : Statistics(finite).median
    }

    /// Plays `url` from its start, seeks into its loud half, and returns the milliseconds from
    /// the seek to its first sound; nil when nothing was heard in time.
    private func chorusSeek(_ url: URL, exact: Bool, capture: ALSACapture) throws -> Double? {
        usleep(UInt32(Self.pauseBetweenRuns * 1_000_000))
        let item = AVPlayerItem(url: url)
        let player = AVPlayer(playerItem: item, output: .alsa(device: "default"))
        defer { player.close() }
        player.play()
        let ready = ContinuousClock.now + Self.patience
        while player.timeControlStatus != .playing {
            guard ContinuousClock.now < ready else { return nil }
            usleep(10_000)
        }
        usleep(UInt32(Self.playBeforeSeek * 1_000_000))
        let mark = capture.mark
        let target = CMTime(seconds: Self.target, preferredTimescale: 1_000_000)
        let asked = HostTime.now()
        if exact {
            player.seek(to: target, toleranceBefore: .zero, toleranceAfter: .zero)
        } else {
            player.seek(to: target)
        }
        guard let onset = try capture.waitForOnset(after: mark, timeout: Self.patience) else { return nil }
        return Double((onset.hostTime - asked).nanosecondsClamped) / 1e6
    }

    /// The same through mpv, driven over its JSON IPC socket.
    private func mpvSeek(_ url: URL, exact: Bool, capture: ALSACapture, folder: URL) throws -> Double? {
        usleep(UInt32(Self.pauseBetweenRuns * 1_000_000))
        let socketPath = folder.appendingPathComponent("mpv.sock").path
        unlink(socketPath)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [mpv, "--no-config", "--no-video", "--really-quiet", "--ao=alsa", "--audio-device=alsa/default",
                             "--input-ipc-server=\(socketPath)", url.path]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer {
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }
        let socketDeadline = ContinuousClock.now + Self.socketPatience
        var connection: IPCConnection?
        while connection == nil {
            guard ContinuousClock.now < socketDeadline else { return nil }
            connection = IPCConnection(path: socketPath)
            if connection == nil { usleep(20_000) }
        }
        guard let connection else { return nil }
        // mpv has opened the file and its output once its socket answers; it then plays the
        // silent half as Chorus does before its seek.
        usleep(UInt32(Self.playBeforeSeek * 1_000_000))
        let mark = capture.mark
        let flags = exact ? "absolute+exact" : "absolute+keyframes"
        let asked = HostTime.now()
        guard connection.send("{\"command\": [\"seek\", \(Self.target), \"\(flags)\"]}\n") else { return nil }
        guard let onset = try capture.waitForOnset(after: mark, timeout: Self.patience) else { return nil }
        return Double((onset.hostTime - asked).nanosecondsClamped) / 1e6
    }
}

/// A client end of a UNIX stream socket (mpv's IPC server), for sending lines.
final class IPCConnection {
    private let descriptor: Int32

    /// Connects to the socket at `path`; nil when nothing listens there yet.
    init?(path: String) {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.utf8.count < capacity else { close(fd); return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.utf8)
            raw[path.utf8.count] = 0
        }
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else { close(fd); return nil }
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// Writes `line` whole; false when the socket failed.
    func send(_ line: String) -> Bool {
        let bytes = Array(line.utf8)
        var sent = 0
        while sent < bytes.count {
            let written = bytes[sent...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard written > 0 else { return false }
            sent += written
        }
        return true
    }
}
