import Foundation
import Testing
import ChorusTestSupport
import MediaServer

/// The code of Apple's playback guide (`Examples/GuideCode`), run section by section against
/// real media: a file, a video, an HLS presentation over HTTP, and a URL that cannot play.
///
/// The guide's players play to ALSA's default device, as `AVPlayer(playerItem:)` does. Here
/// that is a null sink of their own (`PULSE_SINK`), so that their sound never mixes into the
/// shared sink that other tests record.
@Suite(.ownThread) struct GuideCodeTests {
    /// Loads a null sink named `name` for the duration of `body`.
    func withOwnSink<Result>(_ name: String, _ body: () throws -> Result) throws -> Result {
        let loaded = try Run.command("pactl", ["load-module", "module-null-sink", "sink_name=\(name)", "rate=48000", "channels=2"])
        try #require(loaded.status == 0, "\(loaded.standardError)")
        let module = loaded.output.trimmingCharacters(in: .whitespacesAndNewlines)
        defer { _ = try? Run.command("pactl", ["unload-module", module]) }
        return try body()
    }

    func guideCode(_ arguments: [String], sink: String) throws -> Run.Result {
        try Run.command(TestEnvironment.guideCodeExecutable.path, arguments, timeout: 240, environment: ["PULSE_SINK": sink])
    }

    @Test("every section of the guide's code does what the guide says", .enabled(if: TestEnvironment.hasPulse))
    func everySectionPasses() throws {
        let audio = try TestMedia.tone(.mp3, seconds: 6)
        let video = try TestMedia.video(seconds: 3)
        let hls = try TestMedia.hls(seconds: 4)
        let server = try MediaHTTPServer(address: "127.0.0.1", port: 0)
        defer { server.stop() }
        for name in hls.segments { _ = server.publish(hls.folder.appendingPathComponent(name), id: "guide") }
        let playlist = server.publish(hls.folder.appendingPathComponent("index.m3u8"), id: "guide")
        let stream = "http://127.0.0.1:\(server.port)\(playlist)"
        // Nothing listens on port 9 (discard) here: the connection is refused.
        let bad = "http://127.0.0.1:9/nowhere.m3u8"
        let result = try withOwnSink("chorus_guide") {
            try guideCode(["--audio", audio.path, "--video", video.path, "--stream", stream, "--bad", bad], sink: "chorus_guide")
        }
        let lines = result.output.split(separator: "\n").map(String.init)
        let failures = lines.filter { $0.hasPrefix("FAIL") }
        #expect(failures.isEmpty, "\(failures)")
        #expect(lines.filter { $0.hasPrefix("ok") }.count == 13, "\(result.output)\n\(result.standardError)")
        #expect(result.status == 0)
    }
}
