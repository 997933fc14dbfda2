import Foundation
import Testing
import ChorusTestSupport
import MediaClock
@testable import MediaPipeline

/// The device timing filter against synthetic reports: a straight line (the frames leaving
/// at the device's rate) plus the kinds of error real reports carry.
@Suite(.ownThread) struct DeviceTimingFilterTests {
    static let sampleRate = 48_000
    static let periodFrames = 480

    /// Feeds `seconds` of reports for a device running `ratePPM` slow (its frames last longer
    /// on the host clock) with Gaussian noise of `noise` seconds and an extra `wander(t)`;
    /// returns each period's smoothed time minus the true one, in seconds.
    func run(seconds: Double, ratePPM: Double, noise: Double, seed: UInt64 = 1,
             wander: (Double) -> Double = { _ in 0 }, filter: inout DeviceTimingFilter) -> [Double] {
        var generator = SeededGenerator(seed: seed)
        let frameSeconds = (1 + ratePPM / 1e6) / Double(Self.sampleRate)
        let start = 1_000.0
        var errors: [Double] = []
        let periods = Int(seconds * Double(Self.sampleRate) / Double(Self.periodFrames))
        for period in 0..<periods {
            let truth = start + Double(period * Self.periodFrames) * frameSeconds
            // Box-Muller from two uniforms in (0, 1].
            let u1 = Double.random(in: Double.ulpOfOne...1, using: &generator)
            let u2 = Double.random(in: 0...1, using: &generator)
            let gaussian = (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
            let reported = truth + noise * gaussian + wander(truth - start)
            let smoothed = filter.filter(HostTime(nanoseconds: Int64((reported * 1e9).rounded())), frames: Self.periodFrames)
            errors.append(Double(smoothed.nanoseconds) / 1e9 - truth)
        }
        return errors
    }

    @Test func hostTimesNearTheEpochKeepNanosecondResolution() {
        // A clock moved by libfaketime counts from 1970: about 1.8e18 ns, where a double
        // holds only every 256th nanosecond. Exact reports must come back exact.
        var filter = DeviceTimingFilter(sampleRate: Self.sampleRate)
        let origin: Int64 = 1_795_348_508_123_456_789
        let periodNanoseconds = 10_000_000.0
        var worst: Int64 = 0
        for period in 0..<3_000 {
            let reported = HostTime(nanoseconds: origin + Int64((Double(period) * periodNanoseconds).rounded()) + Int64(period % 7))
            let smoothed = filter.filter(reported, frames: Self.periodFrames)
            if period > 1_000 { worst = max(worst, abs(smoothed.nanoseconds - reported.nanoseconds)) }
        }
        // The reports carry a few nanoseconds of pattern; the line sits within them.
        #expect(worst <= 8, "worst \(worst) ns")
    }

    @Test func aMeasurementCarriedForwardCountsOnce() {
        // A sound server's figures every fifth period, carried forward in between by the
        // frames written (as the PulseAudio output reports them), against the same
        // measurements reported once each: the rate's certainty must be the same, not look
        // √5 better, and after two measurements it must not look known at all.
        var generator = SeededGenerator(seed: 7)
        var repeated = DeviceTimingFilter(sampleRate: Self.sampleRate)
        var once = DeviceTimingFilter(sampleRate: Self.sampleRate)
        let frameSeconds = (1 + 700e-6) / Double(Self.sampleRate)
        let queued = 4_800.0
        var measurement: PresentationTimestamp?
        var measuredAt = 0
        var afterTwo = 0.0
        for period in 0..<500 {
            let written = period * Self.periodFrames
            if period % 5 == 0 {
                // The frame `queued` before the next one is heard at `truth`, give or take.
                let truth = 1_000 + (Double(written) - queued) * frameSeconds
                let noisy = truth + 20e-6 * Double.random(in: -1.7...1.7, using: &generator)
                let fresh = PresentationTimestamp(host: HostTime(nanoseconds: Int64((noisy * 1e9).rounded())), queuedFrames: queued)
                measurement = fresh
                measuredAt = written
                _ = once.filter(fresh, frames: 5 * Self.periodFrames)
            }
            guard var report = measurement else { continue }
            report.queuedFrames += Double(written - measuredAt)
            _ = repeated.filter(report, frames: Self.periodFrames)
            if period == 9 { afterTwo = repeated.rateStandardErrorPPM }
        }
        #expect(afterTwo > 100, "two measurements gave a rate within \(afterTwo) ppm")
        let ratio = repeated.rateStandardErrorPPM / once.rateStandardErrorPPM
        #expect(ratio > 0.8 && ratio < 1.25, "repeated \(repeated.rateStandardErrorPPM) ppm, once \(once.rateStandardErrorPPM) ppm")
        #expect(abs((repeated.frameDurationRatio - 1) * 1e6 - 700) < 20, "rate \((repeated.frameDurationRatio - 1) * 1e6) ppm")
    }

    @Test func noisyReportsAverageOutAndTheRateIsLearned() {
        // 100 µs of white noise per report, a device 150 ppm slow: after half a minute the
        // line is within a few microseconds of the truth and the rate within a ppm.
        var filter = DeviceTimingFilter(sampleRate: Self.sampleRate)
        let errors = run(seconds: 40, ratePPM: 150, noise: 100e-6, filter: &filter)
        let settled = errors.suffix(500)
        let worst = settled.map(abs).max() ?? 1
        #expect(worst < 15e-6, "worst settled error \(worst * 1e6) µs")
        #expect(abs((filter.frameDurationRatio - 1) * 1e6 - 150) < 1, "rate \((filter.frameDurationRatio - 1) * 1e6) ppm")
    }

    /// A node whose clock runs 1 % off (a simulated or faked clock) sees its device 1 %
    /// off too: the rate is learned, not held at a crystal's bound.
    @Test(arguments: [10_000.0, -10_000.0])
    func aDeviceOnAClockSkewedOnPurposeIsLearned(ratePPM: Double) {
        var filter = DeviceTimingFilter(sampleRate: Self.sampleRate)
        let errors = run(seconds: 10, ratePPM: ratePPM, noise: 20e-6, filter: &filter)
        let worst = errors.suffix(200).map(abs).max() ?? 1
        #expect(worst < 15e-6, "worst settled error \(worst * 1e6) µs")
        #expect(abs((filter.frameDurationRatio - 1) * 1e6 - ratePPM) < 5, "rate \((filter.frameDurationRatio - 1) * 1e6) ppm")
    }

    @Test func aReportWanderOfSecondsIsNotFollowed() {
        // Reports that swing ±300 µs with a 4 s period (a sound server's interpolation)
        // move the settled line by far less than the swing.
        var filter = DeviceTimingFilter(sampleRate: Self.sampleRate)
        let errors = run(seconds: 60, ratePPM: 0, noise: 20e-6, wander: { 300e-6 * sin(2 * .pi * $0 / 4) }, filter: &filter)
        let settled = errors.suffix(1_000)
        let worst = settled.map(abs).max() ?? 1
        #expect(worst < 30e-6, "worst settled error \(worst * 1e6) µs")
    }

    @Test func aShiftOfTheReportsIsFollowedOnceItHoldsAndARestartAtOnce() {
        // Reports that move 2 ms and stay there are the device's timeline moving (a sound
        // server replaying a starved stream later): for the confirmation time the line
        // holds, then it follows. After `reset()` (an underrun, a flush) the line is taken
        // from the reports at once.
        var filter = DeviceTimingFilter(sampleRate: Self.sampleRate)
        let shifted = run(seconds: 40, ratePPM: 0, noise: 10e-6, wander: { $0 >= 30 ? 2e-3 : 0 }, filter: &filter)
        let periodsPerSecond = Self.sampleRate / Self.periodFrames
        let holding = shifted[(30 * periodsPerSecond + 5)..<(31 * periodsPerSecond)]
        let heldWorst: Double = holding.map(abs).max() ?? 1
        #expect(heldWorst < 20e-6, "the line held while the move was unconfirmed")
        let followedWorst: Double = shifted.suffix(500).map { (error: Double) -> Double in abs(error - 2e-3) }.max() ?? 1
        #expect(followedWorst < 20e-6, "the line followed the move")
        #expect(filter.shifts == 1)
        filter.reset()
        let restarted = run(seconds: 2, ratePPM: 0, noise: 10e-6, seed: 3, wander: { _ in 5e-3 }, filter: &filter)
        let restartedWorst: Double = restarted.suffix(100).map { (error: Double) -> Double in abs(error - 5e-3) }.max() ?? 1
        #expect(restartedWorst < 20e-6)
    }

    @Test func aLineWithAWrongRateIsCorrectedFromTheReportsDrift() {
        // The line learned a device 600 ppm slow (say, from a start's wandering reports)
        // while the device runs at its nominal rate: the reports drift off the line, stay on
        // one side, and the line restarts on them with the drift taken off its rate.
        var filter = DeviceTimingFilter(sampleRate: Self.sampleRate)
        _ = run(seconds: 20, ratePPM: 600, noise: 10e-6, filter: &filter)
        #expect(abs((filter.frameDurationRatio - 1) * 1e6 - 600) < 5)
        filter.reset()
        let errors = run(seconds: 30, ratePPM: 0, noise: 10e-6, seed: 5, filter: &filter)
        #expect(filter.shifts >= 1)
        #expect(abs((filter.frameDurationRatio - 1) * 1e6) < 20, "rate \((filter.frameDurationRatio - 1) * 1e6) ppm")
        let settled = errors.suffix(500)
        #expect((settled.map(abs).max() ?? 1) < 50e-6, "worst settled error \((settled.map(abs).max() ?? 1) * 1e6) µs")
    }

    @Test func aNewTimingSourceRelearnsTheRateAtOnce() {
        // A rate learned from another source's reports (600 ppm, say from the pulse plugin's
        // interpolation) is disowned when the source changes: the server's honest reports of
        // a nominal device set the rate within a second, with no two-second shift.
        var filter = DeviceTimingFilter(sampleRate: Self.sampleRate)
        _ = run(seconds: 20, ratePPM: 600, noise: 10e-6, filter: &filter)
        filter.reset(keepingRate: false)
        let errors = run(seconds: 1, ratePPM: 0, noise: 10e-6, seed: 7, filter: &filter)
        #expect(filter.shifts == 0)
        #expect(abs((filter.frameDurationRatio - 1) * 1e6) < 20, "rate \((filter.frameDurationRatio - 1) * 1e6) ppm")
        #expect((errors.suffix(20).map(abs).max() ?? 1) < 20e-6)
    }

    @Test func reportsThatWanderOffForASecondAreIgnored() {
        // Reports that ramp 3 ms away and back over a second (a starved sound server's
        // client library) while the device plays on steadily: the line does not move.
        var filter = DeviceTimingFilter(sampleRate: Self.sampleRate)
        let errors = run(seconds: 30, ratePPM: 120, noise: 20e-6, wander: { t in
            t >= 20 && t < 21 ? 3e-3 * sin(.pi * (t - 20)) : 0
        }, filter: &filter)
        let during = errors.suffix(1_000).prefix(300)
        let worst = during.map(abs).max() ?? 1
        #expect(worst < 50e-6, "worst error while the reports wandered \(worst * 1e6) µs")
        #expect(abs((filter.frameDurationRatio - 1) * 1e6 - 120) < 3)
    }

    @Test func theRatesStandardErrorSaysHowWellItIsKnown() {
        // An exact device's rate is pinned within half a second and says so; a device with
        // 100 µs of report noise says after 0.3 s that its rate is not yet known well enough
        // to start on (a start waits on this), and within 20 s it is, each time with the
        // error inside three standard errors.
        var exact = DeviceTimingFilter(sampleRate: Self.sampleRate)
        _ = run(seconds: 0.5, ratePPM: 200, noise: 0, filter: &exact)
        #expect(abs((exact.frameDurationRatio - 1) * 1e6 - 200) < 0.1)
        #expect(exact.rateStandardErrorPPM < 0.1)
        var noisy = DeviceTimingFilter(sampleRate: Self.sampleRate)
        _ = run(seconds: 0.3, ratePPM: 200, noise: 100e-6, filter: &noisy)
        #expect(noisy.rateStandardErrorPPM > AudioRenderer.startingRateError)
        #expect(abs((noisy.frameDurationRatio - 1) * 1e6 - 200) < 3 * noisy.rateStandardErrorPPM)
        _ = run(seconds: 20, ratePPM: 200, noise: 100e-6, seed: 2, filter: &noisy)
        #expect(noisy.rateStandardErrorPPM < 2)
        #expect(abs((noisy.frameDurationRatio - 1) * 1e6 - 200) < 3 * noisy.rateStandardErrorPPM + 0.5,
                "rate \((noisy.frameDurationRatio - 1) * 1e6) ppm, standard error \(noisy.rateStandardErrorPPM)")
    }

