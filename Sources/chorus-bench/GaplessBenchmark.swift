import ArgumentParser
import Foundation

/// `chorus-bench gapless`: how exactly a queue's items join, for `chorus play` and for
/// `mpv --gapless-audio=yes` on the same files.
///
/// Three consecutive parts of one continuous sweep (a tone rising steadily in pitch, so no
/// two stretches of it look alike, as a steady tone's periods do) are encoded as separate files in each
/// codec (lengths that end mid-packet), played as a queue into a file by each player, and
/// the render is compared with the sweep itself: at each join, the lag that best aligns the
/// sound just after it with the sweep, against the lag just before it, is the samples the
/// join lost (positive) or repeated (negative); 0 is a perfect join. The total length error
/// says the same over the whole queue. Both players' decoders trim the encoders' delay and
/// padding as far as they know it, which is the point of the comparison.
struct GaplessBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gapless",
        abstract: "Sample error at a queue's joins: chorus play vs mpv --gapless-audio, per codec.")

    /// The parts' offsets and lengths in the sweep (seconds): ends inside packets of every
    /// codec's frame size.
    static let parts: [(offset: Double, seconds: Double)] = [(0, 0.7), (0.7, 1.3), (2.0, 0.9)]
    /// The sweep's sample rate: one every codec here encodes natively.
    static let sampleRate = 48_000
    /// The sweep's frequency at time 0 (Hz) and its rise (Hz per second): 200 Hz to 1,070 Hz
    /// over the queue, well inside every codec's band.
    static let startFrequency = 200.0
    static let rise = 300.0

    /// The sweep at `time` seconds.
    static func sweep(at time: Double) -> Double {
        0.4 * sin(2 * Double.pi * (startFrequency * time + rise / 2 * time * time))
    }
    /// How far (samples) the lag search looks each way at a join.
    static let searchSamples = 4_800
    /// The window compared on each side of a join (samples), skipping `guardSamples` next
    /// to it, where a lossy codec's own restart smears the edge.
    static let windowSamples = 2_400
    static let guardSamples = 1_200

    @Option(name: .long, help: "The chorus program to measure.")
    var chorus = "chorus"

    @Option(name: .long, help: "The mpv program to compare with.")
    var mpv = "mpv"

    @Option(name: .long, help: "Append headline figures to this file (for scripts/bench.sh).")
    var summary: String?

    func run() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("chorus-gapless-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let codecs: [(name: String, ext: String, arguments: [String])] = [
            ("mp3", "mp3", ["-c:a", "libmp3lame", "-b:a", "192k"]),
            ("aac", "m4a", ["-c:a", "aac", "-b:a", "192k"]),
            ("opus", "opus", ["-c:a", "libopus", "-b:a", "128k"]),
            ("vorbis", "ogg", ["-c:a", "libvorbis", "-q:a", "6"]),
            ("flac", "flac", ["-c:a", "flac"]),
        ]
        var table = Table(
            title: "gapless: samples lost (+) or repeated (-) at each join, and the queue's length error (0 is exact)",
            command: "chorus-bench gapless",
            header: ["codec", "chorus joins", "chorus length", "mpv joins", "mpv length"])
        var chorusWorst = 0, mpvWorst = 0
        let expectedFrames = Int((Self.parts.map(\.seconds).reduce(0, +) * Double(Self.sampleRate)).rounded())
        for codec in codecs {
            var files: [String] = []
            for (index, part) in Self.parts.enumerated() {
                let path = folder.appendingPathComponent("part\(index).\(codec.ext)").path
                let time = "(t+\(part.offset))"
                let tone = "0.4*sin(2*PI*(\(Self.startFrequency)*\(time)+\(Self.rise / 2)*\(time)*\(time)))"
                try Self.tool(["ffmpeg", "-v", "error", "-y", "-f", "lavfi",
                               "-i", "aevalsrc=\(tone)|\(tone):s=\(Self.sampleRate):d=\(part.seconds):c=stereo"]
                              + codec.arguments + [path])
                files.append(path)
            }
            let chorusOut = folder.appendingPathComponent("chorus-\(codec.name).wav").path
            try Self.tool([chorus, "play", "--quiet", "--output", "wav:\(chorusOut)"] + files)
            let mpvOut = folder.appendingPathComponent("mpv-\(codec.name).wav").path
            try Self.tool([mpv, "--no-config", "--no-video", "--really-quiet", "--gapless-audio=yes", "--ao=pcm",
                           "--ao-pcm-file=\(mpvOut)", "--audio-format=float", "--audio-samplerate=\(Self.sampleRate)",
                           "--audio-channels=stereo"] + files)
            let mine = try Self.leftChannel(of: chorusOut)
            let theirs = try Self.leftChannel(of: mpvOut)
            let myJoins = Self.joinErrors(mine)
            let theirJoins = Self.joinErrors(theirs)
            chorusWorst = max(chorusWorst, myJoins.map(abs).max() ?? 0)
            mpvWorst = max(mpvWorst, theirJoins.map(abs).max() ?? 0)
            table.add([codec.name, myJoins.map(String.init).joined(separator: ", "), "\(mine.count - expectedFrames)",
                       theirJoins.map(String.init).joined(separator: ", "), "\(theirs.count - expectedFrames)"])
        }
        table.notes = [
"parts of one sweep (\(Int(Self.startFrequency)) Hz rising \(Int(Self.rise)) Hz/s): \(Self.parts.map { "\($0.seconds) s" }.joined(separator: ", ")), \(Self.sampleRate) Hz stereo, each its own file",
            "chorus: `chorus play --output wav:OUT FILES`; mpv: `mpv --gapless-audio=yes --ao=pcm --ao-pcm-file=OUT FILES`",
            "join error: the lag aligning the sound \(Self.guardSamples) to \(Self.guardSamples + Self.windowSamples) samples after a join with the sweep, less the lag before it",
            "length: samples rendered less the parts' own (\(expectedFrames)); mpv's file also holds its output's own start and end",
        ]
        table.print()
        let sink = SummaryFile(path: summary)
        sink.record("gapless", "worst join error, chorus (samples)", "\(chorusWorst)", aim: "0")
        sink.record("gapless", "worst join error, mpv (samples)", "\(mpvWorst)")
    }

    /// Runs a tool to completion; throws with its standard error when it fails.
    static func tool(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchError("\(arguments[0]) failed: \(String(decoding: message, as: UTF8.self))")
        }
    }

    /// The left channel of an audio file, as FFmpeg decodes it to float at the sweep's rate.
    static func leftChannel(of path: String) throws -> [Float] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ffmpeg", "-v", "error", "-i", path, "-f", "f32le", "-ac", "2", "-ar", "\(sampleRate)", "-"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchError("ffmpeg could not read \(path)") }
        let interleaved = data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        return stride(from: 0, to: interleaved.count - 1, by: 2).map { interleaved[$0] }
    }

    /// The join errors of `signal` against the sweep, one per join.
    static func joinErrors(_ signal: [Float]) -> [Int] {
        // Where the render starts on the sweep: the lag that aligns its opening.
        let lead = bestLag(signal, at: guardSamples)
        var errors: [Int] = []
        var join = 0.0
        for part in parts.dropLast() {
            join += part.seconds
            let at = Int((join * Double(sampleRate)).rounded()) + lead
            let before = bestLag(signal, at: at - guardSamples - windowSamples)
            let after = bestLag(signal, at: at + guardSamples)
            errors.append(after - before)
        }
        return errors
    }

    /// The lag (samples) at which `signal[start ..< start + windowSamples]` best matches the
    /// sweep at `start - lag`: the least squared difference.
    static func bestLag(_ signal: [Float], at start: Int) -> Int {
        var best = (lag: 0, error: Double.infinity)
        guard start >= 0, start + windowSamples <= signal.count else { return 0 }
        for lag in -searchSamples...searchSamples {
            var error = 0.0
            for index in start..<(start + windowSamples) {
                let expected = sweep(at: Double(index - lag) / Double(sampleRate))
                let difference = Double(signal[index]) - expected
                error += difference * difference
                if error >= best.error { break }
            }
            if error < best.error { best = (lag, error) }
        }
        return best.lag
    }
}
