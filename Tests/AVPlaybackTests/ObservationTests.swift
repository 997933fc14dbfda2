import Foundation
import Testing
import ChorusTestSupport
@testable import AVPlayback
import MediaClock
import MediaPipeline
import Synchronization

/// Key-value observation as the walkthrough's player uses it: chained key paths through the
/// current item, properties that are set and properties that change by themselves, `.prior`,
/// and key paths written on a subclass.
@Suite(.ownThread) struct ObservationTests {
    @Test("a chained key path through the current item delivers the item's status and duration")
    func chainedKeyPaths() async throws {
        let player = AVPlayer(playerItem: nil, output: .null(driftPPM: 0))
        defer { player.close() }
        let statuses = Collected<AVPlayerItem.Status?>()
        let durations = Collected<CMTime?>()
        let statusWatch = player.observe(\.currentItem?.status, options: [.initial, .new]) { _, change in
            if let value = change.newValue { statuses.append(value) }
        }
        let durationWatch = player.observe(\.currentItem?.duration, options: [.new]) { _, change in
            if let value = change.newValue { durations.append(value) }
        }
        defer { statusWatch.invalidate(); durationWatch.invalidate() }
        player.replaceCurrentItem(with: AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1, rate: 48_000)))
        #expect(await waitUntil(10) { statuses.all.last == .some(.readyToPlay) }, "statuses: \(statuses.all)")
        // nil (no item), then the item's own, unknown until it loads.
        #expect(statuses.all.first == .some(nil))
        #expect(await waitUntil(10) { durations.all.last == .some(CMTime(value: 48_000, timescale: 48_000)) }, "durations: \(durations.all)")
    }

    @Test("volume and mute notify at once, with old and new values, and .prior comes before")
    func setPropertiesNotify() throws {
        let player = AVPlayer(playerItem: nil, output: .null(driftPPM: 0))
        defer { player.close() }
        let changes = Collected<(prior: Bool, old: Float?, new: Float?)>()
        let watch = player.observe(\.volume, options: [.old, .new, .prior]) { _, change in
            changes.append((change.isPrior, change.oldValue, change.newValue))
        }
        defer { watch.invalidate() }
        player.volume = 0.5
        let seen = changes.all
        #expect(seen.count == 2)
        #expect(seen.first?.prior == true && seen.first?.old == 1 && seen.first?.new == nil)
        #expect(seen.last?.prior == false && seen.last?.old == 1 && seen.last?.new == 0.5)
        let muted = Collected<Bool>()
        let muteWatch = player.observe(\.isMuted, options: [.new]) { _, change in
            if let value = change.newValue { muted.append(value) }
        }
        defer { muteWatch.invalidate() }
        player.isMuted = true
        #expect(muted.all == [true])
        // The same value again is no change.
        player.volume = 0.5
        #expect(changes.count == 2)
    }

    @Test("the rate and the current item, changed by the app, notify on its thread before the call returns")
    func rateAndItemNotifyOnTheCallersThread() throws {
        let player = AVPlayer(playerItem: AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 2, rate: 48_000)),
                              output: .null(driftPPM: 0))
        defer { player.close() }
        let caller = pthread_self()
        let rates = Collected<(rate: Float, byCaller: Bool)>()
        let items = Collected<Bool>()
        let rateWatch = player.observe(\.rate, options: [.new]) { _, change in
            rates.append((change.newValue ?? -1, pthread_equal(pthread_self(), caller) != 0))
        }
        let itemWatch = player.observe(\.currentItem, options: [.new]) { _, _ in
            items.append(pthread_equal(pthread_self(), caller) != 0)
        }
        defer { rateWatch.invalidate(); itemWatch.invalidate() }
        player.rate = 0.5
        #expect(rates.all.map(\.rate) == [0.5])
        player.pause()
        #expect(rates.all.map(\.rate) == [0.5, 0])
        player.play()
        #expect(rates.all.map(\.rate) == [0.5, 0, 1])
        #expect(rates.all.allSatisfy { $0.byCaller })
        player.replaceCurrentItem(with: AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1, rate: 48_000)))
        #expect(items.all == [true])
    }

    @Test("a key path's values and changes come as async streams: the current value first, then each change, .prior before it")
    func asyncStreams() async throws {
        let player = AVPlayer(playerItem: nil, output: .null(driftPPM: 0))
        defer { player.close() }
        // Each stream read on a task of its own, so that a stream that never yields fails the
        // waits below rather than holding the test.
        let values = Collected<Float>()
        let volumes = player.values(of: \.volume)
        let readingValues = Task { for await value in volumes { values.append(value) } }
        defer { readingValues.cancel() }
        let changes = Collected<(prior: Bool, old: Float?, new: Float?)>()
        let volumeChanges = player.changes(of: \.volume, options: [.initial, .new, .old, .prior])
        let readingChanges = Task { for await change in volumeChanges { changes.append((change.isPrior, change.oldValue, change.newValue)) } }
        defer { readingChanges.cancel() }
        #expect(await waitUntil(10) { values.all == [1] && changes.count == 1 })
        #expect(changes.all.first.map { !$0.prior && $0.new == 1 } == true)
        player.volume = 0.5
        #expect(await waitUntil(10) { values.all == [1, 0.5] && changes.count == 3 }, "values \(values.all), changes \(changes.all)")
        let seen = changes.all
        #expect(seen.count == 3)
        guard seen.count == 3 else { return }
        #expect(seen[1].prior && seen[1].old == 1 && seen[1].new == nil)
        #expect(!seen[2].prior && seen[2].old == 1 && seen[2].new == 0.5)
        // A chained key path through the current item streams too.
        let statuses = Collected<AVPlayerItem.Status?>()
        let stream = player.changes(of: \.currentItem?.status, options: [.initial, .new])
        let reading = Task {
            for await change in stream { if let status = change.newValue { statuses.append(status) } }
        }
        defer { reading.cancel() }
        #expect(await waitUntil(10) { statuses.all.first == .some(nil) })
        player.replaceCurrentItem(with: AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1)))
        #expect(await waitUntil(10) { statuses.all.last == .readyToPlay }, "statuses: \(statuses.all)")
    }

    @Test("the buffered ranges of the playing item notify as they grow")
    func derivedPropertiesNotify() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 3, rate: 48_000))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let ranges = Collected<[NSValue]>()
        let watch = item.observe(\.loadedTimeRanges, options: [.new]) { _, change in
            if let value = change.newValue { ranges.append(value) }
        }
        defer { watch.invalidate() }
        player.play()
        #expect(await waitUntil(10) { ranges.all.contains { !$0.isEmpty } }, "ranges: \(ranges.all)")
    }

    /// An app's handler that moves to its UI thread with `sync` (Apple's handlers arrive on
    /// any thread), while that thread moves a volume slider: the setter must not wait for the
    /// handler, nor run it. The handler lingers 2 ms first, so that the slider's next move
    /// comes while it runs.
    @Test("a handler that waits on the thread setting the player's properties neither deadlocks nor runs on that thread")
    func aHandlerWaitingOnTheSettingThread() throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 3, rate: 48_000))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        let ui = DispatchQueue(label: "ui")
        let onUI = DispatchSpecificKey<Bool>()
        ui.setSpecific(key: onUI, value: true)
        let calls = Collected<Bool>()
        let watch = player.observe(\.currentItem?.loadedTimeRanges, options: [.new]) { _, _ in
            let onTheUIThread = DispatchQueue.getSpecific(key: onUI) == true
            calls.append(onTheUIThread)
            if !onTheUIThread {
                usleep(2_000)
                ui.sync {}
            }
        }
        player.play()
        let done = DispatchSemaphore(value: 0)
        ui.async {
            let end = Date().addingTimeInterval(1.5)
            var volume: Float = 0
            while Date() < end {
                volume = volume == 0 ? 0.5 : 0
                player.volume = volume
                usleep(500)
            }
            done.signal()
        }
        let finished = done.wait(timeout: .now() + 30) == .success
        #expect(finished, "the setting thread was stuck")
        // A stuck player and its observation are left as they are, kept alive: closing the
        // one or ending the other (as their release would) may wait on the stuck thread too.
        guard finished else {
            _ = Unmanaged.passRetained(player)
            _ = Unmanaged.passRetained(watch)
            return
        }
        watch.invalidate()
        player.close()
        #expect(calls.count > 0, "the buffered ranges never changed: the case is not tested")
        #expect(!calls.all.contains(true), "a handler of another key path ran inside the setter")
    }

    @Test("a key path written on a subclass notifies")
    func subclassKeyPaths() async throws {
        let player = AVQueuePlayer(items: [AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1, rate: 48_000))],
                                   output: .null(driftPPM: 0))
        defer { player.close() }
        let rates = Collected<Float>()
        let watch = player.observe(\AVQueuePlayer.rate, options: [.new]) { _, change in
            if let value = change.newValue { rates.append(value) }
        }
        defer { watch.invalidate() }
        player.play()
        #expect(await waitUntil(10) { rates.all == [1] }, "rates: \(rates.all)")
    }
}

