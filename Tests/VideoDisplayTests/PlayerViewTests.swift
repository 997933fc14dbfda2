import Foundation
import Testing
import ChorusTestSupport
@testable import AVPlayback
import MediaPipeline
import Synchronization

/// The frame number an identity picture shows, read back from a window's pixels: the middle
/// of each of its columns, across the picture's rectangle in the window.
private func identity(in snapshot: WindowSnapshot, picture rect: CGRect) -> Int {
    var number = 0
    let y = Int(Double(rect.midY))
    let columns = Double(2 * TestMedia.identityBits)
    for bit in 0..<TestMedia.identityBits {
        let fraction = Double(2 * bit + 1) / columns
        let x = Int(Double(rect.minX) + Double(rect.width) * fraction)
        guard let pixel = snapshot.pixel(x: x, y: y) else { continue }
        let brightness: Int = Int(pixel.red) + Int(pixel.green) + Int(pixel.blue)
        if brightness > 384 { number |= 1 << bit }
    }
    return number
}

extension VideoWindowTests {
/// Real windows on the display (a private Xvfb under `make test`), nested in the window
/// suite so that its serialization covers them too: SDL allows one window per process.
@Suite(.ownThread) struct PlayerViewTests {
    @Test("the window shows the picture it says it shows, in step with the sound", .enabled(if: hasDisplay))
    func windowShowsThePicturesInStep() async throws {
        let item = AVPlayerItem(url: try TestMedia.identityVideo(seconds: 4, rate: 25, withSound: true))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let view = try AVPlayerView(player: player, title: "test", geometry: "640x480+0+0")
        defer { view.close() }
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        player.play()
        #expect(await waitUntil(10) { view.playerLayer.isReadyForDisplay })
        // 320×240 fits 640×480 exactly.
        #expect(await waitUntil(5) { view.videoRect == CGRect(x: 0, y: 0, width: 640, height: 480) })
        var reads: [(shown: Int64, read: Int)] = []
        for _ in 0..<8 {
            guard let snapshot = view.snapshot(), let shown = snapshot.frameIdentity else { continue }
            reads.append((shown, identity(in: snapshot, picture: view.videoRect)))
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(reads.count >= 6)
        // The pixels on screen are the picture the window reports, and the pictures move on.
        for read in reads { #expect(Int64(read.read) == read.shown) }
        #expect(Set(reads.map(\.read)).count >= 4)
        // Each picture reached the screen within a refresh or two of when its sound is heard.
        let error = view.playerLayer.lastPresentationErrorNanoseconds
        #expect(abs(error) < 2 * view.refreshInterval.nanosecondsClamped, "last picture \(error) ns from its time")
    }

    @Test("the display is kept awake while pictures play, and allowed to sleep when they pause or the player says so",
          .enabled(if: hasDisplay))
    func displayIsKeptAwakeWhilePicturesPlay() async throws {
        let item = AVPlayerItem(url: try TestMedia.identityVideo(seconds: 30, rate: 25, withSound: true))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let view = try AVPlayerView(player: player, geometry: "320x240+0+0")
        defer { view.close() }
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        #expect(player.preventsDisplaySleepDuringVideoPlayback)
        #expect(!view.isKeepingDisplayAwake, "a paused player leaves the display free to sleep")
        player.play()
        #expect(await waitUntil(5) { view.isKeepingDisplayAwake })
        player.pause()
        #expect(await waitUntil(5) { !view.isKeepingDisplayAwake })
        player.play()
        #expect(await waitUntil(5) { view.isKeepingDisplayAwake })
        player.preventsDisplaySleepDuringVideoPlayback = false
        #expect(await waitUntil(5) { !view.isKeepingDisplayAwake })
        player.preventsDisplaySleepDuringVideoPlayback = true
        #expect(await waitUntil(5) { view.isKeepingDisplayAwake })
        view.player = nil
        #expect(await waitUntil(5) { !view.isKeepingDisplayAwake })
    }

    /// Pixels near white in the lower fifth of `rect`: subtitle text, over a black picture.
    private func whitePixelsAtTheFoot(of snapshot: WindowSnapshot, picture rect: CGRect) -> Int {
        var count = 0
        let top = Int(rect.minY + rect.height * 0.8)
        for y in stride(from: top, to: Int(rect.maxY), by: 2) {
            for x in stride(from: Int(rect.minX), to: Int(rect.maxX), by: 2) {
                guard let pixel = snapshot.pixel(x: x, y: y) else { continue }
                if Int(pixel.red) + Int(pixel.green) + Int(pixel.blue) > 600 { count += 1 }
            }
        }
        return count
    }

    @Test("the chosen subtitles are drawn over the picture while their line is due, and not otherwise", .enabled(if: hasDisplay))
    func chosenSubtitlesAreDrawn() async throws {
        let item = AVPlayerItem(url: try TestMedia.multilingual(seconds: 5, video: true))
        let legible = try #require(try await item.asset.loadMediaSelectionGroup(for: .legible))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let view = try AVPlayerView(player: player, geometry: "640x480+0+0")
        defer { view.close() }
        #expect(await waitUntil(10) { item.status == .readyToPlay && view.playerLayer.isReadyForDisplay })
        func seek(_ seconds: Double) async {
            let done = Atomic<Bool>(false)
            player.seek(to: CMTime(seconds: seconds, preferredTimescale: 1000), toleranceBefore: .zero, toleranceAfter: .zero) {
                done.store($0, ordering: .relaxed)
            }
            #expect(await waitUntil(10) { done.load(ordering: .relaxed) })
        }
        func drawn() -> Int {
            guard let snapshot = view.snapshot() else { return -1 }
            return whitePixelsAtTheFoot(of: snapshot, picture: view.videoRect)
        }
        // Off by default (no subtitle track is marked default): nothing over the picture.
        await seek(0.7)
        #expect(await waitUntil(3) { drawn() == 0 })
        item.select(legible.options[0], in: legible)
        // "Good evening." is due from 0.5 s to 1.5 s.
        #expect(await waitUntil(5) { drawn() > 50 }, "white pixels: \(drawn())")
        await seek(1.7)
        #expect(await waitUntil(5) { drawn() == 0 }, "white pixels: \(drawn())")
        // A legible output that draws them itself keeps the player from drawing them.
        await seek(2.5)
        #expect(await waitUntil(5) { drawn() > 50 })
        let output = AVPlayerItemLegibleOutput()
        output.suppressesPlayerRendering = true
        item.add(output)
        #expect(await waitUntil(5) { drawn() == 0 })
    }

    @Test("a cropped window shows only its part of the picture, filling the window", .enabled(if: hasDisplay))
    func croppedWindowShowsItsPart() async throws {
        let item = AVPlayerItem(url: try TestMedia.identityVideo(seconds: 12, rate: 25, withSound: true))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        // The right half of the picture (identity columns 8 to 15), in a window of its shape.
        let view = try AVPlayerView(player: player, geometry: "320x480+0+0", crop: "160:240:160:0")
        defer { view.close() }
        #expect(await waitUntil(10) { item.status == .readyToPlay && view.playerLayer.isReadyForDisplay })
        // Picture 256 has bit 8 alone set: the first column of the right half.
        let sought = Atomic<Bool>(false)
        player.seek(to: CMTime(value: 256, timescale: 25), toleranceBefore: .zero, toleranceAfter: .zero) { sought.store($0, ordering: .relaxed) }
        #expect(await waitUntil(10) { sought.load(ordering: .relaxed) })
        #expect(await waitUntil(5) { view.videoRect == CGRect(x: 0, y: 0, width: 320, height: 480) })
        // Uncropped, bit 8 would light the middle of the window, not its left edge.
        var lit: [Int] = []
        #expect(await waitUntil(5) {
            guard let snapshot = view.snapshot() else { return false }
            lit = (0..<8).filter { column in
                let x = Int((Double(column) + 0.5) * 320 / 8)
                guard let pixel = snapshot.pixel(x: x, y: 240) else { return false }
                return Int(pixel.red) + Int(pixel.green) + Int(pixel.blue) > 384
            }
            return lit == [0]
        }, "lit columns of the right half: \(lit)")
    }

