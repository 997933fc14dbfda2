import Foundation
import Testing
import ChorusTestSupport
@testable import MediaPipeline

@Suite(.ownThread) struct FractionalResamplerTests {
    /// A ramp source: frame n has value n (one channel).
    final class Ramp {
        var next: Int64 = 0
        func pull(_ destination: UnsafeMutablePointer<Float>) -> Bool {
            destination.pointee = Float(next)
            next += 1
            return true
        }
    }

    /// Sines at `frequency` cycles per input frame, channel c shifted by c radians (so a
    /// channel mixed up with another shows).
    final class Sines {
        let frequency: Double
        let channels: Int
        var next: Int64 = 0
        init(frequency: Double, channels: Int = 1) {
            self.frequency = frequency
            self.channels = channels
        }
        func value(channel: Int = 0, at position: Double) -> Double {
            sin(2 * Double.pi * frequency * position + Double(channel))
        }
        func pull(_ destination: UnsafeMutablePointer<Float>) -> Bool {
            for channel in 0..<channels { destination[channel] = Float(value(channel: channel, at: Double(next))) }
            next += 1
            return true
        }
    }

    /// Renders `count` frames at `ratio` from `source`: the frames, and the position of the first.
    func render(_ resampler: FractionalResampler, _ source: Sines, count: Int, ratio: Double) -> (first: Double, out: [Float]) {
        var out = [Float](repeating: .nan, count: count * resampler.channels)
        let first = out.withUnsafeMutableBufferPointer { buffer in
            resampler.render(into: buffer.baseAddress!, count: count, ratio: ratio) { source.pull($0) }
        }
        return (first, out)
    }

    /// Output frames to skip after a prime at 0: the filter's past taps were silence there,
    /// and the widest filter reaches `tapCount / 2 × ratio` input frames back.
    static let settling = 100

    @Test func ratioOnePassesInputThroughUnchanged() {
        let resampler = FractionalResampler(channels: 1)
        let ramp = Ramp()
        resampler.prime(at: 0) { ramp.pull($0) }
        var out = [Float](repeating: -1, count: 256)
        out.withUnsafeMutableBufferPointer { buffer in
            _ = resampler.render(into: buffer.baseAddress!, count: 256, ratio: 1) { ramp.pull($0) }
        }
        #expect(out == (0..<256).map(Float.init))
    }

    @Test func positionAdvancesByTheRatio() {
        let resampler = FractionalResampler(channels: 1)
        let ramp = Ramp()
        resampler.prime(at: 1000) { ramp.pull($0) }
        var out = [Float](repeating: 0, count: 10_000)
        let first = out.withUnsafeMutableBufferPointer { buffer in
            resampler.render(into: buffer.baseAddress!, count: 10_000, ratio: 1.0005) { ramp.pull($0) }
        }
        #expect(first == 1000)
        let position = Double(resampler.centerFrame) + resampler.phase
        #expect(abs(position - (1000 + 10_000 * 1.0005)) < 1e-6)
    }

    @Test func interpolatesASineWithoutDistortion() {
        // A 1 kHz sine at 48 kHz read 300 ppm fast: the output is the same sine at the
        // interpolated positions, to within -80 dB.
        let resampler = FractionalResampler(channels: 1)
        var n: Int64 = 0
        let frequency = 1000.0 / 48_000
        let pull: (UnsafeMutablePointer<Float>) -> Bool = { destination in
            destination.pointee = Float(sin(2 * Double.pi * frequency * Double(n)))
            n += 1
            return true
        }
        resampler.prime(at: 0, pull: pull)
        var out = [Float](repeating: 0, count: 4_800)
        let ratio = 1.0003
        _ = out.withUnsafeMutableBufferPointer { resampler.render(into: $0.baseAddress!, count: 4_800, ratio: ratio, pull: pull) }
        var worst = 0.0
        // Skip the start, where the filter's past taps were silence.
        for index in 100..<4_800 {
            let expected = sin(2 * Double.pi * frequency * Double(index) * ratio)
            worst = max(worst, abs(Double(out[index]) - expected))
        }
        #expect(worst < 1e-4)
    }

    @Test(arguments: [1.5, 2, 4, 8])
    func readingFastFiltersOutWhatWouldFoldIntoTheBand(ratio: Double) {
        // A sine at 0.7 cycles per output frame, above the output's Nyquist (0.5): read as
        // it is, it would fold down to 0.3 at full level. (At ratio 2, 0.35 cycles per
        // input frame.) It comes out about 75 dB down.
        let resampler = FractionalResampler(channels: 1)
        let source = Sines(frequency: 0.7 / ratio)
        resampler.prime(at: 0) { source.pull($0) }
        let (_, out) = render(resampler, source, count: 4_096, ratio: ratio)
        let peak = out[Self.settling...].map { abs(Double($0)) }.max()!
        #expect(20 * log10(peak) < -65)
    }

    @Test(arguments: [0.5, 1.5, 2, 8], [1, 2, 3])
    func keepsASineInTheBandAtAnyRatio(ratio: Double, channels: Int) {
        // 0.05 cycles per input frame (2.4 kHz at 48 kHz), or 0.1 per output frame where
        // that is lower (at 8: 0.05 would come out at 0.4, the top of the band), well inside
        // the band: the output is the same sine at the resampled positions, within 2.4e-4.
        let resampler = FractionalResampler(channels: channels)
        let source = Sines(frequency: min(0.05, 0.1 / ratio), channels: channels)
        resampler.prime(at: 0) { source.pull($0) }
        let count = 4_096
        let (first, out) = render(resampler, source, count: count, ratio: ratio)
        #expect(first == 0)
        var worst = 0.0
        for index in Self.settling..<count {
            for channel in 0..<channels {
                let expected = source.value(channel: channel, at: Double(index) * ratio)
                worst = max(worst, abs(Double(out[index * channels + channel]) - expected))
            }
        }
        #expect(worst < 5e-4)
    }

