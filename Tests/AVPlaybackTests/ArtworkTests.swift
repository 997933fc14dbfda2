import Foundation
import Testing
import ChorusTestSupport
@testable import AVPlayback
import MediaPipeline

/// Runs ffmpeg with `arguments` (quiet, overwriting); throws its message when it fails.
private func ffmpeg(_ arguments: [String], making name: String) throws {
    let result = try Run.command("ffmpeg", ["-v", "error", "-y"] + arguments)
    guard result.status == 0 else { throw TestMediaError.ffmpegFailed(name, result.standardError) }
}

/// A new file name in the tests' media folder: every test makes its own files, so tests that
/// run at once never read one another's half-written ones.
private func newFile(_ stem: String, _ fileExtension: String) -> URL {
    TestMedia.folder.appendingPathComponent("\(stem)-\(UUID().uuidString).\(fileExtension)")
}

/// A one-colour 64×64 picture, a PNG or a JPEG by `fileExtension`.
private func cover(_ fileExtension: String, colour: String = "red") throws -> URL {
    let url = newFile("cover-\(colour)", fileExtension)
    try ffmpeg(["-f", "lavfi", "-i", "color=\(colour):s=64x64", "-frames:v", "1", url.path], making: url.lastPathComponent)
    return url
}

/// A PNG of more than `MediaSource.maximumPictureBytes`: 2500×2500 RGB, uncompressed
/// (about 18 MiB).
private func oversizedCover() throws -> URL {
    let url = newFile("cover-oversized", "png")
    try ffmpeg(["-f", "lavfi", "-i", "color=red:s=2500x2500", "-frames:v", "1", "-pix_fmt", "rgb24",
                "-compression_level", "0", url.path], making: url.lastPathComponent)
    return url
}

/// `picture` as a FLAC `PICTURE` block in base64, as a Vorbis comment carries it
/// (`METADATA_BLOCK_PICTURE`): type 3 (front cover), its MIME type, no description.
private func pictureBlock(_ picture: Data, mimeType: String) -> String {
    func bigEndian(_ value: Int) -> [UInt8] { withUnsafeBytes(of: UInt32(value).bigEndian, Array.init) }
    var block = bigEndian(3) + bigEndian(mimeType.utf8.count) + Array(mimeType.utf8) + bigEndian(0)
    block += bigEndian(64) + bigEndian(64) + bigEndian(24) + bigEndian(0) + bigEndian(picture.count)
    return (Data(block) + picture).base64EncodedString()
}

/// A one-second tone titled "Covered" in `container` ("mp3", "m4a", "flac", "opus", "mkv"),
/// carrying `pictures` as that container carries cover art (one only in "opus": ffmpeg keeps
/// the last of a repeated comment).
private func song(_ container: String, pictures: [URL]) throws -> URL {
    let url = newFile("covered", container)
    var arguments = ["-f", "lavfi", "-i", "sine=frequency=440:duration=1"]
    let title = ["-metadata", "title=Covered"]
    switch container {
    case "opus":
        // FFmpeg's Ogg muxer writes no picture streams; the comment is what taggers write.
        let comments = try pictures.flatMap { picture -> [String] in
            let mime = picture.pathExtension == "png" ? "image/png" : "image/jpeg"
            return ["-metadata", "METADATA_BLOCK_PICTURE=\(pictureBlock(try Data(contentsOf: picture), mimeType: mime))"]
        }
        arguments += ["-c:a", "libopus"] + title + comments
    case "mkv":
        // Matroska keeps pictures as attachments.
        arguments += ["-c:a", "flac"] + title
        for (index, picture) in pictures.enumerated() {
            let mime = picture.pathExtension == "png" ? "image/png" : "image/jpeg"
            arguments += ["-attach", picture.path, "-metadata:s:t:\(index)", "mimetype=\(mime)",
                          "-metadata:s:t:\(index)", "filename=cover\(index).\(picture.pathExtension)"]
        }
    default:
        arguments += pictures.flatMap { ["-i", $0.path] } + (0...pictures.count).flatMap { ["-map", "\($0)"] }
        let codec = ["mp3": "libmp3lame", "m4a": "aac", "flac": "flac"][container] ?? "copy"
        arguments += ["-c:a", codec, "-c:v", "copy"] + title
        if container == "mp3" {
            arguments += ["-id3v2_version", "3", "-metadata:s:v", "title=Album cover", "-metadata:s:v", "comment=Cover (front)"]
        } else {
            arguments += ["-disposition:v", "attached_pic"]
        }
    }
    try ffmpeg(arguments + [url.path], making: url.lastPathComponent)
    return url
}

