import Foundation
import MutexAnnotations
import Testing
import ChorusTestSupport
@testable import AVPlayback
import MediaClock
import MediaPipeline
import Synchronization

/// Items of one queue, told apart by identity.
private func same(_ a: [AVPlayerItem], _ b: [AVPlayerItem]) -> Bool {
    a.count == b.count && zip(a, b).allSatisfy { $0 === $1 }
}

/// Counts the end notifications of the items given.
private final class EndCounter: @unchecked Sendable {
    private let counts = Mutex<[ObjectIdentifier: Int]>([:])
    private var tokens: [any NSObjectProtocol] = []

    init(_ items: [AVPlayerItem]) {
        for item in items {
            tokens.append(NotificationCenter.default.addObserver(
                forName: AVPlayerItem.didPlayToEndTimeNotification, object: item, queue: nil) { [weak self] _ in
                    self?.counted(item)
                })
        }
    }

    deinit { for token in tokens { NotificationCenter.default.removeObserver(token) } }

    private func counted(_ item: AVPlayerItem) { counts.withLockAnnotated { $0[ObjectIdentifier(item), default: 0] += 1 } }

    func count(_ item: AVPlayerItem) -> Int { counts.withLockAnnotated { $0[ObjectIdentifier(item)] ?? 0 } }
}

@Suite(.ownThread) struct QueuePlayerTests {
    private func tone(_ seconds: Double) throws -> AVPlayerItem {
        AVPlayerItem(url: try TestMedia.tone(.wav, seconds: seconds, rate: 48_000))
    }

