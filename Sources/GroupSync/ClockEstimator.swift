import Foundation
import MediaClock

/// Estimates the leader's clock from two-way exchanges: a pure value type with no I/O.
///
/// No one-way delay is negative, so every exchange bounds the offset θ (leader minus
/// follower) from both sides: `t3 − t4 ≤ θ ≤ t2 − t1`. Over a window of exchanges the
/// estimator asks which lines (offset and rate) fit inside all those bounds, and how
/// well: it models each one-way delay as a common floor plus an exponential queueing
/// delay, whose mean it reads from the spread of the round trips, and takes the posterior
/// mean of the line under that model and a prior on crystals' rates. That posterior
/// depends only on the tightest bounds along each rate, so the fastest request and the
/// fastest reply (which need not be the same exchange) decide the offset, and on a jittery
/// path its error shrinks as one over the number of exchanges where an average of whole
/// exchanges shrinks as one over its square root. Where the path's floor is blurred (its
/// fastest crossings spread over tens of µs by wake-ups), the floor's spread is learned from
/// the window and the line is fitted to every crossing near the floor (`SoftFloorFit`)
/// instead. The posterior's spread is published as
/// the estimate's uncertainty and drives the poll schedule: fast while it is large, slow
/// once offset and rate are known to a few µs and a ppm. Published estimates are clamped: a converged
/// estimate slews by at most `slewLimit` per update, and jumps only when the evidence says
/// the leader's clock really moved by more than `stepThreshold`.
public struct ClockEstimator: Sendable {
    // MARK: Tuning constants

    /// Most samples kept: at the settling poll, 41 s of history; a bound on the fit's cost.
    public static let windowSize = 2048
    /// Oldest sample kept, by age against the newest: a minute is long enough to see a
    /// rate to a fraction of a ppm from the fastest crossings at its two ends, and short
    /// enough that the crystals' thermal wander (a fraction of a ppm per minute) stays
    /// below what the line can bend to.
    public static let windowSpan: Duration = .seconds(60)
    /// Samples whose round trip exceeds both the window's lower quartile and the best
    /// times this factor (plus the margin below) are left out of the residual that
    /// reports the fit's quality: their queueing delay, and so their possible asymmetry,
    /// is large.
    public static let roundTripFilterFactor = 1.5
    /// Added to the filter threshold so that on a quiet LAN (round trips of tens of µs)
    /// scheduling noise does not leave out nearly every sample.
    public static let roundTripFilterMargin: Duration = .microseconds(100)
    /// Least mean queueing delay assumed per direction: the timestamping noise of a loaded
    /// host. Below it, a path whose round trips barely vary would make the posterior
    /// sharper than the timestamps are exact.
    public static let minimumQueueing: Duration = .microseconds(5)
    /// The quantile of the round trips whose excess over the best gives the density of
    /// fast crossings (see `ExchangeBounds`): low enough that the near-floor shape
    /// dominates, high enough that a few dozen exchanges estimate it.
    static let queueingQuantile = 0.1
    /// The exchanges' likelihood is raised to the power 1 / this (tempered): the delay
    /// model is an idealization, and real delays (uniform jitter, bursts of queueing,
    /// exchanges that share a queue) are less informative than independent exponential
    /// ones. Halving its sharpness keeps the published uncertainty honest on such paths (in
    /// simulation of ±2 ms uniform jitter, errors beyond three deviations went from 4 % of
    /// estimates to none) and averages over more of the fastest crossings.
    static let likelihoodTemper = 2.0
    /// The least rank (0 = best) whose round trip is compared with the best's: the fifth
    /// best of a join burst is seldom as close to the best as the second may be by chance.
    static let minimumQueueingRank = 4
    /// A deviation no number of exchanges shrinks, added in quadrature to the posterior's:
    /// a two-way exchange cannot see a difference between the two directions' delays, and
    /// what the stamps leave of one stays in every estimate. The leader's t3 is read in user
    /// space before its reply leaves; on loopback that leaves about a microsecond, where the
    /// posterior alone fell to 0.2 µs over five minutes and 80 % of estimates lay beyond
    /// three of its deviations.
    public static let unseenAsymmetry: Duration = .microseconds(1)
    /// Exchanges needed before the floor's spread is learned (`SoftFloorFit`): fewer put
    /// hardly a crossing within tens of µs of a jittery path's floor, where a spread would
    /// show.
    public static let spreadLearningSamples = 64
    /// Exchanges between two learnings of the floor's spread: it is the path's and the
    /// hosts' (their wake-ups), and changes slowly; learning costs a few dozen fits.
    public static let spreadRefitInterval = 64
    /// The soft floor is fitted when this many crossings each way are expected within one
    /// spread of the floor (n·σ/m): below one, the crossings are spaced wider than the
    /// floor is blurred, and the sharp model, its limit, is as good and cheaper.
    static let softFloorCrossings = 1.0
    /// Samples in a window that count as a fit for statistics: fewer leave nothing to judge
    /// its residual by.
    public static let minimumSamplesForFit = 4
    /// The spread of rates (ppm, one standard deviation of the prior's normal core,
    /// `RatePrior`) expected between two nodes' clocks before any evidence: crystals are
    /// specified to ±100 ppm each. It keeps the rate near 0 while a jittery path's first
    /// exchanges say almost nothing about it, and barely moves a quiet path's join burst,
    /// which pins the rate within a few ppm.
    public static let priorRateSpreadPPM = 200.0
    /// Largest rate accepted, in ppm: 2 %. Crystals are specified to ±100 ppm, but a clock
    /// skewed on purpose (`--clock-skew`, which allows 1 % either way, against a leader
    /// whose own clock may be skewed too, or an outside tool such as libfaketime, whose
    /// round figure `x1.001` is 1000 ppm) is followed just the same; a bound at 500 ppm left
    /// such a follower drifting at the soft tier's limit. The prior's core keeps a jittery
    /// path's first fits near 0 all the same.
    public static let maximumRatePPM: Int64 = 20_000
    /// How finely the most probable rate is searched for (a fraction): 0.01 ppm, half a µs
    /// over the window's minute.
    static let rateResolution = 1e-8
    /// Rates whose posterior log-density is this far below the peak's are left out of the
    /// posterior means: e^−12 is six millionths of the peak.
    static let negligibleLogDensity = 12.0
    /// Rates at which the posterior is summed between the ends of its non-negligible part:
    /// the density is log-concave, so 64 steps put its mean within a small fraction of its
    /// spread.
    static let rateSteps = 64
    /// The bounds may cross by this much (timestamping noise) and still describe a line;
    /// crossing by more means the window holds two different lines (the leader's clock
    /// moved, or a clock's rate changed), and the oldest samples are let go.
    public static let boundsCrossingTolerance: Duration = .microseconds(50)
    /// Samples needed before the estimate can count as converged: the join burst.
    public static let convergenceSamples = 8
    /// Uncertainty (one standard deviation of the offset) below which the estimate is
    /// trusted (converged): 1 ms, far below audible echo between rooms, above what a busy
    /// Wi-Fi link leaves after its first second.
    public static let convergedUncertaintyLimit: Duration = .milliseconds(1)
    /// Offset uncertainty (one standard deviation) below which the join's fast polling
    /// stops: 20 µs is a sample at 48 kHz, and, being one deviation, leaves the true offset
    /// within 100 µs with room to spare.
    public static let joinedUncertainty: Duration = .microseconds(20)
    /// Rate uncertainty (ppm, one standard deviation) below which the join's fast polling
    /// stops: over a steady poll interval 20 ppm moves the prediction by 2 µs.
    public static let joinedRateUncertaintyPPM = 20.0
    /// Rate uncertainty (ppm) below which the poll slows to `steadyInterval`: a follower
    /// whose leader goes quiet plays on its last estimate for up to ten seconds
    /// (`FollowerCore.defaultHoldoverLimit`), and 1 ppm is 10 µs over that.
    public static let settledRateUncertaintyPPM = 1.0
    /// Offset uncertainty below which the poll slows to `steadyInterval`: a few µs is a
    /// fraction of a sample, and the window then holds enough fast crossings that slower
    /// polling keeps it there.
    public static let settledUncertainty: Duration = .microseconds(5)
    /// Largest change a converged estimate may make to the predicted leader time at the
    /// moment of an update: 200 µs per update is inside what fractional resampling can
    /// follow without a click, and more than an honest estimate moves between two updates.
    public static let slewLimit: Duration = .microseconds(200)
    /// A change beyond this is a real clock jump (leader restart, stepped clock) and is
    /// applied at once: 5 ms is beyond any estimate's uncertainty once converged.
    public static let stepThreshold: Duration = .milliseconds(5)
    /// Samples with a round trip above this are discarded outright: no LAN or Wi-Fi path
    /// takes a second, so the reply is stale or forged.
    public static let maximumRoundTrip: Duration = .seconds(1)

