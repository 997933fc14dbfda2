import Foundation
import Testing
import ChorusTestSupport
@testable import AVPlayback
import MediaClock
import MediaPipeline
import Synchronization

/// Code as it is written for Apple's playback classes, compiled and run unchanged.
@Suite(.ownThread) struct PortingTests {
    @Test("an asset's tracks load by media type, and a track's properties load as an asset's do")
    func assetsAndTracksLoadAsOnApplePlatforms() async throws {
        let asset = AVAsset(url: try TestMedia.identityVideo(seconds: 1, rate: 25, rotate: 90, withSound: true))
        #expect(!asset.hasProtectedContent)
        let videos = try await asset.loadTracks(withMediaType: .video)
        let audios = try await asset.loadTracks(withMediaType: .audio)
        #expect(videos.count == 1)
        #expect(audios.count == 1)
        let video = try #require(videos.first)
        let (size, transform, rate) = try await video.load(.naturalSize, .preferredTransform, .nominalFrameRate)
        #expect(size == CGSize(width: 320, height: 240))
        #expect(transform == video.preferredTransform)
        #expect(rate == 25)
        let (kind, playable) = try await audios[0].load(.mediaType, .isPlayable)
        #expect(kind == .audio)
        #expect(playable)
        let byID = try await asset.loadTrack(withTrackID: video.trackID)
        #expect(byID?.trackID == video.trackID)
    }

    @Test("seek and preroll can be awaited")
    func seekAndPrerollAwait() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 2, rate: 48_000))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        let sought = await player.seek(to: CMTime(value: 1, timescale: 1))
        #expect(sought)
        #expect(player.currentTime() == CMTime(value: 1, timescale: 1))
        let prerolled = await player.preroll(atRate: 1)
        #expect(prerolled)
        let itemSought = await item.seek(to: CMTime(value: 1, timescale: 2))
        #expect(itemSought)
    }

    @Test("boundary times given as NSValues fire as the time crosses them")
    func boundaryTimesAsValues() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1, rate: 48_000))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let fired = Atomic<Int>(0)
        let times = [NSValue(time: CMTime(value: 200, timescale: 1000)), NSValue(time: CMTime(value: 400, timescale: 1000))]
        let token = player.addBoundaryTimeObserver(forTimes: times, queue: DispatchQueue(label: "test.boundary")) {
            fired.add(1, ordering: .relaxed)
        }
        defer { player.removeTimeObserver(token) }
        player.play()
        #expect(await waitUntil(10) { fired.load(ordering: .relaxed) == 2 })
    }

    @Test("times and ranges go into NSValues and come back exactly")
    func valuesHoldTimes() {
        let time = CMTime(value: 1001, timescale: 30000)
        #expect(NSValue(time: time).timeValue == time)
        #expect(NSValue(time: .indefinite).timeValue.isIndefinite)
        let range = CMTimeRange(start: time, duration: CMTime(value: 3, timescale: 1))
        #expect(NSValue(timeRange: range).timeRangeValue == range)
        // A value that holds no time gives none.
        #expect(!NSNumber(value: 3).timeValue.isValid)
        #expect(CMTimeCopyDescription(allocator: nil, time: time) == time.description)
    }

    @Test("players, items and assets compare by identity")
    func identity() throws {
        let url = try TestMedia.tone(.wav, seconds: 1)
        let a = AVPlayerItem(url: url), b = AVPlayerItem(url: url)
        #expect(a == a)
        #expect(a != b)
        #expect(Set([a, b, a]).count == 2)
        #expect(a.asset == a.asset)
        #expect(a.asset != b.asset)
        let player = AVPlayer(playerItem: nil, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(player == player)
    }

    @Test("the smaller pieces Apple's code reaches for: the external screen's gravity, captions, the host clock in seconds, a date seek")
    func smallerPieces() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 2, rate: 48_000))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(player.externalPlaybackVideoGravity == .resizeAspect)
        let gravities = Collected<AVLayerVideoGravity>()
        let observation = player.observe(\.externalPlaybackVideoGravity, options: [.new]) { _, change in change.newValue.map(gravities.append) }
        defer { observation.invalidate() }
        player.externalPlaybackVideoGravity = .resizeAspectFill
        #expect(player.externalPlaybackVideoGravity == .resizeAspectFill)
        #expect(gravities.all == [.resizeAspectFill])
        #expect(!player.isClosedCaptionDisplayEnabled)
        player.isClosedCaptionDisplayEnabled = true
        #expect(player.isClosedCaptionDisplayEnabled)
        #expect(!player.outputObscuredDueToInsufficientExternalProtection)
        // CACurrentMediaTime() is the clock host times are on: an item's time for "now" is its
        // current time.
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        let output = AVPlayerItemVideoOutput(pixelBufferAttributes: nil)
        item.add(output)
        let now = output.itemTime(forHostTime: CACurrentMediaTime())
        #expect(abs(now.seconds - player.currentTime().seconds) < 0.01)
        let before = CACurrentMediaTime()
        #expect(CACurrentMediaTime() >= before)
        // Media here carries no dates.
        let sought = await player.seek(to: Date())
        #expect(!sought)
    }
}
