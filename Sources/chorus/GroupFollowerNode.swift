import ArgumentParser
import AVPlayback
import Foundation
import GroupSync

/// A group follower: slaves a clock to the leader's, opens the item the leader announces
/// over HTTP, and plays it on that clock so the same sample is heard everywhere at once.
// @unchecked: the core and the item, poll and fade state (the fade timer too) are the
// chorus.follow queue's alone, reached from other threads only through that queue; the poll
// timer is made before the socket can queue a datagram, and `timer` and `statsTimer` belong
// to the thread running `run`.
final class GroupFollowerNode: @unchecked Sendable {
    /// How often the core is ticked: clock polls, keepalives, silence detection.
    static let tickInterval: Duration = .milliseconds(5)
    /// How long the fade-out lasts when the leader is gone: long enough not to click, short
    /// enough to be clearly deliberate.
    static let fadeDuration: Duration = .milliseconds(1000)
    /// Steps of the fade.
    static let fadeSteps = 20

    let clock: NodeClock
    let leaderClock: LeaderClock
    let player: AVPlayer
    private let socket: UDPSocket
    private let leaderEndpoint: UDPEndpoint
    private let queue = DispatchQueue(label: "chorus.follow")
    private var core: FollowerCore
    private var timer: RepeatingTimer?
    /// Wakes the core when a clock request is due between ticks (the join's fast poll).
    private var pollTimer: DeadlineTimer?
    /// The poll deadline `pollTimer` is set for, so it is re-armed only when it moves.
    private var armedPoll: HostTime?
    private var baseURL: URL?
    private var currentURL: URL?
    private var appliedSequence: UInt64?
    /// The state whose item was last opened ahead of the clock (`openAhead`).
    private var openedAheadSequence: UInt64?
    private var itemWatch: NSKeyValueObservation?
    private let volume: Float
    private var statsTimer: RepeatingTimer?
    /// Steps the fade-out while the leader is gone.
    private var fadeTimer: RepeatingTimer?
    /// Steps of the fade-out taken, and the volume it started from.
    private var fadeStep = 0
    private var fadeStart: Float = 1
    private let done = DispatchSemaphore(value: 0)
    /// Where every clock exchange and its estimate are written (`--clock-log`).
    private let clockLog: ClockLog?
    /// When the follower started asking for the leader, and whether it has said that no
    /// answer came.
    private var startedAt: HostTime?
    private var saidUnanswered = false
    /// Silence from the leader, from the first Hello on, after which the follower says so:
    /// on a LAN the Welcome comes within milliseconds and a lost Hello is sent again within
    /// a tenth of a second, so three seconds of nothing means a wrong address, port, group
    /// or key, which the leader's own drops cannot tell this side.
    static let unansweredWarning: Duration = .seconds(3)

    init(leader: UDPEndpoint, name: String, latencyOffset: Duration, volume: Float, clockLog: String?, options: NodeOptions) throws {
        clock = options.nodeClock()
        clock.announce()
        do {
            self.clockLog = try clockLog.map { try ClockLog(path: $0) }
        } catch {
            throw ValidationError("cannot write the clock log: \(error)")
        }
        let authenticator = try options.authenticator()
        leaderEndpoint = leader
        let local: UDPEndpoint = leader.isIPv6 ? .anyIPv6(port: 0) : .anyIPv4(port: 0)
        do {
            socket = try UDPSocket(bindingTo: local)
        } catch {
            throw ValidationError("cannot open a UDP socket: \(error)")
        }
        core = try FollowerCore(group: options.group, leader: leader, followerName: name,
                                latencyOffsetMicroseconds: Int32(clamping: latencyOffset.components.seconds * 1_000_000
                                                                 + latencyOffset.components.attoseconds / 1_000_000_000_000),
                                authenticator: authenticator)
        leaderClock = LeaderClock(hostClock: clock.clock)
        player = AVPlayer(playerItem: nil, output: try options.outputSpec(), hostClock: clock.cmClock,
                          hostMapping: clock.mapping, capture: try options.makeCapture())
        player.automaticallyWaitsToMinimizeStalling = false
        player.masterClock = leaderClock
        player.latencyCompensation = latencyOffset
        player.volume = volume
        self.volume = volume
    }

