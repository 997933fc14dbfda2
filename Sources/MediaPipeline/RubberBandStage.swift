internal import CRubberBand

/// `PitchKeeper`'s engine for `.spectral`: Rubber Band in real-time mode, its finer engine
/// (R3), shifting the pitch by the scale it is given.
///
/// Rubber Band's own delay grows as the pitch scale falls (its start delay at scale 1
/// divided by the scale), so a queue after it holds the rest of `latencyFrames`, and is
/// trimmed or padded by the difference when the scale changes.
///
/// Real-time contract: `init` allocates everything; `reset` and `process` allocate nothing
/// and take no locks. One thread at a time (a renderer's), handed over through a lock.
// @unchecked: every var and buffer belongs to the one thread using it; the renderer hands
// the instance to its render thread through a Mutex and never uses it elsewhere.
final class RubberBandStage: @unchecked Sendable {
    /// Frames Rubber Band's finer engine may hold back beyond its stated delay while it
    /// gathers a block, in units of its delay at scale 1: measured over scales 0.25 to 4 and
    /// periods of 480 and 1,920 frames, at most 1.05 of them; given the next whole unit and
    /// one more.
    static let burstMargin = 2
    /// The scales the stage is run at once when made, so that Rubber Band sizes its buffers
    /// for the extremes then, off the render thread (the first use of the smallest scale
    /// otherwise allocates inside `process`).
    static let warmUpScales = [1 / PitchKeeper.fastestKeptRate, 1 / PitchKeeper.slowestKeptRate, 1]
    /// Lags between the calibration's coarse scores: its burst of noise is smoothed over
    /// twice as many frames, so it correlates over that many either side of its lag, every
    /// 8th lag finds the peak's slope, and the fine pass its top, at a ninth of the work.
    static let calibrationStride = 8
    /// How much of what was heard a stage taken in while playing is given first, in Rubber
    /// Band's preferred start pads (2,048 frames at 48 kHz): its finer engine's longest
    /// window spans two. Given one pad of the tone before it, a stream's first 5 ms came out
    /// at 73 % of its level; given two, at its full level (`PitchKeeperTests`).
    static let leadInPads = 2

    let channels: Int
    /// The most frames `process` takes in one call.
    let maximumFrames: Int
    /// The constant delay from a frame given to the same frame coming out.
    let latencyFrames: Int
    /// Times `process` found its queue short and gave silence (never, when `latencyFrames`
    /// holds): a reading for tests and statistics.
    private(set) var underflows = 0

    private let stretcher: OpaquePointer
    /// Rubber Band's delay at scale 1, and the zeros it wants before the first frame.
    private let unitDelay: Int
    private let startPad: Int
    private let input: UnsafeMutablePointer<Float>
    private let inputChannels: UnsafeMutablePointer<UnsafePointer<Float>?>
    private let outputChannels: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>
    /// The queue after Rubber Band: planar, `queueCapacity` frames a channel.
    private let queue: UnsafeMutablePointer<Float>
    private let queueCapacity: Int
    private var queueStart = 0
    private var queueCount = 0
    /// Frames still to take off the queue's newest end after a scale change raised Rubber
    /// Band's delay by more than the queue held.
    private var trimDebt = 0
    private var scale = 1.0
    private var delay: Int
    /// What Rubber Band's stated start delay leaves out, at scale 1: once it has shifted
    /// the pitch at all, its resampler stays in the path and adds its own delay, which grows
    /// as the scale falls as the stated delay does (124 frames at 48 kHz, for both engines).
    /// Measured when the stage is made (`calibrate`).
    private var unstatedDelay = 0.0

