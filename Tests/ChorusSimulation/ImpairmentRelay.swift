import Foundation
import GroupSync
import MediaClock
import Synchronization
import MutexAnnotations

/// A user-space UDP relay that impairs traffic like netem (which this kernel lacks):
/// delay, jitter, loss, reordering and duplication, from a seeded generator.
///
/// Clients send to `listenEndpoint`; datagrams go on to the target from a second socket,
/// and the target's replies come back to the last client heard from. Both directions get
/// the same impairment. Memory is bounded by `maximumQueuedDatagrams`; beyond it
/// datagrams are dropped and counted as `overflowed`. For tests and benchmarks only.
public final class ImpairmentRelay: Sendable {
    /// How to impair each datagram (each direction independently).
    public struct Impairment: Sendable {
        /// How jitter is drawn.
        public enum Distribution: Sendable {
            /// Uniform in ±jitter.
            case uniform
            /// Normal with standard deviation `jitter`.
            case normal
        }

        /// Base one-way delay.
        public var delay: Duration
        /// Jitter added to the delay (never making it negative).
        public var jitter: Duration
        /// How jitter is drawn.
        public var distribution: Distribution
        /// Probability in [0, 1] that a datagram is dropped.
        public var lossProbability: Double
        /// Probability that a datagram is held back by `reorderDelay`, so later ones overtake it.
        public var reorderProbability: Double
        /// Extra delay of a reordered datagram.
        public var reorderDelay: Duration
        /// Probability that a datagram is delivered twice.
        public var duplicateProbability: Double
        /// Seed of the generator: the same seed gives the same decisions.
        public var seed: UInt64
        /// When set, a datagram is released only on a tick of the relay's timer, this far
        /// apart, at the first tick at or after it falls due: a relay that wakes
        /// periodically, a Wi-Fi link that aggregates frames, a router forwarding on a timer.
        /// The ticks are on the relay's clock, at `tickPhase` past multiples of the tick.
        public var releaseTick: Duration?
        /// Where the ticks fall: host times `tickPhase + k · releaseTick`. `nil` takes the
        /// moment the relay starts, a phase unrelated to either end's.
        public var tickPhase: HostTime?

        /// An impairment; the default is a perfect link.
        public init(
            delay: Duration = .zero, jitter: Duration = .zero, distribution: Distribution = .uniform,
            lossProbability: Double = 0, reorderProbability: Double = 0, reorderDelay: Duration = .milliseconds(5),
            duplicateProbability: Double = 0, seed: UInt64 = 1, releaseTick: Duration? = nil, tickPhase: HostTime? = nil
        ) {
            self.delay = delay
            self.jitter = jitter
            self.distribution = distribution
            self.lossProbability = lossProbability
            self.reorderProbability = reorderProbability
            self.reorderDelay = reorderDelay
            self.duplicateProbability = duplicateProbability
            self.seed = seed
            self.releaseTick = releaseTick
            self.tickPhase = tickPhase
        }
    }

    /// What the relay did.
    public struct Counters: Sendable, Equatable {
        /// Datagrams delivered (duplicates included).
        public var forwarded = 0
        /// Datagrams dropped by `lossProbability`.
        public var lost = 0
        /// Datagrams held back to be overtaken.
        public var reordered = 0
        /// Extra copies delivered.
        public var duplicated = 0
        /// Datagrams dropped because the queue was full.
        public var overflowed = 0
    }

    /// Datagrams held at once: bounds memory (at most 64 KiB each) in a flood.
    public static let maximumQueuedDatagrams = 4096
    /// The longest the delivery thread sleeps without looking at the queue (a new datagram
    /// wakes it sooner): only bounds how late a stop is noticed.
    static let idleWait: Duration = .milliseconds(10)

    private struct Pending {
        var due: HostTime
        var bytes: [UInt8]
        var towardTarget: Bool
    }

    private struct State {
        var queue: [Pending] = []
        var client: UDPEndpoint?
        var generator: SeededGenerator
        var counters = Counters()
        var stopped = false
    }

    private let front: UDPSocket
    private let back: UDPSocket
    private let target: UDPEndpoint
    private let impairment: Impairment
    /// The instant the release ticks count from (see `Impairment.tickPhase`).
    private let tickOrigin: HostTime
    private let state: Mutex<State>
    private let finished = DispatchSemaphore(value: 0)
    /// Signalled on every enqueue, so the delivery thread recomputes its next wake-up.
    private let arrivals = WakeSignal()

    /// Where clients send.
    public var listenEndpoint: UDPEndpoint { front.localEndpoint }

    /// What the relay has done so far.
    public var counters: Counters { state.withLockAnnotated { $0.counters } }

