import Foundation

/// Shifts the pitch of interleaved audio in the time domain, keeping its duration: the
/// engine of `PitchKeeper` for `.timeDomain`.
///
/// Output is made of grains two hops long, Hann-windowed and overlapped by half, which sum
/// to one. Grain *k* is centred at output frame *kH* + *H*; it reads the input around frame
/// *kH* + *H* − `latencyFrames` + δ at `scale` input frames per output frame, which moves
/// the pitch by `scale` and leaves the content where the delay puts it. The offset δ, within
/// `searchRadius`, is the one whose first half best continues what the previous grain was
/// reading (waveform-similarity overlap-add), so the splices fall where the waveforms agree.
///
/// Why this and not a phase vocoder: it does a few dozen multiplications a frame, its delay
/// is short and exact by construction, and it depends only on the frames given and the
/// frames at which the scale changed, never on how they were cut into calls, so rooms with
/// other period sizes hear the same sample for sample. Its splices are audible on dense
/// music at large shifts; `.spectral` is there for that.
///
/// The input it reads is band-limited already: content the resampler slowed (a scale above
/// 1 here) lost its top in the resampler, so reading it faster cannot alias, and content it
/// sped up is read slower here. Reads between frames are four-point cubic interpolations.
///
/// Real-time contract: `init` allocates everything; `reset` and `process` allocate nothing.
/// One thread at a time.
// @unchecked: every var and buffer belongs to the one thread using it (see `PitchKeeper`).
final class OverlapAddShifter: @unchecked Sendable {
    /// Half a grain (ms): 20 ms grains hold two periods of a 100 Hz voice, and are short
    /// enough that a transient is smeared by at most that.
    static let hopMilliseconds = 10.0
    /// How far a grain may move from its place to continue the previous one (ms): more than
    /// a period of the lowest voices (about 80 Hz), so a continuation is always in reach. On
    /// a chord of 220, 330 and 1,234 Hz at 2×, 8 ms left the partials 0.7 % off their
    /// pitch on average and 15 ms within 0.01 % (at 0.5×, 0.6 % either way).
    static let searchMilliseconds = 15.0
    /// Correlation points per comparison: every frame of a hop would cost 5 to 20 times more
    /// and choose the same offsets within a frame or two (a fine pass follows).
    static let comparisonPoints = 96
    /// Offsets tried in the coarse pass, apart (frames at 48 kHz, scaled with the rate); the
    /// fine pass tries every offset within this of the coarse pass's best.
    static let coarseStep = 4
    /// How far below the coarse pass's best score an offset still counts as about as good
    /// (normalised correlation): the coarse grid falls up to half a stride from a peak, which
    /// costs a tone of 1 kHz 0.03 at 48 kHz, so peaks of equal height stay within it.
    static let coarseTie = 0.05
    /// How far below the highest peak another still counts as as high (normalised
    /// correlation): a tone's peaks, a period apart, come within 10⁻⁴ of each other, while a
    /// chord's best alignment stands clear of the next by more.
    static let peakTie = 0.002
    /// The largest scale: `PitchKeeper.slowestKeptRate`'s inverse.
    static let largestScale = 1 / PitchKeeper.slowestKeptRate

    let channels: Int
    let maximumFrames: Int
    let hop: Int
    let searchRadius: Int
    /// Frames from one given to the same frame out (within `searchRadius`).
    let latencyFrames: Int

    /// The input, planar, in a ring of `historyCapacity` frames a channel (a power of two),
    /// and its channels' sum for the search; zero before the first frame.
    private let history: UnsafeMutablePointer<Float>
    private let mix: UnsafeMutablePointer<Float>
    private let historyCapacity: Int
    /// Output being summed, planar, in a ring of `outputCapacity` frames a channel.
    private let output: UnsafeMutablePointer<Float>
    private let outputCapacity: Int
    private let window: UnsafeMutablePointer<Float>
    /// The coarse pass's scores, one per offset tried, and the peaks climbed from them.
    private let coarseScores: UnsafeMutablePointer<Double>
    private let peakOffsets: UnsafeMutablePointer<Double>
    private let peakHeights: UnsafeMutablePointer<Double>
    private let stride: Int
    /// Where the scale changed, by input frame, oldest first, in a ring.
    private let changeFrames: UnsafeMutablePointer<Int64>
    private let changeScales: UnsafeMutablePointer<Double>
    private static let changeCapacity = 256
    private var changeStart = 0
    private var changeCount = 0