    /// A stage for `channels` of audio at `sampleRate`, taking up to `maximumFrames` a call.
    /// Nil when Rubber Band cannot be set up (memory ran out).
    init?(sampleRate: Int, channels: Int, maximumFrames: Int) {
        self.channels = max(1, channels)
        self.maximumFrames = max(1, maximumFrames)
        let options = Int32(RubberBandOptionProcessRealTime.rawValue) | Int32(RubberBandOptionThreadingNever.rawValue)
            | Int32(RubberBandOptionPitchHighConsistency.rawValue) | Int32(RubberBandOptionChannelsTogether.rawValue)
            | Int32(RubberBandOptionEngineFiner.rawValue)
        guard let stretcher = rubberband_new(UInt32(max(8_000, sampleRate)), UInt32(self.channels), options, 1, 1) else { return nil }
        self.stretcher = stretcher
        // Rubber Band writes its warnings to standard error itself (one comes from the
        // warm-up below at low sample rates); a library of Chorus's writes there nothing.
        rubberband_set_debug_level(stretcher, -1)
        rubberband_set_max_process_size(stretcher, UInt32(max(self.maximumFrames, 8_192)))
        unitDelay = Int(rubberband_get_start_delay(stretcher))
        startPad = Int(rubberband_get_preferred_start_pad(stretcher))
        delay = unitDelay
        let largestDelay = Int((Double(unitDelay) * PitchKeeper.fastestKeptRate).rounded(.up))
        latencyFrames = largestDelay + Self.burstMargin * unitDelay
        queueCapacity = 2 * latencyFrames + 4 * max(self.maximumFrames, startPad)
        let inputFrames = max(self.maximumFrames, startPad)
        input = .allocate(capacity: inputFrames * self.channels)
        input.initialize(repeating: 0, count: inputFrames * self.channels)
        queue = .allocate(capacity: queueCapacity * self.channels)
        queue.initialize(repeating: 0, count: queueCapacity * self.channels)
        inputChannels = .allocate(capacity: self.channels)
        outputChannels = .allocate(capacity: self.channels)
        for channel in 0..<self.channels {
            (inputChannels + channel).initialize(to: UnsafePointer(input + channel * inputFrames))
            (outputChannels + channel).initialize(to: nil)
        }
        warmUp()
        unstatedDelay = Double(calibrate() - unitDelay)
        reset(rate: 1)
    }

    /// The delay at scale `scale`: Rubber Band's stated one and its resampler's.
    private func totalDelay(atScale scale: Double) -> Int {
        Int(rubberband_get_start_delay(stretcher)) + Int((unstatedDelay / scale).rounded())
    }

    /// Rubber Band's whole delay at scale 1, measured: a burst of noise goes through, and the
    /// lag at which what comes out best matches it is the delay (a phase vocoder at scale 1
    /// gives back its input, delayed). Stated delay plus the resampler's, when it has one.
    private func calibrate() -> Int {
        rubberband_reset(stretcher)
        rubberband_set_pitch_scale(stretcher, 1)
        let inputFrames = max(maximumFrames, startPad)
        let chunk = min(maximumFrames, 1_024)
        let probeFrames = 4 * unitDelay
        let total = probeFrames + 4 * unitDelay
        // A fixed pseudo-random burst (a linear congruential generator's top bits), smoothed
        // over `calibrationStride` × 2 frames: one lag stands out, and the correlation's peak
        // is wide enough for the coarse pass to land on its slope.
        var seed: UInt32 = 0x2545_F491
        var noise = [Float](repeating: 0, count: probeFrames)
        for index in noise.indices {
            seed = seed &* 1_664_525 &+ 1_013_904_223
            noise[index] = Float(Int32(bitPattern: seed) >> 8) / Float(1 << 23) * 0.5
        }
        let smoothing = 2 * Self.calibrationStride
        var probe = [Float](repeating: 0, count: probeFrames)
        var running: Float = 0
        for index in noise.indices {
            running += noise[index] - (index >= smoothing ? noise[index - smoothing] : 0)
            probe[index] = running / Float(smoothing)
        }
        var out = [Float]()
        out.reserveCapacity(total + 8 * unitDelay)
        var fed = 0
        while fed < total {
            let count = min(chunk, total - fed)
            for channel in 0..<channels {
                let plane = input + channel * inputFrames
                for frame in 0..<count { plane[frame] = fed + frame < probeFrames ? probe[fed + frame] : 0 }
            }
            rubberband_process(stretcher, inputChannels, UInt32(count), 0)
            fed += count
            while true {
                let ready = Int(rubberband_available(stretcher))
                if ready <= 0 { break }
                let chunkOut = min(ready, queueCapacity)
                for channel in 0..<channels { outputChannels[channel] = queue + channel * queueCapacity }
                let taken = Int(rubberband_retrieve(stretcher, outputChannels, UInt32(chunkOut)))
                if taken <= 0 { break }
                out.append(contentsOf: UnsafeBufferPointer(start: queue, count: taken))
            }
        }
        // Rubber Band's lead-in was not given here, so its output starts that much early.
        // A coarse pass every `calibrationStride` lags, then every lag around the best.
        let window = probeFrames / 2
        let lowest = max(0, unitDelay - startPad - unitDelay / 2)
        let highest = min(unitDelay - startPad + unitDelay, out.count - window)
        guard highest >= lowest else { return unitDelay }
        func score(_ lag: Int) -> Double {
            out.withUnsafeBufferPointer { output in
                probe.withUnsafeBufferPointer { burst in
                    var sum = 0.0
                    for index in 0..<window { sum += Double(output[lag + index]) * Double(burst[index]) }
                    return sum
                }
            }
        }
        var best = lowest
        var bestScore = -Double.infinity
        func consider(_ lag: Int) {
            let value = score(lag)
            if value > bestScore { (best, bestScore) = (lag, value) }
        }
        for lag in stride(from: lowest, through: highest, by: Self.calibrationStride) { consider(lag) }
        for lag in max(lowest, best - Self.calibrationStride)...min(highest, best + Self.calibrationStride) { consider(lag) }
        return best + startPad
    }

