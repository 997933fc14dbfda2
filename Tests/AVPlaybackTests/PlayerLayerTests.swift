import Foundation
import MutexAnnotations
import Testing
import ChorusTestSupport
@testable import AVPlayback
import MediaPipeline
import MediaServer
import ChorusSimulation
import Synchronization

/// A player layer driven as a hosting view drives it, refresh by refresh, without a window:
/// which picture each refresh shows, against the player's own timeline.
@Suite(.ownThread) struct PlayerLayerTests {
    /// A 60 Hz display's refresh period.
    static let refresh: Duration = .nanoseconds(16_666_667)
    /// How far the pictures' timeline may stand from the player's own reading of the sound's
    /// time, in nanoseconds: it is republished on each 10 ms monitor tick from the render
    /// thread's latest report, and a late tick on a loaded machine re-anchors it by a few
    /// milliseconds (4 ms seen in a full test run).
    static let tickReanchoring: Int64 = 8_000_000
    /// The largest change, in nanoseconds, in the sound's forecast time for a refresh over
    /// two refreshes that still counts as a timeline holding still: a rate trim of a few
    /// hundred ppm moves it by microseconds, a re-anchoring by milliseconds.
    static let steadySound: Int64 = 100_000

    @Test("each refresh shows the picture whose time the heard sound has reached")
    func picturesFollowTheSound() async throws {
        let item = AVPlayerItem(url: try TestMedia.identityVideo(seconds: 3, rate: 25, withSound: true))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let layer = AVPlayerLayer(player: player)
        #expect(!layer.isReadyForDisplay)
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        player.play()
        #expect(await waitUntil(10) { player.timeControlStatus == .playing })
        func heard(at host: HostTime) -> Int64 {
            player.itemTime(forHostTime: CMTime(value: host.nanoseconds, timescale: 1_000_000_000))
                .convertScale(1_000_000_000, method: .roundHalfAwayFromZero).value
        }
        var checked = 0, exact = 0, steady = 0
        // The sound's time at each refresh, as forecast two refreshes before it: when it
        // still holds, the sound's timeline has not moved for longer than a monitor tick.
        var forecasts: [Int: Int64] = [:]
        let start = HostTime.now()
        var refresh = 0
        while checked < 60 {
            refresh += 1
            let refreshAt = start + Self.refresh * refresh
            while HostTime.now() < refreshAt { usleep(1_000) }
            forecasts[refresh + 2] = heard(at: start + Self.refresh * (refresh + 2))
            let before = player.engine.videoTimeline.current
            guard let picture = layer.picture(forRefreshAt: refreshAt) else { continue }
            let after = player.engine.videoTimeline.current
            layer.didPresent(number: picture.info.number, at: HostTime.now())
            let luma = try #require(picture.plane0)
            // The picture is the one the file holds at its time (the decode is exact).
            #expect(TestMedia.identity(luma: luma, stride: picture.stride0, width: 320, height: 240)
                    == Int(picture.info.itemNanoseconds / 40_000_000))
            // ... and it is the newest picture due on the pictures' timeline at this refresh:
            // within one picture period before it. (Exactly when the timeline the layer read
            // is known: unchanged around the refresh.)
            // (Read waiting for the timeline's lock: a read that gives up when the lock is
            // busy found it held by the monitor under the sanitizer.)
            let timeline = after
            let due = timeline.itemNanoseconds(at: refreshAt)
            if before == after {
                let into = due - picture.info.itemNanoseconds
                #expect(into >= -FrameSchedule.dueToleranceNanoseconds && into < 40_000_000,
                        "picture at \(picture.info.itemNanoseconds) ns shown when its timeline is at \(due) ns")
                exact += 1
            }
            // ... and that timeline is the sound's. While the sound's timeline holds still,
            // the picture is the newest one the sound has reached, to a millisecond; when it
            // has just moved (a late period on a loaded machine re-anchors it), the pictures
            // follow on the next monitor tick.
            let heardNanoseconds = heard(at: refreshAt)
            #expect(abs(due - heardNanoseconds) < Self.tickReanchoring, "pictures at \(due) ns, sound at \(heardNanoseconds) ns")
            if let forecast = forecasts[refresh], abs(forecast - heardNanoseconds) < Self.steadySound {
                let lead = heardNanoseconds - picture.info.itemNanoseconds
                #expect(lead >= -1_000_000 && lead < 40_000_000 + 1_000_000, "picture at \(picture.info.itemNanoseconds) ns shown when the sound is at \(heardNanoseconds) ns")
                steady += 1
            }
            checked += 1
        }
        #expect(steady > 30, "\(steady) refreshes with the sound's timeline steady")
        #expect(exact > 30, "\(exact) refreshes whose timeline was known")
        #expect(await waitUntil(5) { layer.isReadyForDisplay })
    }

    /// A player of a two-second video with sound on a silent device, a layer on it with no
    /// view, and the `isReadyForDisplay` values its observer has been told (the caller
    /// invalidates the observation and closes the player).
    static func layerOnAVideo() throws -> (AVPlayer, AVPlayerLayer, Collected<Bool>, NSKeyValueObservation) {
        let video = AVPlayerItem(url: try TestMedia.identityVideo(seconds: 2, rate: 25, withSound: true))
        let player = AVPlayer(playerItem: video, output: .null(driftPPM: 0))
        let layer = AVPlayerLayer(player: player)
        let seen = Collected<Bool>()
        let observation = layer.observe(\.isReadyForDisplay, options: [.new]) { _, change in change.newValue.map(seen.append) }
        return (player, layer, seen, observation)
    }

    @Test("a layer is ready for display once its player's first picture is decoded, shown anywhere or not, and observers hear it; a layer on sound alone never is")
    func readyForDisplayWithoutAView() async throws {
        let (player, layer, seen, observation) = try Self.layerOnAVideo()
        defer {
            observation.invalidate()
            player.close()
        }
        // Nothing refreshes the layer: no view hosts it.
        #expect(await waitUntil(10) { layer.isReadyForDisplay })
        #expect(await waitUntil(5) { seen.all == [true] })
        // Given the same player again, it stays ready: nothing changed.
        layer.player = player
        #expect(layer.isReadyForDisplay)
        #expect(seen.all == [true])
        // A second layer on the same player, whose picture is already decoded, is ready at once.
        let second = AVPlayerLayer(player: player)
        #expect(await waitUntil(5) { second.isReadyForDisplay })

        let sound = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 2, rate: 48_000))
        let listener = AVPlayer(playerItem: sound, output: .null(driftPPM: 0))
        defer { listener.close() }
        let soundLayer = AVPlayerLayer(player: listener)
        #expect(await waitUntil(10) { sound.status == .readyToPlay })
        listener.play()
        #expect(await waitUntil(10) { listener.currentTime().seconds > 0.3 })
        #expect(!soundLayer.isReadyForDisplay)
    }

    /// Apple's `isReadyForDisplay` tells of the current item's first picture: another item
    /// has none until its own is decoded, and an item of sound alone none at all.
    @Test("a layer is not ready for display once its player's item is replaced, until the new item's first picture is decoded")
    func readyForDisplayFollowsTheCurrentItem() async throws {
        let (player, layer, seen, observation) = try Self.layerOnAVideo()
        defer {
            observation.invalidate()
            player.close()
        }
        #expect(await waitUntil(10) { layer.isReadyForDisplay })
        let sound = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 2, rate: 48_000))
        player.replaceCurrentItem(with: sound)
        #expect(await waitUntil(5) { !layer.isReadyForDisplay })
        #expect(await waitUntil(10) { sound.status == .readyToPlay })
        #expect(!layer.isReadyForDisplay)
        player.replaceCurrentItem(with: AVPlayerItem(url: try TestMedia.identityVideo(seconds: 1, rate: 25, withSound: true)))
        #expect(await waitUntil(10) { layer.isReadyForDisplay })
        #expect(await waitUntil(5) { seen.all == [true, false, true] }, "seen: \(seen.all)")
    }

    @Test("backwards, each refresh shows the picture the falling timeline stands in, newest first, to the item's start")
    func picturesPlayBackwards() async throws {
        // 25 pictures a second, a keyframe every 20: the thirty pictures shown go back
        // across two of them, each group read from its own keyframe.
        let item = AVPlayerItem(url: try TestMedia.identityVideo(seconds: 3, rate: 25, withSound: true, keyframeInterval: 20))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let layer = AVPlayerLayer(player: player)
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        player.play()
        #expect(await waitUntil(10) { player.currentTime().seconds > 2.2 })
        player.rate = -1
        #expect(await waitUntil(10) { player.timeControlStatus == .playing && player.currentTime().seconds < 2.0 })
        var numbers: [Int] = []
        var exact = 0
        var refreshAt = HostTime.now()
        while numbers.count < 30 && player.rate != 0 {
            refreshAt = refreshAt + Self.refresh
            while HostTime.now() < refreshAt { usleep(1_000) }
            let before = player.engine.videoTimeline.current
            guard let picture = layer.picture(forRefreshAt: refreshAt) else { continue }
            let after = player.engine.videoTimeline.current
            layer.didPresent(number: picture.info.number, at: HostTime.now())
            let luma = try #require(picture.plane0)
            let number = TestMedia.identity(luma: luma, stride: picture.stride0, width: 320, height: 240)
            #expect(number == Int(picture.info.itemNanoseconds / 40_000_000))
            // The pictures' timeline, running down, stands inside the picture shown at the
            // refresh: shown as the timeline reaches its end, and not before.
            // (Exactly when the timeline the layer read is known: unchanged around the refresh.)
            // (Read waiting for the timeline's lock: a read that gives up when the lock is
            // busy found it held by the monitor under the sanitizer.)
            let timeline = after
            #expect(timeline.rate < 0)
            let due = timeline.itemNanoseconds(at: refreshAt)
            if before == after {
                let into = due - picture.info.itemNanoseconds
                #expect(into >= 0 && into <= 40_000_000 + FrameSchedule.dueToleranceNanoseconds,
                        "picture at \(picture.info.itemNanoseconds) ns shown when its timeline is at \(due) ns")
                exact += 1
            }
            // ... and that timeline is the sound's. It is published on the player's monitor
            // tick: idle, within 60 µs of the player's own reading; in a loaded full test run
            // it was seen 4 ms off, a tick's re-anchoring (lip sync tolerates 15 ms).
            let heard = player.itemTime(forHostTime: CMTime(value: refreshAt.nanoseconds, timescale: 1_000_000_000))
            let heardNanoseconds = heard.convertScale(1_000_000_000, method: .roundHalfAwayFromZero).value
            #expect(abs(due - heardNanoseconds) < Self.tickReanchoring, "pictures at \(due) ns, sound at \(heardNanoseconds) ns")
            numbers.append(number)
        }
        #expect(numbers.count == 30)
        #expect(exact > 15, "\(exact) refreshes whose timeline was known")
        #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $0 > $1 }, "\(numbers)")
        // On to the start, where the player stands with the first picture shown.
        var last = numbers.last
        var standing: HostTime?
        while standing.map({ HostTime.now() < $0 + .milliseconds(500) }) ?? (HostTime.now() < refreshAt + .seconds(10)) {
            refreshAt = HostTime.now() + Self.refresh
            if let picture = layer.picture(forRefreshAt: refreshAt), let luma = picture.plane0 {
                layer.didPresent(number: picture.info.number, at: HostTime.now())
                last = TestMedia.identity(luma: luma, stride: picture.stride0, width: 320, height: 240)
            }
            if standing == nil, player.rate == 0 { standing = HostTime.now() }
            usleep(UInt32(Self.refresh.nanosecondsClamped / 1_000))
        }
        #expect(player.rate == 0 && player.currentTime() == .zero)
        #expect(last == 0)
    }

    @Test("the pictures' timeline moves on while the item's end is still in the device's queue")
    func timelineMovesUntilTheEndIsHeard() async throws {
        let item = AVPlayerItem(url: try TestMedia.identityVideo(seconds: 1, rate: 25, withSound: true))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let layer = AVPlayerLayer(player: player)
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        #expect(await waitUntil(10) { player.engine.decodesVideo })
        player.play()
        #expect(await waitUntil(10) { player.timeControlStatus == .playing })
        // Between the end being written (a device queue, 100 ms, ahead of the sound) and a
        // monitor tick (10 ms, and a margin) before it is heard.
        var rates: [Double] = []
        let deadline = HostTime.now() + .seconds(5)
        while HostTime.now() < deadline {
            let status = player.engine.status
            let now = HostTime.now()
            if status.phase == .ended {
                if now >= status.endHost { break }
                if now < status.endHost - .milliseconds(30), let timeline = player.engine.videoTimeline.tryRead(),
                   timeline.anchorHost > now - .milliseconds(15) {
                    rates.append(timeline.rate)
                }
            }
            usleep(1_000)
        }
        #expect(!rates.isEmpty, "no look at the timeline between the end written and heard")
        #expect(rates.allSatisfy { abs($0 - 1) < 0.001 }, "rates published while the end was queued: \(Set(rates))")
        _ = layer
    }

    @Test("an item shown with its pictures is fetched no more than its sound alone: one demuxer reads both")
    func picturesShareTheSoundsFetch() async throws {
        let server = try MediaHTTPServer(address: "127.0.0.1", port: 0)
        defer { server.stop() }
        let path = server.publish(try TestMedia.identityVideo(seconds: 3, rate: 25, withSound: true), id: "0")
        let url = try #require(URL(string: "http://127.0.0.1:\(server.port)\(path)"))
        /// Connections the server took while an item played for half a second.
        func connections(shown: Bool) async throws -> Int {
            let before = server.connectionsAccepted
            let player = AVPlayer(playerItem: nil, output: .null(driftPPM: 0))
            defer { player.close() }
            // The layer comes first, so the item is loaded with its pictures wanted.
            let layer = shown ? AVPlayerLayer(player: player) : nil
            let item = AVPlayerItem(url: url)
            player.replaceCurrentItem(with: item)
            #expect(await waitUntil(10) { item.status == .readyToPlay })
            player.play()
            #expect(await waitUntil(10) { player.timeControlStatus == .playing })
            if let layer {
                #expect(await waitUntil(10) { layer.picture(forRefreshAt: .now()) != nil }, "no picture shown")
                #expect(player.engine.hasVideo)
            }
            try? await Task.sleep(for: .milliseconds(500))
            return server.connectionsAccepted - before
        }
        let soundAlone = try await connections(shown: false)
        let withPictures = try await connections(shown: true)
        #expect(soundAlone >= 1)
        #expect(withPictures == soundAlone)
    }

    /// How fast item time passed against the host clock while `player` played, over a
    /// second and a half after a settling half second. Each reading of the item time is
    /// placed midway between host-clock reads taken just before and after it, and only
    /// readings whose bracket is under `readingBracket` are kept (a thread held off
    /// between the reads, as a sanitizer or a busy machine holds one, would misplace its
    /// reading): the rate is the slope of those readings' line.
    private func itemRate(of player: AVPlayer) -> Double {
        let readingBracket = 0.000_5
        usleep(500_000)
        var points: [(host: Double, item: Double)] = []
        let end = HostTime.now() + .milliseconds(1_500)
        while HostTime.now() < end {
            let before = HostTime.now()
            let item = player.currentTime().seconds
            let after = HostTime.now()
            let bracket = Double(after.nanoseconds - before.nanoseconds) / 1e9
            if bracket < readingBracket {
                points.append((Double(before.nanoseconds + (after.nanoseconds - before.nanoseconds) / 2) / 1e9, item))
            }
            usleep(10_000)
        }
        guard points.count >= 2 else { return .nan }
        let meanHost = points.map(\.host).reduce(0, +) / Double(points.count)
        let meanItem = points.map(\.item).reduce(0, +) / Double(points.count)
        let covariance = points.map { ($0.host - meanHost) * ($0.item - meanItem) }.reduce(0, +)
        let variance = points.map { ($0.host - meanHost) * ($0.host - meanHost) }.reduce(0, +)
        return covariance / variance
    }

    @Test("an item without sound is timed on the host clock, not on a sound device running fast")
    func aSilentItemKeepsHostTime() async throws {
        // The device runs 0.5 % fast: an item timed by it gains 5 ms a second.
        let drift = 5_000.0
        let silent = AVPlayer(playerItem: AVPlayerItem(url: try TestMedia.identityVideo(seconds: 4, rate: 25)),
                              output: .null(driftPPM: drift))
        defer { silent.close() }
        #expect(await waitUntil(10) { silent.currentItem?.status == .readyToPlay })
        silent.play()
        #expect(await waitUntil(10) { silent.timeControlStatus == .playing })
        let silentRate = itemRate(of: silent)
        #expect(abs(silentRate - 1) < 1e-3, "item seconds per host second: \(silentRate)")

        // The same device with sound: the sound is the truth, and its time runs with the device.
        // Long enough for five windows of two seconds.
        let sounding = AVPlayer(playerItem: AVPlayerItem(url: try TestMedia.identityVideo(seconds: 12, rate: 25, withSound: true)),
                                output: .null(driftPPM: drift))
        defer { sounding.close() }
        #expect(await waitUntil(10) { sounding.currentItem?.status == .readyToPlay })
        sounding.play()
        #expect(await waitUntil(10) { sounding.timeControlStatus == .playing })
        // Over a window in which the device never ran dry: a machine that holds the render
        // thread off past the device's buffer stops the sound, and the item's time with it,
        // which says nothing of whose clock times it. Up to five windows are tried.
        var soundingRate = Double.nan
        var clean = false
        for _ in 0..<5 where !clean {
            let underruns = sounding.engine.underrunCount
            soundingRate = itemRate(of: sounding)
            clean = sounding.engine.underrunCount == underruns
        }
        #expect(clean, "the device ran dry in every window")
        #expect(soundingRate > 1 + drift * 0.6e-6, "item seconds per host second with sound: \(soundingRate)")
    }

    @Test("on a node simulating another machine's clock, the next picture's due time maps back to the real clock exactly")
    func nextPictureDueOnASimulatedClock() async throws {
        // Seconds off and 150 ppm fast, as the demo's rooms are.
        let skewed = SkewedHostClock(wrapping: MonotonicHostClock(), offset: .milliseconds(2_500), skewPPM: 150)
        let item = AVPlayerItem(url: try TestMedia.identityVideo(seconds: 3, rate: 25, withSound: true))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0), hostClock: CMClock(hostClock: skewed),
                              hostMapping: { skewed.map($0) }, capture: nil)
        defer { player.close() }
        let layer = AVPlayerLayer(player: player)
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        player.play()
        #expect(await waitUntil(10) { player.timeControlStatus == .playing })
        var checked = 0
        let deadline = Date().addingTimeInterval(10)
        while checked < 20 && Date() < deadline {
            usleep(5_000)
            // The timeline and the next picture read before and after the layer's answer: a
            // look during which either moved (the monitor republishes the timeline every tick;
            // a display takes the picture) compares nothing, and is made again.
            func look() -> (timeline: VideoTimeline, item: Int64)? {
                guard let timeline = player.engine.videoTimeline.tryRead(),
                      let item = player.engine.videoQueue?.nextQueuedItemNanoseconds(timelineSerial: timeline.serial) else { return nil }
                return (timeline, item)
            }
            guard let before = look(), let due = layer.nextPictureDue(), let after = look(),
                  after.timeline == before.timeline, after.item == before.item,
                  let wanted = before.timeline.hostTime(atItemNanoseconds: before.item) else { continue }
            // Mapped onto the node's clock, the real instant is the picture's due time, just after it.
            let off = (skewed.map(due) - wanted).nanosecondsClamped
            #expect(off >= 0 && off <= 2_000, "due time off by \(off) ns")
            checked += 1
        }
        #expect(checked == 20)
    }

    @Test("paused after a seek, the picture at the target is shown")
    func pausedSeekShowsTheTarget() async throws {
        let item = AVPlayerItem(url: try TestMedia.identityVideo(seconds: 3, rate: 25, withSound: true))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let layer = AVPlayerLayer(player: player)
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        let finished = Atomic<Bool>(false)
        player.seek(to: CMTime(value: 1_530, timescale: 1_000), toleranceBefore: .zero, toleranceAfter: .zero) { ok in
            finished.store(ok, ordering: .relaxed)
        }
        #expect(await waitUntil(10) { finished.load(ordering: .relaxed) })
        // 1.53 s lies inside picture 38 (1.52 to 1.56 s).
        var shown: VideoPlanes?
        #expect(await waitUntil(10) {
            if let picture = layer.picture(forRefreshAt: .now()) { shown = picture }
            return shown.map { $0.info.itemNanoseconds == 1_520_000_000 } ?? false
        })
        if let shown, let luma = shown.plane0 {
            #expect(TestMedia.identity(luma: luma, stride: shown.stride0, width: 320, height: 240) == 38)
        }
    }

    @Test("paused after a seek to the end, the last picture is shown")
    func pausedSeekToTheEndShowsTheLastPicture() async throws {
        let item = AVPlayerItem(url: try TestMedia.identityVideo(seconds: 2, rate: 25, withSound: true))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let layer = AVPlayerLayer(player: player)
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        let finished = Atomic<Bool>(false)
        player.seek(to: item.duration, toleranceBefore: .zero, toleranceAfter: .zero) { ok in
            finished.store(ok, ordering: .relaxed)
        }
        #expect(await waitUntil(10) { finished.load(ordering: .relaxed) })
        // No picture starts at the end: the one standing there is the last, 1.96 to 2 s.
        var shown: VideoPlanes?
        #expect(await waitUntil(10) {
            if let picture = layer.picture(forRefreshAt: .now()) { shown = picture }
            return shown.map { $0.info.itemNanoseconds == 1_960_000_000 } ?? false
        })
        if let shown, let luma = shown.plane0 {
            #expect(TestMedia.identity(luma: luma, stride: shown.stride0, width: 320, height: 240) == 49)
        }
    }

    @Test("isReadyForDisplay is observed changing when the first picture is presented")
    func readinessIsObservable() async throws {
        let item = AVPlayerItem(url: try TestMedia.identityVideo(seconds: 2, rate: 25, withSound: true))
        // The item comes once the layer is watched: given at once, its first picture could be
        // queued, and the layer ready, before the observation began (seen under load: the
        // initial value was already true).
        let player = AVPlayer(playerItem: nil, output: .null(driftPPM: 0))
        defer { player.close() }
        let layer = AVPlayerLayer(player: player)
        let seen = Mutex<[Bool]>([])
        let observation = layer.observe(\.isReadyForDisplay, options: [.initial, .new]) { _, change in
            if let value = change.newValue { seen.withLockAnnotated { $0.append(value) } }
        }
        defer { observation.invalidate() }
        player.replaceCurrentItem(with: item)
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        // Paused at the start, the still of the first picture is shown and presented.
        var presented = false
        #expect(await waitUntil(10) {
            if let picture = layer.picture(forRefreshAt: .now()) {
                layer.didPresent(number: picture.info.number, at: .now())
                presented = true
            }
            return presented
        })
        #expect(await waitUntil(5) { seen.withLockAnnotated { $0 } == [false, true] })
        #expect(layer.isReadyForDisplay)
    }

    @Test("gravity places the picture in the bounds as Apple's layer does")
    func videoRectFollowsGravity() {
        let size = CGSize(width: 1920, height: 1080)
        let bounds = CGRect(x: 0, y: 0, width: 800, height: 800)
        #expect(AVPlayerLayer.videoRect(of: size, in: bounds, gravity: .resizeAspect) == CGRect(x: 0, y: 175, width: 800, height: 450))
        let fill = AVPlayerLayer.videoRect(of: size, in: bounds, gravity: .resizeAspectFill)
        #expect(abs(fill.width - 1422.2222) < 0.001 && fill.height == 800 && abs(fill.minX + 311.1111) < 0.001)
        #expect(AVPlayerLayer.videoRect(of: size, in: bounds, gravity: .resize) == bounds)
        #expect(AVPlayerLayer.videoRect(of: .zero, in: bounds, gravity: .resize) == .zero)
    }

    @Test("a player without a layer decodes no pictures; one with a layer does, and stops when it goes")
    func picturesOnlyWhileShown() async throws {
        let item = AVPlayerItem(url: try TestMedia.identityVideo(seconds: 2, rate: 25, withSound: true))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        #expect(!player.engine.hasVideo)
        var layer: AVPlayerLayer? = AVPlayerLayer(player: player)
        #expect(await waitUntil(10) { player.engine.hasVideo })
        #expect(layer?.player === player)
        layer = nil
        #expect(await waitUntil(10) { !player.engine.hasVideo })
    }
}

