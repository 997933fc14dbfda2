import MediaClock

/// Estimates the leader's clock from two-way exchanges: a pure value type with no I/O.
///
/// Like GStreamer's network client clock it keeps a window of recent samples, keeps only
/// those whose round trip is near the window's best (a long round trip means queueing,
/// which is rarely symmetric), and fits offset and rate together over what remains by
/// weighted least squares; until that rate is certain it is shrunk toward 0 by a prior on
/// crystals' spread. Then the bounds each exchange puts on the offset take over, which on a
/// jittery path are far tighter than any average: the rate that fits them best
/// (`boundedRate`), and the offset midway between the tightest of them (`envelopeOffset`).
/// Published estimates are clamped: a converged estimate slews by at most `slewLimit` per
/// update, and jumps only when the evidence says the leader's clock really moved by more
/// than `stepThreshold`.
public struct ClockEstimator: Sendable {
    // MARK: Tuning constants

    /// Samples kept: at the steady 100 ms poll, 51 s of history, long enough to see a 1 ppm
    /// rate as 51 µs of drift, short enough to follow thermal drift of the crystals; and
    /// enough samples that on a jittery path the fastest crossings each way come close to
    /// the path's floor.
    public static let windowSize = 512
    /// Samples whose round trip exceeds both the window's median and the best times this
    /// factor (plus the margin below) are not fitted: their queueing delay, and so their
    /// possible asymmetry, is large. (GStreamer drops samples far above the median; the
    /// best-based bound keeps more of a quiet LAN's samples.)
    public static let roundTripFilterFactor = 1.5
    /// Added to the filter threshold so that on a quiet LAN (round trips of tens of µs)
    /// scheduling noise does not reject nearly every sample.
    public static let roundTripFilterMargin: Duration = .microseconds(100)
    /// Least floor of the round-trip excess in the fit weights `1 / (excess² + floor²)`:
    /// about the timestamping noise of a loaded host. The floor used is the larger of this
    /// and the excess of the `minimumSamplesForFit`-th best sample, so that on a jittery
    /// path the single best sample cannot dominate.
    public static let weightFloor: Duration = .microseconds(30)
    /// Fewest filtered samples fitted; until the window holds this many the best single
    /// sample is used with rate 0. Four leave two degrees of freedom beyond offset and rate.
    public static let minimumSamplesForFit = 4
    /// A rate is taken as determined once its uncertainty is below this (ppm): the standard
    /// error of the fit, or the half-width of the rates the exchanges' bounds allow. 20 ppm
    /// costs 2 µs over a 100 ms poll, while holding a rate of 0 against a 200 ppm crystal
    /// would cost 50 µs. Until then the fitted rate is shrunk toward 0
    /// (`priorRateSpreadPPM`).
    public static let maximumRateStandardErrorPPM = 20.0
    /// The spread of rates (ppm, one standard deviation) expected between two nodes' clocks
    /// before any evidence: crystals are specified to ±100 ppm each. Until the rate is
    /// determined, the fitted slope is shrunk toward 0 by this prior (ridge regression):
    /// a clean path's join burst already pins the rate within a few ppm and is barely
    /// shrunk, while a jittery path's burst says almost nothing and is held near 0. Holding
    /// exactly 0 instead would leave the offset, a mean over the burst, lagging a 200 ppm
    /// skew by 50 µs within half a second.
    public static let priorRateSpreadPPM = 200.0
    /// Pseudo-residuals pooled into the fit's noise estimate (`varianceScale`), each the
    /// size the spread of round trips suggests: with the four to eight samples of a join on
    /// a jittery path, two residuals that happen to be tiny would otherwise make a noisy
    /// slope look exact, while on a path whose round trips do not vary the exchanges agree
    /// and the prior adds nothing.
    public static let priorNoiseDegreesOfFreedom = 2.0
    /// How finely the bounded rate is searched for (a fraction): 0.01 ppm, half a µs over
    /// the window's 51 s.
    static let boundedRateResolution = 1e-8
    /// Largest rate accepted, in ppm: crystals are specified to ±100 ppm and real ones stay
    /// well inside; a fit beyond ±500 ppm is noise and would extrapolate badly.
    public static let maximumRatePPM: Int64 = 500
    /// Samples needed before the estimate can count as converged: the join burst.
    public static let convergenceSamples = 8
    /// Residual RMS below which the fit is trusted (converged): 1 ms, far below audible
    /// echo between rooms, above the residual of a busy Wi-Fi link.
    public static let convergedResidualLimit: Duration = .milliseconds(1)
    /// Largest change a converged estimate may make to the predicted leader time at the
    /// moment of an update: 200 µs per update (per second in steady state) is 200 ppm of
    /// soft correction, inside what fractional resampling can follow without a click.
    public static let slewLimit: Duration = .microseconds(200)
    /// A change beyond this is a real clock jump (leader restart, stepped clock) and is
    /// applied at once: 5 ms is beyond any filtered sample's asymmetry error.
    public static let stepThreshold: Duration = .milliseconds(5)
    /// How far back the offset bounds are taken from (see `envelopeOffset`): twenty
    /// seconds hold two hundred exchanges at the steady poll, enough that on a jittery path some
    /// crossed quickly each way, and a 1 ppm error in the fitted rate tilts them by only
    /// ±10 µs.
    public static let envelopeSpan: Duration = .seconds(20)
    /// The bounds may cross by this much (timestamping noise, a fitted rate slightly off)
    /// and still be used; crossing by more means they describe no single line, and the
    /// least-squares fit is used instead. Also the least slack within which a rate counts
    /// as fitting the bounds about as well as the best (`boundedRate`).
    public static let envelopeCrossingTolerance: Duration = .microseconds(50)
    /// Samples with a round trip above this are discarded outright: no LAN or Wi-Fi path
    /// takes a second, so the reply is stale or forged.
    public static let maximumRoundTrip: Duration = .seconds(1)

