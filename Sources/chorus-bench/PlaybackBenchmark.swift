import ArgumentParser
import Foundation
import MediaPipeline

/// `chorus-bench playback FILE`: the CPU time and peak memory of `chorus play` next to
/// `ffplay` and `mpv` playing the same file to the end through ALSA's default device; with
/// `--rate R`, each at that speed with its pitch kept (chorus: its time-domain engine;
/// ffplay: FFmpeg's `atempo`; mpv: its default `scaletempo2`).
///
/// Both are run to completion one after the other (not at once, so neither steals the
/// other's core) and measured from outside with `wait4`: user + system time over the whole
/// life of the process, start-up and shut-down included, and the peak resident set.
/// ffplay plays through SDL, which would talk to PulseAudio directly; `SDL_AUDIODRIVER=alsa`
/// sends it through ALSA's `default` like Chorus, so both pay for the same path.
struct PlaybackBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "playback",
        abstract: "CPU and peak memory to play a file: chorus play vs ffplay and mpv, through ALSA.")

    /// A player whose run lasted less than this share of the file's duration did not play
    /// it through (ffplay exits 0 even when it cannot open the device), so its figures mean
    /// nothing.
    static let minimumPlayedShare = 0.9
    /// Kibibytes in a mebibyte: `ru_maxrss` is in KiB, the table in MiB.
    static let kibibytesPerMebibyte = 1024.0

    @Argument(help: "The media file to play (about 20 s keeps the run short).")
    var file: String

    @Option(name: .long, help: "The chorus program to measure.")
    var chorus = "chorus"

    @Option(name: .long, help: "The ffplay program to compare with.")
    var ffplay = "ffplay"

    @Option(name: .long, help: "The mpv program to compare with (\"\" leaves it out).")
    var mpv = "mpv"

    @Option(name: .long, help: "The speed to play at, pitch kept (0.5 to 2: atempo's range in one filter).")
    var rate = 1.0

    @Option(name: .long, help: "The ALSA device both play to.")
    var device = "default"

    @Option(name: .long, help: "Runs of each player; the one with the least CPU time counts.")
    var repeats = 1

    @Option(name: .long, help: "Append headline figures to this file (for scripts/bench.sh).")
    var summary: String?

    func validate() throws {
        guard repeats >= 1 else { throw ValidationError("--repeats must be at least 1") }
        guard rate >= 0.5, rate <= 2 else { throw ValidationError("--rate must be from 0.5 to 2") }
    }

    func run() throws {
        let duration: Double
        do throws(MediaError) {
            duration = try MediaSource(url: file).info.duration.seconds
        } catch {
            throw BenchError(error.description)
        }
        let speed = rate == 1 ? [] : ["--rate", "\(rate)"]
        let tempo = rate == 1 ? [] : ["-af", "atempo=\(rate)"]
        var players = [
            ("chorus", ChildProcess([chorus, "play", "--output", "alsa:\(device)", "--quiet"] + speed + [file])),
            ("ffplay", ChildProcess([ffplay, "-nodisp", "-autoexit", "-loglevel", "error"] + tempo + [file],
                                    environment: ["SDL_AUDIODRIVER": "alsa", "AUDIODEV": device])),
        ]
        if !mpv.isEmpty {
            players.append(("mpv", ChildProcess([mpv, "--no-config", "--no-video", "--really-quiet", "--ao=alsa",
                                                 "--audio-device=alsa/\(device)", "--speed=\(rate)", file])))
        }
        let playedSeconds = duration / rate
        var outcomes: [String: ChildProcess.Outcome] = [:]
        for (name, player) in players {
            var runs: [ChildProcess.Outcome] = []
            for _ in 0..<repeats {
                let outcome = try player.run()
                guard outcome.succeeded else { throw BenchError("\(name) failed (exit \(outcome.exitStatus)): \(player.commandLine)") }
                guard !duration.isFinite || outcome.wall.seconds >= playedSeconds * Self.minimumPlayedShare else {
                    throw BenchError("\(name) stopped after \(Format.fixed(outcome.wall.seconds, 2)) s of a \(Format.fixed(duration, 2)) s file: \(player.commandLine)")
                }
                runs.append(outcome)
            }
            // The run with the least CPU: interference from the other core's load only adds
            // CPU time (cache misses, migrations), so the least is the least disturbed.
            outcomes[name] = runs.min { $0.usage.cpu < $1.usage.cpu }
        }

        var table = Table(
            title: "playback: CPU and peak memory over a whole play-through\(rate == 1 ? "" : " at \(rate)×, pitch kept") (lower is better)",
            command: (["chorus-bench", "playback", "--chorus", chorus, "--device", device] + (rate == 1 ? [] : ["--rate", "\(rate)"]) + [file]).map(ChildProcess.quoted).joined(separator: " "),
            header: ["player", "wall s", "user s", "sys s", "CPU s", "CPU % of wall", "peak RSS MB"])
        func row(_ name: String, _ outcome: ChildProcess.Outcome) -> [String] {
            [name, Format.fixed(outcome.wall.seconds, 2), Format.fixed(outcome.usage.user.seconds, 3),
             Format.fixed(outcome.usage.system.seconds, 3), Format.fixed(outcome.usage.cpu.seconds, 3),
             Format.fixed(100 * outcome.usage.cpu.seconds / outcome.wall.seconds, 2),
             Format.fixed(Double(outcome.usage.peakResidentKiB) / Self.kibibytesPerMebibyte, 1)]
        }
        guard let mine = outcomes["chorus"], let peer = outcomes["ffplay"] else { return }
        table.add(row("chorus", mine))
        table.add(row("ffplay", peer))
        let third = outcomes["mpv"]
        if let third { table.add(row("mpv", third)) }
        let cpuRatio = Format.ratio(mine.usage.cpu.seconds, peer.usage.cpu.seconds)
        let rssRatio = Format.ratio(Double(mine.usage.peakResidentKiB), Double(peer.usage.peakResidentKiB))
        table.add(["chorus/ffplay", Format.ratio(mine.wall.seconds, peer.wall.seconds), Format.ratio(mine.usage.user.seconds, peer.usage.user.seconds),
                   Format.ratio(mine.usage.system.seconds, peer.usage.system.seconds), cpuRatio,
                   Format.ratio(mine.usage.cpu.seconds / mine.wall.seconds, peer.usage.cpu.seconds / peer.wall.seconds), rssRatio])
        if let third {
            table.add(["chorus/mpv", Format.ratio(mine.wall.seconds, third.wall.seconds), Format.ratio(mine.usage.user.seconds, third.usage.user.seconds),
                       Format.ratio(mine.usage.system.seconds, third.usage.system.seconds), Format.ratio(mine.usage.cpu.seconds, third.usage.cpu.seconds),
                       Format.ratio(mine.usage.cpu.seconds / mine.wall.seconds, third.usage.cpu.seconds / third.wall.seconds),
                       Format.ratio(Double(mine.usage.peakResidentKiB), Double(third.usage.peakResidentKiB))])
        }
        table.notes = [
            "chorus: `\(players[0].1.commandLine)`",
            "ffplay: `\(players[1].1.commandLine)`; SDL_AUDIODRIVER=alsa makes SDL use ALSA's \(device) (through the pulse plugin here) instead of talking to PulseAudio itself",
            "wait4 rusage of each child: CPU over its whole life (start-up, decoding, the device path, shut-down), peak RSS = ru_maxrss",
            "run one after the other, \(repeats) run(s) each, the run with the least CPU shown; ffplay decodes with the same FFmpeg libraries",
        ]
        table.print()
        let sink = SummaryFile(path: summary)
        let label = rate == 1 ? "" : " at \(rate)×"
        sink.record("playback", "CPU chorus/ffplay\(label)", cpuRatio, aim: "lower is better")
        if let third { sink.record("playback", "CPU chorus/mpv\(label)", Format.ratio(mine.usage.cpu.seconds, third.usage.cpu.seconds), aim: "lower is better") }
        sink.record("playback", "peak RSS chorus/ffplay", rssRatio, aim: "lower is better")
        sink.record("playback", "chorus CPU % of wall", Format.fixed(100 * mine.usage.cpu.seconds / mine.wall.seconds, 2) + "%")
    }
}
