/// A span of time: `start` plus a non-negative `duration`, with CoreMedia's semantics
/// (`CMTimeRange`). The range is half-open: it contains `start` but not `end`.
///
/// A value type; safe to share between threads.
public struct CMTimeRange: Sendable, Hashable, Codable {
    /// First instant of the range.
    public var start: CMTime
    /// Length of the range; valid ranges have a non-negative, epoch-0 duration.
    public var duration: CMTime

    /// A range from `start` lasting `duration` (`CMTimeRangeMake`).
    public init(start: CMTime, duration: CMTime) {
        self.start = start
        self.duration = duration
    }

    /// The all-zero range, as a C struct starts: both times invalid (flags 0), so the
    /// range is invalid until set.
    public init() {
        self.init(start: CMTime(), duration: CMTime())
    }

    /// The range from `start` up to, not including, `end`
    /// (`CMTimeRangeFromTimeToTime`); `end < start` produces an invalid range.
    public init(start: CMTime, end: CMTime) {
        self.init(start: start, duration: end - start)
    }

    /// The empty range at time zero.
    public static let zero = CMTimeRange(start: .zero, duration: .zero)
    /// The invalid range.
    public static let invalid = CMTimeRange(start: .invalid, duration: .invalid)

    /// The first instant after the range, `start + duration` (`CMTimeRangeGetEnd`).
    public var end: CMTime {
        start + duration
    }

    /// `CMTIMERANGE_IS_VALID`: start and duration valid, duration in epoch 0 and not
    /// negative.
    public var isValid: Bool {
        start.isValid && duration.isValid && duration.epoch == 0 && duration >= .zero
    }

    /// Whether the range is valid and has zero duration (`CMTIMERANGE_IS_EMPTY`).
    public var isEmpty: Bool {
        isValid && duration == .zero
    }

    /// Whether the range is valid with an indefinite start or duration.
    public var isIndefinite: Bool {
        isValid && (start.isIndefinite || duration.isIndefinite)
    }

    /// Whether `start <= time < end` (`CMTimeRangeContainsTime`); false for invalid ranges.
    public func containsTime(_ time: CMTime) -> Bool {
        guard isValid, time.isValid else { return false }
        return start <= time && time < end
    }

    /// Whether `other` lies within this range (`CMTimeRangeContainsTimeRange`): its start
    /// is not before ours and its end not after ours. False if either range is invalid.
    public func containsTimeRange(_ other: CMTimeRange) -> Bool {
        guard isValid, other.isValid else { return false }
        return start <= other.start && other.end <= end
    }

    /// The overlap of the two ranges (`CMTimeRangeGetIntersection`): invalid if either
    /// range is invalid, `.zero` if they do not overlap.
    public func intersection(_ other: CMTimeRange) -> CMTimeRange {
        guard isValid, other.isValid else { return .invalid }
        let newStart = max(start, other.start)
        let newEnd = min(end, other.end)
        guard newStart < newEnd else { return .zero }
        return CMTimeRange(start: newStart, end: newEnd)
    }

    /// The smallest range covering both (`CMTimeRangeGetUnion`), including any gap
    /// between them; invalid if either range is invalid.
    public func union(_ other: CMTimeRange) -> CMTimeRange {
        guard isValid, other.isValid else { return .invalid }
        return CMTimeRange(start: min(start, other.start), end: max(end, other.end))
    }
}

extension CMTimeRange: CustomStringConvertible {
    /// `{start, duration}` using `CMTime`'s description.
    public var description: String {
        "{\(start), \(duration)}"
    }
}
