import Foundation
import MutexAnnotations
import Synchronization

extension AVPlayer {
    /// Whether the player can play at all.
    public enum Status: Int, Sendable {
        case unknown
        /// The output is open (or will open with the first item).
        case readyToPlay
        /// The output could not be opened; `error` says why.
        case failed
    }

    /// What the player is doing now.
    public enum TimeControlStatus: Int, Sendable {
        /// Not playing: the rate is 0.
        case paused
        /// The rate is not 0 but nothing is heard yet: data is loading, or a scheduled
        /// start time has not come.
        case waitingToPlayAtSpecifiedRate
        /// Media is being presented.
        case playing
    }

    /// What happens when the current item ends.
    public enum ActionAtItemEnd: Int, Sendable {
        /// Move to the next item (queue players only).
        case advance
        /// Pause at the end.
        case pause
        /// Do nothing: the rate stays as it was and time stays at the end.
        case none
    }

    /// Why the player is waiting.
    public struct WaitingReason: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Data is being loaded so playback will not stall.
        public static let toMinimizeStalls = WaitingReason(rawValue: "AVPlayerWaitingToMinimizeStallsReason")
        /// The player is deciding whether data arrives fast enough.
        public static let evaluatingBufferingRate = WaitingReason(rawValue: "AVPlayerWaitingWhileEvaluatingBufferingRateReason")
        /// There is no item, or the item failed.
        public static let noItemToPlay = WaitingReason(rawValue: "AVPlayerWaitingWithNoItemToPlayReason")
        /// Waiting for the other participants of coordinated playback; never, as this
        /// player has none (a group's rooms follow their leader's clock instead).
        public static let waitingForCoordinatedPlayback = WaitingReason(rawValue: "AVPlayerWaitingForCoordinatedPlaybackReason")
        /// Waiting while an interstitial event plays; never, as this player schedules none.
        public static let interstitialEvent = WaitingReason(rawValue: "AVPlayerWaitingDuringInterstitialEventReason")
        /// A start was scheduled with `setRate(_:time:atHostTime:)` and its host time has
        /// not come yet. (A Chorus addition.)
        public static let waitingForScheduledStart = WaitingReason(rawValue: "ChorusWaitingForScheduledStartReason")
    }
}

/// A registered time observer; pass it to `removeTimeObserver(_:)`.
final class TimeObserver: Sendable {
    enum Kind {
        case periodic(interval: CMTime, block: @Sendable (CMTime) -> Void)
        case boundary(times: [CMTime], block: @Sendable () -> Void)
    }

    private struct State {
        var removed = false
        var running = false
        /// Periodic: the next item time at which to fire.
        var nextFire = CMTime.invalid
        /// Fire at the next tick whatever the time (start, stop, jump).
        var fireNow: Bool
        /// The time to give that firing instead of the tick's, when it was asked for at a
        /// known time (the observer's adding): a monitor held up past a play that followed
        /// would otherwise report the adding as made after playback began.
        var fireNowTime: CMTime?
    }

    let kind: Kind
    let queue: DispatchQueue
    private let state: Mutex<State>

    init(kind: Kind, queue: DispatchQueue, fireNow: Bool = true) {
        self.kind = kind
        self.queue = queue
        state = Mutex(State(fireNow: fireNow))
    }

    /// Periodic: the next item time at which to fire (read and set on the event queue).
    var nextFire: CMTime {
        get { state.withLockAnnotated { $0.nextFire } }
        set { state.withLockAnnotated { $0.nextFire = newValue } }
    }

    /// Fire at the next tick whatever the time (start, stop, jump).
    var fireNow: Bool {
        get { state.withLockAnnotated { $0.fireNow } }
        set { state.withLockAnnotated { $0.fireNow = newValue; if !newValue { $0.fireNowTime = nil } } }
    }

    /// The time the next tick's firing gives, when it was fixed as it was asked for.
    var fireNowTime: CMTime? {
        get { state.withLockAnnotated { $0.fireNowTime } }
        set { state.withLockAnnotated { $0.fireNowTime = newValue } }
    }

    /// No invocation begins after this returns. One already running finishes, as on Apple's
    /// players: waiting for it here deadlocked a caller its block was waiting for.
    func remove() {
        state.withLockAnnotated { $0.removed = true }
    }

    /// Runs `work` on the observer's queue unless the observer was removed or its previous
    /// invocation is still running.
    func deliver(_ work: @escaping @Sendable () -> Void) {
        let go: Bool = state.withLockAnnotated { current in
            if current.removed || current.running { return false }
            current.running = true
            return true
        }
        guard go else { return }
        queue.async { [self] in
            if state.withLockAnnotated({ !$0.removed }) { work() }
            state.withLockAnnotated { $0.running = false }
        }
    }
}
