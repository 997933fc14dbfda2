import Foundation
import Testing
import ChorusTestSupport
@testable import MediaPipeline
import MutexAnnotations
@testable import AVPlayback

/// `preferredPeakBitRate` and `preferredMaximumResolution` on an HLS master playlist: the
/// variant an item plays, set before it opens and changed while it plays.
@Suite(.ownThread) struct VariantLimitTests {
    /// The three-variant master of `seconds` and its variants, as FFmpeg opens it. Four
    /// seconds are four one-second segments each, so an item played to its end has read a
    /// variant's playlist and moved from segment to segment three times, each a chance to
    /// move between variants.
    func master(seconds: Double = 4) throws -> (url: URL, info: MediaInfo) {
        let url = try TestMedia.hlsVariants(seconds: seconds)
        let info = try MediaSource(url: url.path).info
        try #require(info.variants.count == TestMedia.variantSizes.count)
        return (url, info)
    }

    /// The variant whose streams the player reads for its item, if its sound and pictures
    /// are both of one.
    func playedVariant(_ player: AVPlayer, info: MediaInfo) -> Int? {
        let (sound, pictures) = player.state.withLockAnnotated { ($0.soundStream, $0.pictureStream) }
        guard let sound, let pictures else { return nil }
        return info.variants.firstIndex { $0.streamIndexes.contains(sound) && $0.streamIndexes.contains(pictures) }
    }

    @Test("an item's limits set before it plays choose its variant: none, a peak bit rate, a peak below all, a resolution",
          arguments: [(0.0, CGSize.zero, 0), (-1, .zero, 1), (1, .zero, 2), (0, CGSize(width: 200, height: 200), 2)])
    func limitsSetBeforePlay(peak: Double, resolution: CGSize, expected: Int) async throws {
        let (url, info) = try master()
        let item = AVPlayerItem(url: url)
        // -1 stands for "between the first two variants".
        item.preferredPeakBitRate = peak < 0 ? Double(info.variants[1].bandwidth + 1) : peak
        item.preferredMaximumResolution = resolution
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
        #expect(await waitUntil(20) { item.status == .readyToPlay })
        #expect(playedVariant(player, info: info) == expected)
        player.play()
        #expect(await waitUntil(30) { ended.value > 0 })
        #expect(item.error == nil)
        #expect(playedVariant(player, info: info) == expected)
    }

