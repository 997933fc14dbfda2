import Foundation
import MediaClock

/// The kind of data a track carries.
public enum MediaKind: String, Sendable, Codable {
    case audio, video, subtitle, data, attachment, unknown
}

/// What a demuxer learned about one track, read once when the input is opened.
public struct TrackInfo: Sendable, Equatable {
    public static func == (lhs: TrackInfo, rhs: TrackInfo) -> Bool {
        lhs.trackID == rhs.trackID && lhs.streamIndex == rhs.streamIndex && lhs.kind == rhs.kind && lhs.codec == rhs.codec
            && lhs.timeRange == rhs.timeRange && lhs.sampleRate == rhs.sampleRate && lhs.channels == rhs.channels
            && lhs.channelLayout == rhs.channelLayout && lhs.width == rhs.width && lhs.height == rhs.height
            && lhs.frameRate == rhs.frameRate && lhs.frameDuration == rhs.frameDuration && lhs.bitRate == rhs.bitRate && lhs.rotationDegrees == rhs.rotationDegrees
            && lhs.sampleAspectRatio?.width == rhs.sampleAspectRatio?.width
            && lhs.sampleAspectRatio?.height == rhs.sampleAspectRatio?.height
            && lhs.pixelFormat == rhs.pixelFormat && lhs.isAttachedPicture == rhs.isAttachedPicture
            && lhs.language == rhs.language && lhs.title == rhs.title && lhs.roles == rhs.roles
            && lhs.renditionURL == rhs.renditionURL
    }

    /// The track's identifier: the container's own ID where it has one (MP4, Matroska),
    /// otherwise its position counted from 1. Never 0, as on Apple's platforms.
    public var trackID: Int32
    /// FFmpeg's stream index, for matching with ffprobe's output.
    public var streamIndex: Int
    public var kind: MediaKind
    /// FFmpeg's codec name ("mp3", "aac", "h264", ...).
    public var codec: String
    /// The track's span in media time; `.invalid` when the container does not say.
    public var timeRange: CMTimeRange
    public var sampleRate: Int?
    public var channels: Int?
    /// FFmpeg's description of the channel layout ("stereo", "5.1", ...).
    public var channelLayout: String?
    public var width: Int?
    public var height: Int?
    /// Frames per second for video, as the container reports it.
    public var frameRate: Double?
    /// The stream's timescale: ticks per second of its timestamps (FFmpeg's time base
    /// inverted; MP4's media timescale). 0 when unknown.
    public var timescale: Int32 = 0
    /// The time from one picture to the next for video at its nominal rate, exact
    /// (`.invalid` for other tracks and when the container does not say).
    public var frameDuration: CMTime = .invalid
    /// Bits per second, when the container or codec reports it.
    public var bitRate: Int?
    /// How far the picture is to be turned clockwise for display, in degrees, as the
    /// stream's display matrix says (0 when it has none). Any angle is reported as found;
    /// the video path plays only quarter turns and refuses others.
    public var rotationDegrees: Double
    /// The shape of one coded pixel, width to height (nil when the stream does not say, which
    /// means square).
    public var sampleAspectRatio: (width: Int, height: Int)?
    /// FFmpeg's name for the decoded pixel format ("yuv420p", "nv12", ...), when known.
    public var pixelFormat: String?
    /// Whether this is cover art rather than moving video.
    public var isAttachedPicture: Bool
    /// The language tag, when the container has one.
    public var language: String?
    /// The track's name in its container ("Director's commentary"), when it has one.
    public var title: String? = nil
    /// What the container says the track is for: its default, a commentary, forced
    /// subtitles, ... (FFmpeg's dispositions).
    public var roles: TrackRoles = []
    /// Where a track that is not in the input's own streams is read from: an HLS master
    /// playlist's subtitle rendition (`HLSRenditions`), whose stream index is its own.
    public var renditionURL: String? = nil
}

/// The parts a track plays in its item, as the container marks them (FFmpeg's stream
/// dispositions): what media selection presents and chooses by.
public struct TrackRoles: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// The track to play when nobody chooses.
    public static let `default` = TrackRoles(rawValue: 1 << 0)
    /// The original language of the programme, not a dub.
    public static let original = TrackRoles(rawValue: 1 << 1)
    /// A dubbed translation.
    public static let dub = TrackRoles(rawValue: 1 << 2)
    /// A commentary.
    public static let comment = TrackRoles(rawValue: 1 << 3)
    /// Subtitles shown only where the picture's language differs (signs, foreign speech).
    public static let forced = TrackRoles(rawValue: 1 << 4)
    /// For the hearing impaired: subtitles that describe sounds too.
    public static let hearingImpaired = TrackRoles(rawValue: 1 << 5)
    /// For the visually impaired: sound that describes the picture.
    public static let visualImpaired = TrackRoles(rawValue: 1 << 6)
}

