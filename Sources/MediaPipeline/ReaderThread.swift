import Foundation
import Synchronization

/// A reader's own thread (the sound's and the pictures' alike): started once, and waited
/// for when the reader stops.
final class ReaderThread: Sendable {
    private let name: String
    private let started = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    init(name: String) { self.name = name }

    /// Runs `body` on a new thread, the first time only.
    func start(_ body: @escaping @Sendable () -> Void) {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let thread = Thread { [finished] in
            body()
            finished.signal()
        }
        thread.name = name
        thread.qualityOfService = .userInitiated
        thread.start()
    }

    /// Waits for the thread to end, when it was started. Any number of times, from any
    /// number of threads: a reader taken over stops its demuxer itself, and its owner stops
    /// it again later.
    func waitForEnd() {
        guard started.load(ordering: .acquiring) else { return }
        finished.wait()
        // Signalled once by the thread's end: passed on to the next waiter.
        finished.signal()
    }
}

/// Gives `packet` to a decoder through `send`, taking its output with `receiveAll` whenever
/// it refuses input (EAGAIN) until that output is taken, so that no packet is lost; stops
/// retrying when `shouldGiveUp` says (a stop or a seek). Returns the last status.
func sendRetrying(_ send: () -> Int32, receiveAll: () -> Void, shouldGiveUp: () -> Bool) -> Int32 {
    var sent = send()
    while sent == FFmpegCall.again && !shouldGiveUp() {
        receiveAll()
        sent = send()
    }
    return sent
}
