import Foundation
import Testing
import ChorusTestSupport
@testable import MediaPipeline

@Suite(.ownThread) struct AudioRingTests {
    let format = AudioFormat(sampleRate: 48_000, channels: 2)

    @Test func deliversBlocksInOrderWithTheirHeaders() throws {
        let ring = AudioRing(format: format, capacity: .milliseconds(100))
        for index in 0..<3 {
            let block = try #require(ring.nextWritableBlock())
            block.update(repeating: Float(index), count: AudioRing.framesPerBlock * 2)
            ring.commitBlock(AudioBlockHeader(serial: 7, itemFrame: Int64(index * 1024), frameCount: 1024, kind: .samples))
        }
        for index in 0..<3 {
            let head = try #require(ring.peek())
            #expect(head.header.itemFrame == Int64(index * 1024))
            #expect(head.header.serial == 7)
            #expect(head.samples[5] == Float(index))
            ring.pop()
        }
        #expect(ring.peek() == nil)
    }

    @Test func refusesToOverwriteUnreadBlocks() {
        let ring = AudioRing(format: format, capacity: .milliseconds(10))
        var written = 0
        while ring.nextWritableBlock() != nil {
            ring.commitBlock(AudioBlockHeader(serial: 0, itemFrame: 0, frameCount: 1, kind: .samples))
            written += 1
        }
        #expect(written == ring.blockCount)
        #expect(!ring.hasSpace)
        ring.pop()
        #expect(ring.hasSpace)
    }

    @Test func carriesEveryFrameAcrossThreads() async {
        // A producer and a consumer on two threads: every value arrives once, in order.
        let ring = AudioRing(format: AudioFormat(sampleRate: 48_000, channels: 1), capacity: .milliseconds(50))
        let total = 2_000
        let producer = Thread {
            var next = 0
            while next < total {
                guard let block = ring.nextWritableBlock() else { usleep(50); continue }
                block[0] = Float(next)
                ring.commitBlock(AudioBlockHeader(serial: 1, itemFrame: Int64(next), frameCount: 1, kind: .samples))
                next += 1
            }
        }
        producer.start()
        var expected = 0
        var wrong = 0
        let deadline = Date().addingTimeInterval(20)
        while expected < total && Date() < deadline {
            guard let head = ring.peek() else { usleep(50); continue }
            if head.samples[0] != Float(expected) || head.header.itemFrame != Int64(expected) { wrong += 1 }
            ring.pop()
            expected += 1
        }
        #expect(expected == total)
        #expect(wrong == 0)
    }
}
