import Testing
import ChorusTestSupport
import MediaClock
@testable import MediaPipeline

/// The follow tiers stepped period by period against a simulated device: no thread, no
/// sleep, every run the same.
@Suite(.ownThread) struct TimelineServoTests {
    /// A device playing 10 ms periods at 48 kHz, its crystal `devicePPM` fast against the
    /// host clock, and content read through the servo's correction on top of the device's
    /// rate as the render thread feeds it forward (`fedForwardErrorPPM` off the truth, as a
    /// timing filter still learning the rate would be).
    struct SimulatedFollower {
        static let sampleRate = 48_000
        static let periodFrames = 480.0

        var servo = TimelineServo()
        var timeline: RenderTimeline
        /// When the next period's first frame is heard.
        var host: HostTime
        /// The item position (fractional frames) of that frame.
        var position: Double
        var devicePPM: Double
        var fedForwardErrorPPM: Double
        var resyncs: [Bool] = []
        var lastCorrectionPPM = 0.0

        /// Content starts on `timeline` at `start`, exactly on it.
        init(timeline: RenderTimeline, start: HostTime, devicePPM: Double = 0, fedForwardErrorPPM: Double = 0) {
            self.timeline = timeline
            host = start
            position = timeline.due(at: start, sampleRate: Self.sampleRate)
            self.devicePPM = devicePPM
            self.fedForwardErrorPPM = fedForwardErrorPPM
            servo.contentStarted(at: start, on: timeline)
        }

        /// How far behind the timeline the next period's content is (seconds).
        var error: Double { (timeline.due(at: host, sampleRate: Self.sampleRate) - position) / Double(Self.sampleRate) }

        /// Plays one period.
        mutating func step() {
            switch servo.step(error: error, at: host, timeline: timeline, sampleRate: Self.sampleRate) {
            case .resync(let settling):
                resyncs.append(settling)
                // Skipped or padded exactly onto the timeline.
                position = timeline.due(at: host, sampleRate: Self.sampleRate)
                lastCorrectionPPM = 0
            case .correct(let ppm):
                lastCorrectionPPM = ppm
            }
            // The device plays its period faster than nominal by its crystal's error, so each
            // of its frames lasts 1/(1 + ppm) of a nominal frame and carries that much of the
            // timeline: the frame-duration ratio a timing filter learns, fed forward here with
            // its error, times the correction.
            let deviceRatio = 1 + devicePPM / 1e6
            let fedForward = (1 / deviceRatio) * (1 + fedForwardErrorPPM / 1e6)
            position += Self.periodFrames * fedForward * (1 + lastCorrectionPPM / 1e6) * timeline.rate
            let seconds = Self.periodFrames / (Double(Self.sampleRate) * deviceRatio)
            host = host + .nanoseconds(Int64((seconds * 1e9).rounded()))
        }

        /// Plays `seconds` of periods; returns the error before each.
        mutating func run(seconds: Double) -> [Double] {
            let periods = Int(seconds * Double(Self.sampleRate) / Self.periodFrames)
            var errors: [Double] = []
            errors.reserveCapacity(periods)
            for _ in 0..<periods {
                errors.append(error)
                step()
            }
            return errors
        }
    }

    static let origin = HostTime(nanoseconds: 1_000_000_000_000)
    static let timeline = RenderTimeline(frame: 0, host: origin, rate: 1)

    @Test func aFedForwardRateOffByFiftyPPMIsLearnedByTheIntegral() {
        var follower = SimulatedFollower(timeline: Self.timeline, start: Self.origin, devicePPM: 80, fedForwardErrorPPM: 50)
        let errors = follower.run(seconds: 20)
        #expect(follower.resyncs.isEmpty)
        // The integral holds the rate's error, and the content rests within the dead band
        // (and a µs of the loop's ripple) of the timeline.
        #expect(abs(follower.servo.integralPPM + 50) < 1, "integral \(follower.servo.integralPPM) ppm")
        let settled = errors.suffix(500).map(abs).max() ?? .infinity
        #expect(settled < TimelineServo.deadBand + 1e-6, "last 5 s within \(settled * 1e6) µs")
        // Never at the soft tier's limit for this: 50 ppm is a tenth of it.
        #expect(errors.map(abs).max() ?? .infinity < 100e-6)
    }

    @Test func anErrorInsideTheDeadBandMovesNothing() {
        var servo = TimelineServo()
        servo.contentStarted(at: Self.origin, on: Self.timeline)
        var host = Self.origin
        for _ in 0..<1_000 {
            host = host + .milliseconds(10)
            #expect(servo.step(error: 2e-6, at: host, timeline: Self.timeline, sampleRate: 48_000) == .correct(ppm: 0))
        }
        #expect(servo.integralPPM == 0)
    }

