import Dispatch
import Foundation
import Synchronization

/// Calls a handler on a dispatch queue once a deadline set with `schedule(after:)` passes;
/// setting a new deadline replaces the old one. Like `RepeatingTimer`, it is timed by a
/// thread of its own that sleeps for relative intervals, so it keeps working in a process
/// whose clock a tool such as libfaketime has moved.
///
/// A follower uses it to send each clock request when it is due: its regular tick is
/// 5 ms, coarser than the 2 ms polling of a join, and a request sent late on a tick is an
/// exchange lost to the estimate.
///
/// `cancel()` (or releasing the timer) stops it: no handler starts after `cancel()`
/// returns, though one already running finishes.
public final class DeadlineTimer: Sendable {
    private final class Shared: Sendable {
        let cancelled = Atomic<Bool>(false)
        /// The deadline in `HostTime.now()` nanoseconds, or `Int64.max` for none.
        let deadline = Atomic<Int64>(.max)
        let wake = WakeSignal()
    }

    private let shared = Shared()

    /// The longest the thread sleeps without a deadline: only bounds how late a cancel is
    /// noticed when no deadline wakes it (a cancel signals it anyway).
    static let idleWait: Duration = .milliseconds(100)

    /// A timer with no deadline yet.
    public init(label: String, queue: DispatchQueue, handler: @escaping @Sendable () -> Void) {
        let shared = self.shared
        let thread = Thread {
            // A clock request sent late is only an exchange taken later, but a join's 2 ms
            // pace is worth keeping to the µs the kernel can.
            WakeupPrecision.requestForCurrentThread()
            while !shared.cancelled.load(ordering: .acquiring) {
                let deadline = shared.deadline.load(ordering: .acquiring)
                let now = HostTime.now().nanoseconds
                if deadline == .max || now < deadline {
                    let wait = deadline == .max ? Self.idleWait : min(.nanoseconds(deadline - now), Self.idleWait)
                    shared.wake.wait(timeout: wait)
                    continue
                }
                // Fire once for this deadline; a newer one set meanwhile survives.
                guard shared.deadline.compareExchange(expected: deadline, desired: .max, ordering: .acquiringAndReleasing).exchanged else { continue }
                queue.async {
                    guard !shared.cancelled.load(ordering: .acquiring) else { return }
                    handler()
                }
            }
        }
        thread.name = label
        thread.start()
    }

    /// Fires the handler `delay` from now (at once if it is not positive), replacing any
    /// deadline not yet reached.
    public func schedule(after delay: Duration) {
        // `HostTime + Duration` saturates; a saturated deadline still counts as one.
        let deadline = (HostTime.now() + max(.zero, delay)).nanoseconds
        shared.deadline.store(min(deadline, .max - 1), ordering: .releasing)
        shared.wake.signal()
    }

    /// Stops the timer. Safe to call more than once and from the handler itself.
    public func cancel() {
        guard !shared.cancelled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        shared.wake.signal()
    }

    deinit { cancel() }
}
