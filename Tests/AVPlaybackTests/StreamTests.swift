import Foundation
import Testing
import ChorusTestSupport
@testable import AVPlayback
import MediaPipeline
import MediaServer

/// Items over HTTP: HLS on demand and live, and servers that stall, drop a connection or go
/// away mid-stream.
@Suite(.ownThread) struct StreamTests {
    /// Publishes an HLS presentation's playlist and segments on `server`; returns the
    /// playlist's URL. `playlist` replaces the on-demand one when given (a live window).
    func publish(_ hls: (folder: URL, segments: [String]), on server: MediaHTTPServer, id: String,
                 playlist: URL? = nil) throws -> URL {
        for name in hls.segments { _ = server.publish(hls.folder.appendingPathComponent(name), id: id) }
        let path = server.publish(playlist ?? hls.folder.appendingPathComponent("index.m3u8"), id: id)
        return try #require(URL(string: "http://127.0.0.1:\(server.port)\(path)"))
    }

    /// A live stream over `hls`'s segments on a server of its own: a window of `window`
    /// segments moved on by one a second, as a live encoder's is, published as `name`.
    func serveLive(_ hls: (folder: URL, segments: [String]), window: Int, name: String, discontinuityBefore: String? = nil) throws
        -> (server: MediaHTTPServer, live: SlidingPlaylist, url: URL) {
        let server = try MediaHTTPServer(address: "127.0.0.1", port: 0)
        let live = try SlidingPlaylist(segments: hls.segments, in: hls.folder, name: "\(name).m3u8", window: window,
                                       discontinuityBefore: discontinuityBefore)
        return (server, live, try publish(hls, on: server, id: name, playlist: live.playlist))
    }

