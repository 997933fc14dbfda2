import Foundation
import MediaClock
import Synchronization

/// Renders every frame the player would play into a WAV file, as fast as possible.
///
/// The file holds exactly the samples the render thread produced, silence included, as
/// 32-bit float PCM (WAVE_FORMAT_EXTENSIBLE when there are more than two channels). Its
/// clock is virtual: frame N is "presented" at the host time of `open` plus N frames at the
/// nominal rate, so scheduled starts become leading silence of the right length.
///
/// The render thread writes through a buffer allocated at `open`; the file is written with
/// plain `write(2)` calls, which is acceptable here because nothing is heard in real time.
// @unchecked: as `AudioOutput` requires, `open` and `close` run while no render thread uses
// the output and everything else on the render thread alone, so the descriptor and counts
// have one thread at a time.
public final class WAVFileOutput: AudioOutput, @unchecked Sendable {
    /// Frames rendered per call: 4096 keeps system calls few without much memory.
    public static let periodFrameCount = 4096

    public let path: String
    public var name: String { "wav:\(path)" }
    public private(set) var format = AudioFormat.fallback
    public let periodFrames = WAVFileOutput.periodFrameCount
    public let isRealtime = false
    public let underrunCount = 0
    private var descriptor: Int32 = -1
    private var openedAt = HostTime(nanoseconds: 0)
    private var framesWritten: Int64 = 0
    private var failed = false

    public init(path: String) { self.path = path }

    public func open(preferred: AudioFormat) throws(MediaError) {
        format = preferred
        descriptor = Foundation.open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard descriptor >= 0 else {
            throw .outputFailure(device: name, reason: String(cString: strerror(errno)))
        }
        openedAt = .now()
        framesWritten = 0
        let header = Self.header(format: format, frames: 0)
        guard writeAll(header) else { throw .outputFailure(device: name, reason: String(cString: strerror(errno))) }
    }

    public func waitUntilWritable(frames: Int, timeout: Duration) -> Int { periodFrames }

    /// The file's virtual clock: every frame written so far lasted its nominal time since
    /// `open`, and nothing is queued.
    public func presentationTimestamp() -> PresentationTimestamp {
        PresentationTimestamp(host: openedAt + format.duration(ofFrames: framesWritten))
    }

    public func write(_ samples: UnsafePointer<Float>, frames: Int) -> Int {
        guard descriptor >= 0, !failed else { return frames }
        let bytes = UnsafeRawBufferPointer(start: samples, count: frames * format.channels * MemoryLayout<Float>.size)
        if !writeAll(bytes) { failed = true }
        framesWritten += Int64(frames)
        return frames
    }

    public func flush() {}

    /// Finishes the header with the final sizes and closes the file.
    public func close() {
        guard descriptor >= 0 else { return }
        let header = Self.header(format: format, frames: framesWritten)
        if lseek(descriptor, 0, SEEK_SET) == 0 { _ = writeAll(header) }
        Foundation.close(descriptor)
        descriptor = -1
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var offset = 0
        while offset < bytes.count {
            let n = Foundation.write(descriptor, base + offset, bytes.count - offset)
            if n < 0 { if errno == EINTR { continue }; return false }
            offset += n
        }
        return true
    }

    private func writeAll(_ data: [UInt8]) -> Bool { data.withUnsafeBytes { writeAll($0) } }

    /// A RIFF/WAVE header for float PCM; sizes saturate at 4 GiB as the format requires.
    static func header(format: AudioFormat, frames: Int64) -> [UInt8] {
        let bytesPerSample = 4
        let blockAlign = format.channels * bytesPerSample
        let dataBytes = UInt32(clamping: frames * Int64(blockAlign))
        let extensible = format.channels > 2
        let fmtSize: UInt32 = extensible ? 40 : 18
        var out: [UInt8] = []
        func u16(_ v: UInt16) { out += [UInt8(v & 0xff), UInt8(v >> 8)] }
        func u32(_ v: UInt32) { for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8((v >> UInt32(shift)) & 0xff)) } }
        out += Array("RIFF".utf8)
        u32(UInt32(clamping: 4 + (8 + Int64(fmtSize)) + (8 + 4 + 4) + 8 + Int64(dataBytes)))
        out += Array("WAVE".utf8)
        out += Array("fmt ".utf8)
        u32(fmtSize)
        u16(extensible ? 0xFFFE : 3)  // WAVE_FORMAT_EXTENSIBLE or WAVE_FORMAT_IEEE_FLOAT
        u16(UInt16(format.channels))
        u32(UInt32(format.sampleRate))
        u32(UInt32(format.sampleRate * blockAlign))
        u16(UInt16(blockAlign))
        u16(UInt16(bytesPerSample * 8))
        if extensible {
            u16(22)
            u16(UInt16(bytesPerSample * 8))
            u32(Self.channelMask(format.channels))
            // KSDATAFORMAT_SUBTYPE_IEEE_FLOAT
            out += [0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
        } else {
            u16(0)
        }
        // A fact chunk is required for non-PCM formats.
        out += Array("fact".utf8)
        u32(4)
        u32(UInt32(clamping: frames))
        out += Array("data".utf8)
        u32(dataBytes)
        return out
    }

    /// The speaker mask FFmpeg uses by default for each channel count.
    static func channelMask(_ channels: Int) -> UInt32 {
        switch channels {
        case 1: return 0x4
        case 2: return 0x3
        case 3: return 0x7
        case 4: return 0x107
        case 5: return 0x37
        case 6: return 0x3F
        case 7: return 0x13F
        case 8: return 0x63F
        default: return 0
        }
    }
}
