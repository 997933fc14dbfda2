import Foundation
import MediaPipeline

/// Apple's name for a track identifier.
public typealias CMPersistentTrackID = Int32

/// One track of an asset: its kind, time range and format.
public final class AVAssetTrack: Sendable, Hashable {
    /// The asset the track belongs to.
    public weak let asset: AVAsset?
    /// The track's identifier within its asset; never 0.
    public let trackID: CMPersistentTrackID
    public let mediaType: AVMediaType
    /// The track's span in asset time.
    public let timeRange: CMTimeRange
    /// A video track's picture size in square pixels, before `preferredTransform` (its
    /// coded width scaled by the pixels' aspect ratio); `.zero` for other tracks.
    public let naturalSize: CGSize
    /// How a video track's pictures are turned for display (the container's display
    /// matrix, a quarter turn or none, with the translation that keeps the picture in the
    /// positive quadrant, as Apple's are); `.identity` for other tracks.
    public let preferredTransform: CGAffineTransform
    /// The shortest time between two pictures of a video track, at its nominal rate;
    /// `.invalid` for other tracks.
    public let minFrameDuration: CMTime
    /// A video track's frame rate in frames per second; 0 for other tracks.
    public let nominalFrameRate: Float
    /// Bits per second, or 0 when unknown.
    public let estimatedDataRate: Float
    /// Whether the track can be played here: a decoder exists and it is the sound or the
    /// pictures Chorus renders.
    public let isPlayable: Bool
    /// Whether the track is enabled by default in its container.
    public let isEnabled: Bool
    /// FFmpeg's codec name ("aac", "mp3", "h264", ...): the codec a user sees.
    public let codecName: String
    /// An audio track's sample rate in hertz.
    public let sampleRate: Int?
    /// An audio track's channel count.
    public let channelCount: Int?
    /// An audio track's channel layout ("stereo", "5.1(side)", ...).
    public let channelLayoutDescription: String?
    /// The track's language tag, when the container has one.
    public let languageCode: String?
    /// The track's language as a BCP 47 tag ("en", "fr"), from its container's language;
    /// nil when it has none or says "undetermined".
    public let extendedLanguageTag: String?
    /// The ticks per second of the track's timestamps (MP4's media timescale, FFmpeg's time
    /// base inverted); 0 when the container does not say.
    public let naturalTimeScale: CMTimeScale
    /// Whether the track's samples are all in the asset's own file: always, here (Chorus
    /// reads no reference movies).
    public let isSelfContained: Bool
    /// Whether a decoder for the track's samples exists in this build, whether or not
    /// Chorus renders its kind.
    public let isDecodable: Bool
    /// The volume the container suggests for the track: 1 for sound, 0 for other tracks
    /// (MP4's track header carries one, but FFmpeg does not pass it on).
    public let preferredVolume: Float
    /// The track's name in its container ("Commentary"), when it has one (a Chorus addition:
    /// Apple's is among the track's metadata).
    public let title: String?
    /// FFmpeg's stream index, for tools that speak ffprobe's terms.
    public let streamIndex: Int
    /// A video track's display rotation in clockwise degrees (a Chorus addition: the angle
    /// `preferredTransform` turns by).
    public let rotationDegrees: Double
    /// A video track's pixel shape, width to height, when the container gives one (a Chorus
    /// addition).
    public let sampleAspectRatio: (width: Int, height: Int)?
    /// A video track's decoded pixel layout, FFmpeg's name ("yuv420p", ...) (a Chorus addition).
    public let pixelFormat: String?

    /// What the track's samples are, as Apple describes formats.
    public let formatDescription: CMFormatDescription
    /// The track's format descriptions (one here: a container's track has one format),
    /// each a `CMFormatDescription`, typed as Apple's property is.
    public var formatDescriptions: [Any] { [formatDescription] }

    /// What the demuxer said of the track, whole.
    let trackInfo: TrackInfo

