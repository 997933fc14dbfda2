import Foundation

/// Raises the calling thread to real-time scheduling where the system allows it.
enum RealtimeScheduling {
    /// SCHED_FIFO priority for the render thread: above ordinary threads, below the
    /// kernel's own interrupt threads (which sit at 50).
    static let renderPriority: Int32 = 40

    /// Best effort: without the privilege (no CAP_SYS_NICE, no rtkit) the thread stays at
    /// normal priority, which a 10 ms period tolerates on an idle machine.
    static func promoteCurrentThread() {
        var parameters = sched_param()
        parameters.sched_priority = renderPriority
        _ = pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameters)
    }
}
