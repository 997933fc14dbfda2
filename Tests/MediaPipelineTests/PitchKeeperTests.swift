import CAllocationCounter
import Foundation
import MediaClock
import Testing
import ChorusTestSupport
@testable import MediaPipeline

/// The pitch-keeping stage: a delay that does not move with the scale, and a queue that
/// never runs dry.
@Suite(.ownThread) struct PitchKeeperTests {
    static let sampleRate = 48_000
    static let period = 480

    /// Runs `frames` of `signal` (stereo, the same in both channels) through `keeper` a period
    /// at a time, at the rate `rate(periodIndex)`; returns the left channel out.
    static func run(_ keeper: PitchKeeper, frames: Int, rate: (Int) -> Double, signal: (Int) -> Float) -> [Float] {
        var out: [Float] = []
        var buffer = [Float](repeating: 0, count: period * 2)
        var frame = 0
        var index = 0
        while frame < frames {
            for offset in 0..<period {
                let value = signal(frame + offset)
                buffer[offset * 2] = value
                buffer[offset * 2 + 1] = value
            }
            buffer.withUnsafeMutableBufferPointer { keeper.process($0.baseAddress!, frames: period, rate: rate(index)) }
            for offset in 0..<period { out.append(buffer[offset * 2]) }
            frame += period
            index += 1
        }
        return out
    }

    /// Where a burst's energy is centred in `samples` between `range`'s bounds (frames): a
    /// phase vocoder spreads a burst's edges over its analysis window, so the centre of its
    /// energy is a steadier mark than its first loud sample.
    static func centre(of samples: [Float], in range: Range<Int>) -> Double {
        var weighted = 0.0, total = 0.0
        for frame in range where frame < samples.count {
            let energy = Double(samples[frame]) * Double(samples[frame])
            weighted += energy * Double(frame)
            total += energy
        }
        return total > 0 ? weighted / total : -1
    }

    /// How far a burst's centre may sit from its place: the overlap-add engine moves each
    /// grain by at most its search radius (15 ms, 720 frames here); a phase vocoder moves
    /// energy within its analysis window, 2,048 frames for Rubber Band's (measured, under
    /// 3 ms with the finer engine). The stage's whole delay, uncompensated or counted twice,
    /// is 65 ms or more.
    static func centreTolerance(_ mode: PitchMode) -> Double { mode == .spectral ? 2_048 : 720 }

    @Test("a burst comes out centred latencyFrames after it went in, at any kept rate", arguments: [PitchMode.timeDomain, .spectral], [0.25, 0.5, 1.0, 2.0, 4.0])
    func theDelayIsConstant(mode: PitchMode, rate: Double) throws {
        let keeper = try #require(PitchKeeper(mode: mode, sampleRate: Self.sampleRate, channels: 2, maximumFrames: 1_920))
        keeper.reset(rate: rate)
        let onset = 24_000
        let burst = 4_800
        // 100 ms of a tone at 440 × rate (as the resampler hands it over), silence around it.
        let frequency = 440 * rate
        let out = Self.run(keeper, frames: onset + keeper.latencyFrames + 24_000, rate: { _ in rate }) { frame in
            frame < onset || frame >= onset + burst ? 0
                : Float(0.5 * sin(2 * Double.pi * frequency * Double(frame - onset) / Double(Self.sampleRate)))
        }
        let due = Double(onset + keeper.latencyFrames) + Double(burst) / 2
        let heard = Self.centre(of: out, in: (Int(due) - 12_000)..<(Int(due) + 12_000))
        #expect(abs(heard - due) <= Self.centreTolerance(mode), "centred at \(heard), due at \(due)")
        #expect(keeper.underflows == 0)
    }

