import Foundation
import Testing
import ChorusTestSupport
@testable import AVPlayback
import MediaClock
import MediaPipeline
import MediaServer

/// Apple's "Playback" guide, section by section, as a specification: one test per behaviour
/// the guide documents, named by what the guide says, from "Playing Assets" to "Putting It
/// All Together". Players here play to the null output, in real time on the host clock.
/// `make test` runs the suite after the others, whose group tests measure real time. (Its
/// tests were once kept to one at a time: beside each other, with the sanitizer's build
/// running beside the tests, a player of a stream URL did not become ready within 20 s. The
/// sanitizer's build now comes after the tests.)
@Suite(.ownThread) struct GuideConformanceTests {
    /// A player for `url` on the null output, with its item.
    static func player(_ url: URL) -> (AVPlayer, AVPlayerItem) {
        let item = AVPlayerItem(url: url)
        return (AVPlayer(playerItem: item, output: .null(driftPPM: 0)), item)
    }

    /// Publishes an HLS presentation on `server` and returns its playlist's URL.
    static func publish(_ hls: (folder: URL, segments: [String]), on server: MediaHTTPServer) throws -> URL {
        for name in hls.segments { _ = server.publish(hls.folder.appendingPathComponent(name), id: "guide") }
        let path = server.publish(hls.folder.appendingPathComponent("index.m3u8"), id: "guide")
        return try #require(URL(string: "http://127.0.0.1:\(server.port)\(path)"))
    }

    // MARK: - Playing Assets

