import ArgumentParser
import Foundation
import GroupSync
import MediaClock

/// `chorus-bench clock-replay DIR...`: replays the exchanges a `sync` run recorded through
/// a fresh `ClockEstimator`, and compares its errors with those the follower published.
///
/// A `sync` run's work directory holds every follower's `--clock-log` (the four timestamps
/// of each exchange and the estimate the follower made from it) and every node's simulated
/// clock as it announced it, so the truth at each reply is known exactly. Replaying the
/// same exchanges through this build's estimator shows what a change to the estimator does
/// on the very paths (relay, scheduler, loss) a run met, without the run's other noise.
/// The replay cannot ask for its own poll schedule: it sees the exchanges the recorded
/// follower asked for.
struct ClockReplay: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clock-replay",
        abstract: "Replay a sync run's recorded clock exchanges through this build's estimator.")

    /// Within this of the truth counts as joined, as in `sync` and `clock`.
    static let joinTolerance = 100e-6
    /// ... when it holds this long (seconds).
    static let joinHold = 1.0
    /// The figures after a start cover this long (seconds): the stretch in which a follower
    /// that has started must stay within the join tolerance for its join to count.
    static let afterStart = 2.0
    /// Steady figures count from this long after the first exchange (seconds), as the
    /// `clock` benchmark's "10 s on".
    static let steadyFrom = 10.0
    /// An error beyond this many of the estimate's own deviations counts against its
    /// honesty, as in `clock`.
    static let honestDeviations = 3.0
    /// How close to a direction's fastest crossing (µs) the floor's sharpness is judged.
    static let floorWindows: [Double] = [25, 50, 100, 200]
    /// The stretch above the fastest crossing (µs) whose density of crossings stands for
    /// a sharp floor's: well clear of any blur of the floor, well inside a jitter of
    /// milliseconds.
    static let referenceBand = (from: 500.0, to: 1_500.0)

    @Option(name: .long, help: "Write each follower's replayed estimates here as NAME.clock.csv (the --clock-log format, named RUN-FOLLOWER), and both estimates' errors against the truth as NAME.errors.csv.")
    var trace: String?

    @Argument(help: "Work directories of sync runs (each with leader.log and f*.log, f*.clock.csv).")
    var directories: [String]

    func run() throws {
        var table = Table(title: "clock-replay: recorded estimate against this build's, on the same exchanges",
                          command: "chorus-bench clock-replay " + directories.joined(separator: " "),
                          header: ["run", "follower", "exchanges", "start s (rec / new)", "max µs 0-1 s after start (rec / new)",
                                   "max µs 1-2 s after start (rec / new)", "join from start s (rec / new)",
                                   "p99 µs \(Int(Self.steadyFrom)) s on (rec / new)", "signed median µs \(Int(Self.steadyFrom)) s on (rec / new)",
                                   "path's own offset µs \(Int(Self.steadyFrom)) s on (all / fastest 10 %)"])
        var worst: [String: [Double]] = [:]
        var judged = (old: 0, new: 0), beyond = (old: 0, new: 0)
        var joins: (old: [Double], new: [Double]) = ([], [])
        // Crossings near the floor, and what a sharp floor would put there.
        var nearFloor = Array(repeating: 0.0, count: Self.floorWindows.count)
        var sharpFloor = Array(repeating: 0.0, count: Self.floorWindows.count)
        for directory in directories {
            let run = try Self.recordedRun(directory)
            let leader = run.leader
            for (name, follower, rows) in run.followers {
                guard let first = rows.first else { continue }
                let origin = follower.machine(atNode: Double(first.sample.t1.nanoseconds))
                var recorded: [Point] = []
                var replayed: [Point] = []
                var estimator = ClockEstimator()
                var traced = "t1,t2,t3,t4,estimate_at_t4,uncertainty,rate_ppm,rate_uncertainty_ppm\n"
                for row in rows {
                    let machine = follower.machine(atNode: Double(row.sample.t4.nanoseconds))
                    let truth = leader.node(atMachine: machine)
                    let seconds = (machine - origin) / 1e9
                    recorded.append(Point(seconds: seconds, error: (row.recordedEstimate - truth) / 1e9,
                                          canStart: row.recordedDeviation <= Double(FollowerCore.startingUncertainty.nanosecondsClamped)
                                              && recorded.count >= ClockEstimator.convergenceSamples,
                                          deviation: row.recordedDeviation / 1e9))
                    if let estimate = estimator.add(row.sample) {
                        let leaderTime = estimate.leaderTime(atHost: row.sample.t4)
                        traced += "\(row.sample.t1.nanoseconds),\(row.sample.t2.nanoseconds),\(row.sample.t3.nanoseconds),\(row.sample.t4.nanoseconds),"
                            + "\(leaderTime.nanoseconds),\(estimate.uncertainty.nanosecondsClamped),\(estimate.ratePPM),\(estimate.rateUncertaintyPPM)\n"
                        replayed.append(Point(seconds: seconds, error: (Double(leaderTime.nanoseconds) - truth) / 1e9,
                                              canStart: FollowerCore.canStart(on: estimate),
                                              deviation: Double(estimate.uncertainty.nanosecondsClamped) / 1e9))
                    }
                }
                if let trace {
                    let run = URL(fileURLWithPath: directory).lastPathComponent
                    try traced.write(toFile: "\(trace)/\(run)-\(name).clock.csv", atomically: true, encoding: .utf8)
                    // The replay has no estimate until its first fit, so each list is written whole.
                    let errors = "estimate,seconds,error_us,deviation_us\n"
                        + recorded.map { "recorded,\($0.seconds),\($0.error * 1e6),\($0.deviation * 1e6)" }.joined(separator: "\n") + "\n"
                        + replayed.map { "replayed,\($0.seconds),\($0.error * 1e6),\($0.deviation * 1e6)" }.joined(separator: "\n") + "\n"
                    try errors.write(toFile: "\(trace)/\(run)-\(name).errors.csv", atomically: true, encoding: .utf8)
                }
                // Each crossing's true one-way delay, from the announced clocks.
                let forward = rows.map { leader.machine(atNode: Double($0.sample.t2.nanoseconds)) - follower.machine(atNode: Double($0.sample.t1.nanoseconds)) }
                let backward = rows.map { follower.machine(atNode: Double($0.sample.t4.nanoseconds)) - leader.machine(atNode: Double($0.sample.t3.nanoseconds)) }
                for delays in [forward, backward] {
                    guard let fastest = delays.min() else { continue }
                    let excess = delays.map { ($0 - fastest) / 1e3 }
                    let band = Double(excess.filter { $0 >= Self.referenceBand.from && $0 < Self.referenceBand.to }.count)
                    let density = band / (Self.referenceBand.to - Self.referenceBand.from)
                    for (index, window) in Self.floorWindows.enumerated() {
                        nearFloor[index] += Double(excess.filter { $0 < window }.count)
                        sharpFloor[index] += density * window
                    }
                }
                let old = Summary(recorded), new = Summary(replayed)
                // Where the exchanges themselves put the offset, against the truth: half the
                // difference of the true one-way delays, which is an exchange's own error. Its
                // mean is what an estimate from the exchanges' centre tends to; that of the
                // fastest round trips, what one from the floors tends to.
                let steadyRows = rows.indices.filter {
                    (follower.machine(atNode: Double(rows[$0].sample.t4.nanoseconds)) - origin) / 1e9 >= Self.steadyFrom
                }
                let ownErrors = steadyRows.map { (forward[$0] - backward[$0]) / 2 }
                let fastest = steadyRows.sorted { forward[$0] + backward[$0] < forward[$1] + backward[$1] }
                    .prefix(max(1, steadyRows.count / 10)).map { (forward[$0] - backward[$0]) / 2 }
                let pathOffset = ownErrors.isEmpty ? "-"
                    : "\(Format.fixed(Statistics(ownErrors).mean / 1e3, 1)) / \(Format.fixed(Statistics(Array(fastest)).mean / 1e3, 1))"
                judged.old += old.judged; judged.new += new.judged; beyond.old += old.beyond; beyond.new += new.beyond
                for (key, value) in [("rec 0-1", old.early), ("new 0-1", new.early), ("rec 1-2", old.late), ("new 1-2", new.late)] {
                    worst[key, default: []].append(value ?? .infinity)
                }
                // Join time from the start, never as infinity.
                joins.old.append(old.join.flatMap { join in old.start.map { join - $0 } } ?? .infinity)
                joins.new.append(new.join.flatMap { join in new.start.map { join - $0 } } ?? .infinity)
                table.add([URL(fileURLWithPath: directory).lastPathComponent, name, "\(rows.count)",
                           "\(Format.optional(old.start, 2)) / \(Format.optional(new.start, 2))",
                           "\(Format.optional(old.early.map { $0 * 1e6 }, 1)) / \(Format.optional(new.early.map { $0 * 1e6 }, 1))",
                           "\(Format.optional(old.late.map { $0 * 1e6 }, 1)) / \(Format.optional(new.late.map { $0 * 1e6 }, 1))",
                           "\(Format.optional(old.join, 2)) / \(Format.optional(new.join, 2))",
                           "\(Format.optional(old.steadyP99.map { $0 * 1e6 }, 1)) / \(Format.optional(new.steadyP99.map { $0 * 1e6 }, 1))",
                           "\(Format.optional(old.steadyMedian.map { $0 * 1e6 }, 1)) / \(Format.optional(new.steadyMedian.map { $0 * 1e6 }, 1))",
                           pathOffset])
            }
        }
        for key in ["0-1", "1-2"] {
            let old = worst["rec \(key)"] ?? [], new = worst["new \(key)"] ?? []
            table.notes.append("max µs \(key) s after start over all followers: recorded median \(Format.fixed(Statistics(old).median * 1e6, 1)), worst \(Format.fixed((old.max() ?? .nan) * 1e6, 1)); this build median \(Format.fixed(Statistics(new).median * 1e6, 1)), worst \(Format.fixed((new.max() ?? .nan) * 1e6, 1)); over 100 µs: \(old.filter { $0 > Self.joinTolerance }.count) / \(new.filter { $0 > Self.joinTolerance }.count) of \(old.count)")
        }
        table.notes.append("join from start over all followers: recorded median \(Format.fixed(Statistics(joins.old).median, 2)) s, slowest \(Format.fixed(joins.old.max() ?? .nan, 2)) s; this build median \(Format.fixed(Statistics(joins.new).median, 2)) s, slowest \(Format.fixed(joins.new.max() ?? .nan, 2)) s; 0.5 s or more after the start: \(joins.old.filter { $0 >= 0.5 }.count) / \(joins.new.filter { $0 >= 0.5 }.count) of \(joins.old.count)")
        table.notes.append("beyond \(Format.fixed(Self.honestDeviations, 0))σ from the start on: recorded \(Format.fixed(100 * Double(beyond.old) / Double(max(judged.old, 1)), 2)) %, this build \(Format.fixed(100 * Double(beyond.new) / Double(max(judged.new, 1)), 2)) %")
        let shares = zip(Self.floorWindows, zip(nearFloor, sharpFloor)).map { window, counts in
            "\(Int(window)) µs \(Format.fixed(100 * counts.0 / counts.1, 0)) %"
        }
        table.notes.append("floor: crossings within so many µs of each direction's fastest (true one-way delays), as a share of what the density \(Int(Self.referenceBand.from))–\(Int(Self.referenceBand.to)) µs above it would put there (a sharp floor under uniform jitter: 100 %): " + shares.joined(separator: ", "))
        table.notes.append("times from the follower's first exchange; start = the first estimate a follower may start on (FollowerCore.canStart; for the recorded estimates, read from their published deviation once the join burst is in); error = the estimate's leader time at each reply minus the true one; join from start = the first time, at or after the start, from which the error stays within \(Int(Self.joinTolerance * 1e6)) µs for \(Format.fixed(Self.joinHold, 0)) s: the join a follower would make if its output followed the estimate exactly")
        table.print()
    }

    /// An estimate's error at one reply.
    struct Point {
        var seconds: Double
        var error: Double
        var canStart: Bool
        /// The estimate's own published deviation (s).
        var deviation: Double
    }

    /// A follower's figures: when it could start, its largest error in the two seconds
    /// after, and its clock join.
    struct Summary {
        var start: Double?
        var early: Double?
        var late: Double?
        var join: Double?
        /// The 99th percentile of the error's size, and its signed median, from `steadyFrom` on.
        var steadyP99: Double?
        var steadyMedian: Double?
        /// Estimates from the start on, and those further from the truth than three of
        /// their own deviations.
        var judged = 0, beyond = 0

        init(_ points: [Point]) {
            start = points.first(where: \.canStart)?.seconds
            if let start {
                early = points.filter { $0.seconds >= start && $0.seconds < start + 1 }.map { abs($0.error) }.max()
                late = points.filter { $0.seconds >= start + 1 && $0.seconds < start + ClockReplay.afterStart }.map { abs($0.error) }.max()
            }
            for point in points where point.seconds >= (start ?? .infinity) {
                judged += 1
                if abs(point.error) > ClockReplay.honestDeviations * point.deviation { beyond += 1 }
            }
            let steady = points.filter { $0.seconds >= ClockReplay.steadyFrom }.map(\.error)
            if !steady.isEmpty {
                steadyP99 = Statistics(steady.map(abs)).percentile(99)
                steadyMedian = Statistics(steady).median
            }
            var since: Double?
            for point in points where point.seconds >= (start ?? .infinity) {
                if abs(point.error) <= ClockReplay.joinTolerance {
                    let first = since ?? point.seconds
                    since = first
                    if point.seconds - first >= ClockReplay.joinHold { join = first; break }
                } else {
                    since = nil
                }
            }
        }
    }

    /// One exchange of a `--clock-log`, with the estimate (leader ns at t4) and deviation (ns)
    /// the follower recorded with it.
    typealias RecordedExchange = (sample: ClockSample, recordedEstimate: Double, recordedDeviation: Double)

    /// A `sync` run's work directory: the leader's announced clock, and each follower's name,
    /// announced clock and recorded exchanges (followers that announced none are left out).
    static func recordedRun(_ directory: String) throws
        -> (leader: AnnouncedClock, followers: [(name: String, clock: AnnouncedClock, rows: [RecordedExchange])]) {
        let leaderLog = try String(contentsOfFile: directory + "/leader.log", encoding: .utf8)
        guard let leader = AnnouncedClock(text: leaderLog) else {
            throw BenchError("\(directory)/leader.log announces no simulated clock")
        }
        let names = (try FileManager.default.contentsOfDirectory(atPath: directory))
            .filter { $0.hasSuffix(".clock.csv") }.map { String($0.dropLast(".clock.csv".count)) }.sorted()
        var followers: [(name: String, clock: AnnouncedClock, rows: [RecordedExchange])] = []
        for name in names {
            let log = try String(contentsOfFile: "\(directory)/\(name).log", encoding: .utf8)
            guard let clock = AnnouncedClock(text: log) else { continue }
            followers.append((name, clock, try exchanges(path: "\(directory)/\(name).clock.csv")))
        }
        return (leader, followers)
    }

    /// Every recorded crossing's true one-way delay (ns) in the `sync` runs under
    /// `directories`, forward (request) and backward (reply), from the nodes' announced
    /// clocks.
    static func oneWayDelays(directories: [String]) throws -> (forward: [Int64], backward: [Int64]) {
        var forward: [Int64] = [], backward: [Int64] = []
        for directory in directories {
            let run = try recordedRun(directory)
            let leader = run.leader
            for (_, follower, rows) in run.followers {
                for row in rows {
                    let sample = row.sample
                    forward.append(Int64((leader.machine(atNode: Double(sample.t2.nanoseconds))
                                          - follower.machine(atNode: Double(sample.t1.nanoseconds))).rounded()))
                    backward.append(Int64((follower.machine(atNode: Double(sample.t4.nanoseconds))
                                           - leader.machine(atNode: Double(sample.t3.nanoseconds))).rounded()))
                }
            }
        }
        return (forward, backward)
    }

    /// The exchanges of a `--clock-log`: each sample, and the estimate (leader ns at t4)
    /// and deviation (ns) the follower recorded with it.
    static func exchanges(path: String) throws -> [RecordedExchange] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var rows: [RecordedExchange] = []
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: ",")
            guard fields.count >= 6, let t1 = Int64(fields[0]), let t2 = Int64(fields[1]), let t3 = Int64(fields[2]),
                  let t4 = Int64(fields[3]), let estimate = Double(fields[4]), let deviation = Double(fields[5]) else { continue }
            rows.append((ClockSample(t1: HostTime(nanoseconds: t1), t2: LeaderTime(nanoseconds: t2),
                                     t3: LeaderTime(nanoseconds: t3), t4: HostTime(nanoseconds: t4)), estimate, deviation))
        }
        return rows
    }
}
