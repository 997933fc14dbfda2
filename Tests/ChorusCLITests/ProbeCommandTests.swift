import Foundation
import Testing
import ChorusTestSupport

/// `chorus probe`, run as a user runs it, against ffprobe's view of the same files.
@Suite(.ownThread) struct ProbeCommandTests {
    struct Report: Decodable {
        struct Track: Decodable {
            var id: Int
            var mediaType: String
            var codec: String
            var sampleRate: Int?
            var channels: Int?
            var width: Int?
            var height: Int?
            var frameRate: Double?
            var rotation: Double?
            var sampleAspectRatio: String?
            var pixelFormat: String?
            var displayWidth: Int?
            var displayHeight: Int?
        }
        var url: String
        var duration: Double?
        var playable: Bool
        var tracks: [Track]
    }

    struct FFprobe: Decodable {
        struct Stream: Decodable {
            var codec_type: String
            var codec_name: String?
            var sample_rate: String?
            var channels: Int?
            var width: Int?
            var height: Int?
        }
        struct Format: Decodable { var duration: String? }
        var streams: [Stream]
        var format: Format
    }

    func probe(_ path: String) throws -> (Run.Result, Report?) {
        let result = try Run.command(TestEnvironment.chorusExecutable.path, ["probe", path], timeout: 30)
        return (result, try? JSONDecoder().decode(Report.self, from: result.standardOutput))
    }

    func ffprobe(_ url: URL) throws -> FFprobe {
        let result = try Run.command("ffprobe", ["-v", "error", "-print_format", "json", "-show_streams", "-show_format", url.path])
        return try JSONDecoder().decode(FFprobe.self, from: result.standardOutput)
    }

    @Test(arguments: TestMedia.Kind.all)
    func agreesWithFFprobe(kind: TestMedia.Kind) throws {
        let url = try TestMedia.tone(kind, seconds: 2.5, rate: 32_000, channels: 1)
        let (result, report) = try probe(url.path)
        #expect(result.status == 0)
        let ours = try #require(report)
        let theirs = try ffprobe(url)
        #expect(ours.playable)
        #expect(abs((ours.duration ?? -1) - (Double(theirs.format.duration ?? "") ?? -2)) < 0.05)
        #expect(ours.tracks.count == theirs.streams.count)
        for (track, stream) in zip(ours.tracks, theirs.streams) {
            #expect(track.mediaType == stream.codec_type)
            #expect(track.codec == stream.codec_name)
            #expect(track.sampleRate.map(String.init) == stream.sample_rate)
            #expect(track.channels == stream.channels)
        }
    }

    @Test func describesVideo() throws {
        let url = try TestMedia.video(seconds: 1)
        let (result, report) = try probe(url.path)
        #expect(result.status == 0)
        let video = try #require(report?.tracks.first { $0.mediaType == "video" })
        #expect(video.codec == "h264")
        #expect(video.width == 320 && video.height == 240)
        #expect(video.frameRate == 25)
        #expect(report?.tracks.contains { $0.mediaType == "audio" && $0.codec == "aac" } == true)
    }

    @Test("a file with pictures and no sound is described, and the probe succeeds")
    func describesVideoOnly() throws {
        let url = try TestMedia.identityVideo(seconds: 0.5, rotate: 90)
        let (result, report) = try probe(url.path)
        #expect(result.status == 0, "\(result.standardError)")
        let tracks = try #require(report?.tracks)
        #expect(tracks.count == 1)
        let video = try #require(tracks.first)
        #expect(video.mediaType == "video" && video.codec == "h264" && video.pixelFormat == "yuv420p")
        #expect(video.width == 320 && video.height == 240)
        // Turned a quarter either way, the picture stands on its end.
        #expect(video.rotation == 90 || video.rotation == 270)
        #expect(video.displayWidth == 240 && video.displayHeight == 320)
    }

    @Test("non-square pixels are reported, and the display size accounts for them")
    func describesAnamorphicVideo() throws {
        let url = TestMedia.folder.appendingPathComponent("anamorphic-720x576.mp4")
        let made = try Run.command("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=720x576:rate=25:duration=0.4",
                                              "-vf", "setsar=16/15", "-c:v", "libx264", "-preset", "ultrafast", url.path])
        try #require(made.status == 0)
        let (result, report) = try probe(url.path)
        #expect(result.status == 0)
        let video = try #require(report?.tracks.first)
        #expect(video.width == 720 && video.height == 576)
        #expect(video.sampleAspectRatio == "16:15")
        #expect(video.displayWidth == 768 && video.displayHeight == 576)
    }

    @Test func brokenInputsExitOneWithOneLine() throws {
        let cases: [String] = [
            "/no/such/file.mp3",
            try TestMedia.file(named: "cli-empty.wav", contents: Data()).path,
            try TestMedia.file(named: "cli-noise.mp3", contents: Data((0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 7919) })).path,
            try TestMedia.truncated(try TestMedia.tone(.aac, seconds: 2), fraction: 0.1).path,
            "http://127.0.0.1:9/nothing.flac",
        ]
        for path in cases {
            let (result, _) = try probe(path)
            #expect(result.status == 1, "\(path)")
            let lines = result.standardError.split(separator: "\n")
            #expect(lines.count == 1, "\(path): \(result.standardError)")
            #expect(result.standardError.contains(path) || result.standardError.contains(URL(fileURLWithPath: path).lastPathComponent))
            #expect(result.seconds < 5, "\(path) took \(result.seconds) s")
        }
    }
}
