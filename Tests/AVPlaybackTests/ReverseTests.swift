import Foundation
import Testing
import ChorusTestSupport
@testable import AVPlayback

/// Negative rates: the sound decoded backwards in chunks and heard reversed, with the
/// player's time running down to the item's start (or its reverse end time).
@Suite(.ownThread) struct ReverseTests {
    /// Renders `source` into a file from `start` at `rate` (negative), to the reverse end.
    func renderBackwards(_ source: URL, name: String, from start: CMTime, rate: Float,
                         configure: (AVPlayerItem) -> Void = { _ in }) async throws -> (pcm: PCM, rate: Float, time: CMTime) {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("chorus-reverse-\(getpid())-\(name).wav")
        defer { try? FileManager.default.removeItem(at: out) }
        let item = AVPlayerItem(url: source)
        configure(item)
        let player = AVPlayer(playerItem: item, output: .wav(path: out.path))
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
        #expect(await waitUntil(20) { item.status == .readyToPlay })
        let sought = Collected<Bool>()
        player.seek(to: start, toleranceBefore: .zero, toleranceAfter: .zero) { sought.append($0) }
        #expect(await waitUntil(20) { sought.count == 1 })
        #expect(item.canPlayReverse)
        player.rate = rate
        let finished = await waitUntil(60) { ended.value > 0 || item.status == .failed }
        // Where it stands once the end has been handled (the pause comes with it).
        _ = await waitUntil(5) { player.rate == 0 }
        let (rate, time) = (player.rate, player.currentTime())
        player.close()
        guard finished else { throw RenderFailure(reason: "timed out") }
        return (try PCM(wavFile: out), rate, time)
    }

    @Test("at -1 the item's sound before the playhead is heard backwards, sample for sample",
          arguments: [TestMedia.Kind.wav, .flac, .mp3, .aac, .opus, .vorbis])
    func minusOnePlaysTheSoundReversed(kind: TestMedia.Kind) async throws {
        let source = try TestMedia.tone(kind, seconds: 2, rate: 48_000, channels: 2)
        let start = 61_729  // 1.286 s, on no packet's boundary
        let rendered = try await renderBackwards(source, name: "minus-one-\(kind.name)", from: CMTime(value: Int64(start), timescale: 48_000), rate: -1) { item in
            item.audioTimePitchAlgorithm = .varispeed
        }
        let reference = try PCM.ffmpegDecode(source, channels: 2)
        var reversed: [Float] = []
        reversed.reserveCapacity(start * 2)
        for frame in stride(from: start - 1, through: 0, by: -1) {
            reversed.append(reference.samples[frame * 2])
            reversed.append(reference.samples[frame * 2 + 1])
        }
        let expected = PCM(sampleRate: 48_000, channels: 2, samples: reversed)
        #expect(rendered.pcm.frameCount == start, "\(rendered.pcm.frameCount) frames of \(start)")
        if kind == .wav || kind == .flac {
            #expect(rendered.pcm.maximumDifference(from: expected) == 0)
        } else {
            // Each chunk is decoded after a seek with the codec's pre-roll, as a forward seek
            // is: a lossy codec converges on the reference within a few milliseconds of the
            // pre-roll, well before the chunk's own samples.
            #expect(rendered.pcm.maximumDifference(from: expected) < 0.02, "\(rendered.pcm.maximumDifference(from: expected))")
        }
        // Played back to the start: it stands there, paused.
        #expect(rendered.rate == 0)
        #expect(rendered.time == .zero)
    }

    @Test("at -2 the same sound lasts half as long, its pitch kept")
    func minusTwoTakesHalfTheTime() async throws {
        let source = try TestMedia.tone(.wav, seconds: 2, rate: 44_100, channels: 2)
        let rendered = try await renderBackwards(source, name: "minus-two", from: CMTime(value: 3, timescale: 2), rate: -2)
        #expect(rendered.pcm.frameCount == 33_075)
        let middle = (rendered.pcm.frameCount / 5)..<(rendered.pcm.frameCount * 4 / 5)
        #expect(abs(PitchTests.frequency(of: rendered.pcm, channel: 0, frames: middle) - 440) < 4)
    }

    @Test("the reverse end time ends it there, with the end notification")
    func theReverseEndTimeEndsIt() async throws {
        let source = try TestMedia.tone(.flac, seconds: 2, rate: 48_000, channels: 1)
        let rendered = try await renderBackwards(source, name: "reverse-end", from: CMTime(value: 3, timescale: 2), rate: -1) { item in
            item.reversePlaybackEndTime = CMTime(value: 1, timescale: 2)
        }
        // From 1.5 s down to 0.5 s: one second.
        #expect(rendered.pcm.frameCount == 48_000)
        #expect(rendered.time == CMTime(value: 24_000, timescale: 48_000))
        #expect(rendered.rate == 0)
    }

    /// Only forward play waits for a seek at the item's end (the guide's "further invocations
    /// of play have no effect"); a rewind button pressed there plays the item backwards from
    /// its end, as on Apple's players.
    @Test("at the item's end a negative rate plays it backwards from the end, while play still waits for a seek")
    func aNegativeRateAtTheEndPlaysBackFromIt() async throws {
        let source = try TestMedia.tone(.wav, seconds: 1, rate: 48_000, channels: 2)
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("chorus-reverse-\(getpid())-from-end.wav")
        defer { try? FileManager.default.removeItem(at: out) }
        let item = AVPlayerItem(url: source)
        let player = AVPlayer(playerItem: item, output: .wav(path: out.path))
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
        player.play()
        #expect(await waitUntil(20) { ended.value == 1 })
        #expect(await waitUntil(5) { player.rate == 0 })
        player.play()
        #expect(player.rate == 0)
        player.rate = -1
        #expect(player.rate == -1)
        #expect(await waitUntil(20) { ended.value == 2 })
        #expect(await waitUntil(5) { player.rate == 0 })
        #expect(player.currentTime() == .zero)
        player.close()
        // The item forwards, then the same frames backwards.
        let pcm = try PCM(wavFile: out)
        #expect(pcm.frameCount == 96_000, "\(pcm.frameCount) frames")
        guard pcm.frameCount == 96_000 else { return }
        let mirrored = (0..<48_000).allSatisfy { (frame: Int) -> Bool in
            pcm.samples[frame * 2] == pcm.samples[(95_999 - frame) * 2]
        }
        #expect(mirrored)
    }

