import AVPlayback
import Foundation
import GroupSync
import Logging
import Synchronization

/// A group follower: slaves a clock to the leader's, opens the item the leader announces
/// over HTTP (already while its clock converges), and plays it on that clock so the same
/// sample is heard everywhere at once. When the leader goes quiet it holds over on its last
/// estimate, then fades out and waits, and follows again when the leader returns.
public final class FollowerSession: @unchecked Sendable {
    // @unchecked: every `var` below is touched only on `queue` (the core's serial queue),
    // or before `run` starts the threads that reach it; the rest is immutable or Sendable.

    /// How often the core is ticked: clock polls, keepalives, silence detection.
    static let tickInterval: Duration = .milliseconds(5)
    /// How long the fade-out lasts when the leader is gone: long enough not to click, short
    /// enough to be clearly deliberate.
    static let fadeDuration: Duration = .milliseconds(1000)
    /// Steps of the fade.
    static let fadeSteps = 20
    /// Silence from the leader, from the first Hello on, after which the follower says so:
    /// on a LAN the Welcome comes within milliseconds and a lost Hello is sent again within
    /// a tenth of a second, so three seconds of nothing means a wrong address, port, group
    /// or key, which the leader's own drops cannot tell this side.
    static let unansweredWarning: Duration = .seconds(3)

    /// The player the group's items play on.
    public let player: AVPlayer
    /// What the session reports; read it from one consumer.
    public var events: AsyncStream<SessionEvent> { channel.stream }

    let clock: NodeClock
    /// How the items this room plays sound at speeds other than 1.
    private let pitchAlgorithm: AVAudioTimePitchAlgorithm
    let leaderClock: LeaderClock
    private let channel = EventChannel()
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
    /// The volume asked for: what a rejoin restores after a fade.
    private var volume: Float
    private let statisticsInterval: Duration?
    private var statsTimer: RepeatingTimer?
    /// Steps the fade-out while the leader is gone.
    private var fadeTimer: RepeatingTimer?
    /// Steps of the fade-out taken, and the volume it started from.
    private var fadeStep = 0
    private var fadeStart: Float = 1
    private let done = WakeSignal()
    /// Where every clock exchange and its estimate are written.
    private let clockLog: ClockLog?
    /// When the follower started asking for the leader, and whether it has said that no
    /// answer came.
    private var startedAt: HostTime?
    private var saidUnanswered = false

    /// A follower of the leader at `leader`, known to it as `name`, whose sound path after
    /// the output device delays it by `latencyOffset` (it plays that much earlier). Clock
    /// figures are sent every `statisticsInterval` (nil: never); every clock exchange is
    /// written to `clockLogPath` as CSV when given.
    public init(configuration: NodeConfiguration, leader: UDPEndpoint, name: String, latencyOffset: Duration = .zero,
                volume: Float = 1, statisticsInterval: Duration? = nil, clockLogPath: String? = nil) throws(SessionError) {
        clock = configuration.clock
        pitchAlgorithm = configuration.pitchAlgorithm
        do {
            clockLog = try clockLogPath.map { try ClockLog(path: $0) }
        } catch {
            throw SessionError("cannot write the clock log: \(error)")
        }
        leaderEndpoint = leader
        let local: UDPEndpoint = leader.isIPv6 ? .anyIPv6(port: 0) : .anyIPv4(port: 0)
        do {
            socket = try UDPSocket(bindingTo: local)
        } catch {
            throw SessionError("cannot open a UDP socket: \(error)")
        }
        do {
            core = try FollowerCore(group: configuration.group, leader: leader, followerName: String(name.prefix(64)),
                                    latencyOffsetMicroseconds: Int32(clamping: latencyOffset.components.seconds * 1_000_000
                                                                     + latencyOffset.components.attoseconds / 1_000_000_000_000),
                                    authenticator: configuration.authenticator)
        } catch {
            socket.close()
            throw SessionError("\(error)")
        }
        leaderClock = LeaderClock(hostClock: clock.clock)
        let queuePlayer = try configuration.makePlayer()
        // An item ends paused, as the group's State says, unless the leader names the one
        // that follows it without a gap (`queueNext`).
        queuePlayer.actionAtItemEnd = .pause
        player = queuePlayer
        player.masterClock = leaderClock
        player.latencyCompensation = latencyOffset
        self.volume = min(max(volume, 0), 1)
        player.volume = self.volume
        self.statisticsInterval = statisticsInterval
    }