    @Suite("Playing Assets") struct PlayingAssets {
        @Test("a player item just made is not yet ready to play")
        func aNewItemIsNotReady() throws {
            let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 0.5))
            #expect(item.status == .unknown)
            #expect(item.duration.isIndefinite)
        }

        @Test("an item starts to become ready when it is associated with a player, and its status is observed going to readyToPlay")
        func anItemBecomesReadyWithAPlayer() async throws {
            let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 0.5))
            let statuses = Collected<AVPlayerItem.Status>()
            let observation = item.observe(\.status, options: [.initial, .new]) { _, change in
                if let status = change.newValue { statuses.append(status) }
            }
            defer { observation.invalidate() }
            await sleepThroughQuietWindow()
            #expect(statuses.all == [.unknown], "an item alone loads nothing")
            let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
            defer { player.close() }
            #expect(await waitUntil(10) { statuses.all == [.unknown, .readyToPlay] }, "seen \(statuses.all)")
        }

        @Test("one asset plays in two players at once, each through its own item")
        func oneAssetTwoPlayers() async throws {
            let asset = AVURLAsset(url: try TestMedia.tone(.wav, seconds: 2))
            let first = AVPlayer(playerItem: AVPlayerItem(asset: asset), output: .null(driftPPM: 0))
            let secondItem = AVPlayerItem(asset: asset)
            secondItem.audioTimePitchAlgorithm = .varispeed  // "rendered in different ways by each player"
            let second = AVPlayer(playerItem: secondItem, output: .null(driftPPM: 0))
            defer { first.close(); second.close() }
            first.play()
            second.rate = 0.5
            #expect(await waitUntil(10) { first.currentTime().seconds > 0.2 && second.currentTime().seconds > 0.1 })
            #expect(first.currentItem !== second.currentItem)
            #expect(first.currentItem?.asset === second.currentItem?.asset)
            #expect(first.rate == 1 && second.rate == 0.5)
        }

        @Test("disabling an item's sound track during playback silences it")
        func disablingTheSoundTrack() async throws {
            let url = try TestMedia.tone(.wav, seconds: 1.5, rate: 48_000)
            let rendered = try await renderToPCM(url, name: "guide-disable") { player, item in
                // Off from the start: the whole render is silent. The tracks are there once the
                // item is ready; under the thread sanitizer, with other tests rendering beside
                // it, that once took longer than 10 s, and the track was never turned off.
                #expect(await waitUntil(60) { item.status == .readyToPlay })
                #expect(item.tracks.contains { $0.assetTrack?.mediaType == .audio })
                for track in item.tracks where track.assetTrack?.mediaType == .audio { track.isEnabled = false }
            }
            #expect(rendered.frameCount > 0)
            let peak = rendered.samples.map(abs).max() ?? 0
            #expect(peak == 0, "peak \(peak)")
        }
    }

    // MARK: - Handling Different Types of Asset

    @Suite("Handling Different Types of Asset") struct AssetTypes {
        @Test("a file-based asset: an AVURLAsset, an item for it and a player for the item become ready to play")
        func fileBasedAsset() async throws {
            let asset = AVURLAsset(url: try TestMedia.tone(.mp3, seconds: 1))
            let item = AVPlayerItem(asset: asset)
            let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
            defer { player.close() }
            #expect(await waitUntil(10) { item.status == .readyToPlay })
            #expect(item.asset === asset)
        }

        @Test("an HTTP live stream's item, once ready, has its asset's tracks and the stream's duration")
        func liveStreamItemBecomesReady() async throws {
            let server = try MediaHTTPServer(address: "127.0.0.1", port: 0)
            defer { server.stop() }
            let url = try GuideConformanceTests.publish(try TestMedia.hls(seconds: 4), on: server)
            let item = AVPlayerItem(url: url)
            let durations = Collected<CMTime>()
            let observation = item.observe(\.duration, options: [.new]) { _, change in
                if let duration = change.newValue { durations.append(duration) }
            }
            defer { observation.invalidate() }
            #expect(item.duration.isIndefinite)
            let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
            defer { player.close() }
            #expect(await waitUntil(20) { item.status == .readyToPlay })
            #expect(abs(item.duration.seconds - 4) < 0.1, "duration \(item.duration.seconds)")
            #expect(await waitUntil(5) { durations.all.last == item.duration }, "the change was observed")
            #expect(!item.tracks.isEmpty)
            #expect(item.tracks.contains { $0.assetTrack?.mediaType == .audio })
        }

        @Test("a player made from a stream URL goes to readyToPlay, and its currentItem is the item made for the stream")
        func playerFromAStreamURL() async throws {
            let server = try MediaHTTPServer(address: "127.0.0.1", port: 0)
            defer { server.stop() }
            let url = try GuideConformanceTests.publish(try TestMedia.hls(seconds: 4), on: server)
            let player = AVPlayer(url: url)
            defer { player.close() }
            #expect(player.currentItem != nil)
            #expect((player.currentItem?.asset as? AVURLAsset)?.url == url)
            #expect(await waitUntil(20) { player.status == .readyToPlay && player.currentItem?.status == .readyToPlay })
        }

        @Test("a URL of unknown kind: its asset's tracks load when it is media, and fail with an error when it is not")
        func unknownURLRoute() async throws {
            let good = AVURLAsset(url: try TestMedia.tone(.flac, seconds: 0.5))
            let tracks = try await good.load(.tracks)
            #expect(!tracks.isEmpty)
            let notMedia = try TestMedia.file(named: "guide-not-media.mp4", contents: Data("not a movie".utf8))
            let bad = AVURLAsset(url: notMedia)
            await #expect(throws: (any Error).self) { try await bad.load(.tracks) }
            var error: NSError?
            #expect(bad.statusOfValue(forKey: "tracks", error: &error) == .failed)
            #expect(error != nil)
            // Then the route's step 3: an item straight from the URL, which fails too, with an error.
            let (player, item) = GuideConformanceTests.player(notMedia)
            defer { player.close() }
            #expect(await waitUntil(10) { item.status == .failed })
            #expect(item.error != nil)
        }
    }

    // MARK: - Playing an Item, Changing the Playback Rate

    @Suite("Playing an Item and Changing the Playback Rate") struct Rates {
        @Test("play starts playback at the natural rate: the rate is 1 and the time moves on")
        func playStarts() async throws {
            let (player, item) = GuideConformanceTests.player(try TestMedia.tone(.wav, seconds: 2))
            defer { player.close() }
            #expect(await waitUntil(10) { item.status == .readyToPlay })
            player.play()
            #expect(player.rate == 1)
            #expect(await waitUntil(10) { player.timeControlStatus == .playing && player.currentTime().seconds > 0.1 })
        }

        @Test("rates 0.5 and 2.0 are taken, and time moves at that rate", arguments: [Float(0.5), 2.0])
        func slowAndFast(rate: Float) async throws {
            let (player, item) = GuideConformanceTests.player(try TestMedia.tone(.wav, seconds: 4))
            defer { player.close() }
            // The rate is what is checked here; the pitch stage (PitchTests) would only add load.
            item.audioTimePitchAlgorithm = .varispeed
            #expect(await waitUntil(10) { item.status == .readyToPlay })
            player.rate = rate
            #expect(player.rate == rate)
            #expect(await waitUntil(10) { player.timeControlStatus == .playing })
            // The item's timebase runs at the rate against the host clock (set from the
            // player's queue just after the sound starts).
            let timebase = try #require(item.timebase)
            #expect(await waitUntil(5) { abs(timebase.rate - Double(rate)) < 0.001 }, "timebase rate \(timebase.rate)")
        }

        @Test("setting the rate to 0 is the same as pausing")
        func rateZeroPauses() async throws {
            let (player, item) = GuideConformanceTests.player(try TestMedia.tone(.wav, seconds: 2))
            defer { player.close() }
            #expect(await waitUntil(10) { item.status == .readyToPlay })
            player.play()
            #expect(await waitUntil(10) { player.timeControlStatus == .playing })
            player.rate = 0
            #expect(player.timeControlStatus == .paused)
            let stopped = player.currentTime()
            await sleepThroughQuietWindow()
            #expect(player.currentTime() == stopped)
        }

        @Test("an item that can play in reverse says so, and takes -1, a slow reverse rate and a fast one")
        func reverseRatesPerTheFlags() async throws {
            let (player, item) = GuideConformanceTests.player(try TestMedia.tone(.wav, seconds: 2))
            defer { player.close() }
            #expect(await waitUntil(10) { item.status == .readyToPlay })
            #expect(item.canPlayReverse && item.canPlaySlowReverse && item.canPlayFastReverse)
            await player.seek(to: CMTime(value: 1, timescale: 1), toleranceBefore: .zero, toleranceAfter: .zero)
            for rate: Float in [-1, -0.5, -2] {
                player.rate = rate
                #expect(player.rate == rate)
            }
            #expect(await waitUntil(10) { player.currentTime().seconds < 0.9 }, "time runs backwards")
        }

        @Test("an item that cannot play in reverse says so, and a reverse rate leaves the player as it was")
        func reverseRefusedWhenUnsupported() async throws {
            // A live HLS window: no seeking back, no known length.
            let server = try MediaHTTPServer(address: "127.0.0.1", port: 0)
            defer { server.stop() }
            let hls = try TestMedia.hls(seconds: 6, segmentSeconds: 2)
            for name in hls.segments { _ = server.publish(hls.folder.appendingPathComponent(name), id: "live") }
            let playlist = hls.folder.appendingPathComponent("guide-live.m3u8")
            let lines = ["#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:2", "#EXT-X-MEDIA-SEQUENCE:0"]
                + hls.segments.prefix(3).flatMap { ["#EXTINF:2.0,", $0] }
            try (lines.joined(separator: "\n") + "\n").write(to: playlist, atomically: true, encoding: .utf8)
            let path = server.publish(playlist, id: "live")
            let (player, item) = GuideConformanceTests.player(try #require(URL(string: "http://127.0.0.1:\(server.port)\(path)")))
            defer { player.close() }
            #expect(await waitUntil(20) { item.status == .readyToPlay })
            #expect(item.duration.isIndefinite)
            #expect(!item.canPlayReverse && !item.canPlaySlowReverse && !item.canPlayFastReverse)
            player.rate = -1
            #expect(player.rate == 0)
        }
    }

    // MARK: - Seeking

    @Suite("Seeking—Repositioning the Playhead") struct Seeking {
        @Test("seekToTime moves the playhead to about the time asked")
        func seekMoves() async throws {
            let (player, item) = GuideConformanceTests.player(try TestMedia.tone(.mp3, seconds: 6))
            defer { player.close() }
            #expect(await waitUntil(10) { item.status == .readyToPlay })
            await player.seek(to: CMTimeMake(value: 5, timescale: 1))
            #expect(abs(player.currentTime().seconds - 5) < 0.5)
        }

        @Test("a seek with zero tolerances lands exactly on the time")
        func exactSeek() async throws {
            let (player, item) = GuideConformanceTests.player(try TestMedia.tone(.mp3, seconds: 6))
            defer { player.close() }
            #expect(await waitUntil(10) { item.status == .readyToPlay })
            let fiveSecondsIn = CMTimeMake(value: 5, timescale: 1)
            let finished = Collected<Bool>()
            player.seek(to: fiveSecondsIn, toleranceBefore: kCMTimeZero, toleranceAfter: kCMTimeZero) { finished.append($0) }
            #expect(await waitUntil(10) { finished.all == [true] })
            #expect(CMTimeCompare(player.currentTime(), fiveSecondsIn) == 0, "at \(player.currentTime())")
        }

        @Test("after playback the playhead is at the item's end, and play has no effect there")
        func playAtTheEndDoesNothing() async throws {
            // An MP3, whose container counts the encoder's delay and padding in its length.
            let (player, item) = GuideConformanceTests.player(try TestMedia.tone(.mp3, seconds: 0.5))
            defer { player.close() }
            let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
            player.play()
            #expect(await waitUntil(10) { ended.value == 1 && player.rate == 0 })
            #expect(player.currentTime() == item.duration, "time \(player.currentTime()), duration \(item.duration)")
            player.play()
            await sleepThroughQuietWindow()
            #expect(ended.value == 1)
            #expect(player.currentTime() == item.duration)
        }

        /// The walkthrough's play button compares the time with the duration to tell the end.
        @Test("after playback a video with sound stands at its duration, which stays the container's")
        func aVideoEndsAtItsDuration() async throws {
            // Its sound ends 0.1 s before its pictures, at 0.9 s: the player stood there.
            let (player, item) = GuideConformanceTests.player(try TestMedia.videoWithShorterSound(seconds: 1, shortBy: 0.1))
            defer { player.close() }
            #expect(await waitUntil(10) { item.status == .readyToPlay })
            let stated = item.duration
            let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
            player.play()
            #expect(await waitUntil(10) { ended.value == 1 && player.rate == 0 })
            #expect(item.duration == stated)
            #expect(player.currentTime() == item.duration, "time \(player.currentTime()), duration \(item.duration)")
        }

        @Test("seeking to zero from the end notification makes play start again from the beginning")
        func seekToZeroAtTheEnd() async throws {
            let (player, item) = GuideConformanceTests.player(try TestMedia.tone(.wav, seconds: 0.4))
            defer { player.close() }
            let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
            let token = NotificationCenter.default.addObserver(forName: .AVPlayerItemDidPlayToEndTime, object: item, queue: nil) { [weak player] _ in
                player?.seek(to: kCMTimeZero)
            }
            defer { NotificationCenter.default.removeObserver(token) }
            player.play()
            #expect(await waitUntil(10) { ended.value == 1 && player.currentTime() == .zero })
            player.play()
            #expect(await waitUntil(10) { ended.value == 2 })
        }
    }

    // MARK: - Playing Multiple Items

    @Suite("Playing Multiple Items") struct MultipleItems {
        @Test("a queue player made with an array of items plays each in turn")
        func playsEachInTurn() async throws {
            let items = try (0..<3).map { _ in AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 0.3)) }
            let queue = AVQueuePlayer(items: items, output: .null(driftPPM: 0))
            defer { queue.close() }
            let ends = items.map { NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: $0) }
            queue.play()
            #expect(await waitUntil(15) { ends.allSatisfy { $0.value == 1 } })
            #expect(queue.currentItem == nil)
            #expect(queue.items().isEmpty)
        }

        @Test("advanceToNextItem skips to the next item")
        func advanceSkips() async throws {
            let items = try (0..<2).map { _ in AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 2)) }
            let queue = AVQueuePlayer(items: items, output: .null(driftPPM: 0))
            defer { queue.close() }
            queue.play()
            queue.advanceToNextItem()
            #expect(queue.currentItem === items[1])
            #expect(queue.items().count == 1)
            #expect(await waitUntil(10) { queue.timeControlStatus == .playing && queue.currentTime().seconds > 0.1 })
        }

        @Test("canInsert with nil says an item can be appended, insert appends it, and an item already queued cannot go in again")
        func insertAfterCanInsert() throws {
            let queue = AVQueuePlayer(items: [AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1))], output: .null(driftPPM: 0))
            defer { queue.close() }
            let anItem = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1))
            #expect(queue.canInsert(anItem, after: nil))
            if queue.canInsert(anItem, after: nil) { queue.insert(anItem, after: nil) }
            #expect(queue.items().last === anItem)
            #expect(!queue.canInsert(anItem, after: nil))
        }

        @Test("removeItem takes one item out, and removeAllItems empties the queue")
        func removing() throws {
            let items = try (0..<3).map { _ in AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1)) }
            let queue = AVQueuePlayer(items: items, output: .null(driftPPM: 0))
            defer { queue.close() }
            queue.remove(items[1])
            #expect(queue.items().map(ObjectIdentifier.init) == [items[0], items[2]].map(ObjectIdentifier.init))
            queue.removeAllItems()
            #expect(queue.items().isEmpty && queue.currentItem == nil)
        }
    }

    // MARK: - Monitoring Playback

    @Suite("Monitoring Playback") struct Monitoring {
        @Test("remote media: loadedTimeRanges and seekableTimeRanges change, observably, as data arrives")
        func rangesGrow() async throws {
            let server = try MediaHTTPServer(address: "127.0.0.1", port: 0)
            defer { server.stop() }
            let url = try GuideConformanceTests.publish(try TestMedia.hls(seconds: 4), on: server)
            let (player, item) = GuideConformanceTests.player(url)
            defer { player.close() }
            let loaded = Collected<[NSValue]>()
            let seekable = Collected<[NSValue]>()
            let observations = [
                item.observe(\.loadedTimeRanges, options: [.new]) { _, change in if let ranges = change.newValue { loaded.append(ranges) } },
                item.observe(\.seekableTimeRanges, options: [.new]) { _, change in if let ranges = change.newValue { seekable.append(ranges) } },
            ]
            defer { observations.forEach { $0.invalidate() } }
            player.play()
            #expect(await waitUntil(20) { !loaded.all.isEmpty && !seekable.all.isEmpty })
            #expect(await waitUntil(20) { (loaded.all.last?.last?.timeRangeValue.end.seconds ?? 0) > 3.5 }, "loaded \(loaded.all.last ?? [])")
        }

        @Test("a player's currentItem is observed as the item made for a stream appears")
        func currentItemObserved() async throws {
            let player = AVPlayer(playerItem: nil, output: .null(driftPPM: 0))
            defer { player.close() }
            let seen = Collected<Bool>()
            let observation = player.observe(\.currentItem, options: [.initial, .new]) { _, change in
                seen.append((change.newValue ?? nil) != nil)
            }
            defer { observation.invalidate() }
            player.replaceCurrentItem(with: AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 0.5)))
            // The replacement is announced from the player's queue, as Apple's is asynchronous.
            #expect(await waitUntil(5) { seen.all == [false, true] }, "seen \(seen.all)")
        }

        @Test("the rate drops to 0 by itself when playback stops at the end, and observers hear it")
        func rateDropsObservably() async throws {
            let (player, _) = GuideConformanceTests.player(try TestMedia.tone(.wav, seconds: 0.3))
            defer { player.close() }
            let rates = Collected<Float>()
            let observation = player.observe(\.rate, options: [.new]) { _, change in if let rate = change.newValue { rates.append(rate) } }
            defer { observation.invalidate() }
            player.play()
            #expect(await waitUntil(10) { rates.all == [1, 0] }, "seen \(rates.all)")
        }
    }

    // MARK: - Responding to a Change in Status

    @Suite("Responding to a Change in Status") struct StatusChange {
        @Test("an item that cannot play goes to failed, observably, and its error says why")
        func failedWithError() async throws {
            let (player, item) = GuideConformanceTests.player(URL(fileURLWithPath: "/nonexistent/guide.mp4"))
            defer { player.close() }
            let statuses = Collected<AVPlayerItem.Status>()
            // With .initial: a missing file may have failed before the observation begins.
            let observation = player.observe(\.currentItem?.status, options: [.initial, .new]) { _, change in
                if let status = change.newValue ?? nil { statuses.append(status) }
            }
            defer { observation.invalidate() }
            #expect(await waitUntil(10) { statuses.all.last == .failed })
            let error = try #require(item.error)
            #expect("\(error)".contains("/nonexistent/guide.mp4"))
        }

        @Test("a stream that dies mid-play fails the item with an error, and the failure is posted")
        func streamDiesMidPlay() async throws {
            // Two seconds into six of WAV: past what opening the item reads.
            let file = try TestMedia.tone(.wav, seconds: 6, rate: 48_000)
            let server = try FaultyHTTPServer(serving: file, fault: .die(atByte: 2 * 48_000 * 4))
            defer { server.stop() }
            let (player, item) = GuideConformanceTests.player(server.url)
            defer { player.close() }
            let failures = NotificationCounter(AVPlayerItem.failedToPlayToEndTimeNotification, object: item)
            let ends = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
            player.play()
            #expect(await waitUntil(30) { item.status == .failed && failures.value == 1 },
                    "status \(item.status) \(String(describing: item.error)), failures \(failures.value), ends \(ends.value), at \(player.currentTime().seconds) s")
            #expect(ends.value == 0)
            #expect(item.error != nil)
        }
    }

    // MARK: - Tracking Readiness for Visual Display

    @Suite("Tracking Readiness for Visual Display") struct ReadyForDisplay {
        @Test("a player layer's readyForDisplay turns true, observably, once it has a picture to show")
        func layerBecomesReady() async throws {
            let (player, item) = GuideConformanceTests.player(try TestMedia.video(seconds: 2))
            defer { player.close() }
            let layer = AVPlayerLayer(player: player)
            let seen = Collected<Bool>()
            let observation = layer.observe(\.isReadyForDisplay, options: [.initial, .new]) { _, change in
                if let ready = change.newValue { seen.append(ready) }
            }
            defer { observation.invalidate() }
            #expect(await waitUntil(10) { item.status == .readyToPlay })
            // The hosting view's refreshes, as a window would run them.
            #expect(await waitUntil(10) {
                guard let picture = layer.picture(forRefreshAt: .now()) else { return false }
                layer.didPresent(number: picture.info.number, at: .now())
                return true
            })
            #expect(await waitUntil(5) { seen.all == [false, true] }, "seen \(seen.all)")
        }
    }

    // MARK: - Tracking Time

    @Suite("Tracking Time") struct TrackingTime {
        @Test("a periodic observer is called at its interval while playing")
        func periodicAtTheInterval() async throws {
            let (player, item) = GuideConformanceTests.player(try TestMedia.tone(.wav, seconds: 2))
            defer { player.close() }
            #expect(await waitUntil(10) { item.status == .readyToPlay })
            let times = Collected<CMTime>()
            let token = player.addPeriodicTimeObserver(forInterval: CMTime(value: 1, timescale: 4), queue: .global()) { times.append($0) }
            defer { player.removeTimeObserver(token) }
            player.play()
            #expect(await waitUntil(10) { times.all.contains { $0.seconds >= 1 } })
            // While playing, one call per interval: each quarter second crossed is reported once.
            let playing = times.all.filter { $0.seconds > 0 && $0.seconds < 1 }
            let slots = playing.map { Int(($0.seconds * 4).rounded(.down)) }
            #expect(Set(slots).count >= 2, "times \(playing.map(\.seconds))")
            #expect(Set(slots).count == slots.count, "a quarter second reported twice: \(playing.map(\.seconds))")
        }

        @Test("a periodic observer is also called when time jumps, and when playback starts and stops")
        func periodicOnJumpsStartsAndStops() async throws {
            let (player, item) = GuideConformanceTests.player(try TestMedia.tone(.wav, seconds: 4))
            defer { player.close() }
            #expect(await waitUntil(10) { item.status == .readyToPlay })
            let times = Collected<CMTime>()
            // An interval far longer than the test: every call is for a jump, a start or a stop.
            let token = player.addPeriodicTimeObserver(forInterval: CMTime(value: 100, timescale: 1), queue: .global()) { times.append($0) }
            defer { player.removeTimeObserver(token) }
            #expect(await waitUntil(5) { times.count >= 1 })
            var before = times.count
            player.play()
            #expect(await waitUntil(5) { times.count > before }, "called when playback starts")
            before = times.count
            await player.seek(to: CMTime(value: 2, timescale: 1), toleranceBefore: .zero, toleranceAfter: .zero)
            #expect(await waitUntil(5) { times.all.dropFirst(before).contains { abs($0.seconds - 2) < 0.1 } }, "called when time jumps")
            before = times.count
            player.pause()
            #expect(await waitUntil(5) { times.count > before }, "called when playback stops")
        }

        @Test("a boundary observer, given times as NSValues, is called as playback traverses each")
        func boundariesFire() async throws {
            let (player, item) = GuideConformanceTests.player(try TestMedia.tone(.wav, seconds: 1.5))
            defer { player.close() }
            #expect(await waitUntil(10) { item.status == .readyToPlay })
            let durationSeconds = CMTimeGetSeconds(item.asset.duration)
            let firstThird = CMTimeMakeWithSeconds(durationSeconds / 3.0, preferredTimescale: 1000)
            let secondThird = CMTimeMakeWithSeconds(durationSeconds * 2.0 / 3.0, preferredTimescale: 1000)
            let fired = Collected<CMTime>()
            let token = player.addBoundaryTimeObserver(forTimes: [NSValue(time: firstThird), NSValue(time: secondThird)], queue: .global()) {
                [weak player] in fired.append(player?.currentTime() ?? .invalid)
            }
            defer { player.removeTimeObserver(token) }
            player.play()
            #expect(await waitUntil(10) { fired.count == 2 })
            #expect(fired.all[0].seconds >= 0.5 - 0.02 && fired.all[0].seconds < 1, "\(fired.all)")
            #expect(fired.all[1].seconds >= 1 - 0.02, "\(fired.all)")
            #expect(CMTimeCopyDescription(allocator: nil, time: firstThird) != nil)
        }

        @Test("after removeTimeObserver returns, its block is not called again")
        func removedObserverStaysQuiet() async throws {
            let (player, item) = GuideConformanceTests.player(try TestMedia.tone(.wav, seconds: 2))
            defer { player.close() }
            #expect(await waitUntil(10) { item.status == .readyToPlay })
            let calls = Collected<CMTime>()
            let token = player.addPeriodicTimeObserver(forInterval: CMTime(value: 1, timescale: 20), queue: .global()) { calls.append($0) }
            player.play()
            #expect(await waitUntil(10) { calls.count >= 2 })
            player.removeTimeObserver(token)
            let after = calls.count
            await sleepThroughQuietWindow()
            #expect(calls.count == after)
        }

        @Test("a block is not called again while its previous call is still running")
        func noOverlappingCalls() async throws {
            let (player, item) = GuideConformanceTests.player(try TestMedia.tone(.wav, seconds: 2))
            defer { player.close() }
            #expect(await waitUntil(10) { item.status == .readyToPlay })
            let running = Collected<Int>()
            let overlaps = Collected<Int>()
            let token = player.addPeriodicTimeObserver(forInterval: CMTime(value: 1, timescale: 100), queue: .global()) { _ in
                if running.count > 0 { overlaps.append(1) }
                running.append(1)
                usleep(50_000)  // five intervals' worth of work
                running.removeAll()
            }
            defer { player.removeTimeObserver(token) }
            player.play()
            await sleepThroughQuietWindow()
            #expect(overlaps.count == 0)
        }
    }

    // MARK: - Reaching the End of an Item

    @Suite("Reaching the End of an Item") struct ReachingTheEnd {
        @Test("AVPlayerItemDidPlayToEndTimeNotification is posted, with the item as its object, when the item has played to its end")
        func endIsPosted() async throws {
            let (player, item) = GuideConformanceTests.player(try TestMedia.tone(.wav, seconds: 0.3))
            defer { player.close() }
            let objects = Collected<ObjectIdentifier>()
            let token = NotificationCenter.default.addObserver(forName: .AVPlayerItemDidPlayToEndTime, object: nil, queue: nil) { note in
                if let object = note.object as? AVPlayerItem { objects.append(ObjectIdentifier(object)) }
            }
            defer { NotificationCenter.default.removeObserver(token) }
            player.play()
            #expect(await waitUntil(10) { objects.all.contains(ObjectIdentifier(item)) })
            await sleepThroughQuietWindow()
            #expect(objects.all.filter { $0 == ObjectIdentifier(item) }.count == 1)
        }
    }

    // MARK: - Putting It All Together

    @Suite("Putting It All Together") struct AllTogether {
        @Test("the item's status observed with .initial is delivered at once, then readyToPlay; played to the end and sought to zero, it stands at the start")
        func theWalkthroughFlow() async throws {
            let asset = AVURLAsset(url: try TestMedia.video(seconds: 1), options: nil)
            let loaded = Collected<Bool>()
            asset.loadValuesAsynchronously(forKeys: ["tracks"]) { loaded.append(true) }
            #expect(await waitUntil(10) { loaded.count == 1 })
            var error: NSError?
            #expect(asset.statusOfValue(forKey: "tracks", error: &error) == .loaded)
            let playerItem = AVPlayerItem(asset: asset)
            let statuses = Collected<AVPlayerItem.Status>()
            let observation = playerItem.observe(\.status, options: [.initial]) { item, _ in statuses.append(item.status) }
            defer { observation.invalidate() }
            #expect(statuses.all == [.unknown])
            let player = AVPlayer(playerItem: playerItem, output: .null(driftPPM: 0))
            defer { player.close() }
            let layer = AVPlayerLayer(player: player)
            #expect(layer.player === player)
            let token = NotificationCenter.default.addObserver(forName: .AVPlayerItemDidPlayToEndTime, object: playerItem, queue: nil) { [weak player] _ in
                player?.seek(to: .zero)
            }
            defer { NotificationCenter.default.removeObserver(token) }
            #expect(await waitUntil(10) { statuses.all == [.unknown, .readyToPlay] })
            let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: playerItem)
            player.play()
            #expect(await waitUntil(10) { ended.value == 1 && player.rate == 0 && player.currentTime() == .zero })
        }
    }
}
