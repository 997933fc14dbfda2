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
    /// A video track's frame size; `.zero` for other tracks.
    public let naturalSize: CGSize
    /// A video track's frame rate in frames per second; 0 for other tracks.
    public let nominalFrameRate: Float
    /// Bits per second, or 0 when unknown.
    public let estimatedDataRate: Float
    /// Whether the track can be played here (for audio: a decoder exists and it is the
    /// track Chorus renders).
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
    /// FFmpeg's stream index, for tools that speak ffprobe's terms.
    public let streamIndex: Int

    init(info: TrackInfo, asset: AVAsset, isPreferredAudio: Bool) {
        self.asset = asset
        trackID = info.trackID
        switch info.kind {
        case .audio: mediaType = .audio
        case .video: mediaType = .video
        case .subtitle: mediaType = .subtitle
        case .data, .attachment, .unknown: mediaType = .muxed
        }
        timeRange = info.timeRange
        naturalSize = CGSize(width: info.width ?? 0, height: info.height ?? 0)
        nominalFrameRate = Float(info.frameRate ?? 0)
        estimatedDataRate = Float(info.bitRate ?? 0)
        isPlayable = isPreferredAudio
        isEnabled = true
        codecName = info.codec
        sampleRate = info.sampleRate
        channelCount = info.channels
        channelLayoutDescription = info.channelLayout
        languageCode = info.language
        streamIndex = info.streamIndex
    }

    public static func == (lhs: AVAssetTrack, rhs: AVAssetTrack) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
