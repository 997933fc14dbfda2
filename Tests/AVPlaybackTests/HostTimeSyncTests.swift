import Foundation
import MutexAnnotations
import Testing
import ChorusTestSupport
@testable import AVPlayback

/// `setRate(_:time:atHostTime:)`: item time T starts exactly at host time H.
@Suite struct HostTimeSyncTests {
    func readyPlayer(seconds: Double = 2, output: OutputSpec = .null(driftPPM: 0)) throws -> (AVPlayer, AVPlayerItem) {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: seconds, rate: 48_000))
        let player = AVPlayer(playerItem: item, output: output)
        player.automaticallyWaitsToMinimizeStalling = false
        #expect(waitUntil { item.status == .readyToPlay })
        return (player, item)
    }

    /// The host time at which item frame `frame` is presented, from the render thread's report.
    func presentationHost(of player: AVPlayer, frame: Int64) -> HostTime? {
        let status = player.engine.status
        guard status.phase == .playing, let format = player.engine.format else { return nil }
        return status.anchorHost + format.duration(ofFrames: frame - status.anchorFrame)
    }

    @Test func aFutureHostTimeStartsTheItemThen() throws {
        let (player, _) = try readyPlayer()
        defer { player.close() }
        let itemTime = CMTime(value: 1, timescale: 2)
        let hostTime = HostTime.now() + .milliseconds(300)
        player.setRate(1, time: itemTime, atHostTime: hostTime.cmTime)
        #expect(player.timeControlStatus == .waitingToPlayAtSpecifiedRate)
        #expect(player.reasonForWaitingToPlay == .waitingForScheduledStart)
        #expect(waitUntil { player.engine.status.phase == .playing })
        let presented = try #require(presentationHost(of: player, frame: 24_000))
        // One frame at 48 kHz is 20.8 µs.
        #expect(abs((presented - hostTime).nanosecondsClamped) <= 21_000)
        #expect(waitUntil { player.timeControlStatus == .playing })
    }

    /// Set once from a notification's thread.
    final class EndFlag: @unchecked Sendable {
        private let lock = NSLock()
        private var value = false
        func set() { lock.withLock { value = true } }
        var isSet: Bool { lock.withLock { value } }
    }

    /// A start far past the item's end (a group's State from the network can say anything)
    /// plays to the end at once; the arithmetic from item time to frames and microseconds
    /// trapped on a time of 2·10⁹ s before.
    @Test(arguments: [CMTime(value: 2_000_000_000, timescale: 1), CMTime(value: .max, timescale: 48_000)])
    func aStartFarPastTheEndEndsTheItem(time: CMTime) throws {
        let (player, item) = try readyPlayer()
        defer { player.close() }
        let ended = EndFlag()
        let observer = NotificationCenter.default.addObserver(forName: AVPlayerItem.didPlayToEndTimeNotification, object: item, queue: nil) { _ in
            ended.set()
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        player.setRate(1, time: time, atHostTime: (HostTime.now() + .milliseconds(50)).cmTime)
        #expect(waitUntil { ended.isSet })
    }

    @Test func aPastHostTimePlaysAsIfStartedThen() throws {
        let (player, _) = try readyPlayer()
        defer { player.close() }
        let hostTime = HostTime.now() - .milliseconds(500)
        player.setRate(1, time: .zero, atHostTime: hostTime.cmTime)
        #expect(waitUntil { player.engine.status.phase == .playing })
        let presented = try #require(presentationHost(of: player, frame: 0))
        #expect(abs((presented - hostTime).nanosecondsClamped) <= 21_000)
        #expect(player.currentTime().seconds >= 0.5)
    }

    /// A start long past (a follower joining a group's item minutes after its anchor) reads
    /// from the frame due now, not from the anchor: decoding the whole past only to skip it
    /// held a late joiner's first sound back by 10 ms per second gone by. It still plays
    /// the item as if started then.
    @Test func aLongPastHostTimeReadsFromTheFrameDueNow() throws {
        let (player, _) = try readyPlayer(seconds: 40)
        defer { player.close() }
        let hostTime = HostTime.now() - .seconds(30)
        player.setRate(1, time: .zero, atHostTime: hostTime.cmTime)
        let format = try #require(player.engine.format)
        let readFrom = player.state.withLockAnnotated { player.readerStartFrameLocked(&$0, format: format) }
        let marginFrames = format.frames(inNanoseconds: AVPlayer.lateStartMargin.nanosecondsClamped)
        // Due now, less the margin: at least 30 s in, and not past what a slow test machine
        // could have let pass since.
        #expect(readFrom >= 30 * 48_000 - marginFrames)
        #expect(readFrom <= 35 * 48_000)
        #expect(waitUntil { player.engine.status.phase == .playing })
        let presented = try #require(presentationHost(of: player, frame: 0))
        #expect(abs((presented - hostTime).nanosecondsClamped) <= 21_000)
        #expect(player.currentTime().seconds >= 30)

        // A start ahead reads from its own item time.
        let ahead = HostTime.now() + .milliseconds(300)
        player.setRate(1, time: CMTime(value: 1, timescale: 1), atHostTime: ahead.cmTime)
        #expect(player.state.withLockAnnotated { player.readerStartFrameLocked(&$0, format: format) } == 48_000)
    }

    @Test func refusedWhileWaitingToMinimizeStalls() throws {
        let (player, _) = try readyPlayer()
        defer { player.close() }
        player.automaticallyWaitsToMinimizeStalling = true
        player.setRate(1, time: .zero, atHostTime: HostTime.now().cmTime)
        #expect(player.rate == 0)
    }

    @Test func invalidTimesMeanNowAndHere() throws {
        let (player, _) = try readyPlayer()
        defer { player.close() }
        player.seek(to: CMTime(value: 1, timescale: 1))
        #expect(waitUntil { player.currentTime() == CMTime(value: 1, timescale: 1) })
        player.setRate(1, time: .invalid, atHostTime: .invalid)
        #expect(waitUntil { player.timeControlStatus == .playing })
        #expect(player.currentTime() >= CMTime(value: 1, timescale: 1))
    }

    @Test func aDriftingDeviceStillStartsOnTime() throws {
        let (player, _) = try readyPlayer(output: .null(driftPPM: 200))
        defer { player.close() }
        let hostTime = HostTime.now() + .milliseconds(250)
        player.setRate(1, time: .zero, atHostTime: hostTime.cmTime)
        #expect(waitUntil { player.engine.status.phase == .playing })
        let status = player.engine.status
        let format = try #require(player.engine.format)
        // Frame 0 is presented at the scheduled host time, whatever the device's rate:
        // project the anchor back to frame 0 at the device's actual rate (200 ppm fast).
        let anchorOffset = Double(status.anchorFrame) / (Double(format.sampleRate) * (1 + 200e-6))
        let frameZero = status.anchorHost - .nanoseconds(Int64((anchorOffset * 1e9).rounded()))
        let error = (frameZero - hostTime).nanosecondsClamped
        let oneFrame: Int64 = 21_000
        #expect(error <= oneFrame && error >= -oneFrame)
    }
}