/// Items with pictures and no sound.
@Suite(.ownThread) struct VideoOnlyItemTests {
    @Test("a video without sound plays its pictures on its own timeline and ends at its length")
    func videoOnlyPlaysAndEnds() async throws {
        let url = try TestMedia.identityVideo(seconds: 1.2, rate: 25)
        let item = AVPlayerItem(url: url)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let layer = AVPlayerLayer(player: player)
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        #expect(item.duration == CMTime(value: 1_200_000, timescale: 1_000_000))
        // Paused at the start, the layer shows the first picture as a still.
        var numbers: [Int] = []
        #expect(await waitUntil(10) {
            if let picture = layer.picture(forRefreshAt: .now()), let luma = picture.plane0 {
                numbers.append(TestMedia.identity(luma: luma, stride: picture.stride0, width: 320, height: 240))
            }
            return !numbers.isEmpty
        })
        player.play()
        #expect(await waitUntil(10) {
            if let picture = layer.picture(forRefreshAt: .now()), let luma = picture.plane0 {
                numbers.append(TestMedia.identity(luma: luma, stride: picture.stride0, width: 320, height: 240))
            }
            return ended.value == 1
        })
        // Paused at the end, the player reads the picture standing there anew (as after any
        // pause): the last one, shown once read, whether or not this thread saw it while
        // playing (it may not be scheduled in a picture's 40 ms on a loaded machine).
        let seenPlaying = numbers.count
        await waitUntil(5) {
            if let picture = layer.picture(forRefreshAt: .now()), let luma = picture.plane0 {
                numbers.append(TestMedia.identity(luma: luma, stride: picture.stride0, width: 320, height: 240))
            }
            return numbers.count > seenPlaying
        }
        // Pictures came in order, from the first to the last.
        #expect(numbers.first == 0)
        #expect(numbers.last == 29)
        #expect(numbers == numbers.sorted())
        #expect(player.currentTime() == item.duration)
    }
}

