import Foundation

/// Why a piece of media could not be opened, decoded or played.
///
/// Every case names the input it is about, so a message printed on its own still says which
/// file or URL failed and why.
public enum MediaError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file does not exist.
    case fileNotFound(url: String)
    /// The input exists but is empty.
    case emptyFile(url: String)
    /// The input could not be read: permission, I/O error, or a host that did not answer.
    case networkFailure(url: String, reason: String)
    /// The URL itself is malformed or uses a scheme nothing here can read.
    case badURL(url: String, reason: String)
    /// The bytes are not a container or codec FFmpeg knows.
    case unsupportedFormat(url: String, reason: String)
    /// The container was recognised but its data is damaged or cut short.
    case corruptData(url: String, reason: String)
    /// The media is encrypted or otherwise protected.
    case protectedContent(url: String)
    /// The media has no stream this player can render (for example, a still image).
    case noPlayableTrack(url: String)
    /// The output device could not be opened or configured.
    case outputFailure(device: String, reason: String)
    /// The operation was cancelled before it finished.
    case cancelled(url: String)

    /// The input this error is about (a device name for output failures).
    public var url: String {
        switch self {
        case .fileNotFound(let url), .emptyFile(let url), .protectedContent(let url),
             .noPlayableTrack(let url), .cancelled(let url):
            return url
        case .networkFailure(let url, _), .badURL(let url, _), .unsupportedFormat(let url, _),
             .corruptData(let url, _):
            return url
        case .outputFailure(let device, _):
            return device
        }
    }

    public var description: String {
        switch self {
        case .fileNotFound(let url): return "\(url): no such file"
        case .emptyFile(let url): return "\(url): the file is empty"
        case .networkFailure(let url, let reason): return "\(url): cannot read: \(reason)"
        case .badURL(let url, let reason): return "\(url): bad URL: \(reason)"
        case .unsupportedFormat(let url, let reason): return "\(url): unsupported format: \(reason)"
        case .corruptData(let url, let reason): return "\(url): corrupt data: \(reason)"
        case .protectedContent(let url): return "\(url): the content is protected"
        case .noPlayableTrack(let url): return "\(url): no audio or video track to play"
        case .outputFailure(let device, let reason): return "output \(device): \(reason)"
        case .cancelled(let url): return "\(url): cancelled"
        }
    }
}

extension MediaError: LocalizedError {
    public var errorDescription: String? { description }
}
