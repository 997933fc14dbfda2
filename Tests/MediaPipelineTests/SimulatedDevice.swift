import ChorusSimulation
import Foundation
import MediaClock
@testable import MediaPipeline

/// A null device on a simulated clock, for driving a renderer one pass at a time on the
/// test's thread (`AudioRenderer.cycleForTests`): where a real device's wait sleeps until
/// room frees, this one moves its clock exactly that far, so a run of simulated seconds
/// takes milliseconds and ends the same way every time, however loaded the machine.
///
/// It also keeps the truth the renderer's own figures are checked against: for every
/// write, when the device really plays its first frame (from its own model, at its own
/// rate), and every sample written on the first channel.
// @unchecked: used from one thread at a time (the test's), as a renderer driven by
// `cycleForTests` is; the renderer's contract asks no more of an output.
final class SimulatedDevice: AudioOutput, @unchecked Sendable {
    /// Where simulated time starts: far from zero, as a real host clock is, so nothing
    /// passes only because a time is small.
    static let origin = HostTime(nanoseconds: 1_000_000_000_000)

    /// One write: when its first frame is heard, how many frames it held, what its first
    /// sample was.
    struct Write {
        var heardAt: HostTime
        var frames: Int
        var firstValue: Float
    }

    let clock: SimulatedHostClock
    let device: NullOutput
    private(set) var writes: [Write] = []
    /// Every sample written, of the first channel, in order.
    private(set) var samples: [Float] = []
    /// Every timing precision the renderer asked for, in order.
    private(set) var precisionsAsked: [TimingPrecision] = []
    /// When the device's timing counts as settled (nil: from the start), as a sound
    /// server's figures arriving late make it.
    var settlesAt: HostTime?
    /// Once the clock reaches this, the next wait lasts until the device has run dry and
    /// `stallBeyondQueue` more: a render thread held off for too long by the machine.
    var stallAt: HostTime?
    var stallBeyondQueue: Duration = .zero
    /// Once the clock reaches this, the stream dies and is replaced, as `ALSAOutput` replaces
    /// one that stopped taking frames: its queue is lost, nothing is writable for
    /// `restartGap` (the render thread's waits return empty, a period at a time), then a
    /// fresh stream takes frames, and the restart is counted.
    var restartAt: HostTime?
    var restartGap: Duration = .milliseconds(600)
    private(set) var streamRestartCount = 0
    private var replacedUntil: HostTime?

    init(driftPPM: Double = 0, periodsPerBuffer: Int = NullOutput.defaultPeriodsPerBuffer, start: HostTime = SimulatedDevice.origin) {
        clock = SimulatedHostClock(start: start)
        device = NullOutput(driftPPM: driftPPM, periodsPerBuffer: periodsPerBuffer, hostClock: clock)
        writes.reserveCapacity(2_000)
        samples.reserveCapacity(600_000)
    }

    var now: HostTime { clock.now() }
    var driftPPM: Double { device.driftPPM }
    /// How long one of the device's frames really lasts on the host clock (ns).
    var frameNanoseconds: Double { 1e9 / Double(device.format.sampleRate) / (1 + device.driftPPM / 1e6) }

    var name: String { device.name }
    var format: AudioFormat { device.format }
    var periodFrames: Int { device.periodFrames }
    var relaxedWriteFrames: Int { device.relaxedWriteFrames }
    var isRealtime: Bool { true }
    var underrunCount: Int { device.underrunCount }
    var isTimingSettled: Bool { settlesAt.map { clock.now() >= $0 } ?? true }

    func setTimingPrecision(_ precision: TimingPrecision) { precisionsAsked.append(precision) }
    func open(preferred: AudioFormat) throws(MediaError) { try device.open(preferred: preferred) }

    /// Frames writable now, without waiting (a zero timeout never sleeps).
    private var writableNow: Int { device.waitUntilWritable(frames: device.bufferFrames, timeout: .zero) }

    /// Waiting with nothing to write lets the simulated time run, as real time would.
    func idle(for duration: Duration) {
        clock.advance(by: duration)
    }

    func waitUntilWritable(frames: Int, timeout: Duration) -> Int {
        if let restartAt, clock.now() >= restartAt {
            self.restartAt = nil
            streamRestartCount += 1
            device.flush()
            forgetFramesUnheard()
            replacedUntil = clock.now() + restartGap
        }
        if let until = replacedUntil {
            guard clock.now() >= until else {
                clock.advance(by: min(timeout, ALSAOutput.restartPollInterval, until - clock.now()))
                return 0
            }
            replacedUntil = nil
        }
        if let stallAt, clock.now() >= stallAt {
            self.stallAt = nil
            let queued = device.presentationTimestamp().queuedFrames * frameNanoseconds
            clock.advance(by: .nanoseconds(Int64(queued.rounded(.up))) + stallBeyondQueue)
        }
        let wanted = min(max(frames, device.periodFrames), device.bufferFrames)
        let deadline = clock.now() + timeout
        var free = writableNow
        while free < wanted, clock.now() < deadline {
            // Exactly as long as the missing frames take to play (rounded up, so the device
            // has consumed them when the clock stops): the model's frames are counted whole.
            let missing = Double(wanted - free) * frameNanoseconds
            let step = Duration.nanoseconds(max(1, Int64(missing.rounded(.up))))
            clock.advance(by: min(step, deadline - clock.now()))
            free = writableNow
        }
        return free
    }

