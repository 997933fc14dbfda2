import ChorusSimulation
import Testing
import ChorusTestSupport
import GroupSync
import MediaClock

@Suite("ClockEstimator", .ownThread)
struct ClockEstimatorTests {
    /// Runs the estimator's own poll schedule over `path` for `duration` of true time and
    /// returns the estimator and the follower clock.
    static func run(
        path: inout SimulatedPath, skewPPM: Int64, offset: Duration, duration: Duration,
        estimator: inout ClockEstimator, trueTime: inout HostTime, requestsSent: inout Int,
        check: (ClockEstimate, HostTime) -> Void = { _, _ in }
    ) -> SkewedHostClock {
        let follower = SkewedHostClock(wrapping: SimulatedHostClock(), offset: offset, skewPPM: skewPPM, base: HostTime(nanoseconds: 1_000_000_000))
        let end = trueTime + duration
        while trueTime < end {
            let sample = path.exchange(at: trueTime, follower: follower)
            if let estimate = estimator.add(sample) { check(estimate, sample.t4) }
            requestsSent += 1
            trueTime += ClockEstimator.dithered(estimator.nextPollInterval(requestsSent: requestsSent), requestsSent: requestsSent)
        }
        return follower
    }

    static func error(_ estimate: ClockEstimate, at followerTime: HostTime, clock: SkewedHostClock) -> Duration {
        estimate.leaderTime(atHost: followerTime) - trueLeaderTime(atFollower: followerTime, clock: clock)
    }

    @Test(arguments: [Int64(200), -200, 0])
    func cleanNetworkConvergesWithinMicroseconds(skewPPM: Int64) throws {
        var path = SimulatedPath(seed: 1)
        var estimator = ClockEstimator()
        var now = HostTime(nanoseconds: 1_000_000_000)
        var sent = 0
        let offset: Duration = .seconds(3) + .milliseconds(417)
        // The burst alone: 8 samples, 35 ms apart from first to last.
        var lastUpdate = HostTime(nanoseconds: 0)
        let burst = ClockEstimator.burstInterval * (ClockEstimator.burstCount - 1) + .milliseconds(1)
        var clock = Self.run(path: &path, skewPPM: skewPPM, offset: offset, duration: burst,
                             estimator: &estimator, trueTime: &now, requestsSent: &sent) { _, at in lastUpdate = at }
        var estimate = try #require(estimator.estimate)
        #expect(estimator.sampleCount == ClockEstimator.burstCount)
        #expect(abs(Self.error(estimate, at: lastUpdate, clock: clock).microsecondsValue) < 20)
        // Still within 20 µs a full steady poll interval after the burst: the rate is fitted.
        #expect(abs(Self.error(estimate, at: lastUpdate + .seconds(1), clock: clock).microsecondsValue) < 20)
        #expect(estimate.converged)
        // A minute later the rate is known to a fraction of a ppm.
        clock = Self.run(path: &path, skewPPM: skewPPM, offset: offset, duration: .seconds(60),
                         estimator: &estimator, trueTime: &now, requestsSent: &sent)
        estimate = try #require(estimator.estimate)
        #expect(abs(estimate.ratePPM - trueRatePPM(skewPPM: skewPPM)) < 1)
        #expect(abs(Self.error(estimate, at: clock.map(now), clock: clock).microsecondsValue) < 20)
        #expect(estimator.stepCount == 0)
    }

    /// A clock skewed on purpose far beyond any crystal, by up to 1 % either way
    /// (`--clock-skew`'s range; libfaketime's `x1.01`): the join burst already places it
    /// within 20 µs, and a minute on its rate is known to a ppm. Under a normal prior the
    /// burst's bounds contradicted the prior's rate, the window was let go again and again,
    /// and the estimate never converged; with the rate bounded at 500 ppm it drifted.
    @Test(arguments: [Int64(5_000), 10_000, -10_000])
    func aClockSkewedOnPurposeIsFollowed(skewPPM: Int64) throws {
        var path = SimulatedPath(seed: 5)
        var estimator = ClockEstimator()
        var now = HostTime(nanoseconds: 1_000_000_000)
        var sent = 0
        let offset: Duration = .seconds(-2) + .milliseconds(250)
        var lastUpdate = HostTime(nanoseconds: 0)
        let burst = ClockEstimator.burstInterval * (ClockEstimator.burstCount - 1) + .milliseconds(1)
        var clock = Self.run(path: &path, skewPPM: skewPPM, offset: offset, duration: burst,
                             estimator: &estimator, trueTime: &now, requestsSent: &sent) { _, at in lastUpdate = at }
        var estimate = try #require(estimator.estimate)
        #expect(estimate.converged)
        #expect(abs(Self.error(estimate, at: lastUpdate, clock: clock).microsecondsValue) < 20)
        clock = Self.run(path: &path, skewPPM: skewPPM, offset: offset, duration: .seconds(60),
                         estimator: &estimator, trueTime: &now, requestsSent: &sent)
        estimate = try #require(estimator.estimate)
        #expect(abs(estimate.ratePPM - trueRatePPM(skewPPM: skewPPM)) < 1, "rate \(estimate.ratePPM) ppm")
        #expect(abs(Self.error(estimate, at: clock.map(now), clock: clock).microsecondsValue) < 20)
        #expect(estimator.stepCount == 0)
    }