    @Test("playing backwards, a periodic observer is called at its interval as the time runs down, and a boundary is traversed")
    func observersPlayingBackwards() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 3, rate: 48_000, channels: 2))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        let sought = Collected<Bool>()
        player.seek(to: CMTime(value: 2, timescale: 1), toleranceBefore: .zero, toleranceAfter: .zero) { sought.append($0) }
        #expect(await waitUntil(10) { sought.count == 1 })
        let times = Collected<CMTime>()
        let crossed = Collected<CMTime>()
        let periodic = player.addPeriodicTimeObserver(forInterval: CMTime(value: 1, timescale: 4), queue: .global()) { times.append($0) }
        let boundary = player.addBoundaryTimeObserver(forTimes: [NSValue(time: CMTime(value: 3, timescale: 2))], queue: .global()) {
            crossed.append(player.currentTime())
        }
        defer {
            player.removeTimeObserver(periodic)
            player.removeTimeObserver(boundary)
        }
        player.rate = -1
        #expect(await waitUntil(10) { player.currentTime().seconds < 0.9 })
        player.pause()
        // Past the start's call: 1.75, 1.5, 1.25 and 1 s, each told at the monitor tick after
        // the time fell to it (10 ms later; more on a loaded machine, never an interval).
        let multiples = [1.75, 1.5, 1.25, 1.0]
        #expect(await waitUntil(5) {
            let seen = times.all.map(\.seconds)
            return multiples.allSatisfy { multiple in seen.contains { $0 <= multiple && $0 > multiple - 0.25 } }
        }, "\(times.all.map(\.seconds))")
        #expect(await waitUntil(5) { crossed.count == 1 }, "the boundary at 1.5 s told at \(crossed.all)")
    }

    @Test("turning round while playing: the time runs down from where it stood, and back up again")
    func turningRoundWhilePlaying() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 4, rate: 48_000, channels: 2))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        player.play()
        #expect(await waitUntil(10) { player.currentTime().seconds > 1.5 })
        player.rate = -1
        let turned = player.currentTime().seconds
        #expect(player.rate == -1)
        #expect(await waitUntil(10) { player.currentTime().seconds < turned - 0.5 })
        player.rate = 1
        let low = player.currentTime().seconds
        #expect(await waitUntil(10) { player.currentTime().seconds > low + 0.5 })
    }

    @Test("a video with sound can play backwards; the fastest reverse rate is -8")
    func aVideoWithSoundCanPlayBackwards() async throws {
        let item = AVPlayerItem(url: try TestMedia.video(seconds: 1))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil(20) { item.status == .readyToPlay })
        #expect(item.canPlayReverse && item.canPlaySlowReverse && item.canPlayFastReverse)
        player.rate = -8.5
        #expect(player.rate == -8)
    }

    /// Its times jump at the splice, where a backwards read in chunks cannot follow them
    /// (Apple's players play no HLS backwards without a playlist of keyframes). Known once
    /// the item has read its playlist in the background; a presentation read in one piece
    /// still plays backwards.
    @Test("an on-demand HLS presentation spliced from several cannot play backwards, and one that is not can",
          arguments: [true, false])
    func splicedHLSDoesNotPlayBackwards(spliced: Bool) async throws {
        let playlist = spliced ? try TestMedia.splicedHLS(seconds: 4, offsets: (0, 50)).folder.appendingPathComponent("index.m3u8")
                               : try TestMedia.hls(seconds: 4).folder.appendingPathComponent("index.m3u8")
        let item = AVPlayerItem(url: playlist)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil(20) { item.status == .readyToPlay && item.programDatesRead })
        #expect(item.canPlayReverse == !spliced && item.canPlaySlowReverse == !spliced && item.canPlayFastReverse == !spliced)
        #expect(await player.seek(to: CMTime(value: 3, timescale: 1), toleranceBefore: .zero, toleranceAfter: .zero))
        player.rate = -1
        #expect(player.rate == (spliced ? 0 : -1))
    }

    @Test("a negative rate is refused for an item without sound, and the player keeps its rate")
    func reverseIsRefusedWithoutSound() async throws {
        let item = AVPlayerItem(url: try TestMedia.identityVideo(seconds: 1))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil(20) { item.status == .readyToPlay })
        #expect(!item.canPlayReverse)
        let reasons = Collected<AVPlayer.RateDidChangeReason?>()
        let token = NotificationCenter.default.addObserver(forName: AVPlayer.rateDidChangeNotification, object: player, queue: nil) { note in
            reasons.append(note.userInfo?[AVPlayer.rateDidChangeReasonKey] as? AVPlayer.RateDidChangeReason)
        }
        defer { NotificationCenter.default.removeObserver(token) }
        player.rate = -1
        #expect(player.rate == 0)
        // Reported as Apple's players report a rate they cannot play.
        #expect(await waitUntil(5) { reasons.all == [.setRateFailed] })
    }
}
