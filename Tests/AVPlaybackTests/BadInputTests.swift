import Foundation
import Testing
import ChorusTestSupport
@testable import AVPlayback

/// Bad input ends with a clear error, in bounded time, without a crash or a hang.
@Suite(.ownThread) struct BadInputTests {
    func failure(of url: URL) async -> (any Error)? {
        let item = AVPlayerItem(url: url)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil(10) { item.status != .unknown })
        #expect(item.status == .failed)
        return item.error
    }

    /// The typed error beneath an error handed over as Apple's are.
    func underlying(_ error: (any Error)?) -> AVPlaybackError? {
        error.flatMap { ($0 as NSError).userInfo[NSUnderlyingErrorKey] as? AVPlaybackError }
    }

    @Test("a missing file fails its item with Apple's URL error for it, which names the file")
    func missingFile() async throws {
        let error = try #require(await failure(of: URL(fileURLWithPath: "/no/such/song.mp3")))
        #expect((error as? URLError)?.code == .fileDoesNotExist)
        #expect((error as NSError).domain == NSURLErrorDomain && (error as NSError).code == -1100)
        #expect(underlying(error) == .fileNotFound(url: "/no/such/song.mp3"))
        #expect(error.localizedDescription.contains("/no/such/song.mp3"))
    }

    @Test("an empty file fails its item with AVError.fileFailedToParse")
    func emptyFile() async throws {
        let url = try TestMedia.file(named: "empty.flac", contents: Data())
        let error = try #require(await failure(of: url))
        #expect((error as? AVError)?.code == .fileFailedToParse)
        #expect((error as NSError).domain == AVFoundationErrorDomain && (error as NSError).code == -11829)
        #expect(underlying(error) == .emptyFile(url: url.path))
        // As apps match it.
        var matched = false
        do { throw error } catch AVError.fileFailedToParse { matched = true } catch {}
        #expect(matched)
    }

    /// Noise under a media file's name, from seeded generators: a failing seed fails the same
    /// way every run, and the failing case names its seed.
    @Test(arguments: [0x5eed, 0xc0ffee, 0xbad_f00d] as [UInt64])
    func randomBytes(seed: UInt64) async throws {
        var generator = SeededGenerator(seed: seed)
        let bytes = Data((0..<65_536).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let url = try TestMedia.file(named: "noise-\(seed).mp3", contents: bytes)
        let error = try #require(await failure(of: url), "seed \(seed)")
        #expect(error.localizedDescription.contains(url.path), "seed \(seed)")
        #expect((error as? AVError)?.code == .fileFormatNotRecognized || (error as? AVError)?.code == .fileFailedToParse, "seed \(seed): \(error)")
    }

    @Test func unreachableServer() async throws {
        let error = try #require(await failure(of: URL(string: "http://127.0.0.1:9/song.mp3")!))
        #expect(error.localizedDescription.contains("127.0.0.1:9"))
        #expect((error as NSError).domain == NSURLErrorDomain, "\(error)")
    }

    @Test func unsupportedScheme() async throws {
        let error = try #require(await failure(of: URL(string: "gopher://example.invalid/song.mp3")!))
        #expect((error as? URLError)?.code == .unsupportedURL)
        #expect(underlying(error) == .badURL(url: "gopher://example.invalid/song.mp3", reason: "unsupported scheme \"gopher\""))
    }

    @Test(arguments: [TestMedia.Kind.mp3, .flac, .wav, .vorbis])
    func truncatedFilesPlayWhatTheyHaveAndEnd(kind: TestMedia.Kind) async throws {
        let url = try TestMedia.truncated(try TestMedia.tone(kind, seconds: 4), fraction: 0.5)
        let item = AVPlayerItem(url: url)
        let player = AVPlayer(playerItem: item, output: .wav(path: TestMedia.folder.appendingPathComponent("trunc-\(kind.name).wav").path))
        defer { player.close() }
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
        let failed = NotificationCounter(AVPlayerItem.failedToPlayToEndTimeNotification, object: item)
        player.play()
        #expect(await waitUntil(20) { ended.value + failed.value > 0 || item.status == .failed })
        if failed.value > 0 {
            // An NSError, as Apple's, read as apps read it; the typed error beneath it.
            let error = failed.userInfo?[AVPlayerItemFailedToPlayToEndTimeErrorKey] as? NSError
            #expect(error?.domain == AVFoundationErrorDomain)
            #expect(error?.localizedDescription.contains(url.path) == true, "\(String(describing: error))")
            #expect(error?.userInfo[NSUnderlyingErrorKey] is AVPlaybackError)
        }
    }

    @Test(arguments: [TestMedia.Kind.mp3, .aac, .flac, .opus])
    func damageInTheMiddleIsSkipped(kind: TestMedia.Kind) async throws {
        let url = try TestMedia.damaged(try TestMedia.tone(kind, seconds: 3), at: 0.5, length: 2_000)
        let item = AVPlayerItem(url: url)
        let output = TestMedia.folder.appendingPathComponent("damaged-\(kind.name).wav")
        let player = AVPlayer(playerItem: item, output: .wav(path: output.path))
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
        let failed = NotificationCounter(AVPlayerItem.failedToPlayToEndTimeNotification, object: item)
        player.play()
        #expect(await waitUntil(20) { ended.value + failed.value > 0 || item.status == .failed })
        player.close()
        // What could be decoded was played: well past the damage at the middle.
        if ended.value > 0 {
            let rendered = try PCM(wavFile: output)
            #expect(Double(rendered.frameCount) / Double(rendered.sampleRate) > 2)
        }
    }
}
