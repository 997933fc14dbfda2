import MediaClock
/// A host clock that reports another clock as seen from a different machine: shifted
/// by a fixed offset and running fast or slow by a fixed skew.
///
/// For a base reading `t` it reports exactly
/// `base + offset + (t - base) * (1_000_000 + skewPPM) / 1_000_000`,
/// evaluated in 128-bit integer arithmetic and rounded toward negative infinity, so
/// the mapping is monotonic and reproducible to the nanosecond. Results saturate at
/// the `Int64` nanosecond range.
///
/// Immutable; thread-safe when the wrapped clock is (which `HostClock` requires).
public struct SkewedHostClock: HostClock {
    /// Parts per million in one: a skew of `ppm` scales elapsed time by `(1e6 + ppm) / 1e6`.
    public static let partsPerMillion: Int64 = 1_000_000

    /// The clock being distorted.
    public let wrapped: any HostClock
    /// Constant shift added to every reading.
    public let offset: Duration
    /// Rate error in parts per million (positive runs fast). Clamped above `-1_000_000`
    /// so that the skewed clock still moves forwards.
    public let skewPPM: Int64
    /// The base-clock instant around which the skew pivots (reported as `base + offset`).
    public let base: HostTime

    /// Wraps `wrapped` with a fixed `offset` and a rate error of `skewPPM` parts per
    /// million, pivoting around `base`.
    public init(
        wrapping wrapped: any HostClock,
        offset: Duration = .zero,
        skewPPM: Int64 = 0,
        base: HostTime = HostTime(nanoseconds: 0)
    ) {
        self.wrapped = wrapped
        self.offset = offset
        // A skew of -1e6 ppm or less would stop or reverse the clock.
        self.skewPPM = max(skewPPM, -Self.partsPerMillion + 1)
        self.base = base
    }

    /// The skewed reading of the wrapped clock.
    public func now() -> HostTime {
        map(wrapped.now())
    }

    /// Maps a reading of the wrapped clock to this clock's reading (see the type's
    /// formula). Pure; exposed so callers can predict readings exactly.
    public func map(_ baseTime: HostTime) -> HostTime {
        let elapsed = Int128(baseTime.nanoseconds) - Int128(base.nanoseconds)
        let scale = Int128(Self.partsPerMillion) + Int128(skewPPM)
        // |elapsed| < 2^65 and scale < 2^64, so the quotient always fits in 128 bits.
        let scaled = ExactArithmetic.multiplyDivide(
            elapsed, scale, Int128(Self.partsPerMillion), rounding: .towardNegativeInfinity
        )?.value ?? 0
        let result = Int128(base.nanoseconds) + offset.roundedNanoseconds + scaled
        return HostTime(nanoseconds: ExactArithmetic.clampToInt64(result))
    }
}