/// Playback held on a `masterClock`: the device's drift and the clock's rate are corrected.
@Suite struct MasterClockTests {
    @Test func playbackFollowsAMasterClockThatRunsFast() throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 8, rate: 48_000))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: -80))
        defer { player.close() }
        player.automaticallyWaitsToMinimizeStalling = false
        #expect(waitUntil { item.status == .readyToPlay })
        // A clock 300 ppm fast against this host, as a group leader's might be.
        let start = HostTime.now()
        let master = CMClock(hostClock: MonotonicHostClock(), anchorHostTime: start, anchorTime: .zero, rate: 1.0003)
        player.masterClock = master
        let startHost = start + .milliseconds(200)
        player.setRate(1, time: .zero, atHostTime: startHost.cmTime)
        #expect(waitUntil { player.timeControlStatus == .playing })
        usleep(4_000_000)
        let status = player.engine.status
        #expect(status.phase == .playing)
        #expect(status.hardResyncs == 0)
        #expect(abs(status.timelineError / .seconds(1)) < 50e-6, "\(status.timelineError)")
        // The item has advanced on the master clock's time, not the host's: after about
        // 4.2 s the 300 ppm is 1.3 ms of item time, against a 50 µs tolerance.
        let elapsedMaster = master.time(atHostTime: .now()) - master.time(atHostTime: startHost)
        let drift = (player.currentTime() - elapsedMaster).seconds
        #expect(abs(drift) < 0.5e-3, "\(drift)")
    }
}