/// An application pulling pictures itself, as Apple's video output is used.
@Suite(.ownThread) struct VideoOutputTests {
    @Test("pictures pulled at the refresh's item time are the ones due, in I420 and in BGRA")
    func pullsPicturesDue() async throws {
        let item = AVPlayerItem(url: try TestMedia.identityVideo(seconds: 3, rate: 25, withSound: true))
        let planar = AVPlayerItemVideoOutput(pixelBufferAttributes: nil)
        item.add(planar)
        #expect(item.outputs.count == 1)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        player.play()
        #expect(await waitUntil(10) { player.timeControlStatus == .playing })
        struct Pull { var asked: CMTime; var shown: CMTime; var number: Int; var format: OSType; var planes: Int; var size: (Int, Int) }
        var pulls: [Pull] = []
        let gotTen = await waitUntil(10) {
            let itemTime = planar.itemTime(forHostTime: Double(HostTime.now().nanoseconds) / 1e9)
            guard planar.hasNewPixelBuffer(forItemTime: itemTime) else { return false }
            var shownAt = CMTime.invalid
            guard let buffer = planar.copyPixelBuffer(forItemTime: itemTime, itemTimeForDisplay: &shownAt),
                  let luma = CVPixelBufferGetBaseAddressOfPlane(buffer, 0) else { return false }
            let number = TestMedia.identity(luma: luma.assumingMemoryBound(to: UInt8.self),
                                            stride: CVPixelBufferGetBytesPerRowOfPlane(buffer, 0), width: 320, height: 240)
            pulls.append(Pull(asked: itemTime, shown: shownAt, number: number, format: CVPixelBufferGetPixelFormatType(buffer),
                              planes: CVPixelBufferGetPlaneCount(buffer),
                              size: (CVPixelBufferGetWidth(buffer), CVPixelBufferGetHeight(buffer))))
            return pulls.count == 10
        }
        #expect(gotTen)
        for pull in pulls {
            #expect(pull.format == kCVPixelFormatType_420YpCbCr8Planar && pull.planes == 3)
            #expect(pull.size == (320, 240))
            // Due by the refresh (within the schedule's rounding allowance), and no more than a
            // picture period before it.
            #expect(pull.shown <= pull.asked + CMTime(value: FrameSchedule.dueToleranceNanoseconds, timescale: 1_000_000_000))
            #expect((pull.asked - pull.shown).seconds < 0.041)
            // The picture is the one the file holds at that time.
            #expect(CMTime(value: Int64(pull.number), timescale: 25) == pull.shown)
        }
        // Host time in Mach's units (nanoseconds here) maps as host time in seconds does: the
        // same item time, but for the few µs by which the player's reading of its device moves
        // between the two calls.
        let host = HostTime.now()
        let byMach = planar.itemTime(forMachAbsoluteTime: Int64(clamping: host.nanoseconds))
        let bySeconds = planar.itemTime(forHostTime: Double(host.nanoseconds) / 1e9)
        #expect(byMach.isNumeric && abs((byMach - bySeconds).seconds) < 1e-3, "\(byMach.seconds) against \(bySeconds.seconds)")
        // After a copy, nothing new until the next picture comes due.
        let now = planar.itemTime(forHostTime: Double(HostTime.now().nanoseconds) / 1e9)
        _ = planar.copyPixelBuffer(forItemTime: now, itemTimeForDisplay: nil)
        #expect(!planar.hasNewPixelBuffer(forItemTime: now))
        item.remove(planar)
        #expect(item.outputs.isEmpty)
        #expect(await waitUntil(10) { !player.engine.hasVideo })
    }

