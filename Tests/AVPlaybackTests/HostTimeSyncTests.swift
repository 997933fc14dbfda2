import Foundation
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
        // Frame 0 is presented at the scheduled host time, whatever the device's rate.
        let format = try #require(player.engine.format)
        if status.anchorFrame == status.runStartFrame {
            #expect(abs((status.anchorHost - hostTime).nanosecondsClamped) <= 21_000)
        } else {
            let back = status.anchorHost - format.duration(ofFrames: status.anchorFrame)
            // Projected with the nominal rate over the played frames: within a frame plus 200 ppm of that span.
            let span = Double(status.anchorFrame) / 48_000
            #expect(abs((back - hostTime).nanosecondsClamped) <= 21_000 + Int64(span * 200_000))
        }
    }
}
