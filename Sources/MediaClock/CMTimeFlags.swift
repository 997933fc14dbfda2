/// Flags describing the kind of a `CMTime`, bit-compatible with CoreMedia's
/// `CMTimeFlags`.
public struct CMTimeFlags: OptionSet, Sendable, Hashable, Codable {
    /// The raw CoreMedia bit pattern.
    public var rawValue: UInt32

    /// Creates flags from CoreMedia's bit pattern.
    public init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// The time is valid; without it every other field is meaningless.
    public static let valid = CMTimeFlags(rawValue: 1 << 0)
    /// The value was rounded at some point, so it is not exact.
    public static let hasBeenRounded = CMTimeFlags(rawValue: 1 << 1)
    /// The time is +infinity; value and timescale are ignored.
    public static let positiveInfinity = CMTimeFlags(rawValue: 1 << 2)
    /// The time is -infinity; value and timescale are ignored.
    public static let negativeInfinity = CMTimeFlags(rawValue: 1 << 3)
    /// The time is unknown (e.g. a live stream's duration); value and timescale are ignored.
    public static let indefinite = CMTimeFlags(rawValue: 1 << 4)
    /// The flags whose presence makes value and timescale meaningless.
    public static let impliedValueFlagsMask: CMTimeFlags = [.positiveInfinity, .negativeInfinity, .indefinite]
}
