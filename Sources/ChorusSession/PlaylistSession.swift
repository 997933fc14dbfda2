import AVPlayback
import Foundation
import Logging
import MutexAnnotations
import Synchronization

/// Plays a list of items on one player, in turn, driven by `SessionCommand`s and reporting
/// through `events`: local play on its own, and a group leader's play through the group's
/// transport (`LeaderSession`).
public final class PlaylistSession: Sendable {
    /// Going to the previous item this far into the current one starts the current one
    /// again instead, as music players do.
    public static let restartThreshold = CMTime(value: 3, timescale: 1)
    /// The speeds a player's slower and faster keys step through: the usual ones for
    /// listening faster or following slowly, each a clear step from the next.
    public static let rateSteps: [Float] = [0.5, 0.75, 0.9, 1, 1.1, 1.25, 1.5, 2]
    /// How often a position event is sent by default: four times a second reads smoothly in
    /// a status line without flooding a slow terminal.
    public static let defaultPositionInterval = CMTime(value: 1, timescale: 4)

    /// The player the items play on.
    public let player: AVPlayer
    /// What the session reports; read it from one consumer.
    public var events: AsyncStream<SessionEvent> { channel.stream }

    let transport: any PlaybackTransport
    private let urls: [URL]
    private let start: CMTime?
    private let positionInterval: CMTime?
    private let pitchAlgorithm: AVAudioTimePitchAlgorithm
    private let channel: EventChannel
    /// The periodic time observer's callbacks (position events) arrive here, in order.
    private let callbacks = DispatchQueue(label: "chorus.session")
    private let state = Mutex(State())

    private struct State {
        var stopRequested = false
        /// Signalled when the item playing is left: its end, a failure, a jump or a stop.
        var finished: WakeSignal?
        /// The item to go to when the current one is left early (next, previous).
        var jump: Int?
        var currentIndex = 0
        /// The next item, already in a queue player's queue so that it follows the current
        /// one without a gap, with its index.
        /// `url` is what plays for it (`PlaybackTransport.playable(_:index:)`).
        var queued: (index: Int, url: URL, watch: ItemWatch)?
    }

    /// An item and the notifications that say it was left: its end, its failure. Made with
    /// the item, so that an item that follows gaplessly, and is short, cannot end before
    /// anyone listens.
    final class ItemWatch: Sendable {
        let item: AVPlayerItem
        let done = WakeSignal()
        private let failure = FailureNote()
        private let tokens: Mutex<[ObserverToken]>
        private let statusWatch: Mutex<NSKeyValueObservation?>

        /// Why the item failed, shared with the observers' closures (a lock cannot be
        /// captured by itself: it is not copyable).
        final class FailureNote: Sendable {
            let reason = Mutex<String?>(nil)
            /// Set as `done` is signalled.
            let finished = Atomic<Bool>(false)
        }

        /// Wraps a notification observer's token, which is not Sendable, for the lock.
        struct ObserverToken: @unchecked Sendable { let token: any NSObjectProtocol }

        init(url: URL, pitchAlgorithm: AVAudioTimePitchAlgorithm) {
            let item = AVPlayerItem(url: url)
            item.audioTimePitchAlgorithm = pitchAlgorithm
            self.item = item
            let name = url.isFileURL ? url.path : url.absoluteString
            let center = NotificationCenter.default
            let done = self.done
            let failure = self.failure
            let ended = center.addObserver(forName: AVPlayerItem.didPlayToEndTimeNotification, object: item, queue: nil) { _ in
                // Played backwards to its start, the item stands there, paused: it is not
                // over, and play goes on forward from there.
                if Self.endedAtItsStart(item) { return }
                failure.finished.store(true, ordering: .releasing)
                done.signal()
            }
            let failedEarly = center.addObserver(forName: AVPlayerItem.failedToPlayToEndTimeNotification, object: item, queue: nil) { note in
                let error = note.userInfo?[AVPlayerItemFailedToPlayToEndTimeErrorKey] as? NSError
                failure.reason.withLockAnnotated { $0 = error?.localizedDescription ?? "\(name): playback failed" }
                failure.finished.store(true, ordering: .releasing)
                done.signal()
            }
            tokens = Mutex([ObserverToken(token: ended), ObserverToken(token: failedEarly)])
            statusWatch = Mutex(item.observe(\.status) { item, _ in
                if item.status == .failed {
                    failure.reason.withLockAnnotated { $0 = item.error.map { $0.localizedDescription } ?? "\(name): cannot be played" }
                    failure.finished.store(true, ordering: .releasing)
                    done.signal()
                }
            })
        }

