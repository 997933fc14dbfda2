import Foundation

/// The line through a window of exchanges when the path's floor is soft: a pure value type.
///
/// `ExchangeBounds` models each one-way delay as a sharp floor plus queueing, so the
/// fastest request and the fastest reply decide the offset. On a loaded host the fastest
/// crossings are not piled on a floor: each also waits for some thread to wake (a router's,
/// a relay's, the kernel's softirq), and that wait seldom comes near zero. Recorded
/// exchanges through the sync benchmark's relay had, within 100 µs of their fastest, about
/// 60 % of the crossings a sharp floor gives. Resting on the single fastest crossing each
/// way then puts the estimate wherever the luckiest wake-up fell, and its published
/// deviation, read from the sharp model, says it is far better than it is.
///
/// Here the floor has a spread of its own: a one-way delay is a floor D, plus a Gaussian
/// of deviation σ (the floor's spread), plus exponential queueing of mean m. Given a line
/// `a + r·x`, a request's delay over the floor is `u − r·x − (a + D)` and a reply's is
/// `(a − D) − (l − r·x)`, so with `P = a + D` and `Q = a − D` the log-likelihood is
///
///     Σ log Φ((u − r·x − P)/σ − σ/m) + Σ log Φ((Q − l + r·x)/σ − σ/m) + n·(P − Q)/m
///
/// (the crossings' total delay is fixed by the timestamps, which leaves `2n·D/m`). Each
/// term is the log of a normal CDF of an affine function, so the whole is concave in
/// (r, P, Q) and Newton's method finds its peak; as σ → 0 it becomes the sharp model.
/// Every crossing within a few σ of the floor now counts, and the offset's error falls as
/// σ over the root of their number. The spread itself is learned from the window, by the
/// likelihood of each candidate σ at the current rate (`learnSpread`).
struct SoftFloorFit {
    /// Exchanges' x: seconds from the newest midpoint.
    private let x: [Double]
    /// Upper bounds `u = t2 − t1` and lower bounds `l = t3 − t4` (ns from the base offset).
    private let upper: [Double]
    private let lower: [Double]
    /// The queueing's mean per direction (ns): the same figure the sharp model reads.
    let queueing: Double

    /// Crossings further above the floor than this many spreads are left out of a sum:
    /// log Φ(10) differs from zero by 10⁻²³.
    static let negligibleSpreads = 10.0
    /// Candidate spreads are tried from this (ns) ...
    static let smallestSpread = 250.0
    /// ... doubling up to this (ns): a quarter of a µs is below any host's timestamping
    /// noise, and a floor blurred by more than a quarter of a millisecond is no floor: the
    /// queueing's spread says as much.
    static let largestSpread = 256_000.0
    /// How far (natural log units) below the likeliest spread's score a wider one may
    /// score and still be taken: e⁴ ≈ 55 to one, short of strong evidence against it (at
    /// 2, e² ≈ 7.4 to one, the impaired path's estimates went overconfident: 2.3 % of probes
    /// beyond three deviations against none, `chorus-bench clock`).
    static let spreadLikelihoodMargin = 4.0
    /// The margin while the window is young (fewer than `joiningWindowExchanges`): e² ≈ 7.4
    /// to one. With only a join's few dozen crossings near the floor, the widest spread
    /// within e⁴ is wide indeed: 60 to 140 µs on the sync benchmark's relay, whose floor is
    /// blurred by about 20 µs. A floor that soft says little about the rate, which the prior
    /// then holds near 0, and between the rare fast crossings the line drifted up to 117 µs
    /// from the truth for a follower 230 ppm off its leader; its join passed a second. On
    /// the exchanges of fourteen recorded impaired runs (`chorus-bench clock-replay`, 42
    /// followers) the narrower margin while joining put none past 100 µs in the second
    /// second after a start (two before), and all but one within 100 µs to stay half a
    /// second after it (all but three before).
    static let joiningSpreadLikelihoodMargin = 2.0
    /// Exchanges in the window below which the joining margin applies: the first seconds
    /// of a jittery path's join (polled every 1 to 2 ms, then 20). Later the steady margin
    /// keeps the long-run deviation honest: e² throughout put 2.6 % of a simulated blurred
    /// floor's estimates beyond three deviations (`chorus-bench clock`), where e² for the
    /// young window alone puts 0.1 %.
    static let joiningWindowExchanges = 1024
    /// Newton steps before the fit gives up (it then keeps the sharp model's line): a
    /// concave peak from the sharp model's line is met in a handful.
    static let maximumSteps = 40
    /// The fit has converged when a Newton step would raise the log-posterior by less than
    /// this: a thousandth of a unit moves the line by a small fraction of its deviation.
    static let convergedDecrement = 1e-3

