import Foundation

/// Raises the calling thread to real-time scheduling where the system allows it.
enum RealtimeScheduling {
    /// SCHED_FIFO priority for the render thread of an output that wants it (a card, the
    /// null device; `AudioOutput.wantsRealtimePriority`): above every ordinary thread, and
    /// below a sound server's own real-time threads (PulseAudio's default is 5). At 40, as
    /// it was, three followers' render threads on one machine pre-empted a server's mixing
    /// threads, and a render thread that woke without space in a loop held a core from
    /// them, so the server stopped serving every stream. A sound server's plugin is fed by
    /// an ordinary thread instead: see `ALSAOutput.wantsRealtimePriority`.
    static let renderPriority: Int32 = 4

    /// Best effort: without the privilege (no CAP_SYS_NICE, no rtkit) the thread stays at
    /// normal priority, which a 10 ms period tolerates on an idle machine.
    static func promoteCurrentThread() {
        var parameters = sched_param()
        parameters.sched_priority = renderPriority
        _ = pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameters)
    }
}
