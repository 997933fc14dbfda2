import ArgumentParser
import Foundation
import MediaPipeline
import MutexAnnotations
import Synchronization

/// `chorus-bench decode FILE...`: CPU time per second of audio to decode and convert to the
/// device format with Chorus's reader, next to ffmpeg decoding the same files.
///
/// Chorus runs in this process: a `MediaSource`, an `AudioRing` and an `AudioReader` whose
/// ring this thread drains as fast as it fills, until the end-of-stream block. Its cost is
/// this process's user + system time around the whole run, opening and probing included.
/// ffmpeg runs twice per file: `-f null` as is (decodes, converts to s16 at the file's rate)
/// and with `-c:a pcm_f32le -ar RATE -ac 2`, which converts to exactly what Chorus produces
/// and so is the like-for-like peer. Its cost is the child's user + system time from
/// `wait4`, less the cost of starting an ffmpeg process at all (measured with
/// `ffmpeg -version`), which Chorus, running in-process, does not pay.
struct DecodeBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode",
        abstract: "CPU per audio second to decode + convert: Chorus's reader vs ffmpeg.")

    /// How long the drain loop sleeps when the ring is empty. Short next to the time the
    /// reader takes to decode a ring's worth (2 s of audio), so the reader never waits on a
    /// full ring; long enough that the drain loop's own wake-ups cost next to nothing.
    static let emptyRingSleepMicroseconds: UInt32 = 200
    /// Output channels: the device format is stereo.
    static let outputChannels = 2

    @Argument(help: "Media files to decode.")
    var files: [String]

    @Option(name: .long, help: "Device sample rate to convert to, in Hz.")
    var rate = 48_000

    @Option(name: .long, help: "Measured runs per file and tool; the fastest counts (after one warm-up).")
    var repeats = 3

    @Option(name: .long, help: "The ffmpeg program.")
    var ffmpeg = "ffmpeg"

    @Option(name: .long, help: "Append headline figures to this file (for scripts/bench.sh).")
    var summary: String?

    func validate() throws {
        guard !files.isEmpty else { throw ValidationError("give at least one file") }
        guard repeats >= 1 else { throw ValidationError("--repeats must be at least 1") }
        guard rate >= 8_000 else { throw ValidationError("--rate must be a sample rate in Hz") }
    }

    func run() throws {
        let format = AudioFormat(sampleRate: rate, channels: Self.outputChannels)
        let quiet = [ffmpeg, "-nostdin", "-hide_banner", "-loglevel", "error"]
        let startup = try fastest { try ChildProcess([ffmpeg, "-hide_banner", "-version"]).run().usage.cpu }

        var table = Table(
            title: "decode: CPU ms per second of audio (lower is better); fastest of \(repeats) after a warm-up",
            command: (["chorus-bench", "decode", "--rate", "\(rate)", "--repeats", "\(repeats)"] + files).map(ChildProcess.quoted).joined(separator: " "),
            header: ["file", "codec", "in Hz", "audio s", "chorus", "ffmpeg f32/\(rate / 1000)k", "ratio", "ffmpeg plain", "ratio"])
        var ratios: [Double] = []
        for file in files {
            let (codec, sourceRate) = try describe(file)
            // Warm-up: page cache, codec tables, lazily initialised libraries.
            _ = try decodeWithChorus(file, format: format)
            var audioSeconds = 0.0
            let chorusCPU = try fastest {
                let before = ResourceUsage.ofThisProcess()
                let frames = try decodeWithChorus(file, format: format)
                let cost = ResourceUsage.ofThisProcess().since(before).cpu
                audioSeconds = Double(frames) / Double(rate)
                return cost
            }
            let resampling = ChildProcess(quiet + ["-i", file, "-vn", "-c:a", "pcm_f32le", "-ar", "\(rate)", "-ac", "\(Self.outputChannels)", "-f", "null", "-"])
            let plain = ChildProcess(quiet + ["-i", file, "-vn", "-f", "null", "-"])
            let resamplingCPU = try childCPU(resampling, less: startup)
            let plainCPU = try childCPU(plain, less: startup)

            let perSecond = { (cost: Duration) in audioSeconds > 0 ? cost.milliseconds / audioSeconds : .nan }
            let chorus = perSecond(chorusCPU)
            let peer = perSecond(resamplingCPU)
            let reference = perSecond(plainCPU)
            ratios.append(chorus / peer)
            table.add([(file as NSString).lastPathComponent, codec, "\(sourceRate)", Format.fixed(audioSeconds, 1),
                       Format.fixed(chorus, 3), Format.fixed(peer, 3), Format.ratio(chorus, peer),
                       Format.fixed(reference, 3), Format.ratio(chorus, reference)])
            SummaryFile(path: summary).record("decode", "\((file as NSString).lastPathComponent) chorus/ffmpeg f32 \(rate / 1000)k",
                                              Format.ratio(chorus, peer), aim: "<= 1.10x")
        }
        let geometric = exp(ratios.map { log($0) }.reduce(0, +) / Double(max(ratios.count, 1)))
        table.add(["geometric mean", "", "", "", "", "", Format.ratio(geometric, 1), "", ""])
        SummaryFile(path: summary).record("decode", "geometric mean chorus/ffmpeg f32 \(rate / 1000)k", Format.ratio(geometric, 1), aim: "<= 1.10x")
        table.notes = [
            "chorus: MediaSource + AudioReader into an AudioRing (\(format)), drained on this thread; getrusage(RUSAGE_SELF) user+sys around open..end-of-stream",
            "ffmpeg f32/\(rate / 1000)k: `\(resamplingLine)`: the same output format as chorus, the like-for-like peer",
            "ffmpeg plain: `\(plainLine)`: decode + convert to s16 at the file's own rate (no resampling), for reference",
            "ffmpeg figures are wait4 user+sys of the child less \(Format.fixed(startup.milliseconds, 1)) ms, the CPU of `ffmpeg -version` (process start and library loading)",
            "ratio = chorus / ffmpeg; aim <= 1.10x against the f32/\(rate / 1000)k peer",
        ]
        table.print()
    }

    private var resamplingLine: String { "ffmpeg -i FILE -vn -c:a pcm_f32le -ar \(rate) -ac \(Self.outputChannels) -f null -" }
    private var plainLine: String { "ffmpeg -i FILE -vn -f null -" }

    /// The smallest of `repeats` measurements: CPU time only grows with interference (the
    /// other core's load, cache misses), so the minimum is the least disturbed run.
    private func fastest(_ measure: () throws -> Duration) throws -> Duration {
        var best = Duration.seconds(Int64.max / 4)
        for _ in 0..<repeats { best = min(best, try measure()) }
        return best
    }

    /// A child's CPU time, fastest of `repeats` after a warm-up, less the process start cost.
    private func childCPU(_ child: ChildProcess, less startup: Duration) throws -> Duration {
        let warm = try child.run()
        guard warm.succeeded else { throw BenchError("failed (exit \(warm.exitStatus)): \(child.commandLine)") }
        let cost = try fastest { try child.run().usage.cpu }
        return max(.zero, cost - startup)
    }

    /// The preferred audio track's codec and sample rate, as Chorus's probe sees them.
    private func describe(_ file: String) throws -> (codec: String, sampleRate: Int) {
        let source: MediaSource
        do throws(MediaError) {
            source = try MediaSource(url: file)
        } catch {
            throw BenchError(error.description)
        }
        guard let track = source.info.preferredAudioTrack else { throw BenchError("\(file): no playable audio track") }
        return (track.codec, track.sampleRate ?? 0)
    }

    /// Decodes `file` to the end into a ring in `format` and returns the frames delivered.
    private func decodeWithChorus(_ file: String, format: AudioFormat) throws -> Int64 {
        let ring = AudioRing(format: format, capacity: PlaybackEngine.readAhead)
        let failure = ReaderFailure()
        let reader: AudioReader
        do throws(MediaError) {
            let source = try MediaSource(url: file)
            reader = try AudioReader(source: source, ring: ring, serial: 1, startFrame: 0) { event in
                if case .failed(_, _, let error) = event { failure.set(error.description) }
            }
        } catch {
            throw BenchError(error.description)
        }
        reader.start()
        defer { reader.stop() }
        var frames: Int64 = 0
        while true {
            guard let head = ring.peek() else {
                usleep(Self.emptyRingSleepMicroseconds)
                continue
            }
            switch head.header.kind {
            case .samples:
                frames += Int64(head.header.frameCount)
                ring.pop()
            case .endOfStream:
                ring.pop()
                return frames
            case .failure:
                throw BenchError("\(file): \(failure.message ?? "decoding failed")")
            }
        }
    }
}

/// The reader's failure message, handed from its thread to the draining one.
private final class ReaderFailure: Sendable {
    private let value = Mutex<String?>(nil)
    var message: String? { value.withLockAnnotated { $0 } }
    func set(_ message: String) { value.withLockAnnotated { $0 = message } }
}
