import Testing
import ChorusTestSupport
@testable import MediaPipeline

/// A picture queue holding one item's pictures and then the next's (a gapless join), read on
/// a timeline that names the current item and where the next one joins.
@Suite("Pictures across a join: the next item's come due after it, a left item's go unshown", .ownThread)
struct VideoItemsTests {
    static let frame: Int64 = 40_000_000

    /// A queue of `pictures` (item, item time) under serial 1, in order.
    func queue(_ pictures: [(item: Int, nanoseconds: Int64)]) throws -> VideoFrameQueue {
        let queue = try #require(VideoFrameQueue(capacity: pictures.count + 1))
        queue.restart(atSerial: 1)
        for (number, picture) in pictures.enumerated() {
            let slot = try #require(queue.takeFreeSlot())
            queue.commit(slot: slot.slot, info: VideoFrameInfo(serial: 1, item: picture.item, number: Int64(number),
                                                               itemNanoseconds: picture.nanoseconds, durationNanoseconds: Self.frame,
                                                               width: 2, height: 2, format: .yuv420p, colorMatrix: .bt601))
        }
        return queue
    }

    /// What a refresh at item time `due` shows: (item, item time), or nil to keep.
    func shown(_ queue: VideoFrameQueue, at due: Int64, items: VideoItems) -> (Int, Int64)? {
        guard case .show(let planes) = queue.next(dueNanoseconds: due, showFirstEarly: false, items: items) else { return nil }
        return (planes.info.item, planes.info.itemNanoseconds)
    }

    @Test("the next item's pictures come due from the join on, in the current item's time")
    func theNextItemsPicturesAreDueAfterTheJoin() throws {
        let joinAt: Int64 = 1_990_000_000
        let queue = try queue([(1, 1_920_000_000), (1, 1_960_000_000), (2, 0), (2, Self.frame), (2, 2 * Self.frame)])
        let items = VideoItems(current: 1, next: 2, nextStartNanoseconds: joinAt)
        #expect(shown(queue, at: 1_960_000_000, items: items).map { $0.1 } == 1_960_000_000)
        // Just before the join the first item's last picture stays.
        #expect(shown(queue, at: joinAt - 1_000_000, items: items) == nil)
        #expect(shown(queue, at: joinAt, items: items).map { [$0.0, Int($0.1)] } == [2, 0])
        #expect(queue.nextQueuedItemNanoseconds(timelineSerial: 1, items: items) == joinAt + Self.frame)
        #expect(shown(queue, at: joinAt + Self.frame, items: items).map { [$0.0, Int($0.1)] } == [2, Int(Self.frame)])
        #expect(queue.counts.dropped == 0)
    }

    @Test("without a join, the next item's pictures are never due to the current item's timeline, nor shown early")
    func aLaterItemWaitsForItsJoin() throws {
        let queue = try queue([(1, 0), (2, 0)])
        let items = VideoItems(current: 1)
        #expect(shown(queue, at: 0, items: items).map { $0.0 } == 1)
        #expect(shown(queue, at: 10 * Self.frame, items: items) == nil)
        guard case .keep = queue.next(dueNanoseconds: 0, showFirstEarly: true, items: items) else {
            Issue.record("a later item's picture was shown early")
            return
        }
        #expect(queue.nextQueuedItemNanoseconds(timelineSerial: 1, items: items) == nil)
        #expect(queue.peek(dueNanoseconds: .max / 2, items: items) == nil)
        #expect(queue.queuedItemNanoseconds(item: 1).isEmpty)
    }

    @Test("a current picture timed past the join is passed over by the next item's first")
    func picturesOutlastingTheSoundArePassedOver() throws {
        let joinAt: Int64 = 1_000_000_000
        let queue = try queue([(1, 960_000_000), (1, 1_000_000_000), (1, 1_040_000_000), (2, 0)])
        let items = VideoItems(current: 1, next: 2, nextStartNanoseconds: joinAt)
        #expect(shown(queue, at: 960_000_000, items: items).map { $0.1 } == 960_000_000)
        #expect(shown(queue, at: joinAt, items: items).map { [$0.0, Int($0.1)] } == [2, 0])
    }

    @Test("once the next item is current, what is left of the item before is dropped unshown, wherever it was queued")
    func aLeftItemsPicturesAreDroppedUnshown() throws {
        let queue = try queue([(2, 0), (1, 2_000_000_000), (2, Self.frame)])
        let items = VideoItems(current: 2)
        #expect(shown(queue, at: Self.frame, items: items).map { [$0.0, Int($0.1)] } == [2, Int(Self.frame)])
        #expect(queue.queuedItemNanoseconds().isEmpty)
        // The first of item 2 was passed over (a start's skip, not counted); item 1's left
        // over picture was never a candidate.
        #expect(queue.counts.dropped == 0)
    }

    @Test("a timeline that names no item takes every picture as its own")
    func aTimelineNamingNoItemTakesEveryPicture() throws {
        let queue = try queue([(1, 0), (2, Self.frame)])
        #expect(shown(queue, at: Self.frame, items: .any).map { $0.0 } == 2)
    }
}
