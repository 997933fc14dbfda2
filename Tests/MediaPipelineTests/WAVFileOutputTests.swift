import Foundation
import Testing
import ChorusTestSupport
@testable import MediaPipeline

@Suite(.ownThread) struct WAVFileOutputTests {
    @Test(arguments: [1, 2, 6])
    func writesAFileOthersCanRead(channels: Int) throws {
        let url = TestMedia.folder.appendingPathComponent("wav-output-\(channels).wav")
        let output = WAVFileOutput(path: url.path)
        try output.open(preferred: AudioFormat(sampleRate: 44_100, channels: channels))
        let frames = 1000
        let samples = (0..<(frames * channels)).map { Float($0 % 200) / 400 }
        samples.withUnsafeBufferPointer { _ = output.write($0.baseAddress!, frames: frames) }
        output.close()
        let pcm = try PCM(wavFile: url)
        #expect(pcm.sampleRate == 44_100)
        #expect(pcm.channels == channels)
        #expect(pcm.samples == samples)
        // FFmpeg reads it as the same signal.
        let decoded = try PCM.ffmpegDecode(url, channels: channels)
        #expect(decoded.samples == samples)
    }

    @Test func reportsAnUnwritablePath() {
        let output = WAVFileOutput(path: "/nonexistent-dir/x.wav")
        #expect(throws: MediaError.self) { try output.open(preferred: .fallback) }
    }
}
