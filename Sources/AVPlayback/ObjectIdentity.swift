import Foundation

// Apple's playback classes are NSObjects: compared by `isEqual(_:)` (identity unless a
// subclass says otherwise), hashed by `hash`, described as `<ClassName: address>`. Linux has
// no NSObject to inherit these from, so each class declares them in its own body (where a
// subclass can override them), and `==` and `hash(into:)` here follow them, as NSObject's do.

extension AVPlayer: Equatable, Hashable, CustomStringConvertible {
    public static func == (lhs: AVPlayer, rhs: AVPlayer) -> Bool { lhs.isEqual(rhs) }
    public func hash(into hasher: inout Hasher) { hasher.combine(hash) }
}

extension AVPlayerItem: Equatable, Hashable, CustomStringConvertible {
    public static func == (lhs: AVPlayerItem, rhs: AVPlayerItem) -> Bool { lhs.isEqual(rhs) }
    public func hash(into hasher: inout Hasher) { hasher.combine(hash) }
}

extension AVAsset: Equatable, Hashable, CustomStringConvertible {
    public static func == (lhs: AVAsset, rhs: AVAsset) -> Bool { lhs.isEqual(rhs) }
    public func hash(into hasher: inout Hasher) { hasher.combine(hash) }
}

extension AVPlayerLayer: Equatable, Hashable, CustomStringConvertible {
    public static func == (lhs: AVPlayerLayer, rhs: AVPlayerLayer) -> Bool { lhs.isEqual(rhs) }
    public func hash(into hasher: inout Hasher) { hasher.combine(hash) }
}

extension AVPlayerItemOutput: Equatable, Hashable, CustomStringConvertible {
    public static func == (lhs: AVPlayerItemOutput, rhs: AVPlayerItemOutput) -> Bool { lhs.isEqual(rhs) }
    public func hash(into hasher: inout Hasher) { hasher.combine(hash) }
}

// Final classes, compared by identity.

extension AVPlayerItemTrack: Equatable, Hashable {
    public static func == (lhs: AVPlayerItemTrack, rhs: AVPlayerItemTrack) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

extension AVPlayerLooper: Equatable, Hashable {
    public static func == (lhs: AVPlayerLooper, rhs: AVPlayerLooper) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

extension AVMetadataItem: Equatable, Hashable {
    public static func == (lhs: AVMetadataItem, rhs: AVMetadataItem) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// Whether `object` is `me` (NSObject's `isEqual(_:)`).
func isSameObject(_ object: Any?, _ me: AnyObject) -> Bool {
    guard let object else { return false }
    return (object as AnyObject) === me
}

/// `<ClassName: 0xaddress>`, as NSObject describes an object.
func objectDescription(_ object: AnyObject) -> String {
    "<\(type(of: object)): 0x\(String(UInt(bitPattern: ObjectIdentifier(object).hashValue), radix: 16))>"
}
