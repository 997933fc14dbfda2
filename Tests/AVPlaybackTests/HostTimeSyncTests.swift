import Foundation
import MutexAnnotations
import Testing
import ChorusTestSupport
@testable import AVPlayback
import MediaPipeline

/// `setRate(_:time:atHostTime:)`: item time T starts exactly at host time H.
@Suite(.ownThread) struct HostTimeSyncTests {
    func readyPlayer(seconds: Double = 2, output: OutputSpec = .null(driftPPM: 0)) async throws -> (AVPlayer, AVPlayerItem) {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: seconds, rate: 48_000))
        let player = AVPlayer(playerItem: item, output: output)
        player.automaticallyWaitsToMinimizeStalling = false
        #expect(await waitUntil { item.status == .readyToPlay })
        return (player, item)
    }

    /// One frame at 48 kHz (ns): how far before a scheduled time the render thread may place
    /// a start, rounding its lead-in to whole frames.
    static let oneFrame: Int64 = 20_834

    /// The player's seek serial, which every control it posts for the current start carries.
    func serial(of player: AVPlayer) -> Int { player.state.withLockAnnotated { $0.serial } }

    /// What the player asked of the render thread last.
    func posted(_ player: AVPlayer) -> RenderMode? { player.engine.currentControl?.mode }

    /// The host clock's timeline a scheduled start posts, at speed 1: item frame `frame`
    /// heard at exactly `host`, under the player's current serial.
    func scheduled(_ player: AVPlayer, frame: Int64, at host: HostTime) -> RenderMode {
        .follow(serial: serial(of: player), timeline: RenderTimeline(frame: frame, host: host, rate: 1, rateBefore: 1))
    }

    // These tests check what the player asks of its render thread, exactly, and what then
    // happens, with no bound on real time. How exactly the render loop keeps a schedule is
    // checked by AudioRendererTests and FollowModeTests (on a simulated device, against when
    // it heard each frame); how exactly a real-time device keeps one, `chorus-bench start`
    // and `chorus-bench follow` measure.

    /// On an exact device, and on one 200 ppm fast.
    @Test(arguments: [0.0, 200])
    func aFutureHostTimeStartsTheItemThen(driftPPM: Double) async throws {
        let (player, _) = try await readyPlayer(output: .null(driftPPM: driftPPM))
        defer { player.close() }
        let itemTime = CMTime(value: 1, timescale: 2)
        let hostTime = HostTime.now() + .milliseconds(300)
        player.setRate(1, time: itemTime, atHostTime: hostTime.cmTime)
        #expect(player.timeControlStatus == .waitingToPlayAtSpecifiedRate)
        #expect(player.reasonForWaitingToPlay == .waitingForScheduledStart)
        // Item frame 24 000 at exactly that host time, on the host clock's timeline.
        let serial = serial(of: player)
        #expect(posted(player) == scheduled(player, frame: 24_000, at: hostTime))
        #expect(await waitUntil { player.timeControlStatus == .playing })
        // Playing means heard, and nothing is heard before the schedule. The run began with
        // the scheduled frame, or (on a machine too slow to make the schedule) with the one
        // due when it could start: never an earlier one.
        #expect(HostTime.now() >= hostTime - .nanoseconds(Self.oneFrame))
        let status = player.engine.status
        #expect(status.serial == serial)
        #expect(status.runStartFrame >= 24_000)
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
    func aStartFarPastTheEndEndsTheItem(time: CMTime) async throws {
        let (player, item) = try await readyPlayer()
        defer { player.close() }
        let ended = EndFlag()
        let observer = NotificationCenter.default.addObserver(forName: AVPlayerItem.didPlayToEndTimeNotification, object: item, queue: nil) { _ in
            ended.set()
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        player.setRate(1, time: time, atHostTime: (HostTime.now() + .milliseconds(50)).cmTime)
        #expect(await waitUntil { ended.isSet })
    }

    @Test func aPastHostTimePlaysAsIfStartedThen() async throws {
        let (player, _) = try await readyPlayer()
        defer { player.close() }
        let hostTime = HostTime.now() - .milliseconds(500)
        player.setRate(1, time: .zero, atHostTime: hostTime.cmTime)
        let serial = serial(of: player)
        #expect(posted(player) == scheduled(player, frame: 0, at: hostTime))
        #expect(await waitUntil { player.timeControlStatus == .playing })
        // What was due before playback could begin is skipped: the first frame heard is at
        // least half a second in.
        let status = player.engine.status
        #expect(status.serial == serial)
        #expect(status.runStartFrame >= 24_000)
        #expect(player.currentTime().seconds >= 0.5)
    }

    /// A start long past (a follower joining a group's item minutes after its anchor) reads
    /// from the frame due now, not from the anchor: decoding the whole past only to skip it
    /// held a late joiner's first sound back by 10 ms per second gone by. It still plays
    /// the item as if started then.
    @Test func aLongPastHostTimeReadsFromTheFrameDueNow() async throws {
        let (player, _) = try await readyPlayer(seconds: 40)
        defer { player.close() }
        let hostTime = HostTime.now() - .seconds(30)
        player.setRate(1, time: .zero, atHostTime: hostTime.cmTime)
        let format = try #require(player.engine.format)
        let margin = AVPlayer.lateStartMargin.nanosecondsClamped
        // The frame due at a moment, less the margin, as the player counts it.
        func dueLessMargin(at host: HostTime) -> Int64 {
            Int64(Double((host - hostTime).nanosecondsClamped - margin) / 1e9 * Double(format.sampleRate))
        }
        // Due at the moment of asking: between what was due just before and just after.
        let before = HostTime.now()
        let readFrom = player.state.withLockAnnotated { player.readerStartFrameLocked(&$0, format: format) }
        let after = HostTime.now()
        #expect(readFrom >= dueLessMargin(at: before) && readFrom <= dueLessMargin(at: after),
                "\(readFrom) outside \(dueLessMargin(at: before))...\(dueLessMargin(at: after))")
        #expect(readFrom >= 30 * 48_000 - format.frames(inNanoseconds: margin))
        #expect(posted(player) == scheduled(player, frame: 0, at: hostTime))
        #expect(await waitUntil { player.timeControlStatus == .playing })
        #expect(player.engine.status.runStartFrame >= 30 * 48_000)
        #expect(player.currentTime().seconds >= 30)

        // A start ahead reads from its own item time.
        let ahead = HostTime.now() + .milliseconds(300)
        player.setRate(1, time: CMTime(value: 1, timescale: 1), atHostTime: ahead.cmTime)
        #expect(player.state.withLockAnnotated { player.readerStartFrameLocked(&$0, format: format) } == 48_000)
    }

    @Test func refusedWhileWaitingToMinimizeStalls() async throws {
        let (player, _) = try await readyPlayer()
        defer { player.close() }
        player.automaticallyWaitsToMinimizeStalling = true
        player.setRate(1, time: .zero, atHostTime: HostTime.now().cmTime)
        #expect(player.rate == 0)
    }

    @Test func invalidTimesMeanNowAndHere() async throws {
        let (player, _) = try await readyPlayer()
        defer { player.close() }
        await player.seek(to: CMTime(value: 1, timescale: 1))
        #expect(await waitUntil { player.currentTime() == CMTime(value: 1, timescale: 1) })
        player.setRate(1, time: .invalid, atHostTime: .invalid)
        #expect(await waitUntil { player.timeControlStatus == .playing })
        #expect(player.currentTime() >= CMTime(value: 1, timescale: 1))
    }
}