    init(info: TrackInfo, asset: AVAsset, isPlayable: Bool) {
        self.asset = asset
        trackInfo = info
        trackID = info.trackID
        switch info.kind {
        case .audio: mediaType = .audio
        case .video: mediaType = .video
        case .subtitle: mediaType = .subtitle
        case .data, .attachment, .unknown: mediaType = .muxed
        }
        timeRange = info.timeRange
        var width = Double(info.width ?? 0)
        let height = Double(info.height ?? 0)
        if let ratio = info.sampleAspectRatio, ratio.height > 0 { width = width * Double(ratio.width) / Double(ratio.height) }
        naturalSize = CGSize(width: width.rounded(), height: height)
        preferredTransform = Self.transform(clockwiseDegrees: info.rotationDegrees, size: naturalSize)
        minFrameDuration = info.frameDuration
        nominalFrameRate = Float(info.frameRate ?? 0)
        estimatedDataRate = Float(info.bitRate ?? 0)
        self.isPlayable = isPlayable
        isEnabled = true
        codecName = info.codec
        sampleRate = info.sampleRate
        channelCount = info.channels
        channelLayoutDescription = info.channelLayout
        languageCode = info.language
        extendedLanguageTag = AVMediaSelectionOption.languageTag(info.language)
        naturalTimeScale = info.timescale
        isSelfContained = true
        isDecodable = MediaInfo.hasDecoder(for: info)
        preferredVolume = info.kind == .audio ? 1 : 0
        title = info.title
        streamIndex = info.streamIndex
        rotationDegrees = info.rotationDegrees
        sampleAspectRatio = info.sampleAspectRatio
        pixelFormat = info.pixelFormat
        formatDescription = CMFormatDescription(track: info)
    }

    /// A display rotation as Apple writes it for a movie: the turn on a y-down screen, then
    /// the shift that brings the turned picture back to the origin.
    static func transform(clockwiseDegrees: Double, size: CGSize) -> CGAffineTransform {
        switch clockwiseDegrees {
        case 90: return CGAffineTransform(a: 0, b: 1, c: -1, d: 0, tx: size.height, ty: 0)
        case 180: return CGAffineTransform(a: -1, b: 0, c: 0, d: -1, tx: size.width, ty: size.height)
        case 270: return CGAffineTransform(a: 0, b: -1, c: 1, d: 0, tx: 0, ty: size.width)
        default: return .identity
        }
    }

    /// Whether the track has `mediaCharacteristic`: audible for sound, visual and frame
    /// based for pictures, legible for subtitles, and those its roles in the container give
    /// (main program or auxiliary content, a dub, forced subtitles, accessibility).
    public func hasMediaCharacteristic(_ mediaCharacteristic: AVMediaCharacteristic) -> Bool {
        AVMediaCharacteristic.of(trackInfo).contains(mediaCharacteristic)
    }

    /// The track's own metadata, in the `.ffmpeg` key space: its name and its language,
    /// where the container gives them.
    public var metadata: [AVMetadataItem] {
        guard let info = asset?.loadedMediaInfo else { return [] }
        return Self.tags(of: trackInfo).map { AVMetadataItem(tag: $0, keySpace: .ffmpeg, key: $0.key, info: info) }
    }

    /// The track's metadata in the common key space: its title and its language.
    public var commonMetadata: [AVMetadataItem] {
        guard let info = asset?.loadedMediaInfo else { return [] }
        return Self.tags(of: trackInfo).compactMap { tag in
            AVMetadataItem.commonKeys[tag.key].map { AVMetadataItem(tag: tag, keySpace: .common, key: $0.rawValue, info: info) }
        }
    }

    /// The tags a track's metadata is made of.
    static func tags(of info: TrackInfo) -> [MetadataTag] {
        [info.title.map { MetadataTag(key: "title", value: $0) }, info.language.map { MetadataTag(key: "language", value: $0) }]
            .compactMap { $0 }
    }