    /// How much of `samples` is not a sinusoid of `frequency` (dB): the least-squares fit of a
    /// sine and a cosine of it is taken away, and what is left is set against the whole.
    static func residualDecibels(_ samples: ArraySlice<Float>, frequency: Double) -> Double {
        var ss = 0.0, cc = 0.0, sc = 0.0, sy = 0.0, cy = 0.0, total = 0.0
        for (index, value) in samples.enumerated() {
            let phase = 2 * Double.pi * frequency * Double(index) / Double(sampleRate)
            let (sine, cosine, y) = (sin(phase), cos(phase), Double(value))
            ss += sine * sine; cc += cosine * cosine; sc += sine * cosine
            sy += sine * y; cy += cosine * y; total += y * y
        }
        let determinant = ss * cc - sc * sc
        let a = (sy * cc - cy * sc) / determinant
        let b = (cy * ss - sy * sc) / determinant
        var residual = 0.0
        for (index, value) in samples.enumerated() {
            let phase = 2 * Double.pi * frequency * Double(index) / Double(sampleRate)
            let error = Double(value) - a * sin(phase) - b * cos(phase)
            residual += error * error
        }
        return 10 * log10(max(residual, 1e-30) / max(total, 1e-30))
    }

    /// The time-domain engine splices a tone where its waveform continues: a tone read at
    /// 2× or ½× (an octave up or down, as the resampler hands it over) comes out at its own
    /// pitch with no more than a trace of the splices (measured: −74 dB beside it at 2×,
    /// −85 dB at ½×). A phase vocoder's tone wanders in phase over the second, so this fit
    /// does not apply to the spectral engine.
    @Test("a tone comes out pure at its own pitch through the time-domain engine", arguments: [0.5, 2.0])
    func aToneComesOutPure(rate: Double) throws {
        let keeper = try #require(PitchKeeper(mode: .timeDomain, sampleRate: Self.sampleRate, channels: 2, maximumFrames: 1_920))
        keeper.reset(rate: rate)
        let out = Self.run(keeper, frames: Self.sampleRate * 3, rate: { _ in rate }) { frame in
            Float(0.5 * sin(2 * Double.pi * 440 * rate * Double(frame) / Double(Self.sampleRate)))
        }
        let residual = Self.residualDecibels(out[Self.sampleRate..<(2 * Self.sampleRate)], frequency: 440)
        #expect(residual < -40, "\(residual) dB beside the tone")
    }

    @Test("the rate can change every period, across the whole kept range, and the queue never runs dry",
          arguments: [PitchMode.timeDomain, .spectral])
    func rateChangesNeverStarveTheQueue(mode: PitchMode) throws {
        let keeper = try #require(PitchKeeper(mode: mode, sampleRate: Self.sampleRate, channels: 2, maximumFrames: 1_920))
        keeper.reset(rate: 1)
        let rates = [1.0, 4.0, 0.25, 2.0, 0.5, 1.5, 3.0, 0.75, 1.0]
        _ = Self.run(keeper, frames: Self.sampleRate * 10, rate: { rates[($0 / 40) % rates.count] }) { frame in
            Float(0.3 * sin(2 * Double.pi * 300 * Double(frame) / Double(Self.sampleRate)))
        }
        #expect(keeper.underflows == 0)
    }

    /// What `run` gives for a signal of two tones with a loud part every quarter second,
    /// cut into `periods` (frames each call), through a fresh stage.
    static func render(_ mode: PitchMode, periods: (Int) -> Int, rate: @escaping (Int) -> Double) throws -> [Float] {
        let keeper = try #require(PitchKeeper(mode: mode, sampleRate: sampleRate, channels: 2, maximumFrames: 1_920))
        keeper.reset(rate: rate(0))
        var out: [Float] = []
        var buffer = [Float](repeating: 0, count: 1_920 * 2)
        var frame = 0
        var index = 0
        while frame < sampleRate * 4 {
            let count = periods(index)
            for offset in 0..<count {
                let t = Double(frame + offset) / Double(sampleRate)
                let level = (frame + offset) % 12_000 < 3_000 ? 1.0 : 0.2
                let value = Float(level * (0.3 * sin(2 * Double.pi * 330 * t) + 0.2 * sin(2 * Double.pi * 1_234 * t)))
                buffer[offset * 2] = value
                buffer[offset * 2 + 1] = -value
            }
            buffer.withUnsafeMutableBufferPointer { keeper.process($0.baseAddress!, frames: count, rate: rate(frame)) }
            for offset in 0..<count { out.append(buffer[offset * 2]) }
            frame += count
            index += 1
        }
        return out
    }

