import Foundation
import Testing
import ChorusTestSupport
@testable import MediaPipeline

@Suite(.ownThread) struct MediaSourceTests {
    @Test(arguments: TestMedia.Kind.all)
    func describesGeneratedAudio(kind: TestMedia.Kind) throws {
        let url = try TestMedia.tone(kind, seconds: 2, rate: 44_100, channels: 2)
        let info = try MediaSource(url: url.path).info
        #expect(abs(info.duration.seconds - 2) < 0.05)
        let track = try #require(info.preferredAudioTrack)
        #expect(track.kind == .audio)
        #expect(track.channels == 2)
        // Opus always decodes at 48 kHz.
        #expect(track.sampleRate == (kind == .opus ? 48_000 : 44_100))
        #expect(info.isPlayable)
    }

    @Test func describesVideoAndItsAudio() throws {
        let info = try MediaSource(url: try TestMedia.video(seconds: 1).path).info
        let video = try #require(info.tracks.first { $0.kind == .video })
        #expect(video.codec == "h264")
        #expect(video.width == 320 && video.height == 240)
        #expect(video.frameRate == 25)
        #expect(info.preferredAudioTrack?.codec == "aac")
    }

    @Test func missingFile() {
        #expect(throws: MediaError.fileNotFound(url: "/no/such/file.mp3")) { try MediaSource(url: "/no/such/file.mp3") }
    }

    @Test func emptyFile() throws {
        let url = try TestMedia.file(named: "empty.mp3", contents: Data())
        #expect(throws: MediaError.emptyFile(url: url.path)) { try MediaSource(url: url.path) }
    }

    @Test func textIsNotPlayableMedia() throws {
        let url = try TestMedia.file(named: "notes.txt", contents: Data(String(repeating: "just some words\n", count: 200).utf8))
        do {
            // FFmpeg's tty demuxer reads text as a video of characters: it may open, but it
            // has no audio to play.
            let info = try MediaSource(url: url.path).info
            #expect(!info.isPlayable)
        } catch {
            #expect(error.url == url.path)
            #expect(error.description.hasPrefix(url.path))
        }
    }

    @Test func directoryIsNotMedia() {
        #expect(throws: MediaError.self) { try MediaSource(url: TestMedia.folder.path) }
    }

    @Test(arguments: ["gopher://example.invalid/x", "http://", "file://%zz"])
    func badURLs(_ url: String) {
        #expect(throws: MediaError.self) { try MediaSource(url: url) }
    }

    @Test func unreachableServerFailsQuickly() throws {
        // Nothing listens on this loopback port: the connection is refused at once.
        let start = Date()
        #expect(throws: MediaError.self) { try MediaSource(url: "http://127.0.0.1:9/nothing.mp3") }
        #expect(Date().timeIntervalSince(start) < 30)
    }

    @Test func truncatedContainerIsReported() throws {
        // An MP4 cut before its index cannot be opened at all.
        let cut = try TestMedia.truncated(try TestMedia.tone(.aac, seconds: 2), fraction: 0.3)
        do {
            let info = try MediaSource(url: cut.path).info
            // Some cuts still leave a readable index; then the file must still describe itself.
            #expect(info.tracks.count >= 1)
        } catch {
            #expect(error.url == cut.path)
        }
    }
}
