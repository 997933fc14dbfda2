import AVPlayback
import ChorusSession
import ChorusSimulation
import ChorusTestSupport
import Foundation
import GroupSync
import MediaServer
import MutexAnnotations
import Synchronization
import Testing

/// The sessions driven as a front end drives them: commands in, events out, no executable.
@Suite(.ownThread) struct SessionTests {
    /// Every event a session sent, gathered on a task of its own. The tests are async and
    /// run the blocking sessions on threads of their own, so that the task is never starved
    /// of the concurrency pool by a test waiting on it.
    struct EventLog: Sendable {
        let task: Task<[SessionEvent], Never>

        init(_ stream: AsyncStream<SessionEvent>, onEvent: @escaping @Sendable (SessionEvent) -> Void = { _ in }) {
            task = Task {
                var events: [SessionEvent] = []
                for await event in stream {
                    events.append(event)
                    onEvent(event)
                }
                return events
            }
        }

        /// Everything sent, once the stream has ended (the session's last event).
        func all() async -> [SessionEvent] { await task.value }

        func items() async -> [Int] {
            await all().compactMap { if case .item(let index, _, _) = $0 { return index } else { return nil } }
        }

        func messages() async -> [String] {
            await all().compactMap { if case .message(_, let text) = $0 { return text } else { return nil } }
        }

        func finished() async -> Bool? {
            await all().compactMap { if case .finished(let succeeded) = $0 { return succeeded } else { return nil } }.last
        }
    }

    /// Sessions' blocking `run`s, each started at once on a thread of its own; `wait()`
    /// waits for them all. Started as tasks, they waited for one of the concurrency pool's
    /// threads, which other tests running synchronously beside this suite can hold for many
    /// seconds (a group once started 19 s late, and a test waiting 20 s for it to play failed).
    struct Running: Sendable {
        let done = DispatchGroup()

        init(_ bodies: [@Sendable () -> Void]) {
            for body in bodies {
                done.enter()
                let done = self.done
                Thread { body(); done.leave() }.start()
            }
        }

        func wait() async {
            let done = self.done
            await withCheckedContinuation { continuation in
                Thread { done.wait(); continuation.resume() }.start()
            }
        }
    }

