import Foundation
import MediaClock
import Synchronization
import MutexAnnotations

/// The real-time render thread: pulls PCM from an `AudioRing`, places it on the output's
/// timeline as the player asks, and reports when each frame is heard.
///
/// Real-time contract: the loop allocates nothing (its buffer is allocated in `init`), never
/// logs, and meets other threads only through the ring's atomics and two mutexes it takes
/// with `withLockIfAvailable`, so it never waits: a contended control is read next period,
/// a contended status is published next period.
// @unchecked: every var and the buffer belong to the render thread (they are set up in init,
// before it starts); other threads meet it only through `control` and `published` (Mutexes),
// the ring's atomics and `running`.
public final class AudioRenderer: @unchecked Sendable {
    /// The longest the thread blocks on the device before re-reading its control, so that
    /// a stop is honoured promptly even if a device hangs.
    static let deviceWaitLimit: Duration = .milliseconds(50)
    /// How long a non-real-time output (a file) sleeps when there is nothing to render yet.
    static let offlineIdleSleepMicroseconds: UInt32 = 1_000
    /// How long the thread waits while a plain start waits for its first content on a
    /// device emptied by a flush (a seek, a new item): a millisecond, so the content is
    /// written within a millisecond of being decoded. Padding the wait with a write of
    /// silence instead put up to 40 ms of it ahead of the content, heard as seek latency.
    static let emptyDeviceWait: Duration = .milliseconds(1)
    /// Periods a device keeps queued while a start that follows on waits for its first
    /// block: two, so a period written late still finds one playing.
    static let followOnReserve = 2
    /// How far the device's timeline may move between periods before the render thread
    /// treats it as broken (an underrun, a device restart). Well above the jitter of a
    /// sound server's latency reports (about a millisecond), well below a 10 ms period.
    /// A scheduled start then skips content to stay on its schedule.
    static let timelineBreakTolerance: Duration = .milliseconds(5)

    /// A start kept to a schedule waits until the device's rate is known within this (ppm,
    /// one standard error), since the rate is fed forward into the resampling from the start:
    /// 120 ppm is 12 µs over a sound server's 100 ms queue and a drift the acquiring loop
    /// (`acquisitionSpeedup`) pulls in within a quarter of a second (through PulseAudio the
    /// third click after a start was within 25 µs of the other rooms), where learning a
    /// 700 ppm device through the loop's integral instead rang by ±100 µs for two seconds.
    /// An exact device's rate is known within a few periods; PulseAudio's, from the probe's
    /// quick answers, within 120 ppm about 0.3 s after launch (joins 0.52 to 0.53 s; at
    /// 60 ppm 0.64 to 0.77 s, at 30 ppm 0.77 to 1.15 s, with the same p99).
    static let startingRateError = 120.0
    /// The longest a start waits for that (seconds of the device's line): reports too noisy
    /// to pin the rate sooner are left to the soft tier.
    static let startingRateWaitLimit = 3.0
    /// The farthest frame a followed timeline is taken to ask for (2⁶⁰), well inside 64
    /// bits and beyond any item: a start there skips to the end.
    static let farthestFrame = 0x1p60

    public let output: any AudioOutput
    public let ring: AudioRing
    /// Maps the device's real host times to the host clock the player runs on (identity
    /// unless the node simulates another machine's clock).
    private let hostMapping: @Sendable (HostTime) -> HostTime
    /// Host-clock seconds per device-clock second of `hostMapping` (it is linear): a device's
    /// queued frames, learned in the player's time, last this much less in the device's.
    private let hostMappingSlope: Double
    /// A frame's nominal duration (ns) at the ring's rate.
    private let nominalFrameNanoseconds: Double
    /// Where every period's presentation time goes, when capturing.
    private let capture: RenderCapture?
    /// This period's content, copied as it is, ran out partway (`copyContent`): the frames
    /// it filled are what was heard of it, for the capture. (The resampling paths fill a
    /// whole period, silence included, when they run out.)
    private var copyRanOut = false
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
    /// For a start that follows on (`RenderControl.followsOn`): the frame after the last one
    /// written, in the new serial's frames, before which its content is not played.
    private var followOnFloor: Int64?
    /// Whether the last status could not be published (its lock was busy).
    private var publishPending = false
    /// When the frame after the last period written should be presented, if the device
    /// keeps its timeline.
    private var expectedHost: HostTime?
    /// The soft tier's resampler and the state of its control loop (follow mode only).
    private let resampler: FractionalResampler
    private var servo = TimelineServo()
    /// Smooths the device's timing reports (real-time outputs only).
    private var timing: DeviceTimingFilter
    /// A marker block met by the resampler's look-ahead: the stream ends at its frame.
    private var pendingEnd: (kind: AudioBlockKind, frame: Int64)?
    private var pullMisses = 0
    /// The last frames copied as they are (oldest first, `recentCount` of them): the past a
    /// speed change hands the resampler, so the stream goes on through it without a dip.
    private let recent: UnsafeMutablePointer<Float>
    private var recentCount = 0
    /// The last frames the device was given, a ring of `heardCapacity` frames (the newest
    /// ends at `heardEnd`; `heardCount` of them kept): what was heard before a pitch stage is
    /// taken in while playing, the stage's lead (`PitchKeeper.takeIn`), so that its stream
    /// starts at full level. A ring, so that keeping a period costs that period's copy alone.
    private let heardSound: UnsafeMutablePointer<Float>
    /// `heardSound` laid out oldest first, for the stage, when it is taken in.
    private let heardLead: UnsafeMutablePointer<Float>
    private let heardCapacity: Int
    private var heardEnd = 0
    private var heardCount = 0
    /// Frames of the period being rendered already kept in `heardSound`.
    private var heardAhead = 0
    /// The period just rendered changed speed this many frames in, at this item position,
    /// to this rate.
    private var rateChangeSplit: (frames: Int, position: Double, rate: Double)?
    /// Where the rate changed inside the last period written (split by `rateChangeSplit`),
    /// for the next report's `rateSince`: that period's report is anchored at its start.
    private var rateChangedAt: HostTime?
    /// The output's underrun and restart counts when last looked at.
    private var seenUnderruns = 0
    private var seenRestarts = 0
    private var seenSourceChanges = 0
    /// How closely the output was last told its timing is needed.
    private var timingPrecision = TimingPrecision.everyPeriod
    /// The pitch-keeping stages made for this renderer, one per engine: made by `update` (off
    /// the render thread) when a control first asks for one, before the control is posted,
    /// and taken by the render thread with a try-lock. Kept here for the renderer's life, so
    /// the render thread never releases the last reference.
    private let keepers = Mutex<[PitchMode: PitchKeeper]>([:])
    /// The stage the current run goes through, if any, and the rate its pitch is kept for.
    private var keeper: PitchKeeper?
    private var keeperEngaged = false
    private var keeperRate = 1.0
    /// A new mode decides afresh whether its run goes through the stage.
    private var keeperDecisionPending = false
    /// The device holds nothing: it was just opened or flushed, and nothing has been written
    /// to it since. It is not playing, so a plain start may wait for content unheard.
    private var deviceEmpty = true
    /// Frames given to the stage since content stopped: once they cover its delay, all it
    /// held has been heard and it is left.
    private var keeperIdleFrames = 0
    /// A file's frames of the stage's lead-in still to leave out (a file takes exactly the
    /// content, and its clock is its own frame count).
    private var keeperSkip = 0
    /// The period being rendered takes the stage in while content plays (a followed
    /// timeline's speed change, or plain play's rate change): `takeIn` gives the stage its
    /// delay's worth of content at once, so nothing goes silent and nothing is skipped.
    private var takingTheStageIn = false
    /// What the period that took the stage in wrote, for the capture: the frames heard as
    /// they were and the item position and rate they start at, then those of the stage's
    /// stream, which runs on for the stage's delay past the period.
    private var tookInParts: (direct: Int, directPosition: Double, directRate: Double, streamPosition: Double, streamRate: Double)?

