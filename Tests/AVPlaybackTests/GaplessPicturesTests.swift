import Foundation
import Testing
import ChorusTestSupport
@testable import AVPlayback
import MediaClock
import MediaPipeline

/// A queue's items with pictures are seen joined as they are heard: the next item's first
/// picture is on screen from the refresh at which its sound begins.
@Suite(.ownThread) struct GaplessPicturesTests {
    @Test("the next item's pictures come at the sample its sound joins at: each refresh from the join on shows its picture due, none before")
    func picturesJoinAtTheSample() async throws {
        let media = try TestMedia.identityVideo(seconds: 2, rate: 25, withSound: true)
        let items = [AVPlayerItem(url: media), AVPlayerItem(url: media)]
        let path = TestMedia.folder.appendingPathComponent("gapless-pictures-\(UUID().uuidString).cap").path
        let player = AVQueuePlayer(playerItem: items[0], output: .null(driftPPM: 0), hostClock: .hostTimeClock,
                                   hostMapping: { $0 }, capture: try RenderCapture(path: path))
        defer { player.close() }
        player.insert(items[1], after: items[0])
        let layer = AVPlayerLayer(player: player)
        #expect(await waitUntil { items[0].status == .readyToPlay })
        player.play()
        // Refreshed every 3 ms on this thread, as a display's own thread refreshes.
        var shown: [ShownPicture] = []
        var misnumbered = 0
        let deadline = HostTime.now() + .seconds(20)
        while HostTime.now() < deadline, !(player.currentItem === items[1] && player.currentTime().seconds > 0.6) {
            let at = HostTime.now()
            if let planes = layer.picture(forRefreshAt: at), let luma = planes.plane0 {
                // Each picture shows its own frame number: the one decoded for its time.
                let identity = TestMedia.identity(luma: luma, stride: planes.stride0, width: planes.info.width, height: planes.info.height)
                if Int64(identity) * 40_000_000 != planes.info.itemNanoseconds { misnumbered += 1 }
                layer.didPresent(number: planes.info.number, at: HostTime.now())
                shown.append(ShownPicture(host: at.nanoseconds, item: planes.info.item, itemNanoseconds: planes.info.itemNanoseconds))
            } else if let last = shown.last {
                shown.append(ShownPicture(host: at.nanoseconds, item: last.item, itemNanoseconds: last.itemNanoseconds))
            }
            usleep(3_000)
        }
        player.pause()
        let sampleRate = try #require(player.engine.format?.sampleRate)
        let firstEnd = try #require(player.gaplessJoin(into: items[1]), "the second item joined on gaplessly")
        let periods = try RenderCaptureLog(path: path).periods
        let run = periods.filter { $0.serial == periods.last?.serial }
        let joinHost = try #require(RenderCaptureLog.host(of: firstEnd.seconds * Double(sampleRate), in: run), "the join heard")
        let (checked, problems) = PicturesAtAJoin.problems(shown, joinHost: joinHost, frameNanoseconds: 40_000_000)
        #expect(problems.isEmpty, "\(problems.count) refreshes wrong, first: \(Array(problems.prefix(3)))")
        #expect(checked > 50, "\(checked) refreshes checked in the half second after the join")
        #expect(misnumbered == 0)
    }
}
