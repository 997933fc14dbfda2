import Foundation
import Testing
import ChorusTestSupport
import MediaClock
@testable import MediaPipeline

/// The render loop stepped pass by pass on a simulated device (`SimulatedDevice`): scheduled
/// starts land on the requested host time, content plays in order, the end is reported with
/// its presentation time. What the device really heard, from its own model, is the truth
/// each figure is checked against; no thread, no sleep, every run the same.
@Suite(.ownThread) struct AudioRendererTests {
    let format = AudioFormat(sampleRate: 48_000, channels: 1)
    /// One frame at 48 kHz (ns): the resolution a copied start is placed to.
    static let oneFrame: Int64 = 20_834

    /// A ring holding `blocks` blocks of a ramp whose sample value is its item frame plus one
    /// (so that no content is mistaken for silence; exact in a Float to 16 million frames),
    /// then an end marker.
    func rampRing(serial: Int, from first: Int64, blocks: Int, capacity: Duration = .seconds(1)) -> AudioRing {
        let ring = AudioRing(format: format, capacity: capacity)
        for block in 0..<blocks {
            guard let samples = ring.nextWritableBlock() else { break }
            let start = first + Int64(block * AudioRing.framesPerBlock)
            for index in 0..<AudioRing.framesPerBlock { samples[index] = Float(start + Int64(index) + 1) }
            ring.commitBlock(AudioBlockHeader(serial: serial, itemFrame: start, frameCount: AudioRing.framesPerBlock, kind: .samples))
        }
        if ring.nextWritableBlock() != nil {
            ring.commitBlock(AudioBlockHeader(serial: serial, itemFrame: first + Int64(blocks * AudioRing.framesPerBlock), frameCount: 0, kind: .endOfStream))
        }
        return ring
    }

    /// A renderer on a simulated device drifting `driftPPM`, playing `ring` under `control`.
    func rendering(_ ring: AudioRing, driftPPM: Double = 0, _ control: (inout RenderControl) -> Void) throws -> SimulatedRendering {
        let rendering = try SimulatedRendering(device: SimulatedDevice(driftPPM: driftPPM), format: format, ring: ring)
        rendering.renderer.update(control)
        return rendering
    }

    /// Every content frame the device heard: when, and which item frame (from the ramp).
    func heardContent(_ device: SimulatedDevice) -> [(host: HostTime, frame: Int64)] {
        device.heardFrames.filter { $0.value > 0 }.map { ($0.host, Int64($0.value) - 1) }
    }

    /// A start scheduled ahead holds the item in silence and plays frame 0 at the scheduled
    /// host time, on a device exact or off by the crystal's error either way (a device's
    /// drift moves a lead-in of under a period by under 2 µs).
    @Test(arguments: [0.0, 200, -80])
    func startsExactlyAtTheScheduledHostTime(driftPPM: Double) throws {
        let scheduled = SimulatedDevice.origin + .milliseconds(200)
        let rendering = try rendering(rampRing(serial: 1, from: 0, blocks: 20), driftPPM: driftPPM) {
            $0.mode = .play(serial: 1, frame: 0, hostTime: scheduled)
        }
        let status = rendering.run(until: { $0.phase == .playing })
        rendering.run(for: .milliseconds(50))
        #expect(status.runStartFrame == 0)
        let content = heardContent(rendering.device)
        // Nothing before the schedule, then the item from its first frame, every frame in order.
        let first = try #require(content.first)
        #expect(first.frame == 0)
        #expect(abs((first.host - scheduled).nanosecondsClamped) <= Self.oneFrame, "frame 0 heard \((first.host - scheduled).nanosecondsClamped) ns off")
        #expect(content.enumerated().allSatisfy { $0.element.frame == Int64($0.offset) })
        // The renderer's own report agrees: its anchor projected back to frame 0.
        let reported = status.anchorHost - format.duration(ofFrames: status.anchorFrame)
        #expect(abs((reported - scheduled).nanosecondsClamped) <= Self.oneFrame)
    }

    @Test func aStartInThePastSkipsToWhereItShouldBe() throws {
        // Started 100 ms before the device's first period: the first frame heard is about
        // frame 4800, not frame 0, and it is heard where a start 100 ms ago puts it.
        let scheduled = SimulatedDevice.origin - .milliseconds(100)
        let rendering = try rendering(rampRing(serial: 3, from: 0, blocks: 40)) {
            $0.mode = .play(serial: 3, frame: 0, hostTime: scheduled)
        }
        let status = rendering.run(until: { $0.phase == .playing })
        rendering.run(for: .milliseconds(50))
        #expect(status.runStartFrame >= 4_800)
        let first = try #require(heardContent(rendering.device).first)
        #expect(first.frame == status.runStartFrame)
        let due = scheduled + format.duration(ofFrames: first.frame)
        #expect(abs((first.host - due).nanosecondsClamped) <= Self.oneFrame, "heard \((first.host - due).nanosecondsClamped) ns off")
    }

    @Test func staleSerialsAreDroppedUnheard() throws {
        // Serial 6 has no data: everything of serial 5 is stale and is dropped unheard.
        let ring = rampRing(serial: 5, from: 0, blocks: 4)
        let rendering = try rendering(ring) { $0.mode = .play(serial: 6, frame: 0, hostTime: nil) }
        rendering.run(for: .milliseconds(100))
        #expect(ring.queuedBlocks == 0)
        #expect(rendering.renderer.currentStatus.phase != .playing)
        #expect(heardContent(rendering.device).isEmpty)
    }

