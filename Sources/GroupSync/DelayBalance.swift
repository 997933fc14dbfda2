/// Whether a window's exchanges, taken whole, balance about the line its floors give: a
/// pure value type.
///
/// The floor models (`ExchangeBounds`, `SoftFloorFit`) place the line midway between the
/// fastest requests and the fastest replies, which is right when both directions share a
/// floor. A relay that releases datagrams only on the ticks of its timer breaks that: a
/// reply leaves the leader a fixed turnaround after the tick that released its request,
/// so every reply waits nearly a whole tick for the next one, while requests leave at
/// phases that drift over the tick and the luckiest wait almost nothing. The fastest
/// replies then take a tick longer than the fastest requests, less the turnaround, and the
/// line sits half of that off (434 µs for 1 ms ticks in `chorus-bench clock`). Both
/// directions' delays still spread alike and wait half a tick on average, so the whole
/// exchanges still balance about the true line: the mean of `(F − B)/2` over a window is 0,
/// where the floors' line is off by hundreds of µs.
///
/// So the exchanges' own offsets are compared with the floors' line: their trimmed mean
/// residual, with its standard error. When it lies further from the line than the error
/// explains, and both directions' delays spread alike (a busier queue one way spreads that
/// way's delays more and moves its centre while the floors still agree), the floors are
/// the ones that disagree, and the line moves onto the exchanges' centre.
struct DelayBalance {
    /// The share of residuals cut from each end before averaging: a spike of queueing one
    /// way moves an exchange's offset by half of it, and a few in a hundred must not move
    /// the centre. On residuals as light-tailed as the ticks path's (at most a few ms
    /// either way) a 10 % trim costs next to nothing against the plain mean.
    static let trimmedShare = 0.1
    /// How many standard errors the centre must lie from the floors' line: exchanges that
    /// balance about it put it beyond 5 once in 1.7 million windows.
    static let significantErrors = 5.0
    /// The least departure that moves the line: a floor line is placed to a few µs on a quiet
    /// path, and what timestamping leaves of one direction's delay (about a µs on loopback,
    /// `ClockEstimator.unseenAsymmetry`) shifts the exchanges' centre by as much; ten times
    /// that is beyond any such path and a tenth of what a millisecond's ticks cause.
    static let leastDeparture = 10_000.0
    /// The largest ratio of the two directions' spreads (winsorized standard deviations of
    /// their delays about the line) at which their centres are trusted: on the ticks path
    /// they are 1.19 ms (uniform 4 ms plus a uniform wait of up to a tick) and 1.12 ms (four
    /// values a tick apart); queueing busier one way spreads that way's delays in
    /// proportion to how far it moves their centre.
    static let alikeSpreads = 1.25
    /// Exchanges needed before the balance is judged: fewer say little about a centre.
    static let minimumExchanges = 64

    /// How far the exchanges' centre lies from the line (ns; positive: above), and its
    /// standard error (ns); `nil` when the exchanges balance about the line or the two
    /// directions spread unlike.
    let shift: (offset: Double, deviation: Double)?
    /// Whether both directions' delays spread alike about the line (so that their centre can
    /// be trusted); `nil` with too few exchanges to say.
    let spreadsAlike: Bool?

    /// Judges the exchanges (x: ns from the newest midpoint; bounds: ns from the base
    /// offset, as `ExchangeBounds.coordinates`) against the line `offset + slope·x` (ns).
    init(x: [Double], upper: [Double], lower: [Double], slope: Double, offset: Double) {
        let n = x.count
        guard n >= Self.minimumExchanges else { shift = nil; spreadsAlike = nil; return }
        var residuals: [Double] = [], forward: [Double] = [], backward: [Double] = []
        residuals.reserveCapacity(n)
        forward.reserveCapacity(n)
        backward.reserveCapacity(n)
        for index in 0..<n {
            let line = offset + slope * x[index]
            residuals.append((upper[index] + lower[index]) / 2 - line)
            forward.append(upper[index] - line)
            backward.append(line - lower[index])
        }
        let spreads = (Self.winsorizedDeviation(forward), Self.winsorizedDeviation(backward))
        spreadsAlike = min(spreads.0, spreads.1) * Self.alikeSpreads >= max(spreads.0, spreads.1)
        guard spreadsAlike == true else { shift = nil; return }
        let sorted = residuals.sorted()
        let cut = Int(Double(n) * Self.trimmedShare)
        let kept = sorted[cut..<(n - cut)]
        let centre = kept.reduce(0, +) / Double(kept.count)
        // The trimmed mean's error, from the winsorized sample's spread.
        let error = Self.winsorizedDeviation(residuals) / ((1 - 2 * Self.trimmedShare) * Double(n).squareRoot())
        guard centre.isFinite, error.isFinite, abs(centre) > Self.leastDeparture, abs(centre) > Self.significantErrors * error else {
            shift = nil
            return
        }
        shift = (centre, error)
    }

    /// The standard deviation of `values` winsorized at `trimmedShare` (each value beyond
    /// the cut replaced by the nearest kept one): the spread of a trimmed mean's sample.
    private static func winsorizedDeviation(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        let n = sorted.count
        let cut = Int(Double(n) * trimmedShare)
        let low = sorted[cut], high = sorted[n - cut - 1]
        var sum = 0.0
        for value in sorted { sum += min(max(value, low), high) }
        let mean = sum / Double(n)
        var squares = 0.0
        for value in sorted {
            let deviation = min(max(value, low), high) - mean
            squares += deviation * deviation
        }
        return (squares / Double(n - 1)).squareRoot()
    }
}
