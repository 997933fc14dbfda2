import Foundation
import MediaClock
import Synchronization

/// A sound device with no sound: it consumes frames at its own clock's pace and says exactly
/// how many frames are queued ahead of the next one, as a card with a perfect timestamp
/// would.
///
/// Its clock runs `driftPPM` parts per million fast or slow against the host clock, the way
/// a real DAC's crystal does, so clock recovery can be tested on a machine with no card. The
/// model is a FIFO of `bufferFrames` drained from the first write at
/// `sampleRate * (1 + driftPPM / 1e6)` frames per host second; when the FIFO runs dry the
/// device underruns and restarts at the next write, as ALSA does.
// @unchecked: as `AudioOutput` requires, `open` and `close` run while no render thread uses
// the output and everything else on the render thread alone, so the FIFO's state has one
// thread at a time; the underrun count, read anywhere, is atomic.
public final class NullOutput: AudioOutput, @unchecked Sendable {
    /// One period: 10 ms, the common low-latency period of real cards.
    public static let periodDuration: Duration = .milliseconds(10)
    /// Periods in the device buffer by default: the 100 ms `ALSAOutput` asks of a card, so
    /// a render thread held off by a loaded machine underruns here exactly when it would
    /// there (at four periods, a 41 ms stall of the whole machine underran every node).
    public static let defaultPeriodsPerBuffer = Int(ALSAOutput.bufferDuration / periodDuration)

    public let driftPPM: Double
    private let hostClock: any HostClock
    public private(set) var format = AudioFormat.fallback
    public private(set) var periodFrames = 480
    /// Periods the device buffers (a sound server queues ten or more).
    public let periodsPerBuffer: Int
    public var bufferFrames: Int { periodFrames * periodsPerBuffer }
    public let isRealtime = true
    public var name: String { driftPPM == 0 ? "null" : "null:drift=\(driftPPM)" }
    private let underruns = Atomic<Int>(0)
    public var underrunCount: Int { underruns.load(ordering: .relaxed) }

    /// Host time at which the first frame since the last (re)start was presented.
    private var startHost: HostTime?
    /// Frames written since the last (re)start.
    private var writtenFrames: Int64 = 0
    /// The start time promised by `presentationTimestamp()` while stopped: the next
    /// write starts the device exactly then, so the promise holds to the nanosecond.
    private var promisedStart: HostTime?

    public init(driftPPM: Double = 0, periodsPerBuffer: Int = NullOutput.defaultPeriodsPerBuffer,
                hostClock: any HostClock = MonotonicHostClock()) {
        self.driftPPM = driftPPM
        self.periodsPerBuffer = max(2, periodsPerBuffer)
        self.hostClock = hostClock
    }

    public func open(preferred: AudioFormat) throws(MediaError) {
        format = preferred
        periodFrames = Int(preferred.frames(in: Self.periodDuration))
    }

    /// The device's actual frame rate in frames per host second.
    private var actualRate: Double { Double(format.sampleRate) * (1 + driftPPM / 1_000_000) }

    /// Frames consumed by the device at host time `now` since the last start.
    private func consumed(at now: HostTime) -> Int64 {
        guard let startHost else { return 0 }
        let elapsed = Double((now - startHost).components.seconds) + Double((now - startHost).components.attoseconds) / 1e18
        return Int64((elapsed * actualRate).rounded(.down))
    }

    private func queued(at now: HostTime) -> Int64 {
        let remaining = writtenFrames - consumed(at: now)
        if remaining < 0 {
            // Ran dry: the device stopped; the next write restarts it.
            underruns.add(1, ordering: .relaxed)
            startHost = nil
            writtenFrames = 0
            return 0
        }
        return remaining
    }

    /// As many frames as `ALSAOutput` takes at a time in plain play, so a render thread
    /// tested here wakes as it would there.
    public var relaxedWriteFrames: Int {
        min(bufferFrames / 2, max(periodFrames, Int(format.frames(in: ALSAOutput.relaxedWriteDuration))))
    }

    public func waitUntilWritable(frames: Int, timeout: Duration) -> Int {
        let wanted = Int64(min(max(frames, periodFrames), bufferFrames))
        let now = hostClock.now()
        let free = Int64(bufferFrames) - queued(at: now)
        if free >= wanted { return Int(free) }
        let missing = Double(wanted - free)
        let wait = min(missing / actualRate, Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
        largeWriteWake.wait(timeout: .nanoseconds(Int64(wait * 1e9)))
        return max(0, Int(Int64(bufferFrames) - queued(at: hostClock.now())))
    }

    /// Ends the wait for space early (`interruptWait`), as a device's would be.
    private let largeWriteWake = WakeSignal()

    public func interruptWait() { largeWriteWake.signal() }

    public func presentationTimestamp() -> PresentationTimestamp {
        let now = hostClock.now()
        _ = queued(at: now)  // notices an underrun before answering
        guard let startHost else {
            promisedStart = now
            return PresentationTimestamp(host: now, isRunning: false)
        }
        // As a card reports it: what is still queued now, in the device's own frames, exact
        // to a fraction of one. Frame `writtenFrames` leaves when all of them have.
        let elapsed = Double((now - startHost).nanosecondsClamped) / 1e9
        return PresentationTimestamp(host: now, queuedFrames: max(0, Double(writtenFrames) - elapsed * actualRate))
    }

    public func write(_ samples: UnsafePointer<Float>, frames: Int) -> Int {
        let now = hostClock.now()
        _ = queued(at: now)
        if startHost == nil {
            startHost = promisedStart.map { min($0, now) } ?? now
            writtenFrames = 0
        }
        promisedStart = nil
        writtenFrames += Int64(frames)
        return frames
    }

    public func flush() {
        promisedStart = nil
        startHost = nil
        writtenFrames = 0
    }

    public func close() { flush() }
}