    /// Joins and follows until stopped.
    func run(stats: Bool) {
        let mapping = clock.mapping
        // Before the first datagram can reach the queue: handling one arms this timer.
        pollTimer = DeadlineTimer(label: "chorus.follow.poll", queue: queue) { [weak self] in
            self?.handle(.tick)
        }
        socket.startReceiving { [weak self] datagram in
            guard let self else { return }
            let receivedAt = mapping(datagram.receivedAt)
            queue.async { self.handle(.received(datagram.bytes, from: datagram.source, receivedAt: receivedAt)) }
        }
        queue.sync { handle(.start) }
        let timer = RepeatingTimer(label: "chorus.follow.tick", interval: Self.tickInterval, queue: queue) { [weak self] in
            self?.handle(.tick)
        }
        self.timer = timer
        if stats {
            statsTimer = RepeatingTimer(label: "chorus.follow.stats", interval: .seconds(1), queue: queue) { [weak self] in
                self?.printStats()
            }
        }
        for sig in [SIGINT, SIGTERM] { signal(sig, SIG_IGN) }
        let sources = [SIGINT, SIGTERM].map { sig -> DispatchSourceSignal in
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { [weak self] in self?.done.signal() }
            source.resume()
            return source
        }
        done.wait()
        sources.forEach { $0.cancel() }
        queue.sync { handle(.stop) }
        timer.cancel()
        pollTimer?.cancel()
        statsTimer?.cancel()
        queue.sync { fadeTimer?.cancel() }
        socket.close()
        player.close()
        clockLog?.close()
    }

    private func handle(_ event: FollowerCore.Event) {
        defer { armPollTimer() }
        defer { openAhead() }
        var transmitted: [(requestID: UInt32, at: HostTime)] = []
        defer {
            // After the actions: the core is told when each clock request really left.
            for stamp in transmitted { _ = core.handle(.transmitted(requestID: stamp.requestID, at: stamp.at), at: clock.now()) }
        }
        let now = clock.now()
        let actions = core.handle(event, at: now)
        switch event {
        case .tick:
            reportDrops(now: now)
            reportUnanswered(now: now)
        case .start:
            startedAt = now
        case .stop:
            reportDrops(now: now, finally: true)
        default:
            break
        }
        for action in actions {
            switch action {
            case .send(let datagram):
                if case .clockRequest(let request) = datagram.message.payload {
                    if let left = try? socket.sendStamped(datagram.bytes, to: datagram.destination) {
                        transmitted.append((request.requestID, clock.mapping(left)))
                    }
                } else {
                    try? socket.send(datagram.bytes, to: datagram.destination)
                }
            case .joined(let welcome):
                let first = baseURL == nil
                baseURL = resolveBase(welcome.baseURL)
                // A State that came (with a playable clock estimate) before the Welcome waited
                // for its base URL: play it now rather than at the State's next repeat.
                if first, baseURL != nil, core.playableEstimate != nil, let state = core.state { apply(state) }
            case .updateClock(let estimate):
                leaderClock.update(estimate)
                if let clockLog, let sample = core.lastSample { clockLog.write(sample, estimate) }
            case .apply(let state, let estimate):
                leaderClock.update(estimate)
                apply(state)
            case .holdover:
                warn("leader \(leaderEndpoint) is quiet: holding over on the last clock estimate")
            case .fadeOutAndWait:
                warn("leader \(leaderEndpoint) is gone: fading out and waiting for it")
                fadeOut()
            case .rejoin(let newLeader):
                warn(newLeader ? "a new leader answered at \(leaderEndpoint): resynchronizing" : "leader \(leaderEndpoint) is back")
                player.volume = volume
                appliedSequence = nil
                if let state = core.state { apply(state) }
            }
        }
    }

    /// Sets the poll timer for the core's next clock request when that moved. The delay is
    /// taken on this node's clock; a simulated clock's skew (ppm) makes no difference to
    /// a wait of milliseconds.
    private func armPollTimer() {
        guard let due = core.nextPollAt, due != armedPoll else { return }
        armedPoll = due
        pollTimer?.schedule(after: due - clock.now())
    }

    /// The leader's base URL, with an unspecified host replaced by the leader's address.
    private func resolveBase(_ text: String) -> URL? {
        guard var components = URLComponents(string: text) else { return nil }
        if components.host == nil || components.host == "0.0.0.0" || components.host == "::" || components.host == "" {
            components.host = leaderEndpoint.description.split(separator: ":").dropLast().joined(separator: ":")
                .trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        }
        return components.url
    }

    /// Plays `state`: opens its item if new, then aligns to its anchor on the leader's clock.
    private func apply(_ state: GroupState) {
        guard state.sequence != appliedSequence else { return }
        appliedSequence = state.sequence
        if state.stopped {
            player.replaceCurrentItem(with: nil)
            currentURL = nil
            return
        }
        guard open(state) else {
            appliedSequence = nil
            return
        }
        if state.rate == 0 || state.ended {
            player.pause()
            player.seek(to: state.anchorItemTime)
        } else {
            let leaderTime = CMTime(value: state.anchorLeaderTime.nanoseconds, timescale: 1_000_000_000)
            let host = leaderClock.hostTime(forClockTime: leaderTime) ?? clock.now()
            // Bounded here, in double precision: a rate from the wire too small or too large
            // for a Float must still play at the nearer bound, not pause or be refused.
            let rate = state.rate > 0 ? Float(min(max(state.rate, Double(AVPlayer.slowestRate)), Double(AVPlayer.fastestRate)))
                : Float(state.rate)
            player.setRate(rate, time: state.anchorItemTime, atHostTime: host.cmTime)
        }
    }

