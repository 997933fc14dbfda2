/// Gives content played at a rate its own pitch back: the resampler reads the item faster or
/// slower (moving the pitch by the rate), and this stage shifts the pitch by the inverse.
/// `.timeDomain` does it by overlapping grains of the waveform (`OverlapAddShifter`, the
/// project's own: cheap, a 65 ms delay); `.spectral` with Rubber Band's finer
/// engine (`RubberBandStage`: a phase vocoder, several times the CPU, a 256 ms delay).
///
/// Its one promise is its delay: a frame given at output position *n* comes out at
/// *n* + `latencyFrames`, whatever the pitch scale. The render thread can then place content
/// as if the device's queue were that much longer, and every frame keeps its exact place on
/// the timeline. The scale is the playback rate's inverse alone (not the clock correction's
/// few ppm), so every room of a group shifts the same content by the same scale.
///
/// Real-time contract: `init` allocates everything; `reset` and `process` allocate nothing
/// and take no locks. One thread at a time (a renderer's), handed over through a lock.
// @unchecked: every var and buffer belongs to the one thread using it; the renderer hands
// the instance to its render thread through a Mutex and never uses it elsewhere.
public final class PitchKeeper: @unchecked Sendable {
    /// The fastest playback rate whose pitch is kept: each engine's delay is made for it.
    /// Faster rates shift the pitch by 1/4 and keep the rest of the rise.
    public static let fastestKeptRate = 4.0
    /// The slowest playback rate whose pitch is kept: slower, the pitch falls by what is left.
    public static let slowestKeptRate = 0.25

    private enum Engine {
        case overlapAdd(OverlapAddShifter)
        case rubberBand(RubberBandStage)
    }

    public let mode: PitchMode
    public let channels: Int
    /// The most frames `process` takes in one call.
    public let maximumFrames: Int
    /// The constant delay from a frame given to the same frame coming out.
    public let latencyFrames: Int
    private let engine: Engine
    /// Room for a period and the delay's frames after it, for `takeIn`.
    private let workspace: UnsafeMutablePointer<Float>

    /// A stage for `channels` of audio at `sampleRate`, taking up to `maximumFrames` a call.
    /// `mode` picks the engine; `.varispeed` is taken as `.timeDomain` (it needs no stage).
    /// Nil when Rubber Band cannot be set up (memory ran out).
    public init?(mode: PitchMode, sampleRate: Int, channels: Int, maximumFrames: Int) {
        self.mode = mode
        switch mode {
        case .spectral:
            guard let stage = RubberBandStage(sampleRate: sampleRate, channels: channels, maximumFrames: maximumFrames) else { return nil }
            engine = .rubberBand(stage)
            self.channels = stage.channels
            self.maximumFrames = stage.maximumFrames
            latencyFrames = stage.latencyFrames
        case .timeDomain, .varispeed:
            let shifter = OverlapAddShifter(sampleRate: sampleRate, channels: channels, maximumFrames: maximumFrames)
            engine = .overlapAdd(shifter)
            self.channels = shifter.channels
            self.maximumFrames = shifter.maximumFrames
            latencyFrames = shifter.latencyFrames
        }
        let capacity = (maximumFrames + latencyFrames) * channels
        workspace = .allocate(capacity: capacity)
        workspace.initialize(repeating: 0, count: capacity)
    }

    deinit {
        workspace.deallocate()
    }

    /// Times `process` found its queue short and gave silence (never, when `latencyFrames`
    /// holds): a reading for tests and statistics.
    public var underflows: Int {
        switch engine {
        case .overlapAdd: return 0
        case .rubberBand(let stage): return stage.underflows
        }
    }

    /// The pitch scale that gives content read at `rate` its own pitch back.
    static func scale(forRate rate: Double) -> Double {
        guard rate.isFinite, rate > 0 else { return 1 }
        return 1 / min(max(rate, slowestKeptRate), fastestKeptRate)
    }

