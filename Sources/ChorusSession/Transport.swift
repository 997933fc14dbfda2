import AVPlayback
import Foundation
import GroupSync
import MediaClock
import MutexAnnotations
import Synchronization

/// How a session starts, pauses and seeks: on its own (local play) or for a whole group (a
/// leader). Called on the session's threads; implementations are thread-safe.
protocol PlaybackTransport: Sendable {
    /// What to play for item `index` at `url`: the URL itself, or one the transport made for
    /// it (a leader's relay of a live stream). Blocks while that is made.
    func playable(_ url: URL, index: Int) -> URL
    /// Item `index` is no longer playing (nor queued to follow).
    func left(index: Int)
    /// The item at `index` is about to play from `start`; begin playing it.
    func begin(_ item: AVPlayerItem, index: Int, url: URL, from start: CMTime, on player: AVPlayer)
    /// Pause if playing, resume if paused.
    func togglePause(on player: AVPlayer)
    /// Move to `time` (clamped by the player), keeping the play state.
    func seek(to time: CMTime, on player: AVPlayer)
    /// Play at `rate` from now on (and after a pause, and for the items after).
    func changeRate(to rate: Float, on player: AVPlayer)
    /// The current item's sound or subtitles were chosen anew.
    func selectionChanged(on player: AVPlayer)
    /// The item after the current one (`url`, at `index`) is open to follow it without a
    /// gap; nil: none is.
    func nextQueued(url: URL?, index: Int, on player: AVPlayer)
    /// `item` (at `index`) has followed the one before it, without a gap.
    func followed(_ item: AVPlayerItem, index: Int, url: URL, on player: AVPlayer)
    /// Everything has played, or the session was stopped.
    func finish(on player: AVPlayer)
}

/// Plays on this machine alone.
struct LocalTransport: PlaybackTransport {
    func playable(_ url: URL, index: Int) -> URL { url }
    func left(index: Int) {}
    func begin(_ item: AVPlayerItem, index: Int, url: URL, from start: CMTime, on player: AVPlayer) {
        if start != .zero { player.seek(to: start) }
        player.play()
    }
    func togglePause(on player: AVPlayer) {
        if player.rate == 0 { player.play() } else { player.pause() }
    }
    func seek(to time: CMTime, on player: AVPlayer) { player.seek(to: time) }
    func changeRate(to rate: Float, on player: AVPlayer) {
        // Backwards plays at once; a forward speed is also the one play resumes at.
        if rate < 0 {
            player.rate = rate
            return
        }
        player.defaultRate = rate
        if player.rate != 0 { player.rate = rate }
    }
    func selectionChanged(on player: AVPlayer) {}
    func nextQueued(url: URL?, index: Int, on player: AVPlayer) {}
    func followed(_ item: AVPlayerItem, index: Int, url: URL, on player: AVPlayer) {}
    func finish(on player: AVPlayer) {}
}

/// Plays for the whole group: every start, pause, seek and speed change is scheduled a
/// little ahead on the leader's clock and announced, so followers make it at the same
/// instant.
final class GroupTransport: PlaybackTransport {
    /// Time given to followers between an item's announcement and its first sample: enough
    /// to open the item over HTTP on a LAN and fill their buffers.
    static let startLead: Duration = .milliseconds(800)
    /// Time given to followers for a resume, a seek or a speed change within the item they
    /// have open.
    static let changeLead: Duration = .milliseconds(300)

    let node: LeaderNode
    /// The item playing: its index and the path followers fetch it by.
    private let current = Mutex<(index: Int, path: String)>((0, ""))
    /// The path of the item that follows the current one without a gap; empty when none.
    private let next = Mutex<String>("")
    /// The anchor last announced, announced again with a new choice of streams.
    private let lastAnchor = Mutex<(rate: Double, time: CMTime, leader: LeaderTime, joined: Bool)?>(nil)

    init(node: LeaderNode) { self.node = node }

    /// A live stream with no times the rooms could share is relayed, and the relay played.
    func playable(_ url: URL, index: Int) -> URL { node.playable(url, index: index) }

    func left(index: Int) { node.release(index: index) }