    @Test func aStepOfTheTimelineIsSlewedOutAtTheLimitWithoutOvershoot() {
        var follower = SimulatedFollower(timeline: Self.timeline, start: Self.origin)
        _ = follower.run(seconds: 5)
        // A clock estimate firming up moves the timeline 600 µs later in one step: beyond
        // the dead band and the soft limit's reach in a period, below the hard threshold.
        follower.timeline.host = follower.timeline.host + .microseconds(600)
        let errors = follower.run(seconds: 10)
        #expect(follower.resyncs.isEmpty, "600 µs is the soft tier's, not a restart")
        let peak = errors.max(by: { abs($0) < abs($1) }) ?? 0
        #expect(peak < 0 && abs(peak) > 590e-6, "the step is ahead of the content: negative error")
        // At the limit (500 ppm) 600 µs takes 1.2 s. The error filter's 0.2 s lag carries the
        // slew on past the timeline by about 50 µs (52 here); an integral that kept growing
        // at the limit would carry it past by hundreds.
        let overshoot = errors.max() ?? 0
        #expect(overshoot < 60e-6, "overshoot \(overshoot * 1e6) µs")
        #expect(abs(errors.last ?? 1) < TimelineServo.deadBand + 1e-6)
        #expect(follower.lastCorrectionPPM.magnitude <= TimelineServo.maximumSoftCorrectionPPM)
    }

    @Test func pastTheHardThresholdTheContentRestartsOnTheTimeline() {
        var follower = SimulatedFollower(timeline: Self.timeline, start: Self.origin)
        _ = follower.run(seconds: 5)
        follower.timeline.host = follower.timeline.host - .milliseconds(4)
        _ = follower.run(seconds: 1)
        #expect(follower.resyncs == [false])
        #expect(abs(follower.error) < 1e-6)
    }

    @Test func whileSettlingAQuarterMillisecondRestartsAtMostTwice() {
        var follower = SimulatedFollower(timeline: Self.timeline, start: Self.origin)
        // A device whose first timing was 400 µs off, three times in the first second: the
        // first two are restarts, the third is left to the soft tier.
        for _ in 0..<3 {
            follower.position -= 400e-6 * Double(SimulatedFollower.sampleRate)
            _ = follower.run(seconds: 0.3)
        }
        #expect(follower.resyncs == [true, true])
        #expect(follower.servo.settlingResyncs == 2)
        // After the settling time the same error is the soft tier's too.
        var late = SimulatedFollower(timeline: Self.timeline, start: Self.origin)
        _ = late.run(seconds: TimelineServo.settlingTime + 0.1)
        late.position -= 400e-6 * Double(SimulatedFollower.sampleRate)
        _ = late.run(seconds: 2)
        #expect(late.resyncs.isEmpty)
    }

    @Test func aTimelineMovedByTheClockWhileSettlingIsLeftToTheSoftTier() {
        // The clock estimate moves the timeline 300 µs in the first second: the settling tier
        // allows the move on top of its threshold, so the soft tier pulls it in.
        var follower = SimulatedFollower(timeline: Self.timeline, start: Self.origin)
        _ = follower.run(seconds: 0.2)
        follower.timeline.host = follower.timeline.host + .microseconds(300)
        _ = follower.run(seconds: 3)
        #expect(follower.resyncs.isEmpty)
        #expect(abs(follower.error) < 5e-6)
    }

    @Test func whileAcquiringATimelineMovingAt150PPMIsFollowedClosely() {
        // A clock estimate still firming up: the timeline's rate is 150 ppm off the truth the
        // content started on. The acquiring loop (four times faster) keeps within 12 µs once
        // it has caught the ramp; the steady loop lags by about 50.
        var follower = SimulatedFollower(timeline: Self.timeline, start: Self.origin)
        follower.timeline = RenderTimeline(frame: 0, host: Self.origin, rate: 1 + 150e-6)
        let errors = follower.run(seconds: TimelineServo.acquisitionTime)
        #expect(follower.resyncs.isEmpty)
        let caught = errors.dropFirst(100).map(abs).max() ?? .infinity
        #expect(caught < 12e-6, "within \(caught * 1e6) µs from the first second to the third")
    }

    @Test func theCorrectionNeverPassesTheSoftLimit() {
        // A device 2000 ppm fast that nothing fed forward: beyond what the soft tier may
        // correct, so the content drifts to the hard threshold and restarts, again and again,
        // and the correction stays at the limit in between.
        var follower = SimulatedFollower(timeline: Self.timeline, start: Self.origin, devicePPM: 2_000, fedForwardErrorPPM: 1_996)
        var corrections: [Double] = []
        for _ in 0..<3_000 {
            follower.step()
            corrections.append(follower.lastCorrectionPPM)
        }
        #expect(corrections.allSatisfy { abs($0) <= TimelineServo.maximumSoftCorrectionPPM })
        // The content runs ahead: the correction reads slower, at the limit.
        #expect(corrections.filter { $0 == -TimelineServo.maximumSoftCorrectionPPM }.count > 2_000)
        #expect(!follower.resyncs.isEmpty)
    }
}
