import Foundation
import Testing
import ChorusTestSupport

/// `chorus play`, run as a user runs it.
@Suite(.ownThread) struct PlayCommandTests {
    func chorus(_ arguments: [String], timeout: Double = 60) throws -> Run.Result {
        try Run.command(TestEnvironment.chorusExecutable.path, arguments, timeout: timeout)
    }

    @Test func rendersEveryItemInTurnIntoAWAVFile() throws {
        let first = try TestMedia.tone(.mp3, seconds: 1, rate: 44_100, channels: 2)
        let second = try TestMedia.tone(.vorbis, seconds: 1, rate: 44_100, channels: 2)
        let out = TestMedia.folder.appendingPathComponent("cli-two.wav")
        let result = try chorus(["play", "--output", "wav:\(out.path)", first.path, second.path])
        #expect(result.status == 0, "\(result.standardError)")
        let rendered = try PCM(wavFile: out)
        let a = try PCM.ffmpegDecode(first, channels: 2), b = try PCM.ffmpegDecode(second, channels: 2)
        #expect(rendered.frameCount == a.frameCount + b.frameCount)
        let joined = PCM(sampleRate: 44_100, channels: 2, samples: a.samples + b.samples)
        #expect(rendered.maximumDifference(from: joined) <= 1e-6)
    }

    @Test func startsWhereAsked() throws {
        let source = try TestMedia.tone(.flac, seconds: 2, rate: 48_000, channels: 1)
        let out = TestMedia.folder.appendingPathComponent("cli-start.wav")
        let result = try chorus(["play", "--output", "wav:\(out.path)", "--start", "1.5", source.path])
        #expect(result.status == 0)
        let rendered = try PCM(wavFile: out)
        let reference = try PCM.ffmpegDecode(source, channels: 1)
        #expect(rendered.samples == Array(reference.samples[72_000...]))
    }

    @Test func playsAtTheSpeedAsked() throws {
        // Two items at twice the speed: each lasts half as long, the speed carrying over.
        let source = try TestMedia.tone(.flac, seconds: 1, rate: 48_000, channels: 1)
        let out = TestMedia.folder.appendingPathComponent("cli-rate.wav")
        let result = try chorus(["play", "--output", "wav:\(out.path)", "--rate", "2", source.path, source.path])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(try PCM(wavFile: out).frameCount == 48_000)
        #expect(try chorus(["play", "--rate", "0", source.path]).status != 0)
        #expect(try chorus(["play", "--rate", "-1", source.path]).status != 0)
    }

    @Test("--pitch chooses how another speed sounds: the tone keeps its 440 Hz or, varispeed, doubles",
          arguments: [("time-domain", 440.0), ("spectral", 440.0), ("varispeed", 880.0)])
    func thePitchOptionChoosesHowASpeedSounds(choice: String, hertz: Double) throws {
        let source = try TestMedia.tone(.flac, seconds: 1, rate: 48_000, channels: 1)
        let out = TestMedia.folder.appendingPathComponent("cli-pitch-\(choice).wav")
        let result = try chorus(["play", "--output", "wav:\(out.path)", "--rate", "2", "--pitch", choice, source.path])
        #expect(result.status == 0, "\(result.standardError)")
        let rendered = try PCM(wavFile: out)
        #expect(rendered.frameCount == 24_000)
        // Zero crossings over the middle, clear of each end's edges.
        let middle = rendered.samples[4_000..<20_000]
        var crossings = 0
        for index in middle.indices.dropFirst() where (middle[index - 1] < 0) != (middle[index] < 0) { crossings += 1 }
        let measured = Double(crossings) / 2 / (Double(middle.count) / 48_000)
        #expect(abs(measured - hertz) < 10, "\(choice): \(measured) Hz")
    }

    @Test func anUnknownPitchChoiceIsRefused() throws {
        let source = try TestMedia.tone(.flac, seconds: 1, rate: 48_000, channels: 1)
        let result = try chorus(["play", "--output", "null", "--pitch", "chipmunk", source.path])
        #expect(result.status != 0)
        #expect(result.standardError.contains("time-domain"), "\(result.standardError)")
    }

    @Test func theLogLevelChoosesWhichMessagesAreShown() throws {
        // A failed item is an error: shown at the default level and at `error`, not above.
        let good = try TestMedia.tone(.wav, seconds: 0.2)
        let out = TestMedia.folder.appendingPathComponent("cli-log-level.wav")
        for (level, shown) in [(nil, true), ("error", true), ("critical", false)] as [(String?, Bool)] {
            let options = level.map { ["--log-level", $0] } ?? []
            let result = try chorus(["play", "--output", "wav:\(out.path)"] + options + ["/no/such/track.ogg", good.path])
            #expect(result.status == 1, "the failure is in the exit status whatever is shown")
            #expect(result.standardError.contains("chorus: /no/such/track.ogg") == shown, "\(level ?? "default"): \(result.standardError)")
        }
        #expect(try chorus(["play", "--log-level", "loud", good.path]).status != 0)
    }