    public static func == (lhs: AVAssetTrack, rhs: AVAssetTrack) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

extension AVAssetTrack {
    /// Loads the given properties of the track, as `try await track.load(.naturalSize)`. A
    /// track comes from a loaded asset, so its values are already there; it throws only when
    /// its asset is gone.
    public func load<each Value>(_ properties: repeat AVAsyncProperty<AVAssetTrack, each Value>) async throws -> (repeat each Value) {
        guard let info = asset?.loadedMediaInfo else { throw MediaError.cancelled(url: "track \(trackID)") }
        return (repeat (each properties).extract(self, info))
    }
}

extension AVPartialAsyncProperty where Root == AVAssetTrack {
    /// The track's kind of media.
    public static var mediaType: AVAsyncProperty<AVAssetTrack, AVMediaType> { .track("mediaType") { $0.mediaType } }
    /// The track's span in asset time.
    public static var timeRange: AVAsyncProperty<AVAssetTrack, CMTimeRange> { .track("timeRange") { $0.timeRange } }
    /// The size of the track's pictures, with their pixel shape applied.
    public static var naturalSize: AVAsyncProperty<AVAssetTrack, CGSize> { .track("naturalSize") { $0.naturalSize } }
    /// How the track's pictures are turned for display.
    public static var preferredTransform: AVAsyncProperty<AVAssetTrack, CGAffineTransform> {
        .track("preferredTransform") { $0.preferredTransform }
    }
    /// The shortest time a picture of the track lasts.
    public static var minFrameDuration: AVAsyncProperty<AVAssetTrack, CMTime> { .track("minFrameDuration") { $0.minFrameDuration } }
    /// The track's pictures per second.
    public static var nominalFrameRate: AVAsyncProperty<AVAssetTrack, Float> { .track("nominalFrameRate") { $0.nominalFrameRate } }
    /// The track's data rate, in bits per second.
    public static var estimatedDataRate: AVAsyncProperty<AVAssetTrack, Float> { .track("estimatedDataRate") { $0.estimatedDataRate } }
    /// Whether this player can play the track.
    public static var isPlayable: AVAsyncProperty<AVAssetTrack, Bool> { .track("playable") { $0.isPlayable } }
    /// Whether the track is enabled in its file.
    public static var isEnabled: AVAsyncProperty<AVAssetTrack, Bool> { .track("enabled") { $0.isEnabled } }
    /// What the track's samples are, as Apple describes formats.
    public static var formatDescriptions: AVAsyncProperty<AVAssetTrack, [CMFormatDescription]> {
        .track("formatDescriptions") { [$0.formatDescription] }
    }
    /// The track's language, ISO 639-2.
    public static var languageCode: AVAsyncProperty<AVAssetTrack, String?> { .track("languageCode") { $0.languageCode } }
    /// The track's language as a BCP 47 tag.
    public static var extendedLanguageTag: AVAsyncProperty<AVAssetTrack, String?> {
        .track("extendedLanguageTag") { $0.extendedLanguageTag }
    }
    /// The ticks per second of the track's timestamps.
    public static var naturalTimeScale: AVAsyncProperty<AVAssetTrack, CMTimeScale> { .track("naturalTimeScale") { $0.naturalTimeScale } }
    /// Whether the track's samples are all in the asset's file.
    public static var isSelfContained: AVAsyncProperty<AVAssetTrack, Bool> { .track("selfContained") { $0.isSelfContained } }
    /// Whether a decoder for the track exists.
    public static var isDecodable: AVAsyncProperty<AVAssetTrack, Bool> { .track("decodable") { $0.isDecodable } }
    /// The volume the container suggests for the track.
    public static var preferredVolume: AVAsyncProperty<AVAssetTrack, Float> { .track("preferredVolume") { $0.preferredVolume } }
    /// The track's own metadata.
    public static var metadata: AVAsyncProperty<AVAssetTrack, [AVMetadataItem]> { .track("metadata") { $0.metadata } }
    /// The track's metadata in the common key space.
    public static var commonMetadata: AVAsyncProperty<AVAssetTrack, [AVMetadataItem]> { .track("commonMetadata") { $0.commonMetadata } }
}