    /// Joining on a LAN-like path (±10 µs of jitter each way) against a 200 ppm skew: from
    /// the first fit on, every estimate reads the leader's time within 10 µs, because the
    /// burst's slope is used (barely shrunk) rather than held at 0, which would leave the
    /// offset lagging the skew by tens of µs within half a second.
    @Test(arguments: [Int64(200), -200])
    func joiningOnACleanPathTracksTheSkewFromTheBurst(skewPPM: Int64) {
        var path = SimulatedPath(seed: 5)
        path.jitter = .microseconds(10)
        var estimator = ClockEstimator()
        var now = HostTime(nanoseconds: 1_000_000_000)
        var sent = 0
        var worst = 0.0
        // The same clock `run` makes, to judge the estimates as they come.
        let clock = SkewedHostClock(wrapping: SimulatedHostClock(), offset: .seconds(7), skewPPM: skewPPM,
                                    base: HostTime(nanoseconds: 1_000_000_000))
        _ = Self.run(path: &path, skewPPM: skewPPM, offset: .seconds(7), duration: .seconds(3),
                     estimator: &estimator, trueTime: &now, requestsSent: &sent) { estimate, at in
            guard estimate.usedSampleCount >= ClockEstimator.minimumSamplesForFit else { return }
            worst = max(worst, abs(Self.error(estimate, at: at, clock: clock).microsecondsValue))
        }
        #expect(worst > 0)
        #expect(worst < 10, "worst \(worst) µs")
    }

    /// ±2 ms of jitter each way at join: the first exchanges say little about the offset
    /// and almost nothing about the rate, and the estimate says so. Over the first three
    /// seconds of a join, nearly every published offset and rate is within three of its
    /// published standard deviations of the truth (a join burst whose every crossing
    /// happened to be slow can mislead it for a moment, as it would any estimator), which
    /// is what the poll schedule (fast until sure) and the follower (play once converged)
    /// rely on; and the deviations shrink, below 100 µs within the first second.
    @Test(arguments: [UInt64(9), 10, 11, 12])
    func joiningOnAJitteryPathReportsHowUnsureItIs(seed: UInt64) {
        var path = SimulatedPath(seed: seed)
        path.baseDelay = .milliseconds(3)
        path.jitter = .milliseconds(2)
        var estimator = ClockEstimator()
        var now = HostTime(nanoseconds: 1_000_000_000)
        var sent = 0
        var firstUpdate: HostTime?
        let clock = SkewedHostClock(wrapping: SimulatedHostClock(), offset: .seconds(-2), skewPPM: 150,
                                    base: HostTime(nanoseconds: 1_000_000_000))
        var count = 0, offsetsOutside = 0, ratesOutside = 0, worstOffset = 0.0
        var uncertaintyAfterOneSecond = Double.infinity
        _ = Self.run(path: &path, skewPPM: 150, offset: .seconds(-2), duration: .seconds(3),
                     estimator: &estimator, trueTime: &now, requestsSent: &sent) { estimate, at in
            let deviation = estimate.uncertainty.microsecondsValue
            let offsetDeviations = abs(Self.error(estimate, at: at, clock: clock).microsecondsValue) / deviation
            let rateDeviations = abs(estimate.ratePPM - trueRatePPM(skewPPM: 150)) / estimate.rateUncertaintyPPM
            count += 1
            if offsetDeviations > 3 { offsetsOutside += 1 }
            if rateDeviations > 3 { ratesOutside += 1 }
            worstOffset = max(worstOffset, offsetDeviations)
            let first = firstUpdate ?? at
            firstUpdate = first
            if at - first <= .seconds(1) { uncertaintyAfterOneSecond = deviation }
        }
        #expect(count > 300)
        #expect(Double(offsetsOutside) <= 0.02 * Double(count), "\(offsetsOutside) of \(count) offsets beyond 3 deviations")
        #expect(Double(ratesOutside) <= 0.02 * Double(count), "\(ratesOutside) of \(count) rates beyond 3 deviations")
        #expect(worstOffset < 8, "worst offset error \(worstOffset) deviations")
        #expect(uncertaintyAfterOneSecond < 100, "uncertainty after 1 s: \(uncertaintyAfterOneSecond) µs")
    }

