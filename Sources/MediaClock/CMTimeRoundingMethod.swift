/// How `CMTime` operations round values that cannot be represented exactly in the
/// target timescale. Raw values match CoreMedia's `CMTimeRoundingMethod`.
public enum CMTimeRoundingMethod: UInt32, Sendable, Hashable, Codable, CaseIterable {
    /// Round to nearest; halves go away from zero. CoreMedia's default.
    case roundHalfAwayFromZero = 1
    /// Truncate.
    case roundTowardZero = 2
    /// Round any inexact value away from zero.
    case roundAwayFromZero = 3
    /// QuickTime's rule: toward zero when moving to a coarser timescale, away from
    /// zero when moving to a finer one, and never turn a negative time into zero
    /// (the result is then `-1/newTimescale`).
    case quickTime = 4
    /// Round up.
    case roundTowardPositiveInfinity = 5
    /// Round down.
    case roundTowardNegativeInfinity = 6

    /// CoreMedia's default method, `roundHalfAwayFromZero`.
    public static let `default`: CMTimeRoundingMethod = .roundHalfAwayFromZero
}