    /// Opens `state`'s item unless it is open already; false when its URL cannot be
    /// resolved yet (before the Welcome there is no base, and it is on its way).
    private func open(_ state: GroupState) -> Bool {
        let url: URL?
        if state.itemURL.hasPrefix("/") {
            url = baseURL.flatMap { URL(string: state.itemURL, relativeTo: $0)?.absoluteURL }
        } else {
            url = URL(string: state.itemURL)
        }
        guard let url else {
            if let baseURL { warn("cannot resolve the item \(state.itemURL) against \(baseURL.absoluteString)") }
            return false
        }
        if url != currentURL {
            let item = AVPlayerItem(url: url)
            // Say why an item cannot play (an unreachable leader, a bad output device)
            // instead of waiting in silence.
            itemWatch = item.observe(\.status) { item, _ in
                if item.status == .failed {
                    warn("cannot play \(url.absoluteString): \(item.error.map { "\($0)" } ?? "unknown error")")
                }
            }
            player.replaceCurrentItem(with: item)
            currentURL = url
        }
        return true
    }

    /// While the clock is not yet sure enough to play on, opens the announced item (and with
    /// it the output device) so that both are ready when it is: the item's probe over HTTP
    /// and, through a sound server, the tenths of a second its timing reports take to give
    /// the device's rate then overlap the clock's convergence instead of following it.
    /// Nothing plays until the state is applied.
    private func openAhead() {
        guard core.playableEstimate == nil, let state = core.state, !state.stopped, baseURL != nil,
              state.sequence != openedAheadSequence else { return }
        openedAheadSequence = state.sequence
        _ = open(state)
    }

    /// Says in the log which senders' datagrams were dropped and why, at most every
    /// `DropReport.interval` unless `finally` (what is left when the node stops).
    private func reportDrops(now: HostTime, finally: Bool = false) {
        for line in core.dropReportLines(now: now, finally: finally) { warn(line) }
    }

    /// Says once when the leader has not answered for `unansweredWarning` since the start.
    private func reportUnanswered(now: HostTime) {
        guard !saidUnanswered, core.phase == .joining, let startedAt, now - startedAt >= Self.unansweredWarning else { return }
        saidUnanswered = true
        warn("no answer from a leader at \(leaderEndpoint) for \(Self.unansweredWarning.components.seconds) s: is it running and listening there, with the same --group and --key-file as this follower? Still asking.")
    }

    private func fadeOut() {
        fadeStart = player.volume
        fadeStep = 0
        fadeTimer?.cancel()
        fadeTimer = RepeatingTimer(label: "chorus.follow.fade", interval: Self.fadeDuration / Self.fadeSteps, queue: queue) { [weak self] in
            guard let self else { return }
            fadeStep += 1
            guard core.phase == .waiting, fadeStep <= Self.fadeSteps else {
                fadeTimer?.cancel()
                return
            }
            player.volume = fadeStart * Float(Self.fadeSteps - fadeStep) / Float(Self.fadeSteps)
            if fadeStep == Self.fadeSteps {
                player.pause()
                fadeTimer?.cancel()
            }
        }
    }

    private func printStats() {
        let estimate = core.estimator.estimate
        let render = player.renderStatus
        let offset = estimate.map { String(format: "%+.6f s", Double($0.offset.components.seconds) + Double($0.offset.components.attoseconds) / 1e18) } ?? "-"
        let uncertainty = estimate.map { String(format: "±%.1f µs", Double($0.uncertainty.components.attoseconds) / 1e12 + Double($0.uncertainty.components.seconds) * 1e6) } ?? ""
        let rate = estimate.map { String(format: "%+.2f ppm ±%.2f", $0.ratePPM, $0.rateUncertaintyPPM) } ?? "-"
        let rtt = estimate.map { String(format: "%.3f ms", Double($0.bestRoundTrip.components.attoseconds) / 1e15 + Double($0.bestRoundTrip.components.seconds) * 1e3) } ?? "-"
        let counters = core.dropCounters
        let drops = counters.total == 0 ? "0" : "\(counters.total) (\(counters.breakdown))"
        let figures = String(format: "error %+.1f µs correction %+.1f ppm", render.timelineError * 1e6, render.correctionPPM)
        warn("offset \(offset) \(uncertainty) rate \(rate) rtt \(rtt) \(figures) resyncs \(render.hardResyncs) underruns \(render.timelineBreaks) phase \(core.phase) drops \(drops)")
    }
}