    @Test func takesTheMediasDurationOnTheNullDevice() throws {
        let source = try TestMedia.tone(.aac, seconds: 1.5)
        let result = try chorus(["play", "--output", "null", "--quiet", source.path])
        #expect(result.status == 0)
        #expect(result.seconds >= 1.45)
    }

    @Test func aFailedItemSaysWhyAndExitsOne() throws {
        let good = try TestMedia.tone(.wav, seconds: 0.3)
        let out = TestMedia.folder.appendingPathComponent("cli-fail.wav")
        let result = try chorus(["play", "--output", "wav:\(out.path)", "/no/such/track.ogg", good.path])
        #expect(result.status == 1)
        #expect(result.standardError.contains("/no/such/track.ogg"))
        // The good item after it still played.
        #expect(try PCM(wavFile: out).frameCount > 0)
    }

    @Test("over HTTPS an item plays from a server whose certificate checks out, and one that does not is refused with a clear error")
    func httpsChecksTheServersCertificate() throws {
        let source = try TestMedia.tone(.wav, seconds: 0.5, rate: 48_000, channels: 2)
        let server = try HTTPSServer(serving: TestMedia.folder)
        let url = server.url(source.lastPathComponent)
        let out = TestMedia.folder.appendingPathComponent("cli-https.wav")
        // Trusted through the authority given.
        let trusted = try Run.command(TestEnvironment.chorusExecutable.path, ["play", "--output", "wav:\(out.path)", url],
                                      timeout: 60, environment: ["CHORUS_CA_FILE": server.authority.certificate.path])
        #expect(trusted.status == 0, "\(trusted.standardError)")
        let rendered = try PCM(wavFile: out)
        #expect(rendered.maximumDifference(from: try PCM.ffmpegDecode(source, channels: 2)) <= 1e-6)
        // Not trusted by the system: refused, naming the URL.
        let refused = try Run.command(TestEnvironment.chorusExecutable.path, ["play", "--output", "wav:\(out.path)", url],
                                      timeout: 60, environment: ["CHORUS_CA_FILE": ""])
        #expect(refused.status == 1)
        #expect(refused.standardError.contains(url), "\(refused.standardError)")
    }

    /// Where an HLS presentation's second server comes in: what its playlist, fetched from
    /// the first, sends the player to fetch there.
    enum SecondServer: String, CaseIterable, CustomTestStringConvertible {
        /// The media playlist lists every segment at the second server.
        case segments
        /// As `segments`, the segments encrypted (AES-128, their key at the first server):
        /// FFmpeg fetches them as `crypto+https:`, a protocol nested in another.
        case encryptedSegments
        /// A master playlist names a media playlist at the second server (its segments
        /// there too).
        case mediaPlaylist
        var testDescription: String { rawValue }
    }

    /// The AES-128 key and initialisation vector `SecondServer.encryptedSegments` encrypts
    /// with: any will do.
    static let segmentKey: [UInt8] = Array(0..<16), segmentIV: [UInt8] = Array((0..<16).reversed())
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// A new folder `named` in the test media's, holding each of `tone`'s segments as
    /// `make` writes it from the segmenter's (a plain copy unless given), for a test to
    /// serve with a playlist of its own.
    static func segmentFolder(of tone: (folder: URL, segments: [String]), named name: String,
                              make: (_ plain: URL, _ served: URL) throws -> Void = { try FileManager.default.copyItem(at: $0, to: $1) }) throws -> URL {
        let folder = TestMedia.folder.appendingPathComponent(name)
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for segment in tone.segments {
            try make(tone.folder.appendingPathComponent(segment), folder.appendingPathComponent(segment))
        }
        return folder
    }

    /// Writes `tone`'s media playlist into `folder` as `index.m3u8`, its lines as `rewrite`
    /// leaves them.
    static func writePlaylist(of tone: (folder: URL, segments: [String]), into folder: URL, rewrite: (inout [String]) -> Void) throws {
        var lines = try String(contentsOf: tone.folder.appendingPathComponent("index.m3u8"), encoding: .utf8)
            .split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        rewrite(&lines)
        try lines.joined(separator: "\n").write(to: folder.appendingPathComponent("index.m3u8"), atomically: true, encoding: .utf8)
    }

