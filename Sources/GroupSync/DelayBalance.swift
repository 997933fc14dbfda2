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
/// explains, and either both directions' delays spread alike (a busier queue one way
/// spreads that way's delays more and moves its centre while the floors still agree) or a
/// direction's floor is ramped (below), the floors are the ones that disagree, and the line
/// moves onto the exchanges' centre.
///
/// Spreads alike are not enough of a test on every ticking path. Through a relay on a timer
/// the replies, sent a turnaround after the tick that released their request, come out on a
/// tick again: their delays fall on a few values a tick apart, and where the jitter spans
/// about one tick nearly all on one, while the requests' spread over the jitter and the
/// tick. The spreads are then unlike (1.4 to several hundred times on such paths in
/// `chorus-bench clock --ticks-path`), just as for a busier queue, while the floors' line
/// lies half a tick off (0.2 to 1.9 ms on those paths). What tells the two apart is the
/// shape of the floors. A queue's delays are densest at its floor (an empty queue is its
/// commonest state), or at least no sparser there; a delay held for a timer's tick is a
/// jitter plus a wait whose sum is least only when both are, so its density rises from
/// nothing at the floor, and the fastest crossing of a window lies hundreds of µs above it.
/// Such a floor, in either direction, places no line, whatever the spreads.
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
    /// The band above a direction's fastest crossings in which its floor's shape is read, as
    /// a share of that direction's spread: wide enough that three bands hold a few hundred
    /// crossings of a ramped floor in a full window, narrow enough that the first lies on the
    /// ramp (a tick's wait convolved with a jitter ramps over the narrower of the two: over
    /// 1.7 spreads where the jitter spans a tick, over 0.85 for 5 ms ± 2 ms on a 1 ms tick,
    /// where the three bands reach past the ramp's top and still read about 7), and far wider
    /// than a host's wake-up blur (tens of µs), which ramps too but places the floor within it.
    static let floorBand = 0.5
    /// The narrowest band (ns): a timer that holds datagrams ticks every few hundred µs to a
    /// few ms (a kernel at 250 Hz: 4 ms), and its wait ramps over the whole tick. Narrower
    /// bands read only a floor's fine structure, which ramps too and says nothing of ticks: a
    /// host's wake-up blur, or the shear a rate a few ppm off puts on a window of seconds
    /// (a floor of ±100 µs of uniform jitter, sheared so, read as ramped at 27 µs bands in
    /// `ClockEstimatorTests.aBusierQueueOneWayKeepsTheFloorsLine`).
    static let minimumFloorBand = 100_000.0
    /// A floor is ramped when three bands above its reference crossing (`floorReferenceRank`)
    /// hold at least this many times as many crossings as one band does: a density rising
    /// linearly from the floor gives 6 to 9 (9 when the reference lies on the floor, 6 when
    /// half a band above it), a flat one (uniform jitter) 3, an exponential queue's 2.
    static let rampedFloorRatio = 4.5
    /// Crossings needed within three bands before a floor's shape is read: with fewer, a
    /// flat floor's count in the first band (a third of them, binomially) falls below the
    /// ramp's threshold by chance too often, and the verdict sticks (`ClockEstimator`). At
    /// this count a flat floor reads as ramped three deviations below its expected count,
    /// in about 0.15 % of judgements, and only while the window is that small; a host's
    /// Gaussian timestamping noise never holds this many in a window of 2,048.
    static let rampedFloorCrossings = 160
    /// The bands count from this crossing (0 = the fastest): a single crossing stamped too
    /// early would otherwise stand below a flat floor and leave the first band nearly empty,
    /// and the verdict sticks. (Forged crossings are the key's to stop: this stops one.) The second fastest keeps a ramp's reading
    /// (counting from the third, the verdict came later on 4 ms ± 1 ms behind a 2 ms timer,
    /// and `chorus-bench clock --ticks-path 4,1,2` gave a pair p99 of 168 µs against 106).
    static let floorReferenceRank = 1

    /// How far the exchanges' centre lies from the line (ns; positive: above), and its
    /// standard error (ns); `nil` when the exchanges balance about the line or the centre
    /// is not to be trusted (`trustsCentre`).
    let shift: (offset: Double, deviation: Double)?
    /// Whether both directions' delays spread alike about the line; `nil` with too few
    /// exchanges to say.
    let spreadsAlike: Bool?
    /// The two directions' spreads (winsorized standard deviations of their delays about the
    /// line, ns); `nil` with too few exchanges to say.
    let spreads: (forward: Double, backward: Double)?
    /// Whether either direction's floor is ramped (`rampedFloorRatio`): the floors' line is
    /// then no line to hold the centre to; `nil` with too few exchanges to say.
    let rampedFloor: Bool?
    /// Whether the larger spread is within `factor` times the smaller; `nil` with too few
    /// exchanges to say. (Two spreads of zero are alike.)
    func spreadsWithin(_ factor: Double) -> Bool? {
        spreads.map { max($0.forward, $0.backward) <= factor * min($0.forward, $0.backward) }
    }

    /// Whether the exchanges' centre can be trusted over the floors: both directions spread
    /// alike, or a floor is ramped; `nil` with too few exchanges to say.
    var trustsCentre: Bool? {
        guard let spreadsAlike, let rampedFloor else { return nil }
        return spreadsAlike || rampedFloor
    }

    /// Judges the exchanges (x: ns from the newest midpoint; bounds: ns from the base
    /// offset, as `ExchangeBounds.coordinates`) against the line `offset + slope·x` (ns).
    init(x: [Double], upper: [Double], lower: [Double], slope: Double, offset: Double) {
        let n = x.count
        guard n >= Self.minimumExchanges else { shift = nil; spreadsAlike = nil; spreads = nil; rampedFloor = nil; return }
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
        let spreads = (forward: Self.winsorizedDeviation(forward), backward: Self.winsorizedDeviation(backward))
        self.spreads = spreads
        spreadsAlike = min(spreads.forward, spreads.backward) * Self.alikeSpreads >= max(spreads.forward, spreads.backward)
        rampedFloor = Self.isRamped(forward, spread: spreads.forward) || Self.isRamped(backward, spread: spreads.backward)
        guard spreadsAlike == true || rampedFloor == true else { shift = nil; return }
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

    /// Whether one direction's delays (about any line) rise from their floor rather than pile
    /// on it (`rampedFloorRatio`), read in bands of `floorBand` times `spread` (at least
    /// `minimumFloorBand`) above the `floorReferenceRank`-th fastest.
    static func isRamped(_ delays: [Double], spread: Double) -> Bool {
        guard delays.count > floorReferenceRank, spread > 0, spread.isFinite else { return false }
        // The fastest few, kept in order in one pass.
        var fastest = Array(repeating: Double.infinity, count: floorReferenceRank + 1)
        for delay in delays where delay < fastest[floorReferenceRank] {
            var index = floorReferenceRank
            while index > 0, fastest[index - 1] > delay {
                fastest[index] = fastest[index - 1]
                index -= 1
            }
            fastest[index] = delay
        }
        let reference = fastest[floorReferenceRank]
        guard reference.isFinite else { return false }
        let band = max(floorBand * spread, minimumFloorBand)
        var inOne = 0, inThree = 0
        for delay in delays where delay <= reference + 3 * band {
            inThree += 1
            if delay <= reference + band { inOne += 1 }
        }
        return inThree >= rampedFloorCrossings && Double(inThree) >= rampedFloorRatio * Double(inOne)
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