    @Test("what comes out does not depend on how the sound was cut into periods (rooms with other devices hear the same)",
          arguments: [PitchMode.timeDomain, .spectral])
    func periodsDoNotChangeTheSound(mode: PitchMode) throws {
        // Period sizes from a seeded generator, the same on every run.
        var generator = SeededGenerator(seed: 18)
        let sizes = (0..<2_000).map { _ in 1 + Int(generator.next() % 1_920) }
        let even = try Self.render(mode, periods: { _ in 480 }, rate: { _ in 1.5 })
        let uneven = try Self.render(mode, periods: { sizes[$0] }, rate: { _ in 1.5 })
        let count = min(even.count, uneven.count)
        #expect(count > Self.sampleRate * 3)
        #expect(zip(even.prefix(count), uneven.prefix(count)).allSatisfy { $0 == $1 })
    }

    /// The level of `samples` (RMS) in windows of `window` frames.
    static func levels(_ samples: ArraySlice<Float>, window: Int) -> [Double] {
        stride(from: samples.startIndex, to: samples.endIndex - window + 1, by: window).map { start in
            (samples[start..<start + window].reduce(0.0) { $0 + Double($1) * Double($1) } / Double(window)).squareRoot()
        }
    }

    /// A speed change taken in while playing (`takeIn`) starts the stage's stream partway:
    /// given what was heard before it, the phase vocoder's first windows are whole, and the
    /// stream starts at its full level instead of fading in from silence.
    @Test("taken in after what was heard, the stage's stream starts at full level", arguments: [PitchMode.spectral, .timeDomain])
    func takenInAfterWhatWasHeardItStartsAtFullLevel(mode: PitchMode) throws {
        let keeper = try #require(PitchKeeper(mode: mode, sampleRate: Self.sampleRate, channels: 2, maximumFrames: Self.period))
        let rate = 1.5
        // A steady tone as the resampler hands over content read at 1.5 (a 440 Hz tone at 660).
        let tone: (Int) -> Float = { Float(0.5 * sin(2 * Double.pi * 440 * rate * Double($0) / Double(Self.sampleRate))) }
        let heard = 4_800
        var lead = [Float](repeating: 0, count: heard * 2)
        for frame in 0..<heard { lead[frame * 2] = tone(frame); lead[frame * 2 + 1] = tone(frame) }
        var buffer = [Float](repeating: 0, count: Self.period * 2)
        for frame in 0..<Self.period { buffer[frame * 2] = tone(heard + frame); buffer[frame * 2 + 1] = tone(heard + frame) }
        lead.withUnsafeBufferPointer { lead in
            buffer.withUnsafeMutableBufferPointer { buffer in
                keeper.takeIn(buffer.baseAddress!, frames: Self.period, direct: 0, rate: rate,
                              lead: lead.baseAddress, leadFrames: heard) { destination, offset, count in
                    for index in 0..<count {
                        destination[index * 2] = tone(heard + offset + index)
                        destination[index * 2 + 1] = tone(heard + offset + index)
                    }
                }
            }
        }
        var out = (0..<Self.period).map { buffer[$0 * 2] }
        // Later periods are given their delay ahead of where they are heard.
        let later = Self.run(keeper, frames: Self.sampleRate / 2, rate: { _ in rate }) { tone(heard + Self.period + keeper.latencyFrames + $0) }
        out += later
        let window = 240
        let steady = Self.levels(out[12_000..<24_000], window: window)
        let start = Self.levels(out[0..<1_920], window: window)
        let full = steady.reduce(0, +) / Double(steady.count)
        let lowest = start.min() ?? 0
        #expect(lowest > 0.9 * full, "the first 40 ms fell to \(lowest / full) of the level: \(start.map { ($0 / full * 100).rounded() })")
    }

