import Foundation
import MediaClock
import Synchronization

/// The real-time render thread: pulls PCM from an `AudioRing`, places it on the output's
/// timeline as the player asks, and reports when each frame is heard.
///
/// Real-time contract: the loop allocates nothing (its buffer is allocated in `init`), never
/// logs, and meets other threads only through the ring's atomics and two mutexes it takes
/// with `withLockIfAvailable`, so it never waits: a contended control is read next period,
/// a contended status is published next period.
public final class AudioRenderer: @unchecked Sendable {
    /// The longest the thread blocks on the device before re-reading its control, so that
    /// a stop is honoured promptly even if a device hangs.
    static let deviceWaitLimit: Duration = .milliseconds(50)
    /// How long a non-real-time output (a file) sleeps when there is nothing to render yet.
    static let offlineIdleSleepMicroseconds: UInt32 = 1_000
    /// How far the device's timeline may move between periods before the render thread
    /// treats it as broken (an underrun, a device restart). Well above the jitter of a
    /// sound server's latency reports (about a millisecond), well below a 10 ms period.
    /// A scheduled start then skips content to stay on its schedule.
    static let timelineBreakTolerance: Duration = .milliseconds(5)

    public let output: any AudioOutput
    public let ring: AudioRing
    private let control = Mutex(RenderControl())
    private let published = Mutex(RenderStatus())
    private let running = Atomic<Bool>(false)
    private let exited = DispatchSemaphore(value: 0)
    private let buffer: UnsafeMutablePointer<Float>
    private let bufferFrames: Int

    // Render-thread state.
    private var applied = RenderControl(generation: -1)
    private var status = RenderStatus()
    /// Frames already taken from the head block of the ring.
    private var headOffset = 0
    /// The next item frame the content stream expects (while playing).
    private var nextFrame: Int64 = 0
    /// When the frame after the last period written should be presented, if the device
    /// keeps its timeline.
    private var expectedHost: HostTime?

    /// A renderer for an opened `output` reading `ring` (whose format must match the output's).
    public init(output: any AudioOutput, ring: AudioRing) {
        self.output = output
        self.ring = ring
        bufferFrames = max(output.periodFrames, 1)
        buffer = .allocate(capacity: bufferFrames * ring.format.channels)
        buffer.initialize(repeating: 0, count: bufferFrames * ring.format.channels)
    }

    deinit { buffer.deallocate() }

    /// Starts the render thread.
    public func start() {
        guard !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let thread = Thread { [self] in
            RealtimeScheduling.promoteCurrentThread()
            run()
            exited.signal()
        }
        thread.name = "chorus.render"
        thread.qualityOfService = .userInteractive
        thread.start()
    }

