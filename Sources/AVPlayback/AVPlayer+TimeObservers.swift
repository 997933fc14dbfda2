import Foundation
import MutexAnnotations
import Synchronization

extension AVPlayer {
    /// Calls `block` when playback passes any of `times` (item times) in normal play: the
    /// boundary observer with its times as `CMTime`s rather than `NSValue`s.
    public func addBoundaryTimeObserver(forTimes times: [CMTime], queue: DispatchQueue?,
                                        using block: @escaping @Sendable () -> Void) -> Any {
        addBoundaryObserver(times, queue: queue, block: block)
    }

    func addBoundaryObserver(_ times: [CMTime], queue: DispatchQueue?, block: @escaping @Sendable () -> Void) -> TimeObserver {
        addTimeObserver(TimeObserver(kind: .boundary(times: times.filter(\.isNumeric).sorted(), block: block), queue: queue ?? .main,
                                     fireNow: false))
    }

    func addTimeObserver(_ observer: TimeObserver) -> TimeObserver {
        state.withLockAnnotated { state in
            // The first firing, at the next tick, tells the time the observer was added at.
            if observer.fireNow { observer.fireNowTime = currentTimeLocked(&state) }
            state.observers.append(observer)
        }
        return observer
    }

    /// The first multiple of `interval` (positive) after `time`: exactly, in integers, where
    /// the quotient's floor in doubles came out one short at some multiples (0.3 / 0.1 is
    /// 2.9999999999999996), so an observer fired at 0.3 s fired again at the next tick.
    static func multiple(of interval: CMTime, after time: CMTime) -> CMTime {
        if time.isNumeric, time.timescale > 0, interval.value > 0, interval.timescale > 0,
           let whole = ExactArithmetic.multiplyDivide(Int128(time.value), Int128(interval.timescale),
                                                      Int128(time.timescale) * Int128(interval.value), rounding: .towardNegativeInfinity),
           case let (product, overflow) = (whole.value + 1).multipliedReportingOverflow(by: Int128(interval.value)),
           !overflow, let value = Int64(exactly: product) {
            return CMTime(value: value, timescale: interval.timescale)
        }
        // Beyond 64 bits of the interval's timescale: as near as a double gets.
        let steps = (time.seconds / interval.seconds).rounded(.down) + 1
        return CMTime(seconds: steps * interval.seconds, preferredTimescale: time.timescale > 0 ? max(time.timescale, interval.timescale) : 1_000_000)
    }

    /// The last multiple of `interval` (positive) before `time`: where a periodic observer
    /// fires next while the item plays backwards.
    static func multiple(of interval: CMTime, before time: CMTime) -> CMTime {
        if time.isNumeric, time.timescale > 0, interval.value > 0, interval.timescale > 0,
           let whole = ExactArithmetic.multiplyDivide(Int128(time.value), Int128(interval.timescale),
                                                      Int128(time.timescale) * Int128(interval.value), rounding: .towardPositiveInfinity),
           case let (product, overflow) = (whole.value - 1).multipliedReportingOverflow(by: Int128(interval.value)),
           !overflow, let value = Int64(exactly: product) {
            return CMTime(value: value, timescale: interval.timescale)
        }
        let steps = (time.seconds / interval.seconds).rounded(.up) - 1
        return CMTime(seconds: steps * interval.seconds, preferredTimescale: time.timescale > 0 ? max(time.timescale, interval.timescale) : 1_000_000)
    }

    /// The periodic observers start counting afresh: they are called at the next firing
    /// with the time then, and count their intervals from it. Applied by the monitor's tick
    /// that first reads the new item's time (`PlayerState.itemChanged`): applied when the
    /// item changed, a tick already under way with the old item's time would have used it.
    func restartPeriodicObservers(_ observers: [TimeObserver]) {
        for observer in observers {
            guard case .periodic = observer.kind else { continue }
            observer.nextFire = .invalid
            observer.fireNow = true
            observer.fireNowTime = nil
        }
    }

    /// On the event queue, each tick: fires the observers that are due. `jumpedTo` is where
    /// the time stood just after a jump since the last tick (nil: `time`). `reachedEnd`: the
    /// item played on to its end in this tick and stopped there (`time`), so the boundaries
    /// on the way are traversed although it no longer plays. `backwards`: the item plays at
    /// a negative rate, its time falling.
    func fireTimeObservers(now time: CMTime, playing: Bool, backwards: Bool = false, jumped: Bool, jumpedTo: CMTime? = nil,
                           previous: CMTime, observers: [TimeObserver], reachedEnd: Bool = false) {
        for observer in observers {
            switch observer.kind {
            case .periodic(let interval, let block):
                let due: Bool
                if jumped || observer.fireNow {
                    due = true
                } else if playing, interval.isNumeric, interval > .zero {
                    due = !observer.nextFire.isNumeric || (backwards ? time <= observer.nextFire : time >= observer.nextFire)
                } else {
                    due = false
                }
                guard due else { continue }
                // A jump (a seek, a start, a pause) reports where it landed, however late the
                // tick came after it; the adding, where it was made.
                let told = jumped ? jumpedTo ?? time : observer.fireNowTime ?? time
                observer.fireNow = false
                if interval.isNumeric, interval > .zero, interval.seconds > 0 {
                    observer.nextFire = backwards ? Self.multiple(of: interval, before: told) : Self.multiple(of: interval, after: told)
                }
                observer.deliver { block(told) }
            case .boundary(let times, let block):
                // A boundary is traversed in the direction the item plays: a small step back of
                // the time while playing forward (a correction to a master clock) crosses
                // nothing, or a boundary just passed would be told again.
                guard (playing && !jumped) || reachedEnd, previous.isNumeric, backwards ? time < previous : time > previous else { continue }
                let crossed = backwards ? times.contains { $0 >= time && $0 < previous } : times.contains { $0 > previous && $0 <= time }
                if crossed {
                    observer.deliver { block() }
                }
            }
        }
    }
}
