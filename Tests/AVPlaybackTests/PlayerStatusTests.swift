import Foundation
import Testing
import ChorusTestSupport
@testable import AVPlayback
import MediaClock
import MediaPipeline
import Synchronization

/// What Apple's playback guide and reference say of a player's status, its end and its
/// observers, checked as an app written for them would rely on it.
@Suite(.ownThread) struct PlayerStatusTests {
    @Test("the player's status starts unknown and is announced ready once its output opens")
    func statusBecomesReady() async throws {
        let player = AVPlayer(playerItem: nil, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(player.status == .unknown)
        let statuses = Collected<AVPlayer.Status>()
        let observation = player.observe(\.status, options: [.initial, .new]) { _, change in
            if let value = change.newValue { statuses.append(value) }
        }
        defer { observation.invalidate() }
        player.replaceCurrentItem(with: AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1)))
        #expect(await waitUntil(10) { statuses.all == [.unknown, .readyToPlay] }, "seen: \(statuses.all)")
        #expect(player.status == .readyToPlay)
    }

    @Test("a first item that cannot be opened fails, and the player, having tried, is ready for others")
    func statusIsReadyAfterAFirstItemFails() async throws {
        let player = AVPlayer(playerItem: nil, output: .null(driftPPM: 0))
        defer { player.close() }
        let statuses = Collected<AVPlayer.Status>()
        let observation = player.observe(\.status, options: [.initial, .new]) { _, change in
            if let value = change.newValue { statuses.append(value) }
        }
        defer { observation.invalidate() }
        let missing = AVPlayerItem(url: URL(fileURLWithPath: "/nonexistent/chorus-status-test.wav"))
        player.replaceCurrentItem(with: missing)
        #expect(await waitUntil(10) { missing.status == .failed })
        #expect(await waitUntil(10) { statuses.all == [.unknown, .readyToPlay] }, "seen: \(statuses.all)")
        #expect(player.error == nil)
        // And it plays the next item.
        let good = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1))
        player.replaceCurrentItem(with: good)
        #expect(await waitUntil(10) { good.status == .readyToPlay })
        #expect(player.status == .readyToPlay)
    }

    @Test("at the item's end, play has no effect until a seek")
    func playAtTheEndWaitsForASeek() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 0.3))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
        player.play()
        #expect(await waitUntil(10) { ended.value == 1 && player.rate == 0 })
        player.play()
        #expect(player.rate == 0)
        await sleepThroughQuietWindow()
        #expect(ended.value == 1)
        #expect(player.currentTime() == item.duration)
        // A seek makes it playable again, to a second end.
        await player.seek(to: .zero)
        player.play()
        #expect(player.rate == 1)
        #expect(await waitUntil(10) { ended.value == 2 })
    }

    @Test("seeking to zero from the end notification and playing replays the item, as the guide loops one")
    func seekFromTheEndNotificationReplays() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 0.3))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
        let token = NotificationCenter.default.addObserver(forName: AVPlayerItem.didPlayToEndTimeNotification, object: item,
                                                           queue: nil) { [weak player] _ in
            guard ended.value < 3 else { return }
            player?.seek(to: .zero)
            player?.play()
        }
        defer { NotificationCenter.default.removeObserver(token) }
        player.play()
        #expect(await waitUntil(10) { ended.value == 3 })
    }

    @Test("a start at a given time announces a time jump, as a seek does")
    func scheduledStartAnnouncesAJump() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 2))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        let jumped = NotificationCounter(AVPlayerItem.timeJumpedNotification, object: item)
        player.automaticallyWaitsToMinimizeStalling = false
        let soon = CMTime(value: HostTime.now().nanoseconds + 100_000_000, timescale: 1_000_000_000)
        player.setRate(1, time: CMTime(value: 1, timescale: 2), atHostTime: soon)
        #expect(await waitUntil(5) { jumped.value == 1 })
    }

    @Test("play while playing changes nothing: periodic observers are not called again; a new rate calls them")
    func playWhilePlayingIsNoStart() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 5))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let observers = DispatchQueue(label: "test.observer")
        let calls = Atomic<Int>(0)
        // An interval longer than the test: only starts, stops and jumps call the block.
        let token = player.addPeriodicTimeObserver(forInterval: CMTime(value: 100, timescale: 1), queue: observers) { _ in
            calls.add(1, ordering: .relaxed)
        }
        defer { player.removeTimeObserver(token) }
        player.play()
        #expect(await waitUntil(10) { player.timeControlStatus == .playing })
        // Every monitor tick that follows a call below is run here, then its blocks.
        func settle() { player.eventQueue.sync { player.tick() }; observers.sync {} }
        settle()
        let started = calls.load(ordering: .relaxed)
        #expect(started > 0)
        for _ in 0..<3 { player.play(); settle() }
        player.rate = 1
        settle()
        #expect(calls.load(ordering: .relaxed) == started)
        player.rate = 2
        settle()
        #expect(calls.load(ordering: .relaxed) > started)
    }

    @Test("boundaries at and just before the end are traversed when the item plays to its end and pauses there")
    func boundariesAtTheEndAreTraversed() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1, rate: 48_000))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        let duration = item.duration
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
        let crossed = Collected<String>()
        let observers = DispatchQueue(label: "test.boundaries")
        let atEnd = player.addBoundaryTimeObserver(forTimes: [NSValue(time: duration)], queue: observers) { crossed.append("end") }
        let justBefore = player.addBoundaryTimeObserver(forTimes: [NSValue(time: duration - CMTime(value: 2, timescale: 1_000))],
                                                        queue: observers) { crossed.append("before") }
        defer { player.removeTimeObserver(atEnd); player.removeTimeObserver(justBefore) }
        player.play()
        #expect(await waitUntil(10) { ended.value == 1 })
        #expect(await waitUntil(5) { crossed.count == 2 }, "crossed: \(crossed.all)")
        #expect(Set(crossed.all) == ["end", "before"])
    }

    @Test("removing a time observer does not wait for its running block, which may be waiting for the remover")
    func removingAnObserverDoesNotWaitForItsBlock() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 3))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let inBlock = DispatchSemaphore(value: 0)
        let removed = DispatchSemaphore(value: 0)
        let sawRemoval = Atomic<Int>(0)
        let token = player.addPeriodicTimeObserver(forInterval: CMTime(value: 1, timescale: 10),
                                                   queue: DispatchQueue(label: "test.observer")) { _ in
            inBlock.signal()
            // The block waits for its remover, as a block that synchronises with the main
            // thread would while the main thread removes it.
            if removed.wait(timeout: .now() + 5) == .success { sawRemoval.add(1, ordering: .relaxed) }
        }
        player.play()
        #expect(inBlock.wait(timeout: .now() + 10) == .success)
        player.removeTimeObserver(token)
        removed.signal()
        #expect(await waitUntil(10) { sawRemoval.load(ordering: .relaxed) == 1 })
    }
}