    /// The sync benchmark's impaired path without its loss: 5 ms ± 2 ms each way, and a
    /// relay thread's wake-up (mean 40 µs) on every crossing.
    static func blurredJitteryPath(seed: UInt64) -> SimulatedPath {
        var path = SimulatedPath(seed: seed)
        path.baseDelay = .milliseconds(5)
        path.jitter = .milliseconds(2)
        path.wakeup = .microseconds(40)
        return path
    }

    /// A path with ±2 ms of jitter whose every crossing also waits for a thread to wake
    /// (tens of µs, seldom near zero): the floor is blurred. The estimator learns a spread of
    /// the wake-ups' order, and its published deviation stays honest where the sharp floor's
    /// was not (beyond three deviations in 8 % of the simulated benchmark's probes).
    @Test(arguments: [UInt64(21), 22])
    func aBlurredFloorIsLearnedAndReportedHonestly(seed: UInt64) {
        var path = Self.blurredJitteryPath(seed: seed)
        var estimator = ClockEstimator()
        var now = HostTime(nanoseconds: 1_000_000_000)
        var sent = 0
        let clock = SkewedHostClock(wrapping: SimulatedHostClock(), offset: .seconds(4), skewPPM: -120,
                                    base: HostTime(nanoseconds: 1_000_000_000))
        var count = 0, outside = 0, worst = 0.0
        var spread: Duration = .zero
        let start = now
        _ = Self.run(path: &path, skewPPM: -120, offset: .seconds(4), duration: .seconds(30),
                     estimator: &estimator, trueTime: &now, requestsSent: &sent) { estimate, at in
            guard at - clock.map(start) >= .seconds(5) else { return }
            let error = abs(Self.error(estimate, at: at, clock: clock).microsecondsValue)
            count += 1
            if error > 3 * estimate.uncertainty.microsecondsValue { outside += 1 }
            worst = max(worst, error)
            spread = estimate.floorSpread
        }
        #expect(count > 500)
        // The wake-ups' deviation is 28 µs; a spread of that order is learned.
        #expect(spread > .microseconds(8) && spread < .microseconds(80), "learned spread \(spread)")
        #expect(Double(outside) <= 0.01 * Double(count), "\(outside) of \(count) offsets beyond 3 deviations")
        #expect(worst < 100, "worst offset error \(worst) µs")
    }

    /// On the same blurred, jittery path, the first estimate a follower would play on (one
    /// within `FollowerCore.startingUncertainty`) is as close as it claims: within two of
    /// those deviations, 100 µs, for all but a few of forty followers. Before the floor's
    /// spread is learned the sharp model cannot see the blur, and the density of fast
    /// crossings read from a few dozen round trips is read too high unless the best's own
    /// excess over the floor is allowed for: without both, estimates claimed under 50 µs
    /// while eight of these forty followers were beyond 100 µs, and the line then moved as
    /// the spread was learned, with the room playing on it. Polling faster until then, the
    /// start still comes within a second.
    @Test func theFirstPlayableEstimateOnAJitteryPathIsAsCloseAsItClaims() throws {
        var far: [Double] = []
        var latest: Duration = .zero
        for seed in UInt64(100)..<140 {
            var path = Self.blurredJitteryPath(seed: seed)
            var estimator = ClockEstimator()
            let begin = HostTime(nanoseconds: 1_000_000_000)
            var now = begin
            var sent = 0
            let skew = Int64(seed % 9) * 50 - 200
            let clock = SkewedHostClock(wrapping: SimulatedHostClock(), offset: .seconds(4), skewPPM: skew, base: begin)
            var first: (error: Double, after: Duration)?
            // The estimator's own poll schedule, up to the first playable estimate.
            while first == nil, now - begin < .seconds(2) {
                let sample = path.exchange(at: now, follower: clock)
                if let estimate = estimator.add(sample), FollowerCore.canStart(on: estimate) {
                    first = (abs(Self.error(estimate, at: sample.t4, clock: clock).microsecondsValue), now - begin)
                }
                sent += 1
                now += estimator.nextPollInterval(requestsSent: sent)
            }
            let start = try #require(first, "seed \(seed) had no estimate to play on in 2 s")
            if start.error > 2 * FollowerCore.startingUncertainty.microsecondsValue { far.append(start.error) }
            latest = max(latest, start.after)
        }
        #expect(far.count <= 2, "first playable estimates beyond 100 µs: \(far)")
        #expect(latest < .seconds(1), "the last follower could start only after \(latest)")
    }