    @Test func aDeepQueueIsReadAtTheLearnedRateNotTheNominalOne() {
        // A sound server reports 100 to 130 ms queued (its fill rises and falls as the
        // client writes) on a device running 700 ppm fast, with 30 µs of noise. Each report
        // is a point of the line: the frame playing at its moment. Read at the nominal rate
        // the queue would put the line 70 to 91 µs late; read as a point, the line is the
        // device's own within a few µs once settled.
        var filter = DeviceTimingFilter(sampleRate: Self.sampleRate)
        var generator = SeededGenerator(seed: 11)
        let frameSeconds = (1 - 700e-6) / Double(Self.sampleRate)
        let start = 2_000.0
        var errors: [Double] = []
        for period in 0..<(30 * 100) {
            let next = Double(period * Self.periodFrames)
            let queued = 4_800 + 1_440 * (0.5 + 0.5 * sin(Double(period) / 7))
            let playingAt = start + (next - queued) * frameSeconds + Double.random(in: -30e-6...30e-6, using: &generator)
            let timestamp = PresentationTimestamp(host: HostTime(nanoseconds: Int64((playingAt * 1e9).rounded())), queuedFrames: queued)
            let smoothed = filter.filter(timestamp, frames: Self.periodFrames)
            errors.append(Double(smoothed.nanoseconds) / 1e9 - (start + next * frameSeconds))
        }
        let settled = errors.suffix(1_000)
        #expect((settled.map(abs).max() ?? 1) < 5e-6, "worst settled error \((settled.map(abs).max() ?? 1) * 1e6) µs")
        #expect(abs((filter.frameDurationRatio - 1) * 1e6 + 700) < 2, "rate \((filter.frameDurationRatio - 1) * 1e6) ppm")
    }