/// What a player posts to its render thread: the followed timeline of a master clock, or
/// nothing when it has posted something else.
func followed(_ player: AVPlayer) -> (serial: Int, timeline: RenderTimeline)? {
    guard case .follow(let serial, let timeline)? = player.engine.currentControl?.mode else { return nil }
    return (serial, timeline)
}

/// A master clock's round trip from host time to its own and back, rounded to the
/// nanosecond each way at a rate other than 1 (ns).
let clockRoundTripNanoseconds: Int64 = 1

/// Playback held on a `masterClock`: the device's drift and the clock's rate are corrected.
/// The player is checked for the timeline it hands its render thread; how closely the render
/// thread holds a drifting device to such a timeline is FollowModeTests' (on a simulated
/// device), and on a real one `chorus-bench follow`'s.
@Suite(.ownThread) struct MasterClockTests {
    @Test func playbackFollowsAMasterClockThatRunsFast() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 4, rate: 48_000))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: -80))
        defer { player.close() }
        player.automaticallyWaitsToMinimizeStalling = false
        #expect(await waitUntil { item.status == .readyToPlay })
        // A clock 300 ppm fast against this host, as a group leader's might be.
        let start = HostTime.now()
        let master = CMClock(hostClock: MonotonicHostClock(), anchorHostTime: start, anchorTime: .zero, rate: 1.0003)
        player.masterClock = master
        let startHost = start + .milliseconds(200)
        player.setRate(1, time: .zero, atHostTime: startHost.cmTime)
        // Item frame 0 at the start, and from there frames passing at the master clock's
        // pace: 300 ppm faster than the host's.
        let (serial, timeline) = try #require(followed(player))
        #expect(serial == player.state.withLockAnnotated { $0.serial })
        #expect(timeline.frame == 0)
        #expect(abs((timeline.host - startHost).nanosecondsClamped) <= clockRoundTripNanoseconds)
        #expect(timeline.rate == 1.0003 && timeline.rateBefore == 1.0003)
        #expect(await waitUntil { player.timeControlStatus == .playing })
        // The render thread reports the item passing at the clock's pace, from which
        // currentTime() counts: the item advances on the master clock's time, not the host's.
        #expect(await waitUntil { player.engine.status.anchorRate == 1.0003 }, "\(player.engine.status.anchorRate)")
        #expect(player.engine.status.serial == serial)
    }
}