        /// Whether `item`'s end notification came from playing backwards to its start (or
        /// its reverse end time) rather than forward to its end: it is still current, and
        /// stands nearer the one.
        static func endedAtItsStart(_ item: AVPlayerItem) -> Bool {
            // A queue that moved on from the item ended it going forward.
            guard item.isCurrentInItsPlayer else { return false }
            let now = item.currentTime()
            guard now.isNumeric else { return false }
            let start = item.reversePlaybackEndTime.isNumeric ? max(item.reversePlaybackEndTime, .zero) : .zero
            var end = item.duration
            if item.forwardPlaybackEndTime.isNumeric, item.forwardPlaybackEndTime > .zero {
                end = end.isNumeric ? min(end, item.forwardPlaybackEndTime) : item.forwardPlaybackEndTime
            }
            guard end.isNumeric, end > start else { return false }
            return (now - start).seconds.magnitude < (end - now).seconds.magnitude
        }

        /// Why the item failed, once it has.
        var failed: String? { failure.reason.withLockAnnotated { $0 } }

        /// Whether the item has been left (its end or its failure), even if nobody has
        /// waited for it yet.
        var hasFinished: Bool { failure.finished.load(ordering: .acquiring) }

        /// Stops listening.
        func close() {
            for token in tokens.withLockAnnotated({ $0 }) { NotificationCenter.default.removeObserver(token.token) }
            statusWatch.withLockAnnotated { $0?.invalidate() }
        }
    }

    /// A session that plays `urls` in turn on `player` (from `start` into the first),
    /// sending a position event every `positionInterval` (nil: none). Every item sounds at
    /// speeds other than 1 as `pitchAlgorithm` says.
    public convenience init(player: AVPlayer, urls: [URL], start: CMTime? = nil,
                            positionInterval: CMTime? = PlaylistSession.defaultPositionInterval,
                            pitchAlgorithm: AVAudioTimePitchAlgorithm = .timeDomain) {
        self.init(player: player, urls: urls, start: start, positionInterval: positionInterval, pitchAlgorithm: pitchAlgorithm,
                  transport: LocalTransport(), channel: EventChannel())
    }

    init(player: AVPlayer, urls: [URL], start: CMTime?, positionInterval: CMTime?, pitchAlgorithm: AVAudioTimePitchAlgorithm,
         transport: any PlaybackTransport, channel: EventChannel) {
        self.player = player
        self.channel = channel
        self.urls = urls
        self.start = start
        self.positionInterval = positionInterval
        self.pitchAlgorithm = pitchAlgorithm
        self.transport = transport
    }

    /// Carries out `command`. Any thread; returns at once.
    public func send(_ command: SessionCommand) {
        switch command {
        case .play:
            if player.rate == 0 { transport.togglePause(on: player) }
        case .pause:
            if player.rate != 0 { transport.togglePause(on: player) }
        case .togglePause:
            transport.togglePause(on: player)
        case .seek(let time):
            guard time.isNumeric else { return channel.message(.warning, "seek needs a time") }
            transport.seek(to: time, on: player)
        case .skip(by: let interval):
            guard interval.isNumeric else { return channel.message(.warning, "seek needs a time") }
            transport.seek(to: player.currentTime() + interval, on: player)
        case .rate(let rate):
            guard rate.isFinite, rate != 0 else {
                return channel.message(.warning, "rate needs a number other than 0 (1 is normal speed, -1 backwards)")
            }
            if rate < 0, let item = player.currentItem, item.status == .readyToPlay, !item.canPlayReverse {
                return channel.message(.warning, "this item cannot play backwards (it has no sound, or cannot be sought)")
            }
            let magnitude = min(max(abs(rate), AVPlayer.slowestRate), AVPlayer.fastestRate)
            transport.changeRate(to: rate < 0 ? -magnitude : magnitude, on: player)
        case .next, .previous:
            let elapsed = player.currentTime()
            if command == .previous && elapsed.isNumeric && elapsed > Self.restartThreshold {
                transport.seek(to: .zero, on: player)
                return
            }
            // Past the last item there is nothing to go to: the command does nothing, rather
            // than ending the session (and, for a leader, the group's play).
            let count = urls.count
            let done: WakeSignal? = state.withLockAnnotated { state in
                let target = max(0, state.currentIndex + (command == .next ? 1 : -1))
                guard target < count else { return nil }
                state.jump = target
                return state.finished
            }
            done?.signal()
        case .step(by: let count):
            // Through the transport, so a group's rooms land on the same picture.
            guard player.rate == 0, let target = player.currentItem?.stepTarget(byCount: count) else { return }
            transport.seek(to: target, on: player)
        case .volume(let volume):
            guard volume.isFinite else { return channel.message(.warning, "volume needs a number from 0 to 1") }
            player.volume = min(max(volume, 0), 1)
        case .cycleAudio, .cycleSubtitles:
            cycle(command == .cycleAudio ? .audible : .legible)
        case .stop:
            let done: WakeSignal? = state.withLockAnnotated { state in
                state.stopRequested = true
                return state.finished
            }
            player.pause()
            done?.signal()
        }
    }

