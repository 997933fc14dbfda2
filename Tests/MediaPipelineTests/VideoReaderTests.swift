import Foundation
import MediaClock
import Synchronization
import Testing
import ChorusTestSupport
@testable import MediaPipeline

/// Events a reader delivered, gathered for a test to wait on.
private final class VideoEvents: Sendable {
    private let events = Mutex<[VideoReaderEvent]>([])
    private let arrived = WakeSignal()

    func record(_ event: VideoReaderEvent) {
        events.withLock { $0.append(event) }
        arrived.signal()
    }

    var all: [VideoReaderEvent] { events.withLock { $0 } }

    /// Waits (up to `timeout`) for an event that matches.
    func wait(timeout: Duration = .seconds(20), for predicate: (VideoReaderEvent) -> Bool) -> VideoReaderEvent? {
        let deadline = HostTime.now() + timeout
        while HostTime.now() < deadline {
            if let match = all.first(where: predicate) { return match }
            arrived.wait(timeout: .milliseconds(20))
        }
        return all.first(where: predicate)
    }
}

/// Steps a queue as a display would, one refresh at a time on a simulated timeline, and
/// records what each refresh showed. Before each refresh it lets the decoder catch up (until
/// a picture later than the refresh is queued, or the reader has ended), so that what a
/// refresh shows depends on the schedule alone, not on how fast this machine decodes.
private func showAll(_ queue: VideoFrameQueue, events: VideoEvents, from start: Int64 = 0, step: Int64, until end: Int64,
                     timeout: Duration = .seconds(20)) -> [(due: Int64, info: VideoFrameInfo, identity: Int)] {
    var shown: [(Int64, VideoFrameInfo, Int)] = []
    var due = start
    let deadline = HostTime.now() + timeout
    while due <= end && HostTime.now() < deadline {
        let ended = events.all.contains {
            switch $0 {
            case .decodedToEnd, .failed: return true
            default: return false
            }
        }
        let caughtUp = queue.queuedItemNanoseconds().last.map { $0 > due } ?? false
        if !caughtUp && !ended && queue.queuedItemNanoseconds().count < queue.capacity {
            Thread.sleep(forTimeInterval: 0.002)
            continue
        }
        switch queue.next(dueNanoseconds: due, showFirstEarly: false) {
        case .show(let planes):
            if let luma = planes.plane0 {
                shown.append((due, planes.info, TestMedia.identity(luma: luma, stride: planes.stride0,
                                                                    width: planes.info.width, height: planes.info.height)))
            }
        case .keep:
            // Kept with a picture due: the queue's lock was busy (the reader was queueing),
            // which a display meets as one refresh more on the old picture. Here the refresh
            // is tried again, so what is shown depends on the schedule alone.
            if let first = queue.queuedItemNanoseconds().first, first <= due + FrameSchedule.dueToleranceNanoseconds { continue }
        }
        due += step
    }
    return shown
}

/// A reader of `url`'s pictures, started under serial 1, with its queue and its events.
private func startedReader(_ url: URL) throws -> (reader: VideoReader, queue: VideoFrameQueue, events: VideoEvents) {
    let queue = try #require(VideoFrameQueue())
    let events = VideoEvents()
    let reader = try VideoReader(source: try MediaSource(url: url.path), queue: queue, serial: 1, onEvent: events.record)
    reader.start()
    return (reader, queue, events)
}

@Suite("Video reader: pictures decoded, timed and queued", .ownThread)
struct VideoReaderTests {
    @Test("every picture of a clip comes once, at its own item time, showing its own number")
    func everyPictureInOrder() throws {
        let url = try TestMedia.identityVideo(seconds: 2, rate: 25)
        let source = try MediaSource(url: url.path)
        let track = try #require(source.info.preferredVideoTrack)
        #expect(track.width == 320 && track.height == 240)
        #expect(track.frameRate == 25)
        let queue = try #require(VideoFrameQueue())
        let events = VideoEvents()
        let reader = try VideoReader(source: source, queue: queue, serial: 1, onEvent: events.record)
        reader.start()
        defer { reader.stop() }
        let shown = showAll(queue, events: events, step: 40_000_000, until: 1_960_000_000)
        #expect(shown.count == 50, "events: \(events.all)")
        for (index, picture) in shown.enumerated() {
            #expect(picture.info.itemNanoseconds == Int64(index) * 40_000_000)
            #expect(picture.identity == index, "picture \(index) shows \(picture.identity)")
            #expect(picture.info.format == .yuv420p)
            #expect(picture.info.durationNanoseconds == 40_000_000)
        }
        #expect(queue.counts.dropped == 0)
        #expect(events.wait { if case .decodedToEnd(serial: 1) = $0 { return true }; return false } != nil)
    }

