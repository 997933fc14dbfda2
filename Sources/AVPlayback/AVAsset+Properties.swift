import Foundation
import MediaPipeline

// The asset's remaining properties of Apple's `AVAsset`: what a container says of the whole
// (its creation date, its lyrics), the tracks of a characteristic, and the values a file
// played here always has. Each synchronous accessor loads the asset first if need be,
// blocking, as `duration` does; new code awaits `load(_:)`.

extension AVAsset {
    /// Whether the asset's media can be read: whether it opens (loading it first if need be).
    public var isReadable: Bool { infoLoadingSynchronously() != nil }

    /// The rate the asset is meant to play at: 1, as no container this player reads sets
    /// another.
    public var preferredRate: Float { 1 }

    /// The volume the asset is meant to play at: 1, as no container this player reads sets
    /// another.
    public var preferredVolume: Float { 1 }

    /// How the asset's pictures are meant to be turned as a whole: the identity. A turn a
    /// container records is its video track's (`AVAssetTrack.preferredTransform`), which
    /// the player applies.
    public var preferredTransform: CGAffineTransform { .identity }

    /// Whether `duration` and the times of seeks are exact rather than estimated: true for
    /// media that can seek (a file, an on-demand stream), false for a live stream.
    public var providesPreciseDurationAndTiming: Bool { infoLoadingSynchronously()?.isSeekable ?? false }

    /// The asset's duration as far as it is known before playing: `duration` where it is
    /// numeric, invalid for a live stream and for media that cannot be opened.
    public var overallDurationHint: CMTime {
        guard let duration = infoLoadingSynchronously()?.duration, duration.isNumeric else { return .invalid }
        return duration
    }

    /// Whether the asset can be exported: false, as this library has no export session.
    public var isExportable: Bool { false }

    /// Whether the asset can be put into a composition: false, as this library has no
    /// compositions.
    public var isComposable: Bool { false }

    /// The asset's creation date, from its container's tags (`date`, `creation_time`), as a
    /// metadata item in the common key space; nil when it has none.
    public var creationDate: AVMetadataItem? {
        infoLoadingSynchronously().flatMap(Self.creationDate(of:))
    }

    /// The asset's lyrics, from its container's tags (ID3's `USLT`, an M4A's `©lyr`); nil
    /// when it has none.
    public var lyrics: String? { infoLoadingSynchronously().flatMap(Self.lyrics(of:)) }

    /// The asset's tracks with `mediaCharacteristic` (`.audible`, `.visual`, `.legible`, ...),
    /// in container order.
    public func tracks(withMediaCharacteristic mediaCharacteristic: AVMediaCharacteristic) -> [AVAssetTrack] {
        tracks.filter { $0.hasMediaCharacteristic(mediaCharacteristic) }
    }

    /// Loads the asset's tracks with `mediaCharacteristic`, in container order.
    public func loadTracks(withMediaCharacteristic mediaCharacteristic: AVMediaCharacteristic) async throws -> [AVAssetTrack] {
        try await load(.tracks).filter { $0.hasMediaCharacteristic(mediaCharacteristic) }
    }

    /// Loads the asset's tracks with `mediaCharacteristic` and hands them (or the load's
    /// error) to `completionHandler`, on a queue of the loader's.
    public func loadTracks(withMediaCharacteristic mediaCharacteristic: AVMediaCharacteristic,
                           completionHandler: @escaping @Sendable ([AVAssetTrack]?, (any Error)?) -> Void) {
        Task {
            do {
                completionHandler(try await loadTracks(withMediaCharacteristic: mediaCharacteristic), nil)
            } catch {
                completionHandler(nil, error)
            }
        }
    }

    /// Loads the asset's track with `trackID` and hands it (nil when there is none) or the
    /// load's error to `completionHandler`, on a queue of the loader's.
    public func loadTrack(withTrackID trackID: CMPersistentTrackID,
                          completionHandler: @escaping @Sendable (AVAssetTrack?, (any Error)?) -> Void) {
        Task {
            do { completionHandler(try await loadTrack(withTrackID: trackID), nil) } catch { completionHandler(nil, error) }
        }
    }

    static func creationDate(of info: MediaInfo) -> AVMetadataItem? {
        AVMetadataItem.commonMetadata(of: info).first { $0.commonKey == .commonKeyCreationDate }
    }

    /// The first tag whose key is a lyrics key: FFmpeg names ID3's `USLT` `lyrics` or
    /// `lyrics-LANG` (with its language), and an M4A's `©lyr` `lyrics`.
    static func lyrics(of info: MediaInfo) -> String? {
        info.metadata.first { tag in
            let key = tag.key.lowercased()
            return key == "lyrics" || key.hasPrefix("lyrics-")
        }?.value
    }
}

extension AVPartialAsyncProperty where Root == AVAsset {
    /// How the asset's pictures are meant to be turned as a whole (the identity; see
    /// `AVAsset.preferredTransform`).
    public static var preferredTransform: AVAsyncProperty<AVAsset, CGAffineTransform> {
        AVAsyncProperty(name: "preferredTransform") { _, _ in .identity }
    }
    /// The duration as far as it is known before playing; invalid for a live stream.
    public static var overallDurationHint: AVAsyncProperty<AVAsset, CMTime> {
        AVAsyncProperty(name: "overallDurationHint") { _, info in info.duration.isNumeric ? info.duration : .invalid }
    }
    /// Whether the asset can be exported: false, with no export session here.
    public static var isExportable: AVAsyncProperty<AVAsset, Bool> {
        AVAsyncProperty(name: "exportable") { _, _ in false }
    }
    /// Whether the asset can be put into a composition: false, with no compositions here.
    public static var isComposable: AVAsyncProperty<AVAsset, Bool> {
        AVAsyncProperty(name: "composable") { _, _ in false }
    }
    /// The asset's creation date, as a metadata item in the common key space.
    public static var creationDate: AVAsyncProperty<AVAsset, AVMetadataItem?> {
        AVAsyncProperty(name: "creationDate") { _, info in AVAsset.creationDate(of: info) }
    }
    /// The asset's lyrics.
    public static var lyrics: AVAsyncProperty<AVAsset, String?> {
        AVAsyncProperty(name: "lyrics") { _, info in AVAsset.lyrics(of: info) }
    }
}