    @Test("over HTTPS an HLS item's later fetches are checked like its first: when its playlist sends the player to a server no authority given vouches for, the item is refused naming that fetch; with both vouched for, it plays",
          arguments: SecondServer.allCases)
    func httpsChecksTheServersAnHLSPlaylistSendsTo(second: SecondServer) throws {
        let tone = try TestMedia.hls(seconds: 2)
        let firstSegment = try #require(tone.segments.first)
        let folder = try Self.segmentFolder(of: tone, named: "hls-two-servers-\(second.rawValue)") { plain, served in
            guard second == .encryptedSegments else { return try FileManager.default.copyItem(at: plain, to: served) }
            // HLS's AES-128 is the whole segment in CBC mode with PKCS#7 padding: what
            // `openssl enc` does by default.
            let encrypted = try Run.command("openssl", ["enc", "-aes-128-cbc", "-K", Self.hex(Self.segmentKey), "-iv", Self.hex(Self.segmentIV),
                                                        "-in", plain.path, "-out", served.path])
            #expect(encrypted.status == 0, "\(encrypted.standardError)")
        }
        try Data(Self.segmentKey).write(to: folder.appendingPathComponent("key.bin"))
        let first = try HTTPSServer(serving: folder)
        let other = try HTTPSServer(serving: folder)

        // The media playlist as the segmenter wrote it; for the segments' cases, their names
        // made absolute at the second server (and the key, relative, at the first).
        try Self.writePlaylist(of: tone, into: folder) { lines in
            if second != .mediaPlaylist { lines = lines.map { tone.segments.contains($0) ? other.url($0) : $0 } }
            if second == .encryptedSegments, let firstEntry = lines.firstIndex(where: { $0.hasPrefix("#EXTINF") }) {
                lines.insert("#EXT-X-KEY:METHOD=AES-128,URI=\"key.bin\",IV=0x\(Self.hex(Self.segmentIV))", at: firstEntry)
            }
        }
        try """
            #EXTM3U
            #EXT-X-STREAM-INF:BANDWIDTH=140000,CODECS="mp4a.40.2"
            \(other.url("index.m3u8"))

            """.write(to: folder.appendingPathComponent("master.m3u8"), atomically: true, encoding: .utf8)
        let url = first.url(second == .mediaPlaylist ? "master.m3u8" : "index.m3u8")
        // What the player fetches first at the second server.
        let sentTo = switch second {
        case .segments: other.url(firstSegment)
        case .encryptedSegments: "crypto+" + other.url(firstSegment)
        case .mediaPlaylist: other.url("index.m3u8")
        }
        let out = TestMedia.folder.appendingPathComponent("cli-https-hls-\(second.rawValue).wav")
        try? FileManager.default.removeItem(at: out)

        // Only the first server's authority given: the first fetch checks out, the second
        // server's must not. FFmpeg's HLS demuxer, left to itself, fetches it unchecked.
        let refused = try Run.command(TestEnvironment.chorusExecutable.path, ["play", "--output", "wav:\(out.path)", url],
                                      timeout: 60, environment: ["CHORUS_CA_FILE": first.authority.certificate.path])
        #expect(refused.status == 1, "\(refused.standardError)")
        #expect(refused.standardError.contains(url), "\(refused.standardError)")
        #expect(refused.standardError.contains("fetching \(sentTo) failed"), "\(refused.standardError)")

        // Both authorities given: it plays, sample for sample as FFmpeg decodes the files.
        let bundle = try CertificateAuthority.bundle([first.authority, other.authority])
        let trusted = try Run.command(TestEnvironment.chorusExecutable.path, ["play", "--output", "wav:\(out.path)", url],
                                      timeout: 60, environment: ["CHORUS_CA_FILE": bundle.path])
        #expect(trusted.status == 0, "\(trusted.standardError)")
        let rendered = try PCM(wavFile: out)
        let reference = try PCM.ffmpegDecode(tone.folder.appendingPathComponent("index.m3u8"), channels: 2)
        #expect(rendered.frameCount == reference.frameCount, "\(rendered.frameCount) frames of \(reference.frameCount)")
        #expect(rendered.maximumDifference(from: reference) <= 1e-6)
    }

