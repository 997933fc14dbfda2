import Foundation
import Testing
import ChorusTestSupport
import MediaServer

/// The code of Apple's playback guide (`Examples/GuideCode`), run section by section against
/// real media: a file, a video, an HLS presentation over HTTP, and a URL that cannot play.
@Suite struct GuideCodeTests {
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
        let result = try Run.command(TestEnvironment.guideCodeExecutable.path,
                                     ["--audio", audio.path, "--video", video.path, "--stream", stream, "--bad", bad], timeout: 240)
        let lines = result.output.split(separator: "\n").map(String.init)
        let failures = lines.filter { $0.hasPrefix("FAIL") }
        #expect(failures.isEmpty, "\(failures)")
        #expect(lines.filter { $0.hasPrefix("ok") }.count == 13, "\(result.output)\n\(result.standardError)")
        #expect(result.status == 0)
    }

    @Test("the guide's failure routes name what went wrong for a missing file", .enabled(if: TestEnvironment.hasPulse))
    func missingFileFailsClearly() throws {
        let audio = try TestMedia.tone(.wav, seconds: 6)
        let result = try Run.command(TestEnvironment.guideCodeExecutable.path,
                                     ["--audio", audio.path, "--bad", "/nonexistent/guide.flac"], timeout: 240)
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("failed with: /nonexistent/guide.flac: no such file"))
    }
}
