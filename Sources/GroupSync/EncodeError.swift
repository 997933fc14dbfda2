/// Why a message could not be encoded: a field exceeds what its length prefix can carry.
public enum EncodeError: Error, Sendable, Equatable {
    /// The group name is empty or longer than `GroupMessage.maximumGroupNameBytes` in UTF-8.
    case invalidGroupName(byteCount: Int)
    /// A string does not fit its length prefix (`field` names it).
    case stringTooLong(field: String, byteCount: Int)
    /// The body is longer than the 16-bit body length allows.
    case bodyTooLong(byteCount: Int)
}
