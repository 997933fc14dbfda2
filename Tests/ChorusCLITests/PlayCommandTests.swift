import Foundation
import Testing
import ChorusTestSupport

/// `chorus play`, run as a user runs it.
@Suite struct PlayCommandTests {
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

    /// A local HTTPS server (Python's, with a certificate for 127.0.0.1 signed by an
    /// authority made for the test) serving `folder`; the authority's certificate file.
    final class HTTPSServer {
        let process = Process()
        let port: Int
        let authority: URL

        init(serving folder: URL) throws {
            let keys = TestMedia.folder.appendingPathComponent("tls-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: true)
            func path(_ name: String) -> String { keys.appendingPathComponent(name).path }
            try Data("subjectAltName=IP:127.0.0.1\n".utf8).write(to: keys.appendingPathComponent("san.cnf"))
            for arguments in [
                ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", path("ca.key"), "-out", path("ca.pem"),
                 "-days", "2", "-subj", "/CN=Chorus test authority"],
                ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", path("server.key"), "-out", path("server.csr"),
                 "-subj", "/CN=127.0.0.1"],
                ["x509", "-req", "-in", path("server.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
                 "-CAcreateserial", "-out", path("server.pem"), "-days", "2", "-extfile", path("san.cnf")],
            ] {
                let made = try Run.command("openssl", arguments, timeout: 60)
                guard made.status == 0 else { throw SetUpFailure(reason: "openssl: \(made.standardError)") }
            }
            authority = keys.appendingPathComponent("ca.pem")
            // It unblocks the signals the test process passes on blocked, so that `terminate`
            // ends it, and ends itself after `serverLifetime` seconds whatever happens.
            let script = """
                import http.server, ssl, sys, os, signal
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGALRM})
                signal.alarm(int(sys.argv[4]))
                os.chdir(sys.argv[1])
                server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                context.load_cert_chain(sys.argv[2], sys.argv[3])
                server.socket = context.wrap_socket(server.socket, server_side=True)
                print(server.server_address[1], flush=True)
                server.serve_forever()
                """
            let output = Pipe()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", "-c", script, folder.path, path("server.pem"), path("server.key"), String(Self.serverLifetime)]
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            var line = Data()
            while !line.contains(UInt8(ascii: "\n")) {
                let byte = output.fileHandleForReading.readData(ofLength: 1)
                if byte.isEmpty { break }
                line += byte
            }
            guard let port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
                process.terminate()
                throw SetUpFailure(reason: "the HTTPS server did not start")
            }
            self.port = port
        }

        deinit { process.terminate() }

        /// How long a server lives at most, in seconds: far beyond a test's two short plays.
        static let serverLifetime = 120
    }

    struct SetUpFailure: Error { let reason: String }

    @Test("over HTTPS an item plays from a server whose certificate checks out, and one that does not is refused with a clear error")
    func httpsChecksTheServersCertificate() throws {
        let source = try TestMedia.tone(.wav, seconds: 0.5, rate: 48_000, channels: 2)
        let server = try HTTPSServer(serving: TestMedia.folder)
        let url = "https://127.0.0.1:\(server.port)/\(source.lastPathComponent)"
        let out = TestMedia.folder.appendingPathComponent("cli-https.wav")
        // Trusted through the authority given.
        let trusted = try Run.command(TestEnvironment.chorusExecutable.path, ["play", "--output", "wav:\(out.path)", url],
                                      timeout: 60, environment: ["CHORUS_CA_FILE": server.authority.path])
        #expect(trusted.status == 0, "\(trusted.standardError)")
        let rendered = try PCM(wavFile: out)
        #expect(rendered.maximumDifference(from: try PCM.ffmpegDecode(source, channels: 2)) <= 1e-6)
        // Not trusted by the system: refused, naming the URL.
        let refused = try Run.command(TestEnvironment.chorusExecutable.path, ["play", "--output", "wav:\(out.path)", url],
                                      timeout: 60, environment: ["CHORUS_CA_FILE": ""])
        #expect(refused.status == 1)
        #expect(refused.standardError.contains(url), "\(refused.standardError)")
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
@Suite struct PlayVideoCommandTests {
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
