import CAllocationCounter
import Foundation
import Testing
import ChorusTestSupport
@testable import MediaPipeline

/// A display's pick from the picture queue is real-time: it allocates nothing.
@Suite(.serialized, .enabled(if: chorus_allocation_counting_available() != 0, "allocations are not countable under a sanitizer"), .ownThread)
struct VideoQueueAllocationTests {
    @Test("taking pictures, passing some over, allocates nothing on the display's side")
    func pickingAllocatesNothing() throws {
        let queue = try #require(VideoFrameQueue())
        queue.restart(atSerial: 1)
        var number: Int64 = 0
        func produce() {
            while let slot = queue.takeFreeSlot() {
                queue.commit(slot: slot.slot, info: VideoFrameInfo(serial: 1, number: number, itemNanoseconds: number * 40_000_000,
                                                                   durationNanoseconds: 40_000_000, width: 2, height: 2,
                                                                   format: .yuv420p, colorMatrix: .bt601))
                number += 1
            }
        }
        produce()
        _ = queue.next(dueNanoseconds: 0, showFirstEarly: false)
        var counted = 0
        var shows = 0
        for step in 1...200 {
            produce()
            chorus_allocation_counting_start()
            // Every refresh two pictures due: one shown, one passed over.
            let pick = queue.next(dueNanoseconds: Int64(step) * 80_000_000, showFirstEarly: false)
            counted += chorus_allocation_counting_stop()
            if case .show = pick { shows += 1 }
        }
        #expect(shows == 200)
        #expect(queue.counts.dropped == 200)
        #expect(counted == 0, "\(counted) allocations in 200 picks")
    }
}
