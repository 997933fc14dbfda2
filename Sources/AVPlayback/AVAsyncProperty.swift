import Foundation
import MediaPipeline

/// A property of `Root` that loads asynchronously, without its value type: what
/// `AVAsset.status(of:)` and the property lists are made of.
// @unchecked only because the class has a subclass (a non-final class cannot be checked):
// its one field is a let of a Sendable type.
public class AVPartialAsyncProperty<Root>: @unchecked Sendable, CustomStringConvertible {
    /// The property's key, as in the older `loadValuesAsynchronously(forKeys:)` API.
    public let name: String
    init(name: String) { self.name = name }
    public var description: String { name }
}

/// A property of `Root` whose value of type `Value` loads asynchronously, as in
/// `try await asset.load(.duration)`.
// @unchecked restates its superclass's: it adds only a let of a Sendable function.
public final class AVAsyncProperty<Root, Value>: AVPartialAsyncProperty<Root>, @unchecked Sendable {
    let extract: @Sendable (Root, MediaInfo) -> Value

    init(name: String, extract: @escaping @Sendable (Root, MediaInfo) -> Value) {
        self.extract = extract
        super.init(name: name)
    }

    /// A property read from the root object alone (a track's, which holds its values).
    static func track(_ name: String, _ value: @escaping @Sendable (Root) -> Value) -> AVAsyncProperty<Root, Value> {
        AVAsyncProperty(name: name) { root, _ in value(root) }
    }

    /// Where a property's loading stands.
    public enum Status {
        case notYetLoaded
        case loading
        case loaded(Value)
        case failed(any Error)
    }
}

extension AVPartialAsyncProperty where Root == AVAsset {
    /// The asset's duration; `.indefinite` for live streams.
    public static var duration: AVAsyncProperty<AVAsset, CMTime> {
        AVAsyncProperty(name: "duration") { _, info in info.duration }
    }
    /// All tracks, in container order; cover art is among `commonMetadata` instead.
    public static var tracks: AVAsyncProperty<AVAsset, [AVAssetTrack]> {
        AVAsyncProperty(name: "tracks") { asset, info in asset.makeTracks(info) }
    }
    /// Whether this player can play the asset (it has a decodable audio track).
    public static var isPlayable: AVAsyncProperty<AVAsset, Bool> {
        AVAsyncProperty(name: "playable") { _, info in info.isPlayable }
    }
    /// Whether the asset's media can be read at all.
    public static var isReadable: AVAsyncProperty<AVAsset, Bool> {
        AVAsyncProperty(name: "readable") { _, _ in true }
    }
    /// Whether the asset is protected; FFmpeg reports encrypted inputs as unreadable.
    public static var hasProtectedContent: AVAsyncProperty<AVAsset, Bool> {
        AVAsyncProperty(name: "hasProtectedContent") { _, _ in false }
    }
    /// The natural playback rate.
    public static var preferredRate: AVAsyncProperty<AVAsset, Float> {
        AVAsyncProperty(name: "preferredRate") { _, _ in 1 }
    }
    /// The natural volume.
    public static var preferredVolume: AVAsyncProperty<AVAsset, Float> {
        AVAsyncProperty(name: "preferredVolume") { _, _ in 1 }
    }
    /// Whether `duration` and timing are exact rather than estimated.
    public static var providesPreciseDurationAndTiming: AVAsyncProperty<AVAsset, Bool> {
        AVAsyncProperty(name: "providesPreciseDurationAndTiming") { _, info in info.isSeekable }
    }
}

/// Where the loading of one key stands, in the older callback API.
public enum AVKeyValueStatus: Int, Sendable {
    case unknown, loading, loaded, failed, cancelled
}
