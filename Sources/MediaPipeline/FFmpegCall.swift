internal import CFFmpeg
import Foundation

/// Helpers around FFmpeg's integer error codes.
enum FFmpegCall {
    /// FFmpeg's own text for an error code.
    static func message(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        buffer.withUnsafeMutableBufferPointer { chorus_av_strerror(code, $0.baseAddress, $0.count) }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static let eof = chorus_averror_eof()
    static let again = chorus_averror_eagain()
    static let invalidData = chorus_averror_invaliddata()
    static let exit = chorus_averror_exit()
    static let noPTS = chorus_av_nopts_value()
    /// A read failed because a fetch was refused for its server's certificate
    /// (`MediaSource.readFrame`); not one of FFmpeg's own codes.
    static let certificateRefused = chorus_averror_certificate_refused()
    /// `AVERROR(ENOMEM)`: FFmpeg's codes are negated errno values.
    static let outOfMemory = -Int32(ENOMEM)
}

/// A negative FFmpeg status code as an error value.
struct FFmpegStatus: Error, CustomStringConvertible {
    let code: Int32
    var description: String { FFmpegCall.message(code) }
}
