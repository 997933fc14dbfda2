/// The kind of media a track carries, with Apple's raw values.
public struct AVMediaType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public static let audio = AVMediaType(rawValue: "soun")
    public static let video = AVMediaType(rawValue: "vide")
    public static let text = AVMediaType(rawValue: "text")
    public static let subtitle = AVMediaType(rawValue: "sbtl")
    public static let closedCaption = AVMediaType(rawValue: "clcp")
    public static let metadata = AVMediaType(rawValue: "meta")
    public static let timecode = AVMediaType(rawValue: "tmcd")
    /// Anything else a container holds (data streams, attachments).
    public static let muxed = AVMediaType(rawValue: "muxx")

    public var description: String { rawValue }
}
