import Foundation

/// Reads a stream of frames at `minimumRatio` to `maximumRatio` input frames per output
/// frame, click-free: the soft tier of clock correction (a few hundred ppm off 1), and
/// varispeed playback rates (pitch follows the rate).
///
/// Two Blackman-windowed sincs:
/// - Up to `antiAliasingThreshold` (clock correction, and every slower rate), `tapCount`
///   input frames wide with the cut-off at the input's Nyquist, from a precomputed
///   polyphase table linearly interpolated between phases: `tapCount` multiply-adds per
///   sample. At ratio 1 and phase 0 it passes input through unchanged, so a stream that
///   needs no correction stays bit-exact.
/// - Above it (reading faster: decimating), `tapCount` output frames wide: the sinc
///   stretched by the ratio so its cut-off follows the output's Nyquist
///   (`antiAliasingCutoff`), and what the input holds above that is filtered out instead of
///   folding down into the audible band. `tapCount × ratio` taps, read off a finely sampled
///   prototype and normalised to unity gain at DC.
///
/// The stream position of the next output frame is `centerFrame + phase`; every output frame
/// advances it by the ratio, whichever filter renders it, so the ratio may change between
/// `render` calls (across the threshold too) with no jump in position. The history has room
/// for the widest filter's span, but frames are pulled only as far ahead of the centre as
/// the filter in use reaches (see `lookahead(atRatio:)`): near 1 that is `tapCount / 2`, as
/// it always was, so what a restart discards and when an end is met do not change for
/// clock correction, and at any rate the look-ahead lasts about `tapCount / 2` output frames.
///
/// Real-time contract: `init` allocates everything; `prime` and `render` allocate nothing,
/// take no locks, and call their `pull` closure for input frames on the calling thread.
/// Not `Sendable`: a resampler belongs to one thread (a renderer's).
public final class FractionalResampler {
    /// Taps of the interpolation filter, in output frames: 16 keeps aliasing and ripple far
    /// below audibility for ratios within ±0.1 % and costs 16 multiply-adds per sample. The
    /// anti-aliasing filter spans as many output frames, `tapCount × ratio` input frames.
    public static let tapCount = 16
    /// Phases in the precomputed table, and samples of the anti-aliasing prototype per
    /// output frame: linear interpolation between them keeps a coefficient within 1.6e-6 of
    /// the exact filter's (-116 dB).
    static let phaseCount = 512
    /// The slowest ratio rendered, in input frames per output frame. Slowing down needs no
    /// other filter, so the floor only keeps a zero or negative figure from stopping or
    /// reversing the stream (an end would then never be reached); 1/32 is far below any
    /// useful playback rate (0.5 at a device 2 % slow is 0.49) and exact in binary.
    public static let minimumRatio = 1.0 / 32
    /// The fastest ratio rendered, in input frames per output frame: a playback rate of 8,
    /// times a device up to 2 % fast (`DeviceTimingFilter.maximumRateDeviation`) and the soft
    /// tier's 500 ppm, is 8.16, and 8.25 covers it. The history, the look-ahead and the
    /// widest filter's cost (`tapCount × maximumRatio` multiply-adds per sample) scale with it.
    public static let maximumRatio = 8.25
    /// Ratios up to this use the interpolation filter (cut-off at the input's Nyquist); above
    /// it, the anti-aliasing filter. Reading faster than 1 folds the input's band between the
    /// output's Nyquist (0.5 / ratio cycles per input frame) and its own (0.5) down to
    /// between (1 - ratio / 2) and 0.5 cycles per output frame: at 1.05, above 0.475, that is
    /// above 22.8 kHz at 48 kHz and 20.9 kHz at 44.1 kHz, beyond hearing (and where the
    /// filter itself already falls toward its -6 dB at Nyquist). Clock correction at rate 1
    /// (a device up to 2 % off and 500 ppm of soft tier, 1.0205 at most) stays below it with
    /// margin, so the correction path keeps its cost and its bit-exact pass-through.
    public static let antiAliasingThreshold = 1.05
    /// The anti-aliasing filter's cut-off, as a fraction of the output's Nyquist. Sixteen
    /// output frames of Blackman-windowed sinc take 0.27 cycles per output frame to fall
    /// from -0.3 dB to -72 dB: cut off at the output's Nyquist itself, input just above it
    /// would fold back onto 0.4...0.5 cycles per output frame (19.2...24 kHz at 48 kHz) only
    /// 6 to 28 dB down. At 0.9, input is 14 dB down at the output's Nyquist, 55 dB from
    /// 0.6 and at least 72 dB from 0.62 cycles per output frame, so whatever folds below
    /// 19.2 kHz (at 48 kHz) is 55 dB down and below 18.2 kHz at least 72 dB; the price is
    /// the passband's top, -0.3 dB at 16.8 kHz and -1.9 dB at 19.2 kHz, where a sped-up
    /// stream has little left.
    static let antiAliasingCutoff = 0.9
    /// The most frames ever pulled ahead of the centre frame: half the widest filter's span,
    /// `tapCount / 2 × maximumRatio` (8 × 8.25). Written out: computed from them it would be
    /// initialised lazily, and checked on every use in `render`.
    public static let lookahead = 66
    /// Frames of history: `lookahead - 1` before the centre, the centre, `lookahead` after.
    static let historyFrames = 2 * lookahead
    /// Where the interpolation filter's first tap (centre - (tapCount/2 - 1)) sits in the
    /// history.
    static let interpolationOffset = lookahead - tapCount / 2
    /// Entries of the anti-aliasing prototype: `phaseCount` per output frame across its
    /// span, both ends included (the window is zero at the ends).
    static let prototypeEntries = tapCount * phaseCount + 1
    /// 1 in the 32.32 fixed point the anti-aliasing filter walks its prototype in, and the
    /// fraction one unit of it is.
    static let fixedOne = 0x1p32
    static let fixedFraction: Float = 0x1p-32

