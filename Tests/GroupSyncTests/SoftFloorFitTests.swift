import Foundation
import Testing
import ChorusTestSupport
@testable import GroupSync
import MediaClock

@Suite("SoftFloorFit", .ownThread)
struct SoftFloorFitTests {
    /// A window of exchanges on a line `offset + slope·x` whose one-way delays are a floor,
    /// a Gaussian spread about it, and exponential queueing: x in ns from the newest, bounds
    /// in ns from the line's value at 0 minus `offset`.
    static func window(count: Int, spread: Double, queueing: Double, offset: Double, slope: Double, seed: UInt64)
        -> (x: [Double], upper: [Double], lower: [Double]) {
        var random = SeededGenerator(seed: seed)
        func gaussian() -> Double {
            let u = Double.random(in: Double.ulpOfOne..<1, using: &random), v = Double.random(in: 0..<1, using: &random)
            return (-2 * log(u)).squareRoot() * cos(2 * Double.pi * v)
        }
        func delay() -> Double {
            let floor = 2_000.0
            return floor + spread * gaussian() - queueing * log(1 - Double.random(in: 0..<1, using: &random))
        }
        var x: [Double] = [], upper: [Double] = [], lower: [Double] = []
        // One exchange every 20 ms, the newest at x = 0.
        for index in 0..<count {
            let at = Double(index - (count - 1)) * 20e6
            let line = offset + slope * at
            x.append(at)
            upper.append(line + delay())
            lower.append(line - delay())
        }
        return (x, upper, lower)
    }

    @Test func logCDFMatchesTheNormalDistributionIntoTheFarTail() {
        #expect(abs(SoftFloorFit.logCDF(0).log - log(0.5)) < 1e-12)
        // φ(0)/Φ(0) = 2/√(2π).
        #expect(abs(SoftFloorFit.logCDF(0).mills - 2 / (2 * Double.pi).squareRoot()) < 1e-12)
        // Φ(−5) = 2.8665157e−7.
        #expect(abs(SoftFloorFit.logCDF(-5).log - log(2.8665157187919333e-7)) < 1e-9)
        // Either side of the switch to the asymptotic series the two agree.
        let direct = SoftFloorFit.logCDF(-29.999999), series = SoftFloorFit.logCDF(-30.000001)
        #expect(abs(direct.log - series.log) < 1e-3)
        #expect(abs(direct.mills - series.mills) / direct.mills < 1e-5)
        // Far below, the log stays finite and the ratio approaches −z.
        let far = SoftFloorFit.logCDF(-1_000)
        #expect(far.log.isFinite && far.log < -400_000)
        #expect(abs(far.mills - 1_000) < 0.01)
    }

    /// What a window of 2 000 exchanges over 1 ms of queueing cannot tell from a sharp
    /// floor (ns): it puts a crossing every 500 ns near the floor, and a blur of a few such
    /// spacings costs less than the margin.
    static let unresolvedSpread = 5_000.0

    /// The spread taken is the widest the window does not argue against, so it may read
    /// above the truth but must not read far below it (that would publish an overconfident
    /// line), nor so far above that it stops telling a blurred floor from a sharp one.
    @Test(arguments: [5_000.0, 20_000.0, 50_000.0])
    func learnsTheFloorsSpread(spread: Double) {
        var learned: [Double] = []
        for seed in UInt64(0)..<8 {
            let points = Self.window(count: 2_000, spread: spread, queueing: 1_000_000, offset: 0, slope: 0, seed: 7 + seed)
            let fit = SoftFloorFit(x: points.x, upper: points.upper, lower: points.lower, queueing: 1_000_000)
            learned.append(fit.learnSpread(slope: 0))
        }
        #expect(learned.allSatisfy { $0 > spread * 0.7 && $0 < spread * 2 + Self.unresolvedSpread },
                "learned \(learned) ns for \(spread) ns")
    }

    @Test func aSharpFloorIsLearnedAsSharp() {
        var learned: [Double] = []
        for seed in UInt64(0)..<8 {
            let points = Self.window(count: 2_000, spread: 0, queueing: 1_000_000, offset: 0, slope: 0, seed: 8 + seed)
            let fit = SoftFloorFit(x: points.x, upper: points.upper, lower: points.lower, queueing: 1_000_000)
            learned.append(fit.learnSpread(slope: 0))
        }
        #expect(learned.allSatisfy { $0 < Self.unresolvedSpread }, "learned \(learned) ns for a sharp floor")
    }

    @Test func findsTheLineWithinItsPublishedDeviation() throws {
        var misses = 0
        let trials = 20
        for seed in 0..<UInt64(trials) {
            let slope = 37e-6
            let points = Self.window(count: 2_000, spread: 25_000, queueing: 1_000_000, offset: 1_234, slope: slope, seed: 100 + seed)
            let fit = SoftFloorFit(x: points.x, upper: points.upper, lower: points.lower, queueing: 1_000_000)
            let line = try #require(fit.posteriorLine(spread: 25_000, slope: 0, temper: 1, priorRateSpread: 200e-6))
            // 25 µs spread over ~50 crossings within it each way: a few µs.
            #expect(line.offsetDeviation > 1_000 && line.offsetDeviation < 10_000)
            if abs(line.offset - 1_234) > 3 * line.offsetDeviation { misses += 1 }
            if abs(line.slope - slope) > 3 * line.slopeDeviation { misses += 1 }
        }
        // Three deviations: a miss in one of 370; allow one among forty checks.
        #expect(misses <= 1, "\(misses) of \(2 * trials) beyond three deviations")
    }
}
