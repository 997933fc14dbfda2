import MediaClock

/// What the player asks of the render thread.
public enum RenderMode: Sendable, Equatable {
    /// Play silence; keep blocks of `serial`, drop the rest.
    case idle(serial: Int)
    /// Play the blocks of `serial` from item frame `frame`. With `hostTime`, frame `frame` is
    /// presented exactly at that host time (earlier content is skipped when it has passed,
    /// silence fills the wait when it is ahead); without, as soon as data is there.
    case play(serial: Int, frame: Int64, hostTime: HostTime?)
    /// Play the blocks of `serial` on `timeline`, continuously: the render thread keeps the
    /// content on the timeline against its device's own clock, with a dead band, soft
    /// correction by fractional resampling, and a hard resync past a threshold. This is how
    /// a group member plays; a new timeline of the same serial is a clock update, not a seek.
    case follow(serial: Int, timeline: RenderTimeline)

    var serial: Int {
        switch self {
        case .idle(let serial), .play(let serial, _, _), .follow(let serial, _): return serial
        }
    }
}

/// Where item frames fall on the host clock: frame `frame` is heard at `host`, and from
/// then on frames advance at `rate` times the nominal sample rate per host second (the
/// playback rate times the rate of the clock the group follows against this host's clock,
/// which is 1 ± a few hundred ppm). Before `host` they advance at `rateBefore`: a rate
/// change scheduled at `host` continues the timeline that was being played until then, so
/// the change is made without a break.
public struct RenderTimeline: Sendable, Equatable {
    public var frame: Int64
    public var host: HostTime
    public var rate: Double
    public var rateBefore: Double
    /// The playback speeds alone, from `host` on and before it: `rate` and `rateBefore`
    /// without the clock's part. A kept pitch is shifted by the speed, so that every room
    /// shifts the same content by exactly the same scale whatever its clock does.
    public var speed: Double
    public var speedBefore: Double

    /// A timeline; the speeds default to the rates (a clock running at exactly 1).
    public init(frame: Int64, host: HostTime, rate: Double, rateBefore: Double? = nil,
                speed: Double? = nil, speedBefore: Double? = nil) {
        self.frame = frame
        self.host = host
        self.rate = rate
        self.rateBefore = rateBefore ?? rate
        self.speed = speed ?? rate
        self.speedBefore = speedBefore ?? rateBefore ?? speed ?? rate
    }

    /// The rate in force at host time `time`.
    public func rate(at time: HostTime) -> Double { time < host ? rateBefore : rate }

    /// The playback speed in force at host time `time`.
    public func speed(at time: HostTime) -> Double { time < host ? speedBefore : speed }

    /// The (fractional) item frame due at host time `time`.
    public func due(at time: HostTime, sampleRate: Int) -> Double {
        Double(frame) + Double((time - host).nanosecondsClamped) * rate(at: time) * Double(sampleRate) / 1e9
    }
}

/// The player's side of the render thread's mailbox.
public struct RenderControl: Sendable, Equatable {
    /// Bumped on every change; the render thread applies each generation once.
    public var generation: Int = 0
    public var mode: RenderMode = .idle(serial: 0)
    /// Drop what the device has queued when applying this generation, so the change is
    /// heard at once rather than after the device's latency. Once asked for, it stays asked
    /// for until the render thread takes a control: a later change that flushes nothing does
    /// not cancel it (`AudioRenderer.update`).
    public var flush: Bool = false
    /// Linear gain applied to content (0...1).
    public var volume: Float = 1
    /// The playback rate of the `.play` modes: item frames per frame heard (1 normal speed;
    /// 2 twice as fast, an octave up). Changing it alone changes the speed from the next
    /// period on without a restart. A followed timeline carries its own rate.
    public var rate: Double = 1
    /// What a rate other than 1 does to the pitch: `.varispeed` lets it follow the rate;
    /// the others keep it, through a `PitchKeeper` that delays the sound by its constant
    /// `latencyFrames` (the render thread places content that much earlier).
    public var pitch: PitchMode = .varispeed
    /// For plain play (`.play` with no host time), how much decoded sound must wait in the
    /// ring before a start sounds, in frames: 0 starts at the first block. A player that
    /// waits to minimize stalls asks for some at the start of a network item, so that it
    /// does not stall at once.
    public var startBufferFrames: Int = 0
    /// As `startBufferFrames`, for a restart after a stall: how much must have come back
    /// before playing on, rather than stuttering on every packet that trickles in.
    public var resumeBufferFrames: Int = 0
    /// Whether a followed timeline's start waits in silence, content that falls due
    /// meanwhile skipped, until the device's rate is known (`AudioRenderer.startingRateError`,
    /// up to 3 s). A group's rooms wait: the rate is fed forward from the first frame, and
    /// a room that learned it through the servo instead rang by ±100 µs for seconds against
    /// the others. A lone player's start scheduled on the host clock does not: it has no
    /// other room to agree with, and through PulseAudio, 300 ms after its device opened,
    /// waiting skipped the first 50 to 100 ms of 2 starts in 60.
    public var waitsForDeviceRate: Bool = true
    /// For a plain start (`.play` with no host time, no flush) that follows on from the
    /// sound still being written: the serial written, and where its frames stand against the
    /// new serial's. The start then begins no earlier than the frame after the last one
    /// written, since the render thread may write on between the player's reading of that
    /// frame and this control reaching it (a new sound track opened while playing).
    public var followsOn: FollowOn? = nil