/// One container with one picture in it.
struct CoverCase: Sendable, CustomTestStringConvertible {
    var container: String
    var picture: String
    var expectedDataType: String { picture == "png" ? kCMMetadataBaseDataType_PNG : kCMMetadataBaseDataType_JPEG }
    var testDescription: String { "\(picture) in \(container)" }
}

/// Cover art (FFmpeg's attached pictures) read as artwork metadata, and kept out of the tracks.
@Suite(.ownThread) struct ArtworkTests {
    static let cases = [
        CoverCase(container: "mp3", picture: "jpg"), CoverCase(container: "mp3", picture: "png"),
        CoverCase(container: "m4a", picture: "png"), CoverCase(container: "m4a", picture: "jpg"),
        CoverCase(container: "flac", picture: "jpg"), CoverCase(container: "opus", picture: "png"),
        CoverCase(container: "mkv", picture: "jpg"),
    ]

    @Test("A file's cover loads as common artwork: the picture's own bytes, with its data type", arguments: cases)
    func coverIsCommonArtwork(_ coverCase: CoverCase) async throws {
        let picture = try cover(coverCase.picture)
        let bytes = try Data(contentsOf: picture)
        let asset = AVURLAsset(url: try song(coverCase.container, pictures: [picture]))
        let common = try await asset.load(.commonMetadata)
        let artwork = AVMetadataItem.metadataItems(from: common, filteredByIdentifier: .commonIdentifierArtwork)
        try #require(artwork.count == 1)
        let item = artwork[0]
        #expect(item.commonKey == .commonKeyArtwork)
        #expect(item.keySpace == .common)
        #expect(item.key as? String == "artwork")
        #expect(item.dataValue == bytes)
        #expect(item.value as? Data == bytes)
        #expect(item.dataType == coverCase.expectedDataType)
        #expect(item.stringValue == nil)
        #expect(item.numberValue == nil)
        #expect(item.dateValue == nil)
        let loaded: Data? = try await item.load(.dataValue)
        #expect(loaded == bytes)
        #expect(AVMetadataItem.metadataItems(from: common, withKey: AVMetadataKey.commonKeyArtwork, keySpace: .common).count == 1)
        // The tags are read as before, and the picture is no tag of its own.
        #expect(common.first { $0.commonKey == .commonKeyTitle }?.stringValue == "Covered")
        #expect(common.allSatisfy { $0.commonKey == .commonKeyArtwork || $0.dataValue == nil })
        #expect(asset.commonMetadata.count == common.count)
    }

    @Test("An MP3 cover's caption and picture type are its extra attributes; an M4A's cover and a tag have none")
    func coverCaptionIsAnExtraAttribute() async throws {
        let picture = try cover("jpg")
        let mp3 = try await AVURLAsset(url: try song("mp3", pictures: [picture])).load(.commonMetadata)
        let artwork = try #require(AVMetadataItem.metadataItems(from: mp3, filteredByIdentifier: .commonIdentifierArtwork).first)
        let attributes = try #require(artwork.extraAttributes)
        #expect(attributes[.info] as? String == "Album cover")
        #expect(attributes[.pictureType] as? String == "Cover (front)")
        #expect(mp3.first { $0.commonKey == .commonKeyTitle }?.extraAttributes == nil)
        let m4a = try await AVURLAsset(url: try song("m4a", pictures: [picture])).load(.commonMetadata)
        let plain = try #require(AVMetadataItem.metadataItems(from: m4a, filteredByIdentifier: .commonIdentifierArtwork).first)
        #expect(plain.extraAttributes == nil)
    }

    @Test("A file's cover is among all its metadata too, as ffmpeg/artwork", arguments: cases)
    func coverIsInAllMetadata(_ coverCase: CoverCase) async throws {
        let picture = try cover(coverCase.picture)
        let bytes = try Data(contentsOf: picture)
        let asset = AVURLAsset(url: try song(coverCase.container, pictures: [picture]))
        let metadata = try await asset.load(.metadata)
        let artwork = metadata.filter { $0.commonKey == .commonKeyArtwork }
        try #require(artwork.count == 1)
        #expect(artwork[0].identifier == AVMetadataIdentifier("ffmpeg/artwork"))
        #expect(artwork[0].keySpace == .ffmpeg)
        #expect(artwork[0].dataValue == bytes)
        #expect(artwork[0].dataType == coverCase.expectedDataType)
        // Ogg's picture comment is read as a picture, not kept as a tag of base64 text.
        #expect(!metadata.contains { $0.keyName.uppercased() == "METADATA_BLOCK_PICTURE" })
        #expect(metadata.filter { $0.dataValue != nil }.count == 1)
    }

