import ArgumentParser
import AVPlayback
import Foundation
import GroupSync
import MediaServer

/// A group leader: answers clock requests, announces the group's playback state, serves
/// the items over HTTP, and plays them itself through the same clock-held path as any
/// follower (its player's master clock is its own host clock).
// @unchecked: the core is the chorus.lead queue's alone, `published` is read and written
// under `lock`, and the timer is set and cancelled by the one thread that starts and stops
// the node.
final class GroupLeaderNode: @unchecked Sendable {
    /// How often the core is ticked: its state period and follower timeouts are multiples.
    static let tickInterval: Duration = .milliseconds(10)

    let clock: NodeClock
    let player: AVPlayer
    let http: MediaHTTPServer
    private let socket: UDPSocket
    private let queue = DispatchQueue(label: "chorus.lead")
    private let lock = NSLock()
    private var core: LeaderCore
    private var timer: RepeatingTimer?
    private var published: [Int: String] = [:]
    private let verbose: Bool

    init(listen: UDPEndpoint, httpPort: UInt16, options: NodeOptions, verbose: Bool) throws {
        clock = options.nodeClock()
        clock.announce()
        let authenticator = try options.authenticator()
        let host: String
        switch listen.address {
        case .ipv4: host = listen.description.split(separator: ":").first.map(String.init) ?? "0.0.0.0"
        case .ipv6: host = "0.0.0.0"
        }
        http = try MediaHTTPServer(address: host, port: httpPort)
        do {
            socket = try UDPSocket(bindingTo: listen)
        } catch {
            throw ValidationError("cannot listen on \(listen): \(error)")
        }
        core = try LeaderCore(group: options.group, baseURL: "http://\(host):\(http.port)", authenticator: authenticator)
        player = AVPlayer(playerItem: nil, output: try options.outputSpec(), hostClock: clock.cmClock,
                          hostMapping: clock.mapping, capture: try options.makeCapture())
        player.automaticallyWaitsToMinimizeStalling = false
        // The leader's own output is held on the leader's clock, like every follower's.
        player.masterClock = clock.cmClock
        self.verbose = verbose
    }

    /// Starts answering the network.
    func start() {
        let mapping = clock.mapping
        socket.startReceiving { [weak self] datagram in
            guard let self else { return }
            let receivedAt = mapping(datagram.receivedAt)
            queue.async { self.handle(.received(datagram.bytes, from: datagram.source, receivedAt: receivedAt)) }
        }
        timer = RepeatingTimer(label: "chorus.lead.tick", interval: Self.tickInterval, queue: queue) { [weak self] in
            self?.handle(.tick)
        }
    }

    /// Serves `url` (a local file) to followers; returns the path they fetch it by.
    func publish(_ url: URL, index: Int) -> String {
        lock.withLock {
            if let path = published[index] { return path }
            let path = url.isFileURL ? http.publish(url, id: String(index)) : url.absoluteString
            published[index] = path
            return path
        }
    }

    /// Announces a new group state now.
    func announce(_ state: GroupState) {
        queue.async { self.handle(.stateChanged(state)) }
    }

    /// Says goodbye to every follower and stops.
    func stop() {
        queue.sync { handle(.stop) }
        timer?.cancel()
        socket.close()
        http.stop()
    }

    /// The leader's current time: its host time.
    var leaderTimeNow: LeaderTime { LeaderTime(clock.now()) }

    private func handle(_ event: LeaderCore.Event) {
        let now = clock.now()
        let actions = core.handle(event, at: now)
        switch event {
        case .tick:
            reportDrops(now: now)
        case .stop:
            reportDrops(now: now, finally: true)
        default:
            break
        }
        for action in actions {
            switch action {
            case .send(let datagram):
                // A clock reply's t3 is read again here, just before it leaves.
                try? socket.send(core.restamped(datagram, t3: clock.now()).bytes, to: datagram.destination)
            case .followerJoined(let follower):
                if verbose { warn("follower \(follower.name) joined from \(follower.endpoint)") }
            case .followerLeft(let follower):
                if verbose { warn("follower \(follower.name) left") }
            case .encodingFailed(let error):
                warn("cannot announce: \(error)")
            }
        }
    }