    private var given: Int64 = 0
    private var handedBack: Int64 = 0
    private var grains: Int64 = 0
    private var scale = 1.0
    /// The previous grain's centre (nil after a reset: the first grain stays put).
    private var previousCentre: (whole: Int64, fraction: Double)?

    init(sampleRate: Int, channels: Int, maximumFrames: Int) {
        self.channels = max(1, channels)
        self.maximumFrames = max(1, maximumFrames)
        let rate = Double(max(8_000, sampleRate))
        hop = Int((rate * Self.hopMilliseconds / 1_000).rounded())
        searchRadius = Int((rate * Self.searchMilliseconds / 1_000).rounded())
        stride = max(1, Int((Double(Self.coarseStep) * rate / 48_000).rounded()))
        // Grain k, made when output frame kH is due, reads up to its centre's latest place
        // plus half a grain at the largest scale, and the interpolation's two frames after.
        latencyFrames = hop + searchRadius + Int((Double(hop) * Self.largestScale).rounded(.up)) + 3
        let reach = latencyFrames + 2 * hop + searchRadius + Int((Double(hop) * Self.largestScale).rounded(.up)) + 4
        historyCapacity = Self.powerOfTwo(atLeast: reach + self.maximumFrames + 2 * hop)
        outputCapacity = Self.powerOfTwo(atLeast: self.maximumFrames + 4 * hop)
        history = .allocate(capacity: historyCapacity * self.channels)
        history.initialize(repeating: 0, count: historyCapacity * self.channels)
        mix = .allocate(capacity: historyCapacity)
        mix.initialize(repeating: 0, count: historyCapacity)
        output = .allocate(capacity: outputCapacity * self.channels)
        output.initialize(repeating: 0, count: outputCapacity * self.channels)
        window = .allocate(capacity: 2 * hop)
        coarseScores = .allocate(capacity: 2 * searchRadius / stride + 2)
        coarseScores.initialize(repeating: 0, count: 2 * searchRadius / stride + 2)
        peakOffsets = .allocate(capacity: 2 * searchRadius / stride + 2)
        peakOffsets.initialize(repeating: 0, count: 2 * searchRadius / stride + 2)
        peakHeights = .allocate(capacity: 2 * searchRadius / stride + 2)
        peakHeights.initialize(repeating: 0, count: 2 * searchRadius / stride + 2)
        for index in 0..<(2 * hop) {
            // Periodic Hann: two copies a hop apart sum to exactly one.
            window[index] = Float(0.5 - 0.5 * cos(2 * Double.pi * Double(index) / Double(2 * hop)))
        }
        changeFrames = .allocate(capacity: Self.changeCapacity)
        changeFrames.initialize(repeating: 0, count: Self.changeCapacity)
        changeScales = .allocate(capacity: Self.changeCapacity)
        changeScales.initialize(repeating: 1, count: Self.changeCapacity)
        reset(scale: 1)
    }

    deinit {
        history.deallocate()
        mix.deallocate()
        output.deallocate()
        window.deallocate()
        coarseScores.deallocate()
        peakOffsets.deallocate()
        peakHeights.deallocate()
        changeFrames.deallocate()
        changeScales.deallocate()
    }

    private static func powerOfTwo(atLeast value: Int) -> Int {
        var result = 1
        while result < value { result <<= 1 }
        return result
    }

    /// Forgets everything: the next `latencyFrames` out are silence, then what is given,
    /// shifted by `scale`.
    func reset(scale newScale: Double) {
        history.update(repeating: 0, count: historyCapacity * channels)
        mix.update(repeating: 0, count: historyCapacity)
        output.update(repeating: 0, count: outputCapacity * channels)
        given = 0
        handedBack = 0
        grains = 0
        scale = newScale
        previousCentre = nil
        changeStart = 0
        changeCount = 1
        changeFrames[0] = 0
        changeScales[0] = newScale
    }

