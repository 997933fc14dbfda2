import Foundation
import MediaPipeline

/// Four characters packed big-endian in 32 bits, as Apple names formats ('aac ', 'avc1').
public typealias FourCharCode = UInt32
/// A kind of media as a format description names it ('soun', 'vide').
public typealias CMMediaType = FourCharCode
/// A sound format's identifier ('aac ', 'lpcm').
public typealias AudioFormatID = UInt32
/// The flags of a sound format (`kAudioFormatFlagIsFloat`, ...).
public typealias AudioFormatFlags = UInt32
/// A video codec's identifier ('avc1', 'hvc1').
public typealias CMVideoCodecType = FourCharCode

extension FourCharCode {
    /// The code of four ASCII characters ("aac " → 0x61616320).
    init(fourCharacters text: String) {
        self = text.utf8.prefix(4).reduce(0) { $0 << 8 | UInt32($1) }
    }
}

public let kCMMediaType_Audio = CMMediaType(fourCharacters: "soun")
public let kCMMediaType_Video = CMMediaType(fourCharacters: "vide")
public let kCMMediaType_Subtitle = CMMediaType(fourCharacters: "sbtl")
public let kCMMediaType_Text = CMMediaType(fourCharacters: "text")
public let kCMMediaType_Metadata = CMMediaType(fourCharacters: "meta")
public let kCMMediaType_Muxed = CMMediaType(fourCharacters: "muxx")

public let kAudioFormatLinearPCM = AudioFormatID(fourCharacters: "lpcm")
public let kAudioFormatMPEG4AAC = AudioFormatID(fourCharacters: "aac ")
public let kAudioFormatMPEG4AAC_HE = AudioFormatID(fourCharacters: "aach")
public let kAudioFormatMPEGLayer1 = AudioFormatID(fourCharacters: ".mp1")
public let kAudioFormatMPEGLayer2 = AudioFormatID(fourCharacters: ".mp2")
public let kAudioFormatMPEGLayer3 = AudioFormatID(fourCharacters: ".mp3")
public let kAudioFormatAppleLossless = AudioFormatID(fourCharacters: "alac")
public let kAudioFormatFLAC = AudioFormatID(fourCharacters: "flac")
public let kAudioFormatOpus = AudioFormatID(fourCharacters: "opus")
public let kAudioFormatAC3 = AudioFormatID(fourCharacters: "ac-3")
public let kAudioFormatEnhancedAC3 = AudioFormatID(fourCharacters: "ec-3")
public let kAudioFormatULaw = AudioFormatID(fourCharacters: "ulaw")
public let kAudioFormatALaw = AudioFormatID(fourCharacters: "alaw")

public let kAudioFormatFlagIsFloat: AudioFormatFlags = 1 << 0
public let kAudioFormatFlagIsBigEndian: AudioFormatFlags = 1 << 1
public let kAudioFormatFlagIsSignedInteger: AudioFormatFlags = 1 << 2
public let kAudioFormatFlagIsPacked: AudioFormatFlags = 1 << 3
public let kAudioFormatFlagIsNonInterleaved: AudioFormatFlags = 1 << 5

public let kCMVideoCodecType_H264 = CMVideoCodecType(fourCharacters: "avc1")
public let kCMVideoCodecType_HEVC = CMVideoCodecType(fourCharacters: "hvc1")
public let kCMVideoCodecType_MPEG4Video = CMVideoCodecType(fourCharacters: "mp4v")
public let kCMVideoCodecType_MPEG2Video = CMVideoCodecType(fourCharacters: "mp2v")
public let kCMVideoCodecType_MPEG1Video = CMVideoCodecType(fourCharacters: "mp1v")
public let kCMVideoCodecType_H263 = CMVideoCodecType(fourCharacters: "h263")
public let kCMVideoCodecType_JPEG = CMVideoCodecType(fourCharacters: "jpeg")
public let kCMVideoCodecType_AppleProRes422 = CMVideoCodecType(fourCharacters: "apcn")
public let kCMVideoCodecType_VP9 = CMVideoCodecType(fourCharacters: "vp09")
public let kCMVideoCodecType_AV1 = CMVideoCodecType(fourCharacters: "av01")

public let kCMTextFormatType_3GText = FourCharCode(fourCharacters: "tx3g")
public let kCMSubtitleFormatType_WebVTT = FourCharCode(fourCharacters: "wvtt")