    /// Requests sent back to back at join, so that a first estimate exists within 200 ms.
    public static let burstCount = 8
    /// Spacing of the join burst: wide enough not to queue behind each other.
    public static let burstInterval: Duration = .milliseconds(25)
    /// Poll interval after the burst until converged with a determined rate (also retries
    /// lost burst requests): twenty a second (about 3 kB/s, for seconds) gather the fast
    /// crossings a jittery path needs twice as soon as ten would; a quiet path determines
    /// its rate within half a second and slows down at once.
    public static let convergingInterval: Duration = .milliseconds(50)
    /// Steady poll interval once converged with a determined rate: ten exchanges a second
    /// (about 1.5 kB/s). The offset comes from the bounds of the fastest crossings each way,
    /// and ten a second find them two and a half times as often as four: on a quiet LAN the
    /// early steps of a few tens of µs, as faster crossings turn up, settle in seconds; on
    /// a jittery path the bounds close that much tighter.
    public static let steadyInterval: Duration = .milliseconds(100)

    // MARK: State

    private var window: [ClockSample] = []
    private var heldRatePPT: Int64 = 0
    /// Whether a fitted rate has been used since the last reset.
    private var rateKnown = false
    /// Whether the exchanges' bounds have given the rate (`boundedRate`) since the last reset.
    private var ratePinnedByBounds = false
    /// Set at the first converged estimate since the last reset: from then on changes
    /// are clamped, even while a disturbed window is temporarily not converged.
    private var hasConverged = false
    /// The latest published estimate, or `nil` before the first sample.
    public private(set) var estimate: ClockEstimate?
    /// Times the published estimate jumped (change beyond `stepThreshold`).
    public private(set) var stepCount = 0
    /// Updates whose change was limited to `slewLimit`.
    public private(set) var slewLimitedCount = 0
    /// Samples discarded as impossible (time going backwards, round trip over a second).
    public private(set) var rejectedSampleCount = 0

    /// An estimator with no samples.
    public init() {}

    /// Samples in the window.
    public var sampleCount: Int { window.count }

    /// Whether the latest estimate is converged.
    public var isConverged: Bool { estimate?.converged ?? false }

    /// Forgets every sample and estimate (a new leader).
    public mutating func reset() {
        self = ClockEstimator()
    }

    /// How long to wait before the next clock request, given how many were sent since
    /// joining: burst, then `convergingInterval` until converged with a determined rate,
    /// then `steadyInterval`.
    public func nextPollInterval(requestsSent: Int) -> Duration {
        if requestsSent < Self.burstCount { return Self.burstInterval }
        return isConverged && rateKnown ? Self.steadyInterval : Self.convergingInterval
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
            heldRatePPT = 0
            rateKnown = false
            ratePinnedByBounds = false
        }
        window.append(sample)
        if window.count > Self.windowSize { window.removeFirst(window.count - Self.windowSize) }