    /// The window's exchanges in the sharp model's coordinates: x (ns from the newest
    /// midpoint) and the upper and lower bounds (ns from the base offset).
    init(x: [Double], upper: [Double], lower: [Double], queueing: Double) {
        self.x = x.map { $0 / 1e9 }
        self.upper = upper
        self.lower = lower
        self.queueing = queueing
    }

    /// The number of exchanges.
    var count: Int { x.count }

    /// log Φ(z) and the inverse Mills ratio φ(z)/Φ(z), accurate far into the lower tail.
    static func logCDF(_ z: Double) -> (log: Double, mills: Double) {
        if z > -30 {
            let cdf = 0.5 * erfc(-z / 2.0.squareRoot())
            let density = exp(-0.5 * z * z) / (2 * Double.pi).squareRoot()
            return (log(cdf), density / cdf)
        }
        // Φ(z) = φ(z)/t · (1 − 1/t² + 3/t⁴ − 15/t⁶ + …) for t = −z: below −30 its first terms
        // are exact to double precision, where the direct quotient would underflow.
        let t = -z, t2 = t * t
        let series = 1 - 1 / t2 + 3 / (t2 * t2) - 15 / (t2 * t2 * t2)
        return (-0.5 * t2 - log(t) - 0.5 * log(2 * Double.pi) + log(series), t / series)
    }

    /// The floor line of one direction along `slope` (ns per s) for spread `spread` (ns):
    /// the P (for requests) or Q (for replies) of greatest likelihood, and that likelihood
    /// (with the spread's own term `n·σ²/2m²`). Requests sit above their floor line, replies
    /// below theirs.
    private func floorLine(requests: Bool, slope: Double, spread: Double) -> (floor: Double, logLikelihood: Double) {
        let values = requests ? upper : lower
        let n = Double(values.count)
        // Residual of crossing i from a floor line F: requests v − F, replies F − w, with
        // v = u − r·x and w = l − r·x.
        var edge = requests ? Double.infinity : -Double.infinity
        for index in values.indices {
            let value = values[index] - slope * x[index]
            edge = requests ? min(edge, value) : max(edge, value)
        }
        let shift = spread / queueing
        let target = n * spread / queueing
        // The derivative in the floor line is (Σ mills − n·σ/m)/σ, up to sign: it rises with
        // the line (requests) and is bracketed between a line far below every crossing and
        // one past the fastest by more than the target in spreads.
        func balance(_ line: Double) -> (excess: Double, derivative: Double, logLikelihood: Double) {
            var mills = 0.0, curvature = 0.0, sum = 0.0
            for index in values.indices {
                let value = values[index] - slope * x[index]
                let residual = requests ? value - line : line - value
                let z = residual / spread - shift
                guard z < Self.negligibleSpreads else { continue }
                let term = Self.logCDF(z)
                sum += term.log
                mills += term.mills
                curvature += term.mills * (z + term.mills)
            }
            let linear = requests ? n * line / queueing : -n * line / queueing
            return (mills - target, curvature, sum + linear + n * spread * spread / (2 * queueing * queueing))
        }
        let sign = requests ? 1.0 : -1.0
        // In "depth" d (how far the line sits into the crossings), excess(d) is increasing.
        var low = -Self.negligibleSpreads * spread, high = (target + Self.negligibleSpreads) * spread
        var depth = 0.0
        var state = balance(edge + sign * depth)
        for _ in 0..<Self.maximumSteps {
            if state.excess > 0 { high = depth } else { low = depth }
            // Newton in depth: d(excess)/d(depth) = curvature / σ.
            var next = state.derivative > 0 ? depth - state.excess * spread / state.derivative : (low + high) / 2
            if !(next > low && next < high) { next = (low + high) / 2 }
            let settled = abs(next - depth) < 1e-3 * spread
            depth = next
            state = balance(edge + sign * depth)
            if settled { break }
        }
        return (edge + sign * depth, state.logLikelihood)
    }

