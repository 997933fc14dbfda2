/// The PCM format between the converter and an output: interleaved 32-bit float samples at
/// `sampleRate` frames per second with `channels` samples per frame.
///
/// One format serves every output so that a queue of items with different native formats
/// can play through one open device; each item is converted to it.
public struct AudioFormat: Sendable, Hashable, CustomStringConvertible {
    /// Frames per second.
    public var sampleRate: Int
    /// Samples per frame.
    public var channels: Int

    /// The most channels an output carries (7.1).
    public static let maximumChannels = 8

    public init(sampleRate: Int, channels: Int) {
        self.sampleRate = sampleRate
        self.channels = channels
    }

    /// A format for when an output must be opened before any item says what it prefers.
    public static let fallback = AudioFormat(sampleRate: 48_000, channels: 2)

    public var description: String { "\(sampleRate) Hz, \(channels) ch, f32" }

    /// The number of frames that last `duration`, rounded to the nearest frame.
    public func frames(in duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let whole = seconds * Int64(sampleRate)
        // 1e18 attoseconds per second; split to stay inside Int64.
        let fraction = (attoseconds / 1_000_000) * Int64(sampleRate) / 1_000_000_000_000
        return whole + fraction
    }

    /// How long `frames` frames last, to the nanosecond.
    public func duration(ofFrames frames: Int64) -> Duration {
        .nanoseconds(nanoseconds(ofFrames: frames))
    }

    /// How long `frames` frames last in nanoseconds, rounded toward zero.
    public func nanoseconds(ofFrames frames: Int64) -> Int64 {
        let (high, low) = frames.multipliedFullWidth(by: 1_000_000_000)
        let (quotient, _) = Int64(sampleRate).dividingFullWidth((high, low))
        return quotient
    }

    /// The number of whole frames in `nanoseconds`, rounded to the nearest frame.
    public func frames(inNanoseconds nanoseconds: Int64) -> Int64 {
        let (high, low) = nanoseconds.multipliedFullWidth(by: Int64(sampleRate))
        let (quotient, remainder) = Int64(1_000_000_000).dividingFullWidth((high, low))
        if remainder >= 500_000_000 { return quotient + 1 }
        if remainder <= -500_000_000 { return quotient - 1 }
        return quotient
    }
}