/// Rates other than 1: faster, slower, changed while playing, scheduled on a master clock.
@Suite(.ownThread) struct PlaybackRateTests {
    /// How far ahead a start is scheduled when a call made after it must still find it
    /// ahead: far beyond the moment between two calls on any machine, however loaded.
    static let scheduleLead: Duration = .seconds(1)

    /// A ready player of a WAV tone on the null device, for `setRate(_:time:atHostTime:)`.
    func scheduledPlayer(seconds: Double, driftPPM: Double = 0, output: OutputSpec? = nil) async throws -> AVPlayer {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: seconds, rate: 48_000))
        let player = AVPlayer(playerItem: item, output: output ?? .null(driftPPM: driftPPM))
        player.automaticallyWaitsToMinimizeStalling = false
        #expect(await waitUntil { item.status == .readyToPlay })
        return player
    }

    @Test func aRateChangedWhilePlayingChangesTheSpeedWithoutABreak() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 6, rate: 48_000))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil { item.status == .readyToPlay })
        #expect(item.canPlayFastForward && item.canPlaySlowForward && item.canPlayReverse)
        let rates = Collected<Float>()
        let observation = player.observe(\.rate, options: [.new]) { _, change in
            if let value = change.newValue { rates.append(value) }
        }
        defer { observation.invalidate() }
        player.play()
        #expect(await waitUntil { player.timeControlStatus == .playing && player.currentTime().seconds >= 0.2 })
        let serial = player.engine.status.serial
        let mode = try #require(player.engine.currentControl?.mode)
        player.rate = 2
        // Only the speed changes: the same start of the same serial, nothing flushed or
        // re-read, so what the device had queued plays out and the item runs on from there.
        let control = try #require(player.engine.currentControl)
        #expect(control.mode == mode && control.rate == 2 && !control.flush)
        // The render thread takes it up: the item passes at twice the pace (how exactly, and
        // that the sound goes on without a dip, is AudioRendererTests' and FollowModeTests').
        #expect(await waitUntil { player.engine.status.anchorRate == 2 })
        #expect(player.engine.status.serial == serial)
        #expect(player.rate == 2)
        #expect(player.timeControlStatus == .playing)
        #expect(await waitUntil { rates.all == [1, 2] })
        #expect(abs((item.timebase?.rate ?? 0) - 2) < 1e-9)
    }

    @Test func nonFiniteRatesAreRefusedAndOthersBounded() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 2, rate: 48_000))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil { item.status == .readyToPlay })
        player.rate = 1.5
        player.rate = .nan
        player.rate = .infinity
        #expect(player.rate == 1.5)
        player.playImmediately(atRate: -2)
        #expect(player.rate == -2)
        player.rate = 1000
        #expect(player.rate == AVPlayer.fastestRate)
        player.rate = -1000
        #expect(player.rate == -AVPlayer.fastestRate)
    }

    @Test func aRateSetBeforeAScheduledStartKeepsItsInstant() async throws {
        // Long enough to be playing still when a loaded machine (a sanitizer's) lets the
        // render thread wait out its device's timing before the start.
        let player = try await scheduledPlayer(seconds: 12)
        defer { player.close() }
        player.masterClock = CMClock(hostClock: MonotonicHostClock(), anchorHostTime: .now(), anchorTime: .zero, rate: 1)
        let startHost = HostTime.now() + Self.scheduleLead
        player.setRate(1, time: CMTime(value: 1, timescale: 2), atHostTime: startHost.cmTime)
        player.rate = 2
        // Item time 0.5 s is still due at the scheduled instant, and the item runs at 2 from it.
        let (_, timeline) = try #require(followed(player))
        #expect(timeline.frame == 24_000)
        #expect(timeline.host == startHost)
        #expect(timeline.rate == 2 && timeline.rateBefore == 2)
        #expect(await waitUntil { player.timeControlStatus == .playing })
        #expect(HostTime.now() >= startHost - .nanoseconds(HostTimeSyncTests.oneFrame))
        #expect(await waitUntil { player.engine.status.anchorRate == 2 })
        #expect(player.engine.status.runStartFrame >= 24_000)
    }

    /// Without a master clock, a host-time start is kept on the host clock's timeline: at a
    /// speed other than 1 the render thread plays it through its pitch stage (how, and that
    /// every frame keeps its place, is FollowedPitchTests'), and later speeds carry on from
    /// it without a break. A seek ends the schedule.
    @Test(arguments: [AVAudioTimePitchAlgorithm.timeDomain, .varispeed])
    func aScheduledStartWithoutAMasterClockKeepsThePitchThroughItsSpeeds(algorithm: AVAudioTimePitchAlgorithm) async throws {
        let player = try await scheduledPlayer(seconds: 12)
        defer { player.close() }
        player.currentItem?.audioTimePitchAlgorithm = algorithm
        let startHost = HostTime.now() + Self.scheduleLead
        player.setRate(2, time: CMTime(value: 1, timescale: 2), atHostTime: startHost.cmTime)
        let (serial, timeline) = try #require(followed(player))
        #expect(timeline.frame == 24_000 && timeline.host == startHost)
        #expect(timeline.rate == 2 && timeline.speed == 2)
        let control = try #require(player.engine.currentControl)
        #expect(control.needsPitchKeeping == (algorithm != .varispeed))
        #expect(await waitUntil { player.timeControlStatus == .playing && player.currentTime().seconds >= 1 })
        #expect(HostTime.now() >= startHost - .nanoseconds(HostTimeSyncTests.oneFrame))
        #expect(player.engine.status.anchorRate == 2)

        // Back to 1, scheduled on the same timeline: the same serial, nothing flushed, the
        // stage kept through the change.
        player.rate = 1
        let changed = try #require(player.engine.currentControl)
        #expect(!changed.flush)
        let (changedSerial, after) = try #require(followed(player))
        #expect(changedSerial == serial)
        #expect(after.rate == 1 && after.rateBefore == 2 && after.speedBefore == 2)
        #expect(changed.needsPitchKeeping == (algorithm != .varispeed))
        #expect(await waitUntil { player.engine.status.anchorRate == 1 })
        #expect(player.engine.status.serial == serial)

        // A seek ends the schedule: plain play from the new place.
        await player.seek(to: CMTime(value: 4, timescale: 1))
        guard case .play(_, _, nil)? = player.engine.currentControl?.mode else {
            Issue.record("after a seek the player posted \(String(describing: player.engine.currentControl?.mode))")
            return
        }
        #expect(player.state.withLockAnnotated { $0.timelineClock == nil })
    }

    /// Into a file there is no clock to keep: a scheduled start copies frames as they are.
    @Test func aScheduledStartIntoAFileIsPlain() async throws {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("chorus-scheduled-\(getpid()).wav")
        defer { try? FileManager.default.removeItem(at: out) }
        let player = try await scheduledPlayer(seconds: 2, output: .wav(path: out.path))
        defer { player.close() }
        let startHost = HostTime.now() + Self.scheduleLead
        player.setRate(1, time: .zero, atHostTime: startHost.cmTime)
        #expect(player.engine.currentControl?.mode == .play(serial: player.state.withLockAnnotated { $0.serial }, frame: 0, hostTime: startHost))
    }

    @Test func aScheduledRateChangeOnAMasterClockKeepsTheTimeline() async throws {
        let player = try await scheduledPlayer(seconds: 8, driftPPM: 60)
        defer { player.close() }
        let start = HostTime.now()
        let master = CMClock(hostClock: MonotonicHostClock(), anchorHostTime: start, anchorTime: .zero, rate: 1.0002)
        player.masterClock = master
        player.setRate(1, time: .zero, atHostTime: (start + .milliseconds(200)).cmTime)
        #expect(await waitUntil { player.timeControlStatus == .playing && player.currentTime().seconds >= 1 })
        // Where the item will stand 300 ms from now, and a change to 1.5 there, as a group
        // leader makes it: nothing is flushed or re-read, the timeline carries on.
        let change = HostTime.now() + .milliseconds(300)
        let time = player.itemTime(forHostTime: change.cmTime)
        #expect(time.isNumeric)
        let serial = player.engine.status.serial
        player.setRate(1.5, time: time, atHostTime: change.cmTime)
        #expect(player.rate == 1.5)
        // The followed timeline changes rate at the instant, from that item time: at the
        // clock's pace before, 1.5 times it after, under the same serial, without a flush.
        let control = try #require(player.engine.currentControl)
        #expect(!control.flush)
        let (postedSerial, timeline) = try #require(followed(player))
        #expect(postedSerial == serial)
        #expect(timeline.frame == time.convertScale(48_000, method: .roundHalfAwayFromZero).value)
        #expect(abs((timeline.host - change).nanosecondsClamped) <= clockRoundTripNanoseconds)
        #expect(timeline.rate == 1.0002 * 1.5 && timeline.rateBefore == 1.0002)
        // The render thread plays the change on the running item: the new pace, the same run.
        #expect(await waitUntil { player.engine.status.anchorRate == 1.0002 * 1.5 })
        #expect(player.engine.status.serial == serial)
        // A change whose item time is far from the timeline's is a seek: it starts afresh.
        let later = HostTime.now() + .milliseconds(300)
        player.setRate(1, time: CMTime(value: 1, timescale: 1), atHostTime: later.cmTime)
        #expect(await waitUntil { player.engine.status.serial != serial })
    }
}