    @Test("the item's media selection names the sound of the variant its limit plays, not the first variant's")
    func theSelectionNamesTheSoundPlayed() async throws {
        let (url, info) = try master()
        let item = AVPlayerItem(url: url)
        item.preferredPeakBitRate = Double(info.variants[2].bandwidth)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil(20) { item.status == .readyToPlay && playedVariant(player, info: info) == 2 })
        let group = try #require(try await item.asset.loadMediaSelectionGroup(for: .audible))
        let played = player.state.withLockAnnotated { $0.soundStream }
        #expect(played != group.defaultOption?.streamIndex)
        #expect(item.currentMediaSelection.selectedMediaOption(in: group)?.streamIndex == played)
        // A choice made stands over what the limit would play.
        #expect(item.currentMediaSelection.mediaSelectionCriteriaCanBeAppliedAutomatically(to: group))
        let other = try #require(group.options.first { $0.streamIndex != played })
        item.select(other, in: group)
        #expect(item.currentMediaSelection.selectedMediaOption(in: group) == other)
    }

    @Test("a lower peak bit rate set while playing moves to the variant it allows, from the time reached, and plays on to the end")
    func aLimitWhilePlayingSwitchesTheVariant() async throws {
        // Eight seconds: the switch, asked for after a second, has several to happen in
        // before the end, however loaded the machine.
        let (url, info) = try master(seconds: 8)
        let item = AVPlayerItem(url: url)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
        let jumped = NotificationCounter(AVPlayerItem.timeJumpedNotification, object: item)
        player.play()
        #expect(await waitUntil(20) { player.currentTime().seconds > 1 })
        #expect(playedVariant(player, info: info) == 0)
        let before = player.currentTime()
        item.preferredPeakBitRate = Double(info.variants[2].bandwidth)
        #expect(await waitUntil(20) { playedVariant(player, info: info) == 2 })
        // Taken over where it stood: the time went on from there, not back to the start.
        #expect(player.currentTime() >= before)
        #expect(await waitUntil(30) { ended.value > 0 })
        #expect(jumped.value == 0)
        #expect(item.error == nil)
    }

    /// A move between variants whose pictures differ, while they are shown: the new
    /// opening's pictures take over from the old one's between one picture and the next,
    /// and its sound follows on from the last frame written, as another sound alone does.
    /// (Read afresh from the time reached, as a seek there would be, the sound stopped and
    /// began again from behind, and the picture at the time reached came again.)
    @Test("a move to another variant while its pictures are shown has no break: the sound follows on, the pictures change between one and the next")
    func aMoveWithPicturesHasNoBreak() async throws {
        let (url, info) = try master(seconds: 8)
        try await expectAMoveWithoutABreak(url: url, info: info)
    }

    /// The same for a live stream: its new opening runs on the timeline the earlier one
    /// closed up, so the two openings' pictures fall on one item time. Its sound follows on
    /// from the frame after the old one's last, but is not always heard in time: in about
    /// one run in three here it came a period (10 ms) after the old one ended, so that is
    /// not checked (docs/adaptive-variants.md).
    @Test("a live stream's move to another variant while its pictures are shown has no break")
    func aLiveMoveWithPicturesHasNoBreak() async throws {
        let (url, info) = try master(seconds: 20)
        let folder = url.deletingLastPathComponent()
        var master = try String(contentsOf: url, encoding: .utf8)
        var playlists: [SlidingPlaylist] = []
        defer { for playlist in playlists { playlist.stop() } }
        for variant in info.variants.indices {
            let segments = try FileManager.default.contentsOfDirectory(atPath: folder.path)
                .filter { $0.hasPrefix("stream\(variant)_") && $0.hasSuffix(".ts") }.sorted()
            playlists.append(try SlidingPlaylist(segments: segments, in: folder, name: "live\(variant).m3u8", window: 6))
            master = master.replacingOccurrences(of: "stream\(variant).m3u8", with: "live\(variant).m3u8")
        }
        try master.write(to: folder.appendingPathComponent("live-master.m3u8"), atomically: true, encoding: .utf8)
        // Fast enough that the throughput never moves the item by itself.
        let server = try ThrottledHTTPServer(serving: folder, bytesPerSecond: 50_000_000)
        defer { server.stop() }
        try await expectAMoveWithoutABreak(url: try #require(URL(string: server.url("live-master.m3u8"))), info: info, live: true,
                                           soundInTime: false)
    }

    /// Plays the master playlist at `url` from its first variant, asks for the last one while
    /// its pictures are shown, and checks the move had no break in the pictures, and none in
    /// the sound: from the frame after the old sound's last and, with `soundInTime`, heard
    /// from the instant it ends.
    func expectAMoveWithoutABreak(url: URL, info: MediaInfo, live: Bool = false, soundInTime: Bool = true) async throws {
        let item = AVPlayerItem(url: url)
        let path = TestMedia.folder.appendingPathComponent("variant-move-\(UUID().uuidString).cap").path
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0), hostClock: .hostTimeClock, hostMapping: { $0 },
                              capture: try RenderCapture(path: path))
        defer { player.close() }
        let layer = AVPlayerLayer(player: player)
        let jumped = NotificationCounter(AVPlayerItem.timeJumpedNotification, object: item)
        player.play()
        #expect(await waitUntil(20) { player.timeControlStatus == .playing && player.currentTime().seconds > (live ? 0 : 1) })
        #expect(playedVariant(player, info: info) == 0)
        #expect(item.duration.isIndefinite == live)
        let serial = player.engine.status.serial
        let jumpsBefore = jumped.value
        // Refreshes every 10 ms, on this thread as a display's own would: each picture
        // shown, from half a second before the move is asked for until two seconds after it.
        var shown: [VideoFrameInfo] = []
        // What was shown and dropped when the move was asked for: the checks below are of
        // the pictures from the last one shown before it.
        var atAsk: (shown: Int, dropped: Int)?
        var asked = false
        var movedAt: HostTime?
        let deadline = HostTime.now() + .seconds(20)
        let askAt = HostTime.now() + .milliseconds(500)
        // Every change of the player's status from the move on: the sound plays on, so none.
        let statuses = Collected<AVPlayer.TimeControlStatus>()
        var watch: NSKeyValueObservation?
        defer { watch?.invalidate() }
        while HostTime.now() < deadline {
            if let picture = layer.picture(forRefreshAt: HostTime.now() + .milliseconds(2)) { shown.append(picture.info) }
            if !asked, HostTime.now() > askAt {
                atAsk = (shown.count, player.engine.videoQueue?.counts.dropped ?? 0)
                watch = player.observe(\.timeControlStatus, options: [.new]) { _, change in change.newValue.map(statuses.append) }
                item.preferredPeakBitRate = Double(info.variants[2].bandwidth)
                asked = true
            }
            if asked, movedAt == nil, playedVariant(player, info: info) == 2 { movedAt = .now() }
            if let movedAt, HostTime.now() - movedAt > .seconds(2) { break }
            usleep(10_000)
        }
        watch?.invalidate()
        player.pause()
        #expect(movedAt != nil, "the move was made")
        #expect(jumped.value == jumpsBefore)
        // The sound: the new opening's first period heard from the instant the old one's
        // last ends, from the frame after it.
        let periods = try RenderCaptureLog(path: path).periods
        let old = try #require(periods.last { $0.serial == serial })
        let new = try #require(periods.first { $0.serial > serial })
        let oldEnd = old.host + Int64(old.frames) * 1_000_000_000 / Int64(old.sampleRate)
        if soundInTime {
            RealTimeChecks.hold {
                #expect(abs(new.host - oldEnd) < 100_000, "the new sound began \(Double(new.host - oldEnd) / 1e6) ms after the old one ended")
                #expect(statuses.all.isEmpty, "the player's status went \(statuses.all) during the move")
            }
        }
        #expect(abs(new.position - (old.position + Double(old.frames))) <= 1, "from frame \(new.position), the old ended at \(old.position + Double(old.frames))")
        // The pictures: the old variant's, then the new one's, never back; each later than
        // the one before (none shown again); and every picture between the first and the
        // last shown either shown or counted as dropped for coming too late.
        let widths = shown.map(\.width)
        let switched = try #require(widths.firstIndex(of: TestMedia.variantSizes[2].width), "the new variant's pictures shown")
        #expect(switched > 0 && widths[..<switched].allSatisfy { $0 == TestMedia.variantSizes[0].width })
        #expect(widths[switched...].allSatisfy { $0 == TestMedia.variantSizes[2].width }, "pictures of the new variant, then none of the old")
        let times = shown.map(\.itemNanoseconds)
        let repeated = zip(times, times.dropFirst()).filter { $0 >= $1 }
        #expect(repeated.isEmpty, "pictures shown again or out of order: \(repeated.prefix(3))")
        // Every picture from the last one shown before the move was asked for is shown, or
        // counted as dropped for coming too late (the media's 25 a second).
        let ask = try #require(atAsk)
        let since = Array(times[max(0, ask.shown - 1)...])
        let frame = Int64(1_000_000_000 / TestMedia.variantFramesPerSecond)
        let (first, last) = (try #require(since.first), try #require(since.last))
        let missing = Int((last - first) / frame) + 1 - since.count
        let dropped = (player.engine.videoQueue?.counts.dropped ?? 0) - ask.dropped
        #expect(missing <= dropped, "\(missing) pictures from the move on never shown, \(dropped) counted as late")
    }

    @Test("a limit set while playing that allows the variant played changes nothing")
    func aLimitThatAllowsTheVariantPlayedChangesNothing() async throws {
        let (url, info) = try master()
        let item = AVPlayerItem(url: url)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        player.play()
        #expect(await waitUntil(20) { player.currentTime().seconds > 0.5 })
        let serial = player.engine.status.serial
        item.preferredPeakBitRate = Double(info.variants[0].bandwidth)
        item.preferredMaximumResolution = CGSize(width: 640, height: 360)
        await sleepThroughQuietWindow()
        #expect(player.engine.status.serial == serial)
        #expect(playedVariant(player, info: info) == 0)
    }

    @Test("a limit on media that is not an HLS master playlist changes nothing")
    func otherMediaIgnoreTheLimit() async throws {
        let item = AVPlayerItem(url: try TestMedia.video())
        item.preferredPeakBitRate = 1
        item.preferredMaximumResolution = CGSize(width: 16, height: 16)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil(20) { item.status == .readyToPlay })
        let info = try MediaSource(url: TestMedia.video().path).info
        #expect(player.state.withLockAnnotated { $0.pictureStream } == info.preferredVideoTrack?.streamIndex)
        #expect(player.state.withLockAnnotated { $0.soundStream } == info.preferredAudioTrack?.streamIndex)
    }
}