    /// Replaces `buffer`'s first `frames` interleaved frames (at most `maximumFrames`) with
    /// the frames `latencyFrames` before them, pitch-shifted by `scale` from here on.
    func process(_ buffer: UnsafeMutablePointer<Float>, frames: Int, scale newScale: Double) {
        let count = min(max(0, frames), maximumFrames)
        guard count > 0 else { return }
        if newScale != scale {
            scale = newScale
            recordChange(at: given, scale: newScale)
        }
        let historyMask = Int64(historyCapacity - 1)
        for frame in 0..<count {
            let slot = Int((given + Int64(frame)) & historyMask)
            var sum: Float = 0
            for channel in 0..<channels {
                let value = buffer[frame * channels + channel]
                history[channel * historyCapacity + slot] = value
                sum += value
            }
            mix[slot] = sum
        }
        given += Int64(count)
        // Every output frame up to the last one handed back now needs the grains that start
        // at or before it (grain k covers kH ..< kH + 2H).
        let last = handedBack + Int64(count) - 1
        while grains * Int64(hop) <= last {
            makeGrain(grains)
            grains += 1
        }
        let outputMask = Int64(outputCapacity - 1)
        for frame in 0..<count {
            let slot = Int((handedBack + Int64(frame)) & outputMask)
            for channel in 0..<channels {
                buffer[frame * channels + channel] = output[channel * outputCapacity + slot]
                output[channel * outputCapacity + slot] = 0
            }
        }
        handedBack += Int64(count)
    }

    private func recordChange(at frame: Int64, scale: Double) {
        if changeCount == Self.changeCapacity {
            changeStart = (changeStart + 1) % Self.changeCapacity
            changeCount -= 1
        }
        let slot = (changeStart + changeCount) % Self.changeCapacity
        changeFrames[slot] = frame
        changeScales[slot] = scale
        changeCount += 1
    }

    /// The scale of the content at input frame `frame`.
    private func scale(at frame: Int64) -> Double {
        var index = changeCount - 1
        while index > 0 {
            let slot = (changeStart + index) % Self.changeCapacity
            if changeFrames[slot] <= frame { return changeScales[slot] }
            index -= 1
        }
        return changeScales[changeStart]
    }

    private func makeGrain(_ k: Int64) {
        let nominal = k * Int64(hop) + Int64(hop) - Int64(latencyFrames)
        let grainScale = scale(at: nominal)
        // The centre to a fraction of a frame: a continuation rounded to whole frames slips a
        // tone's phase the same way at every splice, which detunes it (by 0.17 Hz at 440 Hz
        // at ½×, enough to smear a fit over a second).
        var centreWhole = nominal
        var centreFraction = 0.0
        if let previous = previousCentre {
            // Matched against the previous centre's whole frame: its fraction moves the match
            // by as much.
            let exact = bestOffset(nominal: nominal, previous: previous.whole, scale: grainScale) + previous.fraction
            let whole = exact.rounded(.down)
            centreWhole = nominal + Int64(whole)
            centreFraction = exact - whole
        }
        previousCentre = (centreWhole, centreFraction)
        let historyMask = Int64(historyCapacity - 1)
        let outputMask = Int64(outputCapacity - 1)
        let start = k * Int64(hop)
        let half = Double(hop)
        for channel in 0..<channels {
            let plane = history + channel * historyCapacity
            let out = output + channel * outputCapacity
            for index in 0..<(2 * hop) {
                let position = centreFraction + (Double(index) - half) * grainScale
                let whole = position.rounded(.down)
                let fraction = Float(position - whole)
                let base = centreWhole + Int64(whole)
                let x0 = plane[Int((base - 1) & historyMask)]
                let x1 = plane[Int(base & historyMask)]
                let x2 = plane[Int((base + 1) & historyMask)]
                let x3 = plane[Int((base + 2) & historyMask)]
                // Catmull-Rom: exact at whole frames, smooth between.
                let value = x1 + 0.5 * fraction * (x2 - x0 + fraction * (2 * x0 - 5 * x1 + 4 * x2 - x3
                    + fraction * (3 * (x1 - x2) + x3 - x0)))
                out[Int((start + Int64(index)) & outputMask)] += value * window[index]
            }
        }
    }