    /// Stops the thread and waits for it to leave the device alone.
    public func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        exited.wait()
    }

    /// Posts a new control. Any thread; never blocks the render thread for more than a copy.
    public func update(_ change: (inout RenderControl) -> Void) {
        control.withLock { value in
            change(&value)
            value.generation += 1
        }
    }

    /// The current control (for the player's bookkeeping).
    public var currentControl: RenderControl { control.withLock { $0 } }

    /// The latest report. Any thread.
    public var currentStatus: RenderStatus { published.withLock { $0 } }

    // MARK: - The render thread

    private func run() {
        let channels = ring.format.channels
        let frameNanos = { (frames: Int64) in self.ring.format.nanoseconds(ofFrames: frames) }
        while running.load(ordering: .acquiring) {
            let writable = output.waitUntilWritable(timeout: Self.deviceWaitLimit)
            if let latest = control.withLockIfAvailable({ $0 }), latest.generation != applied.generation {
                apply(latest)
            }
            dropStale()
            if !output.isRealtime && !hasWorkOffline() {
                usleep(Self.offlineIdleSleepMicroseconds)
                continue
            }
            guard writable >= output.periodFrames else { continue }
            let frames = min(bufferFrames, output.periodFrames)
            let host = output.nextFramePresentationTime()
            noticeTimelineBreak(at: host)
            let filled = render(into: buffer, frames: frames, channels: channels, host: host)
            // A device must be fed whole periods (silence pads them); a file takes exactly
            // the frames that would be heard, so a stall or the end adds nothing to it.
            let count = output.isRealtime ? frames : filled
            var offset = 0
            while offset < count && running.load(ordering: .relaxed) {
                let taken = output.write(buffer + offset * channels, frames: count - offset)
                if taken <= 0 { break }
                offset += taken
            }
            status.updatedAt = host + .nanoseconds(frameNanos(Int64(count)))
            expectedHost = status.updatedAt
            publish()
        }
        publish()
    }

    /// After an underrun the device restarts later than the schedule: content that follows
    /// a schedule (a host-time start) must skip ahead rather than play late.
    private func noticeTimelineBreak(at host: HostTime) {
        guard let expected = expectedHost, status.phase == .playing,
              case .play(_, _, .some) = applied.mode else { return }
        let drift = host - expected
        if drift > Self.timelineBreakTolerance || drift < .zero - Self.timelineBreakTolerance {
            status.phase = .stalled
            status.timelineBreaks += 1
        }
    }

    private func publish() {
        let snapshot = status
        _ = published.withLockIfAvailable { $0 = snapshot }
    }

    private func apply(_ latest: RenderControl) {
        let modeChanged = latest.mode != applied.mode
        applied = latest
        status.generation = latest.generation
        if latest.flush {
            output.flush()
            expectedHost = nil
        }
        guard modeChanged else { return }
        status.serial = latest.mode.serial
        switch latest.mode {
        case .idle:
            status.phase = .idle
        case .play(_, let frame, _):
            status.phase = .starting
            nextFrame = frame
        }
    }

    /// A file output renders only when there is something to write: it must not fill the
    /// file with silence while waiting for the decoder.
    private func hasWorkOffline() -> Bool {
        switch status.phase {
        case .idle, .ended, .failed: return false
        case .starting, .playing, .stalled:
            // A scheduled start renders its lead-in silence too, but only once data is there.
            return currentHead() != nil
        }
    }

    /// Drops blocks that belong to an older serial. Serials only grow, so a block of a
    /// newer serial is data the player has asked for but whose control has not reached this
    /// thread yet: it stays, and is not played until it does.
    private func dropStale() {
        while let head = ring.peek(), head.header.serial < applied.mode.serial {
            ring.pop()
            headOffset = 0
        }
    }

    /// The head block if it belongs to the serial being played.
    private func currentHead() -> (header: AudioBlockHeader, samples: UnsafePointer<Float>)? {
        guard let head = ring.peek(), head.header.serial == applied.mode.serial else { return nil }
        return head
    }

    /// Fills `out` with a period; returns how many leading frames are content or scheduled
    /// lead-in (the rest is padding).
    private func render(into out: UnsafeMutablePointer<Float>, frames: Int, channels: Int, host: HostTime) -> Int {
        var filled = 0
        switch status.phase {
        case .idle, .ended, .failed:
            break
        case .starting, .stalled:
            filled = start(into: out, frames: frames, channels: channels, host: host)
        case .playing:
            filled = copyContent(into: out, from: 0, frames: frames, channels: channels, host: host)
        }
        if filled < frames {
            (out + filled * channels).update(repeating: 0, count: (frames - filled) * channels)
        }
        return filled
    }

    /// Places the first content of a start (or a restart after a stall). Returns the frames
    /// filled, silence included.
    private func start(into out: UnsafeMutablePointer<Float>, frames: Int, channels: Int, host: HostTime) -> Int {
        guard case .play(_, let target, let scheduledHost) = applied.mode else { return 0 }
        // The item frame due at the first frame of this period.
        let due: Int64
        if let scheduledHost {
            due = target + ring.format.frames(inNanoseconds: (host - scheduledHost).nanosecondsClamped)
        } else {
            due = status.phase == .stalled ? nextFrame : target
        }
        // Skip content that is already late.
        while let head = currentHead() {
            let header = head.header
            if header.kind != .samples { break }
            let blockStart = header.itemFrame + Int64(headOffset)
            let blockEnd = header.itemFrame + Int64(header.frameCount)
            if blockEnd <= due {
                ring.pop()
                headOffset = 0
                continue
            }
            if blockStart < due { headOffset += Int(due - blockStart) }
            break
        }
        guard let head = currentHead() else { return 0 }
        if head.header.kind != .samples {
            // The item ended (or failed) before any content was due.
            finish(kind: head.header.kind, frame: head.header.itemFrame, host: host)
            ring.pop()
            headOffset = 0
            return 0
        }
        let first = head.header.itemFrame + Int64(headOffset)
        // Frames of silence before `first` is due (0 for an unscheduled start).
        let lead: Int64 = scheduledHost == nil && status.phase == .starting ? 0 : max(0, first - due)
        if lead >= Int64(frames) { return 0 }
        let leadFrames = Int(lead)
        out.update(repeating: 0, count: leadFrames * channels)
        status.phase = .playing
        status.runStartFrame = first
        status.runStartHost = host + .nanoseconds(ring.format.nanoseconds(ofFrames: lead))
        nextFrame = first
        return copyContent(into: out, from: leadFrames, frames: frames, channels: channels, host: host)
    }

    /// Copies continuous content into `out[from..<frames]`; returns where filling stopped.
    private func copyContent(into out: UnsafeMutablePointer<Float>, from: Int, frames: Int, channels: Int, host: HostTime) -> Int {
        var filled = from
        var anchored = false
        let volume = applied.volume
        while filled < frames {
            guard let head = currentHead() else {
                // A file output waits for the decoder instead: nothing is late for a file.
                if output.isRealtime {
                    status.phase = .stalled
                    status.stalls += 1
                }
                return filled
            }
            let header = head.header
            if header.kind != .samples {
                finish(kind: header.kind, frame: nextFrame, host: host + .nanoseconds(ring.format.nanoseconds(ofFrames: Int64(filled))))
                ring.pop()
                headOffset = 0
                return filled
            }
            let available = header.frameCount - headOffset
            let count = min(available, frames - filled)
            let blockFrame = header.itemFrame + Int64(headOffset)
            if !anchored {
                status.anchorFrame = blockFrame
                status.anchorHost = host + .nanoseconds(ring.format.nanoseconds(ofFrames: Int64(filled)))
                anchored = true
            }
            let source = head.samples + headOffset * channels
            let destination = out + filled * channels
            if volume == 1 {
                destination.update(from: source, count: count * channels)
            } else {
                for index in 0..<(count * channels) { destination[index] = source[index] * volume }
            }
            filled += count
            headOffset += count
            nextFrame = blockFrame + Int64(count)
            status.writtenEndFrame = nextFrame
            if headOffset >= header.frameCount {
                ring.pop()
                headOffset = 0
            }
        }
        return filled
    }

    private func finish(kind: AudioBlockKind, frame: Int64, host: HostTime) {
        status.phase = kind == .failure ? .failed : .ended
        status.endFrame = frame
        status.endHost = host
        status.writtenEndFrame = max(status.writtenEndFrame, frame)
    }
}

extension Duration {
    /// Whole nanoseconds, saturating at Int64's range.
    public var nanosecondsClamped: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return product.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}