    /// Spikes of +20 ms on one direction in 10% of exchanges, on a path with ±100 µs of
    /// jitter each way: the round-trip filter removes the spikes and the fit stays within
    /// 100 µs of the truth at every update.
    @Test(arguments: [Int64(200), -200])
    func asymmetricSpikesAreFilteredOut(skewPPM: Int64) throws {
        let (worst, worstRate, _) = Self.steadyStateErrors(seed: 11, skewPPM: skewPPM, jitter: .microseconds(100))
        #expect(worst < 100)
        #expect(worstRate < 5)
    }

    /// ±2 ms of uniform, independent jitter each way (and the spikes): averaging whole
    /// exchanges would leave a few hundred µs of their asymmetry, but the bounds the fastest
    /// request and the fastest reply put on the offset hold it to tens of µs, and the
    /// bounds of successive stretches pin the rate to a few ppm.
    @Test(arguments: [Int64(200), -200])
    func wideJitterIsBoundedByTheFastestCrossings(skewPPM: Int64) throws {
        let (worst, worstRate, rms) = Self.steadyStateErrors(seed: 7, skewPPM: skewPPM, jitter: .milliseconds(2))
        #expect(rms < 70, "rms \(rms) µs")
        #expect(worst < 250, "worst \(worst) µs")
        #expect(worstRate < 10, "worst rate error \(worstRate) ppm")
    }

    /// Settles for two minutes, then returns the worst and RMS offset error (µs) and the
    /// worst rate error (ppm) over every update of the next five minutes.
    static func steadyStateErrors(seed: UInt64, skewPPM: Int64, jitter: Duration) -> (Double, Double, Double) {
        var path = SimulatedPath(seed: seed)
        path.baseDelay = .milliseconds(3)
        path.jitter = jitter
        path.spikeProbability = 0.1
        var estimator = ClockEstimator()
        var now = HostTime(nanoseconds: 1_000_000_000)
        var sent = 0
        var worst = 0.0, worstRate = 0.0, squares = 0.0, count = 0.0
        let offset: Duration = .seconds(-5) + .microseconds(1234)
        let clock = Self.run(path: &path, skewPPM: skewPPM, offset: offset, duration: .seconds(120),
                             estimator: &estimator, trueTime: &now, requestsSent: &sent)
        _ = Self.run(path: &path, skewPPM: skewPPM, offset: offset, duration: .seconds(300),
                     estimator: &estimator, trueTime: &now, requestsSent: &sent) { estimate, followerTime in
            let error = Self.error(estimate, at: followerTime, clock: clock).microsecondsValue
            worst = max(worst, abs(error))
            squares += error * error
            count += 1
            worstRate = max(worstRate, abs(estimate.ratePPM - trueRatePPM(skewPPM: skewPPM)))
        }
        return (worst, worstRate, (squares / max(count, 1)).squareRoot())
    }

    /// 5 ms ± 2 ms each way through a relay that releases on its 1 ms timer's ticks: the
    /// replies leave just after the tick that released their requests and wait nearly a
    /// tick for the next, the requests leave at phases spread over it, so the fastest
    /// replies take most of a tick longer than the fastest requests. The floors' line sits
    /// about 430 µs off (half of that); the exchanges' centre does not. Over six
    /// followers from 12 s to 20 s: no bias the followers share (the mean of their median
    /// errors within 15 µs), each follower's error within 100 µs at the 99th percentile
    /// (the aim for a pair was 120 µs), and the published deviation honest (under
    /// 2 % of errors beyond three of it, where an honest one has 0.3 %).
    @Test func tickReleasedDelaysDoNotBiasTheEstimate() {
        let result = Self.tickedFollowers(seeds: UInt64(31)...36, base: 5, jitter: 2, tick: 1,
                                          skewsPPM: (120, -170), offset: .seconds(4) + .microseconds(321),
                                          settling: .seconds(12), measured: .seconds(8))
        #expect(abs(result.bias) < 15, "mean of the followers' median errors \(result.bias) µs; medians \(result.medians)")
        #expect(result.p99 < 100, "99th percentile error \(result.p99) µs")
        #expect(result.beyondShare < 0.02, "\(result.beyondShare * 100) % of errors beyond three published deviations")
    }