    /// Says in the log which senders' datagrams were dropped and why, at most every
    /// `DropReport.interval` unless `finally` (what is left when the node stops).
    private func reportDrops(now: HostTime, finally: Bool = false) {
        for line in core.dropReportLines(now: now, finally: finally) { warn(line) }
    }
}

/// Plays for the whole group: every start, pause and seek is scheduled a little ahead on
/// the leader's clock and announced, so followers make it at the same instant.
// @unchecked: `current` is read and written under `lock`; the rest are lets.
final class GroupTransport: PlaybackTransport, @unchecked Sendable {
    /// Time given to followers between an item's announcement and its first sample: enough
    /// to open the item over HTTP on a LAN and fill their buffers.
    static let startLead: Duration = .milliseconds(800)
    /// Time given to followers for a resume or a seek within the item they have open.
    static let changeLead: Duration = .milliseconds(300)

    let node: GroupLeaderNode
    private let lock = NSLock()
    /// The item playing: its index and the path followers fetch it by.
    private var current: (index: Int, path: String) = (0, "")

    init(node: GroupLeaderNode) { self.node = node }

    private func state(index: Int, path: String, duration: CMTime, rate: Double, at itemTime: CMTime, leader: LeaderTime, ended: Bool = false) -> GroupState {
        GroupState(sequence: 0, itemIndex: UInt32(index), itemURL: path, itemDuration: duration, rate: rate,
                   anchorItemTime: itemTime, anchorLeaderTime: leader, ended: ended, stopped: false)
    }

    func begin(_ item: AVPlayerItem, index: Int, url: URL, from start: CMTime, on player: AVPlayer) {
        let path = node.publish(url, index: index)
        lock.withLock { current = (index, path) }
        schedule(rate: Double(player.defaultRate), at: start, lead: Self.startLead, on: player)
    }

    func togglePause(on player: AVPlayer) {
        if player.rate == 0 {
            schedule(rate: Double(player.defaultRate), at: player.currentTime(), lead: Self.changeLead, on: player)
        } else {
            player.pause()
            let time = player.currentTime()
            announce(rate: 0, at: time, leader: node.leaderTimeNow, player: player)
        }
    }

    func seek(to time: CMTime, on player: AVPlayer) {
        let duration = player.currentItem?.duration ?? .indefinite
        var target = max(time, .zero)
        if duration.isNumeric { target = min(target, duration) }
        if player.rate == 0 {
            player.seek(to: target)
            announce(rate: 0, at: target, leader: node.leaderTimeNow, player: player)
        } else {
            schedule(rate: Double(player.rate), at: target, lead: Self.changeLead, on: player)
        }
    }

    /// A new speed, made everywhere at leader time now + `changeLead` where the item then
    /// stands, so every room carries on without a break.
    func changeRate(to rate: Float, on player: AVPlayer) {
        player.defaultRate = rate
        guard player.rate != 0, player.rate != rate else { return }
        let leaderChange = node.leaderTimeNow + Self.changeLead
        let host = HostTime(nanoseconds: leaderChange.nanoseconds).cmTime
        let time = player.itemTime(forHostTime: host)
        guard time.isNumeric else { return }
        player.setRate(rate, time: time, atHostTime: host)
        announce(rate: Double(player.rate), at: time, leader: leaderChange, player: player)
    }

    func finish(on player: AVPlayer) {
        node.announce(.stoppedState)
    }

    /// Starts item time `time` at leader time now + `lead`, here and everywhere.
    private func schedule(rate: Double, at time: CMTime, lead: Duration, on player: AVPlayer) {
        let leaderStart = node.leaderTimeNow + lead
        let host = HostTime(nanoseconds: leaderStart.nanoseconds)
        player.setRate(Float(rate), time: time, atHostTime: host.cmTime)
        announce(rate: rate, at: time, leader: leaderStart, player: player)
    }

    private func announce(rate: Double, at time: CMTime, leader: LeaderTime, player: AVPlayer) {
        let (index, path) = lock.withLock { current }
        let duration = player.currentItem?.asset.duration ?? .indefinite
        node.announce(state(index: index, path: path, duration: duration, rate: rate, at: time, leader: leader))
    }
}