    /// Picture 255 of the identity video: bits 0 to 7 lit, the left half of the picture.
    static let picture255 = CMTime(value: 255, timescale: 25)

    /// A 12 s identity video with sound in a 320×240 window, paused on `picture255`, which
    /// the window shows.
    static func pausedOnPicture255() async throws -> (AVPlayerItem, AVPlayer, AVPlayerView) {
        let item = AVPlayerItem(url: try TestMedia.identityVideo(seconds: 12, rate: 25, withSound: true))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        let view: AVPlayerView
        do {
            view = try AVPlayerView(player: player, geometry: "320x240+0+0")
        } catch {
            player.close()
            throw error
        }
        #expect(await waitUntil(10) { item.status == .readyToPlay && view.playerLayer.isReadyForDisplay })
        let sought = Atomic<Bool>(false)
        player.seek(to: picture255, toleranceBefore: .zero, toleranceAfter: .zero) { sought.store($0, ordering: .relaxed) }
        #expect(await waitUntil(10) { sought.load(ordering: .relaxed) })
        #expect(await waitUntil(5) { (brightness(of: view) ?? 0) > 600 })
        return (item, player, view)
    }

    /// The brightness (red + green + blue) of the window's pixel in the picture's left half.
    static func brightness(of view: AVPlayerView) -> Int? {
        guard let snapshot = view.snapshot(), let pixel = snapshot.pixel(x: 10, y: 120) else { return nil }
        return Int(pixel.red) + Int(pixel.green) + Int(pixel.blue)
    }

