import Foundation
import Testing
import ChorusTestSupport
@testable import AVPlayback

@Suite(.ownThread) struct AssetTests {
    @Test func loadsPropertiesAsynchronously() async throws {
        let asset = AVURLAsset(url: try TestMedia.tone(.aac, seconds: 2, rate: 48_000, channels: 2))
        if case .notYetLoaded = asset.status(of: .duration) {} else { Issue.record("loaded before asked") }
        let (duration, tracks, playable) = try await asset.load(.duration, .tracks, .isPlayable)
        #expect(abs(duration.seconds - 2) < 0.05)
        #expect(playable)
        let track = try #require(tracks.first)
        #expect(track.mediaType == .audio)
        #expect(track.codecName == "aac")
        #expect(track.sampleRate == 48_000)
        #expect(track.channelCount == 2)
        #expect(track.trackID != 0)
        if case .loaded(let value) = asset.status(of: .duration) { #expect(value == duration) } else { Issue.record("not loaded") }
    }

    @Test func theOlderCallbackPairWorks() throws {
        let asset = AVURLAsset(url: try TestMedia.tone(.mp3, seconds: 1))
        let done = DispatchSemaphore(value: 0)
        asset.loadValuesAsynchronously(forKeys: ["duration", "tracks"]) { done.signal() }
        #expect(done.wait(timeout: .now() + 10) == .success)
        var error: NSError?
        #expect(asset.statusOfValue(forKey: "tracks", error: &error) == .loaded)
        #expect(error == nil)
    }

    @Test("a load that fails throws Apple's error for it, which names the file, with the typed error beneath")
    func loadFailuresAreTypedAndNameTheFile() async throws {
        let asset = AVURLAsset(url: URL(fileURLWithPath: "/missing/file.wav"))
        do {
            _ = try await asset.load(.duration)
            Issue.record("loaded a missing file")
        } catch let error as URLError {
            #expect(error.code == .fileDoesNotExist)
            #expect((error as NSError).userInfo[NSUnderlyingErrorKey] as? AVPlaybackError == .fileNotFound(url: "/missing/file.wav"))
        }
        var error: NSError?
        #expect(asset.statusOfValue(forKey: "duration", error: &error) == .failed)
        #expect(error?.localizedDescription.contains("/missing/file.wav") == true)
        #expect(error?.domain == NSURLErrorDomain)
        #expect(error?.userInfo[NSUnderlyingErrorKey] as? AVPlaybackError == .fileNotFound(url: "/missing/file.wav"))
    }

    @Test("asking for a key an asset does not have fails with an error that names it")
    func anUnknownKeyFailsWithAnError() throws {
        let asset = AVURLAsset(url: try TestMedia.tone(.wav, seconds: 1))
        let done = DispatchSemaphore(value: 0)
        asset.loadValuesAsynchronously(forKeys: ["duration"]) { done.signal() }
        #expect(done.wait(timeout: .now() + 10) == .success)
        var error: NSError?
        #expect(asset.statusOfValue(forKey: "nonsenseKey", error: &error) == .failed)
        #expect(error?.domain == AVFoundationErrorDomain)
        #expect(error?.localizedDescription.contains("nonsenseKey") == true)
    }

    @Test func videoTracksDescribeThemselves() async throws {
        let asset = AVURLAsset(url: try TestMedia.video(seconds: 1))
        let tracks = try await asset.load(.tracks)
        let video = try #require(tracks.first { $0.mediaType == .video })
        #expect(video.naturalSize == CGSize(width: 320, height: 240))
        #expect(video.nominalFrameRate == 25)
        #expect(tracks.contains { $0.mediaType == .audio && $0.isPlayable })
        #expect(video.minFrameDuration == CMTime(value: 1, timescale: 25))
        #expect(video.preferredTransform == .identity)
    }

    @Test("a track tells its timescale, its language as a tag, whether it decodes, its suggested volume and its metadata")
    func tracksTellTheirTimescaleLanguageAndMetadata() async throws {
        // An MP4 (H.264 at 25 pictures a second, AAC at 48 kHz): MP4's media timescales
        // are what FFmpeg's muxer wrote, the pictures' a multiple of their rate and the
        // sound's its sample rate.
        // A track's asset is weak, as Apple's is: the test keeps the assets.
        let asset = AVURLAsset(url: try TestMedia.video(seconds: 1))
        let tracks = try await asset.load(.tracks)
        let video = try #require(tracks.first { $0.mediaType == .video })
        let audio = try #require(tracks.first { $0.mediaType == .audio })
        #expect(video.naturalTimeScale > 0 && video.naturalTimeScale % 25 == 0, "\(video.naturalTimeScale)")
        #expect(audio.naturalTimeScale == 48_000)
        #expect(try await audio.load(.naturalTimeScale) == 48_000)
        #expect(video.isDecodable && audio.isDecodable && video.isSelfContained)
        #expect(audio.preferredVolume == 1 && video.preferredVolume == 0)
        // Matroska's languages, titles and bibliographic codes ("fre"): the tag is BCP 47.
        let film = AVURLAsset(url: try TestMedia.multilingual(seconds: 1))
        let all = try await film.load(.tracks)
        let dubbed = all.filter { $0.mediaType == .audio }
        #expect(dubbed.map(\.extendedLanguageTag) == ["en", "fr", "de"])
        let commentary = try #require(dubbed.last)
        #expect(commentary.commonMetadata.first { $0.commonKey == .commonKeyTitle }?.stringValue == "Commentary")
        #expect(commentary.metadata.contains { $0.stringValue == "deu" })
        let loaded = try await commentary.load(.commonMetadata)
        #expect(loaded.count == commentary.commonMetadata.count)
        withExtendedLifetime((asset, film)) {}
    }

    @Test("a turned video's transform stands its picture on end and keeps it in the positive quadrant")
    func turnedVideoTransform() async throws {
        let asset = AVURLAsset(url: try TestMedia.identityVideo(seconds: 0.3, rotate: 90))
        let tracks = try await asset.load(.tracks)
        let video = try #require(tracks.first { $0.mediaType == .video })
        #expect(video.naturalSize == CGSize(width: 320, height: 240))
        let turned = video.naturalSize.applying(video.preferredTransform)
        #expect(abs(turned.width) == 240 && abs(turned.height) == 320)
        // Every corner of the picture lands inside the turned size, from the origin.
        for corner in [CGPoint(x: 0, y: 0), CGPoint(x: 320, y: 0), CGPoint(x: 0, y: 240), CGPoint(x: 320, y: 240)] {
            let moved = corner.applying(video.preferredTransform)
            #expect(moved.x >= 0 && moved.x <= 240 && moved.y >= 0 && moved.y <= 320, "\(corner) -> \(moved)")
        }
    }
}
