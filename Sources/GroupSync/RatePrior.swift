/// The prior on the rate between two nodes' clocks: a normal core of one crystal pair's
/// spread, with tails that fall off only linearly (Huber's shape) beyond
/// `coreDeviations` of it.
///
/// Crystals are specified to ±100 ppm, and near 0 the core keeps a jittery path's first
/// fits from wandering while its exchanges say little about the rate. But a clock may be
/// skewed on purpose by far more (a simulated node clock, or libfaketime): under a normal
/// prior a rate of 5000 ppm costs 312 nats, more than a join burst's evidence, and the
/// posterior then sat between the prior and the truth with bounds that contradicted it, so
/// the window was let go again and again and the follower never converged. The linear
/// tails cost 48 nats there and rise by only 0.01 nats per ppm, which a burst of exchanges
/// 35 ms apart outweighs. The density stays log-concave, so the posterior's peak is still
/// found by golden-section search and Newton's method.
struct RatePrior {
    /// Where the normal core gives way to linear tails, in deviations: beyond two crystal
    /// pairs' spread a rate is most likely set on purpose.
    static let coreDeviations = 2.0

    /// One deviation of the core, in the rate's own unit.
    let spread: Double

    /// The log-density at rate `rate` (same unit as `spread`), up to a constant.
    func logDensity(_ rate: Double) -> Double {
        let core = Self.coreDeviations * spread
        let size = abs(rate)
        guard size > core else { return -rate * rate / (2 * spread * spread) }
        return -(core * size - core * core / 2) / (spread * spread)
    }

    /// The log-density's first derivative at `rate`.
    func slope(_ rate: Double) -> Double {
        let core = Self.coreDeviations * spread
        let clamped = min(core, max(-core, rate))
        return -clamped / (spread * spread)
    }

    /// The log-density's second derivative at `rate`: zero in the tails.
    func curvature(_ rate: Double) -> Double {
        abs(rate) > Self.coreDeviations * spread ? 0 : -1 / (spread * spread)
    }
}
