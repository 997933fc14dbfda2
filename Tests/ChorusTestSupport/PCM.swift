import Foundation

/// Interleaved float PCM, for comparing what Chorus rendered with FFmpeg's own decode.
public struct PCM: Sendable {
    public var sampleRate: Int
    public var channels: Int
    public var samples: [Float]
    public var frameCount: Int { channels > 0 ? samples.count / channels : 0 }

    /// Reads a float or 16-bit WAV (plain or extensible).
    public init(wavFile url: URL) throws {
        let data = try Data(contentsOf: url)
        func u16(_ at: Int) -> Int { Int(data[at]) | Int(data[at + 1]) << 8 }
        func u32(_ at: Int) -> Int { u16(at) | u16(at + 2) << 16 }
        guard data.count >= 12, data.prefix(4) == Data("RIFF".utf8) else { throw TestMediaError.badWAV("no RIFF header") }
        var offset = 12
        var format = 0, bits = 0
        sampleRate = 0
        channels = 0
        samples = []
        while offset + 8 <= data.count {
            let id = String(decoding: data[offset..<offset + 4], as: UTF8.self)
            let size = u32(offset + 4)
            let body = offset + 8
            if id == "fmt " {
                format = u16(body)
                channels = u16(body + 2)
                sampleRate = u32(body + 4)
                bits = u16(body + 14)
                if format == 0xFFFE { format = u16(body + 24) }
            } else if id == "data" {
                let end = min(data.count, body + size)
                let bytes = data[body..<end]
                if format == 3 && bits == 32 {
                    samples = bytes.withUnsafeBytes { raw in Array(raw.bindMemory(to: Float.self)) }
                } else if format == 1 && bits == 16 {
                    samples = bytes.withUnsafeBytes { raw in raw.bindMemory(to: Int16.self).map { Float($0) / 32768 } }
                } else {
                    throw TestMediaError.badWAV("format \(format) with \(bits) bits")
                }
                return
            }
            offset = body + size + (size & 1)
        }
        throw TestMediaError.badWAV("no data chunk")
    }

    public init(sampleRate: Int, channels: Int, samples: [Float]) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.samples = samples
    }

    /// FFmpeg's decode of `url` as float, at its own rate and channel count unless given.
    public static func ffmpegDecode(_ url: URL, sampleRate: Int? = nil, channels: Int) throws -> PCM {
        var arguments = ["-v", "error", "-i", url.path, "-vn", "-f", "f32le", "-c:a", "pcm_f32le", "-ac", "\(channels)"]
        if let sampleRate { arguments += ["-ar", "\(sampleRate)"] }
        let result = try Run.command("ffmpeg", arguments + ["-"])
        guard result.status == 0 else { throw TestMediaError.ffmpegFailed(url.lastPathComponent, result.standardError) }
        let samples = result.standardOutput.withUnsafeBytes { raw in Array(raw.bindMemory(to: Float.self)) }
        return PCM(sampleRate: sampleRate ?? 0, channels: channels, samples: samples)
    }

    /// The largest absolute difference between two signals over their common length.
    public func maximumDifference(from other: PCM) -> Float {
        let count = min(samples.count, other.samples.count)
        var worst: Float = 0
        for index in 0..<count { worst = max(worst, abs(samples[index] - other.samples[index])) }
        return worst
    }

    /// The index of the first frame with any sample above `threshold`.
    public func firstFrame(above threshold: Float) -> Int? {
        guard channels > 0 else { return nil }
        for index in samples.indices where abs(samples[index]) > threshold { return index / channels }
        return nil
    }
}
