import Foundation
import Testing
import ChorusTestSupport
@testable import AVPlayback
import MediaPipeline

/// An item's audio mix, heard: the rendered sound is the decoded sound times the volume the
/// mix gives its track at each frame's time.
@Suite(.ownThread) struct AudioMixTests {
    /// The volume of `parameters` at frame `frame` of a 48 kHz item.
    private func volume(_ parameters: AVAudioMixInputParameters, atFrame frame: Int) -> Float {
        parameters.volume(at: CMTime(value: Int64(frame), timescale: 48_000))
    }

    /// Renders `source` through a player into a WAV file, forwards from the start (or, with
    /// `backwardsFrom`, backwards from that frame), with `mix` made for its sound track.
    private func render(_ source: URL, name: String, backwardsFrom: Int? = nil,
                        mix: (AVAssetTrack) -> AVAudioMix?) async throws -> PCM {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("chorus-mix-\(getpid())-\(name).wav")
        defer { try? FileManager.default.removeItem(at: out) }
        let item = AVPlayerItem(url: source)
        let track = try #require(item.asset.tracks(withMediaType: .audio).first)
        item.audioMix = mix(track)
        let player = AVPlayer(playerItem: item, output: .wav(path: out.path))
        defer { player.close() }
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
        #expect(await waitUntil(20) { item.status == .readyToPlay })
        if let backwardsFrom {
            item.audioTimePitchAlgorithm = .varispeed
            let sought = Collected<Bool>()
            player.seek(to: CMTime(value: Int64(backwardsFrom), timescale: 48_000), toleranceBefore: .zero, toleranceAfter: .zero) { sought.append($0) }
            #expect(await waitUntil(20) { sought.count == 1 })
            player.rate = -1
        } else {
            player.play()
        }
        #expect(await waitUntil(60) { ended.value > 0 || item.status == .failed })
        _ = await waitUntil(5) { player.rate == 0 }
        player.close()
        return try PCM(wavFile: out)
    }

    @Test("a fade in, a step and a fade out of the mix are heard frame by frame")
    func theMixIsHeard() async throws {
        let source = try TestMedia.tone(.wav, seconds: 3, rate: 48_000, channels: 2)
        let parameters = AVMutableAudioMixInputParameters()
        let rendered = try await render(source, name: "forward") { track in
            parameters.trackID = track.trackID
            parameters.setVolumeRamp(fromStartVolume: 0, toEndVolume: 1, timeRange: CMTimeRange(start: .zero, duration: CMTime(value: 1, timescale: 1)))
            parameters.setVolume(0.5, at: CMTime(value: 3, timescale: 2))
            parameters.setVolumeRamp(fromStartVolume: 0.5, toEndVolume: 0.25,
                                     timeRange: CMTimeRange(start: CMTime(value: 2, timescale: 1), duration: CMTime(value: 1, timescale: 2)))
            let mix = AVMutableAudioMix()
            mix.inputParameters = [parameters]
            return mix
        }
        let reference = try PCM.ffmpegDecode(source, channels: 2)
        #expect(rendered.frameCount == reference.frameCount, "\(rendered.frameCount) frames rendered of \(reference.frameCount)")
        let frames = min(rendered.frameCount, reference.frameCount)
        var worst: (frame: Int, error: Float) = (0, 0)
        for frame in 0..<frames {
            let expected = reference.samples[frame * 2] * volume(parameters, atFrame: frame)
            let error = abs(rendered.samples[frame * 2] - expected)
            if error > worst.error { worst = (frame, error) }
        }
        #expect(worst.error < 1e-5, "frame \(worst.frame) off by \(worst.error)")
        // And the mix did something: a quarter of a second in, a quarter of the level.
        let quarter = 12_000
        #expect(abs(volume(parameters, atFrame: quarter) - 0.25) < 1e-3)
    }