/// Rates other than 1: faster, slower, changed while playing, scheduled on a master clock.
@Suite struct PlaybackRateTests {
    /// A ready player of a WAV tone on the null device, for `setRate(_:time:atHostTime:)`.
    func scheduledPlayer(seconds: Double, driftPPM: Double = 0) throws -> AVPlayer {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: seconds, rate: 48_000))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: driftPPM))
        player.automaticallyWaitsToMinimizeStalling = false
        #expect(waitUntil { item.status == .readyToPlay })
        return player
    }

    @Test func aRateChangedWhilePlayingChangesTheSpeedWithoutABreak() throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 6, rate: 48_000))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(waitUntil { item.status == .readyToPlay })
        #expect(item.canPlayFastForward && item.canPlaySlowForward && !item.canPlayReverse)
        let rates = Collected<Float>()
        let observation = player.observe(\.rate, options: [.new]) { _, change in
            if let value = change.newValue { rates.append(value) }
        }
        defer { observation.invalidate() }
        player.play()
        #expect(waitUntil { player.timeControlStatus == .playing })
        usleep(500_000)
        player.rate = 2
        // What the device had queued plays out first; from then on the item runs at twice
        // the host's pace.
        usleep(300_000)
        let (host0, time0) = (HostTime.now(), player.currentTime())
        usleep(1_000_000)
        let (host1, time1) = (HostTime.now(), player.currentTime())
        let pace = (time1 - time0).seconds / (Double((host1 - host0).nanosecondsClamped) / 1e9)
        #expect(abs(pace - 2) < 0.02, "item seconds per second: \(pace)")
        #expect(player.rate == 2)
        #expect(player.timeControlStatus == .playing)
        #expect(player.engine.status.stalls == 0)
        #expect(waitUntil { rates.all == [1, 2] })
        #expect(abs((item.timebase?.rate ?? 0) - 2) < 1e-9)
    }

    @Test func reverseAndNonFiniteRatesAreRefused() throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 2, rate: 48_000))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(waitUntil { item.status == .readyToPlay })
        player.rate = 1.5
        player.rate = -1
        player.rate = .nan
        player.playImmediately(atRate: -2)
        #expect(player.rate == 1.5)
        player.rate = 1000
        #expect(player.rate == AVPlayer.fastestRate)
    }

    @Test func aRateSetBeforeAScheduledStartKeepsItsInstant() throws {
        let player = try scheduledPlayer(seconds: 4)
        defer { player.close() }
        player.masterClock = CMClock(hostClock: MonotonicHostClock(), anchorHostTime: .now(), anchorTime: .zero, rate: 1)
        let startHost = HostTime.now() + .milliseconds(400)
        player.setRate(1, time: CMTime(value: 1, timescale: 2), atHostTime: startHost.cmTime)
        player.rate = 2
        #expect(waitUntil { player.timeControlStatus == .playing })
        usleep(500_000)
        let status = player.engine.status
        #expect(status.hardResyncs == 0)
        // Item time 0.5 s is still heard at the scheduled instant, and the item runs at 2.
        let heardAt = status.anchorHost - .nanoseconds(Int64(((status.anchorPosition - 24_000) / 2 / 48_000 * 1e9).rounded()))
        #expect(abs((heardAt - startHost).nanosecondsClamped) < 50_000, "\((heardAt - startHost).nanosecondsClamped) ns")
        #expect(status.anchorRate == 2)
    }

    @Test func aScheduledRateChangeOnAMasterClockKeepsTheTimeline() throws {
        let player = try scheduledPlayer(seconds: 8, driftPPM: 60)
        defer { player.close() }
        let start = HostTime.now()
        let master = CMClock(hostClock: MonotonicHostClock(), anchorHostTime: start, anchorTime: .zero, rate: 1.0002)
        player.masterClock = master
        player.setRate(1, time: .zero, atHostTime: (start + .milliseconds(200)).cmTime)
        #expect(waitUntil { player.timeControlStatus == .playing })
        usleep(1_500_000)
        // Where the item will stand 300 ms from now, and a change to 1.5 there, as a group
        // leader makes it: nothing is flushed or re-read, the timeline carries on.
        let change = HostTime.now() + .milliseconds(300)
        let time = player.itemTime(forHostTime: change.cmTime)
        #expect(time.isNumeric)
        let serial = player.engine.status.serial
        player.setRate(1.5, time: time, atHostTime: change.cmTime)
        #expect(player.rate == 1.5)
        usleep(2_000_000)
        let status = player.engine.status
        #expect(status.serial == serial)
        #expect(status.hardResyncs == 0)
        #expect(status.stalls == 0)
        #expect(abs(status.timelineError / .seconds(1)) < 50e-6, "\(status.timelineError)")
        // On the master clock's time the item ran 1.5 times as fast from the change on.
        let elapsed = (master.time(atHostTime: .now()) - master.time(atHostTime: change)).seconds
        let expected = time.seconds + 1.5 * elapsed
        #expect(abs(player.currentTime().seconds - expected) < 1e-3, "\(player.currentTime().seconds) against \(expected)")
        // A change whose item time is far from the timeline's is a seek: it starts afresh.
        let later = HostTime.now() + .milliseconds(300)
        player.setRate(1, time: CMTime(value: 1, timescale: 1), atHostTime: later.cmTime)
        #expect(waitUntil { player.engine.status.serial != serial })
    }
}