    /// Where the jitter spans exactly one tick, every reply, sent a turnaround after the tick
    /// that released its request, comes out on a tick again: the replies' delays stand nearly
    /// still while the requests' spread over the jitter and the tick, the floors differ by
    /// almost a tick, and the two spreads are as unlike as a busier queue's. The requests'
    /// ramped floor gives it away (`DelayBalance.rampedFloor`), and the estimate rests on the
    /// exchanges' centre: within tens of µs, where the floors' line lies half a tick off
    /// (−0.92 ms and −1.88 ms on these paths) and claims µs.
    @Test(arguments: [(base: 3, jitter: 1, tick: 2), (base: 6, jitter: 2, tick: 4)])
    func tickLockedRepliesDoNotHoldTheEstimateHalfATickOff(path shape: (base: Int, jitter: Int, tick: Int)) {
        let result = Self.tickedFollowers(seeds: UInt64(41)...43, base: shape.base, jitter: shape.jitter, tick: shape.tick,
                                          skewsPPM: (90, -140), offset: .seconds(-3) + .microseconds(789),
                                          settling: .seconds(15), measured: .seconds(10))
        // A follower's median over ten seconds still scatters by tens of µs on the 4 ms
        // path (each exchange's own offset by a millisecond); what is guarded against is
        // half a tick.
        #expect(abs(result.bias) < 30, "mean of the followers' median errors \(result.bias) µs; medians \(result.medians)")
        #expect(result.medians.allSatisfy { abs($0) < 100 }, "followers' median errors \(result.medians) µs")
        #expect(result.p99 < 150, "99th percentile error \(result.p99) µs")
        #expect(result.beyondShare < 0.02, "\(result.beyondShare * 100) % of errors beyond three published deviations")
    }

    /// A queue busier one way (requests wait 2 ms on average, replies ±100 µs of jitter
    /// alone) moves the exchanges' centre a millisecond off while both floors still agree:
    /// the spreads are unlike and no floor is ramped, so the floors' line must stand. While
    /// the join's exchanges come in the two lines are disputed, but past them the estimate
    /// claims what the floors know, the follower can start, and the poll settles.
    @Test func aBusierQueueOneWayKeepsTheFloorsLine() {
        var path = SimulatedPath(seed: 51)
        path.baseDelay = .milliseconds(3)
        path.jitter = .microseconds(100)
        path.forwardQueueing = .milliseconds(2)
        var estimator = ClockEstimator()
        var now = HostTime(nanoseconds: 1_000_000_000)
        var sent = 0
        let offset: Duration = .seconds(2) + .microseconds(456)
        let clock = Self.run(path: &path, skewPPM: 80, offset: offset, duration: .seconds(30),
                             estimator: &estimator, trueTime: &now, requestsSent: &sent)
        var errors: [Double] = []
        var playable = 0
        _ = Self.run(path: &path, skewPPM: 80, offset: offset, duration: .seconds(10),
                     estimator: &estimator, trueTime: &now, requestsSent: &sent) { estimate, followerTime in
            errors.append(abs(Self.error(estimate, at: followerTime, clock: clock).microsecondsValue))
            if FollowerCore.canStart(on: estimate) { playable += 1 }
        }
        errors.sort()
        // The floors' line lies within 82 µs here at the 99th percentile (the requests' floor
        // is blurred by the jitter under 2 ms of queueing); the centre lies 0.8 ms off.
        #expect(errors[errors.count * 99 / 100] < 150, "99th percentile error \(errors[errors.count * 99 / 100]) µs")
        #expect(playable == errors.count, "\(errors.count - playable) of \(errors.count) estimates not playable")
        #expect(estimator.nextPollInterval(requestsSent: sent) >= ClockEstimator.settlingInterval)
    }

    /// On a ticking path the estimate rests on the exchanges' centre, whose error falls only
    /// with the exchanges it counts (each one's own offset scatters by 0.84 ms here): the
    /// poll stays faster than the settling rate until the centre is known to a few µs, while
    /// the window takes an exchange no more often than `centreWindowSpacing`, so that it still
    /// spans half a minute and its floors still give the rate the centre's line is read with.
    @Test func aTickedPathPollsItsCentreFasterAndKeepsTheWindowLong() {
        var path = SimulatedPath.ticking(seed: 61, base: .milliseconds(5), jitter: .milliseconds(2), tick: .milliseconds(1),
                                         tickOrigin: HostTime(nanoseconds: 1_000_321_000))
        var estimator = ClockEstimator()
        var now = HostTime(nanoseconds: 1_000_000_000)
        var sent = 0
        let offset: Duration = .seconds(-1) + .microseconds(234)
        _ = Self.run(path: &path, skewPPM: 60, offset: offset, duration: .seconds(40),
                     estimator: &estimator, trueTime: &now, requestsSent: &sent)
        let sentBefore = sent
        _ = Self.run(path: &path, skewPPM: 60, offset: offset, duration: .seconds(10),
                     estimator: &estimator, trueTime: &now, requestsSent: &sent)
        let perSecond = Double(sent - sentBefore) / 10
        let settlingRate = 1e6 / ClockEstimator.settlingInterval.microsecondsValue
        #expect(estimator.balancedFitCount > 0, "the centre never stood")
        #expect(perSecond > 1.5 * settlingRate, "\(perSecond) exchanges a second")
        #expect(estimator.centreOnlySampleCount > 0)
        #expect(estimator.windowCoverage >= .seconds(25), "the window spans \(estimator.windowCoverage)")
    }

