import ChorusSimulation
import Testing
import ChorusTestSupport
import MediaClock
@testable import MediaPipeline

@Suite(.ownThread) struct NullOutputTests {
    let format = AudioFormat(sampleRate: 48_000, channels: 2)

    @Test func presentsFramesAtItsOwnRate() throws {
        let clock = SimulatedHostClock(start: HostTime(nanoseconds: 1_000_000_000))
        let output = NullOutput(driftPPM: 0, hostClock: clock)
        try output.open(preferred: format)
        var silence = [Float](repeating: 0, count: output.periodFrames * 2)
        let start = clock.now()
        #expect(output.presentationTimestamp() == PresentationTimestamp(host: start, isRunning: false))
        _ = output.write(&silence, frames: output.periodFrames)
        // The next frame follows one period (10 ms) after the first: a period is queued.
        #expect(output.presentationTimestamp() == PresentationTimestamp(host: start, queuedFrames: 480))
        clock.advance(by: .milliseconds(5))
        #expect(output.presentationTimestamp() == PresentationTimestamp(host: start + .milliseconds(5), queuedFrames: 240))
        #expect(output.presentationTimestamp().presentation(frameNanoseconds: 1e9 / 48_000) == start + .milliseconds(10))
    }

    @Test func aFastDeviceConsumesFramesSooner() throws {
        let clock = SimulatedHostClock(start: HostTime(nanoseconds: 0))
        let output = NullOutput(driftPPM: 100, hostClock: clock)
        try output.open(preferred: format)
        var silence = [Float](repeating: 0, count: output.periodFrames * 2)
        let start = clock.now()
        for _ in 0..<4 { _ = output.write(&silence, frames: output.periodFrames) }
        clock.advance(by: .milliseconds(10))
        // 1920 frames at 48 kHz * (1 + 100e-6): 40 ms / 1.0001 after the start, counted in
        // the device's frames, which last 1/1.0001 of their nominal 20.83 µs.
        let timestamp = output.presentationTimestamp()
        #expect(timestamp.host == start + .milliseconds(10))
        #expect(abs(timestamp.queuedFrames - (1920 - 480 * 1.0001)) < 1e-6, "\(timestamp.queuedFrames)")
        let expected = 40_000_000.0 / 1.0001
        let got = Double((timestamp.presentation(frameNanoseconds: 1e9 / 48_000 / 1.0001) - start).nanosecondsClamped)
        #expect(abs(got - expected) < 1)
    }

    @Test func anEmptyDeviceUnderrunsAndRestarts() throws {
        let clock = SimulatedHostClock(start: HostTime(nanoseconds: 0))
        let output = NullOutput(driftPPM: 0, hostClock: clock)
        try output.open(preferred: format)
        var silence = [Float](repeating: 0, count: output.periodFrames * 2)
        _ = output.write(&silence, frames: output.periodFrames)
        clock.advance(by: .milliseconds(50))
        #expect(output.presentationTimestamp() == PresentationTimestamp(host: clock.now(), isRunning: false))
        #expect(output.underrunCount == 1)
    }
}
