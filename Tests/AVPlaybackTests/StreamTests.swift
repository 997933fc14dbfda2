import Foundation
import Testing
import ChorusTestSupport
@testable import AVPlayback
import MediaServer

/// Items over HTTP: HLS on demand and live, and servers that stall, drop a connection or go
/// away mid-stream.
@Suite struct StreamTests {
    /// Publishes an HLS presentation's playlist and segments on `server`; returns the
    /// playlist's URL. `playlist` replaces the on-demand one when given (a live window).
    func publish(_ hls: (folder: URL, segments: [String]), on server: MediaHTTPServer, id: String,
                 playlist: URL? = nil) throws -> URL {
        for name in hls.segments { _ = server.publish(hls.folder.appendingPathComponent(name), id: id) }
        let path = server.publish(playlist ?? hls.folder.appendingPathComponent("index.m3u8"), id: id)
        return try #require(URL(string: "http://127.0.0.1:\(server.port)\(path)"))
    }

    @Test("an HLS playlist on demand plays to its end, sample for sample as FFmpeg decodes it")
    func hlsOnDemandPlays() throws {
        let hls = try TestMedia.hls(seconds: 4)
        let server = try MediaHTTPServer(address: "127.0.0.1", port: 0)
        defer { server.stop() }
        let url = try publish(hls, on: server, id: "vod")
        let rendered = try renderToPCM(url, name: "hls-vod")
        let reference = try PCM.ffmpegDecode(hls.folder.appendingPathComponent("index.m3u8"), channels: 2)
        #expect(rendered.frameCount == reference.frameCount, "\(rendered.frameCount) frames of \(reference.frameCount)")
        #expect(rendered.maximumDifference(from: reference) <= 1e-6)
    }

    @Test("an asset whose kind is unknown loads its keys, then plays: the guide's route for any URL")
    func anyURLThroughTheAssetsKeys() throws {
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
        #expect(waitUntil(20) { loaded.count == 1 })
        #expect(loaded.all == [true] && asset.isPlayable)
        let item = AVPlayerItem(asset: asset)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        player.play()
        #expect(waitUntil(20) { player.currentTime().seconds > 0.5 })
        #expect(item.duration.isNumeric && abs(item.duration.seconds - 4) < 0.1)
    }

    @Test("a live HLS playlist plays, its duration indefinite")
    func liveHLSPlays() throws {
        let hls = try TestMedia.hls(seconds: 12)
        let server = try MediaHTTPServer(address: "127.0.0.1", port: 0)
        defer { server.stop() }
        // A live window of three segments, moved on by one a second, as a live encoder's is.
        let live = hls.folder.appendingPathComponent("live.m3u8")
        @Sendable func writeWindow(from first: Int) throws {
            var text = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:\(first)\n"
            for name in hls.segments[first..<min(first + 3, hls.segments.count)] { text += "#EXTINF:1.0,\n\(name)\n" }
            try text.write(to: live, atomically: true, encoding: .utf8)
        }
        try writeWindow(from: 0)
        let url = try publish(hls, on: server, id: "live", playlist: live)
        let stop = WakeFlag()
        let mover = Thread {
            var first = 0
            while !stop.isSet, first + 3 < hls.segments.count {
                usleep(1_000_000)
                first += 1
                try? writeWindow(from: first)
            }
        }
        mover.start()
        defer { stop.set() }
        let item = AVPlayerItem(url: url)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        player.play()
        #expect(waitUntil(20) { item.status == .readyToPlay })
        #expect(item.duration == .indefinite)
        #expect(waitUntil(20) { player.timeControlStatus == .playing })
        let started = player.currentTime().seconds
        #expect(waitUntil(20) { player.currentTime().seconds > started + 1.5 })
        #expect(item.status == .readyToPlay)
    }

