import Foundation
import MediaClock
import MutexAnnotations
import Synchronization

/// Plays one item over and over through a queue player: Apple's `AVPlayerLooper`.
///
/// The looper puts copies of the template item (`loopingPlayerItems`) into the queue, and puts
/// each one back at the end of the queue once it has played, so the queue never runs dry.
/// With a time range, each copy plays only that part of the item (from its start to its
/// end, `forwardPlaybackEndTime`).
// @unchecked: the mutable state sits behind `state` (a Mutex), the observer tokens behind
// `observerLock`; the player and items are thread-safe classes.
public final class AVPlayerLooper: AVKeyValueObservable, @unchecked Sendable {
    /// Whether the looper is looping.
    public enum Status: Int, Sendable {
        case unknown, ready, failed, cancelled
    }

    /// Copies of the template item in the queue at once: one playing, one next, one spare,
    /// so a copy that has just ended has time to go back to the end of the queue.
    static let copies = 3
    /// How long a copy that has ended may still be the current item before it is put back
    /// (the queue moves on right after the end is announced).
    static let requeueTimeout: Duration = .seconds(2)

    private struct State {
        var status = Status.unknown
        var loopCount = 0
        var error: (any Error)?
    }

    private let player: AVQueuePlayer
    private let range: CMTimeRange
    private let state = Mutex(State())
    private let requeueing = DispatchQueue(label: "chorus.looper")
    /// The notification observers' tokens (not Sendable, so under a lock of their own).
    private let observerLock = NSLock()
    private var observers: [any NSObjectProtocol] = []

    /// The copies of the template item the looper plays.
    public let loopingPlayerItems: [AVPlayerItem]
    /// Where `status`, `error` and `loopCount` report their changes, for `observe(_:options:changeHandler:)`.
    public let observationRegistry = ObservationRegistry()

    /// Loops `templateItem` (or its `timeRange`, when valid) on `player`. The template
    /// itself is not played: copies of it are (`AVPlayerItem.copy()`, with its settings).
    /// As on Apple's platforms, `status` is `.ready` at once when the template's asset has
    /// its duration loaded, and stays `.unknown` until it has otherwise (`.failed` when it
    /// cannot be loaded).
    public init(player: AVQueuePlayer, templateItem: AVPlayerItem, timeRange: CMTimeRange = .invalid) {
        self.player = player
        range = timeRange
        loopingPlayerItems = (0..<Self.copies).compactMap { _ in templateItem.copy() as? AVPlayerItem }
        var tokens: [any NSObjectProtocol] = []
        for item in loopingPlayerItems {
            prepare(item)
            tokens.append(NotificationCenter.default.addObserver(
                forName: AVPlayerItem.didPlayToEndTimeNotification, object: item, queue: nil) { [weak self] _ in
                    self?.played(item)
                })
            tokens.append(NotificationCenter.default.addObserver(
                forName: AVPlayerItem.failedToPlayToEndTimeNotification, object: item, queue: nil) { [weak self] note in
                    self?.failed(note.userInfo?[AVPlayerItemFailedToPlayToEndTimeErrorKey] as? any Error)
                })
            player.insert(item, after: nil)
        }
        observerLock.withLock { observers = tokens }
        // Ready once the duration is known: at once when it was loaded already.
        templateItem.asset.requestInfo { [weak self] result in
            guard let self else { return }
            state.withLockAnnotated { state in
                guard state.status == .unknown else { return }
                switch result {
                case .success: state.status = .ready
                case .failure(let error):
                    state.status = .failed
                    state.error = error.avFoundationError
                }
            }
            observationRegistry.poke()
        }
    }

    deinit { disableLooping() }

    /// Whether the looper is looping, has failed, or was stopped.
    public var status: Status { state.withLockAnnotated { $0.status } }
    /// Why the looper failed, when it did.
    public var error: (any Error)? { state.withLockAnnotated { $0.error } }
    /// How many times the item (or its range) has played to its end.
    public var loopCount: Int { state.withLockAnnotated { $0.loopCount } }

    /// Stops looping: the copy playing plays to its end, and no copy goes back into the queue.
    public func disableLooping() {
        state.withLockAnnotated { state in
            if state.status == .ready || state.status == .unknown { state.status = .cancelled }
        }
        observationRegistry.poke()
        let tokens = observerLock.withLock { defer { observers = [] }; return observers }
        for token in tokens { NotificationCenter.default.removeObserver(token) }
        for item in loopingPlayerItems where item !== player.currentItem { player.remove(item) }
    }

    /// A copy's start and end as the range asks.
    private func prepare(_ item: AVPlayerItem) {
        guard range.isValid, range.start.isNumeric else { return }
        item.startTime = range.start
        let end = range.start + range.duration
        if range.duration.isNumeric, end.isNumeric { item.forwardPlaybackEndTime = end }
    }

    private func played(_ item: AVPlayerItem) {
        let looping = state.withLockAnnotated { state -> Bool in
            guard state.status == .ready || state.status == .unknown else { return false }
            state.loopCount += 1
            return true
        }
        guard looping else { return }
        observationRegistry.poke()
        // The queue moves on from the copy right after announcing its end: it goes back once
        // it is no longer the current item.
        requeueing.async { [weak self] in
            guard let self else { return }
            let deadline = HostTime.now() + Self.requeueTimeout
            while player.currentItem === item && HostTime.now() < deadline { usleep(2_000) }
            guard state.withLockAnnotated({ $0.status == .ready || $0.status == .unknown }) else { return }
            prepare(item)
            if player.canInsert(item, after: nil) { player.insert(item, after: nil) }
        }
    }

    private func failed(_ error: (any Error)?) {
        state.withLockAnnotated { state in
            state.status = .failed
            state.error = error
        }
        observationRegistry.poke()
    }
}