    /// The offset from `nominal`, to a fraction of a frame, whose grain's first half best
    /// continues the previous grain (centred at `previous`): the input right after the
    /// previous grain's centre, compared with the input a half grain before each candidate
    /// centre, over the frames a half grain reads at `scale`.
    private func bestOffset(nominal: Int64, previous: Int64, scale: Double) -> Double {
        let span = max(Self.comparisonPoints, Int((Double(hop) * scale).rounded()))
        let step = max(1, span / Self.comparisonPoints)
        let lead = Int64((Double(hop) * scale).rounded())
        // The coarse pass: every `stride`th offset's score, and the best of them.
        var count = 0
        var top = -Double.infinity
        var offset = -searchRadius
        while offset <= searchRadius {
            let value = score(offset, nominal: nominal, lead: lead, previous: previous, span: span, step: step)
            coarseScores[count] = value
            top = max(top, value)
            count += 1
            offset += stride
        }
        // Every coarse peak near the best is climbed, a frame at a time, to its top, and
        // the top found between frames from the parabola through it and its neighbours. Of
        // the peaks as high as the highest (within `peakTie`), the nearest to the grain's
        // place wins. Rooms whose input differs by a fraction of a frame (their resamplers'
        // phases) score such ties in different orders: taking the highest alone, they chose
        // continuations a period or more apart and heard bursts up to 21 ms apart. A looser
        // rule (any coarse point near the best) let a chord's weaker alignments win, and
        // pulled its partials up to 0.9 % off their pitch.
        var peaks = 0
        var highest = -Double.infinity
        for index in 0..<count where coarseScores[index] >= top - Self.coarseTie {
            let left = index > 0 ? coarseScores[index - 1] : -Double.infinity
            let right = index + 1 < count ? coarseScores[index + 1] : -Double.infinity
            guard coarseScores[index] >= left, coarseScores[index] > right else { continue }
            let (offset, height) = climb(from: -searchRadius + index * stride, nominal: nominal, lead: lead,
                                         previous: previous, span: span, step: step)
            peakOffsets[peaks] = offset
            peakHeights[peaks] = height
            highest = max(highest, height)
            peaks += 1
        }
        var chosen = 0.0
        var nearest = Double.infinity
        for index in 0..<peaks where peakHeights[index] >= highest - Self.peakTie && abs(peakOffsets[index]) < nearest {
            chosen = peakOffsets[index]
            nearest = abs(chosen)
        }
        return chosen
    }

    /// The top of the peak `start` lies on: climbed a frame at a time, then placed between
    /// frames by the parabola through the top frame and its neighbours; its offset and score.
    private func climb(from start: Int, nominal: Int64, lead: Int64, previous: Int64, span: Int, step: Int) -> (Double, Double) {
        var best = start
        var bestScore = score(best, nominal: nominal, lead: lead, previous: previous, span: span, step: step)
        for direction in Swift.stride(from: -1, through: 1, by: 2) {
            var climbing = true
            while climbing {
                let next = best + direction
                guard abs(next) <= searchRadius else { break }
                let value = score(next, nominal: nominal, lead: lead, previous: previous, span: span, step: step)
                climbing = value > bestScore
                if climbing {
                    best = next
                    bestScore = value
                }
            }
        }
        guard abs(best) < searchRadius else { return (Double(best), bestScore) }
        let below = score(best - 1, nominal: nominal, lead: lead, previous: previous, span: span, step: step)
        let above = score(best + 1, nominal: nominal, lead: lead, previous: previous, span: span, step: step)
        let curvature = below + above - 2 * bestScore
        guard curvature < 0 else { return (Double(best), bestScore) }
        let shift = min(0.5, max(-0.5, (below - above) / (2 * curvature)))
        return (Double(best) + shift, bestScore - (above - below) * (above - below) / (8 * curvature))
    }

    /// How well a grain at `offset` continues the previous one (1 at best). No preference
    /// for the grain's own place is added: even 5 % of the score across the range put
    /// audible splices into a pure tone at 2× (what lay beside it rose from −79 to −37 dB).
    private func score(_ offset: Int, nominal: Int64, lead: Int64, previous: Int64, span: Int, step: Int) -> Double {
        similarity(previous, nominal + Int64(offset) - lead, span: span, step: step)
    }

    /// The correlation of the mix from `a` with the mix from `b`, over `span` frames every
    /// `step`, normalised by both segments' energy (1: the same shape).
    private func similarity(_ a: Int64, _ b: Int64, span: Int, step: Int) -> Double {
        let mask = Int64(historyCapacity - 1)
        var cross: Float = 0, energyA: Float = 0, energyB: Float = 0
        var index = 0
        while index < span {
            let x = mix[Int((a + Int64(index)) & mask)]
            let y = mix[Int((b + Int64(index)) & mask)]
            cross += x * y
            energyA += x * x
            energyB += y * y
            index += step
        }
        let norm = (Double(energyA) * Double(energyB)).squareRoot()
        return norm > 1e-12 ? Double(cross) / norm : 0
    }
}
