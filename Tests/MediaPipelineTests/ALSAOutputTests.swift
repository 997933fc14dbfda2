import Foundation
import Testing
import Synchronization
import MediaClock
import ChorusTestSupport
@testable import MediaPipeline

/// ALSA's `default` device, which `make test` points at a private PulseAudio server's null
/// sink through ALSA's pulse plugin.
@Suite(.serialized, .ownThread) struct ALSAOutputTests {
    @Test(.enabled(if: TestEnvironment.hasPulse))
    func throughPulseAudioTheServersOwnFiguresTimeTheStream() throws {
        let output = ALSAOutput(device: "default")
        try output.open(preferred: AudioFormat(sampleRate: 48_000, channels: 2))
        defer { output.close() }
        // The server's ordinary threads serve the stream: the render thread is not put above them.
        #expect(!output.wantsRealtimePriority)
        let period = output.format.duration(ofFrames: Int64(output.periodFrames))
        let silence = [Float](repeating: 0, count: output.periodFrames * output.format.channels)
        // Consecutive periods both timed by the server's figures, each the step between their
        // reports. A report is the server's only while its newest quick answer is fresh
        // (`ALSAOutput.probePointLifetime`); a machine loaded enough to slow every answer
        // leaves some periods to the plugin's interpolation, so the test plays until it has
        // enough of the server's, not for a fixed time.
        var steps: [Duration] = []
        var previous: HostTime?
        let steadyFrom = HostTime.now() + Self.fillingTime
        let limit = steadyFrom + Self.serverTimingPatience
        while steps.count < Self.serverTimedSteps && HostTime.now() < limit {
            guard output.waitUntilWritable(timeout: .milliseconds(100)) >= output.periodFrames else {
                previous = nil
                continue
            }
            let time = output.presentationTimestamp().presentation(frameNanoseconds: 1e9 / Double(output.format.sampleRate))
            if output.isTimedByServer {
                if let previous, HostTime.now() > steadyFrom { steps.append(time - previous) }
                previous = time
            } else {
                previous = nil
            }
            let written = silence.withUnsafeBufferPointer { buffer in
                buffer.baseAddress.map { output.write($0, frames: output.periodFrames) } ?? 0
            }
            #expect(written == output.periodFrames)
        }
        // The stream's timing moved from the plugin's interpolation to the server's figures.
        #expect(output.timingSourceChanges >= 1)
        #expect(steps.count >= Self.serverTimedSteps, "only \(steps.count) periods timed by the server")
        // Each period's report follows the last by one period, as the stream plays on; where
        // it does not, the stream ran dry (this thread, not a real-time one, was held off
        // past the device's buffer on a loaded machine) and the output counted it as an
        // underrun: a jump no count accounts for would put a follower off unawares.
        let errors = steps.map { $0 > period ? $0 - period : period - $0 }
        let jumps = errors.filter { $0 >= .milliseconds(1) }
        #expect(jumps.count <= output.underrunCount,
                "\(jumps.count) steps off by 1 ms or more (worst \(errors.max() ?? .zero)), \(output.underrunCount) underruns counted")
    }

    /// How long the steps are not counted: the buffer fills, the stream starts and the
    /// server's first answers come, and then the stream plays on in steady state.
    static let fillingTime: Duration = .seconds(1)
    /// Steps between consecutive server-timed periods to gather: a second of 10 ms periods.
    static let serverTimedSteps = 100
    /// How long to play for them at most: on an idle machine they take a second; a machine
    /// busy with a build slows some answers past `RoundTripGate`'s limit for a while.
    static let serverTimingPatience: Duration = .seconds(15)

    /// A PulseAudio daemon of the test's own (`scripts/pulse.sh`), which the test stops and
    /// continues as a server that stops answering, without touching the one the other tests
    /// share. ALSA reaches it through a configuration of the test's own.
    struct PrivatePulse {
        let directory: String
        let pid: pid_t
        var server: String { "unix:\(directory)/native" }
        /// A device `stalling` playing to it through ALSA's pulse plugin.
        var configuration: String { "pcm.stalling { type pulse server \"\(server)\" }" }
        static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../scripts/pulse.sh").standardized.path

        static func start() throws -> PrivatePulse {
            let directory = TestMedia.folder.appendingPathComponent("pulse-\(UUID().uuidString.prefix(8))").path
            let status = try runScript("start", directory)
            guard status == 0, let text = try? String(contentsOfFile: "\(directory)/pid", encoding: .utf8),
                  let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                throw MediaError.outputFailure(device: directory, reason: "no private PulseAudio (see \(directory)/pulse.log)")
            }
            return PrivatePulse(directory: directory, pid: pid)
        }

        /// Runs the script with its output discarded and waits for it by its process id:
        /// the daemon it starts keeps whatever it was given open (a pipe read to its end would
        /// never end), and Foundation's `Process` was seen never to notice the script's exit.
        static func runScript(_ command: String, _ directory: String) throws -> Int32 {
            let line = "'\(script)' \(command) '\(directory)' >/dev/null 2>&1 </dev/null"
            var pid: pid_t = 0
            let words: [String] = ["/bin/bash", "-c", line]
            let arguments: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
            defer { arguments.forEach { free($0) } }
            let spawned = posix_spawn(&pid, "/bin/bash", nil, nil, arguments, environ)
            guard spawned == 0 else { throw MediaError.outputFailure(device: directory, reason: "cannot run \(script)") }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            return status
        }

        /// The server stops answering anything, as one starved or wedged does.
        func pause() { kill(pid, SIGSTOP) }
        func resume() { kill(pid, SIGCONT) }
        func stop() {
            resume()
            _ = try? Self.runScript("stop", directory)
        }

        /// Streams this process has on the server.
        func streamsOfThisProcess() -> Int {
            let listed = try? Run.command("pactl", ["--server", server, "list", "sink-inputs"], timeout: 10)
            return listed?.output.components(separatedBy: "application.process.id = \"\(getpid())\"").count.advanced(by: -1) ?? -1
        }
    }

    /// Plays silence as the render thread does (wait for space, read the timing, write a
    /// period), timing every call to the output.
    final class SilencePlayer {
        let output: ALSAOutput
        let silence: [Float]
        private(set) var longestCall = Duration.zero
        private(set) var framesWritten = 0

        init(_ output: ALSAOutput) {
            self.output = output
            silence = [Float](repeating: 0, count: output.periodFrames * output.format.channels)
        }

        /// One pass.
        func cycle() {
            var start = HostTime.now()
            let writable = output.waitUntilWritable(timeout: AudioRenderer.deviceWaitLimit)
            longestCall = max(longestCall, HostTime.now() - start)
            guard writable >= output.periodFrames else { return }
            start = .now()
            _ = output.presentationTimestamp()
            framesWritten += silence.withUnsafeBufferPointer { output.write($0.baseAddress!, frames: output.periodFrames) }
            longestCall = max(longestCall, HostTime.now() - start)
        }

        /// Passes until `condition` holds or `limit` passes; whether it held.
        func play(for limit: Duration, until condition: () -> Bool = { false }) -> Bool {
            let end = HostTime.now() + limit
            while HostTime.now() < end {
                if condition() { return true }
                cycle()
            }
            return condition()
        }
    }

    /// Far beyond the render thread's own waits (50 ms for the device, 10 ms while a stream
    /// is replaced), far below a server that does not answer: a call that took this long
    /// waited on the server.
    static let longestAllowedCall: Duration = .milliseconds(300)
    /// How long a stalled stream takes at most to be given up: its grace from opening, the
    /// stall limit, and a loaded machine's margin.
    static let restartPatience: Duration = StallWatch.grace + StallWatch.limit + .seconds(10)

    @Test(.enabled(if: TestEnvironment.hasPulse))
    func aStreamTheServerStopsServingIsReplacedWithoutBlockingTheRenderThread() throws {
        let pulse = try PrivatePulse.start()
        defer { pulse.stop() }
        // Every retired stream's close hangs until the test ends, as one waiting on a server
        // that never answers would; the new stream must play all the same.
        let closesStarted = Atomic<Int>(0)
        let heldCloses = DispatchSemaphore(value: 0)
        let output = ALSAOutput(device: "stalling", configuration: pulse.configuration, pulseServer: pulse.server) { stream in
            closesStarted.add(1, ordering: .relaxed)
            heldCloses.wait()
            stream.close()
        }
        try output.open(preferred: AudioFormat(sampleRate: 48_000, channels: 2))
        defer {
            output.close()
            for _ in 0..<4 { heldCloses.signal() }
        }
        let player = SilencePlayer(output)
        _ = player.play(for: .milliseconds(500))
        #expect(player.framesWritten > 0, "the stream played before the server stopped")

        pulse.pause()
        // Should the render thread wait on the server after all, this lets it go, late, so the
        // test fails on the time the call took instead of hanging.
        DispatchQueue.global().asyncAfter(deadline: .now() + 30) { pulse.resume() }
        let replaced = player.play(for: Self.restartPatience) { output.streamRestartCount == 1 }
        #expect(replaced, "the stalled stream was given up")
        #expect(output.underrunCount == 0, "a restart is not counted as an underrun")
        // The retired stream's close and the fresh stream's open both wait on the stopped
        // server now; the render thread must not.
        _ = player.play(for: .milliseconds(500))
        #expect(player.longestCall < Self.longestAllowedCall, "a call to the output took \(player.longestCall)")

        pulse.resume()
        let before = player.framesWritten
        let periods = 20
        let playing = player.play(for: .seconds(10)) { player.framesWritten >= before + periods * output.periodFrames }
        #expect(playing, "the fresh stream took \(player.framesWritten - before) frames")
        #expect(closesStarted.load(ordering: .relaxed) == 1, "the retired stream's close is still held")
        #expect(output.streamRestartCount == 1)
        #expect(player.longestCall < Self.longestAllowedCall, "a call to the output took \(player.longestCall)")
    }

    @Test(.enabled(if: TestEnvironment.hasPulse))
    func closingWhileAStreamIsReplacedNeitherHangsNorLeavesAStream() throws {
        let pulse = try PrivatePulse.start()
        defer { pulse.stop() }
        let output = ALSAOutput(device: "stalling", configuration: pulse.configuration, pulseServer: pulse.server)
        try output.open(preferred: AudioFormat(sampleRate: 48_000, channels: 2))
        let player = SilencePlayer(output)
        _ = player.play(for: .milliseconds(500))
        #expect(pulse.streamsOfThisProcess() == 1)

        pulse.pause()
        DispatchQueue.global().asyncAfter(deadline: .now() + 30) { pulse.resume() }
        #expect(player.play(for: Self.restartPatience) { output.streamRestartCount == 1 })
        // The fresh stream's open now waits on the stopped server.
        let before = HostTime.now()
        output.close()
        #expect(HostTime.now() - before < .seconds(1), "closing waited for the server")

        pulse.resume()
        // The stalled stream, and the fresh one that opened after the close, are both closed.
        let deadline = HostTime.now() + .seconds(20)
        while pulse.streamsOfThisProcess() != 0 && HostTime.now() < deadline { usleep(50_000) }
        #expect(pulse.streamsOfThisProcess() == 0)
    }
}