/// A sound format as Core Audio describes it. For a compressed format only the rate, the
/// format, the channels and the frames per packet are given; the byte counts are 0, as
/// Apple's are for formats whose packets vary.
public struct AudioStreamBasicDescription: Sendable, Equatable {
    public var mSampleRate: Float64
    public var mFormatID: AudioFormatID
    public var mFormatFlags: AudioFormatFlags
    public var mBytesPerPacket: UInt32
    public var mFramesPerPacket: UInt32
    public var mBytesPerFrame: UInt32
    public var mChannelsPerFrame: UInt32
    public var mBitsPerChannel: UInt32
    public var mReserved: UInt32

    /// All zero, as the C struct's empty initializer makes it.
    public init() {
        self.init(mSampleRate: 0, mFormatID: 0, mFormatFlags: 0, mBytesPerPacket: 0, mFramesPerPacket: 0, mBytesPerFrame: 0,
                  mChannelsPerFrame: 0, mBitsPerChannel: 0, mReserved: 0)
    }

    public init(mSampleRate: Float64, mFormatID: AudioFormatID, mFormatFlags: AudioFormatFlags, mBytesPerPacket: UInt32,
                mFramesPerPacket: UInt32, mBytesPerFrame: UInt32, mChannelsPerFrame: UInt32, mBitsPerChannel: UInt32,
                mReserved: UInt32) {
        self.mSampleRate = mSampleRate
        self.mFormatID = mFormatID
        self.mFormatFlags = mFormatFlags
        self.mBytesPerPacket = mBytesPerPacket
        self.mFramesPerPacket = mFramesPerPacket
        self.mBytesPerFrame = mBytesPerFrame
        self.mChannelsPerFrame = mChannelsPerFrame
        self.mBitsPerChannel = mBitsPerChannel
        self.mReserved = mReserved
    }
}

/// A picture's size in pixels, as a video format description gives it.
public struct CMVideoDimensions: Sendable, Equatable {
    public var width: Int32
    public var height: Int32
    public init(width: Int32, height: Int32) {
        self.width = width
        self.height = height
    }
}

/// What a track's samples are: their kind of media, their format (a codec, as Apple's
/// four-character codes name it), and for sound its Core Audio description, for pictures
/// their size (`AVAssetTrack.formatDescriptions`).
///
/// A codec Apple has no code for (Vorbis, for one) has media subtype 0; `codecName` names
/// it as FFmpeg does.
public final class CMFormatDescription: Sendable, Hashable, CustomStringConvertible {
    /// A kind of media (`CMFormatDescriptionGetMediaType`).
    public struct MediaType: RawRepresentable, Hashable, Sendable {
        public let rawValue: FourCharCode
        public init(rawValue: FourCharCode) { self.rawValue = rawValue }
        public static let audio = MediaType(rawValue: kCMMediaType_Audio)
        public static let video = MediaType(rawValue: kCMMediaType_Video)
        public static let subtitle = MediaType(rawValue: kCMMediaType_Subtitle)
        public static let text = MediaType(rawValue: kCMMediaType_Text)
        public static let metadata = MediaType(rawValue: kCMMediaType_Metadata)
        public static let muxed = MediaType(rawValue: kCMMediaType_Muxed)
    }

    /// A format within a kind of media: a codec (`CMFormatDescriptionGetMediaSubType`).
    public struct MediaSubType: RawRepresentable, Hashable, Sendable {
        public let rawValue: FourCharCode
        public init(rawValue: FourCharCode) { self.rawValue = rawValue }
        public static let linearPCM = MediaSubType(rawValue: kAudioFormatLinearPCM)
        public static let mpeg4AAC = MediaSubType(rawValue: kAudioFormatMPEG4AAC)
        public static let mpegLayer3 = MediaSubType(rawValue: kAudioFormatMPEGLayer3)
        public static let appleLossless = MediaSubType(rawValue: kAudioFormatAppleLossless)
        public static let flac = MediaSubType(rawValue: kAudioFormatFLAC)
        public static let opus = MediaSubType(rawValue: kAudioFormatOpus)
        public static let ac3 = MediaSubType(rawValue: kAudioFormatAC3)
        public static let enhancedAC3 = MediaSubType(rawValue: kAudioFormatEnhancedAC3)
        public static let h264 = MediaSubType(rawValue: kCMVideoCodecType_H264)
        public static let hevc = MediaSubType(rawValue: kCMVideoCodecType_HEVC)
        public static let mpeg4Video = MediaSubType(rawValue: kCMVideoCodecType_MPEG4Video)
        public static let jpeg = MediaSubType(rawValue: kCMVideoCodecType_JPEG)
        public static let vp9 = MediaSubType(rawValue: kCMVideoCodecType_VP9)
        public static let av1 = MediaSubType(rawValue: kCMVideoCodecType_AV1)
    }