    /// Requests sent back to back at join, so that a first estimate exists within 50 ms.
    public static let burstCount = 8
    /// Spacing of the join burst: spread over 35 ms, so that the burst alone fixes the rate
    /// well enough to hold a quiet path's estimate within 20 µs for a second (over 14 ms it
    /// was 47 µs off at ±200 ppm); the starting poll after it is faster, to gather
    /// exchanges on a jittery path.
    public static let burstInterval: Duration = .milliseconds(5)
    /// Poll interval after the burst until the estimate is sure enough to play on
    /// (`FollowerCore.canStart(on:)`; it also retries lost requests): a thousand a
    /// second (about 200 kB/s), because until then the room is silent, and on a path with
    /// milliseconds of jitter the honest uncertainty falls only with the exchanges seen.
    /// On the 5 ms ± 2 ms path the slowest of forty simulated followers could start after
    /// 0.51 s at this rate and after 1.50 s at `convergingInterval`'s (`chorus-bench
    /// clock`). A quiet path is there within the burst and never polls this fast. A
    /// follower sends these between its ticks, as replies arrive.
    public static let startingInterval: Duration = .milliseconds(1)
    /// Poll interval from then until the offset is known to `joinedUncertainty`: five
    /// hundred a second (about 100 kB/s, for a few tenths of a second on a path with
    /// milliseconds of jitter), because the offset's error falls as one over the exchanges
    /// seen and a playing room is held to the leader by it.
    public static let convergingInterval: Duration = .milliseconds(2)
    /// Poll interval from `joinedUncertainty` to `settledUncertainty`: fifty a second
    /// (about 10 kB/s) close the bounds the last few µs within seconds on a jittery path,
    /// where a path with milliseconds of jitter may stay at this rate.
    public static let settlingInterval: Duration = .milliseconds(20)
    /// Poll interval in the centre's mode (`DelayBalance`) while the centre's own deviation
    /// is above `centreSettledUncertainty`: two hundred a second (about 40 kB/s both ways).
    /// The centre's error falls only as one over the square root of the exchanges in its
    /// minute of memory, and each exchange's own offset scatters by 0.84 ms on 5 ms ± 2 ms
    /// behind a 1 ms timer: fifty a second leave it 11 µs, which a follower plays as a bias
    /// for tens of seconds at a time. In simulation (`chorus-bench clock --runs 12 --seconds
    /// 120 --ticks-path 5,2,1`) the worst follower's bias went from 26 to 19 µs at 4 ms and
    /// 20 µs at 6 ms, the pair p99 from 95 to 59, 69 and 74 µs at 4, 6 and 8 ms; at 5 ms, with
    /// the rest of the centre's changes, 19 and 63 µs. Not 4 ms: the exchanges are paid for on
    /// every such path for as long as it lasts. The centre on the path settles near
    /// 5 µs at this rate, so the poll may stay at it for good. Paths whose floors agree never poll at it.
    public static let centreInterval: Duration = .milliseconds(5)
    /// The centre's deviation below which the centre's mode polls at `settlingInterval`.
    static let centreSettledUncertainty: Duration = .microseconds(5)
    /// Steady poll interval once settled: ten exchanges a second (about 2 kB/s) keep a
    /// minute's window full of fast crossings at both ends.
    public static let steadyInterval: Duration = .milliseconds(100)

    // MARK: State