    @Test("a BGRA output gives packed pixels: the identity pattern's white and black columns")
    func bgraPixels() async throws {
        let item = AVPlayerItem(url: try TestMedia.identityVideo(seconds: 1, rate: 25, withSound: true))
        let output = AVPlayerItemVideoOutput(pixelBufferAttributes: [kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_32BGRA])
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        item.add(output)
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        // Paused at 0: picture 0 is all black; seek to picture 1 (left column white).
        let sought = Atomic<Bool>(false)
        player.seek(to: CMTime(value: 1, timescale: 25), toleranceBefore: .zero, toleranceAfter: .zero) { sought.store($0, ordering: .relaxed) }
        #expect(await waitUntil(10) { sought.load(ordering: .relaxed) })
        var buffer: CVPixelBuffer?
        #expect(await waitUntil(10) {
            buffer = output.copyPixelBuffer(forItemTime: CMTime(value: 1, timescale: 25), itemTimeForDisplay: nil)
            return buffer.map { _ in true } ?? false
        })
        let picture = try #require(buffer)
        #expect(CVPixelBufferGetPixelFormatType(picture) == kCVPixelFormatType_32BGRA)
        #expect(CVPixelBufferGetPlaneCount(picture) == 0)
        let base = try #require(CVPixelBufferGetBaseAddress(picture)).assumingMemoryBound(to: UInt8.self)
        let row = base + 120 * CVPixelBufferGetBytesPerRow(picture)
        let white = row + 10 * 4, black = row + 300 * 4
        #expect(white[0] > 240 && white[1] > 240 && white[2] > 240)
        #expect(black[0] < 15 && black[1] < 15 && black[2] < 15)
    }

    @Test("full-range NV12 spreads the levels to 0 and 255, ARGB puts alpha first, and a size asked for scales the pictures")
    func formatsAndSizes() async throws {
        let item = AVPlayerItem(url: try TestMedia.identityVideo(seconds: 1, rate: 25, withSound: true))
        let video = AVPlayerItemVideoOutput(pixelBufferAttributes: [kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange])
        let full = AVPlayerItemVideoOutput(pixelBufferAttributes: [kCVPixelBufferPixelFormatTypeKey: [kCVPixelFormatType_420YpCbCr8BiPlanarFullRange]])
        let argb = AVPlayerItemVideoOutput(pixelBufferAttributes: [kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_32ARGB,
                                                                   kCVPixelBufferWidthKey: 160, kCVPixelBufferHeightKey: 120,
                                                                   kCVPixelBufferMetalCompatibilityKey: true])
        // No attributes at all: I420 at the picture's size.
        let plain = AVPlayerItemVideoOutput()
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        for output in [video, full, argb, plain] { item.add(output) }
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        let sought = Atomic<Bool>(false)
        player.seek(to: CMTime(value: 1, timescale: 25), toleranceBefore: .zero, toleranceAfter: .zero) { sought.store($0, ordering: .relaxed) }
        #expect(await waitUntil(10) { sought.load(ordering: .relaxed) })
        func picture(_ output: AVPlayerItemVideoOutput) async -> CVPixelBuffer? {
            var buffer: CVPixelBuffer?
            _ = await waitUntil(10) {
                buffer = output.copyPixelBuffer(forItemTime: CMTime(value: 1, timescale: 25), itemTimeForDisplay: nil)
                return buffer != nil
            }
            return buffer
        }
        // Row 120's luma, at a white column (10) and a black one (300).
        func levels(_ buffer: CVPixelBuffer) throws -> (white: UInt8, black: UInt8) {
            let luma = try #require(CVPixelBufferGetBaseAddressOfPlane(buffer, 0)).assumingMemoryBound(to: UInt8.self)
            let row = luma + 120 * CVPixelBufferGetBytesPerRowOfPlane(buffer, 0)
            return (row[10], row[300])
        }
        let videoRange = try #require(await picture(video))
        let fullRange = try #require(await picture(full))
        #expect(CVPixelBufferGetPixelFormatType(fullRange) == kCVPixelFormatType_420YpCbCr8BiPlanarFullRange)
        #expect(CVPixelBufferGetPlaneCount(fullRange) == 2)
        let narrow = try levels(videoRange), wide = try levels(fullRange)
        #expect(narrow.black >= 12 && narrow.black <= 20 && narrow.white >= 230 && narrow.white <= 240, "video range \(narrow)")
        #expect(wide.black <= 4 && wide.white >= 250, "full range \(wide)")

        let packed = try #require(await picture(argb))
        #expect(CVPixelBufferGetPixelFormatType(packed) == kCVPixelFormatType_32ARGB)
        #expect(CVPixelBufferGetWidth(packed) == 160 && CVPixelBufferGetHeight(packed) == 120)
        #expect(CVPixelBufferGetBytesPerRow(packed) == 160 * 4)
        #expect(CVPixelBufferGetDataSize(packed) == 160 * 120 * 4)
        let base = try #require(CVPixelBufferGetBaseAddress(packed)).assumingMemoryBound(to: UInt8.self)
        let row = base + 60 * CVPixelBufferGetBytesPerRow(packed)
        let white = row + 5 * 4, black = row + 150 * 4
        #expect(white[0] == 255 && white[1] > 240 && white[2] > 240 && white[3] > 240)
        #expect(black[0] == 255 && black[1] < 15 && black[2] < 15 && black[3] < 15)

        let planar = try #require(await picture(plain))
        #expect(CVPixelBufferGetPixelFormatType(planar) == kCVPixelFormatType_420YpCbCr8Planar)
        #expect(CVPixelBufferGetWidth(planar) == 320 && CVPixelBufferGetDataSize(planar) == 320 * 240 + 2 * 160 * 120)
    }
}

