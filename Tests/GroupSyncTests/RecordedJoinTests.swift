import Foundation
import Testing
import ChorusTestSupport
import GroupSync
import MediaClock

/// Joins recorded through the sync benchmark's relay (5 ms ± 2 ms each way, 10 % loss, and
/// the relay thread's wake-ups on a loaded host), replayed through the estimator. Each
/// fixture holds the first 2.6 s of one follower's exchanges (`--clock-log`) and both
/// nodes' simulated clocks as they announced them, so the leader's true time at every
/// reply is exact. Both are the follower whose clock was furthest from its leader's
/// (230 ppm), where the estimate used to stray past 100 µs about a second after the start.
@Suite("Recorded joins", .ownThread)
struct RecordedJoinTests {
    /// A node's simulated clock: `offset + pivot + (machine − pivot)·(1 + skew)`.
    struct AnnouncedClock {
        var offset: Double, skewPPM: Double, pivot: Double
        func node(atMachine machine: Double) -> Double { pivot + offset + (machine - pivot) * (1 + skewPPM / 1e6) }
        func machine(atNode node: Double) -> Double { pivot + (node - pivot - offset) / (1 + skewPPM / 1e6) }
    }

    static func load(_ name: String) throws -> (leader: AnnouncedClock, follower: AnnouncedClock, samples: [ClockSample]) {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/\(name).csv")
        let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n")
        let numbers = try #require(lines.first).split(whereSeparator: { $0 == " " || $0 == "," }).compactMap { Double($0) }
        try #require(numbers.count == 6)
        let leader = AnnouncedClock(offset: numbers[0], skewPPM: numbers[1], pivot: numbers[2])
        let follower = AnnouncedClock(offset: numbers[3], skewPPM: numbers[4], pivot: numbers[5])
        let samples = lines.dropFirst(2).compactMap { line -> ClockSample? in
            let fields = line.split(separator: ",").compactMap { Int64($0) }
            guard fields.count == 4 else { return nil }
            return ClockSample(t1: HostTime(nanoseconds: fields[0]), t2: LeaderTime(nanoseconds: fields[1]),
                               t3: LeaderTime(nanoseconds: fields[2]), t4: HostTime(nanoseconds: fields[3]))
        }
        return (leader, follower, samples)
    }

    /// From the first estimate a follower may start on, every estimate for the next two
    /// seconds is within 100 µs of the leader's true time: a room that starts there is
    /// joined from its first sound. Before the young window's narrower spread margin these
    /// strayed to 109 and 102 µs, and the rooms joined a second after starting.
    @Test(arguments: ["relay-join-1", "relay-join-2"])
    func aRecordedJitteryJoinStaysWithinTheMarkFromItsStart(name: String) throws {
        let (leader, follower, samples) = try Self.load(name)
        try #require(samples.count > 1_000)
        var estimator = ClockEstimator()
        var start: Double?
        var worst = 0.0
        let origin = follower.machine(atNode: Double(samples[0].t1.nanoseconds))
        for sample in samples {
            guard let estimate = estimator.add(sample) else { continue }
            let machine = follower.machine(atNode: Double(sample.t4.nanoseconds))
            let seconds = (machine - origin) / 1e9
            if start == nil, FollowerCore.canStart(on: estimate) { start = seconds }
            guard let start, seconds < start + 2 else { continue }
            let error = Double(estimate.leaderTime(atHost: sample.t4).nanoseconds) - leader.node(atMachine: machine)
            worst = max(worst, abs(error) / 1e3)
        }
        let started = try #require(start)
        // A start within half a second of the first exchange: not an estimate that keeps
        // its mark by never starting.
        #expect(started < 0.5)
        #expect(worst <= 100, "largest error in the two seconds after the start: \(worst) µs")
    }
}