    @Test("a display that refreshes slower than the pictures come drops the ones it passes, and counts them")
    func lateOnesDropped() throws {
        let url = try TestMedia.identityVideo(seconds: 2, rate: 25)
        let (reader, queue, events) = try startedReader(url)
        defer { reader.stop() }
        // A refresh every 100 ms: two or three 40 ms pictures come due between refreshes, and
        // each refresh shows the newest of them.
        let shown = showAll(queue, events: events, step: 100_000_000, until: 1_900_000_000)
        #expect(shown.map(\.identity) == shown.map { Int($0.due / 40_000_000) })
        #expect(shown.count == 20)
        let (dropped, shownCount) = queue.counts
        #expect(shownCount == 20)
        // 48 pictures are due by the last refresh (0 to 1.88 s); those not shown were dropped.
        #expect(dropped == 48 - 20)
    }

    @Test("a display joining late skips to the picture due, without counting the ones before it as dropped")
    func joinSkipsWithoutDrops() throws {
        let url = try TestMedia.identityVideo(seconds: 2, rate: 25)
        let (reader, queue, events) = try startedReader(url)
        defer { reader.stop() }
        // The first refresh comes when the timeline already stands at 0.2 s: pictures 0 to 4
        // are passed over, and picture 5 is the first shown.
        let shown = showAll(queue, events: events, from: 200_000_000, step: 40_000_000, until: 400_000_000)
        #expect(shown.first?.identity == 5)
        #expect(queue.counts.dropped == 0)
    }

    @Test("a seek shows the picture on screen at its target first, under the new serial")
    func seekLandsOnThePictureShowingAtTheTarget() throws {
        let url = try TestMedia.identityVideo(seconds: 2, rate: 25)
        let (reader, queue, events) = try startedReader(url)
        defer { reader.stop() }
        #expect(events.wait { if case .ready(serial: 1, _) = $0 { return true }; return false } != nil)
        // 1.03 s lies inside picture 25 (1.00 to 1.04 s).
        reader.seek(toItemNanoseconds: 1_030_000_000, serial: 2)
        let ready = events.wait { if case .ready(serial: 2, _) = $0 { return true }; return false }
        #expect(ready == .ready(serial: 2, itemNanoseconds: 1_000_000_000))
        // Paused at the target: the first picture of the new serial is shown though the
        // timeline stands a little past its start, and nothing of serial 1 is shown again.
        guard case .show(let planes) = queue.next(dueNanoseconds: 1_030_000_000, showFirstEarly: true),
              let luma = planes.plane0 else {
            Issue.record("nothing to show after the seek")
            return
        }
        #expect(planes.info.serial == 2)
        #expect(TestMedia.identity(luma: luma, stride: planes.stride0, width: 320, height: 240) == 25)
        #expect(queue.counts.dropped == 0)
    }

    @Test("pictures in a layout a display cannot show are converted to I420, numbers intact")
    func otherLayoutsConverted() throws {
        let url = try TestMedia.identityVideo(seconds: 1, rate: 25, pixelFormat: "yuv444p")
        let source = try MediaSource(url: url.path)
        #expect(source.info.preferredVideoTrack?.pixelFormat == "yuv444p")
        let queue = try #require(VideoFrameQueue())
        let events = VideoEvents()
        let reader = try VideoReader(source: source, queue: queue, serial: 1, onEvent: events.record)
        reader.start()
        defer { reader.stop() }
        let shown = showAll(queue, events: events, step: 40_000_000, until: 960_000_000)
        #expect(shown.count == 25)
        #expect(shown.allSatisfy { $0.info.format == .yuv420p })
        #expect(shown.map(\.identity) == Array(0..<25))
    }