    @Test func anExactDevicesLineIsExactFromItsFirstReports() {
        // Exact reports of a device 600 ppm fast with 100 ms queued: two points fix a line,
        // so by the third period the line is the device's to a few nanoseconds.
        var filter = DeviceTimingFilter(sampleRate: Self.sampleRate)
        let frameSeconds = (1 - 600e-6) / Double(Self.sampleRate)
        var errors: [Double] = []
        for period in 0..<20 {
            let next = Double(period * Self.periodFrames)
            let queued = 4_800.0
            let at = 500 + (next - queued) * frameSeconds
            let smoothed = filter.filter(PresentationTimestamp(host: HostTime(nanoseconds: Int64((at * 1e9).rounded())), queuedFrames: queued),
                                         frames: Self.periodFrames)
            errors.append(Double(smoothed.nanoseconds) / 1e9 - (500 + next * frameSeconds))
        }
        let worst = errors.dropFirst(2).map(abs).max() ?? 1
        #expect(worst < 5e-9, "worst \(worst * 1e9) ns")
    }

    @Test func aSettledLineForgetsAndFollowsACrystalsDrift() {
        // A minute at 100 ppm, then the crystal warms to 105 ppm for four minutes: the
        // settled line forgets the old rate and follows within a few µs (a fit of every
        // report since the start stays half a ppm off, and 50 µs).
        var filter = DeviceTimingFilter(sampleRate: Self.sampleRate)
        var errors: [Double] = []
        let periodsPerSecond = Self.sampleRate / Self.periodFrames
        var truth = 100.0
        for period in 0..<(300 * periodsPerSecond) {
            let ppm = period < 60 * periodsPerSecond ? 100.0 : 105.0
            let smoothed = filter.filter(HostTime(nanoseconds: Int64((truth * 1e9).rounded())), frames: Self.periodFrames)
            errors.append(Double(smoothed.nanoseconds) / 1e9 - truth)
            truth += Double(Self.periodFrames) * (1 + ppm / 1e6) / Double(Self.sampleRate)
        }
        #expect(abs((filter.frameDurationRatio - 1) * 1e6 - 105) < 0.1, "rate \((filter.frameDurationRatio - 1) * 1e6) ppm")
        #expect((errors.suffix(1_000).map(abs).max() ?? 1) < 5e-6)
    }
}