    /// A player of `url` on a silent device, recording when each period was heard into the
    /// returned capture file, playing once its item is ready (the caller closes it).
    func playCapturing(_ url: URL, name: String) async throws -> (player: AVPlayer, item: AVPlayerItem, capture: String) {
        let path = TestMedia.folder.appendingPathComponent("\(name)-\(UUID().uuidString).cap").path
        let item = AVPlayerItem(url: url)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0), hostClock: .hostTimeClock, hostMapping: { $0 },
                              capture: try RenderCapture(path: path))
        player.play()
        #expect(await waitUntil(20) { item.status == .readyToPlay })
        return (player, item, path)
    }

    @Test("an HLS playlist on demand plays to its end, sample for sample as FFmpeg decodes it")
    func hlsOnDemandPlays() async throws {
        let hls = try TestMedia.hls(seconds: 4)
        let server = try MediaHTTPServer(address: "127.0.0.1", port: 0)
        defer { server.stop() }
        let url = try publish(hls, on: server, id: "vod")
        let played = Collected<AVPlayerItem>()
        let rendered = try await renderToPCM(url, name: "hls-vod") { _, item in played.append(item) }
        let reference = try PCM.ffmpegDecode(hls.folder.appendingPathComponent("index.m3u8"), channels: 2)
        #expect(rendered.frameCount == reference.frameCount, "\(rendered.frameCount) frames of \(reference.frameCount)")
        #expect(rendered.maximumDifference(from: reference) <= 1e-6)
        // Its access log counts every segment's bytes, read over the demuxer's one
        // persistent connection to them, and the playlist's.
        let segmentBytes = try hls.segments.reduce(0) { total, name in
            total + (try FileManager.default.attributesOfItem(atPath: hls.folder.appendingPathComponent(name).path)[.size] as? Int ?? 0)
        }
        let event = try #require(played.all.first?.accessLog()?.events.first)
        #expect(event.numberOfBytesTransferred >= Int64(segmentBytes), "\(event.numberOfBytesTransferred) bytes, segments \(segmentBytes)")
        #expect(event.numberOfBytesTransferred <= Int64(segmentBytes) + 64 * 1024, "\(event.numberOfBytesTransferred) bytes, segments \(segmentBytes)")
        #expect(event.observedBitrate > 0)
        #expect(event.transferDuration > 0 && event.playbackType == "VOD" && event.playbackSessionID != nil)
        // Figures this player does not measure are negative, as Apple's unknowns are.
        #expect(event.numberOfDroppedVideoFrames < 0 && event.startupTime < 0)
        // The W3C extended form: a header naming the fields, then the event's line.
        let log = try #require(played.all.first?.accessLog())
        let text = try #require(log.extendedLogData().flatMap { String(data: $0, encoding: .utf8) })
        #expect(log.extendedLogDataStringEncoding == String.Encoding.utf8.rawValue)
        let lines = text.split(separator: "\n")
        #expect(lines.first == "#Version: 1.0" && lines.contains { $0.hasPrefix("#Fields: date time") })
        #expect(lines.last?.contains(url.absoluteString) == true && lines.last?.contains("VOD") == true, "\(text)")
    }

    @Test("an HLS stream's access log counts its segments' bytes as they come, over the demuxer's one connection to them")
    func hlsBytesCountWhilePlaying() async throws {
        let hls = try TestMedia.hls(seconds: 8)
        let server = try MediaHTTPServer(address: "127.0.0.1", port: 0)
        defer { server.stop() }
        let item = AVPlayerItem(url: try publish(hls, on: server, id: "bytes"))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        player.play()
        #expect(await waitUntil(20) { player.currentTime().seconds > 3 })
        // Three seconds heard: at least the first three segments read, while the
        // connection they came over is still open.
        let firstThree = try hls.segments.prefix(3).reduce(0) { total, name in
            total + (try FileManager.default.attributesOfItem(atPath: hls.folder.appendingPathComponent(name).path)[.size] as? Int ?? 0)
        }
        let bytes = try #require(item.accessLog()?.events.first?.numberOfBytesTransferred)
        #expect(bytes >= Int64(firstThree), "\(bytes) bytes, the first three segments \(firstThree)")
    }

    @Test("an HLS segment the server does not have is skipped, as FFmpeg's demuxer skips it, and is in the item's error log")
    func aMissingSegmentIsInTheErrorLog() async throws {
        let hls = try TestMedia.hls(seconds: 6)
        let server = try MediaHTTPServer(address: "127.0.0.1", port: 0)
        defer { server.stop() }
        // Every segment but the third is served.
        let missing = hls.segments[2]
        for name in hls.segments where name != missing { _ = server.publish(hls.folder.appendingPathComponent(name), id: "gap") }
        let url = try #require(URL(string: "http://127.0.0.1:\(server.port)\(server.publish(hls.folder.appendingPathComponent("index.m3u8"), id: "gap"))"))
        let item = AVPlayerItem(url: url)
        let logged = NotificationCounter(AVPlayerItem.newErrorLogEntryNotification, object: item)
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        player.play()
        #expect(await waitUntil(30) { ended.value > 0 || item.status == .failed })
        #expect(item.status == .readyToPlay, "\(String(describing: item.error))")
        let events = item.errorLog()?.events ?? []
        let event = try #require(events.first { $0.uri?.hasSuffix("/\(missing)") == true }, "\(events.map { $0.uri ?? "" })")
        #expect(event.errorStatusCode == 404, "\(event.errorComment ?? "")")
        #expect(await waitUntil(5) { logged.value >= 1 })
    }

    @Test("an asset whose kind is unknown loads its keys, then plays: the guide's route for any URL")
    func anyURLThroughTheAssetsKeys() async throws {
        let hls = try TestMedia.hls(seconds: 4)
        let server = try MediaHTTPServer(address: "127.0.0.1", port: 0)
        defer { server.stop() }
        let url = try publish(hls, on: server, id: "asset")
        let asset = AVURLAsset(url: url)
        let loaded = Collected<Bool>()
        asset.loadValuesAsynchronously(forKeys: ["playable"]) {
            var error: NSError?
            loaded.append(asset.statusOfValue(forKey: "playable", error: &error) == .loaded)
        }
        #expect(await waitUntil(20) { loaded.count == 1 })
        #expect(loaded.all == [true] && asset.isPlayable)
        let item = AVPlayerItem(asset: asset)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        player.play()
        #expect(await waitUntil(20) { player.currentTime().seconds > 0.5 })
        #expect(item.duration.isNumeric && abs(item.duration.seconds - 4) < 0.1)
    }

    /// An HLS stream spliced with `EXT-X-DISCONTINUITY` at 2 s, over HTTP: its times jump
    /// forward 50 s (an advertisement cut in) or back 50 s (an encoder restarting at zero).
    /// The pictures after the splice are shown in turn with the sound, not left frozen on
    /// the last one before it.
    @Test("pictures play on across an HLS discontinuity, each shown at its number's time", arguments: [(0, 50), (50, 0)])
    func picturesPlayOnAcrossADiscontinuity(offsets: (Int, Int)) async throws {
        let hls = try TestMedia.splicedHLS(seconds: 4, offsets: offsets)
        let server = try MediaHTTPServer(address: "127.0.0.1", port: 0)
        defer { server.stop() }
        let url = try publish(hls, on: server, id: "spliced")
        let item = AVPlayerItem(url: url)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let layer = AVPlayerLayer(player: player)
        #expect(await waitUntil { item.status == .readyToPlay })
        player.play()
        // Refreshed every 3 ms on this thread, as a display's own thread refreshes.
        var shown: [(number: Int, itemNanoseconds: Int64)] = []
        let deadline = HostTime.now() + .seconds(15)
        while HostTime.now() < deadline, player.timeControlStatus != .paused || shown.isEmpty {
            if let planes = layer.picture(forRefreshAt: HostTime.now()), let luma = planes.plane0 {
                layer.didPresent(number: planes.info.number, at: HostTime.now())
                let number = TestMedia.identity(luma: luma, stride: planes.stride0, width: planes.info.width, height: planes.info.height)
                if shown.last?.number != number { shown.append((number, planes.info.itemNanoseconds)) }
            }
            usleep(3_000)
        }
        #expect(player.timeControlStatus == .paused, "played to the end")
        // The pictures after the splice were shown, in order, nearly every one of them.
        let after = shown.filter { $0.number >= 50 }
        #expect(after.count >= 40, "\(after.count) of the 50 pictures after the splice shown")
        #expect(zip(shown, shown.dropFirst()).allSatisfy { $0.number < $1.number })
        // Each at its place on the item's timeline: its number's picture period after the
        // first one shown of its half (the sound, which ran on, sets where the half starts).
        for half in [shown.filter { $0.number < 50 }, after] {
            guard let first = half.first else { continue }
            // (To a µs: each time is rounded to the ns from the stream's 90 kHz clock.)
            let offPeriods = half.filter { abs($0.itemNanoseconds - first.itemNanoseconds - Int64($0.number - first.number) * 40_000_000) > 1_000 }
            #expect(offPeriods.count <= 0, "\(offPeriods.prefix(3)) not at their numbers' times")
        }
        // The item's time ran on through the splice: it ended four seconds in, not 54 (or -46).
        #expect(abs(player.currentTime().seconds - 4.05) < 0.1, "ended at \(player.currentTime().seconds) s")
    }

    /// An on-demand stream spliced at 4 s, its times jumping back 50 s there (an encoder
    /// restarted at zero, an advertisement stamped from zero). Paused, it is sought past the
    /// splice before reading reached it, then played to its end; then sought back before the
    /// splice and played to the end again. A seek FFmpeg's demuxer made itself would skip
    /// every packet to the end there: nothing shown, and the item ended at once.
    ///
    /// Also under a master playlist of two variants, whose media playlists the new opening
    /// fetches and cuts each in turn.
    @Test("in an on-demand HLS stream whose times go back at a splice, a seek past the splice shows the pictures there and plays on, and a seek back before it too",
          arguments: ["index.m3u8", "spliced-master.m3u8"])
    func onDemandSeekPastASpliceBack(playlist: String) async throws {
        let hls = try TestMedia.splicedHLS(seconds: 8, offsets: (50, 0))
        try """
            #EXTM3U
            #EXT-X-STREAM-INF:BANDWIDTH=900000,RESOLUTION=320x240
            index.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=320x240
            index.m3u8?second

            """.write(to: hls.folder.appendingPathComponent("spliced-master.m3u8"), atomically: true, encoding: .utf8)
        let server = try MediaHTTPServer(address: "127.0.0.1", port: 0)
        defer { server.stop() }
        let path = server.publishFolder(of: hls.folder.appendingPathComponent(playlist), id: "spliced-back")
        let url = try #require(URL(string: "http://127.0.0.1:\(server.port)\(path)"))
        let (shown, ready) = await ShownPlayer.open(url, timeout: 20)
        let (item, player, layer, ended, failed) = (shown.item, shown.player, shown.layer, shown.ended, shown.failed)
        defer { player.close() }
        #expect(ready)
        for (round, seconds) in [6, 1].enumerated() {
            let finished = Collected<Bool>()
            player.seek(to: CMTime(value: Int64(seconds), timescale: 1), toleranceBefore: .zero, toleranceAfter: .zero) { finished.append($0) }
            #expect(await waitUntil(20) { finished.all == [true] })
            // The picture standing at the target. Past the splice it depends on whether the
            // reader had crossed the splice before the seek: then the sound placed the second
            // half (53 ms later than the playlist: the first half's sound runs 32 ms past its
            // pictures, with its encoder's priming and its last frame's padding, and the
            // second half's pictures start 21 ms after its sound), and picture 148 stands at
            // 6 s; if not, the playlist placed it, and picture 150 does. Before the splice,
            // the pictures start 21 ms after the sound (item time 0): picture 24 stands at 1 s.
            let picture = await waitForIdentityPicture(in: layer, numbered: seconds == 6 ? 148...150 : 24...24, timeout: 10)
            #expect(picture.shown, "at \(seconds) s: picture \(picture.number)")
            player.play()
            #expect(await waitUntil(20) { ended.value == round + 1 }, "at \(player.currentTime().seconds) s")
            #expect(player.currentTime().seconds > 7.9, "ended at \(player.currentTime().seconds) s")
        }
        #expect(failed.value == 0 && item.error == nil)
    }

    /// A server that wants its own user agent, a token in a header and a cookie gets them on
    /// every request for the asset: the playlists Chorus reads itself, the ones FFmpeg's
    /// demuxer reads, and every segment, before and after a seek past the splice of a
    /// spliced stream (which opens the stream again from a cut playlist in memory, whose
    /// demuxer has no first request to copy them from).
    @Test("an asset's user agent, header fields and cookies go with every request for it, after a seek too")
    func requestFieldsGoWithEveryRequest() async throws {
        let hls = try TestMedia.splicedHLS(seconds: 8, offsets: (50, 0))
        let server = try ThrottledHTTPServer(serving: hls.folder, bytesPerSecond: 0)
        defer { server.stop() }
        let options: [String: Any] = [AVURLAssetHTTPUserAgentKey: "ChorusTest/1.0", AVURLAssetHTTPHeaderFieldsKey: ["X-Room": "kitchen"],
                                      AVURLAssetHTTPCookiesKey: ["session=s3cr3t; domain=127.0.0.1; path=/"]]
        do {
            let asset = AVURLAsset(url: try #require(URL(string: server.url("index.m3u8"))), options: options)
            let item = AVPlayerItem(asset: asset)
            let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
            defer { player.close() }
            let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
            #expect(await waitUntil(20) { item.status == .readyToPlay })
            let sought = Collected<Bool>()
            player.seek(to: CMTime(value: 6, timescale: 1), toleranceBefore: .zero, toleranceAfter: .zero) { sought.append($0) }
            #expect(await waitUntil(20) { sought.all == [true] })
            let beforePlay = server.requestHeads.count
            player.play()
            #expect(await waitUntil(20) { ended.value == 1 })
            #expect(server.requestHeads.count > beforePlay || beforePlay > 2, "requests after the seek")
            #expect(HTTPRequestFields.fields(for: server.url("index.m3u8"))?.userAgent == "ChorusTest/1.0")
        }
        let heads = server.requestHeads
        #expect(heads.count >= 4, "\(heads.count) requests")
        for head in heads {
            let request = head.prefix { $0 != "\r" }
            #expect(head.contains("User-Agent: ChorusTest/1.0\r\n"), "\(request)")
            #expect(head.contains("X-Room: kitchen\r\n"), "\(request)")
            #expect(head.contains("session=s3cr3t"), "\(request)")
        }
        // Withdrawn with its asset: a later asset of the same server sends FFmpeg's own.
        #expect(await waitUntil(5) { HTTPRequestFields.fields(for: server.url("index.m3u8")) == nil })
    }

    /// The same stream's master playlist reached through a redirect from another folder, as
    /// a content network sends a player on: its variants are relative to where it came from,
    /// and the seek past the splice still opens the stream at the segment holding it.
    @Test("after a redirect to a spliced on-demand master playlist, a seek past the splice shows the pictures there and plays on")
    func onDemandSeekPastASpliceAfterARedirect() async throws {
        let hls = try TestMedia.splicedHLS(seconds: 8, offsets: (50, 0))
        try """
            #EXTM3U
            #EXT-X-STREAM-INF:BANDWIDTH=900000,RESOLUTION=320x240
            index.m3u8

            """.write(to: hls.folder.appendingPathComponent("redirected-master.m3u8"), atomically: true, encoding: .utf8)
        let server = try ThrottledHTTPServer(serving: hls.folder, bytesPerSecond: 0)
        defer { server.stop() }
        server.redirect("start/master.m3u8", to: server.url("redirected-master.m3u8"))
        let (shown, ready) = await ShownPlayer.open(try #require(URL(string: server.url("start/master.m3u8"))), timeout: 20)
        defer { shown.player.close() }
        #expect(ready)
        let finished = Collected<Bool>()
        shown.player.seek(to: CMTime(value: 6, timescale: 1), toleranceBefore: .zero, toleranceAfter: .zero) { finished.append($0) }
        #expect(await waitUntil(20) { finished.all == [true] })
        // As in `onDemandSeekPastASpliceBack`: 150 by the playlist, 148 by the sound.
        let picture = await waitForIdentityPicture(in: shown.layer, numbered: 148...150, timeout: 10)
        #expect(picture.shown, "picture \(picture.number)")
        #expect(server.requests.contains("index.m3u8") && !server.requests.contains("start/index.m3u8"), "\(server.requests)")
        shown.player.play()
        #expect(await waitUntil(20) { shown.ended.value == 1 }, "at \(shown.player.currentTime().seconds) s")
        #expect(shown.failed.value == 0 && shown.item.error == nil)
    }

    @Test("playImmediately starts a network item with the sound there is; play waits for a second of it")
    func playImmediatelyWaitsForNoBuffer() async throws {
        let (server, url) = try ThrottledHTTPServer.serving(try TestMedia.tone(.wav, seconds: 4, rate: 48_000), bytesPerSecond: 0)
        defer { server.stop() }
        let item = AVPlayerItem(url: url)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil(20) { item.status == .readyToPlay })
        // What the render thread is told to have queued before it sounds.
        func startBuffer() -> Int { player.engine.currentControl?.startBufferFrames ?? -1 }
        player.play()
        #expect(startBuffer() == 48_000)
        // Asked while play waits (or plays) at that rate: it waits no more.
        player.playImmediately(atRate: 1)
        #expect(startBuffer() == 0)
        #expect(await waitUntil(10) { player.timeControlStatus == .playing })
        // A seek's restart waits again, as does the next play.
        player.seek(to: .zero) { _ in }
        #expect(startBuffer() == 48_000)
        player.pause()
        player.playImmediately(atRate: 1)
        #expect(startBuffer() == 0)
        player.pause()
        player.play()
        #expect(startBuffer() == 48_000)
    }

    /// An on-demand HLS stream whose playlist dates its segments: the item tells the date of
    /// its current time, and a date seek lands where the playlist puts that date.
    @Test("an HLS stream whose playlist dates its segments tells the date it stands at, and seeks to a date")
    func programDatesAreToldAndSoughtTo() async throws {
        let hls = try TestMedia.hls(seconds: 4)
        let original = try String(contentsOf: hls.folder.appendingPathComponent("index.m3u8"), encoding: .utf8)
        // Dated from the second segment on (the first is dated back from it).
        let first = try #require(original.range(of: "#EXTINF"))
        let second = try #require(original.range(of: "#EXTINF", range: first.upperBound..<original.endIndex))
        let dated = original.replacingCharacters(in: second.lowerBound..<second.lowerBound, with: "#EXT-X-PROGRAM-DATE-TIME:2026-11-28T09:00:01.000Z\n")
        try dated.write(to: hls.folder.appendingPathComponent("dated.m3u8"), atomically: true, encoding: .utf8)
        let server = try ThrottledHTTPServer(serving: hls.folder, bytesPerSecond: 0)
        defer { server.stop() }
        let nine = Date(timeIntervalSince1970: 1_795_856_400)

        let item = AVPlayerItem(url: try #require(URL(string: server.url("dated.m3u8"))))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        // The second segment begins where the first one's duration puts it.
        let firstDuration = try #require(Double(original[first.upperBound...].dropFirst().prefix { $0 != "," }))
        #expect(await waitUntil(20) { item.status == .readyToPlay && item.currentDate() != nil })
        // At time 0: the first segment's length before 09:00:01.
        let start = try #require(item.currentDate())
        #expect(abs(start.timeIntervalSince(nine) - (1 - firstDuration)) < 0.001, "\(start)")
        // 09:00:02.5 is 1.5 s into the second segment.
        let sought = await player.seek(to: nine.addingTimeInterval(2.5))
        #expect(sought)
        let target = firstDuration + 1.5
        #expect(abs(player.currentTime().seconds - target) < 0.001, "\(player.currentTime().seconds)")
        let there = try #require(item.currentDate())
        #expect(abs(there.timeIntervalSince(nine) - 2.5) < 0.001)
        // A date the playlist does not hold: refused, and the item stays where it was.
        #expect(!item.seek(to: nine.addingTimeInterval(-60)))
        let refused = await player.seek(to: nine.addingTimeInterval(3_600))
        #expect(!refused)
        #expect(abs(player.currentTime().seconds - target) < 0.001)
        // An item without dates has none.
        let plain = AVPlayerItem(url: try #require(URL(string: server.url("index.m3u8"))))
        player.replaceCurrentItem(with: plain)
        #expect(await waitUntil(20) { plain.status == .readyToPlay && plain.programDatesRead })
        #expect(plain.currentDate() == nil)
        #expect(!plain.seek(to: nine))
    }

    /// A live stream spliced at 4 s, its times jumping back 50 s there (an encoder restarted
    /// at zero): played across the splice, then sought back to just after it, which opens the
    /// stream again at that segment. The new opening closes the jump up as the first did, so
    /// the seek lands on its exact sample of the item's run-on time (without it, every packet
    /// of the new opening lay 50 s before the target, and none was ever due).
    @Test("a live stream opened again for a seek past a splice keeps the item's run-on time")
    func liveSeekPastASplice() async throws {
        let hls = try TestMedia.splicedHLS(seconds: 8, offsets: (50, 0))
        let (server, live, url) = try serveLive(hls, window: 6, name: "live-spliced", discontinuityBefore: "b000.ts")
        defer {
            live.stop()
            server.stop()
        }
        let (player, item, path) = try await playCapturing(url, name: "live-splice")
        defer { player.close() }
        // The first half's sound runs from 51.4 s of the stream's time (ffmpeg's muxer adds
        // 1.4 s) for 4.027 s (its AAC frames, with the encoder's priming); the second half's
        // is closed up onto its end.
        let splice = 51.4 + 4.0267
        // Once the window has moved on far enough for the range to reach past the splice.
        #expect(await waitUntil(20) {
            player.currentTime().seconds > splice + 0.5 && (item.seekableTimeRanges.first?.timeRangeValue.end.seconds ?? 0) > splice + 0.5
        }, "at \(player.currentTime().seconds) s, the range \(String(describing: item.seekableTimeRanges.first?.timeRangeValue))")
        let target = CMTime(value: Int64((splice + 0.25) * 48_000), timescale: 48_000)
        let range = item.seekableTimeRanges.first?.timeRangeValue
        #expect(range.map { $0.containsTime(target) } == true, "the range \(String(describing: range)) holds \(target.seconds) s")
        let before = try #require(try RenderCaptureLog(path: path).periods.last?.serial)
        let finished = Collected<Bool>()
        player.seek(to: target) { finished.append($0) }
        #expect(await waitUntil(20) { finished.all == [true] })
        #expect(await waitUntil(20) { (try? RenderCaptureLog(path: path).periods.contains { $0.serial > before }) == true })
        let run = try RenderCaptureLog(path: path).periods.filter { $0.serial > before }
        #expect(run.first?.position == Double(target.value), "the seek's first frame heard: \(run.first?.position ?? -1), asked \(target.value)")
        #expect(await waitUntil(10) { player.currentTime() > target + CMTime(value: 1, timescale: 2) }, "at \(player.currentTime().seconds) s")
    }

    @Test("a live HLS playlist plays, its duration indefinite")
    func liveHLSPlays() async throws {
        let hls = try TestMedia.hls(seconds: 12)
        // A live window of three segments, moved on by one a second, as a live encoder's is.
        let (server, live, url) = try serveLive(hls, window: 3, name: "live")
        defer {
            live.stop()
            server.stop()
        }
        let item = AVPlayerItem(url: url)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        player.play()
        #expect(await waitUntil(20) { item.status == .readyToPlay })
        #expect(item.duration == .indefinite)
        #expect(await waitUntil(20) { player.timeControlStatus == .playing })
        let started = player.currentTime().seconds
        #expect(await waitUntil(20) { player.currentTime().seconds > started + 1.5 })
        #expect(item.status == .readyToPlay)
    }

    @Test("a live HLS playlist's seekable range moves on with it, and a seek inside it lands on the exact sample, an earlier segment opened again")
    func liveHLSSeeksWithinItsWindow() async throws {
        let hls = try TestMedia.hls(seconds: 30)
        // A live window of five segments, moved on by one a second.
        let (server, live, url) = try serveLive(hls, window: 5, name: "live-window")
        defer {
            live.stop()
            server.stop()
        }
        let (player, item, path) = try await playCapturing(url, name: "live-seek")
        defer { player.close() }
        #expect(item.duration == .indefinite)
        // The range: from the first segment listed to three target durations before the end,
        // in the stream's own time (the same for every client). It moves on a second a second.
        var starts: [Double] = []
        #expect(await waitUntil(20) {
            guard let range = item.seekableTimeRanges.first?.timeRangeValue else { return false }
            if starts.last != range.start.seconds { starts.append(range.start.seconds) }
            return starts.count >= 3
        }, "range starts seen: \(starts)")
        #expect(starts == starts.sorted(), "the range moved back: \(starts)")
        let range = try #require(item.seekableTimeRanges.first?.timeRangeValue)
        #expect(abs(range.duration.seconds - 2) < 0.1, "five 1 s segments, less three of hold-back: \(range)")
        // Back to a place the stream was opened after: only an earlier segment, opened again, has it.
        let target = CMTime(value: Int64((range.start.seconds + 0.25) * 48_000), timescale: 48_000)
        let heard = player.currentTime()
        #expect(heard > target + CMTime(value: 1, timescale: 2), "playing at \(heard.seconds) s")
        let before = try #require(try RenderCaptureLog(path: path).periods.last?.serial)
        let finished = Collected<Bool>()
        player.seek(to: target) { finished.append($0) }
        // What the seek was clamped by, and where it put the time, for the message below.
        let rangeAtSeek = item.seekableTimeRanges.first?.timeRangeValue
        let timeAtSeek = player.currentTime()
        #expect(await waitUntil(20) { finished.all == [true] })
        // A seek completes once its sound is decoded; its first period is heard after that.
        #expect(await waitUntil(20) { (try? RenderCaptureLog(path: path).periods.contains { $0.serial > before }) == true })
        let periods = try RenderCaptureLog(path: path).periods
        let run = periods.filter { $0.serial > before }
        #expect(run.first?.position == Double(target.value), "the seek's first frame heard: \(run.first?.position ?? -1), asked \(target.value); range at the seek \(String(describing: rangeAtSeek)), time set \(timeAtSeek.value)/\(timeAtSeek.timescale); runs \(Dictionary(grouping: periods, by: \.serial).mapValues { ($0.first!.position, $0.count) }.sorted { $0.key < $1.key })")
        // Past the end of the range: the seek lands at its end.
        let far = Collected<Bool>()
        player.seek(to: CMTime(value: 1_000, timescale: 1)) { far.append($0) }
        #expect(await waitUntil(20) { far.all == [true] })
        let end = try #require(item.seekableTimeRanges.first?.timeRangeValue).end
        #expect(player.currentTime() <= end + CMTime(value: 1, timescale: 1), "at \(player.currentTime().seconds) s, the range ends at \(end.seconds) s")
    }

    @Test("a live stream's item time is its own stream time: two players opening it seconds apart hear the same sound at the same item time")
    func liveItemTimeIsTheStreamsOwn() async throws {
        let hls = try TestMedia.hls(seconds: 30)
        let (server, live, url) = try serveLive(hls, window: 5, name: "live-shared")
        defer {
            live.stop()
            server.stop()
        }
        // Each player renders what it reads to a file as it comes, and records the item frame
        // each rendered period starts at.
        func open(_ name: String) throws -> (player: AVPlayer, wav: URL, capture: String) {
            let wav = TestMedia.folder.appendingPathComponent("live-\(name)-\(UUID().uuidString).wav")
            let capture = TestMedia.folder.appendingPathComponent("live-\(name)-\(UUID().uuidString).cap").path
            let player = AVPlayer(playerItem: AVPlayerItem(url: url), output: .wav(path: wav.path), hostClock: .hostTimeClock,
                                  hostMapping: { $0 }, capture: try RenderCapture(path: capture))
            player.play()
            return (player, wav, capture)
        }
        let first = try open("first")
        // Seconds after the first is heard (its opening took longer than that on a loaded
        // machine once, and the two opened the same window).
        #expect(await waitUntil(20) { first.player.timeControlStatus == .playing })
        try await Task.sleep(for: .milliseconds(2_300))
        let second = try open("second")
        // Both read on until the second has rendered a second and a half of its own.
        #expect(await waitUntil(20) {
            guard let run = try? RenderCaptureLog(path: second.capture).lastRun, let from = run.first, let to = run.last else { return false }
            return to.position + Double(to.frames) - from.position > 72_000
        })
        first.player.close()
        second.player.close()
        func start(_ capture: String) throws -> Double { try #require(RenderCaptureLog(path: capture).lastRun.first?.position) }
        let (startA, startB) = (try start(first.capture), try start(second.capture))
        let (a, b) = (try PCM(wavFile: first.wav), try PCM(wavFile: second.wav))
        // The second opened seconds later, further on in the stream: by its item time too.
        #expect(startB - startA > 48_000, "openings at item frames \(startA) and \(startB)")
        // Half a second from the second's start on (clear of its decoder's first frames),
        // the same item frames hold the same sound.
        let common = Int(startB - startA) + 24_000
        let span = 24_000
        #expect(a.frameCount >= common + span && b.frameCount >= 24_000 + span, "\(a.frameCount) and \(b.frameCount) frames")
        var worst: Float = 0
        for frame in 0..<span {
            for channel in 0..<2 {
                worst = max(worst, abs(a.samples[(common + frame) * 2 + channel] - b.samples[(24_000 + frame) * 2 + channel]))
            }
        }
        #expect(worst < 1e-4, "the same item time held sounds \(worst) apart")
    }

    @Test("a connection dropped mid-file is made again where it stopped, and every sample is heard")
    func aDroppedConnectionIsResumed() async throws {
        let source = try TestMedia.tone(.flac, seconds: 4, rate: 48_000, channels: 2)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: source.path)[.size] as? Int)
        let server = try FaultyHTTPServer(serving: source, fault: .drop(atByte: size / 2))
        defer { server.stop() }
        let rendered = try await renderToPCM(server.url, name: "dropped")
        let reference = try PCM.ffmpegDecode(source, channels: 2)
        #expect(rendered.frameCount == reference.frameCount)
        #expect(rendered.maximumDifference(from: reference) == 0)
        #expect(server.connections >= 2, "the player reconnected")
    }

    @Test("a server that goes away mid-stream fails the item with an error that names it, and nothing hangs")
    func aServerThatDiesFailsTheItem() async throws {
        let source = try TestMedia.tone(.wav, seconds: 6, rate: 48_000, channels: 2)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: source.path)[.size] as? Int)
        let server = try FaultyHTTPServer(serving: source, fault: .die(atByte: size / 3))
        defer { server.stop() }
        let item = AVPlayerItem(url: server.url)
        let failed = NotificationCounter(AVPlayerItem.failedToPlayToEndTimeNotification, object: item)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        player.play()
        // Within the read timeout (5 s) and the time the decoded sound lasts.
        #expect(await waitUntil(30) { failed.value > 0 || item.status == .failed })
        #expect(item.error.map { "\($0)" }?.contains("127.0.0.1:\(server.port)") == true, "\(String(describing: item.error))")
        // The failure is in the item's error log, and what played before it in its access log.
        let errors = try #require(item.errorLog()?.events)
        #expect(errors.count == 1)
        #expect(errors.first?.uri == server.url.absoluteString)
        #expect(errors.first?.serverAddress == "127.0.0.1")
        #expect(errors.first?.errorComment?.isEmpty == false)
        let played = try #require(item.accessLog()?.events.first)
        #expect(played.durationWatched > 0 && played.playbackStartDate != nil)
        player.close()
    }

    @Test("a file the server does not have fails the item, and its error log gives the server's status")
    func aMissingFileIsInTheErrorLog() async throws {
        let server = try MediaHTTPServer(address: "127.0.0.1", port: 0)
        defer { server.stop() }
        let url = try #require(URL(string: "http://127.0.0.1:\(server.port)/items/none/song.mp3"))
        let item = AVPlayerItem(url: url)
        let logged = NotificationCounter(AVPlayerItem.newErrorLogEntryNotification, object: item)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        player.play()
        #expect(await waitUntil(20) { item.status == .failed })
        let event = try #require(item.errorLog()?.events.first)
        #expect(event.errorStatusCode == 404, "\(event.errorComment ?? "")")
        #expect(event.errorDomain == "CoreMediaErrorDomain")
        #expect(event.uri == url.absoluteString)
        #expect(await waitUntil(5) { logged.value == 1 })
        #expect(item.accessLog() == nil, "it never played")
    }

    @Test("a server that stalls starves the player, which says so and plays on by itself when data returns")
    func aStallingServerIsWaitedFor() async throws {
        // 10 s of WAV (1.9 MB, 192 kB a second): the stall comes 600 kB in, about 3.1 s,
        // which reaches the player's socket almost at once, and lasts 4.5 s (less than the
        // 5 s read timeout): the sound runs dry for about a second and a half.
        let source = try TestMedia.tone(.wav, seconds: 10, rate: 48_000, channels: 2)
        let server = try FaultyHTTPServer(serving: source, fault: .stall(atByte: 600_000, seconds: 4.5))
        defer { server.stop() }
        let item = AVPlayerItem(url: server.url)
        let stalled = NotificationCounter(AVPlayerItem.playbackStalledNotification, object: item)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        player.play()
        #expect(await waitUntil(20) { stalled.value > 0 })
        #expect(await waitUntil(20) { player.timeControlStatus == .playing && player.currentTime().seconds > 6 })
        #expect(item.status == .readyToPlay, "\(String(describing: item.error))")
        #expect(player.rate == 1, "at \(player.currentTime().seconds) s, \(server.connections) connections, stalled on \(String(describing: server.faultedOn))")
        // The access log counts the stall, the seconds played (more than six of the item's,
        // at speed 1) and the rate the file declares (48 kHz, two channels of 16 bits).
        let played = try #require(item.accessLog()?.events.first)
        #expect(played.numberOfStalls >= 1)
        #expect(played.durationWatched > 5, "\(played.durationWatched) s")
        #expect(played.indicatedBitrate == 1_536_000)
        #expect(played.uri == server.url.absoluteString)
        // The observed rate counts the stall: the reader waited inside its reads for the
        // sound that ran dry, so the bytes came over more than a second of reading (a
        // loopback transfer with no stall comes at hundreds of Mbit/s).
        let sizeInBits = Double(try #require(try FileManager.default.attributesOfItem(atPath: source.path)[.size] as? Int)) * 8
        #expect(played.observedBitrate > 0 && played.observedBitrate < sizeInBits, "\(played.observedBitrate) bit/s")
        // The bytes read for it: at least the six seconds heard, and no byte counted twice
        // (one connection, not cut: at most the file).
        let size = try #require(try FileManager.default.attributesOfItem(atPath: source.path)[.size] as? Int)
        #expect(played.numberOfBytesTransferred >= 6 * 192_000, "\(played.numberOfBytesTransferred) bytes")
        #expect(played.numberOfBytesTransferred <= Int64(size), "\(played.numberOfBytesTransferred) bytes of \(size)")
        #expect(item.errorLog() == nil)
    }
}