        let raw = fit()
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
        return adjusted
    }

    /// Weighted least squares of offset against host time over the filtered window.
    private mutating func fit() -> ClockEstimate {
        let roundTrips = window.map(\.roundTripNanoseconds).sorted()
        let best = roundTrips.first ?? 0
        let median = roundTrips.isEmpty ? 0 : roundTrips[roundTrips.count / 2]
        let bestSample = window.min { $0.roundTripNanoseconds < $1.roundTripNanoseconds }
        guard window.count >= Self.minimumSamplesForFit, let bestSample else {
            let only = bestSample ?? window[window.count - 1]
            return ClockEstimate(
                referenceHostTime: only.midpoint, offset: only.offset, ratePPT: 0,
                bestRoundTrip: .nanoseconds(best.clampedToInt64), medianRoundTrip: .nanoseconds(median.clampedToInt64),
                residualRMS: .zero, sampleCount: window.count, usedSampleCount: 1, converged: false
            )
        }

        // Near the best round trip, or in the best quarter: on a path whose jitter is wide
        // compared with its floor, the best few samples alone are too few to average, while
        // the rest carry queueing whose asymmetry would bias the fit.
        let nearBest = Int128((Double(best) * Self.roundTripFilterFactor).rounded()) + Self.roundTripFilterMargin.nanosecondCount
        let quartile = roundTrips.isEmpty ? 0 : roundTrips[roundTrips.count / 4]
        let threshold = max(nearBest, quartile)
        var used = window.filter { $0.roundTripNanoseconds <= threshold }
        if used.count < Self.minimumSamplesForFit {
            used = Array(window.sorted { $0.roundTripNanoseconds < $1.roundTripNanoseconds }.prefix(Self.minimumSamplesForFit))
        }

        // Relative coordinates keep the doubles small: nanoseconds from the newest sample
        // and from the best sample's offset.
        let reference = used.map(\.midpoint).max() ?? bestSample.midpoint
        let baseOffset = bestSample.offsetTimesTwo / 2
        // The best sample's own queueing is unknown; the excess of the few next best says
        // how large it plausibly is, so no single sample dominates the fit.
        let rankedExcess = roundTrips.prefix(Self.minimumSamplesForFit).last.map { Double($0 - best) } ?? 0
        let floor = max(Double(Self.weightFloor.nanosecondCount), rankedExcess)
        var points: [(x: Double, y: Double, weight: Double)] = []
        points.reserveCapacity(used.count)
        for sample in used {
            let x = Double(Int128(sample.midpoint.nanoseconds) - Int128(reference.nanoseconds))
            let y = Double(sample.offsetTimesTwo / 2 - baseOffset)
            let excess = Double(sample.roundTripNanoseconds - best)
            points.append((x, y, 1 / (excess * excess + floor * floor)))
        }
        var sumW = 0.0, sumX = 0.0, sumY = 0.0
        for point in points {
            sumW += point.weight
            sumX += point.weight * point.x
            sumY += point.weight * point.y
        }
        let meanX = sumX / sumW
        let meanY = sumY / sumW
        var sxx = 0.0, sxy = 0.0
        for point in points {
            sxx += point.weight * (point.x - meanX) * (point.x - meanX)
            sxy += point.weight * (point.x - meanX) * (point.y - meanY)
        }
        let limit = Double(Self.maximumRatePPM * 1_000_000)
        func hold(_ slope: Double) {
            let ppt = slope * 1e12
            heldRatePPT = ppt.isFinite ? Int64(max(-limit, min(limit, ppt.rounded()))) : 0
        }
        let bounded = boundedRate(baseOffset: baseOffset, queueing: Double(median - best))
        if let bounded, ratePinnedByBounds || bounded.halfWidth * 1e6 < Self.maximumRateStandardErrorPPM {
            // Once the bounds have pinned the rate down they keep it: their uncertainty
            // swings as fast crossings enter and leave the window, while a fit of whole
            // exchanges is tilted by their asymmetry on a jittery path.
            hold(bounded.slope)
            rateKnown = true
            ratePinnedByBounds = true
        } else if sxx > 0, points.count > 2 {
            let fittedSlope = sxy / sxx
            // Half the median round trip's queueing, relative to the weights' floor.
            let spread = Double(median - best) / 2 / floor
            let noise = varianceScale(points, slope: fittedSlope, meanX: meanX, meanY: meanY, priorNoise: spread * spread)
            let fitError = (noise / sxx).squareRoot()
            if fitError * 1e6 < Self.maximumRateStandardErrorPPM {
                hold(fittedSlope)
                rateKnown = true
            } else if !rateKnown {
                // Not yet certain: the three things known about the rate, each weighed by
                // its certainty. The prior spread of crystals (centred on 0), the fit (for
                // the prior alone with it, this is the fit shrunk toward 0), and the rate
                // the bounds fit best, within their half width.
                let prior = Self.priorRateSpreadPPM / 1e6
                var precision = 1 / (prior * prior) + 1 / (fitError * fitError)
                var sum = fittedSlope / (fitError * fitError)
                if let bounded, bounded.halfWidth > 0 {
                    precision += 1 / (bounded.halfWidth * bounded.halfWidth)
                    sum += bounded.slope / (bounded.halfWidth * bounded.halfWidth)
                }
                hold(sum / precision)
            }
        }
        let slope = Double(heldRatePPT) / 1e12
        var intercept = meanY - slope * meanX
        // Until the rate is known, bounds from exchanges a second apart are tilted by the
        // whole skew between the clocks: the fit of the nearly symmetric few is better.
        if rateKnown, let bounded = envelopeOffset(slope: slope, reference: reference, baseOffset: baseOffset) {
            intercept = bounded
        }
        var squares = 0.0
        for point in points {
            let residual = point.y - intercept - slope * point.x
            squares += residual * residual
        }
        let rms = (squares / Double(points.count)).squareRoot()
        let offset = baseOffset + (intercept.isFinite && abs(intercept) < 1e30 ? Int128(intercept.rounded()) : 0)
        let residualRMS = Duration.nanoseconds(rms.isFinite ? Int64(min(rms, 1e18).rounded()) : Int64.max)
        return ClockEstimate(
            referenceHostTime: reference,
            offset: .nanoseconds(offset.clampedToInt64),
            ratePPT: heldRatePPT,
            bestRoundTrip: .nanoseconds(best.clampedToInt64),
            medianRoundTrip: .nanoseconds(median.clampedToInt64),
            residualRMS: residualRMS,
            sampleCount: window.count,
            usedSampleCount: used.count,
            converged: window.count >= Self.convergenceSamples && residualRMS <= Self.convergedResidualLimit
        )
    }
}