    private var window = SampleWindow()
    /// Set at the first converged estimate since the last reset: from then on changes
    /// are clamped, even while a disturbed window is temporarily not converged.
    private var hasConverged = false
    /// The floor's spread (ns, one deviation) last learned from the window, or `nil`
    /// before `spreadLearningSamples`.
    private var floorSpread: Double?
    /// Exchanges added since the spread was last learned.
    private var samplesSinceSpread = 0
    /// The last soft-floor peak, to start the next fit from: slope (dimensionless) and the
    /// two floor lines at follower host ns `reference`, as ns from leader-minus-follower
    /// offset `base`.
    private var softPeak: (slope: Double, upper: Double, lower: Double, reference: Int128, base: Int128)?
    /// The latest published estimate, or `nil` before the first sample.
    public private(set) var estimate: ClockEstimate?
    /// Times the published estimate jumped (change beyond `stepThreshold`).
    public private(set) var stepCount = 0
    /// Updates whose change was limited to `slewLimit`.
    public private(set) var slewLimitedCount = 0
    /// Samples discarded as impossible (time going backwards, round trip over a second).
    public private(set) var rejectedSampleCount = 0
    /// Samples let go early because their bounds contradicted newer ones.
    public private(set) var contradictedSampleCount = 0
    /// Estimates whose line was moved from the floors' onto the exchanges' centre
    /// (`DelayBalance`): the directions' floors differ.
    public private(set) var balancedFitCount = 0
    /// The last balance judged, as a shift from the line it was judged against, and the
    /// fits since: the centre of a window of exchanges moves little from one exchange to
    /// the next, and judging it sorts the window four times, which at every fit made the
    /// estimator several times slower.
    private var balance: (judged: DelayBalance, fitsSince: Int)?
    /// Fits between two judgements of the balance (`DelayBalance`): a sixteenth of the
    /// exchanges in a steady window at most, so a judgement is never more than 1.6 s old at
    /// the steady poll rate, and on the join's fast polls 16 ms.
    static let balanceJudgementInterval = 16
    /// Exchanges after which the join's fast poll no longer waits for the centre's verdict
    /// on the floors (`nextPollInterval`): the window's size, about four seconds at
    /// `convergingInterval`, by when a path with 0.84 ms of scatter in each exchange's own
    /// offset (5 ms ± 2 ms each way, on 1 ms ticks) has its centre known to 19 µs. A path
    /// with more scatter is not polled fast for longer.
    static let balanceVerdictExchanges = windowSize
    /// In the centre's mode, the floors' rate is kept while it lies within this many
    /// combined deviations of the centre's own: where both floors still trace lines (only
    /// their offsets differ) their rate is known far better than a fit to the exchanges'
    /// scattered offsets knows it, and a line through the centre's centroid at the floors'
    /// rate is better at the newest exchange, which lies up to a memory's span from the
    /// centroid. Ten, not three: a floor that ramps up from a tick rather than standing
    /// sharp can tilt the floors' rate by a ppm while claiming a few ppb, and at three the
    /// centre's own rate (off by several ppm in its first tens of seconds) took over and
    /// put the estimate further off, 120 µs at the 99th percentile of eight simulated
    /// followers against 80 µs at ten. Only floors that bend grossly are left.
    static let agreeingSlopeDeviations = 10.0
    /// How far the centre's own rate deviation is distrusted in what the estimate claims (a
    /// factor on it): the deviation is computed as if the exchanges' weights were even and
    /// their offsets independent. The rate itself is weighed as the centre claims it (see
    /// `publish`); taken as claimed in the estimate's deviation too, 15 % of one follower's
    /// estimates lay beyond three of their deviations behind a real relay on a 2 ms timer
    /// (`chorus-bench sync --scenario relay`, `netpath.py --profile ticks --tick-ms 2`).
    static let centreClaimCaution = 4.0
    /// In the centre's mode, the ratio of the two directions' spreads beyond which the centre
    /// is let go for the floors (a busier queue one way), where `DelayBalance.alikeSpreads`
    /// (1.25) lets it in: a margin, so that a path near the limit does not flip between the
    /// two lines. Behind a real relay on a 2 ms timer (3 ms ± 1 ms) the judged ratio wandered
    /// about 1.2, and each time it passed 1.25 the estimate jumped 330 µs onto the floors'
    /// line for up to a second (`chorus-bench clock-replay` of recorded exchanges: one
    /// follower's p99 from 10 s on 333 µs, with this margin 76 µs).
    static let unlikeSpreads = 1.6
    /// The exchanges' own offsets over a long memory (`CentreLine`).
    private var centre = CentreLine()
    /// The window's last fit, which exchanges counted by the centre only are published with.
    private var floorsFit: FloorsFit?
    /// The midpoint of the newest exchange the window took.
    private var lastAdmitted: HostTime?
    /// Exchanges counted by the centre only (`centreWindowSpacing`).
    public private(set) var centreOnlySampleCount = 0
    /// In the centre's mode, once the window is full, the least spacing (follower host
    /// time) between two exchanges it takes; those between are counted by the centre only,
    /// and published with the window's last fit. At `centreInterval` a window of
    /// `windowSize` exchanges would span eight seconds, and the floors' rate, which the
    /// centre's line is read with at up to a minute from its centroid, would be known over
    /// those alone: in simulation the largest error rose from 108 to 149 µs. At this spacing
    /// the window spans about half a minute (41 s at the settling poll), and a fit costs no
    /// more often than there.
    static let centreWindowSpacing: Duration = .milliseconds(15)
    /// Set once the floors' line is shown to lie off the exchanges' centre while the centre
    /// can be trusted (`DelayBalance.trustsCentre`), or lie three of the centre's deviations
    /// off once a ramped floor has been seen: the centre's line is published from then
    /// on, until the directions spread unlike (`unlikeSpreads`, and no ramped floor seen) or
    /// the history is let go. Kept rather than
    /// judged afresh at each fit: on a path whose floors differ the floors' line wanders
    /// (one direction's floor follows the phase of a relay's ticks), and at times comes
    /// near the centre by chance, yet is no better for it.
    private var centreMode = false
    /// Set at a fit whose floors' line the centre departs from by `disputedErrors` of its
    /// deviations without the centre being let in (too few deviations, or a centre that
    /// cannot be trusted: `DelayBalance.trustsCentre`, no ramp seen), among the first
    /// `balanceVerdictExchanges` since the last reset: `nextPollInterval` keeps the join's
    /// poll meanwhile, and the estimate claims half the departure as uncertainty.
    private var floorsDisputed = false
    /// How many of the centre's deviations it must lie from the floors' line for the two to
    /// be disputed (`floorsDisputed`): fewer than the five that let the centre in
    /// (`DelayBalance.significantErrors`), because a dispute only holds a follower back
    /// until the exchanges can tell. At five, followers behind a 1 ms timer started 200 to
    /// 420 µs off while claiming under 50 (`chorus-bench clock --ticks-path 5,2,1`, 8 of 24),
    /// the centre's 4 deviations not yet enough to speak.
    static let disputedErrors = 3.0
    /// How many of the centre's deviations it may lie from the floors' line before the floors'
    /// line claims the rest of the distance as uncertainty, while the join's exchanges come
    /// in (`publish`). At one, followers behind a simulated 1 ms timer still started up to
    /// 351 µs off (`chorus-bench clock --runs 24 --seconds 20 --ticks-path 5,2,1`), at half
    /// 178 µs; at none, a follower on the Wi-Fi-like path waited 1.35 s to start where the
    /// floors were right, at half 0.40 s. (Claiming the centre's whole deviation instead put
    /// a recorded jittery join's start past half a second, `RecordedJoinTests`.)
    static let agreeingCentreDeviations = 0.5
    /// How far the centre lay from the floors' line at the dispute (ns).
    private var disputedDeparture = 0.0
    /// Set once either direction's floor has been judged ramped (`DelayBalance.rampedFloor`)
    /// since the last reset: a timer's ticks are the path's, not a passing state, so from
    /// then on unlike spreads (`unlikeSpreads`) no longer send the estimate back to the
    /// floors' line. A verdict taken afresh at each judgement came and went with the
    /// crossings near the floor, and the estimate with it (`chorus-bench clock --runs 16
    /// --seconds 40`: on `--ticks-path 3,1,2` a median join of 5.0 s against 2.7 s, on
    /// `--ticks-path 6,2,4` a pair p99 of 165 µs against 109 µs).
    private var rampedFloorSeen = false

    /// An estimator with no samples.
    public init() {}

    /// Samples in the window.
    public var sampleCount: Int { window.count }

    /// The follower host time the window spans, from its oldest exchange's midpoint to its
    /// newest's.
    public var windowCoverage: Duration {
        guard let oldest = window.samples.first?.midpoint, let newest = window.samples.last?.midpoint else { return .zero }
        return newest - oldest
    }