    /// Writes `blocks` blocks of the ramp from item frame `first` into `ring`.
    func feed(_ ring: AudioRing, serial: Int, from first: Int64, blocks: Int) {
        for block in 0..<blocks {
            guard let samples = ring.nextWritableBlock() else { return }
            let start = first + Int64(block * AudioRing.framesPerBlock)
            for index in 0..<AudioRing.framesPerBlock { samples[index] = Float(start + Int64(index) + 1) }
            ring.commitBlock(AudioBlockHeader(serial: serial, itemFrame: start, frameCount: AudioRing.framesPerBlock, kind: .samples))
        }
    }

    @Test("a plain start asked to wait for sound stays silent until that much is decoded, then plays from its first frame")
    func aStartWaitsForItsBuffer() throws {
        let ring = AudioRing(format: format, capacity: .seconds(2))
        let wanted = 10 * AudioRing.framesPerBlock
        let rendering = try rendering(ring) {
            $0.mode = .play(serial: 1, frame: 0, hostTime: nil)
            $0.startBufferFrames = wanted
        }
        feed(ring, serial: 1, from: 0, blocks: 6)
        rendering.run(for: .milliseconds(200))
        #expect(heardContent(rendering.device).isEmpty)
        #expect(rendering.renderer.currentStatus.phase != .playing)
        feed(ring, serial: 1, from: 6 * Int64(AudioRing.framesPerBlock), blocks: 4)
        _ = rendering.run(until: { $0.phase == .playing })
        rendering.run(for: .milliseconds(50))
        let content = heardContent(rendering.device)
        #expect(content.first?.frame == 0)
        #expect(content.enumerated().allSatisfy { $0.element.frame == Int64($0.offset) })
    }

    @Test("a start asked to wait plays at once when the item's end is all there is")
    func aShortItemDoesNotWaitForMore() throws {
        // Two blocks and the end marker: less than asked for, but nothing more will come.
        let rendering = try rendering(rampRing(serial: 1, from: 0, blocks: 2)) {
            $0.mode = .play(serial: 1, frame: 0, hostTime: nil)
            $0.startBufferFrames = 40 * AudioRing.framesPerBlock
        }
        let status = rendering.run(until: { $0.phase == .ended })
        #expect(status.endFrame == 2 * Int64(AudioRing.framesPerBlock))
        #expect(heardContent(rendering.device).count == 2 * AudioRing.framesPerBlock)
    }

    @Test("after a stall, plain play goes on only once the sound asked for is back, and from where it stopped", arguments: [0, 8])
    func aStalledPlayWaitsForItsResumeBuffer(resumeBlocks: Int) throws {
        let ring = AudioRing(format: format, capacity: .seconds(2))
        let rendering = try rendering(ring) {
            $0.mode = .play(serial: 1, frame: 0, hostTime: nil)
            $0.resumeBufferFrames = resumeBlocks * AudioRing.framesPerBlock
        }
        feed(ring, serial: 1, from: 0, blocks: 4)
        _ = rendering.run(until: { $0.phase == .playing })
        // The four blocks run out: a stall.
        _ = rendering.run(until: { $0.phase == .stalled })
        let heardBefore = heardContent(rendering.device).count
        #expect(heardBefore == 4 * AudioRing.framesPerBlock)
        // Two blocks come back: with nothing asked for they play at once; asked for eight,
        // they wait.
        feed(ring, serial: 1, from: 4 * Int64(AudioRing.framesPerBlock), blocks: 2)
        rendering.run(for: .milliseconds(200))
        let heardAfterTwo = heardContent(rendering.device).count - heardBefore
        if resumeBlocks == 0 {
            #expect(heardAfterTwo == 2 * AudioRing.framesPerBlock)
        } else {
            #expect(heardAfterTwo == 0)
            feed(ring, serial: 1, from: 6 * Int64(AudioRing.framesPerBlock), blocks: 6)
            rendering.run(for: .milliseconds(300))
            #expect(heardContent(rendering.device).count - heardBefore == 8 * AudioRing.framesPerBlock)
        }
        // Nothing skipped and nothing doubled across the stall.
        let frames = heardContent(rendering.device).map(\.frame)
        #expect(frames == Array(0..<Int64(frames.count)))
    }