    @Test("backwards, each frame is heard at the volume of its own place in the item")
    func theMixFollowsTheItemsTimeBackwards() async throws {
        let source = try TestMedia.tone(.wav, seconds: 2, rate: 48_000, channels: 2)
        let parameters = AVMutableAudioMixInputParameters()
        let start = 72_000
        let rendered = try await render(source, name: "backward", backwardsFrom: start) { track in
            parameters.trackID = track.trackID
            parameters.setVolumeRamp(fromStartVolume: 1, toEndVolume: 0, timeRange: CMTimeRange(start: .zero, duration: CMTime(value: 3, timescale: 2)))
            let mix = AVMutableAudioMix()
            mix.inputParameters = [parameters]
            return mix
        }
        let reference = try PCM.ffmpegDecode(source, channels: 2)
        #expect(rendered.frameCount == start, "\(rendered.frameCount) frames rendered")
        var worst: (frame: Int, error: Float) = (0, 0)
        for index in 0..<min(rendered.frameCount, start) {
            let frame = start - 1 - index
            let expected = reference.samples[frame * 2] * volume(parameters, atFrame: frame)
            let error = abs(rendered.samples[index * 2] - expected)
            if error > worst.error { worst = (index, error) }
        }
        #expect(worst.error < 1e-5, "frame \(worst.frame) off by \(worst.error)")
    }

    @Test("a mix for no track, or for another track, leaves the sound as it is")
    func aMixForNoTrackChangesNothing() async throws {
        let source = try TestMedia.tone(.wav, seconds: 1, rate: 48_000, channels: 2)
        let rendered = try await render(source, name: "other-track") { track in
            let none = AVMutableAudioMixInputParameters()
            none.setVolume(0, at: .zero)
            let other = AVMutableAudioMixInputParameters()
            other.trackID = track.trackID + 100
            other.setVolume(0, at: .zero)
            let mix = AVMutableAudioMix()
            mix.inputParameters = [none, other]
            return mix
        }
        let reference = try PCM.ffmpegDecode(source, channels: 2)
        #expect(rendered.samples == reference.samples)
    }

    @Test("the item keeps a copy: a mutable mix changed after it is set changes nothing until set again")
    func theItemKeepsACopy() throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1))
        let track = try #require(item.asset.tracks(withMediaType: .audio).first)
        let parameters = AVMutableAudioMixInputParameters(track: track)
        parameters.setVolume(0.5, at: .zero)
        let mix = AVMutableAudioMix()
        mix.inputParameters = [parameters]
        item.audioMix = mix
        parameters.setVolume(0, at: .zero)
        #expect(item.gain.curve(forTrack: track.trackID)?.gain(atSeconds: 0.5) == 0.5)
        item.audioMix = mix
        #expect(item.gain.curve(forTrack: track.trackID)?.gain(atSeconds: 0.5) == 0)
        item.audioMix = nil
        #expect(item.gain.curve(forTrack: track.trackID) == nil)
    }

    @Test("the gain curve gives the volume the mix's parameters report, at every time, an endless ramp included")
    func theCurveAgreesWithTheParameters() throws {
        let parameters = AVMutableAudioMixInputParameters()
        parameters.trackID = 1
        parameters.setVolume(0.8, at: CMTime(value: 1, timescale: 4))
        parameters.setVolumeRamp(fromStartVolume: 0.2, toEndVolume: 0.9, timeRange: CMTimeRange(start: CMTime(value: 1, timescale: 1), duration: CMTime(value: 2, timescale: 1)))
        parameters.setVolumeRamp(fromStartVolume: 0, toEndVolume: 1, timeRange: CMTimeRange(start: CMTime(value: 5, timescale: 2), duration: CMTime(value: 3, timescale: 1)))
        parameters.setVolume(0.3, at: CMTime(value: 7, timescale: 1))
        parameters.setVolumeRamp(fromStartVolume: 0.1, toEndVolume: 0.6,
                                 timeRange: CMTimeRange(start: CMTime(value: 8, timescale: 1), duration: .positiveInfinity))
        let mix = AVMutableAudioMix()
        mix.inputParameters = [parameters]
        let curve = try #require(AVPlayerItem.gainCurves(of: mix)[1])
        for step in 0..<480 {
            let seconds = Double(step) / 40
            let expected = parameters.volume(at: CMTime(seconds: seconds, preferredTimescale: 48_000))
            #expect(abs(curve.gain(atSeconds: seconds) - expected) < 1e-5, "at \(seconds) s")
        }
    }
}