    /// A clock jump lets the history go, and with it what the history showed of the path: a
    /// follower that had seen a ticking path's ramped floor, and rested on the centre, whose
    /// leader restarts behind a queue busier one way (where the centre lies 0.8 ms off and
    /// the floors agree) must come to the floors' line, not keep trusting the centre.
    @Test func aClockJumpForgetsWhatTheOldPathShowed() {
        var path = SimulatedPath.ticking(seed: 71, base: .milliseconds(3), jitter: .milliseconds(1), tick: .milliseconds(2),
                                         tickOrigin: HostTime(nanoseconds: 1_000_777_000))
        var estimator = ClockEstimator()
        var now = HostTime(nanoseconds: 1_000_000_000)
        var sent = 0
        _ = Self.run(path: &path, skewPPM: -70, offset: .seconds(3), duration: .seconds(20),
                     estimator: &estimator, trueTime: &now, requestsSent: &sent)
        #expect(estimator.balancedFitCount > 0, "the centre never stood on the ticking path")
        // The leader restarts with another clock, behind another path.
        path.releaseTick = nil
        path.jitter = .microseconds(100)
        path.forwardQueueing = .milliseconds(2)
        let offset: Duration = .seconds(9) + .microseconds(456)
        let stepsBefore = estimator.stepCount
        let clock = Self.run(path: &path, skewPPM: -70, offset: offset, duration: .seconds(30),
                             estimator: &estimator, trueTime: &now, requestsSent: &sent)
        #expect(estimator.stepCount > stepsBefore, "the jump was not seen")
        var errors: [Double] = []
        _ = Self.run(path: &path, skewPPM: -70, offset: offset, duration: .seconds(10),
                     estimator: &estimator, trueTime: &now, requestsSent: &sent) { estimate, followerTime in
            errors.append(abs(Self.error(estimate, at: followerTime, clock: clock).microsecondsValue))
        }
        errors.sort()
        #expect(errors[errors.count * 99 / 100] < 150, "99th percentile error \(errors[errors.count * 99 / 100]) µs")
    }

    /// One follower per seed behind a relay that releases on its timer's ticks (base ±
    /// jitter each way, ms; the follower's clock skewed by the first rate for even seeds,
    /// the second for odd ones), settled for `settling` and then measured at every estimate
    /// for `measured`: each follower's median error, the mean of those medians (µs), the
    /// 99th percentile of every error's magnitude (µs), and the share of errors beyond three
    /// published deviations.
    static func tickedFollowers(seeds: ClosedRange<UInt64>, base: Int, jitter: Int, tick: Int, skewsPPM: (even: Int64, odd: Int64),
                                offset: Duration, settling: Duration, measured: Duration)
        -> (medians: [Double], bias: Double, p99: Double, beyondShare: Double) {
        var medians: [Double] = [], magnitudes: [Double] = []
        var beyond = 0
        for seed in seeds {
            var path = SimulatedPath.ticking(seed: seed, base: .milliseconds(base), jitter: .milliseconds(jitter), tick: .milliseconds(tick),
                                             tickOrigin: HostTime(nanoseconds: 1_000_000_000 + Int64(seed % 997) * 1_000))
            var estimator = ClockEstimator()
            var now = HostTime(nanoseconds: 1_000_000_000)
            var sent = 0
            let skewPPM = seed % 2 == 0 ? skewsPPM.even : skewsPPM.odd
            let clock = Self.run(path: &path, skewPPM: skewPPM, offset: offset, duration: settling,
                                 estimator: &estimator, trueTime: &now, requestsSent: &sent)
            var errors: [Double] = []
            _ = Self.run(path: &path, skewPPM: skewPPM, offset: offset, duration: measured,
                         estimator: &estimator, trueTime: &now, requestsSent: &sent) { estimate, followerTime in
                let error = Self.error(estimate, at: followerTime, clock: clock).microsecondsValue
                errors.append(error)
                if abs(error) > 3 * estimate.uncertainty.microsecondsValue { beyond += 1 }
            }
            medians.append(errors.sorted()[errors.count / 2])
            magnitudes += errors.map(abs)
        }
        magnitudes.sort()
        return (medians, medians.reduce(0, +) / Double(medians.count), magnitudes[magnitudes.count * 99 / 100],
                Double(beyond) / Double(magnitudes.count))
    }

