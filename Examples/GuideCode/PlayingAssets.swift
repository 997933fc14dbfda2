// "Playing Assets" and "Handling Different Types of Asset": the guide's code in Swift.
// Lines marked CHANGED differ from what the same code says on Apple's platforms; README.md
// in this folder lists them with the reasons.

import AVPlayback
import Foundation

/// "To load and play a file-based asset": make an asset, an item for it and a player for
/// the item, then wait for the item's status to say it is ready to play.
@MainActor final class FileBasedAssetSection {
    var player: AVPlayer?
    var playerItem: AVPlayerItem?
    private var itemStatusObservation: NSKeyValueObservation?

    func load(_ url: URL, outcome: Outcome) {
        let asset = AVURLAsset(url: url)
        playerItem = AVPlayerItem(asset: asset)
        itemStatusObservation = playerItem?.observe(\.status, options: [.initial]) { item, _ in
            if item.status == .readyToPlay { outcome.pass() }
            if item.status == .failed { outcome.fail("the item failed: \(item.error.map { $0.localizedDescription } ?? "")") }
        }
        player = AVPlayer(playerItem: playerItem)
    }
}

/// "To create and prepare an HTTP live stream for playback": an item made from the URL,
/// its status observed before it goes to a player; its duration is right once it is ready.
@MainActor final class LiveStreamSection {
    var player: AVPlayer!
    var playerItem: AVPlayerItem!
    private var itemStatusObservation: NSKeyValueObservation?  // CHANGED: a block observation instead of a context

    func prepare(_ streamURL: URL, outcome: Outcome) {
        let url = streamURL  // the guide: URL(string: "<#Live stream URL#>")
        // You may find a test stream at <http://devimages.apple.com/iphone/samples/bipbop/bipbopall.m3u8>.
        self.playerItem = AVPlayerItem(url: url)
        itemStatusObservation = playerItem.observe(\.status) { item, _ in  // CHANGED: observe(_:) for addObserver(_:forKeyPath:options:context:)
            switch item.status {
            case .readyToPlay:
                // "When the item becomes ready to play, this property updates to the correct value."
                let duration = item.duration
                if duration.isNumeric || duration.isIndefinite {
                    say("     stream duration: \(duration.isIndefinite ? "indefinite (live)" : String(format: "%.2f s", duration.seconds))")
                    outcome.pass()
                } else {
                    outcome.fail("ready, but the duration is \(duration)")
                }
            case .failed: outcome.fail("the stream failed: \(item.error.map { $0.localizedDescription } ?? "")")
            default: break
            }
        }
        self.player = AVPlayer(playerItem: playerItem)
    }
}

/// "If you simply want to play a live stream": a player made from the URL, whose status
/// goes to ready to play, and whose current item is the one made for the stream.
@MainActor final class PlayerFromURLSection {
    var player: AVPlayer!
    private var playerStatusObservation: NSKeyValueObservation?  // CHANGED: a block observation instead of a context
    private var currentItemObservation: NSKeyValueObservation?

    func start(_ url: URL, outcome: Outcome) {
        self.player = AVPlayer(url: url)
        playerStatusObservation = player.observe(\.status) { thePlayer, _ in  // CHANGED: observe(_:) for addObserver(_:forKeyPath:options:context:)
            switch thePlayer.status {
            case .readyToPlay:
                if thePlayer.currentItem == nil { outcome.fail("ready, with no current item") } else { outcome.pass() }
            case .failed: outcome.fail("the player failed: \(thePlayer.error.map { $0.localizedDescription } ?? "")")
            default: break
            }
        }
        currentItemObservation = player.observe(\.currentItem, options: [.initial]) { thePlayer, _ in
            if thePlayer.currentItem == nil { outcome.fail("the player made no item for the URL") }
        }
    }
}

/// "If you don't know what kind of URL you have": try an asset and its tracks; if they
/// load, an item for the asset, else an item straight from the URL; then observe the
/// player's status to learn whether it becomes playable.
@MainActor final class UnknownURLSection {
    var player: AVPlayer?
    private var playerStatusObservation: NSKeyValueObservation?
    private var itemStatusObservation: NSKeyValueObservation?
    /// Which route was taken, for the harness to check.
    private(set) var route = ""

    func open(_ url: URL, expectPlayable: Bool, outcome: Outcome) {
        let asset = AVURLAsset(url: url)
        let tracksKey = "tracks"
        asset.loadValuesAsynchronously(forKeys: [tracksKey]) {
            DispatchQueue.main.async {
                var error: NSError?
                let item: AVPlayerItem
                if asset.statusOfValue(forKey: tracksKey, error: &error) == .loaded {
                    item = AVPlayerItem(asset: asset)       // 2. the tracks loaded: an item for the asset
                    self.route = "asset"
                } else {
                    item = AVPlayerItem(url: url)           // 3. they did not: an item from the URL
                    self.route = "url"
                }
                let player = AVPlayer(playerItem: item)
                self.player = player
                self.playerStatusObservation = player.observe(\.status, options: [.initial]) { thePlayer, _ in  // 4.
                    self.judge(thePlayer, url: url, expectPlayable: expectPlayable, outcome: outcome)
                }
                // ADDED: the item's status too. The player's status says whether the player can
                // play at all; an item that cannot be played says so through its own status.
                self.itemStatusObservation = player.observe(\.currentItem?.status, options: [.initial]) { thePlayer, _ in
                    self.judge(thePlayer, url: url, expectPlayable: expectPlayable, outcome: outcome)
                }
            }
        }
    }

    /// The harness's check: playable media becomes ready; media that is not fails with an error.
    private nonisolated func judge(_ thePlayer: AVPlayer, url: URL, expectPlayable: Bool, outcome: Outcome) {
        let itemStatus = thePlayer.currentItem?.status
        let failed = thePlayer.status == .failed || itemStatus == .failed
        let error = thePlayer.error ?? thePlayer.currentItem?.error
        if thePlayer.status == .readyToPlay, itemStatus == .readyToPlay {
            if expectPlayable { outcome.pass() } else { outcome.fail("a URL that cannot play became ready") }
        } else if failed {
            if expectPlayable { outcome.fail("failed: \(error.map { $0.localizedDescription } ?? "")"); return }
            say("     \(url.isFileURL ? "a file" : "a URL") that cannot play failed with: \(error.map { $0.localizedDescription } ?? "no error")")
            if error == nil { outcome.fail("failed with no error") } else { outcome.pass() }
        }
    }
}
