/// Why a group key file could not be used.
public enum KeyFileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file could not be read (`reason` from the system).
    case unreadable(path: String, reason: String)
    /// The key has fewer than `KeyFile.minimumKeyBytes` bytes after decoding.
    case tooShort(path: String, byteCount: Int)

    /// A sentence naming the file and the problem.
    public var description: String {
        switch self {
        case let .unreadable(path, reason):
            "cannot read key file \(path): \(reason)"
        case let .tooShort(path, byteCount):
            "key file \(path) holds \(byteCount) key bytes; at least \(KeyFile.minimumKeyBytes) are required"
                + " (raw bytes, or hex digits: two per byte)"
        }
    }
}
