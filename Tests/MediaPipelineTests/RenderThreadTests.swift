import Foundation
import Testing
import ChorusTestSupport
import MediaClock
@testable import MediaPipeline

/// The render thread itself, on a real-time null device: controls posted from another
/// thread reach it, and what it reports comes back. Only what happens is checked, each wait
/// generous, so a loaded machine (or a sanitizer) slows these down without failing them.
@Suite(.serialized, .ownThread) struct RenderThreadTests {
    let format = AudioFormat(sampleRate: 48_000, channels: 1)
    /// The longest a wait for the render thread lasts before the test fails: far beyond the
    /// tenths of a second each takes, so only a thread that never gets there fails it.
    static let patience: Double = 30

    func waitFor(_ renderer: AudioRenderer, _ condition: (RenderStatus) -> Bool) -> RenderStatus {
        let deadline = Date().addingTimeInterval(Self.patience)
        var status = renderer.currentStatus
        while !condition(status) && Date() < deadline {
            usleep(2_000)
            status = renderer.currentStatus
        }
        return status
    }

    /// A ring of `blocks` blocks of `serial` and an end marker.
    func ring(serial: Int, blocks: Int) -> AudioRing {
        let ring = AudioRing(format: format, capacity: .seconds(1))
        for block in 0..<blocks {
            guard let samples = ring.nextWritableBlock() else { break }
            samples.update(repeating: 0.5, count: AudioRing.framesPerBlock)
            ring.commitBlock(AudioBlockHeader(serial: serial, itemFrame: Int64(block * AudioRing.framesPerBlock),
                                              frameCount: AudioRing.framesPerBlock, kind: .samples))
        }
        ring.commitBlock(AudioBlockHeader(serial: serial, itemFrame: Int64(blocks * AudioRing.framesPerBlock), frameCount: 0, kind: .endOfStream))
        return ring
    }

    @Test func staleSerialsAreDroppedAndTheEndIsReported() throws {
        let output = NullOutput()
        try output.open(preferred: format)
        let stale = ring(serial: 5, blocks: 4)
        let renderer = AudioRenderer(output: output, ring: stale)
        renderer.start()
        defer { renderer.stop() }
        // Serial 6 has no data: everything of serial 5 is stale and is dropped unheard.
        renderer.update { $0.mode = .play(serial: 6, frame: 0, hostTime: nil) }
        let dropped = waitFor(renderer) { $0.generation == 1 && stale.queuedBlocks == 0 }
        #expect(stale.queuedBlocks == 0)
        #expect(dropped.phase != .playing)
    }

    @Test func playsToTheEndAndSaysWhenItIsHeard() throws {
        let output = NullOutput()
        try output.open(preferred: format)
        let blocks = 10
        let renderer = AudioRenderer(output: output, ring: ring(serial: 1, blocks: blocks))
        renderer.update { $0.mode = .play(serial: 1, frame: 0, hostTime: nil) }
        renderer.start()
        defer { renderer.stop() }
        let status = waitFor(renderer) { $0.phase == .ended }
        #expect(status.phase == .ended)
        #expect(status.endFrame == Int64(blocks * AudioRing.framesPerBlock))
        #expect(status.endHost > status.runStartHost)
    }

    /// A file is rendered only while there is content, so the period that renders an item's
    /// end may be the last that publishes anything: if the player was reading the status
    /// just then, the end must still be published, or the player waits for it for ever.
    @Test("a file's render publishes its end though the status was busy when the end was written")
    func aFileRenderPublishesItsEndAfterABusyStatus() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("chorus-busy-status-\(getpid()).wav").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let output = WAVFileOutput(path: path)
        try output.open(preferred: format)
        let blocks = 4
        let renderer = AudioRenderer(output: output, ring: ring(serial: 1, blocks: blocks))
        renderer.update { $0.mode = .play(serial: 1, frame: 0, hostTime: nil) }
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        Thread {
            renderer.holdingStatusForTests {
                held.signal()
                release.wait()
            }
            done.signal()
        }.start()
        held.wait()
        // Every block and the end are rendered while the status is held.
        renderer.cycleForTests(50)
        release.signal()
        done.wait()
        #expect(renderer.currentStatus.phase != .ended, "published while held: the case is not tested")
        // Passes with nothing left to render.
        renderer.cycleForTests(3)
        let status = renderer.currentStatus
        #expect(status.phase == .ended)
        #expect(status.endFrame == Int64(blocks * AudioRing.framesPerBlock))
        output.close()
    }
}