    @Test("a display rotation is read as the clockwise turn the picture needs, the turn ffmpeg itself makes")
    func rotationRead() throws {
        let url = try TestMedia.identityVideo(seconds: 0.2, rotate: 90)
        let info = try MediaSource(url: url.path).info
        // ffmpeg turns the picture by the file's display matrix when it decodes: picture 1
        // has only its left column white, which a clockwise quarter turn puts at the top and
        // a counter-clockwise one at the bottom.
        let raw = TestMedia.folder.appendingPathComponent("rotation-check.gray")
        let run = try Run.command("ffmpeg", ["-v", "error", "-y", "-i", url.path, "-vf", "select=eq(n\\,1)", "-frames:v", "1",
                                             "-f", "rawvideo", "-pix_fmt", "gray", raw.path])
        #expect(run.status == 0)
        let turned = try Data(contentsOf: raw)
        let width = 240, height = turned.count / 240
        try #require(height == 320)
        let leftColumnAtTop = turned[5 * width + width / 2] > 128
        let leftColumnAtBottom = turned[(height - 5) * width + width / 2] > 128
        try #require(leftColumnAtTop != leftColumnAtBottom)
        #expect(info.preferredVideoTrack?.rotationDegrees == (leftColumnAtTop ? 90 : 270))
        let plain = try MediaSource(url: try TestMedia.identityVideo(seconds: 0.2).path).info
        #expect(plain.preferredVideoTrack?.rotationDegrees == 0)
    }

    @Test("a rotation that is not a quarter turn is refused with a clear error")
    func oddRotationRefused() throws {
        let url = try TestMedia.identityVideo(seconds: 0.2, rotate: 45)
        let source = try MediaSource(url: url.path)
        let queue = try #require(VideoFrameQueue())
        #expect {
            _ = try VideoReader(source: source, queue: queue, serial: 1, onEvent: { _ in })
        } throws: { error in
            "\(error)".contains("not a quarter turn")
        }
    }

    @Test("a video cut short ends its pictures without a crash or a hang, after what it holds")
    func truncatedVideoEnds() throws {
        let url = try TestMedia.truncated(try TestMedia.identityVideo(seconds: 2, rate: 25), fraction: 0.5)
        let source: MediaSource
        do { source = try MediaSource(url: url.path) } catch {
            // An MP4 cut before its index is refused at opening, which is as good an end.
            #expect("\(error)".contains(url.lastPathComponent))
            return
        }
        guard source.info.preferredVideoTrack != nil else { return }
        let queue = try #require(VideoFrameQueue())
        let events = VideoEvents()
        let reader = try VideoReader(source: source, queue: queue, serial: 1, onEvent: events.record)
        reader.start()
        defer { reader.stop() }
        _ = showAll(queue, events: events, step: 40_000_000, until: 1_960_000_000, timeout: .seconds(5))
        let end = events.wait {
            switch $0 {
            case .decodedToEnd, .failed: return true
            default: return false
            }
        }
        #expect(end != nil)
    }
}

@Suite("Video reader: a successor's pictures queued after the item before's", .ownThread)
struct SuccessorVideoReaderTests {
    @Test("a reader has finished once it queued its last picture, and not again until it has after a seek")
    func finishingIsPerSeek() throws {
        let (reader, _, events) = try startedReader(try TestMedia.identityVideo(seconds: 1, rate: 25))
        defer { reader.stop() }
        // Shown nowhere, the queue fills and the reader waits: not finished.
        #expect(!reader.hasFinished)
        let queue = reader.queue
        var due: Int64 = 0
        while events.all.allSatisfy({ if case .decodedToEnd = $0 { return false }; return true }) && due < 2_000_000_000 {
            _ = queue.next(dueNanoseconds: due, showFirstEarly: false)
            due += 40_000_000
            Thread.sleep(forTimeInterval: 0.002)
        }
        #expect(events.wait { if case .decodedToEnd = $0 { return true }; return false } != nil)
        #expect(reader.hasFinished)
        reader.seek(toItemNanoseconds: 400_000_000, serial: 2)
        #expect(!reader.hasFinished, "a seek makes the end before it stale at once")
        due = 400_000_000
        while events.all.filter({ if case .decodedToEnd = $0 { return true }; return false }).count < 2 && due < 3_000_000_000 {
            _ = queue.next(dueNanoseconds: due, showFirstEarly: false)
            due += 40_000_000
            Thread.sleep(forTimeInterval: 0.002)
        }
        #expect(events.wait { if case .decodedToEnd(serial: 2) = $0 { return true }; return false } != nil)
        #expect(reader.hasFinished)
    }