    /// Runs a blocking `body` on a thread of its own and waits for it without holding one of
    /// the concurrency pool's.
    func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: body()) }.start()
        }
    }

    @Test func aPlaylistSaysWhichItemPlaysAndEndsWithAVerdict() async throws {
        let first = try TestMedia.tone(.flac, seconds: 0.5, rate: 48_000, channels: 1)
        let second = try TestMedia.tone(.mp3, seconds: 0.5, rate: 48_000, channels: 1)
        let out = TestMedia.folder.appendingPathComponent("session-playlist.wav")
        let session = PlaylistSession(player: AVPlayer(playerItem: nil, output: .wav(path: out.path)), urls: [first, second])
        let log = EventLog(session.events)
        #expect(await onThread { session.run() })
        #expect(await log.items() == [0, 1])
        #expect(await log.finished() == true)
        let rendered = try PCM(wavFile: out)
        let expected = try PCM.ffmpegDecode(first, channels: 1).frameCount + PCM.ffmpegDecode(second, channels: 1).frameCount
        #expect(rendered.frameCount == expected)
    }

    @Test func aFailedItemIsAnErrorMessageAndTheRestStillPlays() async throws {
        let good = try TestMedia.tone(.wav, seconds: 0.3, rate: 48_000, channels: 1)
        let out = TestMedia.folder.appendingPathComponent("session-failed.wav")
        let missing = URL(fileURLWithPath: "/no/such/item.ogg")
        let session = PlaylistSession(player: AVPlayer(playerItem: nil, output: .wav(path: out.path)), urls: [missing, good])
        let log = EventLog(session.events)
        #expect(await !onThread { session.run() })
        #expect(await log.items() == [0, 1])
        #expect(await log.messages().contains { $0.contains("/no/such/item.ogg") })
        #expect(await log.finished() == false)
        #expect(try PCM(wavFile: out).frameCount > 0)
    }

    @Test func nextAndPreviousMoveThroughTheListAndStopEndsIt() async throws {
        // Items long enough that only the commands can end them, on a device in real time.
        let tone = try TestMedia.tone(.flac, seconds: 20, rate: 48_000, channels: 1)
        let session = PlaylistSession(player: AVPlayer(playerItem: nil, output: .null(driftPPM: 0)), urls: [tone, tone, tone])
        let seen = Mutex<[Int]>([])
        let log = EventLog(session.events) { event in
            guard case .item(let index, _, _) = event else { return }
            let count = seen.withLockAnnotated { $0.append(index); return $0.count }
            // next (to 1), previous (to 0, at once: not yet 3 s in), next, next (to 2),
            // next on the last item (nothing), then stop.
            switch count {
            case 1: session.send(.next)
            case 2: session.send(.previous)
            case 3: session.send(.next)
            case 4: session.send(.next)
            case 5:
                session.send(.next)
                session.send(.stop)
            default: break
            }
        }
        #expect(await onThread { session.run() })
        #expect(await log.items() == [0, 1, 0, 1, 2])
        #expect(await log.finished() == true)
    }

    @Test func aBadCommandIsAWarningAndChangesNothing() async throws {
        let tone = try TestMedia.tone(.flac, seconds: 20, rate: 48_000, channels: 1)
        let player = AVPlayer(playerItem: nil, output: .null(driftPPM: 0))
        let session = PlaylistSession(player: player, urls: [tone], positionInterval: nil)
        let log = EventLog(session.events) { event in
            guard case .item = event else { return }
            session.send(.rate(0))
            session.send(.rate(.nan))
            session.send(.volume(.infinity))
            session.send(.stop)
        }
        #expect(await onThread { session.run() })
        #expect(await log.messages().filter { $0.contains("rate needs a number other than 0") }.count == 2)
        #expect(await log.messages().contains { $0.contains("volume needs a number") })
        #expect(player.defaultRate == 1)
        #expect(player.volume == 1)
    }

    /// A leader and two followers, each a session in this process on a clock and a device
    /// of its own, over real UDP and HTTP on loopback.
    @Test func aLeaderAndFollowersOnSkewedClocksPlayInStep() async throws {
        let media = try TestMedia.tone(.flac, seconds: 30, rate: 48_000, channels: 2)
        func capture(_ name: String) -> String { TestMedia.folder.appendingPathComponent("session-\(name).cap").path }
        let loopback = try #require(UDPEndpoint(parsing: "127.0.0.1:0"))
        let leader = try LeaderSession(configuration: NodeConfiguration(output: .null(driftPPM: 20), capturePath: capture("leader")),
                                       listen: loopback, httpPort: 0, urls: [media], positionInterval: nil)
        let leaderLog = EventLog(leader.events)
        let followers = try [(name: "fast", offset: Duration.milliseconds(4_200), skew: Int64(180), drift: 90.0), ("slow", .seconds(-9), -150, -70)].map { node in
            try FollowerSession(configuration: NodeConfiguration(output: .null(driftPPM: node.drift), capturePath: capture(node.name),
                                                                 clock: .simulated(offset: node.offset, skewPPM: node.skew)),
                                leader: leader.endpoint, name: node.name, statisticsInterval: .milliseconds(500))
        }
        let followerLogs = followers.map { EventLog($0.events) }
        let sessions = Running([{ _ = leader.run() }] + followers.map { follower in { follower.run() } })
        // A follower takes commands that are the leader's as warnings, not as its own.
        followers[0].send(.pause)
        try await Task.sleep(for: .seconds(7))
        for follower in followers { follower.send(.stop) }
        leader.send(.stop)
        await sessions.wait()
        #expect(await leaderLog.finished() == true)

        let reference = try RenderCaptureLog(path: capture("leader"))
        for (index, name) in ["fast", "slow"].enumerated() {
            Self.expectInStep(try RenderCaptureLog(path: capture(name)), reference, skip: 48_000 * 3, positions: 100, name: name)
            let statistics = await followerLogs[index].all().compactMap { event -> ClockStatistics? in
                if case .clock(let figures) = event { return figures } else { return nil }
            }
            #expect(statistics.count >= 10, "\(name): statistics twice a second")
            // The follower's clock against the leader's, as its simulated clock really is.
            let offset = try #require(statistics.last?.offset)
            let truth: Duration = name == "fast" ? .milliseconds(-4_200) : .seconds(9)
            #expect(abs((offset - truth).nanosecondsClamped) < 10_000_000, "\(name) offset \(offset)")
        }
        #expect(await followerLogs[0].messages().contains { $0.contains("a follower plays what its leader plays") })
    }

    /// A leader playing `urls` and one follower ("room") on a simulated clock and a device of
    /// its own, each a session running on a thread of its own, over real UDP and HTTP on
    /// loopback; both record captures named after `name`.
    struct Pair {
        let leader: LeaderSession
        let follower: FollowerSession
        let leaderLog: EventLog
        let followerLog: EventLog
        let sessions: Running
        let name: String

        func capture(_ role: String) -> String { TestMedia.folder.appendingPathComponent("\(name)-\(role).cap").path }

        /// Stops both and waits for their sessions to end.
        func stop() async {
            follower.send(.stop)
            leader.send(.stop)
            await sessions.wait()
        }

        /// Leader and room each played one run across a join at item frame `boundary` (of
        /// the first item): begun in the first item, still going a second into the second.
        func expectOneRun(across boundary: Double, sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let logs = try ["leader", "room"].map { try RenderCaptureLog(path: capture($0)) }
            let origin = logs[0].periods.first?.host ?? 0
            let said = await followerLog.messages()
            for (name, log) in zip(["leader", "room"], logs) {
                let run = log.lastRun
                let first = try #require(run.first?.position, sourceLocation: sourceLocation)
                let last = try #require(run.last?.position, sourceLocation: sourceLocation)
                // Real time: a room slowed enough (under the sanitizer, once) begins after the join.
                RealTimeChecks.hold(sourceLocation: sourceLocation) {
                    // Where each run began and ended, and what the room said: enough to tell
                    // a late start from a failed join.
                    #expect(first < boundary - 48_000 && last > boundary + 48_000,
                            "\(name): one run from \(first) to \(last); runs \(Self.runs(of: log, since: origin)), the leader's \(Self.runs(of: logs[0], since: origin)); the room said \(said)",
                            sourceLocation: sourceLocation)
                }
            }
        }

        /// Each run of `log`: its first and last positions (frames), and when each was
        /// heard (ms after `origin`).
        static func runs(of log: RenderCaptureLog, since origin: Int64) -> [String] {
            Dictionary(grouping: log.periods, by: \.serial).sorted { $0.key < $1.key }.compactMap { _, periods in
                guard let first = periods.first, let last = periods.last else { return nil }
                return "\(Int(first.position))@\((first.host - origin) / 1_000_000)ms–\(Int(last.position))@\((last.host - origin) / 1_000_000)ms"
            }
        }

        /// The room's sound against the leader's after `skip` frames: over more than 50
        /// positions, never a millisecond apart.
        func expectInStep(skip: Double, sourceLocation: SourceLocation = #_sourceLocation) throws {
            SessionTests.expectInStep(try RenderCaptureLog(path: capture("room")), try RenderCaptureLog(path: capture("leader")),
                                      skip: skip, sourceLocation: sourceLocation)
        }
    }

    func startPair(_ name: String, urls: [URL], roomDriftPPM: Double, roomOffset: Duration, roomSkewPPM: Int64,
                   roomPitch: AVAudioTimePitchAlgorithm = .timeDomain) throws -> Pair {
        func capture(_ role: String) -> String { TestMedia.folder.appendingPathComponent("\(name)-\(role).cap").path }
        let loopback = try #require(UDPEndpoint(parsing: "127.0.0.1:0"))
        let leader = try LeaderSession(configuration: NodeConfiguration(output: .null(driftPPM: 0), capturePath: capture("leader")),
                                       listen: loopback, httpPort: 0, urls: urls, positionInterval: nil)
        let leaderLog = EventLog(leader.events)
        let follower = try FollowerSession(configuration: NodeConfiguration(output: .null(driftPPM: roomDriftPPM), capturePath: capture("room"),
                                                                            clock: .simulated(offset: roomOffset, skewPPM: roomSkewPPM),
                                                                            pitchAlgorithm: roomPitch),
                                           leader: leader.endpoint, name: "room", statisticsInterval: nil)
        let followerLog = EventLog(follower.events)
        let sessions = Running([{ _ = leader.run() }, { follower.run() }])
        return Pair(leader: leader, follower: follower, leaderLog: leaderLog, followerLog: followerLog, sessions: sessions, name: name)
    }

    /// The leader chooses another sound track and subtitles; its follower takes both, on
    /// the group's timeline, and stays in step with the leader through the change.
    @Test func aLeadersChoiceOfSoundAndSubtitlesReachesItsFollowers() async throws {
        let pair = try startPair("selection", urls: [try TestMedia.multilingual(seconds: 20)],
                                 roomDriftPPM: 40, roomOffset: .milliseconds(1_500), roomSkewPPM: 60)
        let (leader, follower) = (pair.leader, pair.follower)
        #expect(await waitUntil(20) { follower.player.timeControlStatus == .playing })
        leader.send(.cycleAudio)
        leader.send(.cycleSubtitles)
        // French sound (stream 1) and English subtitles (stream 3) in the room too.
        #expect(await waitUntil(10) { follower.player.currentItem?.chosenStreams.audio == 1 })
        #expect(await waitUntil(10) { follower.player.currentItem?.chosenStreams.subtitles == 3 })
        #expect(await waitUntil(10) { follower.player.timeControlStatus == .playing })
        try await Task.sleep(for: .seconds(3))
        await pair.stop()
        #expect(await pair.leaderLog.messages().contains("sound: French (fr)"))
        #expect(await pair.leaderLog.messages().contains("subtitles: English (en)"))
        _ = await pair.followerLog.all()
        // Both read the new sound from the timeline they keep: still in step after it.
        try pair.expectInStep(skip: 48_000 * 2)
    }

    /// A leader playing a local HLS playlist serves its segments too; its follower plays it
    /// from the leader's server, in step.
    @Test func aFollowerPlaysTheLeadersHLSPlaylist() async throws {
        let hls = try TestMedia.hls(seconds: 12)
        let pair = try startPair("hls", urls: [hls.folder.appendingPathComponent("index.m3u8")],
                                 roomDriftPPM: -30, roomOffset: .milliseconds(-700), roomSkewPPM: -40)
        let follower = pair.follower
        #expect(await waitUntil(20) { follower.player.timeControlStatus == .playing })
        #expect(follower.player.currentItem?.asset is AVURLAsset)
        let played = (follower.player.currentItem?.asset as? AVURLAsset)?.url.absoluteString ?? ""
        #expect(played.hasPrefix("http://") && played.hasSuffix("/index.m3u8"), "\(played)")
        try await Task.sleep(for: .seconds(4))
        await pair.stop()
        #expect(await pair.followerLog.messages().allSatisfy { !$0.contains("cannot play") })
        _ = await pair.leaderLog.all()
        try pair.expectInStep(skip: 48_000 * 2)
    }

    /// A live stream the leader names: the room opens it seconds after the leader, further on
    /// in the stream, and still plays the sound the leader plays at the same instant (a live
    /// item's time is the stream's own, the same for both).
    @Test func aRoomOpeningALiveStreamLaterHearsWhatTheLeaderHears() async throws {
        let hls = try TestMedia.hls(seconds: 40)
        // Both place the stream on the same time, its own: their playlists' seekable ranges
        // start at the same item time whenever both have read the playlist since it last moved
        // (twice a second each, against once a second). Each counting from where it opened,
        // they would stand the seconds apart that they opened.
        let group = try await playLive(hls, name: "live-group", roomAfter: .milliseconds(2_300), rangesWithin: 0.01)
        #expect(group.agreeing >= 7, "the seekable ranges agreed \(group.agreeing) times in 20")
        // The room's first sound is further on in the stream than the leader's.
        let (leaderFirst, roomFirst) = (try #require(group.leader.lastRun.first?.position), try #require(group.room.lastRun.first?.position))
        #expect(roomFirst - leaderFirst > 48_000, "first sounds at item frames \(leaderFirst) and \(roomFirst)")
        Self.expectInStep(group.room, group.leader)
    }

    /// A live stream whose times jump back 50 s where an advertisement was spliced in (an
    /// `EXT-X-DISCONTINUITY`): the leader reads across the jump and closes it up; a room that
    /// opens the stream after the jump never saw it, and counts as the leader does from the
    /// splice the leader announces. Counting from the stream's own times, it would stand
    /// about a minute from the leader's item time, and never reach the time it is sent to.
    @Test func aRoomOpeningALiveStreamAfterASpliceCountsAsTheLeader() async throws {
        // Ten seconds stamped from 51.4 s, then ten from 1.4 s, a second a segment. The
        // splice is listed 6 s in, and the leader reads it soon after; a room opens two
        // segments past the window's start, so past the splice from 8 s on. Their seekable
        // ranges start within the few tens of ms by which a playlist's durations and its
        // sound place a splice apart (the leader's window counts on by the durations from
        // before the splice).
        let hls = try TestMedia.splicedHLS(seconds: 20, offsets: (50, 0))
        let group = try await playLive(hls, name: "live-spliced-group", discontinuityBefore: "b000.ts",
                                       roomAfter: .milliseconds(8_500), rangesWithin: 0.1)
        #expect(group.agreeing >= 7, "the seekable ranges agreed \(group.agreeing) times in 20")
        #expect(group.splices.count == 1)
        // The room's first sound is past the splice, on the leader's timeline.
        let splice = try #require(group.splices.first)
        let roomFirst = try #require(group.room.lastRun.first?.position)
        #expect(roomFirst > Double(splice.startNanoseconds) * 48e-6, "the room's first sound at item frame \(roomFirst)")
        Self.expectInStep(group.room, group.leader)
    }

    /// A leader playing `hls` as a live stream (a window of five segments moved on by one a
    /// second), and a room that joins `roomAfter` after the leader plays, each recorded;
    /// stopped two seconds after the room plays. Returns the records, how often in 20 looks
    /// over two seconds their seekable ranges started within `rangesWithin` seconds, and the
    /// splices the leader had announced when the room joined.
    private func playLive(_ hls: (folder: URL, segments: [String]), name: String, discontinuityBefore: String? = nil,
                          roomAfter: Duration, rangesWithin tolerance: Double) async throws
        -> (leader: RenderCaptureLog, room: RenderCaptureLog, agreeing: Int, splices: [TimelineSplice]) {
        let server = try MediaHTTPServer(address: "127.0.0.1", port: 0)
        defer { server.stop() }
        let live = try SlidingPlaylist(segments: hls.segments, in: hls.folder, name: "\(name).m3u8", window: 5,
                                       discontinuityBefore: discontinuityBefore)
        defer { live.stop() }
        for segment in hls.segments { _ = server.publish(hls.folder.appendingPathComponent(segment), id: name) }
        let url = try #require(URL(string: "http://127.0.0.1:\(server.port)\(server.publish(live.playlist, id: name))"))

        func capture(_ role: String) -> String { TestMedia.folder.appendingPathComponent("\(name)-\(role).cap").path }
        let loopback = try #require(UDPEndpoint(parsing: "127.0.0.1:0"))
        let leader = try LeaderSession(configuration: NodeConfiguration(output: .null(driftPPM: 0), capturePath: capture("leader")),
                                       listen: loopback, httpPort: 0, urls: [url], positionInterval: nil)
        let leaderLog = EventLog(leader.events)
        let leading = Running([{ _ = leader.run() }])
        #expect(await waitUntil(20) { leader.player.timeControlStatus == .playing })
        try await Task.sleep(for: roomAfter)
        if discontinuityBefore != nil {
            // The room is to open after the leader has read across the splice and announced
            // it, which a loaded machine (a CI run with the sanitizer's build beside it) held
            // back past `roomAfter` once.
            #expect(await waitUntil(20) { !leader.player.currentSplices.isEmpty }, "the leader announced the splice")
        }
        let splices = leader.player.currentSplices
        let follower = try FollowerSession(configuration: NodeConfiguration(output: .null(driftPPM: -40), capturePath: capture("room"),
                                                                            clock: .simulated(offset: .milliseconds(600), skewPPM: 50)),
                                           leader: leader.endpoint, name: "room", statisticsInterval: nil)
        let followerLog = EventLog(follower.events)
        let following = Running([{ follower.run() }])
        #expect(await waitUntil(20) { follower.player.timeControlStatus == .playing })
        try await Task.sleep(for: .seconds(2))
        var agreeing = 0
        var starts: [(leader: Double, room: Double)] = []
        for _ in 0..<20 {
            if let a = leader.player.currentItem?.seekableTimeRanges.first?.timeRangeValue.start,
               let b = follower.player.currentItem?.seekableTimeRanges.first?.timeRangeValue.start {
                starts.append((a.seconds, b.seconds))
                if abs((a - b).seconds) < tolerance { agreeing += 1 }
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        if agreeing < 7 { Issue.record("seekable ranges' starts (leader, room): \(starts)") }
        follower.send(.stop)
        leader.send(.stop)
        await following.wait()
        await leading.wait()
        _ = await leaderLog.all()
        #expect(await followerLog.messages().allSatisfy { !$0.contains("cannot play") })
        return (try RenderCaptureLog(path: capture("leader")), try RenderCaptureLog(path: capture("room")), agreeing, splices)
    }

    /// The room's sound against the leader's after `skip` frames: over more than `positions`
    /// positions, never a millisecond apart.
    static func expectInStep(_ room: RenderCaptureLog, _ leader: RenderCaptureLog, skip: Double = 48_000, positions: Int = 50,
                             name: String = "room", sourceLocation: SourceLocation = #_sourceLocation) {
        let offsets = room.offsets(against: leader, skip: skip)
        RealTimeChecks.hold(sourceLocation: sourceLocation) {
            #expect(offsets.count > positions, "\(name): \(offsets.count) comparable positions", sourceLocation: sourceLocation)
            let worst = offsets.map(abs).max() ?? 1
            #expect(worst < 1e-3, "\(name): worst offset \(worst * 1e6) µs", sourceLocation: sourceLocation)
        }
    }

    /// An Internet radio station over plain HTTP, which starts each listener where it then
    /// stands and says nothing of where that is: the leader relays it, so the station is
    /// asked once, and a room that joins seconds later plays the sound the leader plays at
    /// the same instant.
    @Test func aGroupHearsARadioStationAsOne() async throws {
        let station = try StationServer(broadcasting: try TestMedia.station(seconds: 30), seconds: 30, titles: [(0, "Chorus – Morning Show")])
        defer { station.stop() }
        func capture(_ role: String) -> String { TestMedia.folder.appendingPathComponent("station-group-\(role).cap").path }
        let loopback = try #require(UDPEndpoint(parsing: "127.0.0.1:0"))
        let leader = try LeaderSession(configuration: NodeConfiguration(output: .null(driftPPM: 0), capturePath: capture("leader")),
                                       listen: loopback, httpPort: 0, urls: [station.url], positionInterval: nil)
        let leaderLog = EventLog(leader.events)
        let leading = Running([{ _ = leader.run() }])
        #expect(await waitUntil(30) { leader.player.timeControlStatus == .playing })
        #expect(leader.player.currentItem?.duration.isIndefinite == true, "a station has no end")
        let leadersConnections = station.connections
        try await Task.sleep(for: .milliseconds(1_700))
        let follower = try FollowerSession(configuration: NodeConfiguration(output: .null(driftPPM: 30), capturePath: capture("room"),
                                                                            clock: .simulated(offset: .milliseconds(-400), skewPPM: -60)),
                                           leader: leader.endpoint, name: "room", statisticsInterval: nil)
        let followerLog = EventLog(follower.events)
        let following = Running([{ follower.run() }])
        #expect(await waitUntil(20) { follower.player.timeControlStatus == .playing })
        try await Task.sleep(for: .seconds(3))
        // The station's title reaches every room, carried in the relayed stream.
        for player in [leader.player, follower.player] {
            #expect(player.currentItem?.timedMetadata?.map(\.stringValue) == ["Chorus – Morning Show"])
        }
        follower.send(.stop)
        leader.send(.stop)
        await following.wait()
        await leading.wait()
        let leaderMessages = await leaderLog.messages()
        #expect(leaderMessages.contains { $0.contains("relayed to the group") }, "the leader said: \(leaderMessages)")
        #expect(await followerLog.messages().allSatisfy { !$0.contains("cannot play") })
        for log in [leaderLog, followerLog] {
            #expect(await log.all().contains { if case .title("Chorus – Morning Show") = $0 { true } else { false } })
        }
        #expect(station.connections == leadersConnections, "only the leader's relay listens to the station")

        Self.expectInStep(try RenderCaptureLog(path: capture("room")), try RenderCaptureLog(path: capture("leader")))
    }

    /// Two items that join into one tone, played by a group: the leader joins the second on
    /// without a gap, and so does its follower, at the same sample; neither starts afresh.
    @Test func aGroupJoinsItsItemsWithoutAGap() async throws {
        let items = [try TestMedia.slice(.flac, offset: 0, seconds: 5, rate: 48_000),
                     try TestMedia.slice(.flac, offset: 5, seconds: 5, rate: 48_000)]
        let pair = try startPair("gapless", urls: items, roomDriftPPM: 50, roomOffset: .milliseconds(2_500), roomSkewPPM: 70)
        let follower = pair.follower
        // Into the second item, in the room too.
        #expect(await waitUntil(20) { (follower.player.currentItem?.asset as? AVURLAsset)?.url.lastPathComponent == items[1].lastPathComponent })
        // Two seconds into it, as the room hears it (a fixed two seconds' wait was outlasted
        // under the sanitizer, and the room had heard under one second past the join).
        #expect(await waitUntil(30) { follower.player.currentTime().seconds >= 2 })
        await pair.stop()
        #expect(await pair.leaderLog.items() == [0, 1])
        _ = await pair.followerLog.all()
        try await pair.expectOneRun(across: 5.0 * 48_000)
        try pair.expectInStep(skip: 48_000 * 2)
    }

    /// Two items whose pictures are shown (a layer on each player), played by a group: their
    /// sound joins at the sample in every room, as any item's does, and the second item's
    /// pictures follow from a reader of their own.
    @Test func aGroupJoinsShownVideoItemsAtTheSample() async throws {
        let items = [try TestMedia.identityVideo(seconds: 4, rate: 25, withSound: true),
                     try TestMedia.keyframedVideo(seconds: 4)]
        let pair = try startPair("videoqueue", urls: items, roomDriftPPM: -50, roomOffset: .milliseconds(1_800), roomSkewPPM: 80)
        let layers = [AVPlayerLayer(player: pair.leader.player), AVPlayerLayer(player: pair.follower.player)]
        let follower = pair.follower
        // The room's screen, refreshed every 3 ms until 1.5 s into the second item, and where
        // the second item joined on the first.
        let (shown, firstEnd) = await onThread { () -> ([ShownPicture], CMTime?) in
            var shown: [ShownPicture] = []
            var firstEnd: CMTime?
            let deadline = HostTime.now() + .seconds(30)
            while HostTime.now() < deadline {
                let at = HostTime.now() + .milliseconds(2)
                if let picture = layers[1].picture(forRefreshAt: at) {
                    shown.append(ShownPicture(host: at.nanoseconds, item: picture.info.item, itemNanoseconds: picture.info.itemNanoseconds))
                } else if let last = shown.last {
                    shown.append(ShownPicture(host: at.nanoseconds, item: last.item, itemNanoseconds: last.itemNanoseconds))
                }
                if let current = follower.player.currentItem,
                   (current.asset as? AVURLAsset)?.url.lastPathComponent == items[1].lastPathComponent {
                    firstEnd = firstEnd ?? follower.player.gaplessJoin(into: current)
                    if follower.player.currentTime().seconds > 1.5 { break }
                }
                usleep(3_000)
            }
            return (shown, firstEnd)
        }
        await pair.stop()
        _ = layers
        #expect(await pair.leaderLog.items() == [0, 1])
        _ = await pair.followerLog.all()
        try await pair.expectOneRun(across: 4.0 * 48_000)
        try pair.expectInStep(skip: 48_000 * 2)
        // The room's screen against when the room heard the join.
        let joinedAt = try #require(firstEnd, "the room's second item joined on gaplessly")
        let run = try RenderCaptureLog(path: pair.capture("room")).lastRun
        let sampleRate = try #require(run.first?.sampleRate)
        let joinHost = try #require(RenderCaptureLog.host(of: joinedAt.seconds * Double(sampleRate), in: run), "the join heard")
        let (checked, problems) = PicturesAtAJoin.problems(shown, joinHost: joinHost, frameNanoseconds: 40_000_000)
        #expect(problems.isEmpty, "\(problems.count) refreshes wrong, first: \(Array(problems.prefix(3)))")
        #expect(checked > 50, "\(checked) refreshes checked in the half second after the join")
    }

    /// Each room keeps the pitch its own way (`--pitch`): a room through the spectral engine,
    /// whose delay is four times the leader's time-domain one, changes speed with the leader
    /// and stays in step with it.
    @Test func roomsKeepingThePitchTheirOwnWayChangeSpeedInStep() async throws {
        let media = try TestMedia.tone(.flac, seconds: 20, rate: 48_000, channels: 2)
        let pair = try startPair("pitchways", urls: [media], roomDriftPPM: 30, roomOffset: .milliseconds(900), roomSkewPPM: 40,
                                 roomPitch: .spectral)
        let (leader, follower) = (pair.leader, pair.follower)
        #expect(await waitUntil(20) { follower.player.timeControlStatus == .playing && follower.player.currentTime().seconds > 2 },
                "room \(follower.player.timeControlStatus) at \(follower.player.currentTime().seconds) s; leader \(leader.player.timeControlStatus) at \(leader.player.currentTime().seconds) s")

        #expect(leader.player.currentItem?.audioTimePitchAlgorithm == .timeDomain)
        #expect(follower.player.currentItem?.audioTimePitchAlgorithm == .spectral)
        leader.send(.rate(1.5))
        #expect(await waitUntil(10) { follower.player.rate == 1.5 })
        try await Task.sleep(for: .seconds(3))
        await pair.stop()
        try pair.expectInStep(skip: 48_000 * 2)
    }

    /// The leader turns the group round: every room plays backwards from the same sample at
    /// the same instant, in step, and stands at the item's start when it gets there. (A
    /// follower once stood silent at the turn: a re-posted timeline put its ended run back to
    /// starting before the player saw the end; docs/benchmarks.md has the runs.)
    @Test(arguments: [-1, -2] as [Float]) func aGroupPlaysBackwardsInStep(rate: Float) async throws {
        let media = try TestMedia.tone(.flac, seconds: 20, rate: 48_000, channels: 2)
        let pair = try startPair("reverse\(Int(-rate))", urls: [media], roomDriftPPM: -40, roomOffset: .milliseconds(-1_200), roomSkewPPM: -90)
        let (leader, follower) = (pair.leader, pair.follower)
        #expect(await waitUntil(20) { follower.player.timeControlStatus == .playing && follower.player.currentTime().seconds > 2.5 })
        leader.send(.rate(rate))
        #expect(await waitUntil(10) { follower.player.rate == rate })
        // Backwards: at the start within a few seconds, standing there.
        #expect(await waitUntil(15) { follower.player.rate == 0 && leader.player.rate == 0 })
        #expect(follower.player.currentTime() == .zero)
        #expect(leader.player.currentTime() == .zero)
        await pair.stop()
        // Still the one item: reaching its start does not end it.
        #expect(await pair.leaderLog.items() == [0])
        let reference = try RenderCaptureLog(path: pair.capture("leader"))
        let room = try RenderCaptureLog(path: pair.capture("room"))
        // The backwards run, in step with the leader's.
        let backwards = room.lastRun
        #expect(backwards.allSatisfy { abs($0.playbackRate - Double(-rate)) < 0.01 } && backwards.first.map { $0.position < 0 } == true,
                "the last run is the one backwards")
        Self.expectInStep(room, reference.run(at: backwards.last?.host ?? 0), skip: 4_800, positions: 20)
    }

    /// Where a captured run's sound stood at host time `host`, in item nanoseconds,
    /// interpolated between the periods around it (nil across serials). A backward run
    /// counts the ring's frames up, item frame f written as -(f + 1).
    static func itemNanoseconds(in periods: [RenderCaptureLog.Period], at host: HostTime, backwards: Bool) -> Int64? {
        guard let after = periods.firstIndex(where: { $0.host > host.nanoseconds }), after > 0 else { return nil }
        let a = periods[after - 1], b = periods[after]
        guard a.serial == b.serial, b.host > a.host, !backwards || a.position < 0 else { return nil }
        let position = a.position + (b.position - a.position) * Double(host.nanoseconds - a.host) / Double(b.host - a.host)
        return Int64((backwards ? -position : position) * 1e9 / Double(a.sampleRate))
    }

    /// A follower's screen: its pictures are the group's from the first one shown, on a
    /// clock of its own, judged against what the leader's device really played (its capture).
    @Test func aFollowersPicturesAreTheGroupsFromTheFirst() async throws {
        let media = try TestMedia.identityVideo(seconds: 40, rate: 25, withSound: true)
        let leaderCapture = TestMedia.folder.appendingPathComponent("session-screen-leader.cap").path
        let loopback = try #require(UDPEndpoint(parsing: "127.0.0.1:0"))
        let leader = try LeaderSession(configuration: NodeConfiguration(output: .null(driftPPM: 0), capturePath: leaderCapture),
                                       listen: loopback, httpPort: 0, urls: [media], positionInterval: nil)
        let follower = try FollowerSession(configuration: NodeConfiguration(output: .null(driftPPM: 60),
                                                                            clock: .simulated(offset: .seconds(3), skewPPM: 120)),
                                           leader: leader.endpoint, name: "screen")
        let layer = AVPlayerLayer(player: follower.player)
        let sessions = Running([{ _ = leader.run() }, { follower.run() }])
        // Refreshes every 10 ms from the start until 3 s after the first picture (the join
        // takes longer on a loaded machine): each picture shown, with the refresh's instant.
        var shown: [(refresh: HostTime, item: Int64)] = []
        let deadline = HostTime.now() + .seconds(30)
        while HostTime.now() < deadline, shown.first.map({ HostTime.now() - $0.refresh < .seconds(3) }) ?? true {
            let refresh = HostTime.now() + .milliseconds(2)
            if let picture = layer.picture(forRefreshAt: refresh) { shown.append((refresh, picture.info.itemNanoseconds)) }
            try await Task.sleep(for: .milliseconds(10))
        }
        follower.send(.stop)
        leader.send(.stop)
        await sessions.wait()
        #expect(shown.count > 50, "\(shown.count) pictures shown")
        // Where the leader's sound was at each refresh, from its capture (real host times).
        let periods = try RenderCaptureLog(path: leaderCapture).periods
        let gaps = shown.compactMap { entry in Self.itemNanoseconds(in: periods, at: entry.refresh, backwards: false).map { $0 - entry.item } }
        #expect(gaps.count > 50)
        // Each is the picture due where the leader's sound is: at most one picture period
        // (40 ms) behind it, never ahead, from the very first.
        let outside = gaps.enumerated().filter { $0.element < -1_000_000 || $0.element > 41_000_000 }.map { "#\($0.offset): \($0.element)" }
        #expect(outside.isEmpty, "pictures off the group's timeline by \(outside.prefix(5)) ns")
    }

    /// A follower's screen while the group plays backwards: each picture shown is the one the
    /// leader's sound, running down, stands in.
    @Test func aFollowersPicturesGoBackwardsWithTheGroup() async throws {
        let media = try TestMedia.identityVideo(seconds: 8, rate: 25, withSound: true)
        let leaderCapture = TestMedia.folder.appendingPathComponent("session-backwards-leader.cap").path
        let loopback = try #require(UDPEndpoint(parsing: "127.0.0.1:0"))
        let leader = try LeaderSession(configuration: NodeConfiguration(output: .null(driftPPM: 0), capturePath: leaderCapture),
                                       listen: loopback, httpPort: 0, urls: [media], positionInterval: nil)
        let follower = try FollowerSession(configuration: NodeConfiguration(output: .null(driftPPM: -50),
                                                                            clock: .simulated(offset: .seconds(-2), skewPPM: 80)),
                                           leader: leader.endpoint, name: "screen")
        let layer = AVPlayerLayer(player: follower.player)
        let sessions = Running([{ _ = leader.run() }, { follower.run() }])
        #expect(await waitUntil(20) { follower.player.timeControlStatus == .playing && follower.player.currentTime().seconds > 3 })
        leader.send(.rate(-1))
        #expect(await waitUntil(10) { follower.player.rate == -1 })
        // Refreshes every 10 ms until the group stands at the start: each picture shown.
        var all: [(refresh: HostTime, item: Int64, serial: Int)] = []
        let deadline = HostTime.now() + .seconds(15)
        while HostTime.now() < deadline, follower.player.rate != 0 {
            let refresh = HostTime.now() + .milliseconds(2)
            if let picture = layer.picture(forRefreshAt: refresh), follower.player.rate < 0 {
                all.append((refresh, picture.info.itemNanoseconds, picture.info.serial))
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        follower.send(.stop)
        leader.send(.stop)
        await sessions.wait()
        // The backward run's pictures (a forward one queued before the turn may still come).
        let backwardSerial = all.last?.serial
        let shown = all.filter { $0.serial == backwardSerial }
        #expect(shown.count > 40, "\(shown.count) pictures shown backwards")
        #expect(zip(shown, shown.dropFirst()).allSatisfy { $0.item > $1.item }, "pictures shown newest first")
        // Where the leader's sound was at each refresh, from its capture.
        let periods = try RenderCaptureLog(path: leaderCapture).periods
        // Each is the picture the leader's sound stands in: shown once the sound has come
        // down to its end, until it passes its start (within a refresh's rounding).
        let into = shown.compactMap { entry in Self.itemNanoseconds(in: periods, at: entry.refresh, backwards: true).map { $0 - entry.item } }
        #expect(into.count > 40)
        let outside = into.enumerated().filter { $0.element < -1_000_000 || $0.element > 41_000_000 }.map { "#\($0.offset): \($0.element)" }
        #expect(outside.isEmpty, "pictures off the group's backward timeline by \(outside.prefix(5)) ns")
    }
}