    /// Whether the latest estimate is converged.
    public var isConverged: Bool { estimate?.converged ?? false }

    /// Forgets every sample and estimate (a new leader).
    public mutating func reset() {
        self = ClockEstimator()
    }

    /// How long to wait before the next clock request, given how many were sent since
    /// joining: burst, then `startingInterval` until the estimate can be played on
    /// (`FollowerCore.canStart(on:)`), `convergingInterval` until offset and rate are known to
    /// `joinedUncertainty` and `joinedRateUncertaintyPPM`, `settlingInterval` until they
    /// are known to `settledUncertainty` and `settledRateUncertaintyPPM`, then
    /// `steadyInterval`. In the centre's mode (floors that differ between the directions),
    /// by the centre's own deviation instead: `convergingInterval` above `joinedUncertainty`,
    /// `centreInterval` above `centreSettledUncertainty`, then `settlingInterval`.
    public func nextPollInterval(requestsSent: Int) -> Duration {
        if requestsSent < Self.burstCount { return Self.burstInterval }
        if centreMode, let centreDeviation = centre.centroidDeviation {
            // The centre's error falls with the exchanges it has counted, not with the
            // window's, and a faster poll only shortens the span the window's floors give
            // the rate over: at the starting poll the window spanned two seconds, the
            // floors' rate was known to 20 ppm, the published deviation grew past what a
            // follower starts on, and the poll stayed there (seen behind a real relay).
            if centreDeviation > Double(Self.joinedUncertainty.nanosecondCount) { return Self.convergingInterval }
            return centreDeviation > Double(Self.centreSettledUncertainty.nanosecondCount) ? Self.centreInterval : Self.settlingInterval
        }
        guard let estimate, FollowerCore.canStart(on: estimate) else { return Self.startingInterval }
        if let centreDeviation = centre.centroidDeviation, centreDeviation > Double(Self.joinedUncertainty.nanosecondCount),
           centre.count < Self.balanceVerdictExchanges {
            // Whether the floors' line can be trusted is known only from the centre, whose
            // error falls with the exchanges it has counted, while the floors may claim
            // 20 µs within a second on a path with milliseconds of jitter. The join polls
            // fast until the centre could show a floor difference of about 100 µs (five of
            // its deviations). In simulation this took the jittery and Wi-Fi-like paths'
            // 99th percentile from 2 to 10 s from 42 to 29 µs and from 25 to 10 µs, for
            // about 1,500 more exchanges at the join (`chorus-bench clock`).
            return Self.convergingInterval
        }
        if floorsDisputed {
            // The centre lies off the floors' line, but the spreads are unlike and no floor
            // has been read as ramped: a busier queue one way, or replies locked to a
            // relay's ticks. Only the crossings near the floors can tell, and a small jitter
            // puts few there: on 2 ms ± 0.5 ms behind a 1 ms timer the verdict needs about
            // 900 exchanges, which the steady poll (ten a second, a window of 600 at most)
            // never gathers. So the join's poll goes on until `balanceVerdictExchanges` have
            // been counted, as above (`floorsDisputed` ends there).
            return Self.convergingInterval
        }
        let joined = estimate.uncertainty <= Self.joinedUncertainty && estimate.rateUncertaintyPPM <= Self.joinedRateUncertaintyPPM
        if !joined { return Self.convergingInterval }
        guard estimate.uncertainty <= Self.settledUncertainty,
              estimate.rateUncertaintyPPM <= Self.settledRateUncertaintyPPM else { return Self.settlingInterval }
        return Self.steadyInterval
    }

    /// How far a poll interval is varied either way, as a share of it (`dithered`): half,
    /// so successive requests leave at phases spread over any timer a path releases them
    /// on, while the schedule's rate stays as `nextPollInterval` asks.
    static let pollDitherShare = 0.5
    /// The fractional part of the golden ratio: multiples of it mod 1 fill [0, 1) as evenly
    /// as any sequence can, with no period for a timer to lock to.
    static let goldenFraction = 0.618_033_988_749_894_8

    /// `interval` varied by up to `pollDitherShare` either way, deterministically from the
    /// count of requests sent (the mean over any run of requests is `interval`). Requests
    /// sent at exactly even intervals keep one phase against a relay that releases datagrams
    /// on its timer's ticks, which drifts only with the two clocks' rates: the fastest
    /// requests then all wait for the tick alike, and the floor they trace bends with the
    /// drift (a 1 ms timer tilted the line by up to 60 ppm in `chorus-bench clock`). Spread
    /// phases put some requests just before a tick at every moment, so the floor stays a
    /// line. The join burst is left even: its spacing is chosen to fix the rate.
    public static func dithered(_ interval: Duration, requestsSent: Int) -> Duration {
        guard requestsSent >= burstCount else { return interval }
        let fraction = (Double(requestsSent) * goldenFraction).truncatingRemainder(dividingBy: 1)
        return interval * (1 + pollDitherShare * (2 * fraction - 1))
    }

    /// Adds a sample and returns the new published estimate, or `nil` if the sample was
    /// rejected as impossible (the previous estimate stands).
    @discardableResult
    public mutating func add(_ sample: ClockSample) -> ClockEstimate? {
        guard sample.isPlausible, sample.roundTrip <= Self.maximumRoundTrip else {
            rejectedSampleCount += 1
            return nil
        }
        if let previous = estimate, hasConverged, revealsClockJump(sample, previous) {
            // The leader's clock moved: history describes another clock.
            window.removeAll()
            centre.reset()
            centreMode = false
            rampedFloorSeen = false
            balance = nil
            floorsFit = nil
            lastAdmitted = nil
        }
        centre.add(sample)
        let raw: ClockEstimate
        if centreMode, window.count >= Self.windowSize, let floors = floorsFit, let admitted = lastAdmitted,
           sample.midpoint < admitted + Self.centreWindowSpacing {
            // (An exchange overtaken by a later one's reply counts as close to the last taken.)
            // Counted by the centre only: the floors' line stands as the window last gave it.
            centreOnlySampleCount += 1
            raw = publish(floors)
        } else {
            window.insert(sample)
            lastAdmitted = max(lastAdmitted ?? sample.midpoint, sample.midpoint)
            samplesSinceSpread += 1
            window.removeOldest(window.count - Self.windowSize)
            if let newest = window.samples.last?.midpoint {
                window.removeOlder(than: newest - Self.windowSpan)
            }
            let floors = windowFit()
            floorsFit = floors
            raw = publish(floors)
        }
        let published = clamp(raw, previous: estimate, now: sample.t4)
        estimate = published
        hasConverged = hasConverged || published.converged
        return published
    }

    /// A sample contradicts the estimate by more than its own worst-case error (half its
    /// round trip) plus the step threshold: only a jump of the leader's clock explains it.
    private func revealsClockJump(_ sample: ClockSample, _ previous: ClockEstimate) -> Bool {
        let predicted = previous.offset(atHost: sample.midpoint)
        let error = (sample.offset - predicted).magnitude
        return error > Self.stepThreshold + sample.roundTrip / 2
    }