extension ClockEstimator {
    /// The offset at `reference` (nanoseconds from `baseOffset`) as the middle of the bounds
    /// every exchange puts on it, or nil when the bounds cross.
    ///
    /// No one-way delay is negative, so each exchange bounds the offset θ (leader minus
    /// follower) from both sides: `t3 - t4 ≤ θ ≤ t2 - t1`. Along the fitted rate, the
    /// tightest upper bound comes from the request that crossed fastest and the tightest
    /// lower bound from the reply that crossed fastest, which need not be the same exchange:
    /// on a path with independent jitter each way, a few dozen exchanges pin θ down to tens
    /// of microseconds where averaging whole exchanges leaves their asymmetry, hundreds.
    /// Every timestamping error (a send stamped before the packet left) only loosens a
    /// bound, so a late or duplicated packet cannot pull the estimate.
    fileprivate func envelopeOffset(slope: Double, reference: HostTime, baseOffset: Int128) -> Double? {
        let at = Int128(reference.nanoseconds)
        return boundedOffset(from: at - Self.envelopeSpan.nanosecondCount, to: .max, at: at,
                             slope: slope, baseOffset: baseOffset)
    }

    /// The middle of the tightest bounds that the samples with midpoints in `start..<end`
    /// put on the offset at host time `center` (nanoseconds from `baseOffset`), carried
    /// there along `slope`; nil with too few samples or bounds that cross.
    fileprivate func boundedOffset(from start: Int128, to end: Int128, at center: Int128,
                                   slope: Double, baseOffset: Int128) -> Double? {
        var lower = -Double.infinity
        var upper = Double.infinity
        var count = 0
        for sample in window {
            let mid = Int128(sample.midpoint.nanoseconds)
            guard mid >= start && mid < end else { continue }
            let x = Double(mid - center)
            let forward = Double((Int128(sample.t2.nanoseconds) - Int128(sample.t1.nanoseconds)) - baseOffset)
            let backward = Double((Int128(sample.t3.nanoseconds) - Int128(sample.t4.nanoseconds)) - baseOffset)
            upper = min(upper, forward - slope * x)
            lower = max(lower, backward - slope * x)
            count += 1
        }
        guard count >= Self.minimumSamplesForFit, upper.isFinite, lower.isFinite,
              lower - upper <= Double(Self.envelopeCrossingTolerance.nanosecondCount) else { return nil }
        return (lower + upper) / 2
    }