    @Test("the next item's pictures come after the item before's last, in order, on a timeline that crosses the join")
    func theNextItemsPicturesFollowInOrder() throws {
        let url = try TestMedia.identityVideo(seconds: 1, rate: 25)
        let queue = try #require(VideoFrameQueue())
        let events = VideoEvents()
        let first = try VideoReader(source: try MediaSource(url: url.path), queue: queue, serial: 1, item: 1, onEvent: events.record)
        let demuxer = ItemDemuxer(source: try MediaSource(url: url.path), sound: false, pictures: true)
        let second = try VideoReader(successorOf: demuxer, queue: queue, item: 2, turn: { [first] in first.hasFinished ? 1 : nil },
                                     onEvent: events.record)
        demuxer.start()
        second.start()
        first.start()
        defer {
            second.stop()
            demuxer.stop()
            first.stop()
        }
        let items = VideoItems(current: 1, next: 2, nextStartNanoseconds: 1_000_000_000)
        var shown: [(item: Int, identity: Int)] = []
        var due: Int64 = 0
        let deadline = HostTime.now() + .seconds(20)
        while due < 2_000_000_000 && HostTime.now() < deadline {
            // Let the readers catch up, so what is shown depends on the schedule alone.
            guard queue.nextQueuedItemNanoseconds(timelineSerial: 1, items: items).map({ $0 <= due }) ?? false
                    || events.all.filter({ if case .decodedToEnd = $0 { return true }; return false }).count == 2 else {
                Thread.sleep(forTimeInterval: 0.002)
                continue
            }
            switch queue.next(dueNanoseconds: due, showFirstEarly: false, items: items) {
            case .show(let planes):
                if let luma = planes.plane0 {
                    shown.append((planes.info.item, TestMedia.identity(luma: luma, stride: planes.stride0, width: planes.info.width,
                                                                       height: planes.info.height)))
                }
            case .keep:
                // Kept with a picture due: the queue's lock was busy (a reader was queueing),
                // which a display meets as one refresh more on the old picture. Tried again,
                // so what is shown depends on the schedule alone.
                if queue.peek(dueNanoseconds: due, items: items) != nil { continue }
            }
            due += 40_000_000
        }
        #expect(shown.map(\.item) == Array(repeating: 1, count: 25) + Array(repeating: 2, count: 25))
        #expect(shown.map(\.identity) == Array(0..<25) + Array(0..<25))
        #expect(queue.counts.dropped == 0)
    }
}

@Suite("Reverse video reader: pictures decoded a group at a time and queued newest first", .ownThread)
struct ReverseVideoReaderTests {
    /// 51 pictures in one group of pictures (x264's keyframe interval is ten seconds): within
    /// the default stash's memory, so decoded once; and with no memory to spare (the fewest
    /// pictures the stash holds, 48), read in two passes, the second decoding the first
    /// pictures again.
    @Test("backwards, every picture from the playhead to the start comes once, newest first, while the falling timeline stands in it",
          arguments: [ReverseVideoReader.defaultStashBudgetBytes, 0])
    func everyPictureComesBackwards(stashBudgetBytes: Int) throws {
        let url = try TestMedia.identityVideo(seconds: 3, rate: 25, withSound: false)
        let (shown, decoded) = try Self.playBackwards(url, fromPicture: 50, stashBudgetBytes: stashBudgetBytes)
        #expect(shown == Array((0...50).reversed()))
        // The pictures from the playhead down, and the one after it, which ends the pass.
        if stashBudgetBytes > 0 {
            #expect(decoded == 52)
        } else {
            // The second pass: pictures 0 to 2, and picture 3, which ends it.
            #expect(decoded == 52 + 4)
        }
    }

