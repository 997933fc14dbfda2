import Foundation
import Testing
import ChorusTestSupport
@testable import AVPlayback
import MediaClock
import MediaPipeline

/// A queue's items are heard joined: no gap, no overlap, the encoders' delay and padding
/// trimmed.
@Suite(.ownThread) struct GaplessTests {
    /// Three consecutive parts of one tone, of lengths that end mid-block and mid-packet.
    static let parts: [(offset: Double, seconds: Double)] = [(0, 0.7), (0.7, 1.3), (2.0, 0.9)]

    /// Renders `urls` through a queue player into a WAV file, to the last item's end.
    private func renderQueue(_ urls: [URL], name: String) async throws -> (pcm: PCM, currents: [AVPlayerItem?], ends: [Int]) {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("chorus-gapless-\(getpid())-\(name).wav")
        defer { try? FileManager.default.removeItem(at: out) }
        let items = urls.map { AVPlayerItem(url: $0) }
        let ends = items.map { NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: $0) }
        let player = AVQueuePlayer(items: items, output: .wav(path: out.path))
        let currents = Collected<AVPlayerItem?>()
        let observation = player.observe(\.currentItem, options: [.new]) { _, change in currents.append(change.newValue ?? nil) }
        player.play()
        let finished = await waitUntil(60) { ends.last!.value > 0 || items.contains { $0.status == .failed } }
        observation.invalidate()
        player.close()
        guard finished else { throw RenderFailure(reason: "timed out") }
        return (try PCM(wavFile: out), currents.all, ends.map(\.value))
    }

    @Test("a queue renders as its items' decoded sound joined, sample for sample, for every codec",
          arguments: TestMedia.Kind.all)
    func joinsEveryCodecWithoutGap(kind: TestMedia.Kind) async throws {
        let urls = try Self.parts.map { try TestMedia.slice(kind, offset: $0.offset, seconds: $0.seconds) }
        let rendered = try await renderQueue(urls, name: kind.name)
        // Every part decoded on its own, cut to the length it was made with: FFmpeg keeps an
        // MP4's AAC padding, and the part is only as long as its source. (Vorbis's encoder
        // ends a part a few samples short of its source: those are not there to be heard.)
        var joined: [Float] = []
        for (url, part) in zip(urls, Self.parts) {
            let decoded = try PCM.ffmpegDecode(url, sampleRate: rendered.pcm.sampleRate, channels: 2)
            let frames = Int((part.seconds * Double(rendered.pcm.sampleRate)).rounded())
            joined += decoded.samples.prefix(min(frames, decoded.frameCount) * 2)
        }
        let reference = PCM(sampleRate: rendered.pcm.sampleRate, channels: 2, samples: joined)
        #expect(rendered.pcm.frameCount == reference.frameCount, "rendered \(rendered.pcm.frameCount) frames of \(reference.frameCount)")
        #expect(rendered.pcm.maximumDifference(from: reference) <= 1e-6)
        #expect(rendered.ends == [1, 1, 1])
    }

    @Test("the current item changes at each join, to nil after the last; items() shrinks with it")
    func currentItemFollowsTheJoins() async throws {
        let urls = try Self.parts.map { try TestMedia.slice(.flac, offset: $0.offset, seconds: $0.seconds, rate: 48_000) }
        let items = urls.map { AVPlayerItem(url: $0) }
        let player = AVQueuePlayer(items: items, output: .null(driftPPM: 0))
        defer { player.close() }
        let currents = Collected<AVPlayerItem?>()
        let times = Collected<(AVPlayerItem?, Double)>()
        let observation = player.observe(\.currentItem, options: [.new]) { player, change in
            currents.append(change.newValue ?? nil)
            times.append((change.newValue ?? nil, player.currentTime().seconds))
        }
        defer { observation.invalidate() }
        player.play()
        #expect(await waitUntil(20) { player.currentItem === items[1] })
        #expect(player.items().count == 2)
        // Time starts again at the join.
        #expect(player.currentTime().seconds < 0.5)
        #expect(await waitUntil(20) { player.currentItem == nil })
        // Observers hear of the change on the player's queue, just after it is made.
        #expect(await waitUntil(5) { currents.count == 3 })
        let order = currents.all
        #expect(order.count == 3)
        #expect(order.count == 3 && order[0] === items[1] && order[1] === items[2] && order[2] == nil)
        for (item, time) in times.all where item != nil { #expect(time < 0.1, "time \(time) s at the change to a new item") }
    }

    @Test("an item removed after its sound was decoded is not heard: the one after it follows")
    func removingTheNextItemAfterItsSoundBegan() async throws {
        let a = AVPlayerItem(url: try TestMedia.slice(.wav, offset: 0, seconds: 2.5, rate: 48_000))
        let b = AVPlayerItem(url: try TestMedia.slice(.wav, offset: 2.5, seconds: 1, rate: 48_000))
        let c = AVPlayerItem(url: try TestMedia.slice(.wav, offset: 3.5, seconds: 1, rate: 48_000))
        let player = AVQueuePlayer(items: [a, b, c], output: .null(driftPPM: 0))
        defer { player.close() }
        let currents = Collected<AVPlayerItem?>()
        let observation = player.observe(\.currentItem, options: [.new]) { _, change in currents.append(change.newValue ?? nil) }
        defer { observation.invalidate() }
        player.play()
        // The ring holds two seconds: a's end is decoded and b's sound follows it well before a
        // ends.
        #expect(await waitUntil(20) { player.currentTime().seconds > 1.2 })
        #expect(player.currentItem === a)
        player.remove(b)
        #expect(await waitUntil(20) { player.currentItem === c })
        #expect(!currents.all.contains { $0 === b })
        #expect(b.queue == nil)
    }

    @Test("a seek back in the current item after the next one's sound began plays both again, joined")
    func seekBackAfterTheHandover() async throws {
        let parts: [(offset: Double, seconds: Double)] = [(0, 0.6), (0.6, 0.8)]
        let urls = try parts.map { try TestMedia.slice(.wav, offset: $0.offset, seconds: $0.seconds, rate: 48_000) }
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("chorus-gapless-\(getpid())-seek.wav")
        defer { try? FileManager.default.removeItem(at: out) }
        let items = urls.map { AVPlayerItem(url: $0) }
        let lastEnd = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: items[1])
        let player = AVQueuePlayer(items: items, output: .wav(path: out.path))
        // Before playing: the first item is ready, and the second's sound follows it in the ring.
        #expect(await waitUntil(20) { items[0].status == .readyToPlay && items[1].status == .readyToPlay })
        usleep(200_000)
        await player.seek(to: CMTime(value: 3, timescale: 10))
        #expect(await waitUntil(20) { items[1].status == .readyToPlay })
        player.play()
        #expect(await waitUntil(60) { lastEnd.value > 0 })
        player.close()
        let rendered = try PCM(wavFile: out)
        // 0.3 s of the first, then all of the second: 1.1 s of the tone from 0.3 s in.
        #expect(rendered.frameCount == 52_800, "\(rendered.frameCount) frames")
        var worst: Float = 0
        for frame in 0..<rendered.frameCount {
            let t = 0.3 + Double(frame) / 48_000
            worst = max(worst, abs(rendered.samples[frame * 2] - Float(0.4 * sin(2 * Double.pi * 440 * t))))
        }
        #expect(worst < 2e-3, "worst \(worst)")
    }
}