/// What a demuxer learned about an input.
public struct MediaInfo: Sendable, Equatable {
    public var url: String
    /// The container's duration; `.indefinite` for live or unbounded input.
    public var duration: CMTime
    /// The media time of the first sample; playback item time 0 stands for this instant.
    public var startTime: CMTime
    /// FFmpeg's name for the container format ("mp3", "mov,mp4,m4a,3gp,3g2,mj2", ...).
    public var formatName: String
    public var tracks: [TrackInfo]
    /// Whether the input can be sought (files and servers with range requests).
    public var isSeekable: Bool

    /// The track Chorus renders as sound: FFmpeg's pick of the best audio stream, or the
    /// one chosen when the input was opened (`MediaSource(url:audioStream:variantLimit:)`,
    /// by `playedTracks(audioStream:within:)`).
    public var preferredAudioTrack: TrackInfo?

    /// The track Chorus shows as pictures: FFmpeg's pick of the best moving video stream
    /// (cover art is not one) whose decoder is present, or the chosen variant's when the
    /// input was opened with a variant limit.
    public var preferredVideoTrack: TrackInfo?

    /// The container's tags (title, artist, album, date, genre, track, ...), in the order
    /// FFmpeg read them, under FFmpeg's generic names, which it uses for every format (an MP3's
    /// ID3 `TIT2` and an M4A's `©nam` are both "title"). Where the container keeps its tags on
    /// the sound's stream instead (Ogg), those follow, but for the stream's own technical
    /// ones (`MediaSource.streamOnlyTags`).
    public var metadata: [MetadataTag] = []

    /// The pictures the container carries with the work, its cover art (an MP3's ID3 `APIC`
    /// frames, an M4A's `covr` atom, FLAC's and Ogg's `PICTURE` blocks, Matroska's picture
    /// attachments), in stream order:
    /// those of `tracks` that are attached pictures, each within
    /// `MediaSource.maximumPictureBytes`, while together within
    /// `MediaSource.maximumPicturesBytes`.
    public var pictures: [AttachedPicture] = []
    /// The variants of an HLS master playlist, in its order (`HLSVariant`); empty for any
    /// other input. What `playedTracks(audioStream:within:)` chooses among.
    public var variants: [HLSVariant] = []

    /// Whether there is something this player can render: sound, or pictures (an item
    /// without sound plays silence for its length, so that it keeps a timeline).
    public var isPlayable: Bool { preferredAudioTrack != nil || preferredVideoTrack != nil }
    /// Whether this is a live HLS playlist: one that moves on, without an end or a duration.
    public var isLiveHLS: Bool { formatName == "hls" && !duration.isNumeric }
}

/// One tag of a container's metadata: FFmpeg's name for it and its text.
public struct MetadataTag: Sendable, Equatable {
    /// FFmpeg's generic name for the tag ("title", "artist", "album", "date", ...).
    public var key: String
    /// The tag's text, as the container holds it.
    public var value: String

    public init(key: String, value: String) {
        self.key = key
        self.value = value
    }
}

/// One picture a container carries with the work, such as its front cover: FFmpeg presents it
/// as a stream of one picture (`TrackInfo.isAttachedPicture`), whose bytes it reads when the
/// input is opened.
public struct AttachedPicture: Sendable, Equatable {
    /// FFmpeg's index of the picture's stream.
    public var streamIndex: Int
    /// FFmpeg's name for the picture's codec ("mjpeg", "png", ...), as the container labels it.
    public var codec: String
    /// The picture as the container holds it, encoded: the bytes of a JPEG or PNG file.
    public var data: Data
    /// The caption the container gives the picture (an ID3 `APIC` frame's or a FLAC
    /// `PICTURE` block's description), if any.
    public var caption: String?
    /// What the picture shows, in FFmpeg's words for ID3's and FLAC's picture types
    /// ("Cover (front)", "Cover (back)", "Artist/performer"...), if the container says.
    public var pictureType: String?

    public init(streamIndex: Int, codec: String, data: Data, caption: String? = nil, pictureType: String? = nil) {
        self.streamIndex = streamIndex
        self.codec = codec
        self.data = data
        self.caption = caption
        self.pictureType = pictureType
    }
}
