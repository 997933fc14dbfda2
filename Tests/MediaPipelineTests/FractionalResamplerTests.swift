import Foundation
import Testing
@testable import MediaPipeline

@Suite struct FractionalResamplerTests {
    /// A ramp source: frame n has value n (one channel).
    final class Ramp {
        var next: Int64 = 0
        func pull(_ destination: UnsafeMutablePointer<Float>) -> Bool {
            destination.pointee = Float(next)
            next += 1
            return true
        }
    }

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
}