    private func state(index: Int, path: String, duration: CMTime, rate: Double, at itemTime: CMTime, leader: LeaderTime,
                       streams: (audio: Int?, subtitles: Int?), joined: Bool, splices: [TimelineSplice]) -> GroupState {
        GroupState(sequence: 0, itemIndex: UInt32(index), itemURL: path, itemDuration: duration, rate: rate,
                   anchorItemTime: itemTime, anchorLeaderTime: leader, ended: false, stopped: false,
                   audioStream: streams.audio.flatMap { Int32(exactly: $0) }, subtitleStream: streams.subtitles.flatMap { Int32(exactly: $0) },
                   nextItemURL: next.withLockAnnotated { $0 }, joinsPrevious: joined, splices: splices)
    }

    func begin(_ item: AVPlayerItem, index: Int, url: URL, from start: CMTime, on player: AVPlayer) {
        let path = node.publish(url, index: index)
        current.withLockAnnotated { $0 = (index, path) }
        next.withLockAnnotated { $0 = "" }
        // Only a playlist, or anything fetched over the network, can be a live stream.
        let mayBeLive = !url.isFileURL || url.pathExtension.lowercased() == "m3u8"
        let from = mayBeLive ? Self.liveOpening(of: item) ?? start : start
        schedule(rate: Double(player.defaultRate), at: from, lead: Self.startLead, on: player)
    }

    /// The longest `begin` waits for an item that may be live to open, to learn whether it
    /// is and where: as long as a follower is given to open an item over a slow network.
    static let liveOpenTimeout: Duration = .seconds(20)
    /// How often it looks meanwhile.
    static let liveOpenPoll: Duration = .milliseconds(10)

    /// Where a live playlist was opened, on its item time, once the leader's player has
    /// opened it: a live item's times are its stream's own, a broadcast's often hours, so a
    /// start scheduled at item time 0 would wait as long. Nil for an item that is not live,
    /// or that failed or did not open in time (its own failure then says why).
    private static func liveOpening(of item: AVPlayerItem) -> CMTime? {
        let deadline = ContinuousClock.now + liveOpenTimeout
        let pause = WakeSignal()
        while ContinuousClock.now < deadline {
            if let opening = item.liveOpening { return opening }
            if item.status == .failed || (item.status == .readyToPlay && item.duration.isNumeric) { return nil }
            _ = pause.wait(timeout: liveOpenPoll)
        }
        return nil
    }

    /// Every room queues the next item to follow on, on the timeline it keeps.
    func nextQueued(url: URL?, index: Int, on player: AVPlayer) {
        let path = url.map { node.publish($0, index: index) } ?? ""
        guard next.withLockAnnotated({ old in defer { old = path }; return old != path }),
              let anchor = lastAnchor.withLockAnnotated({ $0 }) else { return }
        announce(rate: anchor.rate, at: anchor.time, leader: anchor.leader, joined: anchor.joined, player: player)
    }

    /// The next item has followed on, here and in every room that queued it: its time 0 is
    /// where the last anchor puts the end of the item before, which is announced as its
    /// anchor. Joined on without a gap, or (after an item without sound) started afresh by
    /// the queue's advance `AVPlayer.advanceLead` after that instant, in every room alike.
    /// An item that did neither is started afresh a change's lead ahead instead.
    func followed(_ item: AVPlayerItem, index: Int, url: URL, on player: AVPlayer) {
        let path = node.publish(url, index: index)
        current.withLockAnnotated { $0 = (index, path) }
        next.withLockAnnotated { $0 = "" }
        if player.gaplessJoin(into: item) == nil, let start = player.advanceStart(of: item),
           let anchor = lastAnchor.withLockAnnotated({ $0 }), anchor.rate > 0 {
            // The leader's master clock is its host clock, whose time is the leader's time.
            let nanoseconds = start.convertScale(1_000_000_000, method: .roundHalfAwayFromZero).value
            announce(rate: anchor.rate, at: .zero,
                     leader: LeaderTime(nanoseconds: nanoseconds), joined: true, player: player)
            return
        }
        guard let end = player.gaplessJoin(into: item), let anchor = lastAnchor.withLockAnnotated({ $0 }), anchor.rate > 0 else {
            schedule(rate: Double(player.defaultRate), at: .zero, lead: Self.changeLead, on: player)
            return
        }
        let seconds = (end - anchor.time).seconds / anchor.rate
        guard seconds.isFinite else { return }
        announce(rate: anchor.rate, at: .zero, leader: anchor.leader + .nanoseconds(Int64((seconds * 1e9).rounded())), joined: true,
                 player: player)
    }

