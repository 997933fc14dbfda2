import Foundation

/// The line through the exchanges' own offsets, fitted over a long memory: a pure value type.
///
/// Each exchange's own offset, `((t2 − t1) + (t3 − t4)) / 2`, lies off the true line by
/// half the difference of its two one-way delays. Where both directions' delays have the
/// same mean (a base plus jitter each way, released on a timer's ticks), the offsets
/// balance about the true line whatever the floors do, so a least-squares line through
/// them is unbiased: the line the estimator publishes when the floors' line is shown to be
/// off (`DelayBalance`). It is noisy, each exchange off by up to half the path's jitter,
/// so it keeps far more than the window: every exchange since the last reset, weighted
/// down with age (`memory`), with its sums kept about their running means so that hours
/// of history lose no precision. Residuals are not clipped: the paths it serves have
/// light tails (their delays are bounded), and a clip scaled by the fit's own residuals,
/// tried in simulation, narrowed onto whatever line it held and ran away with the rate.
struct CentreLine {
    /// How fast old exchanges are forgotten (an exponential time constant): a minute, as
    /// the window's span (`ClockEstimator.windowSpan`). A clock's rate wanders by a
    /// fraction of a ppm per minute as its crystal warms, and a straight line fitted over
    /// a memory of τ lags a steadily bending one by about the bend's rate times τ²: a tenth
    /// of a ppm per minute leaves 6 µs at a minute, 150 µs at five.
    static let memory: Duration = .seconds(60)
    /// Exchanges needed before the line is reported: fewer say little about a rate, and
    /// match `DelayBalance.minimumExchanges`, which judges whether it is wanted.
    static let minimumExchanges = 64

    /// The follower host time (ns) that x counts from: the first exchange's midpoint.
    private var originHost: Int128?
    /// The offset (ns) that y counts from: the first exchange's.
    private var originOffset: Int128 = 0
    /// Exchanges counted since the last reset.
    private(set) var count = 0
    /// The newest exchange's midpoint (follower host ns), for the forgetting step.
    private var newestHost: Int128 = 0
    /// Sum of weights, and of squared weights (the effective count is W² / W2).
    private var weight = 0.0, squaredWeight = 0.0
    /// Weighted means of x (s from `originHost`) and y (ns from `originOffset`).
    private var meanX = 0.0, meanY = 0.0
    /// Weighted sums of squared and cross deviations about the means.
    private var sxx = 0.0, sxy = 0.0, syy = 0.0

    /// Forgets everything (a new leader, a clock that jumped).
    mutating func reset() { self = CentreLine() }

    /// Counts one exchange.
    mutating func add(_ sample: ClockSample) {
        let host = Int128(sample.midpoint.nanoseconds)
        let offset = sample.offsetTimesTwo / 2
        if originHost == nil {
            originHost = host
            originOffset = offset
            newestHost = host
        }
        let x = Double(host - (originHost ?? host)) / 1e9
        let y = Double(offset - originOffset)
        // Forget by the time since the newest exchange (none for one that arrives out of
        // order: it is simply counted at full weight).
        let age = max(0, Double(host - newestHost) / 1e9)
        newestHost = max(newestHost, host)
        let keep = exp(-age / Self.memory.seconds)
        weight = keep * weight + 1
        squaredWeight = keep * keep * squaredWeight + 1
        let dx = x - meanX, dy = y - meanY
        meanX += dx / weight
        meanY += dy / weight
        sxx = keep * sxx + dx * (x - meanX)
        sxy = keep * sxy + dx * (y - meanY)
        syy = keep * syy + dy * (y - meanY)
        count += 1
    }

    /// The fitted line in the centre's own coordinates, or `nil` before
    /// `minimumExchanges` or while the exchanges span no time.
    private var fitted: (meanX: Double, meanY: Double, slope: Double, residualDeviation: Double)? {
        guard count >= Self.minimumExchanges, sxx > 0, weight > 0 else { return nil }
        let slope = sxy / sxx
        let residual = max(0, syy - slope * sxy) / weight
        return (meanX, meanY, slope / 1e9, residual.squareRoot())
    }

    /// The offset's deviation (ns) at the centroid, where it is known best, or `nil` before
    /// `minimumExchanges`: what the estimator's poll in the centre's mode follows, since it
    /// falls with the exchanges counted and not with the window's span.
    var centroidDeviation: Double? {
        guard let fit = fitted else { return nil }
        return fit.residualDeviation * squaredWeight.squareRoot() / weight
    }

    /// The line through the centroid with a slope known from elsewhere (`slope`, with
    /// deviation `slopeDeviation`; dimensionless), read as `line(reference:base:)`. The
    /// floors' slope, where they trace lines, is known far better than a fit to the
    /// exchanges' scattered offsets can know it, and only the offset needs the centre.
    func line(reference: Int128, base: Int128, slope: Double, slopeDeviation: Double) -> (offset: Double, offsetDeviation: Double)? {
        guard let fit = fitted, let originHost else { return nil }
        let centroid = fit.meanX * 1e9 + Double(originHost - reference)
        let offset = fit.meanY + Double(originOffset - base) - slope * centroid
        // The residuals about this line: its slope in the sums' units (ns per s).
        let perSecond = slope * 1e9
        let residual = max(0, syy - 2 * perSecond * sxy + perSecond * perSecond * sxx) / weight
        let variance = residual * squaredWeight / (weight * weight) + slopeDeviation * slopeDeviation * centroid * centroid
        return (offset, variance.squareRoot())
    }

    /// The line read in a window's coordinates (x: ns from follower host `reference`; y: ns
    /// from offset `base`): its offset at x = 0, its slope, the deviations of both, the
    /// x of its centroid (where its offset is known best) and the offset's deviation there.
    func line(reference: Int128, base: Int128) -> (offset: Double, slope: Double, offsetDeviation: Double, slopeDeviation: Double, centroid: Double, centroidDeviation: Double)? {
        guard let fit = fitted, let originHost else { return nil }
        // The centroid in the window's coordinates, and the line there.
        let centroid = fit.meanX * 1e9 + Double(originHost - reference)
        let shift = Double(originOffset - base)
        let offset = fit.meanY + shift - fit.slope * centroid
        // A weighted mean's variance is σ² · W2 / W²; the slope's, σ² over the weighted
        // spread of x, scaled alike for the weights' unevenness.
        let variance = fit.residualDeviation * fit.residualDeviation
        let unevenness = squaredWeight / weight
        let centroidVariance = variance * squaredWeight / (weight * weight)
        let slopeVariance = variance * unevenness / (sxx * 1e18)
        let offsetVariance = centroidVariance + slopeVariance * centroid * centroid
        return (offset, fit.slope, offsetVariance.squareRoot(), slopeVariance.squareRoot(), centroid, centroidVariance.squareRoot())
    }
}

private extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
