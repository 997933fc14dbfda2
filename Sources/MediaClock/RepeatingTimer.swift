import Dispatch
import Foundation
import Synchronization

/// Calls a handler on a dispatch queue every `interval` of host time, timed by a thread of
/// its own that sleeps for relative intervals.
///
/// Dispatch's timer sources (and `asyncAfter`) hand the kernel an absolute CLOCK_MONOTONIC
/// deadline read through the C library. Under a tool that moves a process's clock
/// (libfaketime, which runs a node on a clock seconds off and hundreds of ppm fast), that
/// deadline is in another time than the kernel's, and such a timer never fires: a follower's
/// clock polls, a leader's announcements and a player's time observers would all stop. A
/// relative sleep (`WakeSignal`) needs no agreement between the two clocks, and the
/// deadlines themselves are kept on host time, so ticks do not drift.
///
/// Ticks that find the previous handler still queued are merged into it, as a dispatch
/// timer's are, so a busy queue is never flooded. `cancel()` (or releasing the timer) stops
/// it: no handler starts after `cancel()` returns, though one already running finishes.
public final class RepeatingTimer: Sendable {
    private final class Shared: Sendable {
        let cancelled = Atomic<Bool>(false)
        let pending = Atomic<Bool>(false)
        let wake = WakeSignal()
    }

    private let shared = Shared()

    /// Starts ticking: the first call comes `delay` after now (one interval if nil), then
    /// one every `interval`.
    public init(label: String, interval: Duration, delay: Duration? = nil, queue: DispatchQueue,
                handler: @escaping @Sendable () -> Void) {
        let shared = self.shared
        let step = max(interval, Self.minimumInterval)
        let first = HostTime.now() + (delay ?? step)
        let thread = Thread {
            var next = first
            while !shared.cancelled.load(ordering: .acquiring) {
                let now = HostTime.now()
                if now < next {
                    shared.wake.wait(timeout: next - now)
                    continue
                }
                if !shared.pending.exchange(true, ordering: .acquiringAndReleasing) {
                    queue.async {
                        shared.pending.store(false, ordering: .releasing)
                        guard !shared.cancelled.load(ordering: .acquiring) else { return }
                        handler()
                    }
                }
                next += step
                // Behind by more than a tick (the machine stalled): skip the missed ticks.
                if next < now { next = now + step }
            }
        }
        thread.name = label
        thread.start()
    }

    /// The shortest interval taken: a tenth of a millisecond, beyond which a thread's wake-up
    /// latency is the tick.
    static let minimumInterval: Duration = .microseconds(100)

    /// Stops the timer. Safe to call more than once and from the handler itself.
    public func cancel() {
        guard !shared.cancelled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        shared.wake.signal()
    }

    deinit { cancel() }
}
