/// CoreMedia's integer type for a `CMTime` numerator.
public typealias CMTimeValue = Int64
/// CoreMedia's integer type for a `CMTime` denominator (ticks per second).
public typealias CMTimeScale = Int32
/// CoreMedia's integer type for a `CMTime` epoch.
public typealias CMTimeEpoch = Int64

/// The largest timescale CoreMedia allows (`kCMTimeMaxTimescale`).
public let kCMTimeMaxTimescale: Int32 = 0x7fff_ffff

/// A rational time, `value / timescale` seconds, with CoreMedia's semantics:
/// invalid, indefinite and infinite times, exact integer arithmetic, explicit
/// rounding and the `hasBeenRounded` flag.
///
/// Equality and ordering follow `CMTimeCompare`: numeric times compare by exact value
/// across timescales (1/2 == 2/4), and
/// `-infinity < numeric < indefinite < +infinity < invalid`. The `hasBeenRounded`
/// flag does not take part in equality.
///
/// A numeric time whose timescale is not positive can only arise by mutating the
/// public fields; every operation treats it as invalid rather than dividing by zero.
///
/// A value type; safe to share between threads.
public struct CMTime: Sendable {
    /// Numerator: the number of `timescale` ticks.
    public var value: CMTimeValue
    /// Denominator: ticks per second. Positive for numeric times.
    public var timescale: CMTimeScale
    /// Kind of time (valid, infinite, indefinite) and whether it has been rounded.
    public var flags: CMTimeFlags
    /// Distinguishes equal timestamps from different loop iterations or items.
    /// Greater epochs come later; epoch 0 times act as durations in arithmetic.
    public var epoch: CMTimeEpoch

    /// Creates a time from raw fields, exactly as CoreMedia's struct initializer does.
    public init(value: CMTimeValue, timescale: CMTimeScale, flags: CMTimeFlags, epoch: CMTimeEpoch) {
        self.value = value
        self.timescale = timescale
        self.flags = flags
        self.epoch = epoch
    }

    /// The invalid time, as CoreMedia's empty initializer makes it (all fields zero).
    public init() { self.init(value: 0, timescale: 0, flags: [], epoch: 0) }

    /// `value / timescale` seconds (`CMTimeMake`). A non-positive timescale yields `.invalid`.
    public init(value: CMTimeValue, timescale: CMTimeScale) {
        if timescale > 0 {
            self.init(value: value, timescale: timescale, flags: .valid, epoch: 0)
        } else {
            self = .invalid
        }
    }

    /// Zero seconds, timescale 1.
    public static let zero = CMTime(value: 0, timescale: 1, flags: .valid, epoch: 0)
    /// The invalid time: all fields zero.
    public static let invalid = CMTime(value: 0, timescale: 0, flags: [], epoch: 0)
    /// An unknown time, e.g. the duration of a live stream.
    public static let indefinite = CMTime(value: 0, timescale: 0, flags: [.valid, .indefinite], epoch: 0)
    /// Later than every numeric time.
    public static let positiveInfinity = CMTime(value: 0, timescale: 0, flags: [.valid, .positiveInfinity], epoch: 0)
    /// Earlier than every numeric time.
    public static let negativeInfinity = CMTime(value: 0, timescale: 0, flags: [.valid, .negativeInfinity], epoch: 0)

    /// The category a time belongs to; ordered as `CMTimeCompare` orders them.
    enum Kind: Int, Comparable {
        case negativeInfinity = 0
        case numeric = 1
        case indefinite = 2
        case positiveInfinity = 3
        case invalid = 4

        static func < (lhs: Kind, rhs: Kind) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// Classifies this time; a numeric-looking time with a non-positive timescale is invalid.
    var kind: Kind {
        guard flags.contains(.valid) else { return .invalid }
        if flags.contains(.indefinite) { return .indefinite }
        if flags.contains(.positiveInfinity) { return .positiveInfinity }
        if flags.contains(.negativeInfinity) { return .negativeInfinity }
        return timescale > 0 ? .numeric : .invalid
    }

    /// Whether the time is valid (numeric, infinite or indefinite).
    public var isValid: Bool { kind != .invalid }
    /// Whether the time is an actual number of seconds (valid, not infinite, not indefinite).
    public var isNumeric: Bool { kind == .numeric }
    /// Whether the time is indefinite.
    public var isIndefinite: Bool { kind == .indefinite }
    /// Whether the time is +infinity.
    public var isPositiveInfinity: Bool { kind == .positiveInfinity }
    /// Whether the time is -infinity.
    public var isNegativeInfinity: Bool { kind == .negativeInfinity }
    /// Whether the value was rounded by some operation that produced it.
    public var hasBeenRounded: Bool { flags.contains(.hasBeenRounded) }
}