    /// A new sound track read from where the item stands: the player reads where the
    /// writing stands, opens the new sound from there, and meanwhile the render thread writes
    /// on. The new sound must still begin at the frame after the last one written, however
    /// much was written meanwhile, on a run whose frames were counted on from an earlier
    /// item's (`frameShift`) as well as on a run of its own.
    @Test("a start that follows on begins after the last frame written, not where the player last read it", arguments: [0, 30_000])
    func aFollowOnStartRepeatsNothingWrittenMeanwhile(shift: Int64) throws {
        let ring = AudioRing(format: format, capacity: .seconds(2))
        let rendering = try rendering(ring) { $0.mode = .play(serial: 1, frame: shift, hostTime: nil) }
        feed(ring, serial: 1, from: shift, blocks: 30)
        rendering.run(for: .milliseconds(100))
        let read = rendering.renderer.currentStatus.writtenEndFrame
        rendering.run(for: .milliseconds(30))
        let written = rendering.renderer.currentStatus.writtenEndFrame
        #expect(written > read, "nothing was written meanwhile: the case is not tested")
        // The new serial's frames are the item's own, `shift` behind the old run's.
        feed(ring, serial: 2, from: read - shift, blocks: 30)
        rendering.renderer.update {
            $0.mode = .play(serial: 2, frame: read - shift, hostTime: nil)
            $0.followsOn = FollowOn(serial: 1, frameShift: shift)
        }
        rendering.run(for: .milliseconds(300))
        // On the old run's frames: every frame once, in order, across the change.
        let heard = heardContent(rendering.device).map(\.frame)
        let change = try #require(heard.indices.dropFirst().first { heard[$0] != heard[$0 - 1] + 1 } ?? (shift == 0 ? heard.count : nil))
        let onOldFrames = Array(heard[..<change] + heard[change...].map { $0 + shift })
        let breaks = zip(onOldFrames, onOldFrames.dropFirst()).filter { $1 != $0 + 1 }
        #expect(onOldFrames.first == shift)
        #expect(breaks.isEmpty, "heard frame \(breaks.first?.1 ?? 0) right after \(breaks.first?.0 ?? 0)")
        #expect(heard.count > Int(written - shift))
    }

    @Test("a pause and a play posted before the render thread looks still drop what the device held")
    func aFlushIsKeptUntilTheRenderThreadTakesIt() throws {
        let ring = AudioRing(format: format, capacity: .seconds(2))
        let rendering = try rendering(ring) { $0.mode = .play(serial: 1, frame: 0, hostTime: nil) }
        feed(ring, serial: 1, from: 0, blocks: 40)
        rendering.run(for: .milliseconds(150))
        let queued = rendering.device.presentationTimestamp().queuedFrames
        #expect(queued > Double(format.sampleRate / 20), "the device holds too little for the case to be tested")
        // A pause (flushing) and, before any pass takes it, a play from elsewhere (flushing
        // nothing, as a resumption asks).
        let resumedAt: Int64 = 500_000
        rendering.renderer.update {
            $0.mode = .idle(serial: 2)
            $0.flush = true
        }
        rendering.renderer.update {
            $0.mode = .play(serial: 2, frame: resumedAt, hostTime: nil)
            $0.flush = false
        }
        let changedAt = rendering.device.now
        feed(ring, serial: 2, from: resumedAt, blocks: 30)
        rendering.run(for: .milliseconds(300))
        // The control is taken within a pass (one relaxed write, under the device's queue):
        // after that nothing of the first run is heard.
        let taken = changedAt + format.duration(ofFrames: Int64(rendering.device.relaxedWriteFrames))
        let late = heardContent(rendering.device).filter { $0.host > taken && $0.frame < resumedAt }
        #expect(late.count == 0, "\(late.count) frames of the paused run heard after the pause, the last at frame \(late.last?.frame ?? 0)")
        #expect(heardContent(rendering.device).contains { $0.frame == resumedAt })
    }

    @Test func playsToTheEndAndSaysWhenItIsHeard() throws {
        let blocks = 10
        let frames = Int64(blocks * AudioRing.framesPerBlock)
        let rendering = try rendering(rampRing(serial: 1, from: 0, blocks: blocks)) {
            $0.mode = .play(serial: 1, frame: 0, hostTime: nil)
        }
        let status = rendering.run(until: { $0.phase == .ended })
        #expect(status.phase == .ended)
        #expect(status.endFrame == frames)
        // Every frame heard once, in order, and the end heard right after the last of them.
        let content = heardContent(rendering.device)
        #expect(content.map(\.frame) == Array(0..<frames))
        let last = try #require(content.last)
        let endError = (status.endHost - (last.host + format.duration(ofFrames: 1))).nanosecondsClamped
        #expect(abs(endError) <= Self.oneFrame, "end reported \(endError) ns off")
    }

    @Test func atRateTwoTheItemPassesTwiceAsFastAndEndsWhenHeard() throws {
        let blocks = 20
        let frames = Int64(blocks * AudioRing.framesPerBlock)
        let rendering = try rendering(rampRing(serial: 1, from: 0, blocks: blocks)) {
            $0.mode = .play(serial: 1, frame: 0, hostTime: nil)
            $0.rate = 2
        }
        let status = rendering.run(until: { $0.phase == .ended })
        #expect(status.phase == .ended)
        #expect(status.endFrame == frames)
        // The whole item is heard in half its duration, from its first frame to its end:
        // within a few frames (the resampler's filter settles over its first taps).
        let heard = status.endHost - status.runStartHost
        let half = format.duration(ofFrames: frames / 2)
        #expect(abs((heard - half).nanosecondsClamped) <= 4 * Self.oneFrame, "heard \(heard) of a \(half * 2) item")
        // What the device heard really advanced two item frames a frame, in order.
        let content = rendering.device.heardFrames.map { Double($0.value) }.filter { $0 > 0 }
        let middle = content[content.count / 4..<content.count * 3 / 4]
        let steps = zip(middle, middle.dropFirst()).map { $1 - $0 }
        #expect(steps.allSatisfy { abs($0 - 2) < 0.01 }, "steps from \(steps.min() ?? 0) to \(steps.max() ?? 0)")
    }

