import Foundation
import Testing
import MediaClock
import ChorusTestSupport
@testable import MediaPipeline

/// ALSA's `default` device, which `make test` points at a private PulseAudio server's null
/// sink through ALSA's pulse plugin.
@Suite(.serialized) struct ALSAOutputTests {
    @Test(.enabled(if: TestEnvironment.hasPulse))
    func throughPulseAudioTheServersOwnFiguresTimeTheStream() throws {
        let output = ALSAOutput(device: "default")
        try output.open(preferred: AudioFormat(sampleRate: 48_000, channels: 2))
        defer { output.close() }
        let period = output.format.duration(ofFrames: Int64(output.periodFrames))
        let silence = [Float](repeating: 0, count: output.periodFrames * output.format.channels)
        var reports: [(time: HostTime, byServer: Bool)] = []
        let end = HostTime.now() + .seconds(2)
        while HostTime.now() < end {
            guard output.waitUntilWritable(timeout: .milliseconds(100)) >= output.periodFrames else { continue }
            reports.append((output.presentationTimestamp().presentation(frameNanoseconds: 1e9 / Double(output.format.sampleRate)), output.isTimedByServer))
            let written = silence.withUnsafeBufferPointer { buffer in
                buffer.baseAddress.map { output.write($0, frames: output.periodFrames) } ?? 0
            }
            #expect(written == output.periodFrames)
        }
        // The stream's timing moved from the plugin's interpolation to the server's figures.
        #expect(output.timingSourceChanges >= 1)
        let lastSecond = reports.suffix(reports.count / 2)
        #expect(lastSecond.count > 50)
        let notByServer = lastSecond.filter { !$0.byServer }.count
        #expect(notByServer == 0, "\(notByServer) reports not from the server")
        // Each period's report follows the last by one period, as the stream plays on.
        var worst = Duration.zero
        for (a, b) in zip(lastSecond, lastSecond.dropFirst()) {
            let step = b.time - a.time
            worst = max(worst, step > period ? step - period : period - step)
        }
        #expect(worst < .milliseconds(1), "worst step error \(worst)")
    }
}