    /// Chooses the current item's next option for `characteristic` (for subtitles, none
    /// after the last), says which, and tells the transport (a leader's rooms follow).
    private func cycle(_ characteristic: AVMediaCharacteristic) {
        let what = characteristic == .audible ? "sound" : "subtitles"
        guard let item = player.currentItem, item.status == .readyToPlay,
              let group = item.asset.mediaSelectionGroup(forMediaCharacteristic: characteristic) else {
            return channel.message(.notice, "\(what): this item has no other")
        }
        let choices: [AVMediaSelectionOption?] = AVMediaSelectionGroup.playableMediaSelectionOptions(from: group.options)
            + (group.allowsEmptySelection ? [nil] : [])
        guard choices.count > 1 else { return channel.message(.notice, "\(what): this item has no other") }
        let current = item.currentMediaSelection.selectedMediaOption(in: group)
        let index = choices.firstIndex { $0 == current } ?? (choices.count - 1)
        let next = choices[(index + 1) % choices.count]
        item.select(next, in: group)
        transport.selectionChanged(on: player)
        channel.message(.notice, "\(what): \(next.map(Self.describe) ?? "off")")
    }

    /// How long a group's leader waits to learn whether the next item will follow on
    /// without a gap, in seconds: more than opening an item over a slow network takes.
    static let successorDecisionLimit = 10.0
    /// How often it looks, in microseconds.
    static let successorDecisionPoll: UInt32 = 20_000

    /// For a group: once the player knows whether `item` follows the current one without a
    /// gap, every room is told to queue it. One that joins on does so at the same sample in
    /// every room; one that does not (the item before has no sound) is started by
    /// each room's queue where the group's timeline puts the end of the item before, so
    /// every room starts it at the same instant. One that could not be opened, or not in
    /// time, leaves the queue, and is started at its turn as any item is, in every room
    /// together.
    private func offerNext(_ item: AVPlayerItem, url: URL, index: Int, in queue: AVQueuePlayer) {
        let transport = self.transport
        let player = self.player
        Thread {
            let deadline = Date().addingTimeInterval(Self.successorDecisionLimit)
            while Date() < deadline {
                guard queue.items().dropFirst().contains(where: { $0 === item }) else { return }
                if player.followsGaplessly(item) != nil {
                    if player.couldNotOpenToFollow(item) { queue.remove(item) } else { transport.nextQueued(url: url, index: index, on: player) }
                    return
                }
                usleep(Self.successorDecisionPoll)
            }
            if queue.items().dropFirst().contains(where: { $0 === item }) { queue.remove(item) }
        }.start()
    }

    /// An option as a status message names it: "French (fr)", "Commentary (de)".
    static func describe(_ option: AVMediaSelectionOption) -> String {
        let name = option.displayName(with: Locale(identifier: "en"))
        guard let tag = option.extendedLanguageTag, name.lowercased() != tag.lowercased() else { return name }
        return "\(name) (\(tag))"
    }

    /// The speed a slower or faster step moves `rate` to: the next of `rateSteps` down or
    /// up (from a rate between steps, the nearest step that way).
    public static func rate(after rate: Float, faster: Bool) -> Float {
        faster ? rateSteps.first { $0 > rate + 1e-3 } ?? rateSteps[rateSteps.count - 1]
            : rateSteps.last { $0 < rate - 1e-3 } ?? rateSteps[0]
    }

