internal import CKernelClock

/// A wake-up one thread waits on for at most a relative time and others signal: the
/// sleep of a worker thread that has nothing to do until more work comes or a moment passes.
///
/// `DispatchSemaphore.wait(timeout:)`, condition variables and Foundation's timed waits all
/// hand the kernel an absolute deadline read from a clock through the C library. When a tool
/// moves a process's clock by interposing on the C library (libfaketime, which runs a node of
/// a group on a clock seconds off and hundreds of ppm fast), the kernel reads that deadline
/// in its own time: seconds in the past, and the wait returns at once, so a thread that
/// polls spins on a core and starves every other process; or seconds in the future, and the
/// thread sleeps through its work. This wait is a futex system call with a relative timeout
/// the kernel measures itself, so it lasts what was asked on any clock.
///
/// Signals do not count: several before a wait wake it once. Waiters re-check whatever they
/// wait for, as with any condition. One thread waits at a time; any thread may signal,
/// including a real-time one (a single system call, no lock, no allocation).
// @unchecked: the one field is a pointer to the futex word, which the kernel must be given
// by address (so it cannot be a Swift Atomic); it is read and written only by the shim's
// atomic operations and the futex system call, and freed in deinit when no thread can wait.
public final class WakeSignal: @unchecked Sendable {
    // The futex word: 1 while a signal is pending. Allocated so its address is stable;
    // touched only through the shim's atomic operations.
    private let flag: UnsafeMutablePointer<UInt32>

    public init() {
        flag = .allocate(capacity: 1)
        flag.initialize(to: 0)
    }

    deinit { flag.deallocate() }

    /// Wakes the waiter, or the next wait if nobody waits now.
    public func signal() {
        chorus_wake_flag_signal(flag)
    }

    /// Waits until signalled or `timeout` has passed. Returns true if it took a signal,
    /// false on timeout (or an interrupted wait).
    @discardableResult
    public func wait(timeout: Duration) -> Bool {
        chorus_wake_flag_wait(flag, Int64(clamping: max(0, timeout.roundedNanoseconds))) != 0
    }

    /// Waits until signalled, however long that takes.
    public func wait() {
        while chorus_wake_flag_wait(flag, -1) == 0 {}
    }
}