/// The buffering flags an app shows a spinner by.
@Suite(.ownThread) struct BufferingTests {
    @Test("a loaded item's buffer fills, is likely to keep up, and says so to its observers")
    func bufferFills() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 5, rate: 48_000))
        #expect(!item.isPlaybackLikelyToKeepUp && !item.isPlaybackBufferFull && !item.isPlaybackBufferEmpty)
        let player = AVPlayer(playerItem: nil, output: .null(driftPPM: 0))
        defer { player.close() }
        let likely = Collected<Bool>()
        let watch = item.observe(\.isPlaybackLikelyToKeepUp, options: [.initial, .new]) { _, change in
            if let value = change.newValue { likely.append(value) }
        }
        defer { watch.invalidate() }
        player.replaceCurrentItem(with: item)
        // Paused, the reader fills the ring (two seconds of a five-second item).
        #expect(await waitUntil(10) { item.isPlaybackBufferFull })
        #expect(item.isPlaybackLikelyToKeepUp)
        #expect(!item.isPlaybackBufferEmpty)
        #expect(await waitUntil(5) { likely.all == [false, true] }, "seen: \(likely.all)")
        // Asking for more than the ring holds: a full ring still counts.
        item.preferredForwardBufferDuration = 30
        #expect(item.isPlaybackLikelyToKeepUp)
    }

    @Test("a short item's decoded end fills its buffer")
    func endFillsTheBuffer() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 0.5, rate: 48_000))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil(10) { item.isPlaybackBufferFull && item.isPlaybackLikelyToKeepUp })
    }
}