    /// The widest spread (ns) the window does not argue against, along `slope`
    /// (dimensionless): spreads from `smallestSpread` to `largestSpread`, doubling, are
    /// scored by their likelihood, and the widest within `spreadLikelihoodMargin` of the best
    /// (`joiningSpreadLikelihoodMargin` in a young window) is taken, interpolated in log σ
    /// to where the margin is met.
    ///
    /// Why not the likeliest: a floor is seen only through its fastest crossings, a few
    /// dozen in a window on a path with milliseconds of jitter, and the likelihood then
    /// hardly tells a sharp floor from one blurred by tens of µs (a few units either way, in
    /// simulation). Where the evidence is that weak the wider spread is the safer choice: it
    /// averages over every crossing near the floor instead of resting on the luckiest ones,
    /// and says honestly how well that places the line. Where crossings are dense near the
    /// floor (a quiet LAN), a blur the data do not show costs many units and is refused.
    func learnSpread(slope: Double) -> Double {
        let nsPerSecond = slope * 1e9
        var spreads: [Double] = []
        var values: [Double] = []
        var spread = Self.smallestSpread
        while spread <= Self.largestSpread {
            let up = floorLine(requests: true, slope: nsPerSecond, spread: spread)
            let down = floorLine(requests: false, slope: nsPerSecond, spread: spread)
            spreads.append(spread)
            values.append(up.logLikelihood + down.logLikelihood)
            spread *= 2
        }
        guard let peak = values.max(), peak.isFinite else { return Self.smallestSpread }
        let floor = peak - (count < Self.joiningWindowExchanges ? Self.joiningSpreadLikelihoodMargin : Self.spreadLikelihoodMargin)
        guard let widest = values.lastIndex(where: { $0 >= floor }) else { return Self.smallestSpread }
        guard widest < values.count - 1, values[widest + 1].isFinite else { return spreads[widest] }
        // Where the score crosses the margin between this spread and the next, in log₂ σ.
        let above = values[widest] - floor, below = floor - values[widest + 1]
        let fraction = above + below > 0 ? above / (above + below) : 0
        return spreads[widest] * pow(2, fraction)
    }

