import Foundation
import Testing
import ChorusTestSupport
internal import CFFmpeg
@testable import MediaPipeline

/// Choosing among an HLS master playlist's variants by a variant limit: which variant's
/// sound and pictures a source is opened for, and that the others are not read.
@Suite(.ownThread) struct HLSVariantTests {
    /// The variant of `info` that holds `track`: its position in the master playlist.
    func variant(of track: TrackInfo?, in info: MediaInfo) -> Int? {
        guard let track else { return nil }
        return info.variants.firstIndex { $0.streamIndexes.contains(track.streamIndex) }
    }

    /// The variants of the three-variant master, as FFmpeg opened it without a limit.
    func variants() throws -> (master: URL, variants: [HLSVariant]) {
        let master = try TestMedia.hlsVariants()
        let variants = try MediaSource(url: master.path).info.variants
        try #require(variants.count == TestMedia.variantSizes.count)
        return (master, variants)
    }

    @Test("a master playlist's variants are its programs: bandwidths in the playlist's order, each with its own pictures and sound")
    func variantsAreDescribed() throws {
        let master = try TestMedia.hlsVariants()
        let info = try MediaSource(url: master.path).info
        #expect(info.variants.count == 3)
        // Listed largest first: bandwidths fall.
        #expect(zip(info.variants, info.variants.dropFirst()).allSatisfy { $0.bandwidth > $1.bandwidth },
                "bandwidths \(info.variants.map(\.bandwidth))")
        for (position, variant) in info.variants.enumerated() {
            let members = info.tracks.filter { variant.streamIndexes.contains($0.streamIndex) }
            let video = try #require(members.first { $0.kind == .video })
            #expect(video.width == TestMedia.variantSizes[position].width && video.height == TestMedia.variantSizes[position].height)
            #expect(members.filter { $0.kind == .audio }.count == 1)
        }
        // Anything else has none.
        #expect(try MediaSource(url: TestMedia.hls(seconds: 2).folder.appendingPathComponent("index.m3u8").path).info.variants.isEmpty)
        #expect(try MediaSource(url: TestMedia.video().path).info.variants.isEmpty)
    }

    @Test("without a limit FFmpeg's choice stands: the first variant listed, as before")
    func noLimitKeepsFFmpegsChoice() throws {
        let (master, _) = try variants()
        let info = try MediaSource(url: master.path).info
        #expect(variant(of: info.preferredVideoTrack, in: info) == 0)
        #expect(info.preferredVideoTrack?.width == TestMedia.variantSizes[0].width)
        #expect(variant(of: info.preferredAudioTrack, in: info) == 0)
        #expect(try MediaSource(url: master.path, variantLimit: .none).info == info)
    }

    @Test("a peak bit rate between two variants chooses the highest within it, its pictures and its sound")
    func peakBetweenVariants() throws {
        let (master, variants) = try variants()
        // Just above the middle variant's bandwidth, below the first's.
        let limit = VariantLimit(bitsPerSecond: variants[1].bandwidth + 1)
        let info = try MediaSource(url: master.path, variantLimit: limit).info
        #expect(variant(of: info.preferredVideoTrack, in: info) == 1)
        #expect(variant(of: info.preferredAudioTrack, in: info) == 1)
        #expect(info.preferredVideoTrack?.width == TestMedia.variantSizes[1].width)
        // A limit equal to a bandwidth admits it.
        let exact = try MediaSource(url: master.path, variantLimit: VariantLimit(bitsPerSecond: variants[2].bandwidth)).info
        #expect(variant(of: exact.preferredVideoTrack, in: exact) == 2)
    }

    @Test("a peak bit rate below every variant chooses the lowest")
    func peakBelowAllChoosesTheLowest() throws {
        let (master, variants) = try variants()
        let lowest = try #require(variants.map(\.bandwidth).min())
        let info = try MediaSource(url: master.path, variantLimit: VariantLimit(bitsPerSecond: lowest / 2)).info
        #expect(variant(of: info.preferredVideoTrack, in: info) == 2)
        #expect(variant(of: info.preferredAudioTrack, in: info) == 2)
        #expect(info.preferredVideoTrack?.width == TestMedia.variantSizes[2].width)
    }

    @Test("a maximum resolution chooses the highest variant whose pictures fit it, alone or with a peak bit rate",
          arguments: [(400, 300, 1), (320, 180, 1), (320, 0, 1), (0, 100, 2), (2000, 2000, 0), (100, 50, 2)])
    func maximumResolution(width: Int, height: Int, expected: Int) throws {
        let (master, _) = try variants()
        let info = try MediaSource(url: master.path, variantLimit: VariantLimit(width: width, height: height)).info
        #expect(variant(of: info.preferredVideoTrack, in: info) == expected)
        #expect(variant(of: info.preferredAudioTrack, in: info) == expected)
        #expect(info.preferredVideoTrack?.width == TestMedia.variantSizes[expected].width)
    }

    @Test("a peak bit rate and a maximum resolution together: the highest variant within both")
    func peakAndResolutionTogether() throws {
        let (master, variants) = try variants()
        // The resolution admits the first two, the bit rate only the second and third.
        let limit = VariantLimit(bitsPerSecond: variants[1].bandwidth, width: 1000, height: 1000)
        let info = try MediaSource(url: master.path, variantLimit: limit).info
        #expect(variant(of: info.preferredVideoTrack, in: info) == 1)
        let small = try MediaSource(url: master.path, variantLimit: VariantLimit(bitsPerSecond: variants[0].bandwidth, width: 200, height: 200)).info
        #expect(variant(of: small.preferredVideoTrack, in: small) == 2)
    }

    @Test("a chosen sound of one variant follows the limit to the same sound of the variant chosen")
    func aChosenSoundFollowsTheVariant() throws {
        let (master, _) = try variants()
        let unlimited = try MediaSource(url: master.path).info
        let firstSound = try #require(unlimited.tracks.first { $0.kind == .audio && variant(of: $0, in: unlimited) == 0 })
        let info = try MediaSource(url: master.path, audioStream: firstSound.streamIndex,
                                   variantLimit: VariantLimit(bitsPerSecond: 1)).info
        #expect(variant(of: info.preferredVideoTrack, in: info) == 2)
        #expect(variant(of: info.preferredAudioTrack, in: info) == 2)
        // Without a limit the choice is played as it is.
        let chosen = try MediaSource(url: master.path, audioStream: firstSound.streamIndex).info
        #expect(chosen.preferredAudioTrack?.streamIndex == firstSound.streamIndex)
    }

    @Test("with audio renditions shared by the variants, the limit picks the pictures and the chosen language stays")
    func sharedRenditionsKeepTheLanguage() throws {
        let master = try TestMedia.hlsVariants(languages: true)
        let unlimited = try MediaSource(url: master.path).info
        #expect(unlimited.variants.count == 3)
        let french = try #require(unlimited.tracks.first { $0.kind == .audio && $0.language == "fr" })
        // The rendition is in every variant.
        #expect(unlimited.variants.allSatisfy { $0.streamIndexes.contains(french.streamIndex) })
        for (bits, expected) in [(1, 2), (unlimited.variants[1].bandwidth, 1)] {
            let info = try MediaSource(url: master.path, audioStream: french.streamIndex,
                                       variantLimit: VariantLimit(bitsPerSecond: bits)).info
            #expect(info.preferredAudioTrack?.streamIndex == french.streamIndex)
            #expect(variant(of: info.preferredVideoTrack, in: info) == expected)
            #expect(info.preferredVideoTrack?.width == TestMedia.variantSizes[expected].width)
        }
        // No sound chosen: the default rendition with the limited variant's pictures.
        let info = try MediaSource(url: master.path, variantLimit: VariantLimit(width: 320, height: 180)).info
        #expect(info.preferredAudioTrack?.language == "en")
        #expect(info.preferredVideoTrack?.width == 320)
    }

    @Test("a source's tracks can be chosen again before it is read, as an asset's opened source is for its item")
    func choosingAgain() throws {
        let (master, _) = try variants()
        let source = try MediaSource(url: master.path)
        source.choose(audioStream: nil, variantLimit: VariantLimit(bitsPerSecond: 1))
        #expect(variant(of: source.info.preferredVideoTrack, in: source.info) == 2)
        #expect(source.variantLimit == VariantLimit(bitsPerSecond: 1))
        source.choose(audioStream: nil, variantLimit: .none)
        #expect(variant(of: source.info.preferredVideoTrack, in: source.info) == 0)
    }

    @Test("only the chosen variant is read on: other variants give nothing past what probing read")
    func onlyTheChosenVariantIsRead() throws {
        let (master, variants) = try variants()
        let source = try MediaSource(url: master.path, variantLimit: VariantLimit(bitsPerSecond: variants[1].bandwidth))
        let chosen = variants[1].streamIndexes
        // Made for the sound and pictures: every other stream is discarded. Its thread is not
        // started; the packets are read here instead.
        let demuxer = ItemDemuxer(source: source, sound: true, pictures: true)
        defer { withExtendedLifetime(demuxer) {} }
        let packet = try #require(av_packet_alloc())
        defer { var freed: UnsafeMutablePointer<AVPacket>? = packet; av_packet_free(&freed) }
        // The latest time each stream's packets reached, in seconds.
        var reached: [Int: Double] = [:]
        let context = source.formatContext
        while av_read_frame(context, packet) >= 0 {
            let index = Int(packet.pointee.stream_index)
            if packet.pointee.pts != FFmpegCall.noPTS, let stream = context.pointee.streams[index] {
                let base = stream.pointee.time_base
                let seconds = Double(packet.pointee.pts - max(stream.pointee.start_time, 0)) * Double(base.num) / Double(base.den)
                reached[index] = max(reached[index] ?? 0, seconds)
            }
            av_packet_unref(packet)
        }
        // The chosen variant's streams are read to the end of the 4 s item; any other's
        // packets are only those probing buffered, from its first 1 s segment (its sound a
        // frame or two past it): nothing near the end, as reading the variant on would give.
        for index in chosen { #expect((reached[index] ?? 0) > 3, "stream \(index) reached \(reached[index] ?? 0) s") }
        for (index, seconds) in reached where !chosen.contains(index) {
            #expect(seconds < 2, "stream \(index), of a variant not chosen, was read to \(seconds) s")
        }
    }
}