extension VideoOnlyItemTests {
    @Test("without a sound device, a video without sound still plays, on the host clock; one with sound still fails")
    func noSoundDeviceNeededWithoutSound() async throws {
        // Two seconds, not less: on a loaded machine a 0.6 s clip once had only 2 of its 15
        // pictures taken in time by this test's own refreshes.
        let silent = AVPlayerItem(url: try TestMedia.identityVideo(seconds: 2, rate: 25))
        let player = AVPlayer(playerItem: silent, output: .alsa(device: "chorus_no_such_device"))
        defer { player.close() }
        let layer = AVPlayerLayer(player: player)
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: silent)
        #expect(await waitUntil(10) { silent.status == .readyToPlay })
        #expect(player.engine.isOnFallback)
        player.play()
        var shown = 0
        #expect(await waitUntil(10) {
            if layer.picture(forRefreshAt: .now()) != nil { shown += 1 }
            return ended.value == 1
        })
        #expect(shown > 5)

        let loud = AVPlayerItem(url: try TestMedia.identityVideo(seconds: 0.6, rate: 25, withSound: true))
        let other = AVPlayer(playerItem: loud, output: .alsa(device: "chorus_no_such_device"))
        defer { other.close() }
        #expect(await waitUntil(10) { loud.status == .failed })
    }
}

