import MediaClock

/// The estimator's exchanges, kept in order of their midpoints, with their round trips kept
/// sorted alongside, so that a fit after each exchange costs time linear in the window
/// rather than a sort of it.
struct SampleWindow {
    /// The exchanges, oldest midpoint first.
    private(set) var samples: [ClockSample] = []
    /// Every exchange's round trip (ns), ascending.
    private(set) var roundTrips: [Int128] = []

    var count: Int { samples.count }
    var isEmpty: Bool { samples.isEmpty }

    /// Adds an exchange in midpoint order: exchanges arrive in order of their replies, so
    /// it belongs at the end or, when its round trip was long, a few places before it.
    mutating func insert(_ sample: ClockSample) {
        var index = samples.count
        while index > 0, samples[index - 1].midpoint > sample.midpoint { index -= 1 }
        samples.insert(sample, at: index)
        roundTrips.insert(sample.roundTripNanoseconds, at: Self.insertionPoint(of: sample.roundTripNanoseconds, in: roundTrips))
    }

    /// Lets go of the `k` exchanges with the oldest midpoints.
    mutating func removeOldest(_ k: Int) {
        guard k > 0 else { return }
        for sample in samples.prefix(k) {
            let value = sample.roundTripNanoseconds
            let index = Self.insertionPoint(of: value, in: roundTrips)
            // The value is present: the first index not below it holds it.
            if index < roundTrips.count, roundTrips[index] == value { roundTrips.remove(at: index) }
        }
        samples.removeFirst(min(k, samples.count))
    }

    /// Lets go of every exchange whose midpoint is before `time`.
    mutating func removeOlder(than time: HostTime) {
        removeOldest(samples.firstIndex { $0.midpoint >= time } ?? samples.count)
    }

    mutating func removeAll() {
        samples.removeAll()
        roundTrips.removeAll()
    }

    /// The round trip at `fraction` of the way from the best to the worst (nearest rank
    /// below), or 0 when empty.
    func roundTrip(atFraction fraction: Double) -> Int128 {
        guard !roundTrips.isEmpty else { return 0 }
        let rank = Int((fraction * Double(roundTrips.count)).rounded(.down))
        return roundTrips[min(max(rank, 0), roundTrips.count - 1)]
    }

    /// The first index whose value is not below `value` (binary search).
    private static func insertionPoint(of value: Int128, in sorted: [Int128]) -> Int {
        var low = 0, high = sorted.count
        while low < high {
            let middle = (low + high) / 2
            if sorted[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
