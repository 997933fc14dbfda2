import MediaClock

/// The follower's best knowledge of the leader's clock: an affine map from follower host
/// time to leader time, with the statistics that say how far to trust it.
///
/// `leader(h) = h + offset + (h - referenceHostTime) * ratePPM / 10^6`. Conversions are
/// exact integer arithmetic (the rate is held in parts per trillion), rounded to the
/// nearest nanosecond, and saturate at the `Int64` range.
public struct ClockEstimate: Sendable, Equatable {
    /// Parts per trillion in one: the resolution of the stored rate.
    static let partsPerTrillion: Int128 = 1_000_000_000_000

    /// The follower host time at which `offset` holds.
    public var referenceHostTime: HostTime
    /// Leader time minus follower host time at `referenceHostTime`.
    public var offset: Duration
    /// How much faster the leader's clock runs than the follower's, in parts per trillion
    /// (exact storage of `ratePPM`).
    public var ratePPT: Int64
    /// Lowest round trip in the window.
    public var bestRoundTrip: Duration
    /// Median round trip in the window.
    public var medianRoundTrip: Duration
    /// Root mean square of the fit's residuals over the samples it used: the fit quality.
    public var residualRMS: Duration
    /// Samples in the estimator's window.
    public var sampleCount: Int
    /// Samples that passed the round-trip filter and were fitted.
    public var usedSampleCount: Int
    /// Enough samples with an uncertainty small enough to trust (see `ClockEstimator`).
    public var converged: Bool
    /// How far the offset may be off: one standard deviation of its posterior at
    /// `referenceHostTime`.
    public var uncertainty: Duration
    /// How far the rate may be off, in ppm (one standard deviation).
    public var rateUncertaintyPPM: Double
    /// How blurred the path's floor is (one deviation of the fastest crossings' delay about
    /// it), as learned from the window; zero while the estimate rests on a sharp floor.
    public var floorSpread: Duration

    /// An estimate from its parts; statistics default to "one perfect sample".
    public init(
        referenceHostTime: HostTime,
        offset: Duration,
        ratePPT: Int64 = 0,
        bestRoundTrip: Duration = .zero,
        medianRoundTrip: Duration = .zero,
        residualRMS: Duration = .zero,
        sampleCount: Int = 1,
        usedSampleCount: Int = 1,
        converged: Bool = false,
        uncertainty: Duration = .zero,
        rateUncertaintyPPM: Double = 0,
        floorSpread: Duration = .zero
    ) {
        self.referenceHostTime = referenceHostTime
        self.offset = offset
        self.ratePPT = ratePPT
        self.bestRoundTrip = bestRoundTrip
        self.medianRoundTrip = medianRoundTrip
        self.residualRMS = residualRMS
        self.sampleCount = sampleCount
        self.usedSampleCount = usedSampleCount
        self.converged = converged
        self.uncertainty = uncertainty
        self.rateUncertaintyPPM = rateUncertaintyPPM
        self.floorSpread = floorSpread
    }

    /// The leader's rate relative to the follower's host clock, in parts per million.
    public var ratePPM: Double { Double(ratePPT) / 1_000_000 }

    /// The leader's seconds per follower host second (`1 + ratePPM / 10^6`).
    public var rateRelativeToHost: Double { 1 + Double(ratePPT) / 1e12 }

    /// Leader time at follower host time `hostTime`.
    public func leaderTime(atHost hostTime: HostTime) -> LeaderTime {
        let elapsed = Int128(hostTime.nanoseconds) - Int128(referenceHostTime.nanoseconds)
        let drift = Self.divideRounded(elapsed * Int128(ratePPT), by: Self.partsPerTrillion)
        return LeaderTime(nanoseconds: (Int128(hostTime.nanoseconds) + offset.nanosecondCount + drift).clampedToInt64)
    }

    /// Follower host time at which the leader's clock reads `leaderTime` (the inverse of
    /// `leaderTime(atHost:)`, within a nanosecond).
    public func hostTime(atLeader leaderTime: LeaderTime) -> HostTime {
        let sinceReference = Int128(leaderTime.nanoseconds) - Int128(referenceHostTime.nanoseconds) - offset.nanosecondCount
        let elapsed = Self.divideRounded(sinceReference * Self.partsPerTrillion, by: Self.partsPerTrillion + Int128(ratePPT))
        return HostTime(nanoseconds: (Int128(referenceHostTime.nanoseconds) + elapsed).clampedToInt64)
    }

    /// Leader minus follower time at `hostTime`.
    public func offset(atHost hostTime: HostTime) -> Duration {
        .nanoseconds((Int128(leaderTime(atHost: hostTime).nanoseconds) - Int128(hostTime.nanoseconds)).clampedToInt64)
    }

    /// `numerator / divisor` rounded half away from zero; `divisor` must be positive.
    static func divideRounded(_ numerator: Int128, by divisor: Int128) -> Int128 {
        guard divisor > 0 else { return 0 }
        let half = divisor / 2
        return numerator >= 0 ? (numerator + half) / divisor : -((-numerator + half) / divisor)
    }
}
