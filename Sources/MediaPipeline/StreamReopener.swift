import Foundation
import MediaClock
import Synchronization
import MutexAnnotations

/// Replaces an output's dead stream with a fresh one on a thread of its own, so that the
/// render thread never waits for a device to close or open.
///
/// Through ALSA's `pulse` plugin, closing and opening a stream wait on the sound server with
/// no time limit; done on the render thread, a server that stopped answering stopped the
/// room for good. Here the render thread hands the dead stream over (`retire`) and goes on
/// without one, taking the new stream when it is ready (`takeReady`). Both calls try the
/// lock once and never wait, allocate or log: a busy lock is tried again next period.
///
/// The reopening thread closes each retired stream on a thread of its own, which may wait
/// forever without holding anything the new stream needs, and meanwhile opens the new one,
/// trying again every `retryInterval` while that fails (a card's device opens only once its
/// old stream has closed). `shutDown` never waits either: a stream that opens after it, or
/// was ready and never taken, is closed by the reopener, so none is left to play.
///
/// Contract: `retire` and `takeReady` from the render thread only; `shutDown` from the
/// output's `close`, once the render thread has stopped. `open` and `close` run on the
/// reopener's threads.
final class StreamReopener<Stream: Sendable>: Sendable {
    /// What the render thread and the reopening thread hand each other.
    private struct Exchange {
        /// A dead stream the reopening thread has yet to close.
        var retired: Stream?
        /// A fresh stream the render thread has yet to take.
        var ready: Stream?
        /// Whether a fresh stream is wanted and not yet made.
        var isWanted = false
        var isShutDown = false
    }

    /// How long the reopening thread waits after a failed open before trying again.
    let retryInterval: Duration
    private let exchange = Mutex(Exchange())
    private let wake = WakeSignal()
    private let open: @Sendable () throws -> Stream
    private let close: @Sendable (Stream) -> Void
    private let closerName: String
    private let failures = Atomic<Int>(0)
    private let opened = Atomic<Int>(0)

    /// Starts the reopening thread, named `label`, which waits until a stream is retired.
    /// `open` makes a fresh stream (throwing when it cannot: it is tried again after
    /// `retryInterval`); `close` releases one, and may never return.
    init(label: String, retryInterval: Duration,
         open: @escaping @Sendable () throws -> Stream, close: @escaping @Sendable (Stream) -> Void) {
        self.retryInterval = retryInterval
        self.open = open
        self.close = close
        closerName = "\(label).close"
        let thread = Thread { [self] in run() }
        thread.name = label
        thread.start()
    }

    /// Opens that failed so far. Any thread.
    var failedOpens: Int { failures.load(ordering: .relaxed) }
    /// Fresh streams opened so far (taken or not). Any thread.
    var openedStreams: Int { opened.load(ordering: .relaxed) }

    /// Hands over a stream that stopped and asks for a fresh one. Render thread; never
    /// waits. False when the lock was busy or a retired stream is still being handed over:
    /// keep the stream and call again.
    func retire(_ stream: Stream) -> Bool {
        let taken = exchange.withLockIfAvailableAnnotated { exchange -> Bool in
            guard !exchange.isShutDown, exchange.retired == nil else { return false }
            exchange.retired = stream
            exchange.isWanted = true
            return true
        } ?? false
        if taken { wake.signal() }
        return taken
    }

    /// The fresh stream, once it is open. Render thread; never waits: nil while none is
    /// ready or the lock is busy.
    func takeReady() -> Stream? {
        exchange.withLockIfAvailableAnnotated { exchange -> Stream? in
            defer { exchange.ready = nil }
            return exchange.ready
        } ?? nil
    }

    /// Stops reopening, and closes (on threads of their own) any stream retired or made
    /// ready and not taken, and `leftover`, a stream the render thread had not yet handed
    /// over. Never waits for a device: an open under way is closed when it returns.
    func shutDown(closing leftover: Stream? = nil) {
        let (retired, ready) = exchange.withLockAnnotated { exchange -> (Stream?, Stream?) in
            defer {
                exchange.isShutDown = true
                exchange.retired = nil
                exchange.ready = nil
            }
            return (exchange.retired, exchange.ready)
        }
        wake.signal()
        for stream in [retired, ready, leftover].compactMap({ $0 }) { closeDetached(stream) }
    }

    // MARK: - The reopening thread

    private func run() {
        while true {
            let (retired, wantsOpen, isShutDown) = exchange.withLockAnnotated { exchange -> (Stream?, Bool, Bool) in
                defer { exchange.retired = nil }
                return (exchange.retired, exchange.isWanted && exchange.ready == nil, exchange.isShutDown)
            }
            if let retired { closeDetached(retired) }
            if isShutDown { return }
            guard wantsOpen else {
                wake.wait()
                continue
            }
            let fresh: Stream
            do {
                fresh = try open()
            } catch {
                failures.add(1, ordering: .relaxed)
                waitBeforeRetrying()
                continue
            }
            opened.add(1, ordering: .relaxed)
            let kept = exchange.withLockAnnotated { exchange -> Bool in
                guard !exchange.isShutDown else { return false }
                exchange.ready = fresh
                exchange.isWanted = false
                return true
            }
            if !kept {
                // Shut down while it opened: nothing will take it, and it must not be left open.
                close(fresh)
                return
            }
        }
    }

    /// Waits `retryInterval`, or until a shutdown. A signal left from the retire that asked
    /// for the open must not cut the wait short.
    private func waitBeforeRetrying() {
        let until = HostTime.now() + retryInterval
        while !exchange.withLockAnnotated({ $0.isShutDown }) {
            let now = HostTime.now()
            guard now < until else { return }
            wake.wait(timeout: until - now)
        }
    }

    /// Closes `stream` on a thread of its own: a close may wait on a device (or a sound
    /// server) forever, and must hold nothing else up meanwhile.
    private func closeDetached(_ stream: Stream) {
        let close = self.close
        let thread = Thread { close(stream) }
        thread.name = closerName
        thread.start()
    }
}