    @Test func plainPlayWritesTheDeviceInLargerPiecesAndAScheduleGoesBackToPeriods() throws {
        let rendering = try rendering(rampRing(serial: 1, from: 0, blocks: 60)) {
            $0.mode = .play(serial: 1, frame: 0, hostTime: nil)
        }
        let device = rendering.device
        let period = device.periodFrames
        let relaxed = device.relaxedWriteFrames
        #expect(relaxed == 4 * period, "40 ms of 10 ms periods")
        // Past the first fill of the device's buffer, plain play writes whole periods, as many
        // as are free, up to the relaxed piece: a few wake-ups a second rather than a hundred.
        while device.writes.count < 12 { rendering.run(for: .milliseconds(10)) }
        let plain = device.writes.map(\.frames)
        #expect(device.precisionsAsked == [.relaxed])
        #expect(plain.allSatisfy { $0 % period == 0 && $0 <= relaxed }, "\(plain)")
        #expect(plain.dropFirst(4).filter { $0 == relaxed }.count >= 6, "\(plain)")

        // A schedule needs the device's timing every period again.
        rendering.renderer.update { $0.mode = .play(serial: 1, frame: 0, hostTime: device.now + .milliseconds(100)) }
        while device.writes.count < plain.count + 20 { rendering.run(for: .milliseconds(10)) }
        #expect(device.precisionsAsked == [.relaxed, .everyPeriod])
        #expect(device.writes.suffix(10).allSatisfy { $0.frames == period }, "\(device.writes.suffix(10).map(\.frames))")
    }

    @Test(arguments: [-100, 150])
    func aScheduledStartAtHalfSpeedIsPlacedOnItsSchedule(millisecondsFromStart: Int) throws {
        // Started 100 ms ago at half speed, the first frame heard is about frame 2400; 150 ms
        // ahead, frame 0 waits behind 150 ms of silence (not the 75 ms that half as many
        // item frames would be at full speed).
        let scheduled = SimulatedDevice.origin + .milliseconds(millisecondsFromStart)
        let rendering = try rendering(rampRing(serial: 2, from: 0, blocks: 40)) {
            $0.mode = .play(serial: 2, frame: 0, hostTime: scheduled)
            $0.rate = 0.5
        }
        let status = rendering.run(until: { $0.phase == .playing && $0.anchorRate == 0.5 })
        rendering.run(for: .milliseconds(200))
        #expect(status.anchorRate == 0.5)
        // Frame 0 projected back from the anchor at half speed lands on the schedule.
        let frameZeroHost = status.anchorHost - format.duration(ofFrames: Int64((status.anchorPosition * 2).rounded()))
        #expect(abs((frameZeroHost - scheduled).nanosecondsClamped) <= 2 * Self.oneFrame)
        // And so does what the device heard: past the resampler's first taps, each frame
        // holds the item position the schedule puts at its time, at half speed.
        let content = rendering.device.heardFrames.filter { $0.value > 0 }
        let inside = content.dropFirst(FractionalResampler.tapCount * 4).prefix(4_800)
        #expect(inside.count == 4_800)
        let errors = inside.map { frame -> Double in
            let due = Double((frame.host - scheduled).nanosecondsClamped) * 0.5 * 48_000 / 1e9
            return (due - (Double(frame.value) - 1)) / 48_000 / 0.5
        }
        let worst = errors.map(abs).max() ?? 1
        #expect(worst <= 2 * Double(Self.oneFrame) / 1e9, "worst \(worst * 1e6) µs off the schedule")
    }
}

/// Following a timeline on a simulated device whose clock drifts: the three tiers of
/// correction, checked against when the device really heard each period.
@Suite(.ownThread) struct FollowModeTests {
    let format = AudioFormat(sampleRate: 48_000, channels: 1)
    /// How often the renderer's own error report is sampled, in simulated time, as a status
    /// line would read it.
    static let reportInterval: Duration = .milliseconds(50)

    /// A renderer on `device` following `timeline`, its ring kept full of a ramp.
    func following(_ device: SimulatedDevice, _ timeline: RenderTimeline, from first: Int64 = 0) throws -> SimulatedRendering {
        let rendering = try SimulatedRendering(device: device, format: format, feeding: 1, from: first)
        rendering.renderer.update { $0.mode = .follow(serial: 1, timeline: timeline) }
        return rendering
    }

    /// How far from `timeline` (seconds, positive: late) each period with content heard
    /// after `after` really was: the ramp's value is its item frame over a million.
    func heardErrors(_ device: SimulatedDevice, against timeline: RenderTimeline, after: HostTime? = nil) -> [Double] {
        device.writes.filter { write in write.firstValue > 0 && after.map { write.heardAt > $0 } != false }.map { write in
            (timeline.due(at: write.heardAt, sampleRate: 48_000) - Double(write.firstValue) * 1e6) / 48_000
        }
    }

