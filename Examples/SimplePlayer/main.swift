// The simple player of Apple's AVFoundation walkthrough, as a terminal program: the same
// flow written against Chorus's AVPlayback. The time labels and the end come on the main
// queue, which the main run loop serves on the main thread, as the walkthrough's view
// controller takes them.
//
// Keys (a line each): p play/pause, f fast forward, r rewind, s SECONDS seek, q quit.
//
// What differs from the walkthrough, and why:
// - `import AVPlayback` (and `MediaPipeline`, for the output) for `import AVFoundation`; a
//   terminal for the view.
// - The player is made with `AVPlayer(playerItem: nil)` and plays to ALSA's default device.
// - Key-value observation calls its handlers on the player's own queue, not the main one:
//   the handlers here only print. An app that touches its interface from them hops to the
//   main queue.
// - Rewinding plays backwards at -2, as the walkthrough's does; an item that cannot (no
//   sound, or a stream that cannot be sought) refuses it, and this program says so.

import AVPlayback
import Foundation
import MediaPipeline  // OutputSpec: where the sound goes (a Chorus addition)

/// The walkthrough's view controller, without the view.
final class SimplePlayer: @unchecked Sendable {
    /// Keys that must load before an asset can be played.
    static let assetKeysRequiredToPlay = ["playable", "hasProtectedContent"]
    /// How fast fast forward and rewind may go, as the walkthrough bounds them.
    static let fastestScan: Float = 2

    let player: AVPlayer
    private var asset: AVAsset?
    private var observations: [NSKeyValueObservation] = []
    private var timeObserverToken: Any?
    private var endObserver: (any NSObjectProtocol)?

    init(output: OutputSpec) {
        player = AVPlayer(playerItem: nil, output: output)
        observations = [
            player.observe(\.currentItem?.status, options: [.new, .initial]) { [weak self] player, _ in
                self?.report("status \(Self.describe(player.currentItem?.status)) (main thread: \(Thread.isMainThread))")
                if player.currentItem?.status == .failed {
                    self?.report("error: \(player.currentItem?.error.map { $0.localizedDescription } ?? "unknown")")
                    exit(1)
                }
            },
            player.observe(\.currentItem?.duration, options: [.new, .initial]) { [weak self] player, _ in
                guard let duration = player.currentItem?.duration, duration.isNumeric else { return }
                self?.report(String(format: "duration %.2f s", duration.seconds))
            },
            player.observe(\.rate, options: [.new, .initial]) { [weak self] player, _ in
                self?.report("rate \(player.rate)")
            },
        ]
        // Time labels, once a second, on the main queue.
        timeObserverToken = player.addPeriodicTimeObserver(forInterval: CMTime(value: 1, timescale: 1), queue: .main) { [weak self] time in
            guard let self else { return }
            let duration = player.currentItem?.duration ?? .indefinite
            let remaining = duration.isNumeric ? duration.seconds - time.seconds : .nan
            report(String(format: "time %.1f s, remaining %.1f s (main thread: %@)", time.seconds, remaining,
                          Thread.isMainThread ? "true" : "false"))
        }
        endObserver = NotificationCenter.default.addObserver(forName: AVPlayerItem.didPlayToEndTimeNotification, object: nil, queue: .main) { [weak self] _ in
            self?.report("ended")
            exit(0)
        }
    }

    /// Loads `newAsset`'s keys in the background, then plays it if it can be played.
    func asynchronouslyLoad(_ newAsset: AVURLAsset) {
        asset = newAsset
        newAsset.loadValuesAsynchronously(forKeys: Self.assetKeysRequiredToPlay) {
            // The handler comes on an arbitrary queue: the work goes to the main one.
            DispatchQueue.main.async { [self] in
                guard newAsset === asset else { return }
                for key in Self.assetKeysRequiredToPlay {
                    var error: NSError?
                    if newAsset.statusOfValue(forKey: key, error: &error) == .failed {
                        report("can't use this asset: \(key) failed to load (\(error.map { $0.localizedDescription } ?? "no reason"))")
                        exit(1)
                    }
                }
                guard newAsset.isPlayable, !newAsset.hasProtectedContent else {
                    report("can't use this asset: it isn't playable or has protected content")
                    exit(1)
                }
                player.replaceCurrentItem(with: AVPlayerItem(asset: newAsset))
                player.play()
            }
        }
    }

    func playPause() {
        if player.rate != 1 {
            if player.currentTime() == player.currentItem?.duration { player.seek(to: .zero) }
            player.play()
        } else {
            player.pause()
        }
    }

    func fastForward() {
        if player.currentTime() == player.currentItem?.duration { player.seek(to: .zero) }
        player.rate = min(player.rate + 2, Self.fastestScan)
    }

    func rewind() {
        if player.currentTime() == .zero, let duration = player.currentItem?.duration { player.seek(to: duration) }
        let wanted = max(player.rate - 2, -Self.fastestScan)
        player.rate = wanted
        if player.rate != wanted { report("rate \(wanted) refused: this item cannot play backwards") }
    }

    func seek(toSeconds seconds: Double) {
        player.seek(to: CMTime(seconds: seconds, preferredTimescale: 1000), toleranceBefore: .zero, toleranceAfter: .zero)
    }

    func report(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    static func describe(_ status: AVPlayerItem.Status?) -> String {
        switch status {
        case .none: return "no item"
        case .unknown?: return "unknown"
        case .readyToPlay?: return "readyToPlay"
        case .failed?: return "failed"
        }
    }
}

let arguments = CommandLine.arguments.dropFirst()
guard let path = arguments.first else {
    FileHandle.standardError.write(Data("usage: example-player FILE|URL [--output null|alsa:DEVICE]\n".utf8))
    exit(2)
}
var output = OutputSpec.alsa(device: "default")
if let flag = arguments.firstIndex(of: "--output"), arguments.index(after: flag) < arguments.endIndex {
    do {
        output = try OutputSpec(parsing: arguments[arguments.index(after: flag)])
    } catch {
        FileHandle.standardError.write(Data("example-player: \(error)\n".utf8))
        exit(2)
    }
}
let url = path.contains("://") ? URL(string: path) : URL(fileURLWithPath: path)
guard let url else {
    FileHandle.standardError.write(Data("example-player: not a URL: \(path)\n".utf8))
    exit(2)
}
let controller = SimplePlayer(output: output)
controller.asynchronouslyLoad(AVURLAsset(url: url))

// Keys come on a thread of their own and are handled on the main queue.
Thread.detachNewThread {
    while let line = readLine() {
        let words = line.split(separator: " ")
        DispatchQueue.main.async {
            switch words.first {
            case "p": controller.playPause()
            case "f": controller.fastForward()
            case "r": controller.rewind()
            case "s": if words.count > 1, let seconds = Double(words[1]) { controller.seek(toSeconds: seconds) }
            case "q": exit(0)
            default: controller.report("keys: p play/pause, f fast forward, r rewind, s SECONDS seek, q quit")
            }
        }
    }
}
// The main run loop serves the main queue on the main thread (on Linux, `dispatchMain()`
// serves it from another thread).
RunLoop.main.run()
