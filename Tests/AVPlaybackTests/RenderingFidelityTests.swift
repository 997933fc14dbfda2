import Foundation
import Testing
import ChorusTestSupport
@testable import AVPlayback

/// What the player renders is exactly what FFmpeg decodes: every codec, rate and layout.
@Suite(.ownThread) struct RenderingFidelityTests {
    @Test(arguments: TestMedia.Kind.all)
    func everyCodecRendersSampleForSample(kind: TestMedia.Kind) async throws {
        let source = try TestMedia.tone(kind, seconds: 1.5, rate: 44_100, channels: 2)
        let rendered = try await renderToPCM(source, name: "codec-\(kind.name)")
        let reference = try PCM.ffmpegDecode(source, channels: 2)
        // Exactly the source's length: the encoder's delay and padding are trimmed (FFmpeg's
        // own decode keeps an MP4's AAC padding, so it is compared over the source's length).
        #expect(rendered.frameCount == Int(1.5 * Double(rendered.sampleRate)))
        #expect(rendered.maximumDifference(from: reference) <= 1e-6)
    }

    @Test(arguments: [(8_000, 1), (22_050, 1), (32_000, 2), (48_000, 2), (96_000, 2), (48_000, 6)])
    func anyRateAndLayoutRendersAtItsOwnFormat(rate: Int, channels: Int) async throws {
        let source = try TestMedia.tone(.flac, seconds: 1, rate: rate, channels: channels)
        let rendered = try await renderToPCM(source, name: "layout-\(rate)-\(channels)")
        #expect(rendered.sampleRate == rate)
        #expect(rendered.channels == channels)
        let reference = try PCM.ffmpegDecode(source, channels: channels)
        #expect(rendered.frameCount == reference.frameCount)
        #expect(rendered.maximumDifference(from: reference) <= 1e-6)
    }

    @Test func surroundAACKeepsItsChannels() async throws {
        let source = try TestMedia.tone(.aac, seconds: 1, rate: 48_000, channels: 6)
        let rendered = try await renderToPCM(source, name: "aac-51")
        let reference = try PCM.ffmpegDecode(source, channels: 6)
        #expect(rendered.channels == 6)
        #expect(rendered.frameCount == 48_000)
        #expect(rendered.maximumDifference(from: reference) <= 1e-6)
    }

    @Test func theSoundOfAVideoPlays() async throws {
        let source = try TestMedia.video(seconds: 1.5)
        let rendered = try await renderToPCM(source, name: "video")
        let reference = try PCM.ffmpegDecode(source, channels: 2)
        // The sound's own 1.5 s: its AAC padding, which FFmpeg's decode keeps, is trimmed.
        #expect(rendered.frameCount == 72_000)
        #expect(rendered.maximumDifference(from: reference) <= 1e-6)
    }

    @Test func volumeScalesEverySample() async throws {
        let source = try TestMedia.tone(.wav, seconds: 0.5)
        let rendered = try await renderToPCM(source, name: "volume") { player, _ in player.volume = 0.5 }
        let reference = try PCM.ffmpegDecode(source, channels: 2)
        let halved = PCM(sampleRate: reference.sampleRate, channels: 2, samples: reference.samples.map { $0 * 0.5 })
        #expect(rendered.maximumDifference(from: halved) <= 1e-6)
    }

    @Test(arguments: [0.5, 1.5, 2.0])
    func aRateReadsTheItemThatMuchFaster(rate: Double) async throws {
        // Left 440 Hz, right 660 Hz: at rate r, varispeed, the rendered frame n holds the item
        // at n·r, so the tones come out r times higher and the item lasts 1/r as long.
        let source = try TestMedia.tone(.wav, seconds: 1, rate: 44_100, channels: 2)
        let rendered = try await renderToPCM(source, name: "rate-\(rate)") { player, item in
            item.audioTimePitchAlgorithm = .varispeed
            player.defaultRate = Float(rate)
        }
        let reference = try PCM.ffmpegDecode(source, channels: 2)
        let expectedFrames = Double(reference.frameCount) / rate
        // A file output takes whole periods: the last one is padded with the filter's decay.
        #expect(abs(Double(rendered.frameCount) - expectedFrames) <= 0, "\(rendered.frameCount) frames of \(expectedFrames)")
        var worst: Float = 0
        // From where the filter's first taps have left the silence before the item.
        for frame in 64..<min(rendered.frameCount, Int(expectedFrames) - 64) {
            for channel in 0..<2 {
                let frequency = 220.0 * Double(channel + 2)
                let expected = Float(0.4 * sin(2 * Double.pi * frequency * Double(frame) * rate / 44_100))
                worst = max(worst, abs(rendered.samples[frame * 2 + channel] - expected))
            }
        }
        // 16-bit source: a few quantisation steps at most.
        #expect(worst < 2e-3, "worst \(worst)")
    }

    @Test func mutedRendersSilence() async throws {
        let source = try TestMedia.tone(.wav, seconds: 0.5)
        let rendered = try await renderToPCM(source, name: "muted") { player, _ in player.isMuted = true }
        #expect(rendered.frameCount > 0)
        #expect(rendered.firstFrame(above: 0) == nil)
    }
}
