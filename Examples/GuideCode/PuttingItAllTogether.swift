// "Putting It All Together: Playing a Video File Using AVPlayerLayer", in Swift. Lines
// marked CHANGED differ from what the same code says on Apple's platforms; README.md in
// this folder lists them with the reasons.

import AVPlayback
import Foundation

// MARK: The Player View

/// A view whose layer is an AVPlayerLayer. CHANGED: UIKit's view, whose `layerClass` makes
/// its layer, is a window here (AVPlayerView hosts the layer); with no display, the layer
/// stands alone and the pictures go nowhere.
final class PlayerView: Sendable {
    let layer: AVPlayerLayer
    private let window: AVPlayerView?

    init() {
        window = try? AVPlayerView(player: nil, title: "PlayerView")
        layer = window?.playerLayer ?? AVPlayerLayer()
    }

    var player: AVPlayer? {
        get { layer.player }
        set { layer.player = newValue }
    }

    func close() { window?.close() }
}

// MARK: A Simple View Controller

/// CHANGED: a main-actor class for UIViewController, and a flag for the play button.
@MainActor final class PlayerViewController {
    var player: AVPlayer?
    var playerItem: AVPlayerItem?
    var playerView = PlayerView()  // CHANGED: made here, not an IBOutlet from a storyboard
    var playButtonEnabled = false  // CHANGED: playButton.enabled
    private var itemStatusObservation: NSKeyValueObservation?  // CHANGED: a block observation instead of ItemStatusContext
    private var endObserver: (any NSObjectProtocol)?
    /// The harness's hooks: what the controller has done, in order.
    var onEvent: (String) -> Void = { _ in }

    func syncUI() {
        if (self.player?.currentItem != nil) &&
            (self.player?.currentItem?.status == .readyToPlay) {
            self.playButtonEnabled = true
        } else {
            self.playButtonEnabled = false
        }
        onEvent(playButtonEnabled ? "button enabled" : "button disabled")
    }

    func viewDidLoad() {
        syncUI()
    }

    // MARK: Creating the Asset

    func loadAssetFromFile(_ fileURL: URL) {  // CHANGED: the URL comes in; there is no app bundle to take it from
        let asset = AVURLAsset(url: fileURL, options: nil)
        let tracksKey = "tracks"
        asset.loadValuesAsynchronously(forKeys: [tracksKey]) {
            // Completion handler block.
            DispatchQueue.main.async {
                var error: NSError?
                let status = asset.statusOfValue(forKey: tracksKey, error: &error)
                if status == .loaded {
                    self.playerItem = AVPlayerItem(asset: asset)
                    // ensure that this is done before the playerItem is associated with the player
                    self.itemStatusObservation = self.playerItem?.observe(\.status, options: [.initial]) { _, _ in  // CHANGED
                        // MARK: Responding to the Player Item's Status Change
                        DispatchQueue.main.async {
                            self.syncUI()
                        }
                    }
                    self.endObserver = NotificationCenter.default.addObserver(  // CHANGED: a block for the selector
                        forName: .AVPlayerItemDidPlayToEndTime,
                        object: self.playerItem,
                        queue: .main) { _ in
                            MainActor.assumeIsolated { self.playerItemDidReachEnd() }  // CHANGED: without the notification, which Swift 6 will not send across
                        }
                    self.player = AVPlayer(playerItem: self.playerItem)
                    self.playerView.player = self.player
                } else {
                    // You should deal with the error appropriately.
                    NSLog("The asset's tracks were not loaded:\n%@", error?.localizedDescription ?? "")
                    self.onEvent("tracks not loaded")
                }
            }
        }
    }

    // MARK: Playing the Item

    func play(_ sender: Any?) {
        player?.play()
    }

    func playerItemDidReachEnd() {
        self.player?.seek(to: CMTime.zero)  // CHANGED: CMTime.zero for kCMTimeZero (kept too)
        onEvent("reached the end")
    }
}