    /// A renderer for an opened `output` reading `ring` (whose format must match the output's).
    public init(output: any AudioOutput, ring: AudioRing,
                hostMapping: @escaping @Sendable (HostTime) -> HostTime = { $0 }, capture: RenderCapture? = nil) {
        self.output = output
        self.ring = ring
        self.hostMapping = hostMapping
        let probe = HostTime.now()
        let span: Int64 = 1_000_000_000
        let mapped = Double((hostMapping(probe + .nanoseconds(span)) - hostMapping(probe)).nanosecondsClamped) / Double(span)
        hostMappingSlope = mapped.isFinite && mapped > 0.5 && mapped < 2 ? mapped : 1
        nominalFrameNanoseconds = 1e9 / Double(max(1, ring.format.sampleRate))
        self.capture = capture
        bufferFrames = max(output.periodFrames, output.relaxedWriteFrames, 1)
        buffer = .allocate(capacity: bufferFrames * ring.format.channels)
        buffer.initialize(repeating: 0, count: bufferFrames * ring.format.channels)
        resampler = FractionalResampler(channels: ring.format.channels)
        recent = .allocate(capacity: Self.recentFrames * ring.format.channels)
        recent.initialize(repeating: 0, count: Self.recentFrames * ring.format.channels)
        heardCapacity = Int((Double(ring.format.sampleRate) * Self.heardSeconds).rounded(.up))
        heardSound = .allocate(capacity: heardCapacity * ring.format.channels)
        heardSound.initialize(repeating: 0, count: heardCapacity * ring.format.channels)
        heardLead = .allocate(capacity: heardCapacity * ring.format.channels)
        heardLead.initialize(repeating: 0, count: heardCapacity * ring.format.channels)
        timing = DeviceTimingFilter(sampleRate: ring.format.sampleRate)
    }

    deinit {
        buffer.deallocate()
        recent.deallocate()
        heardSound.deallocate()
        heardLead.deallocate()
    }

    /// Frames of content kept for a speed change: every past tap the resampler has.
    static let recentFrames = FractionalResampler.lookahead - 1
    /// How much of what the device was given is kept for a pitch stage's lead, in seconds:
    /// more than the longest lead an engine takes (Rubber Band's finer engine: 4,096 frames,
    /// 85 ms, at 44.1 and 48 kHz; twice that at twice the rate).
    static let heardSeconds = 0.1

    /// Starts the render thread.
    public func start() {
        guard !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let thread = Thread { [self] in
            if output.wantsRealtimePriority { RealtimeScheduling.promoteCurrentThread() }
            run()
            exited.signal()
        }
        thread.name = "chorus.render"
        thread.qualityOfService = .userInteractive
        thread.start()
    }

    /// Runs `cycles` passes of the loop on the calling thread, for a test that watches what
    /// a pass does (its allocations), instead of on the render thread, which must not be
    /// running.
    func cycleForTests(_ cycles: Int) {
        running.store(true, ordering: .releasing)
        for _ in 0..<cycles { cycle() }
        running.store(false, ordering: .releasing)
    }