    /// Follows a timeline of `timelineRate` starting 100 ms in, on a device `driftPPM` off,
    /// for `seconds`, making `change` `changeAfter` seconds in (half-way by default).
    /// Returns the last report, the reported errors every `reportInterval` while playing,
    /// and the device.
    func follow(driftPPM: Double, timelineRate: Double, seconds: Double, changeAfter: Double? = nil,
                then change: ((AudioRenderer, RenderTimeline) -> Void)? = nil) throws -> (RenderStatus, [Double], SimulatedDevice) {
        let device = SimulatedDevice(driftPPM: driftPPM)
        let start = device.now
        let timeline = RenderTimeline(frame: 0, host: start + .milliseconds(100), rate: timelineRate)
        let rendering = try following(device, timeline)
        let renderer = rendering.renderer
        var errors: [Double] = []
        var nextReport = start + Self.reportInterval
        let changeAt = start + .nanoseconds(Int64((changeAfter ?? seconds / 2) * 1e9))
        var changed = false
        rendering.run(until: start + .nanoseconds(Int64(seconds * 1e9))) {
            guard device.now >= nextReport else { return }
            nextReport = nextReport + Self.reportInterval
            let status = renderer.currentStatus
            if status.phase == .playing { errors.append(status.timelineError / .seconds(1)) }
            if !changed, device.now >= changeAt, let change {
                change(renderer, timeline)
                changed = true
            }
        }
        return (renderer.currentStatus, errors, device)
    }

    /// A device 100 ppm fast against a group's clock 150 ppm slow; a device 80 ppm slow
    /// against a master clock 300 ppm fast (what a player on a leader's clock meets).
    @Test(arguments: [(100.0, -150.0), (-80, 300)])
    func aDriftingDeviceIsPulledOntoTheTimelineSoftly(driftPPM: Double, clockPPM: Double) throws {
        let (status, errors, device) = try follow(driftPPM: driftPPM, timelineRate: 1 + clockPPM * 1e-6, seconds: 6)
        #expect(status.phase == .playing)
        #expect(status.hardResyncs == 0)
        // Settled: the last second of errors within 50 µs. The timeline's rate is applied
        // as given, so the correction absorbs only the device's drift, the other way.
        let settled = errors.suffix(20)
        #expect(settled.allSatisfy { abs($0) < 50e-6 }, "\(settled)")
        #expect(abs(status.correctionPPM + driftPPM) < 30, "\(status.correctionPPM)")
        // And the device really heard the last seconds there.
        let timeline = RenderTimeline(frame: 0, host: SimulatedDevice.origin + .milliseconds(100), rate: 1 + clockPPM * 1e-6)
        let heard = heardErrors(device, against: timeline, after: timeline.host + .seconds(4))
        #expect(heard.count > 150)
        #expect((heard.map(abs).max() ?? 1) < 50e-6, "worst \((heard.map(abs).max() ?? 1) * 1e6) µs heard off the timeline")
    }

    @Test func aDeepQueueOnAnOffCrystalIsPlayedOutAtTheDevicesRate() throws {
        // A device 600 ppm fast (PulseAudio's null sink has been measured 700 ppm fast) with
        // 240 ms queued, as a sound server holds: counted at the nominal rate, that queue
        // would put every period 144 µs late of where the device really plays it.
        let device = SimulatedDevice(driftPPM: 600, periodsPerBuffer: 24)
        let timeline = RenderTimeline(frame: 0, host: device.now + .milliseconds(300), rate: 1)
        let rendering = try following(device, timeline)
        rendering.run(for: .seconds(8))
        #expect(rendering.renderer.currentStatus.hardResyncs <= 2)
        // From the sixth second on: how far from the timeline each period was really heard.
        let errors = heardErrors(device, against: timeline, after: timeline.host + .seconds(6))
        #expect(errors.count > 100)
        let worst = errors.map(abs).max() ?? 1
        #expect(worst < 10e-6, "worst \(worst * 1e6) µs, median \(errors.sorted()[errors.count / 2] * 1e6) µs")
    }

    @Test func anUnderrunIsMetByPlacingContentAfresh() throws {
        // Two seconds in, the render loop is held off until the device has run dry for
        // 1.5 ms. Everything after the gap would be 1.5 ms late: under the hard tier's
        // threshold, so the soft tier would need three seconds at its limit to pull it in.
        // Placed afresh on the restarted device instead, what follows the gap is where the
        // timeline says within a period, and no resync is counted.
        let device = SimulatedDevice()
        let timeline = RenderTimeline(frame: 0, host: device.now + .milliseconds(100), rate: 1)
        device.stallAt = timeline.host + .seconds(2)
        device.stallBeyondQueue = .microseconds(1_500)
        let rendering = try following(device, timeline)
        rendering.run(for: .seconds(3))
        let status = rendering.renderer.currentStatus
        #expect(device.underrunCount == 1)
        #expect(status.timelineBreaks == 1)
        #expect(status.hardResyncs == 0)
        let errors = heardErrors(device, against: timeline, after: timeline.host + .seconds(2))
        #expect(errors.count > 50)
        let worst = errors.map(abs).max() ?? 1
        #expect(worst < 30e-6, "worst \(worst * 1e6) µs after the underrun")
    }

    @Test func aReplacedStreamIsMetByPlacingContentAfreshAndCountedApart() throws {
        // Two seconds in, the device's stream dies and a fresh one takes frames 600 ms later,
        // as ALSA's output replaces a stream a sound server stopped serving. What follows is
        // placed on the timeline afresh, the gap skipped; the restart is reported as such,
        // neither as an underrun nor as a resync.
        let device = SimulatedDevice()
        let timeline = RenderTimeline(frame: 0, host: device.now + .milliseconds(100), rate: 1)
        device.restartAt = timeline.host + .seconds(2)
        let rendering = try following(device, timeline)
        rendering.run(for: .seconds(4))
        let status = rendering.renderer.currentStatus
        #expect(device.streamRestartCount == 1)
        #expect(status.streamRestarts == 1)
        #expect(status.timelineBreaks == 0)
        #expect(status.hardResyncs == 0)
        let errors = heardErrors(device, against: timeline, after: timeline.host + .seconds(2))
        #expect(errors.count > 50)
        let worst = errors.map(abs).max() ?? 1
        #expect(worst < 30e-6, "worst \(worst * 1e6) µs after the restart")
    }