    /// Starts relaying from `listen` (port 0 for an ephemeral port) to `target`.
    public init(listeningOn listen: UDPEndpoint, forwardingTo target: UDPEndpoint, impairment: Impairment) throws(UDPSocket.SocketError) {
        front = try UDPSocket(bindingTo: listen)
        let backBind = target.isIPv6 ? UDPEndpoint.anyIPv6(port: 0) : UDPEndpoint.anyIPv4(port: 0)
        do {
            back = try UDPSocket(bindingTo: backBind)
        } catch {
            front.close()
            throw error
        }
        self.target = target
        self.impairment = impairment
        tickOrigin = impairment.tickPhase ?? .now()
        state = Mutex(State(generator: SeededGenerator(seed: impairment.seed)))
        // Delays count from the kernel's receive stamp, like netem's from the packet's
        // arrival, not from whenever the receive thread got round to it.
        front.startReceiving(name: "chorus.relay.front") { [self] datagram in
            state.withLockAnnotated { $0.client = datagram.source }
            enqueue(datagram.bytes, arrivedAt: datagram.receivedAt, towardTarget: true)
        }
        back.startReceiving(name: "chorus.relay.back") { [self] datagram in
            enqueue(datagram.bytes, arrivedAt: datagram.receivedAt, towardTarget: false)
        }
        let thread = Thread { [self] in
            // A delivery's lateness is delay the path was not asked for: wake on time.
            WakeupPrecision.requestForCurrentThread()
            deliveryLoop()
            finished.signal()
        }
        thread.name = "chorus.relay.deliver"
        thread.start()
    }

    /// Stops relaying, waits for the threads and closes the sockets. Idempotent.
    public func stop() {
        let wasStopped = state.withLockAnnotated { current -> Bool in
            defer { current.stopped = true }
            return current.stopped
        }
        guard !wasStopped else { return }
        arrivals.signal()
        finished.wait()
        front.close()
        back.close()
    }

    deinit {
        stop()
    }

    private func enqueue(_ bytes: [UInt8], arrivedAt now: HostTime, towardTarget: Bool) {
        defer { arrivals.signal() }
        state.withLockAnnotated { current in
            guard !current.stopped else { return }
            if current.generator.unit() < impairment.lossProbability {
                current.counters.lost += 1
                return
            }
            var copies = 1
            if current.generator.unit() < impairment.duplicateProbability {
                copies = 2
                current.counters.duplicated += 1
            }
            for _ in 0..<copies {
                var delay = impairment.delay + jitterSample(&current.generator)
                if current.generator.unit() < impairment.reorderProbability {
                    delay += impairment.reorderDelay
                    current.counters.reordered += 1
                }
                guard current.queue.count < Self.maximumQueuedDatagrams else {
                    current.counters.overflowed += 1
                    return
                }
                current.queue.append(Pending(due: release(at: now + max(delay, .zero)), bytes: bytes, towardTarget: towardTarget))
            }
        }
    }

    /// When a datagram due at `due` leaves: then, or on the first tick at or after it.
    private func release(at due: HostTime) -> HostTime {
        Self.release(at: due, tick: impairment.releaseTick, origin: tickOrigin)
    }

    /// The first instant `origin + k · tick` (k any integer) at or after `due`; `due`
    /// itself without a tick.
    public static func release(at due: HostTime, tick: Duration?, origin: HostTime) -> HostTime {
        guard let tick, tick > .zero else { return due }
        let period = Int128(tick.components.seconds) * 1_000_000_000 + Int128(tick.components.attoseconds / 1_000_000_000)
        guard period > 0 else { return due }
        let since = Int128(due.nanoseconds) - Int128(origin.nanoseconds)
        // Rounded up, for negative as well as positive distances from the origin.
        var ticks = since / period
        if ticks * period < since { ticks += 1 }
        return HostTime(nanoseconds: Int64(Int128(origin.nanoseconds) + ticks * period))
    }

    private func jitterSample(_ generator: inout SeededGenerator) -> Duration {
        guard impairment.jitter > .zero else { return .zero }
        let scale: Double = switch impairment.distribution {
        case .uniform: generator.unit() * 2 - 1
        case .normal: generator.normal()
        }
        return impairment.jitter * scale
    }

    private func deliveryLoop() {
        while true {
            let now = HostTime.now()
            let (due, client, stopped, next) = state.withLockAnnotated { current -> ([Pending], UDPEndpoint?, Bool, HostTime?) in
                var ready: [Pending] = []
                current.queue.removeAll { pending in
                    guard pending.due <= now else { return false }
                    ready.append(pending)
                    return true
                }
                current.counters.forwarded += ready.count
                return (ready.sorted { $0.due < $1.due }, current.client, current.stopped, current.queue.map(\.due).min())
            }
            if stopped { return }
            for pending in due {
                if pending.towardTarget {
                    try? back.send(pending.bytes, to: target)
                } else if let client {
                    try? front.send(pending.bytes, to: client)
                }
            }
            guard due.isEmpty else { continue }
            // Sleep until the next datagram is due, or a new one arrives.
            let wait = min(next.map { $0 - now } ?? Self.idleWait, Self.idleWait)
            if wait > .zero {
                arrivals.wait(timeout: wait)
            }
        }
    }
}
