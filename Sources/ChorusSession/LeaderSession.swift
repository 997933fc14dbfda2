import AVPlayback
import Foundation
import GroupSync
import Logging
import MediaClock
import MediaPipeline
import MediaServer
import MutexAnnotations
import Synchronization

/// A group leader: plays a list of items like local play, through the same clock-held path
/// as any follower (its player's master clock is its own host clock), answers clock
/// requests, announces the group's playback state, and serves the items over HTTP.
public final class LeaderSession: Sendable {
    /// The player the items play on.
    public var player: AVPlayer { playlist.player }
    /// What the session reports; read it from one consumer.
    public var events: AsyncStream<SessionEvent> { playlist.events }
    /// The port the items are served on.
    public var httpPort: UInt16 { node.http.port }
    /// Where the group's datagrams are received: the port chosen when asked for port 0.
    public var endpoint: UDPEndpoint { node.endpoint }

    private let node: LeaderNode
    private let playlist: PlaylistSession

    /// A leader listening on `listen` for the group's datagrams and serving on `httpPort`
    /// (0: any free port), that will play `urls` in turn. `reportMembership` sends a message
    /// event when a follower joins or leaves.
    public init(configuration: NodeConfiguration, listen: UDPEndpoint, httpPort: UInt16, urls: [URL],
                volume: Float = 1, rate: Float = 1, reportMembership: Bool = false,
                positionInterval: CMTime? = PlaylistSession.defaultPositionInterval) throws(SessionError) {
        let player = try configuration.makePlayer()
        // The leader's own output is held on the leader's clock, like every follower's.
        player.masterClock = configuration.clock.cmClock
        player.volume = min(max(volume, 0), 1)
        player.defaultRate = rate
        // The node's messages go out with the playlist's events, on one stream.
        let channel = EventChannel()
        node = try LeaderNode(configuration: configuration, listen: listen, httpPort: httpPort,
                              reportMembership: reportMembership) { level, text in channel.message(level, text) }
        playlist = PlaylistSession(player: player, urls: urls, start: nil, positionInterval: positionInterval,
                                   pitchAlgorithm: configuration.pitchAlgorithm, transport: GroupTransport(node: node), channel: channel)
    }

    /// Carries out `command` for the whole group. Any thread; returns at once.
    public func send(_ command: SessionCommand) { playlist.send(command) }

    /// Answers the network and plays every item, blocking until the last has played or the
    /// session is stopped; then says Goodbye, so every room fades out at once. Returns false
    /// if any item failed.
    public func run() -> Bool {
        node.start()
        let succeeded = playlist.run()
        node.stop()
        return succeeded
    }
}

/// The leader's network side: the core, the socket, the HTTP server.
final class LeaderNode: @unchecked Sendable {
    // @unchecked: `core`, `timer` and `ticksSinceSpliceCheck` are touched only on `queue`
    // (the core's serial queue) or before `start`; `published`, `relays` and `spliceSource`
    // are behind their own mutexes; everything else is immutable.

    /// How often the core is ticked: its state period and follower timeouts are multiples.
    static let tickInterval: Duration = .milliseconds(10)

    let clock: NodeClock
    let http: MediaHTTPServer
    private let socket: UDPSocket
    private let queue = DispatchQueue(label: "chorus.lead")
    private var core: LeaderCore
    private var timer: RepeatingTimer?
    /// Where the live item playing has jumped in time, asked every `spliceCheckTicks`
    /// (`watchSplices(_:)`), and the ticks since it was last asked.
    private let spliceSource = Mutex<(@Sendable () -> [TimelineSplice])?>(nil)
    private var ticksSinceSpliceCheck = 0
    /// How often the player is asked for new splices, in ticks: once a State period, so a
    /// room opening the item after a jump reads it in the next State it is sent.
    static let spliceCheckTicks = 25
    private let published = Mutex<[Int: String]>([:])
    /// The live streams relayed, by item index (`playable(_:index:)`).
    private let relays = Mutex<[Int: LiveRelay]>([:])
    /// Where relays write their playlists and segments.
    private let relayDirectory: URL
    private let reportMembership: Bool
    private let report: @Sendable (Logger.Level, String) -> Void

    init(configuration: NodeConfiguration, listen: UDPEndpoint, httpPort: UInt16, reportMembership: Bool,
         report: @escaping @Sendable (Logger.Level, String) -> Void) throws(SessionError) {
        clock = configuration.clock
        let host: String
        switch listen.address {
        case .ipv4: host = listen.description.split(separator: ":").first.map(String.init) ?? "0.0.0.0"
        case .ipv6: host = "0.0.0.0"
        }
        do {
            http = try MediaHTTPServer(address: host, port: httpPort)
        } catch {
            throw SessionError("cannot serve HTTP on port \(httpPort): \(error)")
        }
        do {
            socket = try UDPSocket(bindingTo: listen)
        } catch {
            http.stop()
            throw SessionError("cannot listen on \(listen): \(error)")
        }
        do {
            core = try LeaderCore(group: configuration.group, baseURL: "http://\(host):\(http.port)",
                                  authenticator: configuration.authenticator)
        } catch {
            socket.close()
            http.stop()
            throw SessionError("\(error)")
        }
        self.reportMembership = reportMembership
        self.report = report
        // A folder of this leader's own: its stop removes it, and another leader in the same
        // process (a program leading two groups) must keep its relays.
        relayDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("chorus-relays-\(getpid())-\(UUID().uuidString)", isDirectory: true)
    }