    /// A keyframe every 60 pictures: each group is read from its own keyframe, the one
    /// before the group after it. (A seek "just before" a keyframe, made in microseconds,
    /// was rounded onto the keyframe itself, and the pictures stopped at the last group.)
    /// First pictures 60 to 70, and 71, which ends the pass; then the group of 60 and
    /// picture 60, which ends it: held whole in the default stash, or, in the fewest
    /// pictures held (48), its last 48, and then pictures 0 to 11 read again, and 12.
    @Test("backwards across groups of pictures, every picture comes once, a group decoded once when it fits",
          arguments: [(ReverseVideoReader.defaultStashBudgetBytes, 12 + 61), (0, 12 + 61 + 13)])
    func everyGroupComesBackwards(stashBudgetBytes: Int, expectedDecoded: Int) throws {
        let url = try TestMedia.identityVideo(seconds: 3, rate: 25, withSound: false, keyframeInterval: 60)
        let (shown, decoded) = try Self.playBackwards(url, fromPicture: 70, stashBudgetBytes: stashBudgetBytes)
        #expect(shown == Array((0...70).reversed()))
        #expect(decoded == expectedDecoded)
    }

    /// Plays the pictures of `url` backwards from picture `fromPicture` (25 a second) to the
    /// first: the numbers the pictures shown carry, and how many the reader decoded.
    private static func playBackwards(_ url: URL, fromPicture: Int, stashBudgetBytes: Int) throws -> (shown: [Int], decoded: Int) {
        let queue = try #require(VideoFrameQueue())
        let events = VideoEvents()
        let reader = ReverseVideoReader(url: url.path, queue: queue, item: 0, stashBudgetBytes: stashBudgetBytes, onEvent: events.record)
        defer { reader.stop() }
        queue.flush(toSerial: 1, backwards: true)
        #expect(queue.playsBackwards)
        let period: Int64 = 40_000_000
        reader.seek(toItemNanoseconds: Int64(fromPicture) * period, serial: 1, endNanoseconds: 0)
        // Halfway into each picture, from the one showing at the playhead down to the first.
        var due = Int64(fromPicture) * period + period / 2
        var shown: [Int] = []
        let deadline = HostTime.now() + .seconds(20)
        while due > 0 && HostTime.now() < deadline {
            switch queue.next(dueNanoseconds: due, showFirstEarly: false) {
            case .show(let planes):
                let luma = try #require(planes.plane0)
                let identity = TestMedia.identity(luma: luma, stride: planes.stride0, width: planes.info.width, height: planes.info.height)
                #expect(identity == Int(planes.info.itemNanoseconds / period))
                #expect(planes.info.itemNanoseconds <= due && due < planes.info.itemNanoseconds + planes.info.durationNanoseconds)
                shown.append(identity)
                due -= period
            case .keep:
                // Not decoded yet: the same refresh again.
                Thread.sleep(forTimeInterval: 0.002)
            }
        }
        #expect(events.wait { if case .decodedToEnd(serial: 1) = $0 { true } else { false } } != nil)
        let (dropped, _) = queue.counts
        #expect(dropped == 0)
        return (shown, reader.picturesDecoded)
    }
}

@Suite("Frame schedule: which picture a refresh shows", .ownThread)
struct FrameScheduleTests {
    private func choose(_ times: [Int64], due: Int64) -> FrameSchedule.Decision {
        FrameSchedule.choose(count: times.count, time: { times[$0] }, due: due)
    }

    @Test("a picture not yet due waits")
    func earlyWaits() {
        #expect(choose([40, 80], due: 39 - FrameSchedule.dueToleranceNanoseconds) == .wait)
        #expect(choose([], due: 1_000) == .wait)
    }

    @Test("a picture due exactly at the refresh is shown at it")
    func dueShown() {
        #expect(choose([40_000_000, 80_000_000], due: 40_000_000) == .show(index: 0))
    }

    @Test("of several pictures due, the newest is shown and the rest are passed over")
    func newestDueWins() {
        #expect(choose([0, 40_000_000, 80_000_000, 120_000_000], due: 100_000_000) == .show(index: 2))
    }
}