    @Test("a queue of items: the first is current, the order is kept, an item given twice is left out")
    func initialQueue() throws {
        let a = try tone(1), b = try tone(1), c = try tone(1)
        let player = AVQueuePlayer(items: [a, b, a, c], output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(player.currentItem === a)
        #expect(same(player.items(), [a, b, c]))
        #expect(player.actionAtItemEnd == .advance)
    }

    @Test("an observer of the current item, told as the queue advances, may wait on a thread that reads the queue")
    func anObserverMayWaitOnAThreadReadingTheQueue() throws {
        let a = try tone(1), b = try tone(1)
        let player = AVQueuePlayer(items: [a, b], output: .null(driftPPM: 0))
        defer { player.close() }
        let answered = Collected<Bool>()
        // Observed as an AVPlayer's, the key path the player announces on the caller's thread.
        let base: AVPlayer = player
        let watch = base.observe(\.currentItem, options: [.new]) { _, _ in
            // As a handler that synchronises with a main thread reading the queue would.
            let done = DispatchSemaphore(value: 0)
            Thread { _ = player.items(); done.signal() }.start()
            answered.append(done.wait(timeout: .now() + 5) == .success)
        }
        defer { watch.invalidate() }
        player.advanceToNextItem()
        #expect(player.currentItem === b)
        #expect(answered.all == [true], "the queue was locked while its observer ran")
    }

    @Test("canInsert refuses an item already queued, one in another player, and a position not in the queue")
    func insertionRules() throws {
        let a = try tone(1), b = try tone(1), stranger = try tone(1), fresh = try tone(1)
        let player = AVQueuePlayer(items: [a, b], output: .null(driftPPM: 0))
        defer { player.close() }
        let other = AVPlayer(playerItem: stranger, output: .null(driftPPM: 0))
        defer { other.close() }
        #expect(!player.canInsert(a, after: nil))
        #expect(!player.canInsert(b, after: a))
        #expect(!player.canInsert(stranger, after: nil))
        #expect(!player.canInsert(fresh, after: try tone(1)))
        #expect(player.canInsert(fresh, after: nil))
        #expect(player.canInsert(fresh, after: a))
        // Refused insertions change nothing.
        player.insert(stranger, after: nil)
        #expect(same(player.items(), [a, b]))
    }

    @Test("insert after the current item, after a waiting one and at the end; remove and removeAllItems")
    func insertAndRemove() throws {
        let a = try tone(1), b = try tone(1), c = try tone(1), d = try tone(1), e = try tone(1)
        let player = AVQueuePlayer(items: [a, b], output: .null(driftPPM: 0))
        defer { player.close() }
        player.insert(c, after: a)
        #expect(same(player.items(), [a, c, b]))
        player.insert(d, after: c)
        #expect(same(player.items(), [a, c, d, b]))
        player.insert(e, after: nil)
        #expect(same(player.items(), [a, c, d, b, e]))
        player.remove(d)
        #expect(same(player.items(), [a, c, b, e]))
        // A removed item may go into a queue again.
        #expect(player.canInsert(d, after: nil))
        // Removing the current item advances.
        player.remove(a)
        #expect(player.currentItem === c)
        #expect(same(player.items(), [c, b, e]))
        player.advanceToNextItem()
        #expect(same(player.items(), [b, e]))
        player.removeAllItems()
        #expect(player.items().isEmpty)
        #expect(player.currentItem == nil)
        // Into an empty queue an item becomes current.
        player.insert(a, after: nil)
        #expect(player.currentItem === a)
    }

    @Test("played, the queue advances at each end at the same rate, and waits with no item after the last")
    func playsInSequence() async throws {
        let a = try tone(0.4), b = try tone(0.6)
        let ends = EndCounter([a, b])
        let player = AVQueuePlayer(items: [a, b], output: .null(driftPPM: 0))
        defer { player.close() }
        player.play()
        #expect(await waitUntil(10) { player.currentItem === b && b.status == .readyToPlay })
        // The end is posted on the player's queue as the current item changes.
        #expect(await waitUntil(5) { ends.count(a) == 1 })
        #expect(player.rate == 1)
        #expect(await waitUntil(10) { player.timeControlStatus == .playing && player.currentTime().seconds > 0.1 })
        #expect(await waitUntil(10) { player.currentItem == nil })
        #expect(ends.count(b) == 1)
        #expect(player.items().isEmpty)
        // Still at rate 1, waiting for an item: one inserted now plays.
        #expect(player.timeControlStatus == .waitingToPlayAtSpecifiedRate)
        #expect(player.reasonForWaitingToPlay == .noItemToPlay)
        let c = try tone(0.4)
        player.insert(c, after: nil)
        #expect(await waitUntil(10) { player.currentItem === c && player.timeControlStatus == .playing })
    }

    /// Apple's periodic observers count on the current item's timeline, and are called when
    /// its time jumps: an advance is such a jump. Left counting on from where the item before
    /// ended (the next multiple after 0.5 s), the observer stayed silent for the next item's
    /// first half second.
    @Test("a periodic observer is called as the queue advances, and at its interval on the next item's timeline")
    func periodicObserverFollowsTheAdvance() async throws {
        let a = try tone(0.5), b = try tone(1.2)
        let player = AVQueuePlayer(items: [a, b], output: .null(driftPPM: 0))
        defer { player.close() }
        let times = Collected<CMTime>()
        let token = player.addPeriodicTimeObserver(forInterval: CMTime(value: 1, timescale: 10), queue: .global()) { times.append($0) }
        defer { player.removeTimeObserver(token) }
        player.play()
        #expect(await waitUntil(10) { player.currentItem === b && player.currentTime().seconds > 0.45 })
        // Where the time went back: the advance, told with the new item's time; then 0.1,
        // 0.2, 0.3 and 0.4 s of the new item, each at the monitor tick after it (a loaded
        // machine's late tick may pass one by), all before 0.5 s. Left counting from the
        // item before, it told nothing before the new item's 0.6 s.
        func afterTheAdvance() -> [Double] {
            let seen = times.all.map(\.seconds)
            guard let advance = seen.indices.dropFirst().last(where: { seen[$0] < seen[$0 - 1] }) else { return [] }
            return Array(seen[advance...])
        }
        #expect(await waitUntil(5) { afterTheAdvance().filter { $0 < 0.5 }.count >= 4 }, "times: \(times.all.map(\.seconds))")
        #expect((afterTheAdvance().first ?? 1) < 0.25, "the advance told at \(afterTheAdvance().first ?? -1) s")
    }

    /// Items without sound are timed on the host clock. The queue's next one starts where
    /// the one before ended on it, from its own start: it was once placed by the item
    /// before's anchor, as if it had started with that one, and skipped its first pictures.
    @Test("items without sound follow each other on the host clock, each from its start")
    func itemsWithoutSoundFollowOnTheHostClock() async throws {
        let a = AVPlayerItem(url: try TestMedia.identityVideo(seconds: 1, rate: 25, withSound: false))
        let b = AVPlayerItem(url: try TestMedia.identityVideo(seconds: 1.5, rate: 25, withSound: false))
        let player = AVQueuePlayer(items: [a, b], output: .null(driftPPM: 0))
        defer { player.close() }
        player.play()
        #expect(await waitUntil(10) { player.state.withLockAnnotated { $0.itemLoaded && $0.masterAnchor != nil } })
        let first = try #require(player.state.withLockAnnotated { $0.masterAnchor })
        #expect(await waitUntil(10) { player.currentItem === b && player.state.withLockAnnotated { $0.itemLoaded } })
        let second = try #require(player.state.withLockAnnotated { $0.masterAnchor })
        // Its start is the first item's end on the host clock, to the nanosecond.
        #expect(second.itemTime == .zero)
        let end = first.masterTime + (a.duration - first.itemTime)
        #expect(a.duration.isNumeric && abs((second.masterTime - end).seconds) < 1e-6,
                "started \((second.masterTime - end).seconds) s from the first item's end")
        // And it plays from its start: early on, its time is still near zero.
        #expect(player.currentTime().seconds < 0.9)
        #expect(await waitUntil(10) { player.currentItem == nil })
    }

    @Test("an item's forward end time ends it there")
    func forwardPlaybackEndTimeEndsTheItem() async throws {
        let item = try tone(2)
        item.forwardPlaybackEndTime = CMTime(value: 300, timescale: 1000)
        let ends = EndCounter([item])
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        player.play()
        #expect(await waitUntil(10) { ends.count(item) == 1 })
        #expect(await waitUntil(5) { player.rate == 0 })
        let stopped = player.currentTime().seconds
        #expect(abs(stopped - 0.3) < 0.001, "paused at \(stopped) s")
    }
}

