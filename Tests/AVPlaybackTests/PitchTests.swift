import Foundation
import Testing
import ChorusTestSupport
@testable import AVPlayback
import MediaPipeline

/// Rates that keep their pitch (`audioTimePitchAlgorithm`), rendered into files and
/// measured: how long the item lasts, what frequency it sounds at, and when each part of it
/// is heard.
@Suite(.ownThread) struct PitchTests {
    /// The frequency of one channel over `frames`, from its zero crossings (a pure tone's).
    static func frequency(of pcm: PCM, channel: Int, frames: Range<Int>) -> Double {
        var crossings = 0
        var previous = pcm.samples[frames.lowerBound * pcm.channels + channel]
        for frame in frames.dropFirst() {
            let sample = pcm.samples[frame * pcm.channels + channel]
            if (previous < 0) != (sample < 0) { crossings += 1 }
            previous = sample
        }
        return Double(crossings) / 2 / (Double(frames.count) / Double(pcm.sampleRate))
    }

    /// Where a burst's energy is centred in the left channel between `range`'s bounds
    /// (frames): a phase vocoder spreads a burst's edges over its analysis window, about
    /// evenly both ways, so the centre of its energy keeps its place where its first loud
    /// sample does not.
    static func centre(of pcm: PCM, in range: Range<Int>) -> Double {
        var weighted = 0.0, total = 0.0
        for frame in range where frame >= 0 && frame < pcm.frameCount {
            let sample = Double(pcm.samples[frame * pcm.channels])
            weighted += sample * sample * Double(frame)
            total += sample * sample
        }
        return total > 0 ? weighted / total : -1
    }

    @Test("a kept pitch: the item lasts 1/rate as long and its tones keep their frequencies",
          arguments: [AVAudioTimePitchAlgorithm.timeDomain, .spectral], [0.5, 1.5, 2.0])
    func theTonesKeepTheirPitch(algorithm: AVAudioTimePitchAlgorithm, rate: Double) async throws {
        let source = try TestMedia.tone(.wav, seconds: 2, rate: 44_100, channels: 2)
        let rendered = try await renderToPCM(source, name: "pitch-\(algorithm.rawValue)-\(rate)") { player, item in
            item.audioTimePitchAlgorithm = algorithm
            player.defaultRate = Float(rate)
        }
        // Exactly as many frames as the item's at that speed: the stage's delay and lead-in
        // are not in the file.
        #expect(rendered.frameCount == Int((88_200 / rate).rounded()), "\(rendered.frameCount) frames")
        // Away from the ends, where the stage fades in and out.
        let middle = (rendered.frameCount / 5)..<(rendered.frameCount * 4 / 5)
        let left = Self.frequency(of: rendered, channel: 0, frames: middle)
        let right = Self.frequency(of: rendered, channel: 1, frames: middle)
        #expect(abs(left - 440) < 4, "left at \(left) Hz")
        #expect(abs(right - 660) < 6, "right at \(right) Hz")
    }

    @Test("varispeed: the pitch follows the rate")
    func varispeedMovesThePitch() async throws {
        let source = try TestMedia.tone(.wav, seconds: 2, rate: 44_100, channels: 2)
        let rendered = try await renderToPCM(source, name: "pitch-varispeed") { player, item in
            item.audioTimePitchAlgorithm = .varispeed
            player.defaultRate = 2
        }
        let middle = (rendered.frameCount / 5)..<(rendered.frameCount * 4 / 5)
        #expect(abs(Self.frequency(of: rendered, channel: 0, frames: middle) - 880) < 8)
    }

