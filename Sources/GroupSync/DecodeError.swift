/// Why a datagram could not be decoded as a Chorus message.
///
/// Every malformed input maps to one of these; decoding never traps. `GroupMessage`
/// decoding reports the first problem found, reading front to back.
public enum DecodeError: Error, Sendable, Equatable {
    /// The datagram ends before a fixed-size field (`field` names it).
    case truncated(field: String)
    /// The first four bytes are not "CHRS": not a Chorus datagram.
    case badMagic
    /// A protocol version this node does not speak.
    case unsupportedVersion(UInt8)
    /// A message type this version does not define.
    case unknownType(UInt8)
    /// A length prefix points past the end of its enclosing data.
    case lengthPastEnd(field: String)
    /// The group name is longer than `GroupMessage.maximumGroupNameBytes`.
    case groupNameTooLong(Int)
    /// A string field is not valid UTF-8.
    case invalidUTF8(field: String)
    /// The State rate is NaN or infinite.
    case nonFiniteRate
    /// A timescale is negative, or zero where a number is required (`field` names it).
    case invalidTimescale(field: String)
    /// A chosen stream's index is negative but not the "none" value (`field` names it).
    case invalidStreamIndex(field: String)
    /// A State carries more than `GroupState.maximumSplices` splices, or splices whose
    /// starts do not rise.
    case invalidSplices
    /// The body is longer than its message type's fields.
    case bodyLengthMismatch
    /// Bytes follow the body (and tag) inside the datagram.
    case trailingBytes
}
