import Foundation
import Testing
import ChorusTestSupport
@testable import AVPlayback

@Suite(.ownThread) struct SeekingTests {
    @Test(arguments: [TestMedia.Kind.wav, .flac, .mp3, .aac, .opus, .vorbis])
    func zeroToleranceLandsOnTheExactSample(kind: TestMedia.Kind) async throws {
        let source = try TestMedia.tone(kind, seconds: 2, rate: 48_000, channels: 2)
        let target = CMTime(value: 61_729, timescale: 48_000)  // 1.286 s, not on any frame boundary
        let done = Collected<Bool>()
        let rendered = try await renderToPCM(source, name: "seek-\(kind.name)") { player, item in
            player.seek(to: target, toleranceBefore: .zero, toleranceAfter: .zero) { done.append($0) }
            #expect(await waitUntil { done.count == 1 })
        }
        #expect(done.all == [true])
        let reference = try PCM.ffmpegDecode(source, channels: 2)
        // To the source's 2 s: FFmpeg's decode keeps an MP4's AAC padding, which is trimmed.
        let tail = PCM(sampleRate: 48_000, channels: 2, samples: Array(reference.samples[(61_729 * 2)..<(96_000 * 2)]))
        #expect(rendered.frameCount == tail.frameCount)
        if kind == .wav || kind == .flac {
            // Lossless: identical to the sample.
            #expect(rendered.maximumDifference(from: tail) == 0)
        } else {
            // Lossy codecs restarted at another packet converge on the reference within a
            // few milliseconds but not to the bit; what must hold is the position: the best
            // alignment with the reference is at offset 0, no sample early or late.
            #expect(bestOffset(rendered, tail, search: 48) == 0)
        }
    }

    @Test("a seek back to the start of an MP4's AAC lands on its priming packet: the first frames are right")
    func seekingToTheStartOfAnMP4KeepsItsFirstFrames() async throws {
        let source = try TestMedia.tone(.aac, seconds: 2, rate: 48_000, channels: 2)
        let done = Collected<Bool>()
        let rendered = try await renderToPCM(source, name: "seek-start-aac") { player, item in
            #expect(await waitUntil(20) { item.status == .readyToPlay })
            player.seek(to: CMTime(value: 1, timescale: 1), toleranceBefore: .zero, toleranceAfter: .zero) { done.append($0) }
            #expect(await waitUntil { done.count == 1 })
            player.seek(to: .zero, toleranceBefore: .zero, toleranceAfter: .zero) { done.append($0) }
            #expect(await waitUntil { done.count == 2 })
        }
        let reference = try PCM.ffmpegDecode(source, channels: 2)
        // The first 1,024 frames need the priming packet before time 0: without it they were
        // up to 0.46 off. A restarted AAC decoder converges on the reference to a few
        // thousandths.
        var worst: Float = 0
        for index in 0..<(2_400 * 2) { worst = max(worst, abs(rendered.samples[index] - reference.samples[index])) }
        #expect(worst < 0.01, "worst \(worst)")
    }

    /// The shift of `a` against `b` (within ±`search` frames) with the smallest difference
    /// over 0.2 s taken 0.1 s in.
    func bestOffset(_ a: PCM, _ b: PCM, search: Int) -> Int {
        let channels = a.channels, start = 4_800, length = 9_600
        var best = (offset: Int.max, error: Float.infinity)
        for offset in -search...search {
            var error: Float = 0
            for frame in start..<(start + length) {
                for channel in 0..<channels {
                    error += abs(a.samples[(frame + offset) * channels + channel] - b.samples[frame * channels + channel])
                }
            }
            if error < best.error { best = (offset, error) }
        }
        return best.offset
    }

    @Test func aSupersededSeekCompletesWithFalse() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 3))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        // Both seeks are made while the item is still opening, so the first is in flight
        // when the second starts whatever the machine's load: on a ready item a seek can
        // complete between two lines of a test (a loaded run once saw it).
        let first = Collected<Bool>(), second = Collected<Bool>()
        player.seek(to: CMTime(value: 1, timescale: 1)) { first.append($0) }
        player.seek(to: CMTime(value: 2, timescale: 1)) { second.append($0) }
        #expect(await waitUntil { first.count == 1 && second.count == 1 })
        #expect(first.all == [false])
        #expect(second.all == [true])
        #expect(item.status == .readyToPlay)
        #expect(player.currentTime() == CMTime(value: 2, timescale: 1))
    }

    @Test func seeksOutsideTheItemAreClamped() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil { item.status == .readyToPlay })
        let done = Collected<Bool>()
        player.seek(to: CMTime(value: -5, timescale: 1)) { done.append($0) }
        #expect(await waitUntil { done.count == 1 })
        #expect(player.currentTime() == .zero)
        player.seek(to: CMTime(value: 50, timescale: 1)) { done.append($0) }
        #expect(await waitUntil { done.count == 2 })
        #expect(player.currentTime() == item.duration)
    }

    @Test("a seek past the end while playing stands at the end, with the end notification, and stays there")
    func aSeekPastTheEndWhilePlayingStandsAtTheEnd() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1, rate: 48_000))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
        player.play()
        #expect(await waitUntil(10) { player.currentTime().seconds > 0.2 })
        let done = Collected<Bool>()
        player.seek(to: CMTime(value: 5, timescale: 1), toleranceBefore: .zero, toleranceAfter: .zero) { done.append($0) }
        #expect(await waitUntil(10) { ended.value == 1 })
        #expect(await waitUntil(5) { player.rate == 0 })
        #expect(done.all == [true])
        #expect(player.currentTime() == item.duration, "at \(player.currentTime().seconds) s")
        // Play does nothing there, and the time stays at the end.
        player.play()
        usleep(100_000)
        #expect(player.currentTime() == item.duration, "at \(player.currentTime().seconds) s")
    }

    @Test func cancelledSeeksCompleteWithFalse() async throws {
        // The seek is made while the item is still loading, so it is certainly pending when
        // cancelled: on a ready item a local file's seek can complete before the next line
        // runs, and the test would race the reader.
        let url = try TestMedia.tone(.wav, seconds: 1)
        let item = AVPlayerItem(url: url)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let done = Collected<Bool>()
        player.seek(to: CMTime(value: 1, timescale: 2)) { done.append($0) }
        player.cancelPendingSeeks()
        #expect(await waitUntil { done.count == 1 })
        #expect(done.all == [false])
        // Once loaded, a later seek still completes normally.
        #expect(await waitUntil { item.status == .readyToPlay })
        let later = Collected<Bool>()
        player.seek(to: CMTime(value: 1, timescale: 4)) { later.append($0) }
        #expect(await waitUntil { later.count == 1 })
        #expect(later.all == [true])
    }

    @Test func aSeekPostsTimeJumped() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let jumps = NotificationCounter(AVPlayerItem.timeJumpedNotification, object: item)
        #expect(await waitUntil { item.status == .readyToPlay })
        await player.seek(to: CMTime(value: 1, timescale: 4))
        #expect(await waitUntil { jumps.value == 1 })
    }
}
