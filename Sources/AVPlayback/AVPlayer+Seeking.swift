import Foundation
import MutexAnnotations
import Synchronization
import MediaPipeline

extension AVPlayer {
    /// The work of every seek (`seek(to:toleranceBefore:toleranceAfter:completionHandler:)`,
    /// declared in the class body so that subclasses can override it).
    func startSeek(to time: CMTime, completionHandler: @escaping @Sendable (Bool) -> Void) {
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
            interruptPrerollsLocked(&state, &effects)
            state.serial += 1
            state.resetRunLocked()
            state.positioned = true
            state.pausedAtEnd = false
            // A play started at once does not carry its haste past a seek.
            state.startsImmediately = false
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
            state.jumpedTo = currentTimeLocked(&state)
            if state.rate != 0 { setTimeControlLocked(&state, .waitingToPlayAtSpecifiedRate, reason: .toMinimizeStalls, &effects) }
            if let item = state.item {
                effects.notifications.append { NotificationCenter.default.post(name: AVPlayerItem.timeJumpedNotification, object: item) }
            }
        }
        effects.after.append { [weak self] in self?.updateTimebase() }
        effects.run(on: eventQueue)
    }
}