    /// Limits how far the prediction at `now` moves, once the estimator has converged.
    private mutating func clamp(_ raw: ClockEstimate, previous: ClockEstimate?, now: HostTime) -> ClockEstimate {
        guard let previous, hasConverged else { return raw }
        let change = raw.leaderTime(atHost: now) - previous.leaderTime(atHost: now)
        let size = change.magnitude
        if size > Self.stepThreshold {
            stepCount += 1
            return raw
        }
        guard size > Self.slewLimit else { return raw }
        slewLimitedCount += 1
        let limited = change < .zero ? .zero - Self.slewLimit : Self.slewLimit
        var adjusted = raw
        adjusted.offset = raw.offset - change + limited
        // The published line lags the fit by what the slew has still to cover, and claims it:
        // a follower must not start on a line that is on its way elsewhere. (`converged`
        // stays the fit's: the estimate is as converged as the line it is on its way to.) (When the
        // estimate left the floors' line for the centre, 1.9 ms away behind a 4 ms timer, it
        // claimed the fit's 30 µs while 1.7 ms off, and simulated followers started there.)
        let lag = Double((change - limited).magnitude.nanosecondCount)
        let claimed = Double(raw.uncertainty.nanosecondCount)
        let combined = (claimed * claimed + lag * lag).squareRoot()
        adjusted.uncertainty = Self.duration(nanoseconds: combined)
        return adjusted
    }

    /// A deviation in ns as a `Duration`: the largest one for a value that is not finite.
    static func duration(nanoseconds value: Double) -> Duration {
        .nanoseconds(value.isFinite ? Int64(min(value, 1e18).rounded()) : Int64.max)
    }

    /// What a fit of the window gives: the floors' line (in the window's coordinates, x
    /// from follower host ns `reference`, offsets from `baseOffset`) and the window's
    /// figures that the published estimate reports with it.
    struct FloorsFit {
        var line: (slope: Double, offset: Double, slopeDeviation: Double, offsetDeviation: Double, crossing: Double)
        var reference: Int128
        var baseOffset: Int128
        /// The window's exchanges in those coordinates.
        var points: (x: [Double], upper: [Double], lower: [Double])
        /// The mean queueing delay the sharp model read from the round trips (ns).
        var queueing: Double
        /// The floor's learned spread (ns), 0 where the sharp model stood.
        var spread: Double
        var bestRoundTrip: Int128
        var medianRoundTrip: Int128
        /// Round trips up to this count as near the best (`roundTripFilterFactor`).
        var nearBestRoundTrip: Int128
        var sampleCount: Int
    }

    /// The posterior line over the window, with the soft floor's where it applies, and the
    /// balance of the two directions judged against it.
    private mutating func windowFit() -> FloorsFit {
        var bounds = ExchangeBounds(window)
        var line = bounds.posteriorLine()
        // Bounds that cross by more than timestamping noise describe two lines: the older
        // part of the window no longer describes this clock. Let it go, a half at a time.
        while line.crossing > Double(Self.boundsCrossingTolerance.nanosecondCount.clampedToInt64), window.count >= 2 * Self.minimumSamplesForFit {
            let dropped = window.count / 2
            window.removeOldest(dropped)
            contradictedSampleCount += dropped
            centre.reset()
            centreMode = false
            rampedFloorSeen = false
            balance = nil
            bounds = ExchangeBounds(window)
            line = bounds.posteriorLine()
        }

        var spread = 0.0
        if window.count >= Self.spreadLearningSamples {
            let fit = SoftFloorFit(bounds)
            if floorSpread == nil || samplesSinceSpread >= Self.spreadRefitInterval {
                floorSpread = fit.learnSpread(slope: line.slope)
                samplesSinceSpread = 0
            }
            // The previous peak in this window's coordinates: its lines read at the new
            // reference, less the new base.
            let start = softPeak.map { peak -> (slope: Double, upper: Double, lower: Double) in
                let moved = peak.slope * Double((bounds.reference - peak.reference).clampedToInt64)
                    + Double((peak.base - bounds.baseOffset).clampedToInt64)
                return (peak.slope, peak.upper + moved, peak.lower + moved)
            }
            softPeak = nil
            if let learned = floorSpread, Double(window.count) * learned / bounds.queueing >= Self.softFloorCrossings,
               let soft = fit.posteriorLine(spread: learned, slope: line.slope, temper: Self.likelihoodTemper,
                                            priorRateSpread: Self.priorRateSpreadPPM / 1e6, from: start) {
                softPeak = (soft.slope, soft.upperFloor, soft.lowerFloor, bounds.reference, bounds.baseOffset)
                // The sharp model's Laplace spread about the floor stays as a least
                // deviation, so the two models agree where they meet.
                let scale = bounds.queueing / (2 * Double(window.count))
                line = (soft.slope, soft.offset, soft.slopeDeviation,
                        (soft.offsetDeviation * soft.offsetDeviation + 2 * scale * scale).squareRoot(), line.crossing)
                spread = learned
            }
        }

        // Floors that differ between the directions (a relay releasing on timer ticks) put
        // the line off the exchanges' centre; where the exchanges say so, the centre stands.
        if balance == nil || (balance?.fitsSince ?? 0) >= Self.balanceJudgementInterval {
            let judged = DelayBalance(x: bounds.points.x, upper: bounds.points.upper, lower: bounds.points.lower,
                                      slope: line.slope, offset: line.offset)
            balance = (judged, 0)
        }
        balance?.fitsSince += 1

        let best = window.roundTrip(atFraction: 0)
        let median = window.roundTrip(atFraction: 0.5)
        // Near the best round trip, or in the best quarter: the exchanges whose own offset
        // is worth comparing with the line.
        let nearBest = Int128((Double(best.clampedToInt64) * Self.roundTripFilterFactor).rounded()) + Self.roundTripFilterMargin.nanosecondCount
        let threshold = max(nearBest, window.roundTrip(atFraction: 0.25))
        return FloorsFit(line: line, reference: bounds.reference, baseOffset: bounds.baseOffset, points: bounds.points,
                         queueing: bounds.queueing, spread: spread, bestRoundTrip: best, medianRoundTrip: median,
                         nearBestRoundTrip: threshold, sampleCount: window.count)
    }