    @Test("Every picture of a file is artwork, in the file's order")
    func everyPictureIsArtwork() async throws {
        let front = try cover("jpg", colour: "red")
        let back = try cover("png", colour: "blue")
        let asset = AVURLAsset(url: try song("mp3", pictures: [front, back]))
        let common = try await asset.load(.commonMetadata)
        let artwork = common.filter { $0.commonKey == .commonKeyArtwork }
        let pictures = [try Data(contentsOf: front), try Data(contentsOf: back)]
        #expect(artwork.map(\.dataValue) == pictures)
        #expect(artwork.map(\.dataType) == [kCMMetadataBaseDataType_JPEG, kCMMetadataBaseDataType_PNG])
    }

    @Test("A file without pictures has no artwork, and no item has data")
    func noCoverNoArtwork() async throws {
        for kind in [TestMedia.Kind.mp3, .aac, .flac] {
            let asset = AVURLAsset(url: try TestMedia.tone(kind, seconds: 1))
            let common = try await asset.load(.commonMetadata)
            let metadata = try await asset.load(.metadata)
            #expect(AVMetadataItem.metadataItems(from: common, filteredByIdentifier: .commonIdentifierArtwork).isEmpty)
            #expect(!(common + metadata).contains { $0.commonKey == .commonKeyArtwork })
            #expect((common + metadata).allSatisfy { $0.dataValue == nil && $0.dataType == nil })
        }
    }

    @Test("A picture over the size limit is left out; the others are kept")
    func oversizedPictureIsLeftOut() async throws {
        let big = try oversizedCover()
        let small = try cover("jpg")
        #expect(try Data(contentsOf: big).count > MediaSource.maximumPictureBytes)
        let url = try song("mp3", pictures: [big, small])
        // FFmpeg reads both pictures; the large one's bytes alone are not kept.
        let info = try MediaSource(url: url.path).info
        #expect(info.tracks.filter { $0.isAttachedPicture }.count == 2)
        #expect(info.pictures.map(\.streamIndex) == [2])
        let asset = AVURLAsset(url: url)
        let common = try await asset.load(.commonMetadata)
        let artwork = common.filter { $0.commonKey == .commonKeyArtwork }
        let kept = try Data(contentsOf: small)
        #expect(artwork.map(\.dataValue) == [kept])
        #expect(try await asset.loadTracks(withMediaType: .video).isEmpty)
    }

    @Test("A picture's data type is read from its bytes, whatever the container calls it")
    func dataTypeFromMagicBytes() {
        #expect(AVMetadataItem.dataType(ofPicture: Data([0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10])) == kCMMetadataBaseDataType_JPEG)
        #expect(AVMetadataItem.dataType(ofPicture: Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0])) == kCMMetadataBaseDataType_PNG)
        #expect(AVMetadataItem.dataType(ofPicture: Data("GIF89a".utf8)) == kCMMetadataBaseDataType_RawData)
        #expect(AVMetadataItem.dataType(ofPicture: Data([0x89, 0x50])) == kCMMetadataBaseDataType_RawData)
        #expect(AVMetadataItem.dataType(ofPicture: Data()) == kCMMetadataBaseDataType_RawData)
        #expect(kCMMetadataBaseDataType_JPEG == "com.apple.metadata.datatype.JPEG")
        #expect(kCMMetadataBaseDataType_PNG == "com.apple.metadata.datatype.PNG")
    }

    @Test("A file with a cover has one track, its sound, and no video track", arguments: ["mp3", "m4a", "flac"])
    func coverIsNotAVideoTrack(container: String) async throws {
        let asset = AVURLAsset(url: try song(container, pictures: [try cover("jpg")]))
        #expect(try await asset.loadTracks(withMediaType: .video).isEmpty)
        let tracks = try await asset.load(.tracks)
        #expect(tracks.map(\.mediaType) == [.audio])
        #expect(tracks.allSatisfy { $0.isPlayable })
        #expect(try await asset.load(.isPlayable))
        #expect(asset.tracks.count == 1)
    }

    @Test("An MP3 with a cover plays as sound alone: no picture to show, its sound as FFmpeg decodes it")
    func coveredMP3PlaysAsSound() async throws {
        let url = try song("mp3", pictures: [try cover("jpg")])
        let item = AVPlayerItem(url: url)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        // Something that shows pictures is attached: the item still has none to give it.
        let output = AVPlayerItemVideoOutput(pixelBufferAttributes: nil)
        item.add(output)
        #expect(await waitUntil { item.status == .readyToPlay })
        #expect(item.tracks.compactMap(\.assetTrack?.mediaType) == [.audio])
        #expect(item.presentationSize == .zero)
        #expect(!item.canStepForward)

        let rendered = try await renderToPCM(url, name: "covered-mp3")
        let reference = try PCM.ffmpegDecode(url, channels: rendered.channels)
        #expect(rendered.frameCount > rendered.sampleRate * 9 / 10)
        #expect(rendered.maximumDifference(from: reference) <= 1e-6)
    }
}