@Suite(.ownThread) struct PlayerLooperTests {
    @Test("a looper plays its item again and again, counting the loops, until looping is disabled")
    func loops() async throws {
        let template = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 0.3, rate: 48_000))
        // As Apple's documentation asks: the template's duration loaded first, so the looper
        // is ready at once.
        _ = try await template.asset.load(.duration)
        let player = AVQueuePlayer(items: [], output: .null(driftPPM: 0))
        defer { player.close() }
        let looper = AVPlayerLooper(player: player, templateItem: template)
        let counts = Collected<Int>()
        let statuses = Collected<AVPlayerLooper.Status>()
        let observations = [looper.observe(\.loopCount, options: [.new]) { _, change in change.newValue.map(counts.append) },
                            looper.observe(\.status, options: [.new]) { _, change in change.newValue.map(statuses.append) }]
        defer { observations.forEach { $0.invalidate() } }
        #expect(looper.status == .ready)
        #expect(looper.loopingPlayerItems.count == AVPlayerLooper.copies)
        #expect(!looper.loopingPlayerItems.contains { $0 === template })
        player.play()
        // The queue never runs dry: at every look there is a current item.
        var ranDry = false
        let deadline = Date().addingTimeInterval(20)
        while looper.loopCount < 5 && Date() < deadline {
            if player.currentItem == nil { ranDry = true }
            usleep(1_000)
        }
        #expect(looper.loopCount >= 5, "loops: \(looper.loopCount)")
        #expect(!ranDry)
        // Each copy that played went back into the queue.
        #expect(await waitUntil(5) { player.items().count == AVPlayerLooper.copies })
        looper.disableLooping()
        #expect(looper.status == .cancelled)
        #expect(await waitUntil(10) { player.currentItem == nil })
        // Observed as they changed: each loop counted once, in order, and the cancellation.
        #expect(Array(counts.all.prefix(5)) == [1, 2, 3, 4, 5], "loop counts seen: \(counts.all)")
        #expect(statuses.all == [.cancelled])
    }

    @Test("a looper's status is unknown until its template's duration is loaded, then ready; failed when it cannot be; its copies keep the template's settings")
    func statusFollowsTheTemplatesLoading() async throws {
        // Served at a trickle, so that the template's duration is not loaded at once.
        let (server, url) = try ThrottledHTTPServer.serving(try TestMedia.tone(.wav, seconds: 0.5, rate: 48_000), bytesPerSecond: 1)
        defer { server.stop() }
        let template = AVPlayerItem(url: url)
        template.audioTimePitchAlgorithm = .varispeed
        template.preferredForwardBufferDuration = 4
        let player = AVQueuePlayer(items: [], output: .null(driftPPM: 0))
        defer { player.close() }
        let looper = AVPlayerLooper(player: player, templateItem: template)
        #expect(looper.status == .unknown)
        server.bytesPerSecond = 0
        #expect(await waitUntil(10) { looper.status == .ready })
        #expect(looper.loopingPlayerItems.allSatisfy { $0.audioTimePitchAlgorithm == .varispeed && $0.preferredForwardBufferDuration == 4 })
        looper.disableLooping()

        let missing = AVPlayerItem(url: URL(fileURLWithPath: "/nonexistent/chorus-looper.wav"))
        let other = AVQueuePlayer(items: [], output: .null(driftPPM: 0))
        defer { other.close() }
        let failing = AVPlayerLooper(player: other, templateItem: missing)
        let statuses = Collected<AVPlayerLooper.Status>()
        // With `.initial`: a missing file may fail before the observation is made.
        let observation = failing.observe(\.status, options: [.initial, .new]) { _, change in change.newValue.map(statuses.append) }
        defer { observation.invalidate() }
        #expect(await waitUntil(10) { failing.status == .failed })
        #expect(failing.error != nil)
        #expect(await waitUntil(5) { statuses.all.last == .failed })
    }

    @Test("a looper with a time range plays that part of the item")
    func loopsARange() throws {
        let template = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 3, rate: 48_000))
        let player = AVQueuePlayer(items: [], output: .null(driftPPM: 0))
        defer { player.close() }
        let range = CMTimeRange(start: CMTime(value: 1, timescale: 1), duration: CMTime(value: 300, timescale: 1000))
        let looper = AVPlayerLooper(player: player, templateItem: template, timeRange: range)
        player.play()
        var earliest = Double.infinity
        var latest = 0.0
        let deadline = Date().addingTimeInterval(20)
        while looper.loopCount < 3 && Date() < deadline {
            if player.timeControlStatus == .playing {
                let time = player.currentTime().seconds
                earliest = min(earliest, time)
                latest = max(latest, time)
            }
            usleep(5_000)
        }
        #expect(looper.loopCount >= 3)
        #expect(earliest >= 0.99, "played from \(earliest) s")
        // The time stands at the range's end until the monitor ends the item there.
        #expect(latest <= 1.3, "played up to \(latest) s")
        looper.disableLooping()
    }
}