    @Test("an HLS item whose later segments come from a server no authority given vouches for plays up to them, then fails, naming the fetch and the certificate")
    func anUntrustedSegmentMidPlayFailsTheItem() throws {
        let tone = try TestMedia.hls(seconds: 4)
        #expect(tone.segments.count >= 3, "segments: \(tone.segments)")
        let folder = try Self.segmentFolder(of: tone, named: "hls-untrusted-later")
        let first = try HTTPSServer(serving: folder)
        let other = try HTTPSServer(serving: folder)
        // The first segment at the trusted server, the rest at the other.
        let trustedSegment = try #require(tone.segments.first)
        let untrusted = tone.segments.dropFirst()
        try Self.writePlaylist(of: tone, into: folder) { lines in
            lines = lines.map { untrusted.contains($0) ? other.url($0) : $0 }
        }
        let url = first.url("index.m3u8")
        let out = TestMedia.folder.appendingPathComponent("cli-https-hls-untrusted-later.wav")
        try? FileManager.default.removeItem(at: out)

        let refused = try Run.command(TestEnvironment.chorusExecutable.path, ["play", "--output", "wav:\(out.path)", url],
                                      timeout: 60, environment: ["CHORUS_CA_FILE": first.authority.certificate.path])
        #expect(refused.status == 1, "\(refused.standardError)")
        #expect(refused.standardError.contains(url), "\(refused.standardError)")
        #expect(refused.standardError.contains("fetching \(other.url(untrusted.first ?? "")) failed: the server's certificate is not trusted"),
                "\(refused.standardError)")
        // What the trusted segment holds was heard, sample for sample, and nothing after it.
        let rendered = try PCM(wavFile: out)
        let reference = try PCM.ffmpegDecode(tone.folder.appendingPathComponent(trustedSegment), channels: 2)
        #expect(rendered.frameCount <= reference.frameCount + 2_048, "\(rendered.frameCount) frames, the first segment \(reference.frameCount)")
        #expect(rendered.frameCount >= reference.frameCount / 2, "\(rendered.frameCount) frames, the first segment \(reference.frameCount)")
    }

    @Test func badArgumentsAreRefused() throws {
        #expect(try chorus(["play"]).status != 0)
        #expect(try chorus(["play", "--output", "speaker", "x.wav"]).status != 0)
        #expect(try chorus(["play", "--volume", "3", "x.wav"]).status != 0)
    }

    @Test(.enabled(if: TestEnvironment.hasPulse))
    func playsThroughALSAIntoPulseAudio() throws {
        // Record the null sink's monitor while playing a 660 Hz tone through ALSA's default
        // device; the recording must carry that tone.
        let source = try TestMedia.tone(.wav, seconds: 1.5, rate: 48_000, channels: 1)
        let recorder = try MonitorRecording(file: TestMedia.folder.appendingPathComponent("cli-recorded.raw"))
        usleep(300_000)
        let result = try chorus(["play", "--output", "alsa:default", "--quiet", source.path])
        usleep(300_000)
        let samples = try recorder.stop()
        #expect(result.status == 0, "\(result.standardError)")
        let loud = samples.filter { abs($0) > 0.05 }
        // At least a second of the 1.5 s tone arrived (the sink mixes to s16, so not bit-exact).
        #expect(loud.count > 30_000)
        // Its pitch over the first second of the loud part.
        guard let first = MonitorRecording.firstLoud(in: samples) else { return }
        guard let frequency = MonitorRecording.medianFrequency(of: samples[first..<min(samples.count, first + 48_000)],
                                                               sampleRate: 48_000) else {
            Issue.record("no zero crossings")
            return
        }
        #expect(abs(frequency - 440) < 10)
    }
}

/// `chorus play` with pictures.
@Suite(.ownThread) struct PlayVideoCommandTests {
    func chorus(_ arguments: [String], environment: [String: String]? = nil) throws -> Run.Result {
        try Run.command(TestEnvironment.chorusExecutable.path, arguments, timeout: 60, environment: environment)
    }

    /// The environment of a machine with no display.
    static let noDisplay = ["DISPLAY": "", "WAYLAND_DISPLAY": ""]

    @Test("a window asked for with no display is an error that names the reason")
    func windowWithoutDisplayFails() throws {
        let video = try TestMedia.identityVideo(seconds: 1, withSound: true)
        let result = try chorus(["play", "--output", "null", "--quiet", "--video", "window", video.path], environment: Self.noDisplay)
        #expect(result.status == 1)
        #expect(result.standardError.contains("--video window: no display"), "\(result.standardError)")
    }

    @Test("with no display, a video plays its sound, saying once why there is no picture")
    func noDisplayPlaysTheSound() throws {
        let video = try TestMedia.identityVideo(seconds: 1, withSound: false)
        let result = try chorus(["play", "--output", "null", "--quiet", video.path], environment: Self.noDisplay)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.seconds >= 0.95)
        #expect(result.standardError.components(separatedBy: "playing the sound only").count == 2, "\(result.standardError)")
    }

    @Test("window options are checked before anything plays")
    func badWindowOptionsAreRefused() throws {
        let video = try TestMedia.identityVideo(seconds: 0.5)
        #expect(try chorus(["play", "--geometry", "big", video.path]).status != 0)
        #expect(try chorus(["play", "--crop", "10:ten", video.path]).status != 0)
        #expect(try chorus(["play", "--video", "none", "--fullscreen", video.path]).status != 0)
        #expect(try chorus(["play", "--video", "sometimes", video.path]).status != 0)
    }
}
