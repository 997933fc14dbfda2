import Testing
import ChorusTestSupport
@testable import MediaPipeline

@Suite(.ownThread) struct AudioFormatTests {
    let format = AudioFormat(sampleRate: 48_000, channels: 2)

    @Test func convertsFramesAndTimeExactly() {
        #expect(format.frames(in: .seconds(1)) == 48_000)
        #expect(format.frames(in: .milliseconds(10)) == 480)
        #expect(format.nanoseconds(ofFrames: 48_000) == 1_000_000_000)
        #expect(format.nanoseconds(ofFrames: 1) == 20_833)
        #expect(format.frames(inNanoseconds: 20_833) == 1)
        #expect(format.frames(inNanoseconds: -1_000_000_000) == -48_000)
    }

    @Test func roundsToTheNearestFrame() {
        // 1.5 frames at 48 kHz is 31 250 ns: half rounds away from zero.
        #expect(format.frames(inNanoseconds: 31_250) == 2)
        #expect(format.frames(inNanoseconds: 31_249) == 1)
        #expect(format.frames(inNanoseconds: -31_250) == -2)
    }

    @Test func survivesDaysOfFrames() {
        let week: Int64 = 7 * 24 * 3600 * 48_000
        #expect(format.nanoseconds(ofFrames: week) == 7 * 24 * 3600 * 1_000_000_000)
        #expect(format.frames(inNanoseconds: 7 * 24 * 3600 * 1_000_000_000) == week)
    }
}