    /// Dithered polls keep the schedule's rate and leave at phases spread over any timer:
    /// requests asked for every 2 ms, against a 1 ms tick, fall in every tenth of it.
    @Test func ditheredPollsKeepTheirRateAndSpreadTheirPhases() {
        let interval = Duration.milliseconds(2)
        #expect(ClockEstimator.dithered(interval, requestsSent: ClockEstimator.burstCount - 1) == interval)
        var now = Duration.zero
        var phases = Set<Int>()
        var shortest = interval, longest = interval
        let count = 1000
        for sent in ClockEstimator.burstCount..<(ClockEstimator.burstCount + count) {
            let step = ClockEstimator.dithered(interval, requestsSent: sent)
            shortest = min(shortest, step)
            longest = max(longest, step)
            now += step
            phases.insert(Int((now.microsecondsValue / 100).rounded(.down)) % 10)
        }
        let mean = now.microsecondsValue / Double(count)
        #expect(abs(mean - 2000) < 20, "mean interval \(mean) µs")
        #expect(shortest >= interval / 2 && longest <= interval * 1.5)
        #expect(phases.count == 10, "phases \(phases.sorted())")
    }

    @Test func pollScheduleGoesBurstThenConvergingThenSteady() throws {
        var path = SimulatedPath(seed: 3)
        var estimator = ClockEstimator()
        let follower = SkewedHostClock(wrapping: SimulatedHostClock(), offset: .seconds(1), skewPPM: 50)
        var intervals: [Duration] = []
        var now = HostTime(nanoseconds: 0)
        #expect(estimator.nextPollInterval(requestsSent: 0) == ClockEstimator.burstInterval)
        for sent in 1...40 {
            if sent <= 2 { // before enough samples nothing is converged: fastest after the burst
                #expect(estimator.nextPollInterval(requestsSent: ClockEstimator.burstCount) == ClockEstimator.startingInterval)
            }
            estimator.add(path.exchange(at: now, follower: follower))
            let interval = estimator.nextPollInterval(requestsSent: sent)
            intervals.append(interval)
            now += interval
        }
        #expect(Array(intervals.prefix(7)) == Array(repeating: ClockEstimator.burstInterval, count: 7))
        // A quiet path: sure of the offset within the burst, then of the rate to a ppm as
        // the exchanges spread out, which takes them less than a second, and steady from then on.
        let steadyFrom = try #require(intervals.firstIndex(of: ClockEstimator.steadyInterval))
        #expect(intervals[..<steadyFrom].reduce(.zero, +) < .seconds(1), "\(intervals)")
        #expect(intervals[steadyFrom...].allSatisfy { $0 == ClockEstimator.steadyInterval })
        #expect(estimator.isConverged)
        // After the burst (spread out to fix the rate) the poll only speeds up while the
        // estimate converges, then slows as it settles.
        #expect(ClockEstimator.startingInterval <= ClockEstimator.convergingInterval)
        #expect(ClockEstimator.convergingInterval <= ClockEstimator.burstInterval)
        #expect(ClockEstimator.convergingInterval < ClockEstimator.settlingInterval)
        #expect(ClockEstimator.settlingInterval < ClockEstimator.steadyInterval)
    }

    @Test func noisyPathPollsAtTheStartingRateUntilTheFitSettles() {
        var estimator = ClockEstimator()
        // Offsets alternating by ±3 ms with equal round trips: a residual far above the limit.
        for index in 0..<10 {
            let t1 = HostTime(nanoseconds: Int64(index) * 250_000_000)
            let skew: Int64 = index.isMultiple(of: 2) ? 3_000_000 : -3_000_000
            estimator.add(ClockSample(t1: t1, t2: LeaderTime(nanoseconds: t1.nanoseconds + 100_000 + skew),
                                      t3: LeaderTime(nanoseconds: t1.nanoseconds + 110_000 + skew), t4: t1 + .microseconds(210)))
        }
        #expect(!estimator.isConverged)
        #expect(estimator.nextPollInterval(requestsSent: 10) == ClockEstimator.startingInterval)
    }