    @Test func aStartWaitsForSettledTimingAndKeepsToTheTimeline() throws {
        // The device's timing settles (a sound server's figures arrive) 400 ms after the
        // timeline's start: nothing is played before, and what is played after is where the
        // timeline says, the first 400 ms skipped rather than played late.
        let device = SimulatedDevice()
        let timeline = RenderTimeline(frame: 0, host: device.now + .milliseconds(100), rate: 1)
        let settled = timeline.host + .milliseconds(400)
        device.settlesAt = settled
        let rendering = try following(device, timeline)
        rendering.run(for: .milliseconds(1_500))
        let first = try #require(device.writes.first { $0.firstValue > 0 })
        #expect(first.heardAt >= settled, "content heard \((settled - first.heardAt).nanosecondsClamped / 1000) µs before the timing settled")
        let errors = heardErrors(device, against: timeline)
        #expect((errors.map(abs).max() ?? 1) < 30e-6, "worst \((errors.map(abs).max() ?? 1) * 1e6) µs")
        #expect(rendering.renderer.currentStatus.hardResyncs == 0)
    }

    /// A timeline due as soon as the device opens, before a few periods' reports have pinned
    /// its rate: a group's room waits for the rate, skipping what falls due meanwhile; a lone
    /// player's start on the host clock (`waitsForDeviceRate` false) sounds on its instant.
    @Test(arguments: [true, false])
    func aStartDueAtOnceWaitsForTheDevicesRateOnlyInAGroup(waits: Bool) throws {
        let device = SimulatedDevice()
        let timeline = RenderTimeline(frame: 0, host: device.now + .milliseconds(1), rate: 1)
        let rendering = try SimulatedRendering(device: device, format: format, feeding: 1, from: 0)
        rendering.renderer.update {
            $0.mode = .follow(serial: 1, timeline: timeline)
            $0.waitsForDeviceRate = waits
        }
        rendering.run(for: .milliseconds(500))
        let first = try #require(device.heardFrames.first { $0.value > 0 })
        let late = (first.host - timeline.host).nanosecondsClamped
        if waits {
            #expect(late > 5_000_000, "content began \(late) ns after the instant, before the rate was known")
        } else {
            #expect(abs(late) <= AudioRendererTests.oneFrame, "content began \(late) ns off the instant")
        }
        // Either way, what is heard is where the timeline puts it.
        let errors = heardErrors(device, against: timeline, after: first.host)
        #expect(errors.count > 20)
        #expect((errors.map(abs).max() ?? 1) < 30e-6, "worst \((errors.map(abs).max() ?? 1) * 1e6) µs")
    }

    @Test func aFollowedTimelineAtRateTwoStartsOnItsInstant() throws {
        // A start ahead at rate 2 from item frame 24 000 (as a player on a master clock asks
        // when its rate was set before the start, its reader starting there): silence until
        // then, then frame 24 000 heard at the instant and the item running at twice the pace.
        let device = SimulatedDevice()
        let timeline = RenderTimeline(frame: 24_000, host: device.now + .milliseconds(400), rate: 2)
        let rendering = try following(device, timeline, from: 24_000)
        rendering.run(for: .seconds(1))
        #expect(rendering.renderer.currentStatus.hardResyncs == 0)
        #expect(rendering.renderer.currentStatus.anchorRate == 2)
        let first = try #require(device.heardFrames.first { $0.value > 0 })
        #expect(abs((first.host - timeline.host).nanosecondsClamped) <= AudioRendererTests.oneFrame, "content began \((first.host - timeline.host).nanosecondsClamped) ns off the instant")
        // Each period from the next on where the timeline puts it (the first begins with the
        // resampler's filter rising from the silence before, so its first value is no position).
        let errors = heardErrors(device, against: timeline, after: first.host)
        #expect(errors.count > 50)
        #expect((errors.map(abs).max() ?? 1) < 30e-6, "worst \((errors.map(abs).max() ?? 1) * 1e6) µs")
    }

    /// A renderer on a device of its own, following rate 1 from 100 ms in.
    func followingAtRateOne() throws -> (SimulatedDevice, RenderTimeline, SimulatedRendering) {
        let device = SimulatedDevice()
        let timeline = RenderTimeline(frame: 0, host: device.now + .milliseconds(100), rate: 1)
        return (device, timeline, try following(device, timeline))
    }

    /// Where a scheduled change falls in a period: a nanosecond after the period's start,
    /// where the render loop wakes and a change made then lands (a frame forced to the old
    /// rate there put the item 31 µs off), and well inside one.
    static let rateChangePhases: [Duration] = [.zero, .microseconds(4_321)]

