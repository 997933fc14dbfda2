// "Monitoring Playback" through "Reaching the End of an Item", in Swift. Lines marked
// CHANGED differ from what the same code says on Apple's platforms; README.md in this
// folder lists them with the reasons.

import AVPlayback
import Foundation

/// "Responding to a Change in Status": a player whose item cannot play reports the failure
/// and an error that says why.
@MainActor final class StatusChangeSection {
    var player: AVPlayer!
    private var observation: NSKeyValueObservation?

    func start(_ url: URL, outcome: Outcome) {
        player = AVPlayer(url: url)
        // CHANGED: a block observation of the item's status for observeValueForKeyPath:
        observation = player.observe(\.currentItem?.status, options: [.initial]) { thePlayer, _ in
            if thePlayer.status == .failed || thePlayer.currentItem?.status == .failed {
                let error = thePlayer.error ?? thePlayer.currentItem?.error
                // Respond to error: for example, display an alert sheet.
                DispatchQueue.main.async {
                    say("     failed, as it should: \(error.map { $0.localizedDescription } ?? "no error")")
                    if error == nil { outcome.fail("no error") } else { outcome.pass() }
                }
                return
            }
            // Deal with other status change if appropriate.
            if thePlayer.currentItem?.status == .readyToPlay { outcome.fail("media that cannot play became ready") }
        }
    }
}

/// "Monitoring Playback": the properties that change by themselves notify. The rate drops
/// to zero at the end, loadedTimeRanges grow as data comes, and the layer becomes ready
/// for display ("Tracking Readiness for Visual Display") when its first picture shows.
@MainActor final class MonitoringSection {
    var player: AVPlayer!
    var playerLayer: AVPlayerLayer?
    private var observations: [NSKeyValueObservation] = []
    private var seen: Set<String> = []
    private var wanted: Set<String> = ["loadedTimeRanges", "rate dropped to 0", "status"]

    func start(_ url: URL, hasPictures: Bool, outcome: Outcome) {
        let player = AVPlayer(url: url)
        self.player = player
        let note: @Sendable (String) -> Void = { key in
            DispatchQueue.main.async {
                guard self.seen.insert(key).inserted else { return }
                say("     notified: \(key)")
                if self.wanted.isSubset(of: self.seen) { outcome.pass() }
            }
        }
        observations.append(player.observe(\.currentItem?.loadedTimeRanges, options: [.new]) { player, _ in
            if let ranges = player.currentItem?.loadedTimeRanges, !ranges.isEmpty { note("loadedTimeRanges") }
        })
        observations.append(player.observe(\.rate, options: [.old, .new]) { _, change in
            if change.oldValue != 0, change.newValue == 0 { note("rate dropped to 0") }
        })
        observations.append(player.observe(\.status, options: [.initial]) { player, _ in
            if player.status == .readyToPlay { note("status") }
        })
        if hasPictures {
            // A layer shows pictures only in a window: on Linux, AVPlayerView's.
            if let view = try? AVPlayerView(player: nil, title: "guide") {
                wanted.insert("readyForDisplay")
                let layer = view.playerLayer
                layer.player = player
                playerLayer = layer
                hostingView = view
                observations.append(layer.observe(\.isReadyForDisplay) { layer, _ in  // CHANGED: isReadyForDisplay, Swift's name for readyForDisplay
                    if layer.isReadyForDisplay { note("readyForDisplay") }
                })
            } else {
                say("     no display: readyForDisplay is not checked")
            }
        }
        // The harness: start near the end, so the rate drops soon.
        observations.append(player.observe(\.currentItem?.status, options: [.initial]) { player, _ in
            guard player.currentItem?.status == .readyToPlay, let duration = player.currentItem?.duration, duration.isNumeric else { return }
            DispatchQueue.main.async {
                player.seek(to: CMTimeSubtract(duration, CMTimeMake(value: 1, timescale: 1)), toleranceBefore: .zero, toleranceAfter: .zero)
                player.play()
            }
        })
    }

    private var hostingView: AVPlayerView?

    func close() { hostingView?.close() }
}

/// "Tracking Time": boundary observers at a third and two thirds of the asset, each
/// logging the time it fired with CMTimeCopyDescription; and the end notification.
@MainActor final class TrackingTimeSection {
    var player: AVPlayer!
    var playerObserver: Any?  // "Assume a property: @property (strong) id playerObserver;"
    private var endObserver: (any NSObjectProtocol)?
    private var boundaries = 0

    func start(_ url: URL, outcome: Outcome) {
        let asset = AVURLAsset(url: url)
        player = AVPlayer(playerItem: AVPlayerItem(asset: asset))

        let durationSeconds = CMTimeGetSeconds(asset.duration)
        let firstThird = CMTimeMakeWithSeconds(durationSeconds / 3.0, preferredTimescale: 1)
        let secondThird = CMTimeMakeWithSeconds(durationSeconds * 2.0 / 3.0, preferredTimescale: 1)
        let times = [NSValue(time: firstThird), NSValue(time: secondThird)]
        self.playerObserver = player.addBoundaryTimeObserver(forTimes: times, queue: nil) { [weak self] in
            MainActor.assumeIsolated {  // CHANGED: the block comes on the main queue (queue: nil); this says so to Swift 6
                guard let self else { return }
                let timeDescription = CMTimeCopyDescription(allocator: nil, time: self.player.currentTime()) ?? ""
                NSLog("Passed a boundary at %@", timeDescription)
                self.boundaries += 1
            }
        }

        // "Reaching the End of an Item"
        endObserver = NotificationCenter.default.addObserver(  // CHANGED: a block for the selector
            forName: .AVPlayerItemDidPlayToEndTime,
            object: player.currentItem,
            queue: .main) { _ in
                MainActor.assumeIsolated {
                    say("     boundaries passed before the end: \(self.boundaries) (times \(firstThird.seconds) s and \(secondThird.seconds) s)")
                    if let playerObserver = self.playerObserver { self.player.removeTimeObserver(playerObserver) }  // "balance each invocation"
                    if self.boundaries == 2 { outcome.pass() } else { outcome.fail("\(self.boundaries) boundaries fired, not 2") }
                }
            }
        // The harness: start half a second before the first boundary.
        player.seek(to: CMTimeMakeWithSeconds(max(0, firstThird.seconds - 0.5), preferredTimescale: 1000), toleranceBefore: .zero, toleranceAfter: .zero)
        player.play()
    }
}
