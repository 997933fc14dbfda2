internal import CFFmpeg

/// How much of an HLS master playlist's variants an item may use: the most bits per second
/// (the variant's `BANDWIDTH`) and the largest picture, each zero for no limit. What
/// `AVPlayerItem.preferredPeakBitRate` and `preferredMaximumResolution` ask for.
public struct VariantLimit: Sendable, Hashable, CustomStringConvertible {
    /// The most bits per second a variant may declare; 0 for no limit.
    public var bitsPerSecond: Int
    /// The widest picture in pixels a variant's video may have; 0 for no limit.
    public var width: Int
    /// The tallest picture in pixels a variant's video may have; 0 for no limit.
    public var height: Int

    /// No limit: FFmpeg's own choice of tracks stands.
    public static let none = VariantLimit(bitsPerSecond: 0, width: 0, height: 0)

    public init(bitsPerSecond: Int = 0, width: Int = 0, height: Int = 0) {
        self.bitsPerSecond = max(bitsPerSecond, 0)
        self.width = max(width, 0)
        self.height = max(height, 0)
    }

    /// Whether anything is limited.
    public var limits: Bool { bitsPerSecond > 0 || width > 0 || height > 0 }

    public var description: String {
        guard limits else { return "no variant limit" }
        var parts: [String] = []
        if bitsPerSecond > 0 { parts.append("\(bitsPerSecond) bit/s") }
        if width > 0 || height > 0 { parts.append("\(width > 0 ? String(width) : "any")×\(height > 0 ? String(height) : "any")") }
        return "variants up to " + parts.joined(separator: ", ")
    }

    /// Whether `variant`, whose pictures are `tracks`' video tracks among its streams, is
    /// within the limit. A variant without pictures (sound only) has no resolution to
    /// exceed.
    public func admits(_ variant: HLSVariant, tracks: [TrackInfo]) -> Bool {
        if bitsPerSecond > 0 && variant.bandwidth > bitsPerSecond { return false }
        for track in tracks where track.kind == .video && !track.isAttachedPicture && variant.streamIndexes.contains(track.streamIndex) {
            if width > 0, let trackWidth = track.width, trackWidth > width { return false }
            if height > 0, let trackHeight = track.height, trackHeight > height { return false }
        }
        return true
    }
}

/// One variant of an HLS master playlist (`#EXT-X-STREAM-INF`) as FFmpeg's HLS demuxer
/// opened it: the bandwidth it declares and the streams it plays. FFmpeg makes each variant
/// a program of the context, tagged `variant_bitrate`, holding its own streams and the
/// renditions it refers to (an `#EXT-X-MEDIA` audio rendition shared by several variants
/// is in each of their programs, but carries no `variant_bitrate` of its own when their
/// bandwidths differ); the programs are therefore what tells which streams go together.
public struct HLSVariant: Sendable, Hashable {
    /// The variant's `BANDWIDTH`, in bits per second.
    public var bandwidth: Int
    /// FFmpeg's stream indexes of what the variant plays.
    public var streamIndexes: Set<Int>

    public init(bandwidth: Int, streamIndexes: Set<Int>) {
        self.bandwidth = bandwidth
        self.streamIndexes = streamIndexes
    }

    /// The variants of `context`, in the master playlist's order: its programs that carry a
    /// bandwidth. None for anything but an HLS master playlist.
    static func variants(of context: UnsafeMutablePointer<AVFormatContext>) -> [HLSVariant] {
        guard let programs = context.pointee.programs else { return [] }
        var result: [HLSVariant] = []
        for index in 0..<Int(context.pointee.nb_programs) {
            guard let program = programs[index],
                  let entry = av_dict_get(program.pointee.metadata, "variant_bitrate", nil, 0),
                  let value = entry.pointee.value,
                  let bandwidth = Int(String(cString: value)), bandwidth > 0 else { continue }
            var streams: Set<Int> = []
            if let indexes = program.pointee.stream_index {
                for position in 0..<Int(program.pointee.nb_stream_indexes) { streams.insert(Int(indexes[position])) }
            }
            result.append(HLSVariant(bandwidth: bandwidth, streamIndexes: streams))
        }
        return result
    }
}

extension MediaInfo {
    /// The sound and pictures to play from this input (as first described, FFmpeg's own
    /// choice in `preferredAudioTrack` and `preferredVideoTrack`) given a chosen sound and a
    /// variant limit.
    ///
    /// - `audioStream`: a sound chosen by stream index (media selection); nil, or an index
    ///   that is not a decodable sound, keeps FFmpeg's.
    /// - `limit`: with one set, and the input an HLS master playlist (`variants`), one
    ///   variant is played: the one of highest bandwidth within the limit, or the lowest
    ///   when none is (ties go to the one listed first). Its pictures are played, and its
    ///   sound: the chosen sound when the variant carries it, else the variant's sound in
    ///   the same language (else its default, else its first), so that a choice of language
    ///   holds whichever variant the limit allows. A chosen sound narrows the
    ///   variants to those that carry it or its language. Without a limit, FFmpeg's choice
    ///   stands (the first variant listed, as Apple's players start with).
    public func playedTracks(audioStream: Int?, within limit: VariantLimit) -> (audio: TrackInfo?, video: TrackInfo?) {
        let explicit = audioStream.flatMap { index in
            tracks.first { $0.streamIndex == index && $0.kind == .audio && MediaInfo.hasDecoder(for: $0) }
        }
        let audio = explicit ?? preferredAudioTrack
        guard limit.limits, !variants.isEmpty else { return (audio, preferredVideoTrack) }

        // The variants that can play the chosen sound, or its language.
        var candidates = variants
        if let explicit {
            let carrying = variants.filter { variant in
                variant.streamIndexes.contains(explicit.streamIndex)
                    || tracks.contains { variant.streamIndexes.contains($0.streamIndex) && Self.sameSound($0, as: explicit) }
            }
            if !carrying.isEmpty { candidates = carrying }
        }
        let admitted = candidates.filter { limit.admits($0, tracks: tracks) }
        // Strict comparisons: of variants with equal bandwidths, the one listed first.
        var chosen = admitted.first ?? candidates[0]
        if admitted.isEmpty {
            for variant in candidates where variant.bandwidth < chosen.bandwidth { chosen = variant }
        } else {
            for variant in admitted where variant.bandwidth > chosen.bandwidth { chosen = variant }
        }

        let members = tracks.filter { chosen.streamIndexes.contains($0.streamIndex) }
        let video = members.first { $0.streamIndex == preferredVideoTrack?.streamIndex }
            ?? members.first { $0.kind == .video && !$0.isAttachedPicture && MediaInfo.hasDecoder(for: $0) }
        let sounds = members.filter { $0.kind == .audio && MediaInfo.hasDecoder(for: $0) }
        var sound: TrackInfo? = nil
        if let audio {
            sound = sounds.first { $0.streamIndex == audio.streamIndex } ?? sounds.first { Self.sameSound($0, as: audio) }
        }
        sound = sound ?? sounds.first { $0.roles.contains(.default) } ?? sounds.first
        return (sound, video)
    }

    /// Whether `track` is a sound of the same language as `other` (both without one counts:
    /// the sound muxed into each variant of a playlist that names no languages).
    private static func sameSound(_ track: TrackInfo, as other: TrackInfo) -> Bool {
        track.kind == .audio && track.language == other.language
    }
}