    /// Where a burst `onset` frames into a stage's stream comes out when the stage is taken
    /// in after `leadFrames` of a tone.
    static func burstCentreTakenIn(_ keeper: PitchKeeper, leadFrames: Int, onset: Int, burst: Int) -> Double {
        let signal: (Int) -> Float = { $0 >= onset && $0 < onset + burst ? Float(0.5 * sin(2 * Double.pi * 660 * Double($0) / 48_000)) : 0 }
        let lead = (0..<leadFrames).flatMap { frame -> [Float] in
            let value = Float(0.3 * sin(2 * Double.pi * 330 * Double(frame) / 48_000))
            return [value, value]
        }
        var buffer = (0..<period).flatMap { [signal($0), signal($0)] }
        lead.withUnsafeBufferPointer { lead in
            buffer.withUnsafeMutableBufferPointer { buffer in
                keeper.takeIn(buffer.baseAddress!, frames: period, direct: 0, rate: 1.5, lead: lead.baseAddress, leadFrames: leadFrames) { destination, offset, count in
                    for index in 0..<count {
                        destination[index * 2] = signal(offset + index)
                        destination[index * 2 + 1] = signal(offset + index)
                    }
                }
            }
        }
        let out = (0..<period).map { buffer[$0 * 2] } + run(keeper, frames: onset + 2 * burst, rate: { _ in 1.5 }) { signal(period + keeper.latencyFrames + $0) }
        return centre(of: out, in: (onset - burst)..<(onset + 2 * burst))
    }

    @Test("a lead given to a stage taken in moves nothing: a burst comes out where it does without one")
    func aLeadMovesNothing() throws {
        let onset = 9_600, burst = 4_800
        let bare = try #require(PitchKeeper(mode: .spectral, sampleRate: Self.sampleRate, channels: 2, maximumFrames: Self.period))
        let led = try #require(PitchKeeper(mode: .spectral, sampleRate: Self.sampleRate, channels: 2, maximumFrames: Self.period))
        let without = Self.burstCentreTakenIn(bare, leadFrames: 0, onset: onset, burst: burst)
        let with = Self.burstCentreTakenIn(led, leadFrames: 9_600, onset: onset, burst: burst)
        #expect(abs(without - Double(onset + burst / 2)) < Self.centreTolerance(.spectral), "without a lead, centred at \(without)")
        #expect(abs(with - without) < 48, "centred at \(with) with a lead, \(without) without")
    }

    @Test("starting again and processing allocate nothing (both happen on the render thread)",
          .enabled(if: chorus_allocation_counting_available() != 0, "allocations are not countable under a sanitizer"),
          arguments: [PitchMode.timeDomain, .spectral])
    func resetAndProcessAllocateNothing(mode: PitchMode) throws {
        let keeper = try #require(PitchKeeper(mode: mode, sampleRate: Self.sampleRate, channels: 2, maximumFrames: 1_920))
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: 1_920 * 2)
        defer { buffer.deallocate() }
        buffer.initialize(repeating: 0.25, count: 1_920 * 2)
        // Rubber Band sizes some of its state on first use: one warm-up round first.
        keeper.reset(rate: 2)
        for index in 0..<50 { keeper.process(buffer, frames: 1_920, rate: index < 25 ? 2 : 0.5) }
        chorus_allocation_counting_start()
        keeper.reset(rate: 1.5)
        for index in 0..<50 { keeper.process(buffer, frames: index % 2 == 0 ? 480 : 1_920, rate: index < 25 ? 1.5 : 0.75) }
        let counted = chorus_allocation_counting_stop()
        #expect(counted == 0, "\(counted) allocations")
    }
}
