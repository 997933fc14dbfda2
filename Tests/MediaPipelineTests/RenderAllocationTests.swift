import CAllocationCounter
import ChorusTestSupport
import Foundation
import MediaClock
import Testing
@testable import MediaPipeline

/// The render path allocates nothing once playing: its passes are run on the test's thread,
/// whose allocations the test process counts (the C library's allocator stood in for).
/// Under a sanitizer, whose allocator the counter cannot stand in for, the suite does not run.
@Suite(.serialized, .enabled(if: chorus_allocation_counting_available() != 0, "allocations are not countable under a sanitizer"), .ownThread)
struct RenderAllocationTests {
    let format = AudioFormat(sampleRate: 48_000, channels: 2)
    /// Passes before counting: a start, the device's first fill, the timing filter's first
    /// reports. Plain play writes up to 40 ms a pass, so the ring's second lasts it 25.
    static let warmUpCycles = 8
    /// Passes counted: 12 periods of following, or about half a second of plain play.
    static let countedCycles = 12

    /// A ring holding `seconds` of a ramp, of `serial`.
    func filledRing(serial: Int, seconds: Int64 = 1) -> AudioRing {
        let ring = AudioRing(format: format, capacity: .seconds(seconds))
        var frame: Int64 = 0
        while let samples = ring.nextWritableBlock() {
            for index in 0..<(AudioRing.framesPerBlock * format.channels) { samples[index] = Float(index % 97) / 97 }
            ring.commitBlock(AudioBlockHeader(serial: serial, itemFrame: frame, frameCount: AudioRing.framesPerBlock, kind: .samples))
            frame += Int64(AudioRing.framesPerBlock)
        }
        return ring
    }

    /// The allocations of `countedCycles` passes after the warm-up, on a null device.
    func allocations(capture: Bool = false, ringSeconds: Int64 = 1, _ control: (inout RenderControl) -> Void) throws -> Int {
        let output = NullOutput()
        try output.open(preferred: format)
        let path = TestMedia.folder.appendingPathComponent("allocations-\(getpid()).cap").path
        let renderer = AudioRenderer(output: output, ring: filledRing(serial: 1, seconds: ringSeconds), capture: capture ? try RenderCapture(path: path) : nil)
        renderer.update(control)
        renderer.cycleForTests(Self.warmUpCycles)
        // On a loaded machine a pass can come late enough for the device to run dry, and the
        // render thread then places content afresh: the count starts once it plays again.
        var extraCycles = 0
        while renderer.currentStatus.phase != .playing && extraCycles < Self.warmUpCycles * 4 {
            renderer.cycleForTests(1)
            extraCycles += 1
        }
        #expect(renderer.currentStatus.phase == .playing, "the counted passes play content")
        chorus_allocation_counting_start()
        renderer.cycleForTests(Self.countedCycles)
        return chorus_allocation_counting_stop()
    }


    @Test func theCounterSeesAnAllocation() throws {
        chorus_allocation_counting_start()
        let array = Array(repeating: UInt8(7), count: 4_096 + Int(getpid() % 3))
        let counted = chorus_allocation_counting_stop()
        #expect(array.count > 4_000)
        #expect(counted >= 1, "an array's storage is an allocation the test must see")
    }

    @Test(arguments: [1.0, 1.5])
    func plainPlayAllocatesNothing(rate: Double) throws {
        let counted = try allocations { control in
            control.mode = .play(serial: 1, frame: 0, hostTime: nil)
            control.rate = rate
        }
        #expect(counted == 0, "\(counted) allocations in \(Self.countedCycles) passes at rate \(rate)")
    }

    @Test(arguments: [PitchMode.timeDomain, .spectral])
    func keepingThePitchAllocatesNothing(mode: PitchMode) throws {
        let counted = try allocations { control in
            control.mode = .play(serial: 1, frame: 0, hostTime: nil)
            control.rate = 1.5
            control.pitch = mode
        }
        #expect(counted == 0, "\(counted) allocations in \(Self.countedCycles) passes keeping the pitch at 1.5")
    }

    @Test func followingATimelineWithAKeptPitchAllocatesNothing() throws {
        // Anchored past the stage's delay (65 ms), with content for 2.4 s at 1.25: a loaded
        // machine slows the passes, and the timeline runs on in real time meanwhile.
        let timeline = RenderTimeline(frame: 0, host: HostTime.now() + .milliseconds(250), rate: 1.25)
        let counted = try allocations(ringSeconds: 3) { control in
            control.mode = .follow(serial: 1, timeline: timeline)
            control.pitch = .timeDomain
        }
        #expect(counted == 0, "\(counted) allocations in \(Self.countedCycles) passes")
    }

    @Test func followingATimelineWithACaptureAllocatesNothing() throws {
        let timeline = RenderTimeline(frame: 0, host: HostTime.now() + .milliseconds(50), rate: 1)
        let counted = try allocations(capture: true) { control in
            control.mode = .follow(serial: 1, timeline: timeline)
        }
        #expect(counted == 0, "\(counted) allocations in \(Self.countedCycles) passes")
    }

    /// A stream as `ALSAOutput` hands one over: a value holding a reference (its probe).
    struct HandedStream: Sendable {
        final class Probe: Sendable {}
        let number: Int
        let probe: Probe
    }

    @Test func handingAStalledStreamOverAndTakingTheFreshOneAllocatesNothing() {
        let reopener = StreamReopener<HandedStream>(label: "test.reopen", retryInterval: .milliseconds(1),
                                                    open: { HandedStream(number: 2, probe: .init()) }, close: { _ in })
        defer { reopener.shutDown() }
        let stalled = HandedStream(number: 1, probe: .init())
        // A first look, with nothing ready, as the render thread makes while it waits: the
        // runtime's one-time set-up of the types involved is not the path's.
        #expect(reopener.takeReady() == nil)
        chorus_allocation_counting_start()
        let handedOver = reopener.retire(stalled)
        let retiring = chorus_allocation_counting_stop()
        #expect(handedOver)
        #expect(retiring == 0, "\(retiring) allocations handing a stream over")
        let deadline = HostTime.now() + .seconds(20)
        while reopener.openedStreams == 0 && HostTime.now() < deadline { usleep(1_000) }
        chorus_allocation_counting_start()
        let fresh = reopener.takeReady()
        let taking = chorus_allocation_counting_stop()
        #expect(fresh?.number == 2)
        #expect(taking == 0, "\(taking) allocations taking the fresh stream")
    }
}