    /// Carries out `command`. A follower plays what its leader plays: it takes `volume` and
    /// `stop`, and answers the rest with a warning event. Any thread; returns at once.
    public func send(_ command: SessionCommand) {
        switch command {
        case .volume(let volume):
            guard volume.isFinite else { return channel.message(.warning, "volume needs a number from 0 to 1") }
            queue.async { [self] in
                self.volume = min(max(volume, 0), 1)
                // During a fade-out the fade goes on; the new volume is restored on rejoining.
                if fadeTimer == nil || core.phase != .waiting { player.volume = self.volume }
            }
        case .stop:
            done.signal()
        case .play, .pause, .togglePause, .seek, .skip, .rate, .next, .previous, .step, .cycleAudio, .cycleSubtitles:
            channel.message(.warning, "a follower plays what its leader plays: \(command) is for the leader")
        }
    }

    /// Joins and follows until stopped.
    public func run() {
        let mapping = clock.mapping
        // Before the first datagram can reach the queue: handling one arms this timer.
        queue.sync {
            pollTimer = DeadlineTimer(label: "chorus.follow.poll", queue: queue) { [weak self] in
                self?.handle(.tick)
            }
        }
        socket.startReceiving { [weak self] datagram in
            guard let self else { return }
            let receivedAt = mapping(datagram.receivedAt)
            queue.async { self.handle(.received(datagram.bytes, from: datagram.source, receivedAt: receivedAt)) }
        }
        queue.sync {
            handle(.start)
            timer = RepeatingTimer(label: "chorus.follow.tick", interval: Self.tickInterval, queue: queue) { [weak self] in
                self?.handle(.tick)
            }
            if let statisticsInterval {
                statsTimer = RepeatingTimer(label: "chorus.follow.stats", interval: statisticsInterval, queue: queue) { [weak self] in
                    self?.postStatistics()
                }
            }
        }
        let titleWatch = watchTitles(of: player, into: channel)
        done.wait()
        titleWatch.invalidate()
        queue.sync {
            handle(.stop)
            timer?.cancel()
            pollTimer?.cancel()
            statsTimer?.cancel()
            fadeTimer?.cancel()
        }
        socket.close()
        player.close()
        queue.sync { clockLog?.close() }
        channel.yield(.state(.stopped))
        channel.yield(.finished(succeeded: true))
        channel.finish()
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
                channel.message(.warning, "leader \(leaderEndpoint) is quiet: holding over on the last clock estimate")
            case .fadeOutAndWait:
                channel.message(.warning, "leader \(leaderEndpoint) is gone: fading out and waiting for it")
                fadeOut()
            case .rejoin(let newLeader):
                channel.message(.notice, newLeader ? "a new leader answered at \(leaderEndpoint): resynchronizing" : "leader \(leaderEndpoint) is back")
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
            (player as? AVQueuePlayer)?.removeAllItems()
            player.replaceCurrentItem(with: nil)
            currentURL = nil
            return
        }
        switch open(state) {
        case .unresolved:
            appliedSequence = nil
            return
        case .joiningOn:
            // Queued here too, and heard from the end of the current item without a gap: the
            // State applies once it is current (a repeat comes every state period).
            appliedSequence = nil
            return
        case .open:
            break
        }
        queueNext(state)
        // The leader's choice of sound and subtitles (a new sound is read again from where
        // the group's timeline stands).
        player.currentItem?.chooseStreams(audio: state.audioStream.map(Int.init), subtitles: state.subtitleStream.map(Int.init))
        if state.rate == 0 || state.ended {
            player.pause()
            player.seek(to: state.anchorItemTime)
        } else if state.rate < 0, let item = player.currentItem, item.status == .readyToPlay, !item.canPlayReverse {
            // Playing on forwards would take this room away from the group: it waits where
            // the turn was made, and says why.
            channel.message(.warning, "the leader plays backwards, which this room's copy of the item cannot (it has no sound, or cannot be sought): holding at \(state.anchorItemTime.seconds) s")
            player.pause()
            player.seek(to: state.anchorItemTime)
        } else {
            let leaderTime = CMTime(value: state.anchorLeaderTime.nanoseconds, timescale: 1_000_000_000)
            let host = leaderClock.hostTime(forClockTime: leaderTime) ?? clock.now()
            // Bounded here, in double precision: a rate from the wire too small or too large
            // for a Float must still play at the nearer bound, not pause or be refused.
            let magnitude = Float(min(max(abs(state.rate), Double(AVPlayer.slowestRate)), Double(AVPlayer.fastestRate)))
            let rate = state.rate < 0 ? -magnitude : magnitude
            player.setRate(rate, time: state.anchorItemTime, atHostTime: host.cmTime)
        }
    }

    /// Where `open` left a State's item.
    enum Opening { case open, unresolved, joiningOn }

    /// The URL a State's item string names: absolute, or against the Welcome's base; nil
    /// until it can be resolved (before the Welcome there is no base, and it is on its way).
    private func resolve(_ itemURL: String) -> URL? {
        if itemURL.hasPrefix("/") { return baseURL.flatMap { URL(string: itemURL, relativeTo: $0)?.absoluteURL } }
        return URL(string: itemURL)
    }

    /// The URL `item` plays.
    private static func url(of item: AVPlayerItem?) -> URL? { (item?.asset as? AVURLAsset)?.url }

    /// Opens `state`'s item unless it is open already. `.joiningOn` when the State says the
    /// item follows the one before without a gap, and here it is queued to follow the
    /// current item and that has not yet been heard;
    /// `.unresolved` when its URL cannot be resolved yet.
    private func open(_ state: GroupState) -> Opening {
        guard let url = resolve(state.itemURL) else {
            if let baseURL { channel.message(.error, "cannot resolve the item \(state.itemURL) against \(baseURL.absoluteString)") }
            return .unresolved
        }
        let playing = Self.url(of: player.currentItem)
        if url == playing {
            // Open already, or joined on from the item before it.
            if url != currentURL { watch(player.currentItem, url: url) }
            return .open
        }
        if state.joinsPrevious, let queue = player as? AVQueuePlayer, playing != nil, playing == currentURL,
           Self.url(of: queue.items().dropFirst().first) == url, queue.actionAtItemEnd == .advance {
            return .joiningOn
        }
        let item = makeItem(url)
        // Chosen before it opens, so it opens with the group's sound.
        item.chooseStreams(audio: state.audioStream.map(Int.init), subtitles: state.subtitleStream.map(Int.init))
        // A live item opened after its times jumped counts as the leader's does.
        item.countsAcrossSplices(state.splices)
        (player as? AVQueuePlayer)?.removeAllItems()
        player.replaceCurrentItem(with: item)
        watch(item, url: url)
        return .open
    }

    /// An item of `url` as this room plays it (its pitch kept as the room chose).
    private func makeItem(_ url: URL) -> AVPlayerItem {
        let item = AVPlayerItem(url: url)
        item.audioTimePitchAlgorithm = pitchAlgorithm
        return item
    }

    /// Says why `item` cannot play (an unreachable leader, a bad output device) instead of
    /// waiting in silence.
    private func watch(_ item: AVPlayerItem?, url: URL) {
        let channel = self.channel
        itemWatch = item?.observe(\.status) { item, _ in
            if item.status == .failed {
                channel.message(.error, "cannot play \(url.absoluteString): \(item.error.map { $0.localizedDescription } ?? "unknown error")")
            }
        }
        currentURL = url
    }

    /// Queues the item the leader has open to follow the current one without a gap, so
    /// that it joins on here at the same sample; none named, nothing is queued and the item
    /// ends paused.
    private func queueNext(_ state: GroupState) {
        guard let queue = player as? AVQueuePlayer, queue.currentItem != nil else { return }
        let wanted = state.nextItemURL.isEmpty || state.ended ? nil : resolve(state.nextItemURL)
        let waiting = Array(queue.items().dropFirst())
        if let wanted {
            if waiting.count != 1 || Self.url(of: waiting.first) != wanted {
                for item in waiting { queue.remove(item) }
                queue.insert(makeItem(wanted), after: nil)
            }
            queue.actionAtItemEnd = .advance
        } else {
            queue.actionAtItemEnd = .pause
            for item in waiting { queue.remove(item) }
        }
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

    /// Says which senders' datagrams were dropped and why, at most every
    /// `DropReport.interval` unless `finally` (what is left when the node stops).
    private func reportDrops(now: HostTime, finally: Bool = false) {
        for line in core.dropReportLines(now: now, finally: finally) { channel.message(.warning, line) }
    }

    /// Says once when the leader has not answered for `unansweredWarning` since the start.
    private func reportUnanswered(now: HostTime) {
        guard !saidUnanswered, core.phase == .joining, let startedAt, now - startedAt >= Self.unansweredWarning else { return }
        saidUnanswered = true
        channel.message(.warning, "no answer from a leader at \(leaderEndpoint) for \(Self.unansweredWarning.components.seconds) s: is it running and listening there, with the same group and key as this follower? Still asking.")
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

    private func postStatistics() { channel.yield(.clock(makeStatistics())) }

    private func makeStatistics() -> ClockStatistics {
        let estimate = core.estimator.estimate
        let render = player.renderStatus
        let counters = core.dropCounters
        return ClockStatistics(
            offset: estimate?.offset, offsetUncertainty: estimate?.uncertainty,
            ratePPM: estimate?.ratePPM, rateUncertaintyPPM: estimate?.rateUncertaintyPPM,
            roundTrip: estimate?.bestRoundTrip,
            outputError: render.timelineError, correctionPPM: render.correctionPPM,
            hardResyncs: render.hardResyncs, underruns: render.timelineBreaks, streamRestarts: render.streamRestarts,
            phase: "\(core.phase)",
            droppedDatagrams: counters.total, dropBreakdown: counters.breakdown)
    }
}