/// An HLS item moving between its variants by itself, by what its network brings.
@Suite(.ownThread) struct VariantAdaptationTests {
    /// The throttled link's rate (bytes/s), 150 kbit/s: the low variant (64 kbit/s) with
    /// room to spare, the high one (400 kbit/s) not.
    static let linkBytesPerSecond = 150_000 / 8

    /// A player of the master playlist at `url`, played from the variant listed first (as
    /// Apple's players start) until its item has moved to the low one, and a count of its
    /// item's failures.
    static func playUntilMovedDown(_ url: String) async throws -> (AVPlayer, AVPlayerItem, NotificationCounter) {
        let item = AVPlayerItem(url: try #require(URL(string: url)))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        let failed = NotificationCounter(AVPlayerItem.failedToPlayToEndTimeNotification, object: item)
        #expect(await waitUntil(30) { item.status == .readyToPlay })
        #expect(item.indicatedBitrate == Double(TestMedia.variantBandwidths.high))
        player.play()
        #expect(await waitUntil(60) { item.indicatedBitrate == Double(TestMedia.variantBandwidths.low) },
                "the network brought \(item.variantAdaptation.withLockAnnotated { $0.estimate.bitsPerSecond ?? -1 }) bit/s")
        return (player, item, failed)
    }

    @Test("an item whose network cannot carry its variant moves to one it can, from the time reached, and plays on")
    func aSlowNetworkMovesTheItemDown() async throws {
        let folder = try TestMedia.hlsSoundVariants(seconds: 40)
        let server = try ThrottledHTTPServer(serving: folder, bytesPerSecond: Self.linkBytesPerSecond)
        defer { server.stop() }
        let (player, item, failed) = try await Self.playUntilMovedDown(server.url("master.m3u8"))
        defer { player.close() }
        // The low variant's segments are read from the time reached (not only the first,
        // which every opening of the master probes).
        #expect(await waitUntil(30) { server.requests.contains { $0.hasPrefix("low/segment") && $0 > "low/segment002.ts" } },
                "requests: \(server.requests)")
        // ... and it plays on: ten seconds more are heard, and nothing failed.
        let reached = player.currentTime()
        #expect(await waitUntil(40) { player.currentTime() >= reached + CMTime(value: 10, timescale: 1) })
        #expect(failed.value == 0 && item.error == nil)
        #expect(item.indicatedBitrate == Double(TestMedia.variantBandwidths.low))
        // The access log counts the seconds played at the player's monitor ticks, so it may
        // be a tick behind the clock's time.
        #expect(await waitUntil(5) { (item.accessLog()?.events.last?.durationWatched ?? 0) >= 10 })
        // The access log has an event for each variant played since the first play (the
        // high one's only if it played before the move), the low one's last.
        let events = try #require(item.accessLog()?.events)
        let played = events.map { Int($0.indicatedBitrate) }
        #expect(played == [TestMedia.variantBandwidths.low] || played == [TestMedia.variantBandwidths.high, TestMedia.variantBandwidths.low],
                "events for \(played) bit/s")
        #expect(events.last.map { $0.durationWatched >= 10 } ?? false, "\(events.last?.durationWatched ?? 0) s on the low variant")
        // Every byte in one event or another: read since, the item's count is no lower.
        let logged = events.map(\.numberOfBytesTransferred).reduce(0, +)
        #expect(logged > 0 && logged <= item.networkActivity.total)
    }
}