extension BufferingTests {
    @Test("a longer preferred forward buffer reads further ahead, as the loaded ranges show")
    func preferredForwardBufferReadsFurther() async throws {
        let url = try TestMedia.tone(.wav, seconds: 20, rate: 48_000)
        /// How far the loaded range reaches once a paused player has read all it will.
        func loaded(preferring seconds: TimeInterval) async -> Double {
            let item = AVPlayerItem(url: url)
            item.preferredForwardBufferDuration = seconds
            let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
            defer { player.close() }
            // Until the reach has stood still for a tenth of a second.
            var reach = 0.0
            var since = Date()
            _ = await waitUntil(10) {
                let now = item.loadedTimeRanges.first.map { ($0.timeRangeValue.start + $0.timeRangeValue.duration).seconds } ?? 0
                if now != reach { reach = now; since = Date() }
                return now > 0 && Date().timeIntervalSince(since) > 0.1
            }
            return reach
        }
        let usual = await loaded(preferring: 0)
        let long = await loaded(preferring: 10)
        // The defaults: two seconds decoded and a second of packets.
        #expect(usual >= 2.5 && usual < 4, "read ahead by default: \(usual) s")
        #expect(long >= 9.5, "read ahead for 10 s: \(long) s")
    }
}

extension ObservationTests {
    @Test("an asset's properties notify once it has loaded")
    func assetPropertiesNotify() async throws {
        let asset = AVURLAsset(url: try TestMedia.tone(.wav, seconds: 1, rate: 48_000))
        let durations = Collected<CMTime>()
        let playable = Collected<Bool>()
        let durationWatch = asset.observe(\.duration, options: [.initial, .new]) { _, change in
            if let value = change.newValue { durations.append(value) }
        }
        let playableWatch = asset.observe(\.isPlayable, options: [.new]) { _, change in
            if let value = change.newValue { playable.append(value) }
        }
        defer { durationWatch.invalidate(); playableWatch.invalidate() }
        asset.loadValuesAsynchronously(forKeys: ["duration", "playable"])
        #expect(await waitUntil(10) { durations.all.count == 2 && playable.all == [true] }, "durations \(durations.all), playable \(playable.all)")
        #expect(durations.all.first?.isIndefinite == true)
        #expect(durations.all.last == CMTime(value: 48_000, timescale: 48_000))
    }

