import Testing
import ChorusTestSupport
import MediaClock
@testable import MediaPipeline

/// Which of the PulseAudio probe's answers are used: the quickest of the recent ones, but
/// never so few that the stream goes without a point for long.
@Suite(.ownThread)
struct RoundTripGateTests {
    /// Feeds `roundTrips` (µs) to `gate`, one answer every 25 ms from `start`, and returns
    /// those used, with their index.
    static func feed(_ gate: inout RoundTripGate, _ roundTrips: [Int], from start: HostTime = HostTime(nanoseconds: 0)) -> [(index: Int, microseconds: Int)] {
        var admitted: [(index: Int, microseconds: Int)] = []
        for (index, microseconds) in roundTrips.enumerated() {
            let now = start + .milliseconds(25 * index)
            if gate.admits(.microseconds(microseconds), at: now) { admitted.append((index, microseconds)) }
        }
        return admitted
    }

    @Test func theFirstAnswersAreUsedUnlessTooSlow() {
        var gate = RoundTripGate()
        // Before enough are known to judge by, any answer under the maximum is used.
        let first = [300, 250, 500, 400, 350, 200, 450]
        #expect(Self.feed(&gate, first).count == first.count)
        let tooSlow = gate.admits(RoundTripGate.maximumRoundTrip + .microseconds(1), at: HostTime(nanoseconds: 1_000_000_000))
        #expect(!tooSlow)
    }

    @Test func onlyTheQuickestQuarterIsUsedOnceJudged() {
        var gate = RoundTripGate()
        // A steady mix: one answer in four at 80 µs, the rest 150 to 350 µs.
        let mix = Array(repeating: [80, 150, 250, 350], count: 40).flatMap { $0 }
        let admitted = Self.feed(&gate, mix).filter { $0.index >= 8 }
        #expect(admitted.count > 30)
        #expect(admitted.allSatisfy { $0.microseconds == 80 }, "\(admitted.map(\.microseconds))")
    }

    @Test func anAnswerOverlappedByAWriteOnlyCountsTowardQuickness() {
        var gate = RoundTripGate()
        let start = HostTime(nanoseconds: 0)
        let overlapped = gate.admits(.microseconds(100), at: start, usable: false)
        #expect(!overlapped)
    }

    @Test func aSlowerServerStillGivesAPointEveryLongestGap() {
        var gate = RoundTripGate()
        // A second of quick answers, then the server slows to 200 to 300 µs: the quick past
        // holds the bound low for a while, but a point still comes at least every 200 ms,
        // and once the slower answers fill the history, the quickest of them are used again.
        let roundTrips = Array(repeating: 60, count: 40) + (0..<80).map { $0 % 4 == 0 ? 200 : 300 }
        let admitted = Self.feed(&gate, roundTrips)
        let slow = admitted.filter { $0.index >= 40 }
        #expect(!slow.isEmpty)
        var previous = 39
        for point in slow {
            #expect(point.index - previous <= 8, "a gap of \((point.index - previous) * 25) ms")
            previous = point.index
        }
        #expect(slow.contains { $0.index >= 40 + RoundTripGate.historyLength && $0.microseconds == 200 })
        #expect(!slow.contains { $0.index >= 40 + RoundTripGate.historyLength && $0.microseconds == 300 })
    }
}
