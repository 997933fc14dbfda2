import Foundation
import Testing
import ChorusTestSupport
@testable import AVPlayback
import MediaPipeline

@Suite(.ownThread) struct PlaybackTests {
    @Test func playsInRealTimeOnTheNullDeviceAndEndsOnce() async throws {
        // WAV: its declared duration is exact (an MP3's is an estimate that counts padding).
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
        let start = Date()
        player.play()
        #expect(await waitUntil(10) { ended.value == 1 })
        let elapsed = Date().timeIntervalSince(start)
        // A real-time device cannot finish a second of audio in much less than a second. (A
        // lower bound only: a loaded machine makes the play longer, never shorter.)
        #expect(elapsed >= 0.95)
        // Once: no second notification follows.
        await sleepThroughQuietWindow()
        #expect(ended.value == 1)
        #expect(player.rate == 0)
        #expect(player.timeControlStatus == .paused)
        // At the end the current time is the end: exactly the item's duration.
        #expect(player.currentTime() == item.duration)
    }

    @Test func statusAndTimeControlMoveThroughTheirStates() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 2))
        #expect(item.status == .unknown)
        #expect(item.duration.isIndefinite)
        #expect(item.tracks.isEmpty)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let statuses = Collected<AVPlayerItem.Status>()
        let observation = item.observe(\.status, options: [.initial, .new]) { _, change in
            if let value = change.newValue { statuses.append(value) }
        }
        defer { observation.invalidate() }
        #expect(await waitUntil { item.status == .readyToPlay })
        #expect(await waitUntil { statuses.all == [.unknown, .readyToPlay] })
        #expect(abs(item.duration.seconds - 2) < 0.01)
        #expect(item.tracks.count == 1)
        #expect(player.timeControlStatus == .paused)
        player.play()
        #expect(player.rate == 1)
        #expect(await waitUntil { player.timeControlStatus == .playing })
        let playing = player.currentTime()
        #expect(await waitUntil { player.currentTime() > playing })
        player.pause()
        #expect(player.timeControlStatus == .paused)
        let paused = player.currentTime()
        await sleepThroughQuietWindow()
        #expect(player.currentTime() == paused)
    }

    @Test func resumingContinuesWhereItPaused() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 2))
        let path = TestMedia.folder.appendingPathComponent("resume-\(UUID().uuidString).cap").path
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0), hostClock: .hostTimeClock, hostMapping: { $0 },
                              capture: try RenderCapture(path: path))
        defer { player.close() }
        #expect(await waitUntil { item.status == .readyToPlay })
        player.play()
        #expect(await waitUntil { player.currentTime().seconds >= 0.2 })
        player.pause()
        let paused = player.currentTime()
        let sampleRate = try #require(player.engine.format?.sampleRate)
        let pausedFrame = paused.convertScale(Int32(sampleRate), method: .roundHalfAwayFromZero).value
        #expect(pausedFrame > 0)
        player.play()
        // The render thread is told to play from the paused frame, and the first frame heard
        // after the resumption is that frame: not a frame skipped, none repeated, however long
        // the resumption took. (What was heard is read from the capture: a stall later in the
        // run, which a loaded machine can cause, starts a later run but changes nothing heard.)
        let serial = player.state.withLockAnnotated { $0.serial }
        #expect(player.engine.currentControl?.mode == .play(serial: serial, frame: pausedFrame, hostTime: nil))
        #expect(await waitUntil { player.timeControlStatus == .playing && player.engine.status.serial == serial })
        #expect(await waitUntil { (try? RenderCaptureLog(path: path).periods.contains { $0.serial == serial }) == true })
        let periods = try RenderCaptureLog(path: path).periods
        let resumed = try #require(periods.first { $0.serial == serial })
        let around = periods.filter { $0.serial >= serial - 1 }.prefix(12).map { "\($0.serial)@\($0.host): \($0.position)+\($0.frames)" }
        #expect(resumed.position == Double(pausedFrame), "resumed from frame \(resumed.position), paused at \(pausedFrame); the periods around: \(around)")
        #expect(player.currentTime() >= paused)
    }

    @Test func actionAtItemEndNoneKeepsTheRate() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 0.5))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        player.actionAtItemEnd = .none
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
        player.play()
        #expect(await waitUntil { ended.value == 1 })
        await sleepThroughQuietWindow()
        #expect(player.rate == 1)
        #expect(ended.value == 1)
    }

    @Test func periodicObserversFireWhilePlayingAndStopWhenRemoved() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let times = Collected<CMTime>()
        let queue = DispatchQueue(label: "observer")
        let token = player.addPeriodicTimeObserver(forInterval: CMTime(value: 1, timescale: 10), queue: queue) { times.append($0) }
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
        player.play()
        #expect(await waitUntil { ended.value == 1 })
        player.removeTimeObserver(token)
        queue.sync {}
        let fired = times.all
        // At the start, while playing, and in order. (How many times is the schedule's
        // (aPeriodicObserverFiresOnceAtEveryMultipleOfItsInterval): in real time, a monitor
        // held up past an interval rightly fires once for both.)
        #expect(fired.first == .zero)
        #expect(fired.contains { $0 > .zero && $0 < item.duration }, "\(fired)")
        #expect(zip(fired, fired.dropFirst()).allSatisfy { $0 <= $1 })
        let afterRemoval = times.count
        await player.seek(to: .zero)
        player.play()
        // Removed: nothing more while the item plays a while again.
        #expect(await waitUntil { player.currentTime().seconds >= 0.3 })
        queue.sync {}
        #expect(times.count == afterRemoval)
    }

    /// An observer added while paused at the start fires first with the time it was added
    /// at, however late the monitor's next tick comes after a play: ticks are fed here.
    @Test func aPeriodicObserverFiresFirstWithTheTimeItWasAddedAt() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil { item.status == .readyToPlay })
        let queue = DispatchQueue(label: "observer")
        let times = Collected<CMTime>()
        let observer = player.addTimeObserver(TimeObserver(kind: .periodic(interval: CMTime(value: 1, timescale: 10), block: { times.append($0) }),
                                                           queue: queue))
        player.removeTimeObserver(observer)
        // (Removed from the player's own ticks; fed directly below.) The first tick comes
        // 150 ms into play: it tells the adding's time, then the schedule catches up at once.
        let added = try #require(observer.fireNowTime)
        #expect(added == .zero)
        let fresh = TimeObserver(kind: .periodic(interval: CMTime(value: 1, timescale: 10), block: { times.append($0) }), queue: queue)
        fresh.fireNowTime = added
        player.fireTimeObservers(now: CMTime(value: 7_200, timescale: 48_000), playing: true, jumped: false, previous: .zero, observers: [fresh])
        queue.sync {}
        player.fireTimeObservers(now: CMTime(value: 7_680, timescale: 48_000), playing: true, jumped: false, previous: .zero, observers: [fresh])
        queue.sync {}
        #expect(times.all == [.zero, CMTime(value: 7_680, timescale: 48_000)])
    }

    /// A start (or a seek, or a pause) fires every periodic observer at the next tick: with
    /// the time it landed at, however late that tick comes. Under load the first tick after a
    /// `play()` came 26 frames in, and the start was told as 26 frames, not 0.
    @Test func aJumpIsToldWhereItLandedNotWhereTheTickFoundIt() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil { item.status == .readyToPlay })
        let queue = DispatchQueue(label: "observer")
        let times = Collected<CMTime>()
        let observer = TimeObserver(kind: .periodic(interval: CMTime(value: 1, timescale: 10), block: { times.append($0) }), queue: queue,
                                    fireNow: false)
        // A start at 0.5 s, found by the tick 26 frames later; then the schedule from there.
        let landed = CMTime(value: 24_000, timescale: 48_000)
        player.fireTimeObservers(now: CMTime(value: 24_026, timescale: 48_000), playing: true, jumped: true, jumpedTo: landed,
                                 previous: .zero, observers: [observer])
        queue.sync {}
        player.fireTimeObservers(now: CMTime(value: 28_810, timescale: 48_000), playing: true, jumped: false, previous: landed,
                                 observers: [observer])
        queue.sync {}
        #expect(times.all == [landed, CMTime(value: 28_810, timescale: 48_000)])
        // The player records where a start landed, for its own ticks.
        let real = Collected<CMTime>()
        let token = player.addPeriodicTimeObserver(forInterval: CMTime(value: 10, timescale: 1), queue: queue) { real.append($0) }
        defer { player.removeTimeObserver(token) }
        await player.seek(to: CMTime(value: 1, timescale: 4))
        player.play()
        #expect(await waitUntil { real.all.contains { $0 != .zero } })
        queue.sync {}
        // The adding (at 0, unless the seek came before the next tick), then the seek and
        // the start (one firing when no tick came between them), told where they landed.
        #expect(real.all.first { $0 != .zero } == CMTime(value: 1, timescale: 4), "\(real.all)")
    }

    /// The periodic schedule, tick by tick: the monitor's ticks are fed to the observers
    /// directly, at item times chosen here, so what fires does not depend on when a loaded
    /// machine lets the monitor run.
    @Test func aPeriodicObserverFiresOnceAtEveryMultipleOfItsInterval() throws {
        let player = AVPlayer(playerItem: nil, output: .null(driftPPM: 0))
        defer { player.close() }
        let queue = DispatchQueue(label: "observer")
        let times = Collected<CMTime>()
        let interval = CMTime(value: 1, timescale: 10)
        let observer = TimeObserver(kind: .periodic(interval: interval, block: { times.append($0) }), queue: queue)
        var previous = CMTime.invalid
        func tick(atFrame frame: Int64, jumped: Bool = false) {
            let time = CMTime(value: frame, timescale: 48_000)
            player.fireTimeObservers(now: time, playing: true, jumped: jumped, previous: previous, observers: [observer])
            // A block still running when the next tick comes is not called again: let it run.
            queue.sync {}
            previous = time
        }
        // A second of play ticked every 10 ms (480 frames) from a start, which fires at
        // once: then exactly once at each tenth of a second, at the tick that reaches it.
        tick(atFrame: 0, jumped: true)
        for period in 1...100 { tick(atFrame: Int64(period * 480)) }
        let multiples: [CMTime] = (0...10).map { (tenth: Int) -> CMTime in CMTime(value: Int64(tenth * 4_800), timescale: 48_000) }
        #expect(times.all == multiples)
        // A tick held up past two multiples fires once for both, and the schedule goes on
        // from the multiple after it.
        times.removeAll()
        tick(atFrame: 48_000 + 11_000)
        tick(atFrame: 48_000 + 14_000)
        tick(atFrame: 48_000 + 14_400)
        #expect(times.all == [CMTime(value: 48_000 + 11_000, timescale: 48_000), CMTime(value: 48_000 + 14_400, timescale: 48_000)])
    }

    @Test func boundaryObserversFireWhenPlaybackPassesTheirTimes() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let hits = Collected<Double>()
        let token = player.addBoundaryTimeObserver(forTimes: [CMTime(value: 1, timescale: 2)], queue: DispatchQueue(label: "b")) {
            hits.append(player.currentTime().seconds)
        }
        defer { player.removeTimeObserver(token) }
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
        player.play()
        #expect(await waitUntil { ended.value == 1 })
        #expect(hits.count == 1)
        #expect((hits.all.first ?? 0) >= 0.5)
    }

    @Test func playsAQueueOfItemsOneAfterAnother() async throws {
        let first = AVPlayerItem(url: try TestMedia.tone(.flac, seconds: 0.5))
        let second = AVPlayerItem(url: try TestMedia.tone(.opus, seconds: 0.5))
        let player = AVPlayer(playerItem: first, output: .null(driftPPM: 0))
        defer { player.close() }
        let firstEnded = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: first)
        let secondEnded = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: second)
        player.play()
        #expect(await waitUntil { firstEnded.value == 1 })
        player.replaceCurrentItem(with: second)
        #expect(player.currentItem === second)
        player.play()
        #expect(await waitUntil { secondEnded.value == 1 })
        #expect(firstEnded.value == 1)
    }

    @Test func prerollCompletesWhenDataIsReady() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.aac, seconds: 1))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil { item.status == .readyToPlay })
        let done = Collected<Bool>()
        player.preroll(atRate: 1) { done.append($0) }
        #expect(await waitUntil { done.count == 1 })
        #expect(done.all == [true])
        player.play()
        let refused = Collected<Bool>()
        player.preroll(atRate: 1) { refused.append($0) }
        #expect(await waitUntil { refused.count == 1 })
        #expect(refused.all == [false])
    }

    /// As Apple's documentation says, a preroll that a change of time interrupts completes
    /// with `false`; so does one a start or another item interrupts. The stream is held back
    /// so that the seek is still under way when the preroll is asked for.
    @Test("a preroll interrupted by a seek, a start or another item completes with false")
    func prerollInterruptedCompletesWithFalse() async throws {
        let (server, url) = try ThrottledHTTPServer.serving(try TestMedia.tone(.wav, seconds: 20, rate: 48_000), bytesPerSecond: 0)
        defer { server.stop() }
        let item = AVPlayerItem(url: url)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil(20) { item.status == .readyToPlay })
        // A trickle: a seek far from what was read ahead waits for its data.
        server.bytesPerSecond = 64
        for interruption in ["seek", "play", "replace"] {
            let sought = Collected<Bool>()
            player.seek(to: CMTime(value: interruption == "seek" ? 15 : 12, timescale: 1)) { sought.append($0) }
            let prerolled = Collected<Bool>()
            player.preroll(atRate: 1) { prerolled.append($0) }
            switch interruption {
            case "seek": player.seek(to: CMTime(value: 10, timescale: 1)) { _ in }
            case "play": player.play()
            default: player.replaceCurrentItem(with: AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1)))
            }
            #expect(await waitUntil(10) { prerolled.count == 1 }, "after a \(interruption)")
            #expect(prerolled.all == [false], "after a \(interruption)")
            if interruption == "play" { player.pause() }
        }
    }

    /// Every property may be read and set from any thread while the player plays. Each is
    /// set and read by two threads at once with nothing else between them (another lock
    /// taken in between would order the two threads and hide a missing one from the
    /// sanitizer), so under `make test-tsan` a property left outside its lock fails this.
    @Test func itemAndPlayerPropertiesAreSafeFromTwoThreadsAtOnce() async throws {
        // Long enough to be playing still when a sanitizer's slowness has let every thread
        // through its loop.
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 30))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil { item.status == .readyToPlay })
        player.play()
        let accesses: [@Sendable (Int) -> Void] = [
            // End times past the item's 2 s: the item is read and written at once, and plays on.
            { step in item.forwardPlaybackEndTime = CMTime(value: Int64(1_000 + step), timescale: 100); _ = item.forwardPlaybackEndTime },
            { step in item.reversePlaybackEndTime = CMTime(value: Int64(step), timescale: 100); _ = item.reversePlaybackEndTime },
            { step in item.preferredForwardBufferDuration = Double(step); _ = item.preferredForwardBufferDuration },
            { step in item.audioTimePitchAlgorithm = step.isMultiple(of: 2) ? .varispeed : .spectral; _ = item.audioTimePitchAlgorithm },
            { step in item.tracks.first?.isEnabled = true; _ = item.timebase?.rate },
            { step in player.allowsExternalPlayback = step.isMultiple(of: 2); _ = player.allowsExternalPlayback },
            { step in
                player.usesExternalPlaybackWhileExternalScreenIsActive = step.isMultiple(of: 2)
                _ = player.usesExternalPlaybackWhileExternalScreenIsActive
            },
        ]
        for access in accesses {
            // Threads of their own: Dispatch's concurrentPerform, under the sanitizer, ran
            // the two halves one after the other.
            let done = DispatchSemaphore(value: 0)
            for _ in 0..<2 {
                Thread {
                    for step in 0..<2_000 { access(step) }
                    done.signal()
                }.start()
            }
            done.wait()
            done.wait()
        }
        #expect(item.forwardPlaybackEndTime == CMTime(value: 2_999, timescale: 100))
        #expect(!player.allowsExternalPlayback)
        #expect(player.rate == 1)
    }

    @Test func rateKeyValueObservationSeesPlayAndPause() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let rates = Collected<Float>()
        let observation = player.observe(\.rate, options: [.new]) { _, change in
            if let value = change.newValue { rates.append(value) }
        }
        player.play()
        player.pause()
        #expect(await waitUntil { rates.all == [1, 0] })
        observation.invalidate()
        player.play()
        await sleepThroughQuietWindow()
        #expect(rates.all == [1, 0])
    }
}