    /// The estimate published from the window's floors' line and the exchanges' centre: the
    /// floors' line, or the centre's where the exchanges show the floors' line off
    /// (`DelayBalance`), its uncertainty, and the residual of the near-best exchanges about it.
    private mutating func publish(_ floors: FloorsFit) -> ClockEstimate {
        var line = floors.line
        let spread = floors.spread
        let centreLine = centre.line(reference: floors.reference, base: floors.baseOffset)
        floorsDisputed = false
        // How far the centre lies from the floors' line beyond its own deviation (ns), where
        // the two are compared.
        var undisputedDeparture = 0.0
        if balance?.judged.rampedFloor == true { rampedFloorSeen = true }
        if let centreLine, !centreMode {
            // The centre's long memory can see the floors' line lie off it before the window
            // alone can: compared where the centre is known best, its centroid.
            let departure = centreLine.offset + centreLine.slope * centreLine.centroid - (line.offset + line.slope * centreLine.centroid)
            undisputedDeparture = max(0, abs(departure) - Self.agreeingCentreDeviations * centreLine.centroidDeviation)
            let beyondLeast = abs(departure) > DelayBalance.leastDeparture
            // A floor that ramps up from a timer's tick leaves the floors' line anywhere
            // within half a tick, whatever it claims; so once a ramp has been seen, a
            // departure that would only dispute the floors' line lets the centre in.
            // Waiting for five deviations kept a follower behind a real relay on the
            // floors' line, 110 µs off, for five seconds after the ramp was seen
            // (`clock-replay` of a `netpath.py --profile ticks` run).
            let entryErrors = rampedFloorSeen ? Self.disputedErrors
                : (balance?.judged.trustsCentre == true ? DelayBalance.significantErrors : .infinity)
            if beyondLeast, abs(departure) > entryErrors * centreLine.centroidDeviation {
                centreMode = true
            } else if beyondLeast, abs(departure) > Self.disputedErrors * centreLine.centroidDeviation,
                      centre.count < Self.balanceVerdictExchanges {
                // Disputed only while the join's exchanges are still coming in: past
                // them, with no ramp seen, the spreads are a busier queue's and the
                // floors' line stands, as sure as it claims.
                floorsDisputed = true
                disputedDeparture = departure
            }
        }
        if balance?.judged.shift != nil { centreMode = true }
        if !rampedFloorSeen, balance?.judged.spreadsWithin(Self.unlikeSpreads) == false {
            centreMode = false
        }
        if centreMode, let centreLine {
            let slopesAgree = abs(centreLine.slope - line.slope) <= Self.agreeingSlopeDeviations * (centreLine.slopeDeviation * centreLine.slopeDeviation + line.slopeDeviation * line.slopeDeviation).squareRoot()
            // Both rates, weighed by their deviations: where the floors stand sharp theirs is
            // the sharper by far, while behind a real relay, whose wake-ups blur them, the
            // centre's was known to 0.6 ppm where the floors' window knew 20. The centre's is
            // taken as it claims. Taken as four times that, the floors' rate prevailed behind
            // a real relay on a 4 ms timer, whose ramped floors tilt it by ppm while claiming
            // less, and the estimate wandered 150 µs over tens of seconds as the tilt came
            // and went (`clock-replay` of `netpath.py --profile ticks` runs on 1, 2 and 4 ms
            // timers: p99 from 10 s on of 41 to 164 µs against 23 to 71 µs; in simulation,
            // pair p99 alike or better, docs/clock-ticks.md).
            let centreSlopeDeviation = centreLine.slopeDeviation
            let floorWeight = 1 / max(line.slopeDeviation * line.slopeDeviation, .leastNormalMagnitude)
            let centreWeight = 1 / max(centreSlopeDeviation * centreSlopeDeviation, .leastNormalMagnitude)
            let slope = (line.slope * floorWeight + centreLine.slope * centreWeight) / (floorWeight + centreWeight)
            // What is claimed for it, though, takes the centre's as `centreClaimCaution` times
            // what it says.
            let cautiousDeviation = centreSlopeDeviation * Self.centreClaimCaution
            let cautiousWeight = 1 / max(cautiousDeviation * cautiousDeviation, .leastNormalMagnitude)
            let slopeDeviation = (1 / (floorWeight + cautiousWeight)).squareRoot()
            if slopesAgree, slope.isFinite, slopeDeviation.isFinite,
               let through = centre.line(reference: floors.reference, base: floors.baseOffset, slope: slope, slopeDeviation: slopeDeviation) {
                line.slope = slope
                line.slopeDeviation = slopeDeviation
                line.offset = through.offset
                line.offsetDeviation = through.offsetDeviation
            } else {
                line.slope = centreLine.slope
                line.offset = centreLine.offset
                line.slopeDeviation = cautiousDeviation
                let carried = cautiousDeviation * centreLine.centroid
                line.offsetDeviation = (centreLine.centroidDeviation * centreLine.centroidDeviation + carried * carried).squareRoot()
            }
            balancedFitCount += 1
        } else if let shift = balance?.judged.shift {
            line.offset += shift.offset
            line.offsetDeviation = shift.deviation
            balancedFitCount += 1
        } else if floorsDisputed {
            // One of the two lines is right, and the exchanges cannot yet say which: the
            // estimate is uncertain by half their distance. Claimed as such, it keeps a
            // follower from starting on the floors' line half a tick off, and keeps the join's
            // poll going.
            let half = disputedDeparture / 2
            line.offsetDeviation = (line.offsetDeviation * line.offsetDeviation + half * half).squareRoot()
        }

        let best = floors.bestRoundTrip, median = floors.medianRoundTrip, threshold = floors.nearBestRoundTrip
        var squares = 0.0, allSquares = 0.0
        var used = 0
        let limit = Double(threshold.clampedToInt64)
        let points = floors.points
        for index in points.x.indices {
            // An exchange's round trip is its upper bound less its lower, and its own
            // offset, ((t2 − t1) + (t3 − t4)) / 2, their midpoint.
            let upper = points.upper[index], lower = points.lower[index]
            let residual = (upper + lower) / 2 - line.offset - line.slope * points.x[index]
            allSquares += residual * residual
            guard upper - lower <= limit else { continue }
            squares += residual * residual
            used += 1
        }
        let rms = used > 0 ? (squares / Double(used)).squareRoot() : 0
        let rateLimit = Double(Self.maximumRatePPM * 1_000_000)
        let ppt = line.slope * 1e12
        let ratePPT = ppt.isFinite ? Int64(max(-rateLimit, min(rateLimit, ppt.rounded()))) : 0
        let offset = floors.baseOffset + (line.offset.isFinite && abs(line.offset) < 1e18 ? Int128(line.offset.rounded()) : 0)
        let asymmetry = Double(Self.unseenAsymmetry.nanosecondCount)
        // Until the floor's spread is learned the sharp model cannot tell a floor blurred by
        // as much as the queueing itself from a sharp one, and then the fastest crossings
        // are no better than any: the offset is known only as a mean of the crossings, to
        // m / √(2n). Without this a jittery path's first few dozen exchanges claimed under
        // 50 µs while the line then moved by over 100 µs as the spread was learned, and a
        // follower started on that.
        let unlearned = floorSpread == nil ? floors.queueing / (2 * Double(floors.sampleCount)).squareRoot() : 0
        // Until the centre has counted the join's exchanges, it is the only check on the
        // floors' line, and that line is taken to be known no better than the centre shows
        // it: off by as much as the two lie apart beyond half the centre's deviation, and,
        // before the centre has a line, no better than the exchanges' mean. A timer's ticks
        // can put the floors' line hundreds of µs off while it claims tens, below the three
        // deviations that dispute it. Behind a simulated 1 ms timer, followers that started
        // in the first 0.15 s stood up to 420 µs off while claiming under 50 µs
        // (`chorus-bench clock --ticks-path 5,2,1`); with this, 178 µs.
        var unchecked = 0.0
        if !centreMode, centre.count < Self.balanceVerdictExchanges {
            if centreLine != nil {
                unchecked = undisputedDeparture
            } else {
                // The window holds every exchange yet: their own offsets' spread about the
                // line, over the square root of their count.
                let count = Double(max(points.x.count, 1))
                unchecked = (allSquares / count).squareRoot() / count.squareRoot()
            }
        }
        let deviation = max((line.offsetDeviation * line.offsetDeviation + asymmetry * asymmetry + unlearned * unlearned).squareRoot(), unchecked)
        let uncertainty = Self.duration(nanoseconds: deviation)
        return ClockEstimate(
            referenceHostTime: HostTime(nanoseconds: floors.reference.clampedToInt64),
            offset: .nanoseconds(offset.clampedToInt64),
            ratePPT: ratePPT,
            bestRoundTrip: .nanoseconds(best.clampedToInt64),
            medianRoundTrip: .nanoseconds(median.clampedToInt64),
            residualRMS: .nanoseconds(rms.isFinite ? Int64(min(rms, 1e18).rounded()) : Int64.max),
            sampleCount: floors.sampleCount,
            usedSampleCount: used,
            converged: floors.sampleCount >= Self.convergenceSamples && uncertainty <= Self.convergedUncertaintyLimit,
            uncertainty: uncertainty,
            rateUncertaintyPPM: line.slopeDeviation * 1e6,
            floorSpread: .nanoseconds(Int64(min(spread, 1e18).rounded()))
        )
    }
}