    @Test("the synchronous duration, tracks and isPlayable of an asset not yet loaded load it first, as Apple's older accessors do")
    func synchronousAccessorsLoad() throws {
        let asset = AVURLAsset(url: try TestMedia.tone(.wav, seconds: 1, rate: 48_000))
        #expect(asset.duration == CMTime(value: 48_000, timescale: 48_000))
        #expect(asset.tracks.count == 1)
        #expect(asset.isPlayable)
        let missing = AVURLAsset(url: URL(fileURLWithPath: "/nonexistent/asset.wav"))
        #expect(missing.duration.isIndefinite)
        #expect(missing.tracks.isEmpty)
        #expect(!missing.isPlayable)
        var error: NSError?
        #expect(missing.statusOfValue(forKey: "duration", error: &error) == .failed)
        #expect(error != nil)
    }

    @Test("a track's isEnabled is observable, and notifies on the setter's thread")
    func trackEnablingNotifies() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1, rate: 48_000))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        let track = try #require(item.tracks.first)
        let seen = Collected<Bool>()
        let watch = track.observe(\.isEnabled, options: [.new]) { _, change in change.newValue.map(seen.append) }
        defer { watch.invalidate() }
        track.isEnabled = false
        track.isEnabled = true
        #expect(seen.all == [false, true])
    }

    @Test("a set is delivered on the setter's thread before it returns, though a re-read of everything runs on another thread meanwhile")
    func aSetIsDeliveredByItsSetter() throws {
        let dial = Dial()
        let setter = pthread_self()
        let seen = Collected<(value: Int, bySetter: Bool)>()
        let watch = dial.observe(\.value, options: [.new]) { _, change in
            seen.append((change.newValue ?? -1, pthread_equal(pthread_self(), setter) != 0))
        }
        defer { watch.invalidate() }
        // A re-read between the setter's store and its delivery: it reads the new value.
        dial.observationRegistry.set(\Dial.value) {
            dial.store(1)
            Dial.onAnotherThread { dial.observationRegistry.poke() }
        }
        #expect(seen.all.map(\.value) == [1])
        #expect(seen.all.allSatisfy { $0.bySetter })
        // A re-read that read the old value before the setter stored, and decides after the
        // setter has delivered: it hands on nothing (not the old value back).
        let hasRead = DispatchSemaphore(value: 0), goOn = DispatchSemaphore(value: 0)
        dial.holdReads(otherThan: setter) { hasRead.signal(); goOn.wait() }
        let rereadDone = DispatchSemaphore(value: 0)
        Thread { dial.observationRegistry.poke(); rereadDone.signal() }.start()
        hasRead.wait()
        dial.value = 2
        goOn.signal()
        // The re-read held may be this one or one queued by a set: both are waited for.
        rereadDone.wait()
        dial.queue.sync {}
        dial.observationRegistry.poke()
        #expect(seen.all.map(\.value) == [1, 2])
        #expect(seen.all.allSatisfy { $0.bySetter })
    }
}

/// An observable value whose next read on another thread can be held once it has read, to
/// put a registry's re-read at a chosen point of a setter's work.
private final class Dial: AVKeyValueObservable, Sendable {
    let queue = DispatchQueue(label: "chorus.test.dial")
    let observationRegistry: ObservationRegistry
    private let stored = Mutex(0)
    private let hold = Mutex<(thread: pthread_t, action: @Sendable () -> Void)?>(nil)

    var value: Int {
        get {
            let value = stored.withLock { $0 }
            let held = hold.withLock { hold -> (@Sendable () -> Void)? in
                guard let current = hold, pthread_equal(pthread_self(), current.thread) == 0 else { return nil }
                hold = nil
                return current.action
            }
            held?()
            return value
        }
        set { observationRegistry.set(\Dial.value) { store(newValue) } }
    }

    init() { observationRegistry = ObservationRegistry(rereadQueue: queue) }

    func store(_ value: Int) { stored.withLock { $0 = value } }

    /// Runs `action` in the next read made on a thread other than `thread`, after it has read.
    func holdReads(otherThan thread: pthread_t, _ action: @escaping @Sendable () -> Void) {
        hold.withLock { $0 = (thread, action) }
    }

    /// Runs `work` on a new thread and waits for it.
    static func onAnotherThread(_ work: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        Thread { work(); done.signal() }.start()
        done.wait()
    }
}