    /// On a path with milliseconds of jitter each way the floors' line can claim 20 µs
    /// within a second, while only the exchanges' centre can show it lies off (floors that
    /// differ between the directions), and the centre's error falls with the exchanges it
    /// counts. The join's fast poll goes on until the centre is known to 20 µs (here each
    /// exchange's own offset scatters by 0.82 ms, so about 1,700 exchanges), or the
    /// window is full, and no longer.
    @Test func aJitteryPathPollsFastUntilTheCentreCanJudgeTheFloors() {
        var path = SimulatedPath(seed: 5)
        path.baseDelay = .milliseconds(5)
        path.jitter = .milliseconds(2)
        var estimator = ClockEstimator()
        var now = HostTime(nanoseconds: 1_000_000_000)
        let follower = SkewedHostClock(wrapping: SimulatedHostClock(), offset: .seconds(2), skewPPM: 90,
                                       base: HostTime(nanoseconds: 1_000_000_000))
        var firstSlow: Int?
        var sent = 0
        while sent < 3 * ClockEstimator.windowSize, firstSlow == nil {
            estimator.add(path.exchange(at: now, follower: follower))
            sent += 1
            let interval = estimator.nextPollInterval(requestsSent: sent)
            if sent >= ClockEstimator.burstCount, interval > ClockEstimator.convergingInterval { firstSlow = sent }
            now += ClockEstimator.dithered(interval, requestsSent: sent)
        }
        let slowed = firstSlow ?? Int.max
        #expect(slowed >= 1_500, "the poll slowed after \(slowed) exchanges")
        #expect(slowed <= ClockEstimator.windowSize + 1, "the poll slowed after \(slowed) exchanges")
    }

    @Test func smallShiftsSlewAndLargeOnesStep() throws {
        var estimator = ClockEstimator()
        var leaderShift: Int64 = 0
        func sample(_ index: Int) -> ClockSample {
            let t1 = HostTime(nanoseconds: 10_000_000_000 + Int64(index) * 1_000_000_000)
            let t2 = LeaderTime(nanoseconds: t1.nanoseconds + 7_000_000 + 100_000 + leaderShift)
            return ClockSample(t1: t1, t2: t2, t3: t2 + .microseconds(10), t4: t1 + .microseconds(210))
        }
        for index in 0..<20 { estimator.add(sample(index)) }
        let settled = try #require(estimator.estimate)
        #expect(settled.converged)
        #expect(abs(settled.offset(atHost: sample(19).t4).microsecondsValue - 7_000) < 1)

        // A 4 ms move of the leader's clock (below the step threshold): each update moves the prediction by at most the slew limit.
        leaderShift = 4_000_000
        var previous = settled
        // Long enough for the window to hold only samples after the move.
        let end = 20 + ClockEstimator.windowSize + 16
        for index in 20..<end {
            let at = sample(index).t4
            let limitedBefore = estimator.slewLimitedCount
            let nextAdded = estimator.add(sample(index))
            let next = try #require(nextAdded)
            let change = (next.leaderTime(atHost: at) - previous.leaderTime(atHost: at)).magnitudeForTest
            #expect(change <= ClockEstimator.slewLimit + .nanoseconds(1))
            if estimator.slewLimitedCount > limitedBefore {
                // On its way to the new line, the estimate claims what it has still to cover,
                // so that no follower starts on it there.
                let left = abs(next.offset(atHost: at).microsecondsValue - 11_000)
                #expect(left < 100 || !FollowerCore.canStart(on: next), "\(left) µs from the line, claiming \(next.uncertainty)")
            }
            previous = next
        }
        #expect(estimator.slewLimitedCount > 0)
        #expect(estimator.stepCount == 0)
        #expect(abs(previous.offset(atHost: sample(end - 1).t4).microsecondsValue - 11_000) < 5)

        // A 50 ms jump: stepped at once and counted.
        leaderShift = 51_000_000
        let steppedAdded = estimator.add(sample(end))
        let stepped = try #require(steppedAdded)
        #expect(estimator.stepCount == 1)
        #expect(abs(stepped.offset(atHost: sample(end).t4).microsecondsValue - 58_000) < 5)
    }

    @Test func impossibleSamplesAreRejected() {
        var estimator = ClockEstimator()
        let t1 = HostTime(nanoseconds: 1_000)
        // Reply "arrives" before it was sent.
        do { let added = estimator.add(ClockSample(t1: t1, t2: LeaderTime(nanoseconds: 5), t3: LeaderTime(nanoseconds: 6), t4: HostTime(nanoseconds: 500))); #expect(added == nil) }
        // Leader claims to have held it longer than the round trip.
        do { let added = estimator.add(ClockSample(t1: t1, t2: LeaderTime(nanoseconds: 0), t3: LeaderTime(nanoseconds: 1_000_000), t4: t1 + .microseconds(10))); #expect(added == nil) }
        // Extreme timestamps do not trap.
        do { let added = estimator.add(ClockSample(t1: HostTime(nanoseconds: .min), t2: LeaderTime(nanoseconds: .max), t3: LeaderTime(nanoseconds: .max), t4: HostTime(nanoseconds: .max))); #expect(added == nil) }
        #expect(estimator.rejectedSampleCount == 3)
        #expect(estimator.estimate == nil)
    }
}

extension Duration {
    var magnitudeForTest: Duration { self < .zero ? .zero - self : self }
}