    /// Runs silence through the stage at each of `warmUpScales`, long enough for Rubber Band
    /// to reach its steady state there.
    private func warmUp() {
        let inputFrames = max(maximumFrames, startPad)
        let chunk = min(maximumFrames, 1_024)
        for channel in 0..<channels { (input + channel * inputFrames).update(repeating: 0, count: inputFrames) }
        for warmScale in Self.warmUpScales {
            rubberband_set_pitch_scale(stretcher, warmScale)
            var fed = 0
            while fed < 2 * latencyFrames {
                rubberband_process(stretcher, inputChannels, UInt32(chunk), 0)
                drain()
                queueStart = 0
                queueCount = 0
                fed += chunk
            }
        }
    }

    deinit {
        rubberband_delete(stretcher)
        input.deallocate()
        queue.deallocate()
        inputChannels.deallocate()
        outputChannels.deallocate()
    }

    /// How much of a lead `reset` takes in: `leadInPads` of Rubber Band's preferred start pad.
    var leadInFrames: Int { Self.leadInPads * startPad }

    /// Forgets everything given so far and starts again for content read at `rate`: the next
    /// `latencyFrames` frames out are silence, then what is given from now on. Rubber Band's
    /// lead-in is the last `leadInFrames` of `lead` (interleaved, `leadFrames` of them), with
    /// silence before them when there are fewer.
    func reset(rate: Double, lead: UnsafePointer<Float>? = nil, leadFrames: Int = 0) {
        rubberband_reset(stretcher)
        scale = PitchKeeper.scale(forRate: rate)
        rubberband_set_pitch_scale(stretcher, scale)
        delay = totalDelay(atScale: scale)
        queueStart = 0
        queueCount = 0
        trimDebt = 0
        underflows = 0
        // Rubber Band's lead-in, its start pad and any more of `lead` there is room for: its
        // delay is counted from the frame after it. What comes out for the lead-in beyond the
        // pad takes the place of as much of the silence the queue starts with, so the whole
        // stays `latencyFrames`; all of it precedes the content (`takeIn` drops it).
        let silence = max(0, latencyFrames - delay)
        let longest = startPad + min(silence, leadInFrames - startPad)
        let given = lead == nil ? 0 : min(max(0, leadFrames), longest)
        let total = max(startPad, given)
        pushSilence(silence - (total - startPad))
        let inputFrames = max(maximumFrames, startPad)
        var fed = 0
        while fed < total {
            let chunk = min(inputFrames, total - fed)
            for channel in 0..<channels {
                let plane = input + channel * inputFrames
                for frame in 0..<chunk {
                    // Silence first when the lead is short of the pad, then the lead's last frames.
                    let index = fed + frame - (total - given)
                    plane[frame] = index < 0 ? 0 : lead.map { $0[(leadFrames - given + index) * channels + channel] } ?? 0
                }
            }
            rubberband_process(stretcher, inputChannels, UInt32(chunk), 0)
            drain()
            fed += chunk
        }
    }