    public let channels: Int
    private let table: UnsafeMutablePointer<Float>
    /// The anti-aliasing prototype: the sinc at `antiAliasingCutoff` of Nyquist, windowed,
    /// sampled `phaseCount` times per output frame from -tapCount/2 to tapCount/2, each
    /// entry as its value and the step to the next (for interpolating between them).
    private let prototype: UnsafeMutablePointer<Float>
    /// Input frames from `lookahead - 1` before the centre to `lookahead` after, oldest first
    /// from `historyStart`: circular, and written twice (at slot s and s + historyFrames) so
    /// the window a filter reads is always contiguous. Only the frames up to `ahead` past the
    /// centre have been pulled; the slots beyond hold stale frames no filter reaches.
    private let history: UnsafeMutablePointer<Float>
    private var historyStart = 0
    /// Frames pulled past the centre frame.
    private var ahead = 0
    /// One output frame's coefficients, shared by all channels (stereo's anti-aliasing
    /// filter writes each twice, to line up with the interleaved frames).
    private let coefficients: UnsafeMutablePointer<Float>
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
        prototype = .allocate(capacity: 2 * Self.prototypeEntries)
        history = .allocate(capacity: 2 * Self.historyFrames * channels)
        history.initialize(repeating: 0, count: 2 * Self.historyFrames * channels)
        // Stereo's anti-aliasing filter writes each coefficient twice, once per channel.
        coefficients = .allocate(capacity: 2 * Self.historyFrames)
        coefficients.initialize(repeating: 0, count: 2 * Self.historyFrames)
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
                row[k] = Self.windowedSinc(x, cutoff: cutoff)
                sum += row[k]
            }
            // Unity gain at DC for every phase; phase 0 is then exactly the centre tap.
            for k in 0..<taps { table[p * taps + k] = Float(row[k] / sum) }
        }
        for k in 0..<taps {
            table[k] = k == taps / 2 - 1 ? 1 : 0
            table[Self.phaseCount * taps + k] = k == taps / 2 ? 1 : 0
        }
        // Not normalised here: the taps a stretched filter lands on sum to about the ratio,
        // and `render` divides by their actual sum, so every phase has unity gain at DC.
        for i in 0..<Self.prototypeEntries {
            let x = Double(i) / Double(Self.phaseCount) - Double(taps / 2)
            let value = Self.windowedSinc(x, cutoff: Self.antiAliasingCutoff)
            let next = Self.windowedSinc(x + 1 / Double(Self.phaseCount), cutoff: Self.antiAliasingCutoff)
            prototype[2 * i] = Float(value)
            prototype[2 * i + 1] = Float(next - value)
        }
    }

    deinit {
        table.deallocate()
        prototype.deallocate()
        history.deallocate()
        coefficients.deallocate()
    }

    /// The filter's impulse response at `x` output frames from the output position: a sinc
    /// cut off at `cutoff` times Nyquist, under a Blackman window `tapCount` frames wide
    /// (zero outside it).
    private static func windowedSinc(_ x: Double, cutoff: Double) -> Double {
        let sinc = x == 0 ? 1 : sin(Double.pi * cutoff * x) / (Double.pi * cutoff * x)
        let w = (x + Double(tapCount / 2)) / Double(tapCount)  // 0...1 across the window
        let window = w <= 0 || w >= 1 ? 0 : 0.42 - 0.5 * cos(2 * Double.pi * w) + 0.08 * cos(4 * Double.pi * w)
        return cutoff * sinc * window
    }

    /// Frames a filter reads ahead of the centre frame at `ratio` (after clamping, see
    /// `render`), and so the frames pulled past the centre while rendering at it: `tapCount /
    /// 2` up to `antiAliasingThreshold`, `tapCount / 2 × ratio` rounded up above it, at most
    /// `lookahead`. After a drop in ratio the extra frames already pulled are used up before
    /// any more are pulled. The end of a stream is met that far ahead of the centre.
    public static func lookahead(atRatio ratio: Double) -> Int {
        let ratio = renderableRatio(ratio)
        guard ratio > antiAliasingThreshold else { return tapCount / 2 }
        return min(Int((Double(tapCount / 2) * ratio).rounded(.up)), lookahead)
    }

    /// `ratio` bounded to what the filters and the history can render: below
    /// `minimumRatio` (zero, negative, -inf) reads as `minimumRatio`, above `maximumRatio`
    /// (+inf) as `maximumRatio`, and NaN as 1.
    static func renderableRatio(_ ratio: Double) -> Double {
        ratio.isNaN ? 1 : min(max(ratio, minimumRatio), maximumRatio)
    }

    /// Forgets the stream; the next `prime` starts a new one.
    public func reset() {
        isPrimed = false
        phase = 0
        historyStart = 0
        ahead = 0
        history.update(repeating: 0, count: 2 * Self.historyFrames * channels)
    }

    /// Starts a stream whose centre is `frame`: the frames before it are silence, the centre
    /// and the `tapCount / 2` frames after it are pulled now (a faster first `render` pulls
    /// the rest its filter needs). `pull` writes one frame into its argument and returns
    /// false when no frame is available (the frame is then silence).
    public func prime(at frame: Int64, pull: (UnsafeMutablePointer<Float>) -> Bool) {
        reset()
        centerFrame = frame
        ahead = -1
        pullAhead(to: Self.tapCount / 2, pull: pull)
        isPrimed = true
    }

    /// Starts a stream whose centre is `frame`, as `prime(at:pull:)` does, but with the frames
    /// just before it taken from `past` (`pastFrames` of them, oldest first, the last one
    /// frame `frame - 1`) instead of silence: a stream that was being copied as it is goes
    /// on through the resampler without the dip that silent past taps would make.
    public func prime(at frame: Int64, past: UnsafePointer<Float>, pastFrames: Int,
                      pull: (UnsafeMutablePointer<Float>) -> Bool) {
        prime(at: frame, pull: pull)
        let count = min(max(0, pastFrames), Self.lookahead - 1)
        // After a reset the centre sits at slot lookahead - 1; frame `frame - k` at k before.
        for k in 1...max(1, count) where k <= count {
            let source = past + (pastFrames - k) * channels
            let slot = history + (Self.lookahead - 1 - k) * channels
            let mirror = slot + Self.historyFrames * channels
            for channel in 0..<channels {
                slot[channel] = source[channel]
                mirror[channel] = source[channel]
            }
        }
    }

    /// Writes `count` frames to `out`, reading the input `ratio` frames per output frame.
    /// Returns the stream position (fractional frame) of the first frame written.
    ///
    /// A ratio outside `minimumRatio...maximumRatio` is clamped to it, and NaN reads as 1
    /// (a figure from a control loop or from outside must neither trap the render thread nor
    /// read past the history); the position then advances by the clamped ratio.
    @discardableResult
    public func render(into out: UnsafeMutablePointer<Float>, count: Int, ratio: Double,
                       pull: (UnsafeMutablePointer<Float>) -> Bool) -> Double {
        let first = Double(centerFrame) + phase
        let ratio = Self.renderableRatio(ratio)
        let antiAliasing = ratio > Self.antiAliasingThreshold
        let needed = Self.lookahead(atRatio: ratio)
        pullAhead(to: needed, pull: pull)
        for frame in 0..<count {
            let destination = out + frame * channels
            if antiAliasing {
                renderStretched(into: destination, ratio: ratio)
            } else {
                renderInterpolated(into: destination)
            }
            phase += ratio
            while phase >= 1 {
                phase -= 1
                advance(to: needed, pull: pull)
            }
        }
        return first
    }

    /// One frame through the interpolation filter: `tapCount` taps around the centre. Each
    /// channel sums its taps in order, as it always has: the same arithmetic whatever the
    /// channel count.
    @inline(__always)
    private func renderInterpolated(into destination: UnsafeMutablePointer<Float>) {
        let taps = Self.tapCount
        let scaled = phase * Double(Self.phaseCount)
        let index = min(Int(scaled), Self.phaseCount - 1)
        let blend = Float(scaled - Double(index))
        let rowA = table + index * taps
        let rowB = rowA + taps
        for k in 0..<taps { coefficients[k] = rowA[k] + (rowB[k] - rowA[k]) * blend }
        let window = history + (historyStart + Self.interpolationOffset) * channels
        if channels == 2 {
            // Stereo, the common case: both channels in one pass over the coefficients.
            var left: Float = 0
            var right: Float = 0
            for k in 0..<taps {
                left += coefficients[k] * window[2 * k]
                right += coefficients[k] * window[2 * k + 1]
            }
            destination[0] = left
            destination[1] = right
            return
        }
        for channel in 0..<channels {
            var sum: Float = 0
            for k in 0..<taps { sum += coefficients[k] * window[k * channels + channel] }
            destination[channel] = sum
        }
    }

    /// One frame through the anti-aliasing filter: the prototype stretched by `ratio`, so it
    /// reaches `tapCount / 2 × ratio` input frames either side of the output position.
    @inline(__always)
    private func renderStretched(into destination: UnsafeMutablePointer<Float>, ratio: Double) {
        // Input frame centre + j is (j - phase) / ratio output frames from the output
        // position; the window is zero at ±tapCount/2 and beyond. Bounded by the history
        // and the frames pulled (which the window never passes).
        let halfSpan = Double(Self.tapCount / 2) * ratio
        let lowest = max(Int((phase - halfSpan).rounded(.down)) + 1, 1 - Self.lookahead)
        let highest = min(Int((phase + halfSpan).rounded(.down)), ahead)
        let taps = highest - lowest + 1
        // Where tap 0 reads the prototype, and how far each next tap moves along it, in
        // entries as 32.32 fixed point: exact steps, and an index and a blend without a
        // checked conversion per tap.
        let step = Double(Self.phaseCount) / ratio
        let start = (Double(lowest) - phase) * step + Double(Self.tapCount / 2 * Self.phaseCount)
        var position = Int64(max(start, 0) * Self.fixedOne)
        let increment = Int64(step * Self.fixedOne)
        let lastIndex = Self.prototypeEntries - 1
        let prototype = self.prototype
        let coefficients = self.coefficients
        let window = history + (historyStart + Self.lookahead - 1 + lowest) * channels
        /// Tap `k`'s coefficient, read off the prototype.
        @inline(__always) func coefficient(_ position: Int64) -> Float {
            let index = min(Int(truncatingIfNeeded: position &>> 32), lastIndex)
            let blend = Float(UInt32(truncatingIfNeeded: position)) * Self.fixedFraction
            let entry = prototype + 2 &* index
            return entry[0] + entry[1] * blend
        }
        // The stretched filter needs no particular order of addition: several running sums
        // keep each tap from waiting on the previous one's addition.
        if channels == 2 {
            // Stereo, the common case: each coefficient written twice, to line up with the
            // interleaved frames, then four lanes (left, right, left, right) at a time; the
            // coefficients' own sum (the DC gain) comes from the same loads.
            var written = coefficients
            for _ in 0..<taps {
                let value = coefficient(position)
                written[0] = value
                written[1] = value
                written += 2
                position &+= increment
            }
            let weights = UnsafeRawPointer(coefficients)
            let samples = UnsafeRawPointer(window)
            let vector = MemoryLayout<SIMD4<Float>>.stride
            var sums = (SIMD4<Float>.zero, SIMD4<Float>.zero)
            var gains = (SIMD4<Float>.zero, SIMD4<Float>.zero)
            var offset = 0
            let end = taps / 2 * vector
            while offset + vector < end {
                let w0 = weights.loadUnaligned(fromByteOffset: offset, as: SIMD4<Float>.self)
                let w1 = weights.loadUnaligned(fromByteOffset: offset + vector, as: SIMD4<Float>.self)
                sums.0 += w0 * samples.loadUnaligned(fromByteOffset: offset, as: SIMD4<Float>.self)
                sums.1 += w1 * samples.loadUnaligned(fromByteOffset: offset + vector, as: SIMD4<Float>.self)
                gains.0 += w0
                gains.1 += w1
                offset += 2 * vector
            }
            if offset < end {
                let w0 = weights.loadUnaligned(fromByteOffset: offset, as: SIMD4<Float>.self)
                sums.0 += w0 * samples.loadUnaligned(fromByteOffset: offset, as: SIMD4<Float>.self)
                gains.0 += w0
            }
            let sum = sums.0 + sums.1
            let gains2 = gains.0 + gains.1
            var left = sum[0] + sum[2]
            var right = sum[1] + sum[3]
            var gain = gains2[0] + gains2[2]
            if taps & 1 == 1 {
                let last = 2 * (taps - 1)
                left += coefficients[last] * window[last]
                right += coefficients[last] * window[last + 1]
                gain += coefficients[last]
            }
            let scale = 1 / gain
            destination[0] = left * scale
            destination[1] = right * scale
            return
        }
        var gain: Float = 0
        for k in 0..<taps {
            let value = coefficient(position)
            coefficients[k] = value
            gain += value
            position &+= increment
        }
        let scale = 1 / gain
        for channel in 0..<channels {
            var sum: Float = 0
            for k in 0..<taps { sum += coefficients[k] * window[k * channels + channel] }
            destination[channel] = sum * scale
        }
    }

    /// Moves the window one frame on: the oldest frame goes, and frames are pulled until
    /// `needed` are past the centre again.
    @inline(__always)
    private func advance(to needed: Int, pull: (UnsafeMutablePointer<Float>) -> Bool) {
        historyStart += 1
        if historyStart == Self.historyFrames { historyStart = 0 }
        centerFrame += 1
        ahead -= 1
        pullAhead(to: needed, pull: pull)
    }

    /// Pulls frames until `needed` are past the centre.
    @inline(__always)
    private func pullAhead(to needed: Int, pull: (UnsafeMutablePointer<Float>) -> Bool) {
        while ahead < needed {
            ahead += 1
            var slot = historyStart + Self.lookahead - 1 + ahead
            if slot >= Self.historyFrames { slot -= Self.historyFrames }
            store(into: slot, pull: pull)
        }
    }

    /// Pulls a frame into history slot `slot` and its mirror; silence when there is none.
    /// (Element by element: a frame is a couple of samples, less than a copy call costs.)
    @inline(__always)
    private func store(into slot: Int, pull: (UnsafeMutablePointer<Float>) -> Bool) {
        let frame = history + slot * channels
        let mirror = frame + Self.historyFrames * channels
        let pulled = pull(frame)
        for channel in 0..<channels {
            if !pulled { frame[channel] = 0 }
            mirror[channel] = frame[channel]
        }
    }
}