    @Test("with the picture turned off the window goes black, and the picture comes back when it is turned on", .enabled(if: hasDisplay))
    func pictureOffIsBlack() async throws {
        let (item, player, view) = try await Self.pausedOnPicture255()
        defer { player.close() }
        defer { view.close() }
        func brightness() -> Int? { Self.brightness(of: view) }
        let video = try #require(item.tracks.first { $0.assetTrack?.mediaType == .video })
        video.isEnabled = false
        #expect(await waitUntil(5) { (brightness() ?? 999) < 30 })
        video.isEnabled = true
        #expect(await waitUntil(5) { (brightness() ?? 0) > 600 })
    }

    @Test("a video output that suppresses the player's rendering leaves the window black and still gets the pictures",
          .enabled(if: hasDisplay))
    func suppressingVideoOutputLeavesTheWindowBlack() async throws {
        let (item, player, view) = try await Self.pausedOnPicture255()
        defer { player.close() }
        defer { view.close() }
        let picture = Self.picture255
        func brightness() -> Int? { Self.brightness(of: view) }
        let output = AVPlayerItemVideoOutput()
        #expect(!output.suppressesPlayerRendering)
        output.suppressesPlayerRendering = true
        item.add(output)
        #expect(await waitUntil(5) { (brightness() ?? 999) < 30 })
        // The application has the picture the window no longer shows.
        var shownTime = CMTime.invalid
        let buffer = try #require(output.copyPixelBuffer(forItemTime: picture, itemTimeForDisplay: &shownTime))
        #expect(shownTime == picture)
        _ = CVPixelBufferLockBaseAddress(buffer, .readOnly)
        let luma = CVPixelBufferGetBaseAddressOfPlane(buffer, 0)?.assumingMemoryBound(to: UInt8.self)
        #expect((luma?[CVPixelBufferGetBytesPerRowOfPlane(buffer, 0) * 120 + 10]).map { $0 > 200 } == true)
        _ = CVPixelBufferUnlockBaseAddress(buffer, .readOnly)
        // Rendering given back, the paused window shows the picture again; and again when the
        // output is removed while it suppresses.
        output.suppressesPlayerRendering = false
        #expect(await waitUntil(5) { (brightness() ?? 0) > 600 })
        output.suppressesPlayerRendering = true
        #expect(await waitUntil(5) { (brightness() ?? 999) < 30 })
        item.remove(output)
        #expect(await waitUntil(5) { (brightness() ?? 0) > 600 })
        // While playing, the window stays black and the output's pictures move on.
        item.add(output)
        #expect(await waitUntil(5) { (brightness() ?? 999) < 30 })
        player.play()
        var times: Set<Int64> = []
        #expect(await waitUntil(5) {
            var time = CMTime.invalid
            let now = output.itemTime(forHostTime: CACurrentMediaTime())
            if output.hasNewPixelBuffer(forItemTime: now), output.copyPixelBuffer(forItemTime: now, itemTimeForDisplay: &time) != nil {
                times.insert(time.value * 25 / Int64(time.timescale))
            }
            return times.count >= 5
        })
        #expect((brightness() ?? 999) < 30)
    }

    @Test("paused, the window's controls and steps move the picture one at a time", .enabled(if: hasDisplay))
    func stepsWhilePaused() async throws {
        let item = AVPlayerItem(url: try TestMedia.identityVideo(seconds: 2, rate: 25, withSound: true))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let view = try AVPlayerView(player: player, geometry: "320x240+0+0")
        defer { view.close() }
        #expect(await waitUntil(10) { item.status == .readyToPlay && view.playerLayer.isReadyForDisplay })
        #expect(item.canStepForward)
        func shown() -> Int? {
            guard let snapshot = view.snapshot() else { return nil }
            return identity(in: snapshot, picture: view.videoRect)
        }
        #expect(await waitUntil(5) { shown() == 0 })
        item.step(byCount: 3)
        #expect(await waitUntil(5) { shown() == 3 })
        item.step(byCount: -1)
        var last: Int?
        #expect(await waitUntil(5) { last = shown(); return last == 2 }, "shows \(String(describing: last)) at \(player.currentTime().seconds) s")
        #expect(player.rate == 0)
    }
}
}