    /// How long a relay may take to gather what a player starts with before its stream is
    /// given up on: the station's answer and `LiveRelay.readySeconds` of its sound, which
    /// a station sends at its own pace after a first burst.
    static let relayReadyTimeout: Duration = .seconds(15)

    /// What the group plays for item `index` at `url`: for a live stream over HTTP that
    /// carries no times the rooms could share (an Icecast station), a relay of it, which
    /// the leader plays and serves like a live HLS stream; anything else as it is. Blocks
    /// while the stream is opened and the relay gathers its first segments.
    func playable(_ url: URL, index: Int) -> URL {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              !["m3u8", "m3u"].contains(url.pathExtension.lowercased()) else { return url }
        if let running = relays.withLockAnnotated({ $0[index] }), running.failure == nil { return running.playlist }
        guard let relay = LiveRelay.start(url: url.absoluteString, in: relayDirectory) else { return url }
        guard relay.waitUntilReady(timeout: Self.relayReadyTimeout) else {
            report(.error, "\(url.absoluteString): cannot relay the stream: \(relay.failure.map { "\($0)" } ?? "too little arrived")")
            relay.stop()
            return url
        }
        report(.notice, "\(url.absoluteString) is a live stream: relayed to the group as live HLS")
        let old = relays.withLockAnnotated { relays in defer { relays[index] = relay }; return relays[index] }
        old?.stop()
        // The item's path is the relay's from now on.
        published.withLockAnnotated { _ = $0.removeValue(forKey: index) }
        return relay.playlist
    }

    /// Stops relaying item `index`, if it was.
    func release(index: Int) {
        relays.withLockAnnotated { $0.removeValue(forKey: index) }?.stop()
    }

    /// Starts answering the network.
    func start() {
        let mapping = clock.mapping
        socket.startReceiving { [weak self] datagram in
            guard let self else { return }
            let receivedAt = mapping(datagram.receivedAt)
            queue.async { self.handle(.received(datagram.bytes, from: datagram.source, receivedAt: receivedAt)) }
        }
        queue.sync {
            timer = RepeatingTimer(label: "chorus.lead.tick", interval: Self.tickInterval, queue: queue) { [weak self] in
                self?.handle(.tick)
            }
        }
    }

    /// Serves `url` (a local file) to followers; returns the path they fetch it by.
    func publish(_ url: URL, index: Int) -> String {
        published.withLockAnnotated { published in
            if let path = published[index] { return path }
            // A local HLS playlist goes out with its folder: its segments are named relative
            // to it.
            let path = !url.isFileURL ? url.absoluteString
                : url.pathExtension.lowercased() == "m3u8" ? http.publishFolder(of: url, id: String(index))
                : http.publish(url, id: String(index))
            published[index] = path
            return path
        }
    }

    /// Announces a new group state now.
    func announce(_ state: GroupState) {
        queue.async { self.handle(.stateChanged(state)) }
    }

    /// Asks `source` once a State period where the item playing has jumped in time, and
    /// carries what it says in the States from then on (`LeaderCore.Event.splicesFound`).
    func watchSplices(_ source: @escaping @Sendable () -> [TimelineSplice]) {
        spliceSource.withLockAnnotated { $0 = source }
    }

    /// Says goodbye to every follower and stops.
    func stop() {
        queue.sync {
            handle(.stop)
            timer?.cancel()
        }
        socket.close()
        http.stop()
        for relay in relays.withLockAnnotated({ relays in defer { relays = [:] }; return Array(relays.values) }) { relay.stop() }
        try? FileManager.default.removeItem(at: relayDirectory)
    }

    /// Where the group's datagrams are received.
    var endpoint: UDPEndpoint { socket.localEndpoint }

    /// The leader's current time: its host time.
    var leaderTimeNow: LeaderTime { LeaderTime(clock.now()) }

    private func handle(_ event: LeaderCore.Event) {
        let now = clock.now()
        let actions = core.handle(event, at: now)
        switch event {
        case .tick:
            reportDrops(now: now)
            ticksSinceSpliceCheck += 1
            if ticksSinceSpliceCheck >= Self.spliceCheckTicks, let source = spliceSource.withLockAnnotated({ $0 }) {
                ticksSinceSpliceCheck = 0
                // The core keeps them as the wire carries them (`GroupState.rising`).
                _ = core.handle(.splicesFound(source()), at: now)
            }
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
                if reportMembership { report(.notice, "follower \(follower.name) joined from \(follower.endpoint)") }
            case .followerLeft(let follower):
                if reportMembership { report(.notice, "follower \(follower.name) left") }
            case .encodingFailed(let error):
                report(.error, "cannot announce: \(error)")
            }
        }
    }

    /// Says which senders' datagrams were dropped and why, at most every
    /// `DropReport.interval` unless `finally` (what is left when the node stops).
    private func reportDrops(now: HostTime, finally: Bool = false) {
        for line in core.dropReportLines(now: now, finally: finally) { report(.warning, line) }
    }
}