    public let mediaType: MediaType
    public let mediaSubType: MediaSubType
    /// A sound format's Core Audio description; nil for other media.
    public let audioStreamBasicDescription: AudioStreamBasicDescription?
    /// A picture format's size in pixels (as coded); zero for other media.
    public let dimensions: CMVideoDimensions
    /// FFmpeg's name of the codec ("aac", "vorbis", "h264"): a Chorus addition, for the
    /// codecs Apple has no code for.
    public let codecName: String

    /// The description `CMAudioFormatDescriptionGetStreamBasicDescription` points at: kept
    /// for the description's life, as Apple's pointer is.
    private nonisolated(unsafe) let basicDescriptionStorage: UnsafeMutablePointer<AudioStreamBasicDescription>?

    init(track info: TrackInfo) {
        codecName = info.codec
        switch info.kind {
        case .audio:
            mediaType = .audio
            let (format, flags, bits, framesPerPacket) = Self.soundFormat(codec: info.codec)
            mediaSubType = MediaSubType(rawValue: format)
            let channels = UInt32(clamping: max(0, info.channels ?? 0))
            let bytesPerFrame = Self.bytesPerFrame(format: format, flags: flags, bits: bits, channels: channels)
            let description = AudioStreamBasicDescription(
                mSampleRate: Float64(info.sampleRate ?? 0), mFormatID: format, mFormatFlags: flags,
                mBytesPerPacket: bytesPerFrame, mFramesPerPacket: framesPerPacket, mBytesPerFrame: bytesPerFrame,
                mChannelsPerFrame: channels, mBitsPerChannel: bits, mReserved: 0)
            audioStreamBasicDescription = description
            let storage = UnsafeMutablePointer<AudioStreamBasicDescription>.allocate(capacity: 1)
            storage.initialize(to: description)
            basicDescriptionStorage = storage
        case .video:
            mediaType = .video
            mediaSubType = MediaSubType(rawValue: Self.videoCodecs[info.codec] ?? 0)
            audioStreamBasicDescription = nil
            basicDescriptionStorage = nil
        case .subtitle:
            mediaType = info.codec == "mov_text" ? .text : .subtitle
            mediaSubType = MediaSubType(rawValue: info.codec == "mov_text" ? kCMTextFormatType_3GText
                                                  : info.codec == "webvtt" ? kCMSubtitleFormatType_WebVTT : 0)
            audioStreamBasicDescription = nil
            basicDescriptionStorage = nil
        case .data, .attachment, .unknown:
            mediaType = info.codec == "timed_id3" ? .metadata : .muxed
            mediaSubType = MediaSubType(rawValue: 0)
            audioStreamBasicDescription = nil
            basicDescriptionStorage = nil
        }
        dimensions = CMVideoDimensions(width: Int32(clamping: info.width ?? 0), height: Int32(clamping: info.height ?? 0))
    }

    deinit { basicDescriptionStorage?.deallocate() }

    /// Apple's codes for FFmpeg's picture codecs.
    static let videoCodecs: [String: FourCharCode] = [
        "h264": kCMVideoCodecType_H264, "hevc": kCMVideoCodecType_HEVC, "mpeg4": kCMVideoCodecType_MPEG4Video,
        "mpeg2video": kCMVideoCodecType_MPEG2Video, "mpeg1video": kCMVideoCodecType_MPEG1Video, "h263": kCMVideoCodecType_H263,
        "mjpeg": kCMVideoCodecType_JPEG, "prores": kCMVideoCodecType_AppleProRes422, "vp9": kCMVideoCodecType_VP9,
        "av1": kCMVideoCodecType_AV1,
    ]

    /// Apple's codes for FFmpeg's sound codecs, with the frames each packet holds.
    static let soundCodecs: [String: (format: AudioFormatID, framesPerPacket: UInt32)] = [
        "aac": (kAudioFormatMPEG4AAC, 1_024), "mp1": (kAudioFormatMPEGLayer1, 384), "mp2": (kAudioFormatMPEGLayer2, 1_152),
        "mp3": (kAudioFormatMPEGLayer3, 1_152), "alac": (kAudioFormatAppleLossless, 4_096), "flac": (kAudioFormatFLAC, 0),
        "opus": (kAudioFormatOpus, 960), "ac3": (kAudioFormatAC3, 1_536), "eac3": (kAudioFormatEnhancedAC3, 1_536),
        "pcm_mulaw": (kAudioFormatULaw, 1), "pcm_alaw": (kAudioFormatALaw, 1),
    ]

