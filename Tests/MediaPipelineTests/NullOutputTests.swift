import Testing
import MediaClock
@testable import MediaPipeline

@Suite struct NullOutputTests {
    let format = AudioFormat(sampleRate: 48_000, channels: 2)

    @Test func presentsFramesAtItsOwnRate() throws {
        let clock = SimulatedHostClock(start: HostTime(nanoseconds: 1_000_000_000))
        let output = NullOutput(driftPPM: 0, hostClock: clock)
        try output.open(preferred: format)
        var silence = [Float](repeating: 0, count: output.periodFrames * 2)
        let start = clock.now()
        #expect(output.nextFramePresentationTime() == start)
        _ = output.write(&silence, frames: output.periodFrames)
        // The next frame follows one period (10 ms) after the first.
        #expect(output.nextFramePresentationTime() == start + .milliseconds(10))
        clock.advance(by: .milliseconds(5))
        #expect(output.nextFramePresentationTime() == start + .milliseconds(10))
    }

    @Test func aFastDeviceConsumesFramesSooner() throws {
        let clock = SimulatedHostClock(start: HostTime(nanoseconds: 0))
        let output = NullOutput(driftPPM: 100, hostClock: clock)
        try output.open(preferred: format)
        var silence = [Float](repeating: 0, count: output.periodFrames * 2)
        let start = clock.now()
        for _ in 0..<4 { _ = output.write(&silence, frames: output.periodFrames) }
        // 1920 frames at 48 kHz * (1 + 100e-6): 40 ms / 1.0001.
        let expected = 40_000_000.0 / 1.0001
        let got = Double((output.nextFramePresentationTime() - start).components.attoseconds) / 1e9
        #expect(abs(got - expected) < 1)
    }

    @Test func anEmptyDeviceUnderrunsAndRestarts() throws {
        let clock = SimulatedHostClock(start: HostTime(nanoseconds: 0))
        let output = NullOutput(driftPPM: 0, hostClock: clock)
        try output.open(preferred: format)
        var silence = [Float](repeating: 0, count: output.periodFrames * 2)
        _ = output.write(&silence, frames: output.periodFrames)
        clock.advance(by: .milliseconds(50))
        #expect(output.nextFramePresentationTime() == clock.now())
        #expect(output.underrunCount == 1)
    }
}
