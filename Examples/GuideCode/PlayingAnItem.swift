// "Playing an Item": play, "Changing the Playback Rate" and "Seeking—Repositioning the
// Playhead", in Swift. Lines marked CHANGED differ from what the same code says on
// Apple's platforms; README.md in this folder lists them with the reasons.

import AVPlayback
import Foundation

/// The guide's play action, its rates, and its two seeks.
@MainActor final class PlayingAnItemSection {
    let player: AVPlayer
    private var observations: [NSKeyValueObservation] = []

    init(item: AVPlayerItem) {
        player = AVPlayer(playerItem: item)
    }

    func play(_ sender: Any?) {
        player.play()
    }

    /// Plays, then takes the rates the guide names: 0.5 and 2, and the reverse ones the
    /// item says it supports. Each must be the player's rate once set.
    func changeRates(outcome: Outcome) {
        let aPlayer = player
        observations.append(aPlayer.observe(\.currentItem?.status, options: [.initial]) { aPlayer, _ in
            guard aPlayer.currentItem?.status == .readyToPlay else { return }
            DispatchQueue.main.async {
                self.play(nil)
                aPlayer.rate = 0.5
                guard aPlayer.rate == 0.5 else { return outcome.fail("rate 0.5 became \(aPlayer.rate)") }
                aPlayer.rate = 2.0
                guard aPlayer.rate == 2.0 else { return outcome.fail("rate 2 became \(aPlayer.rate)") }
                // "Items that support reverse playback can use the rate property with a negative number."
                guard let playerItem = aPlayer.currentItem else { return outcome.fail("no current item") }
                if playerItem.canPlayReverse {
                    aPlayer.rate = -1.0
                    guard aPlayer.rate == -1.0 else { return outcome.fail("rate -1 became \(aPlayer.rate)") }
                }
                if playerItem.canPlaySlowReverse {
                    aPlayer.rate = -0.5
                    guard aPlayer.rate == -0.5 else { return outcome.fail("rate -0.5 became \(aPlayer.rate)") }
                }
                if playerItem.canPlayFastReverse {
                    aPlayer.rate = -2.0
                    guard aPlayer.rate == -2.0 else { return outcome.fail("rate -2 became \(aPlayer.rate)") }
                }
                // "Setting the rate to 0.0 is the same as pausing playback."
                aPlayer.rate = 0.0
                guard aPlayer.timeControlStatus == .paused else { return outcome.fail("rate 0 did not pause") }
                say("     rates 0.5, 2 and 0 taken; reverse: \(playerItem.canPlayReverse ? "-1, -0.5 and -2 taken" : "not offered")")
                outcome.pass()
            }
        })
    }

    /// "To move the playhead to a particular time": the fast seek and the exact one, each to
    /// five seconds in; the exact one must land there exactly.
    func seekFiveSecondsIn(outcome: Outcome) {
        observations.append(player.observe(\.currentItem?.status, options: [.initial]) { player, _ in
            guard player.currentItem?.status == .readyToPlay else { return }
            DispatchQueue.main.async {
                let fiveSecondsIn = CMTimeMake(value: 5, timescale: 1)
                player.seek(to: fiveSecondsIn)
                let fast = player.currentTime()
                player.seek(to: fiveSecondsIn, toleranceBefore: CMTime.zero, toleranceAfter: CMTime.zero)  // CHANGED: CMTime.zero for kCMTimeZero (kept too)
                let exact = player.currentTime()
                say(String(format: "     after seekToTime: %.3f s; after the zero-tolerance seek: %.6f s", fast.seconds, exact.seconds))
                if CMTimeCompare(exact, fiveSecondsIn) == 0 { outcome.pass() } else { outcome.fail("the exact seek landed at \(exact.seconds) s") }
            }
        })
    }
}

/// "After playback, the player's head is set to the end of the item and further
/// invocations of play have no effect": register for the end notification and seek to
/// zero there, which makes play work again.
@MainActor final class ReplayAtEndSection {
    let player: AVPlayer
    let playerItem: AVPlayerItem
    private var endObserver: (any NSObjectProtocol)?
    private var ends = 0

    init(url: URL) {
        playerItem = AVPlayerItem(url: url)
        player = AVPlayer(playerItem: playerItem)
    }

    func start(outcome: Outcome) {
        // Register with the notification center after creating the player item.
        endObserver = NotificationCenter.default.addObserver(  // CHANGED: a block for the selector
            forName: .AVPlayerItemDidPlayToEndTime,
            object: playerItem,
            queue: .main) { _ in
                MainActor.assumeIsolated { self.playerItemDidReachEnd() }  // CHANGED: without the notification, which Swift 6 will not send across  // CHANGED: the main queue's block runs on the main actor
            }
        // The harness: start near the end, so the wait is short.
        let duration = playerItem.asset.duration
        player.seek(to: CMTimeSubtract(duration, CMTimeMake(value: 1, timescale: 2)), toleranceBefore: .zero, toleranceAfter: .zero)
        player.play()
        self.outcome = outcome
    }

    private var outcome: Outcome?

    func playerItemDidReachEnd() {
        ends += 1
        if ends == 1 {
            // At the end, play does nothing: no second end, the time stays at the end.
            player.play()
            let atEnd = player.currentTime()
            guard CMTimeCompare(atEnd, playerItem.duration) == 0 else {
                outcome?.fail("at the end the time is \(atEnd) (\(atEnd.seconds) s), not the duration \(playerItem.duration)"); return
            }
            guard player.rate == 0 || player.timeControlStatus != .playing else {
                outcome?.fail("play at the end started playing again"); return
            }
            player.seek(to: kCMTimeZero)  // as the guide writes it
            player.play()
            awaitReplay(polls: 0)
        }
    }

    /// The harness: polls until the replay has moved the time on from zero.
    private func awaitReplay(polls: Int) {
        let time = player.currentTime()
        if time.seconds > Self.replayProof, time.seconds < playerItem.duration.seconds {
            say(String(format: "     played again from zero: %.2f s in", time.seconds))
            player.pause()
            return outcome?.pass() ?? ()
        }
        guard polls < Self.replayPolls else { return outcome?.fail("after seeking to zero and playing, the time is \(time.seconds) s") ?? () }
        DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(50)) { self.awaitReplay(polls: polls + 1) }
    }

    /// How far past zero the replay must get to count as playing, in seconds.
    static let replayProof = 0.1
    /// How many 50 ms polls the replay is given (10 s, for a loaded machine).
    static let replayPolls = 200
}