/// Pictures that cannot all be shown.
@Suite(.ownThread) struct DamagedVideoTests {
    @Test("damaged pictures are skipped and the sound plays to its end")
    func damagedPicturesDoNotStopTheSound() async throws {
        let source = try TestMedia.identityVideo(seconds: 2, rate: 25, withSound: true)
        // Noise over a stretch in the middle of the file: pictures (most of an MP4's bytes)
        // are hit, and perhaps some sound.
        let url = try TestMedia.damaged(source, at: 0.45, length: 4_000, seed: 19)
        let (shownPlayer, ready) = await ShownPlayer.open(url, timeout: 10)
        let (item, player, layer, ended, failed) = (shownPlayer.item, shownPlayer.player, shownPlayer.layer, shownPlayer.ended, shownPlayer.failed)
        defer { player.close() }
        #expect(ready)
        player.play()
        var shown = 0
        #expect(await waitUntil(15) {
            if layer.picture(forRefreshAt: .now()) != nil { shown += 1 }
            return ended.value + failed.value > 0
        })
        // The sound went on past the damage to the end (less what the noise took of the sound
        // itself), and pictures were shown on either side of the damage.
        #expect(ended.value == 1)
        #expect(player.currentTime().seconds > 0.9 * item.duration.seconds)
        #expect(shown > 25)
    }
}