    @Test func stereoRatioOnePassesInputThroughUnchanged() {
        let resampler = FractionalResampler(channels: 2)
        let source = Sines(frequency: 0.1, channels: 2)
        resampler.prime(at: 0) { source.pull($0) }
        let (_, out) = render(resampler, source, count: 256, ratio: 1)
        let reference = Sines(frequency: 0.1, channels: 2)
        var expected = [Float](repeating: 0, count: 512)
        expected.withUnsafeMutableBufferPointer { buffer in
            for frame in 0..<256 { _ = reference.pull(buffer.baseAddress! + frame * 2) }
        }
        #expect(out == expected)
    }

    @Test func aChangeOfRatioKeepsThePositionAndTheSignalContinuous() {
        // Across the threshold both ways, just either side of it, to the widest filter and
        // back to exactly 1: every block starts where the last left off, and a slow sine
        // stays on its ideal course through every change.
        let resampler = FractionalResampler(channels: 1)
        let source = Sines(frequency: 0.004)
        resampler.prime(at: 0) { source.pull($0) }
        let ratios = [1.0003, 2, 1.02, 0.5, FractionalResampler.antiAliasingThreshold + 0.01,
                      FractionalResampler.antiAliasingThreshold - 0.01, 8, 1.5, 1]
        let count = 500
        var expected = 0.0
        var worst = 0.0
        for ratio in ratios {
            let (first, out) = render(resampler, source, count: count, ratio: ratio)
            #expect(abs(first - expected) < 1e-6)
            for index in 0..<count {
                let position = first + Double(index) * ratio
                guard position >= Double(Self.settling) else { continue }
                worst = max(worst, abs(Double(out[index]) - source.value(at: position)))
            }
            expected = first + Double(count) * ratio
        }
        #expect(abs(Double(resampler.centerFrame) + resampler.phase - expected) < 1e-6)
        #expect(worst < 2e-4)
    }

    @Test func pullsReachAsFarAheadAsTheFilterInUse() {
        // What the renderer relies on: near 1 the frames pulled reach `tapCount / 2` past the
        // centre, as they always have; reading faster, as far as the wider filter reaches;
        // and always past the centre, so an end marker is met before the centre passes it.
        let resampler = FractionalResampler(channels: 1)
        let ramp = Ramp()
        ramp.next = 500
        resampler.prime(at: 500) { ramp.pull($0) }
        let nearOne = FractionalResampler.tapCount / 2
        #expect(ramp.next == 500 + Int64(nearOne) + 1)
        var out = [Float](repeating: 0, count: 300)
        /// Frames pulled past the centre after `count` frames at `ratio`.
        func ahead(afterRendering count: Int, at ratio: Double) -> Int {
            out.withUnsafeMutableBufferPointer { buffer in
                _ = resampler.render(into: buffer.baseAddress!, count: count, ratio: ratio) { ramp.pull($0) }
            }
            return Int(ramp.next - 1 - resampler.centerFrame)
        }
        #expect(ahead(afterRendering: 300, at: 1.0005) == nearOne)
        #expect(ahead(afterRendering: 300, at: 0.5) == nearOne)
        #expect(ahead(afterRendering: 300, at: 3) == 24)
        #expect(ahead(afterRendering: 300, at: FractionalResampler.maximumRatio) == FractionalResampler.lookahead)
        #expect(Double(FractionalResampler.lookahead)
                == (Double(FractionalResampler.tapCount / 2) * FractionalResampler.maximumRatio).rounded(.up))
        // Back near 1, the frames already pulled are used up before any more are pulled.
        let drained = ahead(afterRendering: 20, at: 1.0005)
        #expect(drained > nearOne && drained < FractionalResampler.lookahead)
        #expect(ahead(afterRendering: 300, at: 1.0005) == nearOne)
        for ratio in [0.5, 1, 1.0005, 1.05, 1.06, 2, 3, 8, 8.25, 100] {
            #expect(ahead(afterRendering: 300, at: ratio) == FractionalResampler.lookahead(atRatio: ratio), "ratio \(ratio)")
        }
    }

    @Test func anOutOfRangeRatioIsClamped() {
        // Each reads as the nearest ratio rendered (NaN as 1), with finite output and no
        // read outside the history.
        let cases: [(ratio: Double, reads: Double)] = [
            (100, FractionalResampler.maximumRatio), (.infinity, FractionalResampler.maximumRatio),
            (0, FractionalResampler.minimumRatio), (-3, FractionalResampler.minimumRatio),
            (-.infinity, FractionalResampler.minimumRatio), (1e-9, FractionalResampler.minimumRatio),
            (.nan, 1), (.signalingNaN, 1),
        ]
        let resampler = FractionalResampler(channels: 2)
        let source = Sines(frequency: 0.01, channels: 2)
        resampler.prime(at: 0) { source.pull($0) }
        // Past the onset, whose step from the silence before the stream rings.
        _ = render(resampler, source, count: Self.settling, ratio: 1)
        for (ratio, reads) in cases {
            let before = Double(resampler.centerFrame) + resampler.phase
            let (first, out) = render(resampler, source, count: 1_000, ratio: ratio)
            #expect(first == before)
            #expect(out.allSatisfy { $0.isFinite && abs($0) <= 1.01 })
            let after = Double(resampler.centerFrame) + resampler.phase
            #expect(abs(after - (before + 1_000 * reads)) < 1e-6, "ratio \(ratio)")
        }
    }
}
