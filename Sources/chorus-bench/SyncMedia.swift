import Foundation

/// The sync benchmark's media: a click train whose every click is an unambiguous feature.
///
/// 48 kHz stereo, 16-bit. Every `clickInterval` a `clickLength` burst of a 1 kHz cosine
/// starts at full level (its first sample is loud, after silence), then silence. Render
/// captures do not care what is played; recordings of a sink's monitor (Snapcast, and
/// Chorus through ALSA) find each click's first loud sample with `ALSACapture`'s onset
/// detector, which wants at least 100 ms of silence before each onset.
enum SyncMedia {
    static let sampleRate = 48_000
    static let channels = 2
    /// Click spacing: eight clicks a second for many samples, each after 120 ms of silence,
    /// and far more than any offset measured, so clicks pair up unambiguously.
    static let clickInterval: Duration = .milliseconds(125)
    /// Click length: short, so most of the interval is the silence the onset detector needs.
    static let clickLength: Duration = .milliseconds(5)
    static let clickFrequency = 1_000.0
    static let clickLevel = 0.5

    /// Writes `seconds` of the click train as a WAV file (for Chorus) and, when asked, the
    /// same samples as raw s16le (for Snapcast's file source). Skips files already there
    /// and long enough.
    static func write(wav: String, raw: String?, seconds: Int) throws {
        let frames = sampleRate * seconds
        let dataBytes = frames * channels * 2
        let wantWAV = fileSize(wav) != dataBytes + 44
        let wantRaw = raw.map { fileSize($0) != dataBytes } ?? false
        guard wantWAV || wantRaw else { return }
        var pcm = [UInt8]()
        pcm.reserveCapacity(dataBytes)
        let interval = Int(Double(sampleRate) * clickInterval.seconds)
        let length = Int(Double(sampleRate) * clickLength.seconds)
        for frame in 0..<frames {
            let inClick = frame % interval
            var sample: Int16 = 0
            if inClick < length {
                let value = clickLevel * cos(2 * Double.pi * clickFrequency * Double(inClick) / Double(sampleRate))
                sample = Int16((value * 32_767).rounded())
            }
            let bits = UInt16(bitPattern: sample)
            for _ in 0..<channels {
                pcm.append(UInt8(bits & 0xff))
                pcm.append(UInt8(bits >> 8))
            }
        }
        if wantWAV {
            var header = [UInt8]()
            func u32(_ v: Int) { for shift in stride(from: 0, to: 32, by: 8) { header.append(UInt8((v >> shift) & 0xff)) } }
            func u16(_ v: Int) { header.append(UInt8(v & 0xff)); header.append(UInt8((v >> 8) & 0xff)) }
            header += Array("RIFF".utf8); u32(36 + dataBytes); header += Array("WAVE".utf8)
            header += Array("fmt ".utf8); u32(16); u16(1); u16(channels); u32(sampleRate)
            u32(sampleRate * channels * 2); u16(channels * 2); u16(16)
            header += Array("data".utf8); u32(dataBytes)
            guard FileManager.default.createFile(atPath: wav, contents: Data(header + pcm)) else {
                throw BenchError("cannot write \(wav)")
            }
        }
        if let raw, wantRaw {
            guard FileManager.default.createFile(atPath: raw, contents: Data(pcm)) else {
                throw BenchError("cannot write \(raw)")
            }
        }
    }

    private static func fileSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? -1
    }
}