/// Tracks turned off and on while playing.
@Suite(.ownThread) struct TrackEnablingTests {
    @Test("turning the video track off takes the picture away and stops its decoding; on again, it comes back")
    func videoTrackOffAndOn() async throws {
        let item = AVPlayerItem(url: try TestMedia.identityVideo(seconds: 4, rate: 25, withSound: true))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let layer = AVPlayerLayer(player: player)
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        player.play()
        #expect(await waitUntil(10) { layer.picture(forRefreshAt: .now()) != nil })
        let video = try #require(item.tracks.first { $0.assetTrack?.mediaType == .video })
        video.isEnabled = false
        #expect(await waitUntil(10) { !player.engine.hasVideo })
        #expect(layer.picture(forRefreshAt: .now()) == nil)
        #expect(item.presentationSize == CGSize(width: 320, height: 240))
        video.isEnabled = true
        #expect(await waitUntil(10) { player.engine.hasVideo })
        // The pictures come back from where the sound is, not from where they stopped.
        var number: Int64?
        #expect(await waitUntil(10) {
            number = layer.picture(forRefreshAt: .now())?.info.itemNanoseconds
            return number != nil
        })
        let now = player.currentTime().convertScale(1_000_000_000, method: .roundHalfAwayFromZero).value
        #expect(abs(now - (number ?? 0)) < 200_000_000)
    }

    @Test("turning the audio track off silences the item at once")
    func audioTrackOff() async throws {
        let item = AVPlayerItem(url: try TestMedia.identityVideo(seconds: 2, rate: 25, withSound: true))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        let audio = try #require(item.tracks.first { $0.assetTrack?.mediaType == .audio })
        audio.isEnabled = false
        #expect(player.engine.currentControl?.volume == 0)
        audio.isEnabled = true
        #expect(player.engine.currentControl?.volume == 1)
    }
}