    @Test(arguments: rateChangePhases)
    func aScheduledRateChangeIsMadeWithoutABreak(phase: Duration) throws {
        // Two seconds into play at rate 1, the timeline doubles its rate 200 ms ahead, from
        // where it then stands; later it halves it. Every period, before, across and after
        // each change, is heard where the timeline says, and nothing is skipped or padded.
        let (device, initial, rendering) = try followingAtRateOne()
        var timeline = initial
        let renderer = rendering.renderer
        var changes: [RenderTimeline] = []
        for (after, rate) in [(2.0, 2.0), (1.5, 0.5)] {
            rendering.run(for: .nanoseconds(Int64(after * 1e9)))
            let at = device.now + .milliseconds(200) + phase
            timeline = RenderTimeline(frame: Int64(timeline.due(at: at, sampleRate: 48_000).rounded()), host: at,
                                      rate: rate, rateBefore: timeline.rate)
            changes.append(timeline)
            renderer.update { [timeline] in $0.mode = .follow(serial: 1, timeline: timeline) }
        }
        rendering.run(for: .milliseconds(1_500))
        #expect(renderer.currentStatus.hardResyncs == 0)
        // Each stretch against the timeline in force then.
        let first = changes[0], second = changes[1]
        let start = first.host - .seconds(1)
        let periods = device.writes.filter { $0.firstValue > 0 && $0.heardAt > start }
        let errors = periods.map { period -> Double in
            let timeline = period.heardAt < second.host ? first : second
            return (timeline.due(at: period.heardAt, sampleRate: 48_000) - Double(period.firstValue) * 1e6) / 48_000
        }
        #expect(errors.count > 200)
        let worst = errors.map(abs).max() ?? 1
        #expect(worst < 30e-6, "worst \(worst * 1e6) µs")
        // The item really ran at each rate: frames heard per second of host time.
        func rate(between a: HostTime, and b: HostTime) -> Double {
            let inside = periods.filter { $0.heardAt > a && $0.heardAt < b }
            guard let p = inside.first, let q = inside.last, q.heardAt > p.heardAt else { return 0 }
            return Double(q.firstValue - p.firstValue) * 1e6 / 48_000 / (Double((q.heardAt - p.heardAt).nanosecondsClamped) / 1e9)
        }
        #expect(abs(rate(between: first.host + .milliseconds(100), and: second.host) - 2) < 0.001)
        #expect(abs(rate(between: second.host + .milliseconds(100), and: second.host + .seconds(1)) - 0.5) < 0.001)
    }

    @Test(arguments: rateChangePhases)
    func thePositionHeardInAChangesLeadInIsCountedAtTheOldRate(phase: Duration) throws {
        // A change to 1.5 scheduled 300 ms ahead is written a device's queue (100 ms) before
        // it is heard. Read every period from 200 ms before the change to 200 ms after, the
        // reported position stays where the timeline puts the frame heard then: before
        // the change at the old rate, though the report is anchored past it.
        let (device, initial, rendering) = try followingAtRateOne()
        var timeline = initial
        let renderer = rendering.renderer
        rendering.run(for: .seconds(2))
        let at = device.now + .milliseconds(300) + phase
        timeline = RenderTimeline(frame: Int64(timeline.due(at: at, sampleRate: 48_000).rounded()), host: at,
                                  rate: 1.5, rateBefore: 1)
        renderer.update { [timeline] in $0.mode = .follow(serial: 1, timeline: timeline) }
        rendering.run(until: at - .milliseconds(200))
        var errors: [Double] = []
        var countedAtTheAnchorsRate: [Double] = []
        rendering.run(until: at + .milliseconds(200)) {
            let status = renderer.currentStatus
            let due = timeline.due(at: device.now, sampleRate: 48_000)
            errors.append((status.position(at: device.now, sampleRate: 48_000) - due) / 48_000)
            let counted = status.anchorPosition + Double((device.now - status.anchorHost).nanosecondsClamped) * 48_000e-9 * status.anchorRate
            countedAtTheAnchorsRate.append((counted - due) / 48_000)
        }
        // The case is the one that matters: counted back at the anchor's rate alone, some
        // reading in the lead-in would have been milliseconds off.
        #expect((countedAtTheAnchorsRate.map(abs).max() ?? 0) > 10e-3)
        #expect(errors.count > 35)
        let worst = errors.map(abs).max() ?? 1
        // The renderer's own placement error is tens of µs at most (above); a count at the
        // wrong rate over the queue would be up to 50 ms.
        #expect(worst < 100e-6, "worst \(worst * 1e6) µs")
    }

    @Test func aSpeedChangeWhilePlayingGoesOnWithoutADip() throws {
        // A ramp copied as it is at rate 1, then read at 1.5 from the next period: the
        // output stays a ramp whose slope steps from 1 to 1.5 (in millionths a frame), with
        // no dip where the resampler takes over from the copy.
        let device = SimulatedDevice()
        let rendering = try SimulatedRendering(device: device, format: format, feeding: 1)
        let renderer = rendering.renderer
        renderer.update { $0.mode = .play(serial: 1, frame: 0, hostTime: nil) }
        rendering.run(for: .milliseconds(400))
        let serial = renderer.currentStatus.serial
        let runStart = renderer.currentStatus.runStartFrame
        renderer.update { $0.rate = 1.5 }
        rendering.run(for: .milliseconds(400))
        // The same run goes on: no restart, no stall.
        #expect(renderer.currentStatus.serial == serial && renderer.currentStatus.runStartFrame == runStart)
        #expect(renderer.currentStatus.stalls == 0)
        #expect(renderer.currentStatus.anchorRate == 1.5)
        let samples = device.samples.drop { $0 == 0 }.map(Double.init)
        #expect(samples.count > 20_000)
        let slopes = zip(samples, samples.dropFirst()).map { ($1 - $0) * 1e6 }
        #expect(slopes.contains { abs($0 - 1.5) < 0.01 }, "the speed never changed")
        // Every step is the old slope, the new, or (across the change) between them.
        let worst = slopes.map { max(0, 1 - $0, $0 - 1.5) }.max() ?? 1
        #expect(worst < 0.05, "a step off the ramp by \(worst) millionths")
    }