    /// The peak of the tempered log-posterior for spread `spread` (ns), searched from the
    /// line of slope `slope` (dimensionless): slope, offset at x = 0, their standard
    /// deviations from the curvature there, and the two floor lines (P and Q, ns at x = 0).
    /// `nil` when the peak is not found (the caller keeps the sharp model's line).
    ///
    /// `from`, when given, is the previous peak (its slope, P and Q) moved into this
    /// window's coordinates: a new exchange moves the peak little, and from there it is met
    /// in a step or two.
    func posteriorLine(spread: Double, slope: Double, temper: Double, priorRateSpread: Double,
                       from floors: (slope: Double, upper: Double, lower: Double)? = nil)
        -> (slope: Double, offset: Double, slopeDeviation: Double, offsetDeviation: Double, upperFloor: Double, lowerFloor: Double)? {
        let n = Double(count)
        guard n > 0, spread > 0, queueing > 0 else { return nil }
        let shift = spread / queueing
        let prior = RatePrior(spread: priorRateSpread * 1e9)
        // Parameters: slope (ns per s), P and Q (ns).
        func evaluate(_ p: SIMD3<Double>) -> (value: Double, gradient: SIMD3<Double>, hessian: [Double]) {
            var value = n * (p.y - p.z) / queueing
            var gradient = SIMD3<Double>(0, n / queueing, -n / queueing)
            // Symmetric: rr, rP, rQ, PP, QQ (PQ is zero: no term holds both).
            var rr = 0.0, rP = 0.0, rQ = 0.0, pp = 0.0, qq = 0.0
            for index in x.indices {
                let xi = x[index]
                let zUp = (upper[index] - p.x * xi - p.y) / spread - shift
                if zUp < Self.negligibleSpreads {
                    let term = Self.logCDF(zUp)
                    let second = -term.mills * (zUp + term.mills) / (spread * spread)
                    value += term.log
                    gradient.x -= term.mills * xi / spread
                    gradient.y -= term.mills / spread
                    rr += second * xi * xi
                    rP += second * xi
                    pp += second
                }
                let zDown = (p.z - lower[index] + p.x * xi) / spread - shift
                if zDown < Self.negligibleSpreads {
                    let term = Self.logCDF(zDown)
                    let second = -term.mills * (zDown + term.mills) / (spread * spread)
                    value += term.log
                    gradient.x += term.mills * xi / spread
                    gradient.z += term.mills / spread
                    rr += second * xi * xi
                    rQ += second * xi
                    qq += second
                }
            }
            value = value / temper + prior.logDensity(p.x)
            gradient = gradient / temper
            gradient.x += prior.slope(p.x)
            return (value, gradient, [rr / temper + prior.curvature(p.x), rP / temper, rQ / temper, pp / temper, qq / temper])
        }
        // Start from the previous peak, or on the given line with each floor line at its
        // own peak.
        var point: SIMD3<Double>
        if let floors, floors.slope.isFinite, floors.upper.isFinite, floors.lower.isFinite {
            point = SIMD3(floors.slope * 1e9, floors.upper, floors.lower)
        } else {
            let startSlope = slope * 1e9
            let up = floorLine(requests: true, slope: startSlope, spread: spread)
            let down = floorLine(requests: false, slope: startSlope, spread: spread)
            point = SIMD3(startSlope, up.floor, down.floor)
        }
        var current = evaluate(point)
        var inverse: [Double]?
        for _ in 0..<Self.maximumSteps {
            guard let solved = Self.invertNegated(current.hessian) else { return nil }
            inverse = solved
            // Newton step: −H⁻¹·g, with (−H)⁻¹ = solved.
            let step = Self.multiply(solved, current.gradient)
            let decrement = (step * current.gradient).sum()
            guard decrement.isFinite else { return nil }
            if decrement < Self.convergedDecrement { break }
            // Backtracking: the function is concave, so a short enough step rises.
            var length = 1.0
            var accepted = false
            for _ in 0..<30 {
                let candidate = point + length * step
                let next = evaluate(candidate)
                if next.value >= current.value + 1e-4 * length * decrement {
                    point = candidate
                    current = next
                    accepted = true
                    break
                }
                length /= 2
            }
            guard accepted else { break }
        }
        guard let covariance = Self.invertNegated(current.hessian) ?? inverse else { return nil }
        // Offset a = (P + Q)/2; its variance from P's, Q's and their covariance.
        let offsetVariance = (covariance[3] + covariance[4] + 2 * covariance[5]) / 4
        let result = (slope: point.x / 1e9, offset: (point.y + point.z) / 2,
                      slopeDeviation: max(0, covariance[0]).squareRoot() / 1e9,
                      offsetDeviation: max(0, offsetVariance).squareRoot(), upperFloor: point.y, lowerFloor: point.z)
        guard result.slope.isFinite, result.offset.isFinite, result.slopeDeviation.isFinite, result.offsetDeviation.isFinite,
              result.upperFloor.isFinite, result.lowerFloor.isFinite else { return nil }
        return result
    }

    /// (−H)⁻¹ for the symmetric H given as [rr, rP, rQ, PP, QQ] (PQ zero), returned as
    /// [rr, rP, rQ, PP, QQ, PQ], or `nil` unless −H is positive definite.
    private static func invertNegated(_ h: [Double]) -> [Double]? {
        let a = -h[0], b = -h[1], c = -h[2], d = -h[3], e = -h[4]
        // −H = [[a, b, c], [b, d, 0], [c, 0, e]].
        let determinant = a * d * e - b * b * e - c * c * d
        // Positive definite: every leading principal minor positive.
        guard a > 0, a * d - b * b > 0, determinant > 0, determinant.isFinite else { return nil }
        return [d * e / determinant, -b * e / determinant, -c * d / determinant,
                (a * e - c * c) / determinant, (a * d - b * b) / determinant, b * c / determinant]
    }

    /// The symmetric matrix [rr, rP, rQ, PP, QQ, PQ] times a vector.
    private static func multiply(_ m: [Double], _ v: SIMD3<Double>) -> SIMD3<Double> {
        SIMD3(m[0] * v.x + m[1] * v.y + m[2] * v.z,
              m[1] * v.x + m[3] * v.y + m[5] * v.z,
              m[2] * v.x + m[5] * v.y + m[4] * v.z)
    }
}