    func togglePause(on player: AVPlayer) {
        if player.rate == 0 {
            schedule(rate: Double(player.defaultRate), at: player.currentTime(), lead: Self.changeLead, on: player)
        } else {
            player.pause()
            announce(rate: 0, at: player.currentTime(), leader: node.leaderTimeNow, player: player)
        }
    }

    func seek(to time: CMTime, on player: AVPlayer) {
        let duration = player.currentItem?.duration ?? .indefinite
        var target = max(time, .zero)
        if duration.isNumeric { target = min(target, duration) }
        if player.rate == 0 {
            player.seek(to: target)
            announce(rate: 0, at: target, leader: node.leaderTimeNow, player: player)
        } else {
            schedule(rate: Double(player.rate), at: target, lead: Self.changeLead, on: player)
        }
    }

    /// A new speed, made everywhere at leader time now + `changeLead` where the item then
    /// stands, so every room carries on without a break.
    func changeRate(to rate: Float, on player: AVPlayer) {
        if rate > 0 { player.defaultRate = rate }
        // Backwards from a pause starts at once, from where the item stands, in every room.
        if rate < 0, player.rate == 0 {
            schedule(rate: Double(rate), at: player.currentTime(), lead: Self.changeLead, on: player)
            return
        }
        guard player.rate != 0, player.rate != rate else { return }
        let leaderChange = node.leaderTimeNow + Self.changeLead
        let host = HostTime(nanoseconds: leaderChange.nanoseconds).cmTime
        let time = player.itemTime(forHostTime: host)
        guard time.isNumeric else { return }
        player.setRate(rate, time: time, atHostTime: host)
        announce(rate: Double(player.rate), at: time, leader: leaderChange, player: player)
    }

    /// Every room takes the new choice on the timeline it already keeps: the same anchor,
    /// announced again with the streams.
    func selectionChanged(on player: AVPlayer) {
        guard let anchor = lastAnchor.withLockAnnotated({ $0 }) else { return }
        announce(rate: anchor.rate, at: anchor.time, leader: anchor.leader, joined: anchor.joined, player: player)
    }

    func finish(on player: AVPlayer) {
        lastAnchor.withLockAnnotated { $0 = nil }
        next.withLockAnnotated { $0 = "" }
        node.announce(.stoppedState)
    }

    /// Starts item time `time` at leader time now + `lead`, here and everywhere.
    private func schedule(rate: Double, at time: CMTime, lead: Duration, on player: AVPlayer) {
        let leaderStart = node.leaderTimeNow + lead
        let host = HostTime(nanoseconds: leaderStart.nanoseconds)
        player.setRate(Float(rate), time: time, atHostTime: host.cmTime)
        announce(rate: rate, at: time, leader: leaderStart, player: player)
    }

    /// Announces an anchor; `joined` when it is a gapless join's (kept by the re-announcements
    /// of the same anchor, dropped by any new one).
    private func announce(rate: Double, at time: CMTime, leader: LeaderTime, joined: Bool = false, player: AVPlayer) {
        let (index, path) = current.withLockAnnotated { $0 }
        let duration = player.currentItem?.asset.loadedDuration ?? .indefinite
        lastAnchor.withLockAnnotated { $0 = (rate, time, leader, joined) }
        let streams = player.currentItem?.chosenStreams ?? (nil, nil)
        // A live item's later jumps go out with the States that repeat this one.
        node.watchSplices { [weak player] in player?.currentSplices ?? [] }
        node.announce(state(index: index, path: path, duration: duration, rate: rate, at: time, leader: leader, streams: streams,
                            joined: joined, splices: player.currentSplices))
    }
}
