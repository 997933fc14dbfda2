import CAllocationCounter
import Foundation
import Testing
import ChorusTestSupport
@testable import AVPlayback
import MediaPipeline

/// The display thread's side of a layer is real-time: in steady state a refresh allocates
/// nothing (the counter stands in for the C library's allocator on the calling thread).
@Suite(.serialized, .enabled(if: chorus_allocation_counting_available() != 0, "allocations are not countable under a sanitizer"), .ownThread)
struct PictureAllocationTests {
    /// Refreshes counted after the warm-up: about three seconds of a 60 Hz display.
    static let countedRefreshes = 180

    @Test("a refresh that takes, shows and reports pictures allocates nothing")
    func refreshesAllocateNothing() async throws {
        // A check that the counter sees this thread at all.
        chorus_allocation_counting_start()
        _ = [Int](repeating: 1, count: 1_000)
        #expect(chorus_allocation_counting_stop() >= 1)

        let item = AVPlayerItem(url: try TestMedia.identityVideo(seconds: 8, rate: 60, withSound: true))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let layer = AVPlayerLayer(player: player)
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        player.play()
        #expect(await waitUntil(10) { player.timeControlStatus == .playing })
        // Warm-up: the first picture (and the one-time readiness notice) are behind us.
        func refresh() -> Bool {
            guard let picture = layer.picture(forRefreshAt: .now(), refreshInterval: .nanoseconds(16_666_667)) else { return false }
            layer.didPresent(number: picture.info.number, at: .now())
            return true
        }
        var warm = 0
        #expect(await waitUntil(10) {
            if refresh() { warm += 1 }
            return warm >= 20
        })
        var shown = 0
        chorus_allocation_counting_start()
        for _ in 0..<Self.countedRefreshes {
            if refresh() { shown += 1 }
            usleep(16_000)
        }
        let counted = chorus_allocation_counting_stop()
        #expect(shown > Self.countedRefreshes / 2, "\(shown) pictures shown")
        #expect(counted == 0, "\(counted) allocations in \(Self.countedRefreshes) refreshes")
    }
}
