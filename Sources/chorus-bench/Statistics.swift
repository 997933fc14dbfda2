/// Order statistics of a sample, for reporting timing errors.
struct Statistics {
    let sorted: [Double]

    init(_ values: [Double]) { sorted = values.sorted() }

    var count: Int { sorted.count }
    var isEmpty: Bool { sorted.isEmpty }
    var minimum: Double { sorted.first ?? .nan }
    var maximum: Double { sorted.last ?? .nan }
    var median: Double { percentile(50) }
    var mean: Double { sorted.isEmpty ? .nan : sorted.reduce(0, +) / Double(sorted.count) }

    /// The nearest-rank percentile: the smallest value at or above `percent`% of the sample.
    func percentile(_ percent: Double) -> Double {
        guard !sorted.isEmpty else { return .nan }
        let rank = Int((percent / 100 * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }
}