    @Test("a live HLS playlist's seekable range moves on with it, and a seek inside it lands on the exact sample, an earlier segment opened again")
    func liveHLSSeeksWithinItsWindow() throws {
        let hls = try TestMedia.hls(seconds: 30)
        let server = try MediaHTTPServer(address: "127.0.0.1", port: 0)
        defer { server.stop() }
        // A live window of five segments, moved on by one a second.
        let live = hls.folder.appendingPathComponent("live-window.m3u8")
        let window = 5
        @Sendable func writeWindow(from first: Int) throws {
            var text = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:\(first)\n"
            for name in hls.segments[first..<min(first + window, hls.segments.count)] { text += "#EXTINF:1.0,\n\(name)\n" }
            try text.write(to: live, atomically: true, encoding: .utf8)
        }
        try writeWindow(from: 0)
        let url = try publish(hls, on: server, id: "live-seek", playlist: live)
        let stop = WakeFlag()
        let mover = Thread {
            var first = 0
            while !stop.isSet, first + window < hls.segments.count {
                usleep(1_000_000)
                first += 1
                try? writeWindow(from: first)
            }
        }
        mover.start()
        defer { stop.set() }
        let path = TestMedia.folder.appendingPathComponent("live-seek-\(UUID().uuidString).cap").path
        let item = AVPlayerItem(url: url)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0), hostClock: .hostTimeClock, hostMapping: { $0 },
                              capture: try RenderCapture(path: path))
        defer { player.close() }
        player.play()
        #expect(waitUntil(20) { item.status == .readyToPlay })
        #expect(item.duration == .indefinite)
        // The range: from the first segment listed (item time zero is where the stream was
        // opened, three segments from the end) to three target durations before the end.
        var starts: [Double] = []
        #expect(waitUntil(20) {
            guard let range = item.seekableTimeRanges.first?.timeRangeValue else { return false }
            if starts.last != range.start.seconds { starts.append(range.start.seconds) }
            return range.start.seconds >= 1.5
        }, "range starts seen: \(starts)")
        #expect(starts == starts.sorted(), "the range moved back: \(starts)")
        let range = try #require(item.seekableTimeRanges.first?.timeRangeValue)
        #expect(abs(range.duration.seconds - 2) < 0.1, "five 1 s segments, less three of hold-back: \(range)")
        // Back to a place the stream was opened after: only an earlier segment, opened again, has it.
        let target = CMTime(value: Int64((range.start.seconds + 0.25) * 48_000), timescale: 48_000)
        let heard = player.currentTime()
        #expect(heard > target + CMTime(value: 1, timescale: 2), "playing at \(heard.seconds) s")
        let finished = Collected<Bool>()
        player.seek(to: target) { finished.append($0) }
        #expect(waitUntil(20) { finished.all == [true] })
        #expect(waitUntil(20) { player.timeControlStatus == .playing })
        let periods = try RenderCaptureLog(path: path).periods
        let run = try #require(periods.last.map { last in periods.filter { $0.serial == last.serial } })
        #expect(run.first?.position == Double(target.value), "the seek's first frame heard: \(run.first?.position ?? -1), asked \(target.value)")
        // Past the end of the range: the seek lands at its end.
        let far = Collected<Bool>()
        player.seek(to: CMTime(value: 1_000, timescale: 1)) { far.append($0) }
        #expect(waitUntil(20) { far.all == [true] })
        let end = try #require(item.seekableTimeRanges.first?.timeRangeValue).end
        #expect(player.currentTime() <= end + CMTime(value: 1, timescale: 1), "at \(player.currentTime().seconds) s, the range ends at \(end.seconds) s")
    }

    @Test("a connection dropped mid-file is made again where it stopped, and every sample is heard")
    func aDroppedConnectionIsResumed() throws {
        let source = try TestMedia.tone(.flac, seconds: 4, rate: 48_000, channels: 2)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: source.path)[.size] as? Int)
        let server = try FaultyHTTPServer(serving: source, fault: .drop(atByte: size / 2))
        defer { server.stop() }
        let rendered = try renderToPCM(server.url, name: "dropped")
        let reference = try PCM.ffmpegDecode(source, channels: 2)
        #expect(rendered.frameCount == reference.frameCount)
        #expect(rendered.maximumDifference(from: reference) == 0)
        #expect(server.connections >= 2, "the player reconnected")
    }

    @Test("a server that goes away mid-stream fails the item with an error that names it, and nothing hangs")
    func aServerThatDiesFailsTheItem() throws {
        let source = try TestMedia.tone(.wav, seconds: 6, rate: 48_000, channels: 2)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: source.path)[.size] as? Int)
        let server = try FaultyHTTPServer(serving: source, fault: .die(atByte: size / 3))
        defer { server.stop() }
        let item = AVPlayerItem(url: server.url)
        let failed = NotificationCounter(AVPlayerItem.failedToPlayToEndTimeNotification, object: item)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        player.play()
        // Within the read timeout (5 s) and the time the decoded sound lasts.
        #expect(waitUntil(30) { failed.value > 0 || item.status == .failed })
        #expect(item.error.map { "\($0)" }?.contains("127.0.0.1:\(server.port)") == true, "\(String(describing: item.error))")
        player.close()
    }

    @Test("a server that stalls starves the player, which says so and plays on by itself when data returns")
    func aStallingServerIsWaitedFor() throws {
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
        #expect(waitUntil(20) { stalled.value > 0 })
        #expect(waitUntil(20) { player.timeControlStatus == .playing && player.currentTime().seconds > 6 })
        #expect(item.status == .readyToPlay, "\(String(describing: item.error))")
        #expect(player.rate == 1, "at \(player.currentTime().seconds) s, \(server.connections) connections, stalled on \(String(describing: server.faultedOn))")
    }
}

/// A flag one thread sets and another reads.
final class WakeFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
