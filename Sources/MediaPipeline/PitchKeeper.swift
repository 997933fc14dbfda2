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
    public func reset(rate: Double) {
        switch engine {
        case .overlapAdd(let shifter): shifter.reset(scale: Self.scale(forRate: rate))
        case .rubberBand(let stage): stage.reset(rate: rate)
        }
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