    /// Plays every item, blocking until the last has played or the session is stopped.
    /// Returns false if any item failed (the others still play).
    public func run() -> Bool {
        let channel = self.channel
        let player = self.player
        var positionObserver: Any?
        if let positionInterval {
            positionObserver = player.addPeriodicTimeObserver(forInterval: positionInterval, queue: callbacks) { time in
                channel.yield(.position(time, duration: player.currentItem?.duration ?? .indefinite, rate: player.defaultRate))
            }
        }
        let stateWatch = player.observe(\.timeControlStatus, options: [.initial, .new]) { player, _ in
            channel.yield(.state(Self.playbackState(of: player)))
        }
        let titleWatch = watchTitles(of: player, into: channel)
        var allGood = true
        var index = 0
        var first = true
        var jumped = true
        while index < urls.count, index >= 0 {
            if state.withLockAnnotated({ $0.stopRequested }) { break }
            let url = urls[index]
            let from = first ? start ?? .zero : .zero
            first = false
            state.withLockAnnotated { state in
                state.currentIndex = index
                state.jump = nil
            }
            let played = play(index: index, url: url, from: from, afterJump: jumped)
            if !played { allGood = false }
            let jump = state.withLockAnnotated { $0.jump }
            // After a jump or a failure (which pauses the player and does not advance its
            // queue) the next item is started afresh rather than followed on.
            jumped = jump != nil || !played
            index = jump ?? index + 1
        }
        if let queued = state.withLockAnnotated({ $0.queued }) {
            queued.watch.close()
            transport.left(index: queued.index)
        }
        transport.finish(on: player)
        if let positionObserver { player.removeTimeObserver(positionObserver) }
        stateWatch.invalidate()
        titleWatch.invalidate()
        player.close()
        channel.yield(.state(.stopped))
        channel.yield(.finished(succeeded: allGood))
        channel.finish()
        return allGood
    }

    static func playbackState(of player: AVPlayer) -> SessionPlaybackState {
        switch player.timeControlStatus {
        case .playing: return .playing
        case .paused: return .paused
        case .waitingToPlayAtSpecifiedRate: return .waiting
        }
    }

    /// Plays one item to its end (or until left). Returns false if it failed.
    ///
    /// Played locally on a queue player, the next item goes into its queue meanwhile, so it
    /// follows this one without a gap: when its turn comes it is already playing.
    private func play(index: Int, url: URL, from start: CMTime, afterJump: Bool) -> Bool {
        let queue = player as? AVQueuePlayer
        let (stopped, followed, dropped): (Bool, (url: URL, watch: ItemWatch)?, Int?) = state.withLockAnnotated { state in
            defer { state.queued = nil }
            guard let queued = state.queued else { return (state.stopRequested, nil, nil) }
            guard queued.index == index, !afterJump else {
                return (state.stopRequested, nil, queued.index == index ? nil : queued.index)
            }
            return (state.stopRequested, (queued.url, queued.watch), nil)
        }
        // An item queued to follow and jumped away from no longer needs what was made for it.
        if let dropped { transport.left(index: dropped) }
        let watch: ItemWatch
        let playing: URL
        if let followed, let queue, followed.watch.hasFinished || queue.items().contains(where: { $0 === followed.watch.item }) {
            // The item before ended and this one follows in the queue: joined on gaplessly
            // (already current, or even over already when it is short and the output fast),
            // or made current by the queue's own advance. Nothing to start; a group hears of it.
            watch = followed.watch
            playing = followed.url
            transport.followed(watch.item, index: index, url: playing, on: player)
        } else {
            followed?.watch.close()
            playing = stopped ? url : transport.playable(url, index: index)
            watch = ItemWatch(url: playing, pitchAlgorithm: pitchAlgorithm)
            if stopped || state.withLockAnnotated({ $0.stopRequested }) {
                watch.close()
                transport.left(index: index)
                return true
            }
            // A jump: whatever was queued after the item left goes.
            if let queue { queue.removeAllItems() }
            player.replaceCurrentItem(with: watch.item)
            transport.begin(watch.item, index: index, url: playing, from: start, on: player)
        }
        defer {
            watch.close()
            transport.left(index: index)
        }
        state.withLockAnnotated { $0.finished = watch.done }
        if state.withLockAnnotated({ $0.stopRequested }) { return true }
        channel.yield(.item(index: index, count: urls.count, url: url))
        if let queue, index + 1 < urls.count {
            let nextURL = transport.playable(urls[index + 1], index: index + 1)
            let next = ItemWatch(url: nextURL, pitchAlgorithm: pitchAlgorithm)
            state.withLockAnnotated { $0.queued = (index + 1, nextURL, next) }
            queue.insert(next.item, after: nil)
            if !(transport is LocalTransport) { offerNext(next.item, url: nextURL, index: index + 1, in: queue) }
        }
        watch.done.wait()
        if let failure = watch.failed {
            channel.message(.error, failure)
            return false
        }
        return true
    }
}