    /// Replaces `buffer`'s first `frames` interleaved frames (at most `maximumFrames`) with
    /// what comes out `latencyFrames` after them, pitch-shifted for content read at `rate`.
    func process(_ buffer: UnsafeMutablePointer<Float>, frames: Int, rate: Double) {
        let count = min(max(0, frames), maximumFrames)
        guard count > 0 else { return }
        let wanted = PitchKeeper.scale(forRate: rate)
        if wanted != scale { change(scale: wanted) }
        let inputFrames = max(maximumFrames, startPad)
        for channel in 0..<channels {
            let plane = input + channel * inputFrames
            for frame in 0..<count { plane[frame] = buffer[frame * channels + channel] }
        }
        rubberband_process(stretcher, inputChannels, UInt32(count), 0)
        drain()
        let available = min(count, queueCount)
        for frame in 0..<available {
            let index = (queueStart + frame) % queueCapacity
            for channel in 0..<channels { buffer[frame * channels + channel] = queue[channel * queueCapacity + index] }
        }
        if available < count {
            underflows += 1
            (buffer + available * channels).update(repeating: 0, count: (count - available) * channels)
        }
        queueStart = (queueStart + available) % queueCapacity
        queueCount -= available
    }

    /// A new scale moves Rubber Band's delay: the queue gives up or takes on the difference,
    /// at its newest end (where content of the new scale will join), so the whole stays
    /// `latencyFrames`.
    private func change(scale newScale: Double) {
        scale = newScale
        rubberband_set_pitch_scale(stretcher, newScale)
        let newDelay = totalDelay(atScale: newScale)
        let difference = newDelay - delay
        delay = newDelay
        if difference > 0 {
            let trimmed = min(difference, queueCount)
            queueCount -= trimmed
            trimDebt += difference - trimmed
        } else if difference < 0 {
            let owed = min(trimDebt, -difference)
            trimDebt -= owed
            pushSilence(-difference - owed)
        }
    }

    /// Moves everything Rubber Band has ready into the queue (less any frames owed).
    private func drain() {
        while true {
            let ready = Int(rubberband_available(stretcher))
            if ready <= 0 { return }
            let end = (queueStart + queueCount) % queueCapacity
            let room = queueCapacity - queueCount
            // Full only if the delay's bound failed: the oldest frames give way.
            if room == 0 {
                queueStart = (queueStart + min(ready, queueCapacity)) % queueCapacity
                queueCount -= min(ready, queueCapacity)
                continue
            }
            let chunk = min(ready, room, queueCapacity - end)
            for channel in 0..<channels { outputChannels[channel] = queue + channel * queueCapacity + end }
            let taken = Int(rubberband_retrieve(stretcher, outputChannels, UInt32(chunk)))
            if taken <= 0 { return }
            queueCount += taken
            if trimDebt > 0 {
                let trimmed = min(trimDebt, taken)
                queueCount -= trimmed
                trimDebt -= trimmed
            }
        }
    }

    private func pushSilence(_ frames: Int) {
        var left = min(frames, queueCapacity - queueCount)
        while left > 0 {
            let end = (queueStart + queueCount) % queueCapacity
            let chunk = min(left, queueCapacity - end)
            for channel in 0..<channels { (queue + channel * queueCapacity + end).update(repeating: 0, count: chunk) }
            queueCount += chunk
            left -= chunk
        }
    }
}