    /// Stops the thread and waits for it to leave the device alone.
    public func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        exited.wait()
    }

    /// Posts a new control. Any thread; never blocks the render thread for more than a copy
    /// (it only ever tries the lock). A control asking for a pitch-keeping engine not yet
    /// made has it made first, so the render thread finds it.
    public func update(_ change: (inout RenderControl) -> Void) {
        control.withLockAnnotated { value in
            // A flush the render thread has not yet taken stays asked for: a pause followed at
            // once by a play (which flushes nothing) must still drop what the device holds.
            let flushPending = value.flush
            change(&value)
            value.flush = value.flush || flushPending
            if value.needsPitchKeeping { prepareKeeper(value.pitch) }
            value.generation += 1
        }
        // Plain play sleeps until a large write's worth is free: taken now, a seek or a
        // pause is heard a write sooner.
        output.interruptWait()
    }

    /// Makes the stage for `mode` if there is none yet. Any thread but the render thread.
    public func prepareKeeper(_ mode: PitchMode) {
        guard keepers.withLockAnnotated({ $0[mode] == nil }) else { return }
        let made = PitchKeeper(mode: mode, sampleRate: ring.format.sampleRate, channels: ring.format.channels,
                               maximumFrames: bufferFrames)
        keepers.withLockAnnotated { $0[mode] = $0[mode] ?? made }
    }

    /// The current control (for the player's bookkeeping).
    public var currentControl: RenderControl { control.withLockAnnotated { $0 } }

    /// The latest report. Any thread.
    public var currentStatus: RenderStatus { published.withLockAnnotated { $0 } }

    // MARK: - The render thread

    private func run() {
        while running.load(ordering: .acquiring) { cycle() }
        publish()
    }

    /// One pass of the loop: waits for the device, takes the player's control, and
    /// renders, writes and reports a period (or, in plain play, a few). Allocates nothing
    /// in steady play; `RenderAllocationTests` counts.
    func cycle() {
        let channels = ring.format.channels
        let wanted = timingPrecision == .relaxed ? output.relaxedWriteFrames : output.periodFrames
        let writable = output.waitUntilWritable(frames: wanted, timeout: Self.deviceWaitLimit)
        if let latest = control.withLockIfAvailableAnnotated({ value -> RenderControl in
            // The flush is taken with the control that carries it (see `update`).
            let taken = value
            value.flush = false
            return taken
        }), latest.generation != applied.generation {
            apply(latest)
        }
        dropStale()
        if !output.isRealtime && !hasWorkOffline() {
            // A file's last period may have found the status busy; with nothing more to
            // render, no later period would publish the end, and the player would wait for
            // it for ever.
            if publishPending { publish() }
            usleep(Self.offlineIdleSleepMicroseconds)
            return
        }
        let precision = neededPrecision()
        if precision != timingPrecision {
            timingPrecision = precision
            output.setTimingPrecision(precision)
        }
        let restarts = output.streamRestartCount
        guard writable >= output.periodFrames else {
            // A dead stream being replaced takes nothing for a while: its restart is
            // reported meanwhile, not only once the new stream plays.
            if restarts != status.streamRestarts {
                status.streamRestarts = restarts
                publish()
            }
            return
        }
        status.streamRestarts = restarts
        // A plain start on an empty device waits for its content rather than writing silence
        // that would play ahead of it.
        if deviceEmpty, status.phase == .starting, case .play(_, _, nil) = applied.mode, currentHead() == nil {
            publish()
            output.idle(for: Self.emptyDeviceWait)
            return
        }
        // A start that follows on from what the device still holds (a new sound track, read
        // from the frame after the last one written) waits while the device plays it, rather
        // than queueing silence behind it: silence goes in only once the device is down to
        // `followOnReserve` periods, so it never runs dry.
        if !deviceEmpty, status.phase == .starting, output.isRealtime, currentHead() == nil,
           output.presentationTimestamp().queuedFrames > Double(Self.followOnReserve * output.periodFrames) {
            publish()
            output.idle(for: Self.emptyDeviceWait)
            return
        }
        // Plain play writes whole periods, as many as are free up to the relaxed write;
        // everything kept to a schedule is placed a period at a time.
        let frames = precision == .relaxed
            ? min(bufferFrames, writable / output.periodFrames * output.periodFrames)
            : min(bufferFrames, output.periodFrames)
        // An underrun restarted the device, a dead stream was replaced, or its timing now
        // comes from elsewhere: its timeline moved, and the line must follow.
        let underruns = output.underrunCount
        let sourceChanges = output.timingSourceChanges
        if underruns != seenUnderruns || restarts != seenRestarts || sourceChanges != seenSourceChanges {
            // Reports from another source measured something else (the pulse plugin's
            // interpolation, not the server's figures): the rate they gave is not kept.
            timing.reset(keepingRate: sourceChanges == seenSourceChanges)
            if underruns != seenUnderruns {
                replaceAfterUnderrun(countingBreak: true)
            } else if restarts != seenRestarts {
                replaceAfterUnderrun(countingBreak: false)
            }
            seenUnderruns = underruns
            seenRestarts = restarts
            seenSourceChanges = sourceChanges
        }
        // The device says when it read its state and how many frames it then held ahead
        // of the next one; those play at its own rate, learned on the player's clock by
        // the timing filter (nominal for a file). Counted at the nominal rate, a sound
        // server's 100 ms would misplace every period by 10 µs per 100 ppm of the device's.
        let timestamp = output.presentationTimestamp()
        let mapped = PresentationTimestamp(host: hostMapping(timestamp.host), queuedFrames: timestamp.queuedFrames,
                                           isRunning: timestamp.isRunning)
        let frameNanoseconds = nominalFrameNanoseconds * (output.isRealtime ? timing.frameDurationRatio : 1)
        let reported = mapped.presentation(frameNanoseconds: frameNanoseconds)
        // The same moment on the device's own clock, for the capture.
        let deviceHost = timestamp.presentation(frameNanoseconds: frameNanoseconds / hostMappingSlope)
        noticeTimelineBreak(at: reported)
        // A file's clock is exact already; a device's reports jitter.
        let deviceFirstHeard = output.isRealtime ? timing.filter(mapped, frames: frames) : reported
        // Content through the pitch-keeping stage is heard its delay later than the period's
        // first frame: it is placed for then.
        let keeperDelay = pitchKeepingDelay(frames: frames, frameNanoseconds: frameNanoseconds, heard: deviceFirstHeard)
        let host = deviceFirstHeard + keeperDelay
        let tookIn = takingTheStageIn
        copyRanOut = false
        let filled = if tookIn {
            renderTakingTheStageIn(heard: deviceFirstHeard, frames: frames, channels: channels)
        } else {
            render(into: buffer, frames: frames, channels: channels, host: host)
        }
        // A period whose content ran out partway (the reader behind: it stalled) is heard
        // too, up to where its content ended.
        let stalledWithContent = status.phase == .stalled && filled > 0 && !tookIn && copyRanOut
        if let capture, status.phase == .playing || status.phase == .ended || status.phase == .failed || stalledWithContent {
            let contentDeviceHost = deviceHost + .nanoseconds(Int64((Double(keeperDelay.nanosecondsClamped) / hostMappingSlope).rounded()))
            // The content position of this period's first frame: the anchor projected
            // back to the period start when content began partway through it.
            let lead = Double((status.anchorHost - host).nanosecondsClamped) * Double(ring.format.sampleRate) / 1e9
                * status.anchorRate
            let smoothing = deviceFirstHeard.nanoseconds &- reported.nanoseconds
            let captured = output.isRealtime && !stalledWithContent ? frames : filled
            if tookIn, let parts = tookInParts, let keeper {
                // The frames before the stage's stream are heard as they were written; the
                // stream from them on, through the content rendered for the stage's delay,
                // which the next period's row (its delay on) carries on from.
                if parts.direct > 0 {
                    capture.record(hostNanoseconds: deviceHost.nanoseconds, smoothedNanoseconds: deviceHost.nanoseconds &+ smoothing,
                                   position: parts.directPosition, frames: parts.direct,
                                   sampleRate: ring.format.sampleRate, serial: applied.mode.serial, rate: parts.directRate)
                }
                let stream = deviceHost + .nanoseconds(Int64((Double(parts.direct) * frameNanoseconds / hostMappingSlope).rounded()))
                capture.record(hostNanoseconds: stream.nanoseconds, smoothedNanoseconds: stream.nanoseconds &+ smoothing,
                               position: parts.streamPosition, frames: frames - parts.direct + keeper.latencyFrames,
                               sampleRate: ring.format.sampleRate, serial: applied.mode.serial, rate: parts.streamRate)
            } else if let split = rateChangeSplit, split.frames < captured {
                // A period that changed speed partway is recorded as its two parts, so a
                // reader interpolating between rows never reads across two speeds.
                let second = contentDeviceHost + .nanoseconds(Int64((Double(split.frames) * frameNanoseconds / hostMappingSlope).rounded()))
                capture.record(hostNanoseconds: contentDeviceHost.nanoseconds, smoothedNanoseconds: contentDeviceHost.nanoseconds &+ smoothing,
                               position: status.anchorPosition - lead, frames: split.frames,
                               sampleRate: ring.format.sampleRate, serial: applied.mode.serial, rate: status.anchorRate)
                capture.record(hostNanoseconds: second.nanoseconds, smoothedNanoseconds: second.nanoseconds &+ smoothing,
                               position: split.position, frames: captured - split.frames,
                               sampleRate: ring.format.sampleRate, serial: applied.mode.serial, rate: split.rate)
            } else {
                capture.record(hostNanoseconds: contentDeviceHost.nanoseconds, smoothedNanoseconds: contentDeviceHost.nanoseconds &+ smoothing,
                               position: status.anchorPosition - lead, frames: captured,
                               sampleRate: ring.format.sampleRate, serial: applied.mode.serial, rate: status.anchorRate)
            }
        }
        let split = rateChangeSplit
        rateChangeSplit = nil
        // A device must be fed whole periods (silence pads them); a file takes exactly
        // the frames that would be heard, so a stall or the end adds nothing to it.
        var first = 0
        var count = output.isRealtime ? frames : filled
        if keeperEngaged, !tookIn, let keeper {
            if case .follow(_, let timeline) = applied.mode, let split, split.frames > 0, split.frames < count {
                // A followed speed change inside the period changes the scale at its frame,
                // not at the period's edge: every room then shifts the same content by the
                // same scale, whatever its periods (the stage's output does not depend on
                // how its input was cut).
                keeper.process(buffer, frames: split.frames, rate: timeline.speedBefore)
                keeper.process(buffer + split.frames * channels, frames: count - split.frames, rate: timeline.speed)
                keeperRate = timeline.speed
            } else {
                keeper.process(buffer, frames: count, rate: keeperRate)
            }
            if !output.isRealtime {
                first = min(keeperSkip, count)
                keeperSkip -= first
                count -= first
            }
        }
        write(buffer + first * channels, frames: count)
        if count > 0 { deviceEmpty = false }
        if output.isRealtime {
            // (Frames kept already, the direct ones of a period that took the stage in, are
            // not kept twice.)
            keepHeard(buffer + (first + heardAhead) * channels, frames: count - heardAhead)
        }
        heardAhead = 0
        if !output.isRealtime, keeperEngaged, status.phase == .ended || status.phase == .failed {
            flushKeeperIntoFile()
        }
        let periodLength = Duration.nanoseconds(ring.format.nanoseconds(ofFrames: Int64(count)))
        // The device's own timeline for the next period, and when the content written so far
        // has been heard (later by the pitch stage's delay, when content goes through it).
        expectedHost = deviceFirstHeard + periodLength
        status.updatedAt = host + periodLength
        publish()
    }

    /// Writes `frames` frames to the output, as far as it takes them.
    private func write(_ source: UnsafeMutablePointer<Float>, frames: Int) {
        var offset = 0
        while offset < frames && running.load(ordering: .relaxed) {
            let taken = output.write(source + offset * ring.format.channels, frames: frames - offset)
            if taken <= 0 { break }
            offset += taken
        }
    }

    // MARK: - Keeping the pitch

    /// Decides whether this period goes through the pitch-keeping stage, and returns the
    /// delay that adds (zero for a file, whose output is trimmed of the stage's lead-in
    /// instead). A run starts through it when its speed is not 1 and its pitch is to be
    /// kept; a run playing at 1 takes it in when its speed changes (`takeIn`: no gap, nothing
    /// skipped). Once in, it stays in (at scale 1 back at speed 1) until the next start.
    private func pitchKeepingDelay(frames: Int, frameNanoseconds: Double, heard: HostTime) -> Duration {
        takingTheStageIn = false
        let wanted = applied.needsPitchKeeping
        if case .follow(_, let timeline) = applied.mode {
            followedKeeperDecision(timeline: timeline, wanted: wanted && output.isRealtime, frames: frames,
                                   frameNanoseconds: frameNanoseconds, heard: heard)
        } else {
            plainKeeperDecision(wanted: wanted, frames: frames)
        }
        guard keeperEngaged, output.isRealtime, let keeper else { return .zero }
        return .nanoseconds(Int64((Double(keeper.latencyFrames) * frameNanoseconds).rounded()))
    }

    /// Plain play (and a plain host-time start, which keeps no pitch): the control's rate is
    /// the speed whose pitch is kept.
    private func plainKeeperDecision(wanted: Bool, frames: Int) {
        let rate = applied.rate
        keeperRate = rate
        if keeperDecisionPending {
            keeperDecisionPending = false
            keeperEngaged = false
            if wanted { engageKeeper(rate: rate) }
        } else if keeperEngaged {
            if applied.pitch == .varispeed || keeper?.mode != applied.pitch {
                keeperEngaged = false
                if wanted { engageKeeper(rate: rate, whilePlaying: status.phase == .playing) }
            } else {
                noteKeeperIdle(frames: frames)
            }
        } else if wanted, status.phase == .playing || status.phase == .stalled || status.phase == .starting {
            engageKeeper(rate: rate, whilePlaying: status.phase == .playing)
        }
    }

    /// A followed run: the timeline's speeds (without the clock's rate) are kept. A run placed
    /// afresh (a start, a restart after a stall or a resync) goes through the stage from its
    /// first content when its speed is not 1. A run playing at 1 takes it in in the period of
    /// its timeline's change to another speed, with the stage's stream starting at the
    /// change's frame: every room's stage then starts at the same content, so its grains fall
    /// on the same content, and so does what it gives, whatever the rooms' periods. Once in,
    /// the scale changes at each change's frame.
    private func followedKeeperDecision(timeline: RenderTimeline, wanted: Bool, frames: Int,
                                        frameNanoseconds: Double, heard: HostTime) {
        if keeperDecisionPending {
            keeperDecisionPending = false
            keeperEngaged = false
        }
        if keeperEngaged {
            if applied.pitch == .varispeed || keeper?.mode != applied.pitch || !output.isRealtime {
                // Left: content is heard the stage's delay earlier, and the loop places it
                // again.
                keeperEngaged = false
            } else {
                noteKeeperIdle(frames: frames)
            }
        }
        if !keeperEngaged, wanted {
            switch status.phase {
            case .starting, .stalled:
                if timeline.speed(at: heard) != 1 { engageKeeper(rate: timeline.speed(at: heard)) }
            case .playing:
                let periodEnd = heard + .nanoseconds(Int64((Double(frames) * frameNanoseconds).rounded()))
                if timeline.speed != 1, timeline.host < periodEnd, pendingEnd == nil {
                    engageKeeper(rate: timeline.speed, whilePlaying: true)
                }
            case .idle, .ended, .failed:
                break
            }
        }
        if keeperEngaged, let keeper {
            // The speed of the content given to the stage this period (placed its delay on).
            let placed = heard + .nanoseconds(Int64((Double(keeper.latencyFrames) * frameNanoseconds).rounded()))
            keeperRate = timeline.speed(at: placed)
        }
    }

    /// Counts the frames given to the stage once content has stopped, and leaves it when
    /// they cover its delay (all it held has been heard).
    private func noteKeeperIdle(frames: Int) {
        if output.isRealtime, status.phase == .idle || status.phase == .ended || status.phase == .failed {
            keeperIdleFrames += frames
            if keeperIdleFrames >= (keeper?.latencyFrames ?? 0) + frames { keeperEngaged = false }
        } else {
            keeperIdleFrames = 0
        }
    }

    /// The period in which a playing run takes the stage in (`heard` is when its first frame
    /// is heard). A followed speed change keeps the frames before its frame as they are, and
    /// the stage's stream starts at that frame; plain play's whole period goes through the
    /// stage. `PitchKeeper.takeIn` then has the content after the period rendered for the
    /// stage's delay, each piece for when it would be heard. Returns the frames filled.
    private func renderTakingTheStageIn(heard: HostTime, frames: Int, channels: Int) -> Int {
        var direct = 0
        if case .follow(_, let timeline) = applied.mode {
            // The frames wholly before the change, as `followContent` splits a period.
            direct = min(frames, max(0, Int(framesUntil(timeline.host, from: heard).rounded(.down))))
        }
        let directFilled = direct > 0 ? render(into: buffer, frames: direct, channels: channels, host: heard) : 0
        let (directPosition, directRate) = (status.anchorPosition, status.anchorRate)
        let streamHost = heard + .nanoseconds(ring.format.nanoseconds(ofFrames: Int64(direct)))
        tookInParts = nil
        guard status.phase == .playing, pendingEnd == nil, let keeper else {
            // The run ended, failed or ran dry meanwhile: it is placed afresh (through the
            // stage) when it starts again; what was rendered is heard as it is.
            keeperEngaged = false
            guard direct < frames else { return directFilled }
            let rest = render(into: buffer + direct * channels, frames: frames - direct, channels: channels, host: streamHost)
            return rest > 0 ? direct + rest : directFilled
        }
        if direct < frames {
            _ = render(into: buffer + direct * channels, frames: frames - direct, channels: channels, host: streamHost)
        }
        tookInParts = (direct, directPosition, directRate, status.anchorPosition, status.anchorRate)
        rateChangeSplit = nil
        // The stage's lead: what the device was given before, then the period's direct frames.
        keepHeard(buffer, frames: direct)
        heardAhead = direct
        let leadFrames = layOutHeard()
        keeper.takeIn(buffer, frames: frames, direct: direct, rate: keeperRate, lead: heardLead, leadFrames: leadFrames) { destination, offset, count in
            let host = heard + .nanoseconds(ring.format.nanoseconds(ofFrames: Int64(offset)))
            _ = render(into: destination, frames: count, channels: channels, host: host)
        }
        return frames
    }

    /// Sends the run through the stage for `applied.pitch`, started afresh for `rate`; a run
    /// `whilePlaying` takes it in this period without a gap (`renderTakingTheStageIn`).
    private func engageKeeper(rate: Double, whilePlaying: Bool = false) {
        let mode = applied.pitch
        if keeper?.mode != mode {
            // Made before the control was posted; a contended lock is tried again next period.
            guard let found = keepers.withLockIfAvailableAnnotated({ $0[mode] }), let found else { return }
            keeper = found
        }
        guard let keeper else { return }
        takingTheStageIn = whilePlaying && output.isRealtime && bufferFrames <= keeper.maximumFrames
        // Taking it in starts it afresh itself (`PitchKeeper.takeIn`).
        if !takingTheStageIn { keeper.reset(rate: rate) }
        keeperEngaged = true
        keeperIdleFrames = 0
        keeperSkip = output.isRealtime ? 0 : keeper.latencyFrames
    }

    /// A file's item ended with content still inside the stage: the stage is given silence
    /// until all of it is out, and that goes into the file, which then holds exactly the
    /// content. The stage is then left.
    private func flushKeeperIntoFile() {
        guard let keeper else { return }
        let channels = ring.format.channels
        var owed = keeper.latencyFrames - keeperSkip
        while owed > 0 && running.load(ordering: .relaxed) {
            let count = min(owed, bufferFrames)
            buffer.update(repeating: 0, count: count * channels)
            keeper.process(buffer, frames: count, rate: keeperRate)
            let skipped = min(keeperSkip, count)
            keeperSkip -= skipped
            write(buffer + skipped * channels, frames: count - skipped)
            owed -= count
        }
        keeperEngaged = false
    }

    /// Plain play (content as soon as it is there, nothing recorded) needs the device's
    /// timing only to report the position, so the device may be written in larger, rarer
    /// pieces and measure itself less often. A schedule, a followed timeline or a capture
    /// needs it every period, and so does idling: a schedule may come at any moment, and
    /// the device's timing must be settled for it.
    private func neededPrecision() -> TimingPrecision {
        guard capture == nil, output.isRealtime, case .play(_, _, nil) = applied.mode else { return .everyPeriod }
        return .relaxed
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

    /// The device ran dry and restarted: its silence already moved everything after it
    /// late by the gap. Content kept to a schedule (a host-time start, a followed timeline)
    /// is placed afresh on the restarted device, skipping what the gap swallowed, as at a
    /// start: the soft tier would take seconds at its limit to pull in a gap of a
    /// millisecond, and the hard tier would count a device fault as the loop losing track.
    /// An unscheduled play just carries on. A replaced stream (`countingBreak` false) is
    /// handled the same way and counted by the output alone.
    private func replaceAfterUnderrun(countingBreak: Bool) {
        guard status.phase == .playing else { return }
        switch applied.mode {
        case .follow, .play(_, _, .some):
            status.phase = .stalled
            if countingBreak { status.timelineBreaks += 1 }
            resampler.reset()
        case .idle, .play(_, _, nil):
            break
        }
    }

    /// Publishes the status if the lock is free; if not, `publishPending` says so, and a pass
    /// with nothing to render publishes it then.
    private func publish() {
        let snapshot = status
        publishPending = published.withLockIfAvailableAnnotated { $0 = snapshot } == nil
    }

    /// Holds the published status's lock while `body` runs: a test's stand-in for a player
    /// reading the status whenever the render thread publishes.
    func holdingStatusForTests(_ body: () -> Void) {
        published.withLockAnnotated { _ in body() }
    }

    private func apply(_ latest: RenderControl) {
        let modeChanged = latest.mode != applied.mode
        let previous = applied.mode
        applied = latest
        // A new timeline for the serial already followed is a clock update (or a rate change
        // continuing it): keep playing and let the control loop move onto it. A run that has
        // ended (or failed) stays so: its content is all written, and going back to
        // `.starting` would hide the end from the player, which looks for it on its next tick
        // and would then never pause at the item's end or start.
        if case .follow(let oldSerial, _) = previous, case .follow(let newSerial, _) = latest.mode,
           oldSerial == newSerial, !latest.flush,
           status.phase == .playing || status.phase == .starting || status.phase == .ended || status.phase == .failed {
            status.generation = latest.generation
            return
        }
        status.generation = latest.generation
        // Nothing but silence is queued while idle: flushing it would only restart the
        // device's stream (a sound server's timing reports are at their worst for seconds
        // after), and a start placed by the device's timing needs no flush.
        if latest.flush && status.phase != .idle {
            output.flush()
            // What was queued is not heard: a later stage's lead starts afresh.
            heardCount = 0
            deviceEmpty = true
            expectedHost = nil
            timing.reset()
            keeperDecisionPending = true
        }
        guard modeChanged else { return }
        keeperDecisionPending = true
        followOnFloor = nil
        status.serial = latest.mode.serial
        switch latest.mode {
        case .idle:
            status.phase = .idle
        case .play(_, let frame, let host):
            status.phase = .starting
            nextFrame = frame
            // What this thread wrote since the player read where its writing stood is not
            // written again.
            if host == nil, !latest.flush, let on = latest.followsOn, on.serial == previous.serial {
                followOnFloor = status.writtenEndFrame - on.frameShift
            }
        case .follow(_, let timeline):
            status.phase = .starting
            nextFrame = timeline.frame
            status.hardResyncs = 0
            servo.reset()
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
            if case .follow(_, let timeline) = applied.mode {
                filled = followContent(into: out, from: 0, frames: frames, channels: channels, host: host, timeline: timeline)
            } else if applied.rate != 1 || resampler.isPrimed {
                // A rate other than 1 reads the content through the resampler; once a run
                // has gone through it, it stays there (at rate 1 it interpolates at its
                // phase), since leaving it would drop the fraction of a frame it stands at.
                if !resampler.isPrimed {
                    resampler.prime(at: nextFrame, past: recent, pastFrames: recentCount) { pullFrame(into: $0) }
                }
                let rate = Self.boundedRate(applied.rate)
                filled = resampledContent(into: out, from: 0, frames: frames, channels: channels, host: host,
                                          ratio: rate, anchorRate: rate)
            } else {
                filled = copyContent(into: out, from: 0, frames: frames, channels: channels, host: host)
            }
        }
        if filled < frames {
            (out + filled * channels).update(repeating: 0, count: (frames - filled) * channels)
        }
        return filled
    }

    /// Whether a plain start (or restart after a stall) has the sound it asked to wait for
    /// (`RenderControl.startBufferFrames`, `resumeBufferFrames`): enough of it queued, a
    /// full ring, or the reader finished (its marker is in the ring). A file output never
    /// stalls in real time and never waits.
    private func hasBufferedEnough(afterStall: Bool) -> Bool {
        let wanted = afterStall ? applied.resumeBufferFrames : applied.startBufferFrames
        guard wanted > 0, output.isRealtime else { return true }
        let queued = ring.queuedBlocks
        if queued * AudioRing.framesPerBlock >= wanted || queued >= ring.blockCount - 1 { return true }
        if let newest = ring.newestHeader, newest.kind != .samples { return true }
        return false
    }

    /// Places the first content of a start (or a restart after a stall). Returns the frames
    /// filled, silence included.
    private func start(into out: UnsafeMutablePointer<Float>, frames: Int, channels: Int, host: HostTime) -> Int {
        // The item frame due at the first frame of this period, and whether content must
        // keep to a schedule (then early content waits and late content is skipped).
        let due: Int64
        let scheduled: Bool
        var timeline: RenderTimeline?
        switch applied.mode {
        case .play(_, _, .some), .follow:
            // A start kept to a schedule waits (in silence) for the device's settled timing:
            // a sound server's own figures can move the timeline by milliseconds from the
            // plugin's, and a move after the start is a skip or seconds of pull.
            guard output.isTimingSettled else { return 0 }
            // Following a timeline also waits for the device's rate to be known (a sound
            // server's reports take a second or so to pin it): it is fed forward into the
            // resampling from the first frame. A plain scheduled start copies frames as they
            // are and needs no rate; a lone player's start need not wait (`waitsForDeviceRate`).
            if case .follow = applied.mode, applied.waitsForDeviceRate, output.isRealtime,
               timing.rateStandardErrorPPM > Self.startingRateError,
               timing.age < Self.startingRateWaitLimit { return 0 }
        case .play(_, _, nil):
            guard hasBufferedEnough(afterStall: status.phase == .stalled) else { return 0 }
        case .idle:
            break
        }
        switch applied.mode {
        case .idle:
            return 0
        case .play(_, let target, let scheduledHost?):
            // Frames of the item pass at the playback rate for every frame heard.
            let heard = Double(ring.format.frames(inNanoseconds: (host - scheduledHost).nanosecondsClamped))
            let item = (heard * Self.boundedRate(applied.rate)).rounded()
            due = target + Int64(min(max(item, -Self.farthestFrame), Self.farthestFrame))
            scheduled = true
        case .play(_, let target, nil):
            due = status.phase == .stalled ? nextFrame : max(target, followOnFloor ?? target)
            scheduled = false
        case .follow(_, let followed):
            // Bounded before it becomes an integer: a timeline from outside (a group's State)
            // must not be able to trap the render thread.
            let dueFrame = followed.due(at: host, sampleRate: ring.format.sampleRate)
            due = dueFrame.isNaN ? 0 : Int64(min(max(dueFrame, -Self.farthestFrame), Self.farthestFrame).rounded())
            scheduled = true
            timeline = followed
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
            // The item ended (or failed) before any content was due (a seek to its end): the
            // run stands at its end, and what it reports says so, not the run before it.
            let end = head.header.itemFrame
            status.runStartFrame = end
            status.runStartHost = host
            status.anchorFrame = end
            status.anchorPosition = Double(end)
            status.anchorHost = host
            finish(kind: head.header.kind, frame: end, host: host)
            ring.pop()
            headOffset = 0
            return 0
        }
        let first = head.header.itemFrame + Int64(headOffset)
        status.item = head.header.item
        // Frames of silence heard before `first` is due (0 for an unscheduled start): the
        // item frames still to wait, at the rate they pass.
        let startRate = timeline.map { Self.boundedRate($0.rate(at: host)) } ?? Self.boundedRate(applied.rate)
        let lead: Int64 = !scheduled && status.phase == .starting ? 0
            : Int64((Double(max(0, first - due)) / startRate).rounded())
        if lead >= Int64(frames) { return 0 }
        let leadFrames = Int(lead)
        out.update(repeating: 0, count: leadFrames * channels)
        status.phase = .playing
        status.runStartFrame = first
        status.runStartHost = host + .nanoseconds(ring.format.nanoseconds(ofFrames: lead))
        nextFrame = first
        resampler.reset()
        recentCount = 0
        if let timeline {
            pendingEnd = nil
            servo.contentStarted(at: status.runStartHost, on: timeline)
            resampler.prime(at: first) { pullFrame(into: $0) }
            let leadHost = host + .nanoseconds(ring.format.nanoseconds(ofFrames: lead))
            return followContent(into: out, from: leadFrames, frames: frames, channels: channels, host: leadHost, timeline: timeline)
        }
        if applied.rate != 1 {
            pendingEnd = nil
            resampler.prime(at: first) { pullFrame(into: $0) }
            let leadHost = host + .nanoseconds(ring.format.nanoseconds(ofFrames: lead))
            let rate = Self.boundedRate(applied.rate)
            return resampledContent(into: out, from: leadFrames, frames: frames, channels: channels, host: leadHost,
                                    ratio: rate, anchorRate: rate)
        }
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
                    copyRanOut = true
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
            status.item = header.item
            if !anchored {
                status.anchorFrame = blockFrame
                status.anchorPosition = Double(blockFrame)
                status.anchorHost = host + .nanoseconds(ring.format.nanoseconds(ofFrames: Int64(filled)))
                setAnchorRate(1, since: status.anchorHost)
                anchored = true
            }
            let source = head.samples + headOffset * channels
            let destination = out + filled * channels
            if volume == 1 {
                destination.update(from: source, count: count * channels)
            } else {
                for index in 0..<(count * channels) { destination[index] = source[index] * volume }
            }
            remember(source, frames: count, channels: channels)
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

    /// Keeps the last `recentFrames` of content copied, `source` being the newest `frames`.
    private func remember(_ source: UnsafePointer<Float>, frames: Int, channels: Int) {
        let capacity = Self.recentFrames
        if frames >= capacity {
            recent.update(from: source + (frames - capacity) * channels, count: capacity * channels)
            recentCount = capacity
            return
        }
        let kept = min(recentCount, capacity - frames)
        // Slide the newest `kept` down to the front, then append.
        recent.update(from: recent + (recentCount - kept) * channels, count: kept * channels)
        (recent + kept * channels).update(from: source, count: frames * channels)
        recentCount = kept + frames
    }

    /// Keeps what the device was given to play, `source` being the newest `frames`: the lead a
    /// pitch stage taken in is given (`heardSound`).
    private func keepHeard(_ source: UnsafePointer<Float>, frames: Int) {
        guard frames > 0 else { return }
        let channels = ring.format.channels
        let kept = min(frames, heardCapacity)
        var from = source + (frames - kept) * channels
        var left = kept
        while left > 0 {
            let chunk = min(left, heardCapacity - heardEnd)
            (heardSound + heardEnd * channels).update(from: from, count: chunk * channels)
            heardEnd = (heardEnd + chunk) % heardCapacity
            from += chunk * channels
            left -= chunk
        }
        heardCount = min(heardCapacity, heardCount + kept)
    }

    /// Lays out what `heardSound` keeps, oldest first, in `heardLead`; returns how many frames.
    private func layOutHeard() -> Int {
        let channels = ring.format.channels
        let start = (heardEnd - heardCount + heardCapacity) % heardCapacity
        let first = min(heardCount, heardCapacity - start)
        heardLead.update(from: heardSound + start * channels, count: first * channels)
        (heardLead + first * channels).update(from: heardSound, count: (heardCount - first) * channels)
        return heardCount
    }

    /// Whether the player has posted a control that changes what is to be played (another
    /// mode, a flush, another rate), for a file's wait for the decoder: a volume set while it
    /// waited (a player applies its volume again once the item is announced ready) used to
    /// end the wait, and the file took silence where content belonged. A file output only.
    private func controlMovesContent() -> Bool {
        guard let latest = control.withLockIfAvailableAnnotated({ $0 }), latest.generation != applied.generation else { return false }
        return latest.mode != applied.mode || latest.flush || latest.rate != applied.rate
    }

    /// Takes one frame from the ring for the resampler; false (and silence) when there is
    /// none: at a marker, which is remembered, or when the ring is dry.
    private func pullFrame(into destination: UnsafeMutablePointer<Float>) -> Bool {
        let channels = ring.format.channels
        // A file is never late: its resampled content waits for the decoder (as a copy
        // does) instead of taking silence, unless the player has moved on or stops.
        if !output.isRealtime, pendingEnd == nil {
            while currentHead() == nil, running.load(ordering: .relaxed), !controlMovesContent() {
                usleep(Self.offlineIdleSleepMicroseconds)
            }
        }
        guard pendingEnd == nil, let head = currentHead() else {
            if pendingEnd == nil { pullMisses += 1 }
            return false
        }
        let header = head.header
        if header.kind != .samples {
            pendingEnd = (header.kind, header.itemFrame)
            ring.pop()
            headOffset = 0
            return false
        }
        destination.update(from: head.samples + headOffset * channels, count: channels)
        status.item = header.item
        headOffset += 1
        if headOffset >= header.frameCount {
            ring.pop()
            headOffset = 0
        }
        return true
    }

    /// Plays content on `timeline` through the resampler, correcting toward it: the dead
    /// band, the soft tier (a PI loop on the filtered error, bounded in ppm) and the hard
    /// tier (a restart that skips or pads to the timeline). `host` is when `out[from]` is
    /// heard. Returns the frames filled.
    private func followContent(into out: UnsafeMutablePointer<Float>, from: Int, frames: Int, channels: Int,
                               host: HostTime, timeline: RenderTimeline) -> Int {
        let rate = ring.format.sampleRate
        let position = Double(resampler.centerFrame) + resampler.phase
        let error = (timeline.due(at: host, sampleRate: rate) - position) / Double(rate)
        status.timelineError = Self.duration(seconds: error)
        let correction: Double
        switch servo.step(error: error, at: host, timeline: timeline, sampleRate: rate) {
        case .resync:
            status.hardResyncs += 1
            status.phase = .stalled
            resampler.reset()
            return start(into: out, frames: frames, channels: channels, host: host - .nanoseconds(ring.format.nanoseconds(ofFrames: Int64(from))))
        case .correct(let ppm):
            correction = ppm
        }
        // The device's own rate, learned by the timing filter, is fed forward: the loop then
        // corrects only what the line's estimate leaves, instead of learning a crystal's
        // offset through its integral while the error builds (and then counting it twice as
        // the estimate firms up). A start waited until the rate was known within
        // `startingRateError`, and the estimate only firms up from there.
        let deviceRatio = output.isRealtime ? timing.frameDurationRatio : 1
        let gear = deviceRatio * (1 + correction / 1e6)
        status.correctionPPM = (gear - 1) * 1e6
        // A rate change scheduled inside this period (the timeline's rate before its anchor
        // differs from after): the frames before the change are read at the old rate.
        let periodNanoseconds = Double(ring.format.nanoseconds(ofFrames: Int64(frames - from)))
        let untilChange = Double((timeline.host - host).nanosecondsClamped)
        let playbackRate = timeline.rate(at: host)
        if timeline.rateBefore != timeline.rate, untilChange > 0, untilChange < periodNanoseconds {
            // The frames before the change are read at the old rate, the frame it falls in at
            // both rates in proportion, and the rest at the new rate: from the next frame on
            // the item is exactly where the timeline puts it, so the loop has nothing to pull
            // in (a frame read wholly at either rate moved it by up to a frame times the
            // change of rate, 31 µs from 2 to 0.5, in a direction set by where each room's
            // periods fell, and rooms keeping the pitch then gave their stages content a
            // frame apart for the following second).
            let exact = framesUntil(timeline.host, from: host)
            let before = min(Int(exact.rounded(.down)), frames - from - 1)
            let inFrame = min(max(exact - Double(before), 0), 1)
            let blended = Self.boundedRate((timeline.rateBefore * inFrame + timeline.rate * (1 - inFrame)) * gear)
            var anchorBefore: (frame: Int64, position: Double, host: HostTime, rate: Double)?
            if before > 0 {
                let filled = resampledContent(into: out, from: from, frames: from + before, channels: channels, host: host,
                                              ratio: Self.boundedRate(timeline.rateBefore * gear), anchorRate: timeline.rateBefore)
                guard status.phase == .playing else { return filled }
                anchorBefore = (status.anchorFrame, status.anchorPosition, status.anchorHost, status.anchorRate)
            }
            let changeHost = host + .nanoseconds(ring.format.nanoseconds(ofFrames: Int64(before)))
            let rest = resampledContent(into: out, from: from + before, frames: frames, channels: channels, host: changeHost,
                                        ratio: Self.boundedRate(timeline.rate * gear), anchorRate: timeline.rate,
                                        firstFrameRatio: blended)
            if let anchorBefore {
                rateChangeSplit = (from + before, status.anchorPosition, status.anchorRate)
                // The period's report is anchored at its first frame; the next one says the
                // new rate took effect at the change.
                if status.phase == .playing {
                    (status.anchorFrame, status.anchorPosition, status.anchorHost, status.anchorRate) = anchorBefore
                    rateChangedAt = changeHost
                }
            }
            return rest
        }
        return resampledContent(into: out, from: from, frames: frames, channels: channels, host: host,
                                ratio: Self.boundedRate(playbackRate * gear), anchorRate: playbackRate)
    }

    /// Frames (nominal, fractional) from `host` until `change`: where in a period a followed
    /// rate change falls.
    private func framesUntil(_ change: HostTime, from host: HostTime) -> Double {
        Double((change - host).nanosecondsClamped) / nominalFrameNanoseconds
    }

    /// Sets the report's rate; a new one is noted as in force from `since` (when the first
    /// frame read at it is heard), the old one kept for the frames heard before.
    private func setAnchorRate(_ rate: Double, since: HostTime) {
        if rate != status.anchorRate {
            status.rateBefore = status.anchorRate
            status.rateSince = since
        }
        status.anchorRate = rate
    }

    /// An error measured in seconds, as the status reports it: whole nanoseconds, saturating,
    /// and zero for a value that is not finite, so no measurement can trap the render thread.
    static func duration(seconds: Double) -> Duration {
        let nanoseconds = (seconds * 1e9).rounded()
        guard nanoseconds.isFinite else { return .zero }
        return .nanoseconds(Int64(min(max(nanoseconds, -9e18), 9e18)))
    }

    /// A rate from outside (a caller's, a group's State), bounded to what the resampler
    /// reads, so no rate can stall or trap the render thread.
    static func boundedRate(_ rate: Double) -> Double {
        guard rate.isFinite else { return 1 }
        return min(max(rate, FractionalResampler.minimumRatio), FractionalResampler.maximumRatio)
    }

    /// Reads content through the resampler into `out[from..<frames]`, `ratio` item frames
    /// per frame written, with `host` when `out[from]` is heard; `anchorRate` is what the
    /// report gives as the item's rate against the host. Handles the stream's end and the
    /// ring running dry. `firstFrameRatio`, if given, is the first frame's alone (a rate
    /// change inside it). Returns the frames filled.
    private func resampledContent(into out: UnsafeMutablePointer<Float>, from: Int, frames: Int, channels: Int,
                                  host: HostTime, ratio: Double, anchorRate: Double, firstFrameRatio: Double? = nil) -> Int {
        let volume = applied.volume
        let count = frames - from
        let destination = out + from * channels
        pullMisses = 0
        let first: Double
        if let firstFrameRatio, count > 0 {
            first = resampler.render(into: destination, count: 1, ratio: firstFrameRatio) { pullFrame(into: $0) }
            resampler.render(into: destination + channels, count: count - 1, ratio: ratio) { pullFrame(into: $0) }
        } else {
            first = resampler.render(into: destination, count: count, ratio: ratio) { pullFrame(into: $0) }
        }
        if volume != 1 {
            for index in 0..<(count * channels) { destination[index] *= volume }
        }
        status.anchorFrame = Int64(first.rounded())
        status.anchorPosition = first
        status.anchorHost = host
        setAnchorRate(anchorRate, since: rateChangedAt ?? host)
        rateChangedAt = nil
        nextFrame = resampler.centerFrame
        status.writtenEndFrame = nextFrame
        if let end = pendingEnd, resampler.centerFrame >= end.frame {
            // The look-ahead met the end and the centre has passed it: what followed was the
            // filter's decay into silence. The end was heard as many frames before the
            // period's end as the centre has read past it, divided by the rate.
            let overshoot = (Double(resampler.centerFrame) - Double(end.frame)) / ratio
            let heard = min(count, max(0, Int((Double(count) - overshoot).rounded(.up))))
            finish(kind: end.kind, frame: end.frame, host: host + .nanoseconds(ring.format.nanoseconds(ofFrames: Int64(heard))))
            pendingEnd = nil
            resampler.reset()
            // A file takes the content up to the end and no more.
            return from + heard
        } else if pullMisses > 0 && pendingEnd == nil && output.isRealtime {
            // The ring ran dry: the device heard silence where content should be. Restart on
            // the timeline (or where the content stopped) when data returns.
            status.phase = .stalled
            status.stalls += 1
            resampler.reset()
        }
        return frames
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