    @Test("a kept pitch keeps time: every part of the item is heard where the rate puts it",
          arguments: [AVAudioTimePitchAlgorithm.timeDomain, .spectral], [0.5, 2.0])
    func partsAreHeardOnTime(algorithm: AVAudioTimePitchAlgorithm, rate: Double) async throws {
        // A 100 ms burst every half second: at rate r, the burst at t is heard at t / r.
        let source = try TestMedia.bursts(seconds: 3, period: 0.5, burst: 0.1)
        let rendered = try await renderToPCM(source, name: "pitch-time-\(algorithm.rawValue)-\(rate)") { player, item in
            item.audioTimePitchAlgorithm = algorithm
            player.defaultRate = Float(rate)
        }
        // Each burst's centre, at (start + half its length) / rate. The time-domain engine
        // moves a grain by up to its search radius (15 ms), a phase vocoder a burst's energy
        // within its analysis window (2,048 frames, 46 ms here), so within 2,048 frames: the
        // stage's own delay (65 ms, 2,866 frames here, or more), left uncompensated or
        // counted twice, would be outside it.
        for burst in 0..<6 {
            let due = (Double(burst) * 0.5 + 0.05) / rate * 44_100
            let span = Int(0.2 / rate * 44_100)
            let heard = Self.centre(of: rendered, in: (Int(due) - span)..<(Int(due) + span))
            #expect(abs(heard - due) <= 2_048, "burst \(burst) centred at frame \(heard), due at \(due)")
        }
    }

    /// Through ALSA into PulseAudio, recorded from the null sink's monitor outside the
    /// player: a start scheduled at a host time at 2×, without a master clock, sounds the
    /// item's 440 Hz tone at 440 Hz (varispeed would put it at 880).
    @Test("a scheduled start at 2× on a real device keeps the pitch", .enabled(if: TestEnvironment.hasPulse))
    func aScheduledStartOnARealDeviceKeepsThePitch() async throws {
        let source = try TestMedia.tone(.wav, seconds: 8, rate: 48_000, channels: 1)
        let recording = TestMedia.folder.appendingPathComponent("pitch-scheduled-\(getpid()).raw")
        defer { try? FileManager.default.removeItem(at: recording) }
        let recorder = try MonitorRecording(file: recording)
        let item = AVPlayerItem(url: source)
        let player = AVPlayer(playerItem: item, output: .alsa(device: "default"))
        defer { player.close() }
        player.automaticallyWaitsToMinimizeStalling = false
        #expect(await waitUntil { item.status == .readyToPlay })
        player.setRate(2, time: .zero, atHostTime: (HostTime.now() + .milliseconds(500)).cmTime)
        // Three seconds of the device's time at 2×: on a loaded machine the starved render
        // thread leaves gaps, and the longer recording still holds enough sound to measure.
        #expect(await waitUntil(30) { player.currentTime().seconds > 6.5 })
        player.pause()
        let samples = try recorder.stop()
        // From half a second past the first sound (clear of the stage's fade-in) to the end
        // of the recording: a loaded machine's starved render thread leaves gaps of silence
        // in it, which the median of the half periods passes over. At least a quarter of a
        // second of it must be heard.
        let first = try #require(MonitorRecording.firstLoud(in: samples))
        try #require(first + 24_000 < samples.count)
        let heard = samples[(first + 24_000)...]
        try #require(heard.count { abs($0) > 0.05 } >= 12_000, "\(heard.count { abs($0) > 0.05 }) loud samples after the first half second")
        let frequency = try #require(MonitorRecording.medianFrequency(of: heard, sampleRate: 48_000))
        #expect(abs(frequency - 440) < 10, "heard at \(frequency) Hz")
    }

    @Test("changing the algorithm while playing applies at once, and a speed change keeps the pitch")
    func theAlgorithmCanChangeWhilePlaying() async throws {
        // Long enough not to end at 2× while a slow machine (a sanitizer's) works through it.
        let source = try TestMedia.tone(.wav, seconds: 10, rate: 44_100, channels: 2)
        let item = AVPlayerItem(url: source)
        item.audioTimePitchAlgorithm = .varispeed
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        player.rate = 2
        #expect(await waitUntil(10) { player.currentTime().seconds > 0.2 })
        item.audioTimePitchAlgorithm = .timeDomain
        // The control the render thread reads now asks for the pitch to be kept.
        #expect(await waitUntil(5) { player.engine.currentControl?.pitch == .timeDomain })
        player.rate = 1.5
        #expect(player.engine.currentControl?.pitch == .timeDomain)
        #expect(player.engine.currentControl?.rate == 1.5)
    }
}