/// A live HLS stream moving between its variants by itself.
@Suite(.ownThread) struct LiveVariantAdaptationTests {
    @Test("a live stream whose network cannot carry its variant moves to one it can, where it stood, and plays on")
    func aSlowNetworkMovesALiveStreamDown() async throws {
        let folder = try TestMedia.hlsSoundVariants(seconds: 40)
        // Each variant's finished segments, listed six at a time and moved on every second,
        // as a live encoder writes them, under a master playlist of its own.
        var playlists: [SlidingPlaylist] = []
        for name in ["high", "low"] {
            let variant = folder.appendingPathComponent(name)
            let segments = try FileManager.default.contentsOfDirectory(atPath: variant.path).filter { $0.hasSuffix(".ts") }.sorted()
            playlists.append(try SlidingPlaylist(segments: segments, in: variant, name: "live.m3u8", window: 6))
        }
        defer { for playlist in playlists { playlist.stop() } }
        try """
            #EXTM3U
            #EXT-X-STREAM-INF:BANDWIDTH=\(TestMedia.variantBandwidths.high),CODECS="mp4a.40.2"
            high/live.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=\(TestMedia.variantBandwidths.low),CODECS="mp4a.40.2"
            low/live.m3u8

            """.write(to: folder.appendingPathComponent("live-master.m3u8"), atomically: true, encoding: .utf8)
        let server = try ThrottledHTTPServer(serving: folder, bytesPerSecond: VariantAdaptationTests.linkBytesPerSecond)
        defer { server.stop() }
        let (player, item, failed) = try await VariantAdaptationTests.playUntilMovedDown(server.url("live-master.m3u8"))
        defer { player.close() }
        #expect(item.duration.isIndefinite)
        // It plays on from where it stood: the time runs on, never back, and nothing failed.
        let reached = player.currentTime()
        var times: [CMTime] = []
        #expect(await waitUntil(40) {
            times.append(player.currentTime())
            return player.currentTime() >= reached + CMTime(value: 6, timescale: 1)
        })
        #expect(zip(times.dropFirst(), times).allSatisfy { $0 >= $1 }, "the time went back")
        #expect(failed.value == 0 && item.error == nil)
        #expect(item.indicatedBitrate == Double(TestMedia.variantBandwidths.low))
    }
}