    /// Whether this control plays at a rate other than 1 with its pitch kept, so that the
    /// render thread needs its pitch-keeping stage (made only then: it costs memory and tens
    /// of milliseconds of set-up that a player at speed 1 should not pay).
    public var needsPitchKeeping: Bool {
        guard pitch != .varispeed else { return false }
        switch mode {
        case .idle:
            return false
        case .play(_, _, nil):
            return rate != 1
        case .play(_, _, .some):
            // A host-time start into a file keeps no pitch: it copies frames as they are (the
            // player follows the host clock's timeline for a start on a real device).
            return false
        case .follow(_, let timeline):
            // Before and after a scheduled change: the stage is made before the change is met.
            return timeline.speed != 1 || timeline.speedBefore != 1
        }
    }
}

/// A start that follows on from the serial being written (`RenderControl.followsOn`).
public struct FollowOn: Sendable, Equatable {
    /// The serial whose writing the start follows on from.
    public var serial: Int
    /// The old serial's frame for the new serial's frame 0: a run that had joined items
    /// gaplessly counts its frames on from the first item's.
    public var frameShift: Int64

    public init(serial: Int, frameShift: Int64) {
        self.serial = serial
        self.frameShift = frameShift
    }
}

/// Where the render thread stands.
public enum RenderPhase: Sendable, Equatable {
    /// Silence, as asked.
    case idle
    /// Waiting for the first data of the serial, or for the scheduled host time.
    case starting
    /// Content is being played.
    case playing
    /// Content ran out before the end: silence until data returns.
    case stalled
    /// The item's last frame has been written; `RenderStatus.endHost` says when it is heard.
    case ended
    /// The reader failed; what it delivered has been played.
    case failed
}

/// The render thread's report, published every period.
public struct RenderStatus: Sendable, Equatable {
    /// The control generation applied.
    public var generation: Int = 0
    public var phase: RenderPhase = .idle
    public var serial: Int = 0
    /// The item whose frames were rendered last (the engine's number for it).
    public var item: Int = 0
    /// While content plays: item frame `anchorFrame` is presented at host time `anchorHost`.
    public var anchorFrame: Int64 = 0
    /// The same anchor to a fraction of a frame (following a timeline, the resampler reads
    /// between frames).
    public var anchorPosition: Double = 0
    public var anchorHost = HostTime(nanoseconds: 0)
    /// Item frames per frame heard from the anchor on: the playback rate (times the soft
    /// tier's correction, following a timeline).
    public var anchorRate: Double = 1
    /// When `anchorRate` took effect, and the rate before it: a change of rate is written
    /// a device's queue ahead of when it is heard, so the frames heard until then, up to
    /// the anchor, still run at `rateBefore`.
    public var rateSince = HostTime(nanoseconds: 0)
    public var rateBefore: Double = 1
    /// The first item frame of the current continuous run of content.
    public var runStartFrame: Int64 = 0
    /// When that frame is heard: until then the device still plays what came before.
    public var runStartHost = HostTime(nanoseconds: 0)
    /// One past the last content frame written.
    public var writtenEndFrame: Int64 = 0
    /// The item frame at which content ended (phase `.ended` or `.failed`).
    public var endFrame: Int64 = 0
    /// When the end frame is presented (phase `.ended` or `.failed`).
    public var endHost = HostTime(nanoseconds: 0)
    /// Times the ring ran dry while playing.
    public var stalls: Int = 0
    /// Times the device's timeline broke (an underrun, or a move of its reports past
    /// `AudioRenderer.timelineBreakTolerance`) under a scheduled start or a followed
    /// timeline, so content was placed afresh, skipping what the break swallowed.
    public var timelineBreaks: Int = 0
    /// The output's stream restarts (`AudioOutput.streamRestartCount`) as last seen: streams
    /// that stopped taking frames and were replaced. Content kept to a schedule is placed
    /// afresh after one as after an underrun, without counting it in `timelineBreaks`.
    public var streamRestarts: Int = 0
    /// Following a timeline: how far the content heard is from where the timeline puts it
    /// (positive: late), to the nanosecond, measured at the last period.
    public var timelineError: Duration = .zero
    /// Following a timeline: how far the playback rate is set from the timeline's, in ppm:
    /// the device's learned rate plus the soft tier's correction.
    public var correctionPPM: Double = 0
    /// Following a timeline: hard resyncs (skips or pads) since the start.
    public var hardResyncs: Int = 0
    /// Host time at which the content written so far has been heard (the end of the last
    /// period written, later by the pitch stage's delay when content goes through it): how
    /// fresh this report is, and where a change can still take effect.
    public var updatedAt = HostTime(nanoseconds: 0)

    /// The (fractional) item frame heard at host time `time`, counted from the anchor: at
    /// `anchorRate` back to `rateSince`, and at `rateBefore` before it. Counting back at the
    /// anchor's rate alone put a time read in the lead-in of a change the rate change times
    /// the device's queue off (38 ms going from 1 to 1.5 over a 100 ms queue).
    public func position(at time: HostTime, sampleRate: Int) -> Double {
        let rate = anchorRate.isFinite ? anchorRate : 1
        let framesPerNanosecond = Double(sampleRate) / 1e9
        guard time < rateSince, rateSince <= anchorHost, rateBefore.isFinite else {
            return anchorPosition + Double((time - anchorHost).nanosecondsClamped) * framesPerNanosecond * rate
        }
        let atChange = anchorPosition - Double((anchorHost - rateSince).nanosecondsClamped) * framesPerNanosecond * rate
        return atChange - Double((rateSince - time).nanosecondsClamped) * framesPerNanosecond * rateBefore
    }
}
