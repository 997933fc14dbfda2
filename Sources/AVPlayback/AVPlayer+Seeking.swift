import Foundation
import MutexAnnotations
import Synchronization
import MediaPipeline

extension AVPlayer {
    /// Seeks to `time` exactly.
    public func seek(to time: CMTime) {
        seek(to: time, toleranceBefore: .zero, toleranceAfter: .zero, completionHandler: { _ in })
    }

    /// Seeks to `time` exactly and calls `completionHandler` on the event queue: `true` when
    /// the seek finished, `false` when a later seek (or an item change) superseded it.
    public func seek(to time: CMTime, completionHandler: @escaping @Sendable (Bool) -> Void) {
        seek(to: time, toleranceBefore: .zero, toleranceAfter: .zero, completionHandler: completionHandler)
    }

    /// Seeks to a time within `[time - toleranceBefore, time + toleranceAfter]`.
    public func seek(to time: CMTime, toleranceBefore: CMTime, toleranceAfter: CMTime) {
        seek(to: time, toleranceBefore: toleranceBefore, toleranceAfter: toleranceAfter, completionHandler: { _ in })
    }

    /// Seeks to a time within `[time - toleranceBefore, time + toleranceAfter]` and calls
    /// `completionHandler` as `seek(to:completionHandler:)` does.
    ///
    /// Audio is decoded from before the target and trimmed, so every seek lands on the
    /// exact sample, which lies within any tolerance; zero tolerances cost nothing extra.
    /// Times before 0 land at 0 and times past the end at the end.
    public func seek(to time: CMTime, toleranceBefore: CMTime, toleranceAfter: CMTime,
                     completionHandler: @escaping @Sendable (Bool) -> Void) {
        guard time.isNumeric else {
            eventQueue.async { completionHandler(false) }
            return
        }
        var effects = Effects()
        state.withLockAnnotated { state in
            var target = max(time, .zero)
            if let duration = state.item?.duration, duration.isNumeric { target = min(target, duration) }
            // A live stream reaches only what its playlist still lists.
            if let range = state.item?.liveSeekableRange { target = min(max(target, range.start), range.end) }
            if let pending = state.pendingSeek { effects.completions.append { pending.completion(false) } }
            state.serial += 1
            state.resetRunLocked()
            state.positioned = true
            state.pausedAtEnd = false
            state.position = target
            state.scheduledHost = nil
            state.masterAnchor = nil
            state.endHandledSerial = nil
            state.pendingSeek = PendingSeek(serial: state.serial, completion: completionHandler)
            if state.itemLoaded, let format = state.format {
                seekReaderLocked(&state, toItemFrame: frames(of: target, format: format), format: format)
                syncSuccessorsLocked(&state)
                effects.after.append { [weak self] in self?.refreshSuccessors() }
            } else if let item = state.item {
                item.startTime = target
            } else {
                let pending = state.pendingSeek
                state.pendingSeek = nil
                effects.completions.append { pending?.completion(false) }
            }
            applyModeLocked(&state, flush: true)
            state.timeJumped = true
            if state.rate != 0 { setTimeControlLocked(&state, .waitingToPlayAtSpecifiedRate, reason: .toMinimizeStalls, &effects) }
            if let item = state.item {
                effects.notifications.append { NotificationCenter.default.post(name: AVPlayerItem.timeJumpedNotification, object: item) }
            }
        }
        effects.after.append { [weak self] in self?.updateTimebase() }
        effects.run(on: eventQueue)
    }

    /// Seeks to the moment `date` in a stream with dates; media here has none, so the
    /// handler is called with `false`.
    public func seek(to date: Date, completionHandler: @escaping @Sendable (Bool) -> Void = { _ in }) {
        eventQueue.async { completionHandler(false) }
    }

    /// Cancels the seek in flight; its handler gets `false`.
    public func cancelPendingSeeks() {
        let pending: PendingSeek? = state.withLockAnnotated { state in defer { state.pendingSeek = nil }; return state.pendingSeek }
        if let pending { eventQueue.async { pending.completion(false) } }
    }

    /// Loads data at the current time so that `play` starts without delay. Only while
    /// paused and ready; otherwise the handler gets `false`. The handler runs on the event
    /// queue with `true` once data is there.
    public func preroll(atRate rate: Float, completionHandler: (@Sendable (Bool) -> Void)? = nil) {
        let handler = completionHandler ?? { _ in }
        let immediate: Bool? = state.withLockAnnotated { state in
            guard state.rate == 0, state.itemLoaded else { return false }
            if state.readySerial >= state.serial { return true }
            state.pendingPrerolls.append(handler)
            return nil
        }
        if let immediate { eventQueue.async { handler(immediate) } }
    }

    /// Cancels prerolls in flight; their handlers get `false`.
    public func cancelPendingPrerolls() {
        let pending = state.withLockAnnotated { state in defer { state.pendingPrerolls = [] }; return state.pendingPrerolls }
        if !pending.isEmpty { eventQueue.async { for handler in pending { handler(false) } } }
    }
}