/// The bounds a window of exchanges puts on the offset, reduced to those that can matter,
/// and the posterior line they give.
///
/// In coordinates relative to the newest exchange (x: nanoseconds from its midpoint;
/// bounds: nanoseconds from `baseOffset`), each exchange gives an upper bound
/// `u = t2 − t1` and a lower bound `l = t3 − t4` on the offset at its x. Along a rate r
/// the tightest bounds are `U(r) = min(u − r·x)` and `L(r) = max(l − r·x)`, and only the
/// exchanges on the lower convex hull of the (x, u) points and the upper hull of the
/// (x, l) points can ever be the tightest: a few dozen of a window's thousands.
///
/// Under the model (one-way delay = a floor common to both directions + an exponential
/// queueing delay of mean m, independent per crossing), the likelihood of a line
/// `a + r·x` is proportional to `exp(2n/m · s)`, where s is the line's least distance to
/// any bound, and nothing else about the line matters: the crossings' total delay is
/// fixed by the timestamps. For a rate r, s peaks midway between `L(r)` and `U(r)`, at half
/// the gap `W(r) = U(r) − L(r)`, and falls off linearly either side: so the rate's
/// posterior density is `exp(n/m · W(r))` times the crystals' prior, and given the rate
/// the offset is Laplace-distributed about the midpoint with scale `m / 2n`.
struct ExchangeBounds {
    /// The exchanges' coordinates: x (ns from the newest midpoint), and the upper and
    /// lower bounds (ns from `baseOffset`).
    static func coordinates(_ window: SampleWindow, reference: Int128, baseOffset: Int128) -> (x: [Double], upper: [Double], lower: [Double]) {
        // Wrapping 64-bit arithmetic: every result here is small (nanoseconds within the
        // window, bounds within milliseconds of the base) and modular arithmetic gets a
        // small result exactly whatever the operands; a forged exchange with absurd
        // timestamps gives a wrong bound, never a trap. (128-bit arithmetic here cost more
        // than the rest of the fit.)
        let origin = Int64(truncatingIfNeeded: reference)
        let base = Int64(truncatingIfNeeded: baseOffset)
        var x: [Double] = [], upper: [Double] = [], lower: [Double] = []
        x.reserveCapacity(window.count)
        upper.reserveCapacity(window.count)
        lower.reserveCapacity(window.count)
        for sample in window.samples {
            let t1 = sample.t1.nanoseconds, t4 = sample.t4.nanoseconds
            x.append(Double((t1 &+ (t4 &- t1) / 2) &- origin))
            upper.append(Double((sample.t2.nanoseconds &- t1) &- base))
            lower.append(Double((sample.t3.nanoseconds &- t4) &- base))
        }
        return (x, upper, lower)
    }

    /// The newest exchange's midpoint (follower host nanoseconds): x = 0.
    let reference: Int128
    /// The offset the bounds are measured from: the best exchange's (nanoseconds).
    let baseOffset: Int128
    /// Exchanges in the window.
    let count: Int
    /// The mean queueing delay per direction (ns) of the exponential with the path's density
    /// of fast crossings, at least `minimumQueueing`.
    let queueing: Double
    /// Every exchange's coordinates (see `coordinates`).
    let points: (x: [Double], upper: [Double], lower: [Double])
    /// Hull vertices of the upper bounds (x, u) and of the lower bounds (x, l).
    private let uppers: [(x: Double, y: Double)]
    private let lowers: [(x: Double, y: Double)]

    init(_ window: SampleWindow) {
        count = window.count
        reference = Int128(window.samples.last?.midpoint.nanoseconds ?? 0)
        // Any exchange's offset keeps the bounds small enough for doubles; the newest's is
        // at hand.
        baseOffset = window.samples.last.map { $0.offsetTimesTwo / 2 } ?? 0
        let roundTrips = window.roundTrips
        // What matters is how often a crossing comes within a given time of the floor: for
        // a one-way density ρ there, a fraction q of round trips exceed the best by less
        // than √(2q)/ρ. That holds for every delay distribution with a floor, where the
        // median's excess would read a uniform jitter's density at half its true value.
        // With fewer exchanges than the quantile needs, a higher rank stands in (at its own
        // fraction): the second best alone may sit by chance next to the best and claim a
        // path far quieter than it is. The best itself lies above the floor (it is the
        // first of n order statistics), so the rank's excess over it is set against the
        // difference of both ranks' expected places, (k + 1) / (n + 1) for rank k from 0.
        // Read as if the best lay on the floor, a uniform jitter's density came out 1.6
        // times too high at 30 exchanges (1.1 times at 1000), and a jittery path's first
        // estimates claimed about half the deviation they had. A single exchange says only
        // that neither crossing took longer than its round trip.
        let excess: Double
        if roundTrips.count >= 2 {
            let quantileRank = Int((ClockEstimator.queueingQuantile * Double(roundTrips.count)).rounded(.down))
            let rank = max(quantileRank, min(roundTrips.count - 1, ClockEstimator.minimumQueueingRank))
            let places = Double(roundTrips.count + 1)
            let span = (2 * Double(rank + 1) / places).squareRoot() - (2 / places).squareRoot()
            excess = Double((roundTrips[rank] - roundTrips[0]).clampedToInt64) / span
        } else {
            excess = Double((roundTrips.first ?? 0).clampedToInt64) / 2
        }
        queueing = max(Double(ClockEstimator.minimumQueueing.nanosecondCount.clampedToInt64), excess)
        points = Self.coordinates(window, reference: reference, baseOffset: baseOffset)
        var upperHull = Hull(lower: true), lowerHull = Hull(lower: false)
        for index in points.x.indices {
            upperHull.add(x: points.x[index], y: points.upper[index])
            lowerHull.add(x: points.x[index], y: points.lower[index])
        }
        uppers = upperHull.points
        lowers = lowerHull.points
    }

