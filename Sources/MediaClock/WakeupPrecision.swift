internal import CKernelClock

/// How precisely the kernel wakes the calling thread from a timed sleep.
public enum WakeupPrecision {
    /// Timer slack asked for by threads whose wake-up time is itself the measurement or
    /// the thing simulated: 1 µs, below a sample at 48 kHz. An ordinary thread's default is
    /// 50 µs, and a relay delivering "5 ms ± 2 ms" with it adds 0 to 50 µs of its own (plus
    /// scheduling) to every datagram, blurring the path's floor that a clock estimate reads.
    public static let preciseSlack: Duration = .microseconds(1)

    /// Asks the kernel to end this thread's timed sleeps within `slack` of their deadline.
    /// Returns false if the kernel refused (the thread keeps its slack).
    @discardableResult
    public static func requestForCurrentThread(slack: Duration = preciseSlack) -> Bool {
        let nanoseconds = max(1, slack.roundedNanoseconds)
        return chorus_set_timer_slack(UInt64(clamping: nanoseconds)) == 0
    }

    /// The calling thread's timer slack, or nil if the kernel will not say.
    public static var currentThreadSlack: Duration? {
        let nanoseconds = chorus_get_timer_slack()
        return nanoseconds < 0 ? nil : .nanoseconds(nanoseconds)
    }
}