    func presentationTimestamp() -> PresentationTimestamp { device.presentationTimestamp() }

    func write(_ samples: UnsafePointer<Float>, frames: Int) -> Int {
        let taken = device.write(samples, frames: frames)
        // Asked once it runs, the device says when the frame after these is heard; its
        // queued frames last their real duration, not the nominal one.
        let after = device.presentationTimestamp().presentation(frameNanoseconds: frameNanoseconds)
        let heardAt = after - .nanoseconds(Int64((Double(taken) * frameNanoseconds).rounded()))
        writes.append(Write(heardAt: heardAt, frames: taken, firstValue: samples[0]))
        let channels = device.format.channels
        for frame in 0..<taken { self.samples.append(samples[frame * channels]) }
        return taken
    }

    /// What the device held is dropped unheard: the truth keeps only the frames heard
    /// before now.
    func flush() {
        device.flush()
        forgetFramesUnheard()
    }

    func close() { device.close() }

    /// Drops, from the writes and the samples, every frame due at or after now.
    private func forgetFramesUnheard() {
        let now = clock.now()
        while let last = writes.last {
            let heard = Int(max(0, (Double((now - last.heardAt).nanosecondsClamped) / frameNanoseconds).rounded(.up)))
            if heard >= last.frames { break }
            samples.removeLast(last.frames - heard)
            if heard == 0 {
                writes.removeLast()
            } else {
                writes[writes.count - 1].frames = heard
            }
        }
    }

    /// Every frame written, as when it is heard and what it holds (first channel).
    var heardFrames: [(host: HostTime, value: Float)] {
        var result: [(host: HostTime, value: Float)] = []
        result.reserveCapacity(samples.count)
        var index = 0
        for write in writes {
            for frame in 0..<write.frames {
                // A plain sum of nanoseconds: a `Duration` added per frame goes through
                // exact 128-bit arithmetic, which over the million frames of six rooms cost
                // more than rendering them (a write's offsets are milliseconds).
                let offset = Int64((Double(frame) * frameNanoseconds).rounded())
                result.append((HostTime(nanoseconds: write.heardAt.nanoseconds &+ offset), samples[index]))
                index += 1
            }
        }
        return result
    }
}

/// A renderer on a `SimulatedDevice`, stepped pass by pass on the test's thread.
final class SimulatedRendering {
    let device: SimulatedDevice
    let ring: AudioRing
    let renderer: AudioRenderer
    /// When set, keeps the ring full of a ramp for this serial before every pass, as a
    /// reader that is never late would: the ramp's value is its item frame over a million.
    var feedSerial: Int?
    /// What the fed content holds at each item frame: the ramp unless a test wants a sound.
    var feedValue: (Int64) -> Float = { SimulatedRendering.rampValue(Double($0)) }
    private var fedFrame: Int64 = 0

    init(device: SimulatedDevice, format: AudioFormat, ring: AudioRing) throws {
        try device.open(preferred: format)
        self.device = device
        self.ring = ring
        renderer = AudioRenderer(output: device, ring: ring)
    }

    /// A renderer whose ring (of `capacity`) is kept full of a ramp of `serial` from item
    /// frame `first` on.
    convenience init(device: SimulatedDevice, format: AudioFormat, feeding serial: Int, from first: Int64 = 0,
                     capacity: Duration = .milliseconds(500)) throws {
        try self.init(device: device, format: format, ring: AudioRing(format: format, capacity: capacity))
        feedSerial = serial
        fedFrame = first
    }

    /// The ramp's value at `frame`: small enough that a Float holds it to a few
    /// hundredths of a frame over a few minutes of 48 kHz.
    static func rampValue(_ frame: Double) -> Float { Float(frame / 1e6) }

    private func feed() {
        guard let serial = feedSerial else { return }
        while let block = ring.nextWritableBlock() {
            for index in 0..<AudioRing.framesPerBlock { block[index] = feedValue(fedFrame + Int64(index)) }
            ring.commitBlock(AudioBlockHeader(serial: serial, itemFrame: fedFrame, frameCount: AudioRing.framesPerBlock, kind: .samples))
            fedFrame += Int64(AudioRing.framesPerBlock)
        }
    }

    /// Runs passes until the device's clock reaches `end`, calling `between` before each.
    func run(until end: HostTime, between: () -> Void = {}) {
        while device.now < end {
            between()
            feed()
            renderer.cycleForTests(1)
        }
    }

    /// Runs passes for `duration` of simulated time.
    func run(for duration: Duration, between: () -> Void = {}) {
        run(until: device.now + duration, between: between)
    }

    /// Runs passes until `condition` holds of the renderer's report, or `limit` of simulated
    /// time passes; returns the last report.
    @discardableResult
    func run(until condition: (RenderStatus) -> Bool, limit: Duration = .seconds(10)) -> RenderStatus {
        let end = device.now + limit
        while !condition(renderer.currentStatus), device.now < end {
            feed()
            renderer.cycleForTests(1)
        }
        return renderer.currentStatus
    }
}
