import ArgumentParser
import Foundation
import MediaClock
import MediaPipeline
import MediaServer

/// `chorus-bench first-sound`: how long from launching a player on a network item to its
/// first sound leaving the sink, for `chorus play`, `mpv` and `ffplay` side by side: an MP3
/// over HTTP and an HLS playlist, both served from this machine by Chorus's own HTTP server.
///
/// The sound is the null sink's monitor, recorded through ALSA (`ALSACapture`), so it is
/// measured outside every player; the item is loud from its first sample, so its first
/// loud sample is its first sound. From launch, so each player's start-up (process, libraries,
/// opening the device, the network, its buffering) is counted as a user would wait for it.
struct FirstSoundBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "first-sound",
        abstract: "Launch to first sound for an HTTP MP3 and an HLS playlist: chorus play vs mpv and ffplay.")

    /// Silence left between runs (seconds): the capture needs 100 ms of it before an onset.
    static let pauseBetweenRuns = 0.5
    /// The longest a player may take to sound before its run counts as a failure.
    static let patience: Duration = .seconds(15)
    /// How long each item is (seconds): longer than any start, short enough to end soon.
    static let itemSeconds = 6

    @OptionGroup var options: HeardPlayersOptions

    var chorus: String { options.chorus }
    var mpv: String { options.mpv }
    var ffplay: String { options.ffplay }
    var runs: Int { options.runs }
    var captureDevice: String { options.captureDevice }
    var monitorSource: String { options.monitorSource }
    var summary: String? { options.summary }

    func run() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("chorus-first-sound-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // A tone loud from its first sample.
        let tone = "0.5*cos(2*PI*1000*t)"
        let source = "aevalsrc=\(tone)|\(tone):s=48000:d=\(Self.itemSeconds)"
        let mp3 = folder.appendingPathComponent("item.mp3")
        try GaplessBenchmark.tool(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", source, "-c:a", "libmp3lame", "-b:a", "192k", mp3.path])
        let hls = folder.appendingPathComponent("hls")
        try FileManager.default.createDirectory(at: hls, withIntermediateDirectories: true)
        try GaplessBenchmark.tool(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", source, "-c:a", "aac", "-b:a", "128k",
                                   "-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod",
                                   "-hls_segment_filename", hls.appendingPathComponent("segment%02d.ts").path,
                                   hls.appendingPathComponent("index.m3u8").path])

        let server = try MediaHTTPServer(address: "127.0.0.1", port: 0)
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"
        let mp3URL = base + server.publish(mp3, id: "mp3")
        for segment in try FileManager.default.contentsOfDirectory(atPath: hls.path) where segment.hasSuffix(".ts") {
            _ = server.publish(hls.appendingPathComponent(segment), id: "hls")
        }
        let hlsURL = base + server.publish(hls.appendingPathComponent("index.m3u8"), id: "hls")

        setenv("PULSE_SOURCE", monitorSource, 1)
        let capture = try ALSACapture(device: captureDevice, format: AudioFormat(sampleRate: 48_000, channels: 2))
        capture.start()
        defer { capture.stop() }

        let players: [(name: String, command: (String) -> [String], environment: [String: String])] = [
            ("chorus", { [chorus, "play", "--quiet", "--output", "alsa:default", $0] }, [:]),
            ("mpv", { [mpv, "--no-config", "--no-video", "--really-quiet", "--ao=alsa", "--audio-device=alsa/default", $0] }, [:]),
            ("ffplay", { [ffplay, "-nodisp", "-autoexit", "-loglevel", "error", $0] }, ["SDL_AUDIODRIVER": "alsa", "AUDIODEV": "default"]),
        ]
        var table = Table(
            title: "first sound: launch to the first sample heard at the sink, median of \(runs) runs (lower is better)",
            command: "chorus-bench first-sound --runs \(runs)",
            header: ["item", "chorus ms", "mpv ms", "ffplay ms", "chorus/mpv", "chorus/ffplay"])
        let sink = SummaryFile(path: summary)
        for (label, url) in [("MP3 over HTTP", mp3URL), ("HLS", hlsURL)] {
            var medians: [String: Double] = [:]
            for player in players {
                var times: [Double] = []
                for _ in 0..<runs {
                    if let milliseconds = try Self.firstSound(player.command(url), environment: player.environment, capture: capture) {
                        times.append(milliseconds)
                    }
                }
                medians[player.name] = times.isEmpty ? .nan : Statistics(times).median
            }
            let mine = medians["chorus"] ?? .nan
            table.add([label, Format.fixed(mine, 0), Format.fixed(medians["mpv"] ?? .nan, 0), Format.fixed(medians["ffplay"] ?? .nan, 0),
                       Format.ratio(mine, medians["mpv"] ?? .nan), Format.ratio(mine, medians["ffplay"] ?? .nan)])
            sink.record("first-sound", "\(label): chorus/mpv", Format.ratio(mine, medians["mpv"] ?? .nan), aim: "lower is better")
        }
        table.notes = [
            "items: \(Self.itemSeconds) s of a 1 kHz tone loud from its first sample, MP3 192 kb/s and HLS (AAC, 2 s segments), served by MediaHTTPServer on 127.0.0.1",
            "each player plays through ALSA's default device into the PulseAudio null sink; the sink's monitor is recorded through ALSA, outside the players",
            "time: from just before the player's process is started to the host time of the first loud sample heard; a player is stopped once heard",
        ]
        table.print()
    }

    /// Launches `command`, waits for its first sound, stops it; the time in milliseconds,
    /// or nil when nothing was heard in time.
    static func firstSound(_ command: [String], environment: [String: String], capture: ALSACapture,
                           pause: Double = pauseBetweenRuns, patience: Duration = patience) throws -> Double? {
        usleep(UInt32(pause * 1_000_000))
        let mark = capture.mark
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = command
        var merged = ProcessInfo.processInfo.environment
        for (key, value) in environment { merged[key] = value }
        process.environment = merged
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let launched = HostTime.now()
        try process.run()
        defer {
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }
        guard let onset = try capture.waitForOnset(after: mark, timeout: patience) else { return nil }
        return Double((onset.hostTime - launched).nanosecondsClamped) / 1e6
    }
}

/// The options `first-sound` and `seek` share: the players run side by side, and where the
/// sink's monitor is recorded.
struct HeardPlayersOptions: ParsableArguments {
    @Option(name: .long, help: "The chorus program to measure.")
    var chorus = "chorus"

    @Option(name: .long, help: "The mpv program to compare with.")
    var mpv = "mpv"

    @Option(name: .long, help: "The ffplay program to compare with.")
    var ffplay = "ffplay"

    @Option(name: .long, help: "Runs of each measurement; the median counts.")
    var runs = 3

    @Option(name: .long, help: "ALSA device to record the sink's monitor through.")
    var captureDevice = "pulse"

    @Option(name: .long, help: "The PulseAudio source that hears the sink.")
    var monitorSource = "chorus_null.monitor"

    @Option(name: .long, help: "Append headline figures to this file (for scripts/bench.sh).")
    var summary: String?
}