    /// A sound codec's format, flags, bits per sample (linear PCM alone: FFmpeg names its
    /// PCM codecs by their samples, "pcm_s16le", "pcm_f32be") and frames per packet.
    static func soundFormat(codec: String) -> (AudioFormatID, AudioFormatFlags, UInt32, UInt32) {
        if let known = soundCodecs[codec] { return (known.format, 0, 0, known.framesPerPacket) }
        // "pcm_s16le", "pcm_f32be", "pcm_s16le_planar": the samples' kind, size and order.
        let parts = codec.split(separator: "_", maxSplits: 1)
        guard parts.count == 2, parts[0] == "pcm", let kind = parts[1].first, "suf".contains(kind) else { return (0, 0, 0, 0) }
        let digits = parts[1].dropFirst().prefix { $0.isNumber }
        guard let bits = UInt32(digits), [8, 16, 24, 32, 64].contains(bits) else { return (0, 0, 0, 0) }
        var flags = kAudioFormatFlagIsPacked
        switch kind {
        case "f": flags |= kAudioFormatFlagIsFloat
        case "s": flags |= kAudioFormatFlagIsSignedInteger
        default: break
        }
        if parts[1].hasSuffix("be") || parts[1].hasSuffix("be_planar") { flags |= kAudioFormatFlagIsBigEndian }
        if parts[1].hasSuffix("planar") { flags |= kAudioFormatFlagIsNonInterleaved }
        return (kAudioFormatLinearPCM, flags, bits, 1)
    }

    /// The bytes of a frame of linear PCM: a sample of every channel, or of one when the
    /// channels are planes of their own (Core Audio's non-interleaved formats); 0 for a
    /// compressed format. A container may claim any channel count: the product is clamped,
    /// never trapped on.
    static func bytesPerFrame(format: AudioFormatID, flags: AudioFormatFlags, bits: UInt32, channels: UInt32) -> UInt32 {
        guard format == kAudioFormatLinearPCM else { return 0 }
        let interleaved = flags & kAudioFormatFlagIsNonInterleaved == 0
        return UInt32(clamping: UInt64(bits / 8) * UInt64(interleaved ? channels : 1))
    }

    /// The Core Audio description's storage, for `CMAudioFormatDescriptionGetStreamBasicDescription`.
    var basicDescriptionPointer: UnsafePointer<AudioStreamBasicDescription>? { basicDescriptionStorage.map { UnsafePointer($0) } }

    public var description: String {
        "CMFormatDescription(\(Self.characters(of: mediaType.rawValue)), \(mediaSubType.rawValue == 0 ? codecName : Self.characters(of: mediaSubType.rawValue)))"
    }

    /// The four characters of a code ("soun").
    static func characters(of code: FourCharCode) -> String {
        String(decoding: [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: code >> $0) }, as: UTF8.self)
    }

    public static func == (lhs: CMFormatDescription, rhs: CMFormatDescription) -> Bool {
        lhs.mediaType == rhs.mediaType && lhs.mediaSubType == rhs.mediaSubType && lhs.codecName == rhs.codecName
            && lhs.audioStreamBasicDescription == rhs.audioStreamBasicDescription && lhs.dimensions == rhs.dimensions
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(mediaType)
        hasher.combine(mediaSubType)
        hasher.combine(codecName)
    }
}

/// The kind of media `description` describes.
public func CMFormatDescriptionGetMediaType(_ description: CMFormatDescription) -> CMMediaType { description.mediaType.rawValue }

/// The format within its kind `description` describes: a codec's code, or 0 for one Apple
/// has none for.
public func CMFormatDescriptionGetMediaSubType(_ description: CMFormatDescription) -> FourCharCode {
    description.mediaSubType.rawValue
}

/// A sound format description's Core Audio description, valid while `description` lives;
/// nil for other media.
public func CMAudioFormatDescriptionGetStreamBasicDescription(_ description: CMFormatDescription)
    -> UnsafePointer<AudioStreamBasicDescription>? {
    description.basicDescriptionPointer
}

/// A picture format description's size in pixels; zero for other media.
public func CMVideoFormatDescriptionGetDimensions(_ description: CMFormatDescription) -> CMVideoDimensions {
    description.dimensions
}

/// Apple's name for a sound format description.
public typealias CMAudioFormatDescription = CMFormatDescription
/// Apple's name for a picture format description.
public typealias CMVideoFormatDescription = CMFormatDescription
