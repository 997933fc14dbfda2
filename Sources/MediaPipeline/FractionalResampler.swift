import Foundation

/// Reads a stream of frames at a rate a few hundred ppm off 1, click-free: the soft tier of
/// clock correction.
///
/// A windowed-sinc interpolator (`tapCount` taps, a Blackman-windowed sinc at a cut-off just
/// below Nyquist) with a precomputed polyphase table, linearly interpolated between phases.
/// The stream position of the next output frame is `centerFrame + phase`; every output frame
/// advances it by the ratio. At ratio 1 and phase 0 the filter passes input through
/// unchanged, so a stream that needs no correction stays bit-exact.
///
/// Real-time contract: `init` allocates everything; `render` allocates nothing and calls its
/// `pull` closure for input frames on the calling thread.
public final class FractionalResampler: @unchecked Sendable {
    /// Taps of the interpolation filter: 16 keeps aliasing and ripple far below audibility
    /// for ratios within ±0.1 % and costs 16 multiply-adds per sample.
    public static let tapCount = 16
    /// Phases in the precomputed table; linear interpolation between them keeps the table
    /// error below 24-bit resolution.
    static let phaseCount = 512
    /// Frames the filter reads ahead of the centre: the latency of the soft tier.
    public static let lookahead = tapCount / 2

    public let channels: Int
    private let table: UnsafeMutablePointer<Float>
    /// The last `tapCount` input frames, oldest first (circular, `historyStart` is oldest).
    private let history: UnsafeMutablePointer<Float>
    private var historyStart = 0
    /// Fractional position between the centre frame and the next, in [0, 1).
    public private(set) var phase = 0.0
    /// Stream index of the centre tap's frame.
    public private(set) var centerFrame: Int64 = 0
    /// Whether the history holds a primed stream.
    public private(set) var isPrimed = false

    public init(channels: Int) {
        self.channels = channels
        let taps = Self.tapCount
        table = .allocate(capacity: (Self.phaseCount + 1) * taps)
        history = .allocate(capacity: taps * channels)
        history.initialize(repeating: 0, count: taps * channels)
        // Tap k sits at offset (k - (taps/2 - 1)) from the centre frame. A cut-off at
        // Nyquist puts the sinc's zeros on whole frames, so phase 0 and phase 1 are both
        // plain copies and the table is continuous across frame boundaries; ratios within a
        // fraction of a percent of 1 alias nothing.
        let cutoff = 1.0
        for p in 0...Self.phaseCount {
            let fraction = Double(p) / Double(Self.phaseCount)
            var sum = 0.0
            var row = [Double](repeating: 0, count: taps)
            for k in 0..<taps {
                let x = Double(k - (taps / 2 - 1)) - fraction
                let sinc = x == 0 ? 1 : sin(Double.pi * cutoff * x) / (Double.pi * cutoff * x)
                let w = (x + Double(taps / 2)) / Double(taps)  // 0...1 across the window
                let window = w <= 0 || w >= 1 ? 0 : 0.42 - 0.5 * cos(2 * Double.pi * w) + 0.08 * cos(4 * Double.pi * w)
                row[k] = cutoff * sinc * window
                sum += row[k]
            }
            // Unity gain at DC for every phase; phase 0 is then exactly the centre tap.
            for k in 0..<taps { table[p * taps + k] = Float(row[k] / sum) }
        }
        for k in 0..<taps {
            table[k] = k == taps / 2 - 1 ? 1 : 0
            table[Self.phaseCount * taps + k] = k == taps / 2 ? 1 : 0
        }
    }

    deinit {
        table.deallocate()
        history.deallocate()
    }

    /// Forgets the stream; the next `prime` starts a new one.
    public func reset() {
        isPrimed = false
        phase = 0
        historyStart = 0
        history.update(repeating: 0, count: Self.tapCount * channels)
    }

    /// Starts a stream whose centre is `frame`: the taps before it are silence, the taps
    /// after it are pulled now. `pull` writes one frame into its argument and returns false
    /// when no frame is available (the frame is then silence).
    public func prime(at frame: Int64, pull: (UnsafeMutablePointer<Float>) -> Bool) {
        reset()
        centerFrame = frame
        let taps = Self.tapCount
        for k in (taps / 2 - 1)..<taps { _ = pull(history + k * channels) }
        isPrimed = true
    }

    /// Writes `count` frames to `out`, reading the input `ratio` frames per output frame.
    /// Returns the stream position (fractional frame) of the first frame written.
    @discardableResult
    public func render(into out: UnsafeMutablePointer<Float>, count: Int, ratio: Double,
                       pull: (UnsafeMutablePointer<Float>) -> Bool) -> Double {
        let first = Double(centerFrame) + phase
        let taps = Self.tapCount
        for frame in 0..<count {
            let scaled = phase * Double(Self.phaseCount)
            let index = min(Int(scaled), Self.phaseCount - 1)
            let blend = Float(scaled - Double(index))
            let rowA = table + index * taps
            let rowB = rowA + taps
            for channel in 0..<channels {
                var sum: Float = 0
                for k in 0..<taps {
                    let slot = (historyStart + k) % taps
                    let coefficient = rowA[k] + (rowB[k] - rowA[k]) * blend
                    sum += coefficient * history[slot * channels + channel]
                }
                out[frame * channels + channel] = sum
            }
            phase += ratio
            while phase >= 1 {
                phase -= 1
                advance(pull: pull)
            }
        }
        return first
    }

    /// Moves the window one frame on: the oldest frame goes, a new one is pulled.
    private func advance(pull: (UnsafeMutablePointer<Float>) -> Bool) {
        let slot = history + historyStart * channels
        if !pull(slot) { slot.update(repeating: 0, count: channels) }
        historyStart = (historyStart + 1) % Self.tapCount
        centerFrame += 1
    }
}