    /// The rate that the exchanges' bounds fit best, and how far from it they still fit.
    ///
    /// Each exchange bounds the offset θ from above (`t2 − t1`: θ plus the request's delay)
    /// and from below (`t3 − t4`: θ minus the reply's). Along a trial rate r the tightest
    /// bounds leave an interval of width `W(r) = min(upper − r·x) − max(lower − r·x)`: the
    /// fastest request's delay plus the fastest reply's, as seen along r. Along a wrong rate
    /// the bounds from the two ends of the window tilt into each other and W shrinks, so the
    /// rate is the one that maximizes W (a linear program in one variable: W is concave,
    /// found by golden-section search). The rates whose W is within a tolerance of the best
    /// fit the bounds about as well: half their range is the rate's uncertainty, which
    /// narrows as the window lengthens and fast crossings turn up at both ends. The
    /// tolerance is how far the fastest crossings each way may still be from the path's
    /// floor: with n exchanges whose round trips spread over `queueing` (the median's
    /// excess over the best), about `2·queueing/n`, and at least
    /// `envelopeCrossingTolerance` for timestamping noise. Nil with too few samples, or
    /// when the best fit is at the end of the accepted rates.
    fileprivate func boundedRate(baseOffset: Int128, queueing: Double) -> (slope: Double, halfWidth: Double)? {
        guard window.count >= Self.minimumSamplesForFit,
              let reference = window.map({ Int128($0.midpoint.nanoseconds) }).max() else { return nil }
        var xs: [Double] = [], uppers: [Double] = [], lowers: [Double] = []
        xs.reserveCapacity(window.count)
        uppers.reserveCapacity(window.count)
        lowers.reserveCapacity(window.count)
        for sample in window {
            xs.append(Double(Int128(sample.midpoint.nanoseconds) - reference))
            uppers.append(Double((Int128(sample.t2.nanoseconds) - Int128(sample.t1.nanoseconds)) - baseOffset))
            lowers.append(Double((Int128(sample.t3.nanoseconds) - Int128(sample.t4.nanoseconds)) - baseOffset))
        }
        func width(_ slope: Double) -> Double {
            var upper = Double.infinity, lower = -Double.infinity
            for index in xs.indices {
                upper = min(upper, uppers[index] - slope * xs[index])
                lower = max(lower, lowers[index] - slope * xs[index])
            }
            return upper - lower
        }
        let limit = Double(Self.maximumRatePPM) / 1e6
        var low = -limit, high = limit
        let golden = (5.0.squareRoot() - 1) / 2
        var left = high - golden * (high - low), right = low + golden * (high - low)
        var leftWidth = width(left), rightWidth = width(right)
        while high - low > Self.boundedRateResolution {
            if leftWidth < rightWidth {
                low = left
                left = right
                leftWidth = rightWidth
                right = low + golden * (high - low)
                rightWidth = width(right)
            } else {
                high = right
                right = left
                rightWidth = leftWidth
                left = high - golden * (high - low)
                leftWidth = width(left)
            }
        }
        let best = (low + high) / 2
        // A best fit at the end of the accepted rates only says the bounds lean that way:
        // they fit rates beyond it no worse, so they fix nothing yet.
        guard abs(best) < limit - Self.boundedRateResolution * 10 else { return nil }
        let tolerance = max(Double(Self.envelopeCrossingTolerance.nanosecondCount), 2 * queueing / Double(window.count))
        let floor = width(best) - tolerance
        // The ends of the rates that fit within the tolerance, by bisection on each side.
        func edge(toward outside: Double) -> Double {
            guard width(outside) < floor else { return outside }
            var inner = best, outer = outside
            while abs(outer - inner) > Self.boundedRateResolution {
                let middle = (inner + outer) / 2
                if width(middle) >= floor { inner = middle } else { outer = middle }
            }
            return inner
        }
        return (best, (edge(toward: limit) - edge(toward: -limit)) / 2)
    }

    /// The slope's noise: the weighted residual variance of the fit, in units of the
    /// weights' own variance, pooled with `priorNoiseDegreesOfFreedom` pseudo-residuals of
    /// `priorNoise` (the round trips' median excess over the best, in the same units), so
    /// that a few samples that happen to lie on a line cannot claim a rate to a fraction of
    /// a ppm when the round trips say the path is noisy.
    fileprivate func varianceScale(_ points: [(x: Double, y: Double, weight: Double)],
                                   slope: Double, meanX: Double, meanY: Double, priorNoise: Double) -> Double {
        var weightedSquares = 0.0
        for point in points {
            let residual = point.y - meanY - slope * (point.x - meanX)
            weightedSquares += point.weight * residual * residual
        }
        let degrees = Double(points.count - 2)
        return (Self.priorNoiseDegreesOfFreedom * priorNoise + weightedSquares) / (Self.priorNoiseDegreesOfFreedom + degrees)
    }
}

extension Duration {
    /// The absolute value of the interval.
    var magnitude: Duration { self < .zero ? .zero - self : self }
}