    /// Moves the followed timeline later by `delta`, as a clock estimate's update does.
    static func move(_ renderer: AudioRenderer, _ timeline: RenderTimeline, by delta: Duration) {
        var moved = timeline
        moved.host = moved.host + delta
        renderer.update { $0.mode = .follow(serial: 1, timeline: moved) }
    }

    @Test func aSmallTimelineMoveIsCorrectedWithoutASkip() throws {
        let (status, errors, _) = try follow(driftPPM: 0, timelineRate: 1, seconds: 6) { Self.move($0, $1, by: .microseconds(400)) }
        #expect(status.hardResyncs == 0)
        #expect(errors.contains { $0 < -350e-6 }, "the move was not seen")
        #expect(abs(errors.last ?? 1) < 50e-6, "\(errors.suffix(10))")
    }

    @Test func aClockMoveWhileSettlingIsCorrectedWithoutASkip() throws {
        // Half a second into play (inside the settling time) the clock estimate moves the
        // timeline by 400 µs, past the settling tier's 250 µs: the device did not err, so
        // the soft tier absorbs it as it would later.
        let (status, errors, _) = try follow(driftPPM: 0, timelineRate: 1, seconds: 6, changeAfter: 0.6) { Self.move($0, $1, by: .microseconds(400)) }
        #expect(status.hardResyncs == 0)
        #expect(errors.contains { $0 < -350e-6 }, "the move was not seen")
        #expect(abs(errors.last ?? 1) < 50e-6, "\(errors.suffix(10))")
    }

    @Test func aMoveSlewedAtTheSoftLimitIsMetWithoutOvershoot() throws {
        // Past the settling time, the clock estimate moves the timeline by 1.5 ms: under the
        // hard tier's threshold, so it is slewed out at the soft tier's 500 ppm for three
        // seconds. An integral that kept growing meanwhile carries the error far past zero
        // (186 µs when tried); a conditional one meets the timeline, but for what the error
        // filter's 0.2 s lag carries on at the slew rate (about 50 µs).
        let (status, errors, _) = try follow(driftPPM: 0, timelineRate: 1, seconds: 8, changeAfter: 1.8) { Self.move($0, $1, by: .microseconds(1_500)) }
        #expect(status.hardResyncs == 0)
        guard let deepest = errors.indices.min(by: { errors[$0] < errors[$1] }) else {
            Issue.record("no errors recorded")
            return
        }
        #expect(errors[deepest] < -1e-3, "the move was not seen: \(errors[deepest] * 1e6) µs")
        let after = errors[deepest...]
        let overshoot = after.max() ?? 1
        #expect(overshoot < 100e-6, "overshot by \(overshoot * 1e6) µs")
        #expect(abs(errors.last ?? 1) < 20e-6, "\(errors.suffix(10))")
    }

    @Test func aTimelineStillFirmingUpIsFollowedClosely() throws {
        // For its first 1.5 s of play the followed timeline moves 3 µs later every 20 ms
        // (150 ppm beyond its stated rate), as a clock estimate whose rate is still being
        // learned does on a jittery path. The steady loop (1.5 rad/s) would lag such a ramp
        // by about 40 µs, plus the error filter's 30 µs; while a start acquires, the loop
        // is four times faster and keeps within a quarter of that.
        let device = SimulatedDevice()
        var timeline = RenderTimeline(frame: 0, host: device.now + .milliseconds(100), rate: 1)
        let rendering = try following(device, timeline)
        let renderer = rendering.renderer
        let start = timeline.host
        var errors: [Double] = []
        while device.now < start + .milliseconds(1_500) {
            rendering.run(for: .milliseconds(20))
            timeline.host = timeline.host + .microseconds(3)
            let moved = timeline
            renderer.update { $0.mode = .follow(serial: 1, timeline: moved) }
            let status = renderer.currentStatus
            // From 0.3 s, once the ramp has had time to build a lag.
            if status.phase == .playing, device.now > start + .milliseconds(300) { errors.append(status.timelineError / .seconds(1)) }
        }
        #expect(renderer.currentStatus.hardResyncs == 0)
        #expect(errors.count > 40)
        let worst = errors.map(abs).max() ?? 1
        #expect(worst < 20e-6, "worst \(worst * 1e6) µs behind the moving timeline")
    }

    @Test func aLargeTimelineMoveResyncsAtOnce() throws {
        let (status, errors, _) = try follow(driftPPM: 0, timelineRate: 1, seconds: 3) { Self.move($0, $1, by: .milliseconds(20)) }
        #expect(status.hardResyncs == 1)
        #expect(abs(errors.last ?? 1) < 50e-6)
    }
}