    /// The lower (or upper) convex hull of points added in order of x, by Andrew's
    /// monotone chain: the only points that minimize `y − r·x` (or maximize it) for some r.
    private struct Hull {
        let lower: Bool
        var points: [(x: Double, y: Double)] = []

        init(lower: Bool) {
            self.lower = lower
            points.reserveCapacity(64)
        }

        mutating func add(x: Double, y: Double) {
            // Of points at the same x only the tightest can matter.
            if let last = points.last, last.x == x {
                guard lower ? y < last.y : y > last.y else { return }
                points.removeLast()
            }
            while points.count >= 2 {
                let a = points[points.count - 2], b = points[points.count - 1]
                let cross = (b.x - a.x) * (y - a.y) - (b.y - a.y) * (x - a.x)
                // Lower hull: keep only left turns; upper hull: only right turns.
                if lower ? cross <= 0 : cross >= 0 { points.removeLast() } else { break }
            }
            points.append((x, y))
        }
    }

    /// The tightest bounds along `slope`: `L(r)` and `U(r)`.
    func interval(_ slope: Double) -> (lower: Double, upper: Double) {
        var upper = Double.infinity, lower = -Double.infinity
        for point in uppers { upper = min(upper, point.y - slope * point.x) }
        for point in lowers { lower = max(lower, point.y - slope * point.x) }
        return (lower, upper)
    }

    /// The rate (within ±`ClockEstimator.maximumRatePPM`) at which the concave function
    /// `f` peaks, by golden-section search to `ClockEstimator.rateResolution`.
    static func peak(of f: (Double) -> Double) -> Double {
        let limit = Double(ClockEstimator.maximumRatePPM) / 1e6
        var low = -limit, high = limit
        let golden = (5.0.squareRoot() - 1) / 2
        var left = high - golden * (high - low), right = low + golden * (high - low)
        var leftValue = f(left), rightValue = f(right)
        while high - low > ClockEstimator.rateResolution {
            if leftValue < rightValue {
                low = left
                left = right
                leftValue = rightValue
                right = low + golden * (high - low)
                rightValue = f(right)
            } else {
                high = right
                right = left
                rightValue = leftValue
                left = high - golden * (high - low)
                leftValue = f(left)
            }
        }
        return (low + high) / 2
    }

    /// The posterior mean rate and offset at x = 0, their standard deviations, and how far
    /// the bounds cross at the rate that lets them cross least (ns; 0 when some rate leaves
    /// room for a line).
    func posteriorLine() -> (slope: Double, offset: Double, slopeDeviation: Double, offsetDeviation: Double, crossing: Double) {
        let sharpness = Double(count) / queueing / ClockEstimator.likelihoodTemper
        let prior = RatePrior(spread: ClockEstimator.priorRateSpreadPPM / 1e6)
        func logDensity(_ slope: Double) -> Double {
            let bounds = interval(slope)
            return sharpness * (bounds.upper - bounds.lower) + prior.logDensity(slope)
        }
        // The most probable rate: the log-density is concave (W is a minimum of linear
        // functions of r, the prior concave), so golden-section search finds it.
        let peak = Self.peak(of: logDensity)
        let peakValue = logDensity(peak)
        let peakBounds = interval(peak)
        let peakCrossing = max(0, peakBounds.lower - peakBounds.upper)
        // Whether the window holds two lines is for the exchanges alone to say: where the
        // prior holds the most probable rate back from a clock skewed on purpose (1 % moves
        // the offset 50 µs between two exchanges of a join burst), the bounds cross there,
        // and letting the window go for it would keep it from ever growing enough to
        // outweigh the prior.
        var crossing = 0.0
        if peakCrossing > 0 {
            let widest = interval(Self.peak { slope in let bounds = interval(slope); return bounds.upper - bounds.lower })
            crossing = max(0, widest.lower - widest.upper)
        }
        // The ends of the rates with non-negligible density, by bisection on each side.
        let floor = peakValue - ClockEstimator.negligibleLogDensity
        func edge(toward outside: Double) -> Double {
            guard logDensity(outside) < floor else { return outside }
            var inner = peak, outer = outside
            while abs(outer - inner) > ClockEstimator.rateResolution {
                let middle = (inner + outer) / 2
                if logDensity(middle) >= floor { inner = middle } else { outer = middle }
            }
            return outer
        }
        let limit = Double(ClockEstimator.maximumRatePPM) / 1e6
        let from = edge(toward: -limit), to = edge(toward: limit)
        var total = 0.0, sumSlope = 0.0, sumSlopeSquares = 0.0, sumOffset = 0.0, sumOffsetSquares = 0.0
        let steps = ClockEstimator.rateSteps
        for step in 0...steps {
            let slope = from + (to - from) * Double(step) / Double(steps)
            let bounds = interval(slope)
            let weight = exp(sharpness * (bounds.upper - bounds.lower) + prior.logDensity(slope) - peakValue)
            let middle = (bounds.upper + bounds.lower) / 2
            total += weight
            sumSlope += weight * slope
            sumSlopeSquares += weight * slope * slope
            sumOffset += weight * middle
            sumOffsetSquares += weight * middle * middle
        }
        guard total > 0, total.isFinite else {
            return (peak, (peakBounds.upper + peakBounds.lower) / 2, .infinity, .infinity, crossing)
        }
        let slope = sumSlope / total
        let offset = sumOffset / total
        let slopeVariance = max(0, sumSlopeSquares / total - slope * slope)
        // Across rates, plus the Laplace spread (scale m / 2n) about each rate's midpoint,
        // plus half of any crossing: bounds that contradict each other say the offset is
        // uncertain by at least that much whatever their number.
        let scale = queueing / (2 * Double(count))
        let offsetVariance = max(0, sumOffsetSquares / total - offset * offset) + 2 * scale * scale + (peakCrossing / 2) * (peakCrossing / 2)
        return (slope, offset, slopeVariance.squareRoot(), offsetVariance.squareRoot(), crossing)
    }
}

extension SoftFloorFit {
    /// The window's exchanges in the sharp model's coordinates and with its queueing.
    init(_ bounds: ExchangeBounds) {
        self.init(x: bounds.points.x, upper: bounds.points.upper, lower: bounds.points.lower, queueing: bounds.queueing)
    }
}

extension Duration {
    /// The absolute value of the interval.
    var magnitude: Duration { self < .zero ? .zero - self : self }
}
