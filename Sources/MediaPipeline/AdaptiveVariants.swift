import Foundation

/// The bits per second an item's network brings, estimated from its reads as they come: the
/// bytes the reads brought over the time they took (`NetworkActivity`), averaged twice with
/// the recent past weighing more, a quick average and a slow one, and the lower of the two
/// taken, so that a fall shows at once and a rise only once it has lasted. Each average
/// counts time spent transferring, not time passing: a player whose buffer is full reads
/// nothing, and that says nothing of the network. A pure value, fed the totals.
public struct ThroughputEstimate: Sendable, Equatable {
    /// Half-life of the quick average, in seconds of transfer: a few segments' fetches.
    public static let quickHalfLife = 2.0
    /// Half-life of the slow average, in seconds of transfer: long enough that one fast
    /// burst (bytes that waited in the system's buffers, read at once) does not carry it.
    public static let slowHalfLife = 8.0
    /// The least transfer time an estimate stands on, in seconds: before it, a few reads
    /// of a playlist or the start of a segment say too little.
    public static let leastEvidence = 0.5
    /// The least weight a sample carries, in seconds, however quickly its bytes came: on a
    /// fast network every read takes next to no time, and without it the averages would
    /// keep what a slow spell left for minutes. Small, because bytes the system received
    /// while the reader was held back by full queues also come at once.
    public static let leastSampleWeight = 0.05

    private var quick = Average(halfLife: quickHalfLife)
    private var slow = Average(halfLife: slowHalfLife)
    private var lastBytes: Int64 = 0
    private var lastNanoseconds: Int64 = 0

    public init() {}

    /// Takes the totals counted so far (bytes, and the time their reads took, ns): what
    /// came since the last call is one sample.
    public mutating func update(totalBytes: Int64, transferNanoseconds: Int64) {
        let bytes = totalBytes - lastBytes
        let nanoseconds = transferNanoseconds - lastNanoseconds
        // Counters that went back belong to another item's opening: start from them.
        guard bytes >= 0, nanoseconds >= 0 else {
            (lastBytes, lastNanoseconds) = (totalBytes, transferNanoseconds)
            return
        }
        guard bytes > 0, nanoseconds > 0 else { return }
        (lastBytes, lastNanoseconds) = (totalBytes, transferNanoseconds)
        let seconds = Double(nanoseconds) / 1e9
        let bitsPerSecond = Double(bytes) * 8 / seconds
        quick.add(bitsPerSecond, weight: max(seconds, Self.leastSampleWeight))
        slow.add(bitsPerSecond, weight: max(seconds, Self.leastSampleWeight))
    }

    /// The estimate, bits per second: nil until `leastEvidence` of transfer was seen.
    public var bitsPerSecond: Double? {
        guard slow.weight >= Self.leastEvidence, let quick = quick.value, let slow = slow.value else { return nil }
        return min(quick, slow)
    }

    /// An exponentially weighted average whose samples weigh by the time they cover,
    /// corrected for its start at zero (so that its first samples are not pulled down).
    struct Average: Sendable, Equatable {
        let halfLife: Double
        private(set) var weight = 0.0
        private var sum = 0.0

        init(halfLife: Double) { self.halfLife = halfLife }

        mutating func add(_ value: Double, weight sampleWeight: Double) {
            let keep = Self.kept(after: sampleWeight, halfLife: halfLife)
            sum = value * (1 - keep) + sum * keep
            weight += sampleWeight
        }

        var value: Double? {
            let filled = 1 - Self.kept(after: weight, halfLife: halfLife)
            return filled > 0 ? sum / filled : nil
        }

        /// The share of the past an average keeps after `seconds`.
        static func kept(after seconds: Double, halfLife: Double) -> Double {
            Foundation.exp2(-seconds / halfLife)
        }
    }
}

/// Chooses which of an HLS master playlist's variants an item plays by what its network
/// brings (`ThroughputEstimate`), as a player that adapts does: the best variant whose
/// declared bandwidth the estimate carries with room to spare. Down at once when the
/// estimate falls below the variant playing, or one step down when playback stalls
/// (the estimate lagging the network); up one step at a time, only once the estimate has
/// carried the next variant for a while and no stall came lately, and after each stall
/// that forced a step down, only after a longer wait. A pure value: the player feeds it the
/// estimate, its stalls and the time, and applies the cap it returns.
public struct AdaptiveVariantChoice: Sendable, Equatable {
    /// The share of the estimate a variant's declared bandwidth may take: the rest covers
    /// the estimate's error, a segment larger than its average, and the playlists'
    /// fetches beside the segments.
    public static let bandwidthShare = 0.7
    /// How long the estimate must carry a better variant before it is taken (s): a rise
    /// shorter than a couple of segments is not trusted.
    public static let riseHold = 8.0
    /// After a stall forces a step down, how long before a step up may be tried again (s);
    /// doubled by each further such stall, up to `longestBackOff`.
    public static let firstBackOff = 20.0
    /// The longest wait after stalls before a step up (s).
    public static let longestBackOff = 160.0

    /// The variants' declared bandwidths, bits per second, lowest first.
    public let bandwidths: [Int]
    /// The index in `bandwidths` of the variant chosen now.
    public private(set) var chosen: Int
    private var betterSince: Double?
    private var noRiseBefore = 0.0
    private var backOff = firstBackOff

    /// Chooses among variants of `bandwidths` (any order; duplicates count once), starting
    /// from the one of bandwidth `playing` (the nearest when none declares it).
    public init?(bandwidths: [Int], playing: Int) {
        let sorted = Array(Set(bandwidths.filter { $0 > 0 })).sorted()
        guard sorted.count > 1 else { return nil }
        self.bandwidths = sorted
        chosen = sorted.indices.min { abs(sorted[$0] - playing) < abs(sorted[$1] - playing) } ?? 0
    }

    /// The bandwidth of the variant chosen now.
    public var chosenBandwidth: Int { bandwidths[chosen] }

    /// The best variant `estimate` carries (`bandwidthShare`); the lowest when none is.
    public func carried(by estimate: Double) -> Int {
        bandwidths.lastIndex { Double($0) <= estimate * Self.bandwidthShare } ?? 0
    }

    /// Takes the estimate at `now` (s, any steady clock), and whether playback stalled
    /// since the last call; returns whether the choice changed.
    public mutating func update(estimate: Double?, stalled: Bool, now: Double) -> Bool {
        let before = chosen
        if stalled {
            betterSince = nil
            if chosen > 0 {
                chosen -= 1
                noRiseBefore = now + backOff
                backOff = min(backOff * 2, Self.longestBackOff)
            }
        }
        guard let estimate else { return chosen != before }
        let target = carried(by: estimate)
        if target < chosen {
            chosen = target
            betterSince = nil
        } else if target > chosen, !stalled {
            let since = betterSince ?? now
            betterSince = since
            if now - since >= Self.riseHold, now >= noRiseBefore {
                chosen += 1
                betterSince = nil
            }
        } else {
            betterSince = nil
        }
        return chosen != before
    }
}