    /// Forgets everything given so far and starts again for content read at `rate`: the next
    /// `latencyFrames` frames out are silence, then what is given from now on.
    ///
    /// `lead` (interleaved, oldest first, `leadFrames` of them) is what was heard just before
    /// what is given next, if anything. A phase vocoder analyses overlapping windows, so a
    /// stream started after silence fades in over half a window (15 ms, to a third of the
    /// level, through Rubber Band's finer engine); started after what was really heard, its
    /// first windows are whole and it starts at full level. Only the lead's last
    /// `leadInFrames` count. The overlap-add engine, whose grains begin whole, needs none.
    public func reset(rate: Double, lead: UnsafePointer<Float>? = nil, leadFrames: Int = 0) {
        switch engine {
        case .overlapAdd(let shifter): shifter.reset(scale: Self.scale(forRate: rate))
        case .rubberBand(let stage): stage.reset(rate: rate, lead: lead, leadFrames: leadFrames)
        }
    }

    /// How much of a lead (`reset`) the engine takes in, in frames: Rubber Band's preferred
    /// start pad (2,048 frames at 48 kHz); none for the overlap-add engine.
    public var leadInFrames: Int {
        switch engine {
        case .overlapAdd: return 0
        case .rubberBand(let stage): return stage.leadInFrames
        }
    }

    /// Takes the stage in partway through a stream with no gap and nothing skipped: the stage
    /// is started afresh (`reset`) and given, at once, its delay's worth of the content after
    /// the period, so that what it gives for the period is already the content.
    ///
    /// `buffer` holds the period as rendered (`frames` frames, at most `maximumFrames`). Its
    /// first `direct` frames stay as they are; the stage's stream starts with the rest.
    /// `more(destination, offset, count)` must render the content that follows, `count`
    /// frames starting `offset` frames after the period's first (pieces of at most
    /// `maximumFrames`, `latencyFrames` in all), as it would be heard had the stage not
    /// delayed it. On return `buffer` holds the period as it is to be heard: the direct
    /// frames, then the stage's output, which is the same content pitch-shifted for `rate`.
    /// The stage then stands as if it had been in all along, and later periods go through
    /// `process` placed its delay ahead. `lead` is what was heard before the stage's stream
    /// (the frames before the period, then its direct frames), as `reset` takes it.
    public func takeIn(_ buffer: UnsafeMutablePointer<Float>, frames: Int, direct: Int, rate: Double,
                       lead: UnsafePointer<Float>? = nil, leadFrames: Int = 0,
                       more: (_ destination: UnsafeMutablePointer<Float>, _ offset: Int, _ count: Int) -> Void) {
        let frames = min(max(frames, 0), maximumFrames)
        let direct = min(max(direct, 0), frames)
        workspace.update(from: buffer, count: frames * channels)
        var rendered = frames
        while rendered < frames + latencyFrames {
            let count = min(maximumFrames, frames + latencyFrames - rendered)
            more(workspace + rendered * channels, rendered, count)
            rendered += count
        }
        // The stage's stream: the period after its direct frames, then the content after the
        // period. Its first `latencyFrames` out are the lead-in, and what follows them is the
        // period's content.
        reset(rate: rate, lead: lead, leadFrames: leadFrames)
        var given = direct
        while given < rendered {
            let count = min(maximumFrames, rendered - given)
            process(workspace + given * channels, frames: count, rate: rate)
            given += count
        }
        (buffer + direct * channels).update(from: workspace + (direct + latencyFrames) * channels,
                                           count: (frames - direct) * channels)
    }

    /// Replaces `buffer`'s first `frames` interleaved frames (at most `maximumFrames`) with
    /// what comes out `latencyFrames` after them, pitch-shifted for content read at `rate`.
    public func process(_ buffer: UnsafeMutablePointer<Float>, frames: Int, rate: Double) {
        switch engine {
        case .overlapAdd(let shifter): shifter.process(buffer, frames: frames, scale: Self.scale(forRate: rate))
        case .rubberBand(let stage): stage.process(buffer, frames: frames, rate: rate)
        }
    }
}
