import ArgumentParser
import Foundation
import GroupSync
import MediaClock

/// `chorus-bench clock`: how far the follower's clock estimate is from the leader's true
/// time, on simulated paths, from the first exchange on.
///
/// This isolates the estimator from everything else in the chain (decoding, the device,
/// the renderer's correction loop): each run drives a `ClockEstimator` with exchanges on
/// the poll schedule it asks for, over a path whose one-way delays are drawn from a seeded
/// generator, between a leader and a follower whose clocks differ by seconds and up to
/// ±200 ppm. Every `probeInterval` it compares the published estimate's leader time with
/// the truth. The error is what every follower would play off by if the rest of the chain
/// were perfect; two followers' errors are independent, so the pair figures pair run i
/// with run i + 1. Deterministic: the same seed prints the same table.
struct ClockBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clock",
        abstract: "Clock-estimate error against the truth on simulated paths (no processes, deterministic).")

    /// How often the estimate is compared with the truth: the period the leader's capture
    /// is compared at in `sync`.
    static let probeInterval: Duration = .milliseconds(10)
    /// Within this of the truth counts as joined (the issue's join criterion) ...
    static let joinTolerance = 100e-6
    /// ... when it holds this long.
    static let joinHold: Duration = .seconds(1)
    /// Errors before this are left out of the steady figures: the join is reported apart.
    static let steadyAfter: Duration = .seconds(2)
    /// Each follower's bias is its signed median error from this many seconds on, as the
    /// `sync` benchmark's and `clock-replay`'s steady figures: past the join's first fits.
    static let biasFrom = 10
    /// An error beyond this many of the estimate's published deviations counts against its
    /// honesty: for a Gaussian error, 0.3 % of probes.
    static let honestDeviations = 3.0
    /// The leader's time to turn a request round: a loaded host's scheduling.
    static let leaderTurnaround: Duration = .microseconds(30)

    /// A path: one-way delay floor, jitter each way, loss each way, plus the host's own
    /// timestamping noise.
    struct Path {
        var name: String
        var description: String
        /// Least one-way delay.
        var floor: Duration
        /// Extra delay each way, uniform in [0, 2·jitter] (a `±jitter` around floor + jitter).
        var uniformJitter: Duration
        /// Extra delay each way, exponential with this mean (queueing on a busy link).
        var exponentialJitter: Duration
        /// Extra delay each way, gamma-distributed with shape 2 and this mean: a loaded host's
        /// wake-up latency where a thread forwards each datagram (the sync benchmark's relay
        /// sleeps until each one is due). Unlike queueing it seldom comes near zero, so the
        /// fastest crossings lie spread over tens of µs rather than piled on a sharp floor.
        /// Exchanges recorded through the relay on this machine (42 followers of fourteen
        /// `sync --scenario impaired` runs, read by `clock-replay` from each crossing's true
        /// one-way delay) had, within 25, 50, 100 and 200 µs of each direction's fastest
        /// crossing, 57, 74, 86 and 92 % of the crossings a sharp floor under the uniform
        /// jitter gives; a 22 µs mean gives 58, 74, 87 and 92 %. (An earlier recording had
        /// about 60 % within 100 µs, which a 40 µs mean gave.)
        var wakeupLatency: Duration = .zero
        /// Probability that a datagram is lost, each way.
        var loss: Double
        /// One-way delays (ns) recorded on a real path, forward and backward: when set, each
        /// crossing's delay is drawn from these instead of the model above.
        var recorded: (forward: [Int64], backward: [Int64])? = nil
        /// When set, a relay forwards each datagram only on a tick of its timer, this far
        /// apart (a user-space relay's periodic wake-up, a Wi-Fi link's aggregation, a
        /// router's forwarding timer): a datagram arriving at a whose delay is d leaves at
        /// the first tick at or after a + d. The ticks are on the relay's clock, at a phase
        /// and a rate of their own against both ends (see `relayRate`).
        var releaseTick: Duration? = nil
    }

    /// The spread of the relay's clock rate against the follower's (uniform, either way):
    /// the relay runs on its own crystal, as in `sync` it runs on the machine's clock and
    /// each follower on one skewed from it by up to ±200 ppm. The follower's requests go
    /// out on its own clock, so their phase on the relay's ticks drifts with this rate.
    static let relayRateSpread = 200e-6

    /// The sync benchmark's relay drops this share of datagrams each way; recorded delays
    /// are of the datagrams that got through, so a path drawn from them loses as many.
    static let relayLoss = 0.1

    static let paths: [Path] = [
        Path(name: "loopback", description: "40 µs floor, 15 µs mean exponential queueing each way, no loss",
             floor: .microseconds(40), uniformJitter: .zero, exponentialJitter: .microseconds(15), loss: 0),
        Path(name: "impaired", description: "5 ms ± 2 ms (uniform) each way plus a relay thread's wake-up (gamma, shape 2, mean 22 µs), 10% loss each way: the sync benchmark's relay",
             floor: .milliseconds(3), uniformJitter: .milliseconds(2), exponentialJitter: .zero, wakeupLatency: .microseconds(22), loss: 0.1),
        Path(name: "wifi", description: "2 ms floor, 1.5 ms mean exponential queueing each way, 5% loss each way",
             floor: .milliseconds(2), uniformJitter: .zero, exponentialJitter: .microseconds(1500), loss: 0.05),
        Path(name: "ticks", description: "5 ms ± 2 ms (uniform) each way, each datagram then held for the next tick of a relay's 1 ms timer (a phase of its own per run, its clock up to ±200 ppm from the follower's), 10% loss each way",
             floor: .milliseconds(3), uniformJitter: .milliseconds(2), exponentialJitter: .zero, loss: 0.1,
             releaseTick: .milliseconds(1)),
    ]

    @Option(name: .long, help: "Simulated runs per path (each a follower with its own clock and seed).")
    var runs = 40

    @Option(name: .long, help: "Seconds simulated per run.")
    var seconds = 60

    @Option(name: .long, help: "Paths (repeatable): loopback, impaired, wifi, ticks. Default: all.")
    var path: [String] = []

    @Option(name: .customLong("ticks-path"), help: ArgumentHelp("A ticking path of your own (repeatable): BASE,JITTER,TICK in ms, a base ± uniform jitter each way, then held for the next tick of a relay's timer, 10% loss each way. Simulated instead of the named paths unless --path is also given.", valueName: "base,jitter,tick"))
    var ticksPath: [String] = []

    @Option(name: .customLong("delays-from"), help: "Work directories of `sync` runs (repeatable): simulate only a path whose one-way delays are drawn from those the runs' followers recorded (true delays, from the announced clocks), with the relay's 10% loss.")
    var delaysFrom: [String] = []

    @Option(name: .long, help: "Seed of the first run.")
    var seed: UInt64 = 1

    @Option(name: .long, help: "Append headline figures to this file (for scripts/bench.sh).")
    var summary: String?

    func validate() throws {
        guard runs >= 2 else { throw ValidationError("--runs must be at least 2 (pairs need two)") }
        guard seconds >= 5 else { throw ValidationError("--seconds must be at least 5") }
        let known = Set(Self.paths.map(\.name))
        for name in path where !known.contains(name) {
            throw ValidationError("unknown path \(name); known: \(Self.paths.map(\.name).joined(separator: ", "))")
        }
        for text in ticksPath where Self.ticking(text) == nil {
            throw ValidationError("--ticks-path \(text): expected BASE,JITTER,TICK in ms, with 0 ≤ JITTER ≤ BASE and TICK > 0")
        }
    }

    /// The path a `--ticks-path` names, or `nil` when it does not parse.
    static func ticking(_ text: String) -> Path? {
        let parts = text.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 3, let base = parts[0], let jitter = parts[1], let tick = parts[2],
              base.isFinite, jitter.isFinite, tick.isFinite, jitter >= 0, base >= jitter, tick > 0, base < 1_000, tick < 1_000 else { return nil }
        func duration(_ milliseconds: Double) -> Duration { .nanoseconds(Int64((milliseconds * 1e6).rounded())) }
        return Path(name: "ticks \(text)", description: "\(base) ms ± \(jitter) ms (uniform) each way, then held for the next tick of a relay's \(tick) ms timer, 10% loss each way",
                    floor: duration(base - jitter), uniformJitter: duration(jitter), exponentialJitter: .zero, loss: 0.1,
                    releaseTick: duration(tick))
    }

    func run() throws {
        var chosen = path.isEmpty ? (ticksPath.isEmpty ? Self.paths : []) : Self.paths.filter { path.contains($0.name) }
        chosen += ticksPath.compactMap(Self.ticking)
        if !delaysFrom.isEmpty {
            let delays = try ClockReplay.oneWayDelays(directories: delaysFrom)
            guard !delays.forward.isEmpty, !delays.backward.isEmpty else { throw BenchError("no exchanges recorded in \(delaysFrom.joined(separator: ", "))") }
            chosen = [Path(name: "recorded", description: "one-way delays drawn from \(delays.forward.count) forward and \(delays.backward.count) backward crossings recorded in \(delaysFrom.count) sync run(s), each drawn on its own (their order in time is not kept), \(Int(Self.relayLoss * 100))% loss each way",
                           floor: .zero, uniformJitter: .zero, exponentialJitter: .zero, loss: Self.relayLoss, recorded: delays)]
        }
        let sink = SummaryFile(path: summary)
        var table = Table(
            title: "clock: estimate error against the leader's true time, \(runs) simulated followers × \(seconds) s per path (µs)",
            command: "chorus-bench clock --runs \(runs) --seconds \(seconds) --seed \(seed)"
                + path.map { " --path \($0)" }.joined() + ticksPath.map { " --ticks-path \($0)" }.joined() + delaysFrom.map { " --delays-from \($0)" }.joined(),
            header: ["path", "exchanges/s", "join s median", "join s max", "never", "start s max", "max 1 s from start",
                     "p99 1–2 s", "p99 2–10 s", "p99 10 s on",
                     "median 2 s on", "signed median 2 s on", "worst bias 10 s on", "max 2 s on", "pair p99 2 s on", "pair max", "beyond 3σ % to 2 s", "beyond 3σ %"])
        let probesPerSecond = Int(1_000_000_000 / Self.probeInterval.nanosecondCount)
        for path in chosen {
            var errors: [[Double]] = []
            var joins: [Double] = []
            var never = 0
            var exchanges = 0
            var judged = 0, overconfident = 0
            var judgedEarly = 0, overconfidentEarly = 0
            var starts: [Double] = []
            var startErrors: [Double] = []
            for index in 0..<runs {
                let result = simulate(path, seed: seed &+ UInt64(index))
                errors.append(result.errors)
                exchanges += result.exchanges
                judged += result.honesty.judged
                overconfident += result.honesty.overconfident
                judgedEarly += result.honesty.judgedEarly
                overconfidentEarly += result.honesty.overconfidentEarly
                if let join = result.join { joins.append(join) } else { never += 1 }
                if let start = result.start {
                    starts.append(Double(start) / Double(probesPerSecond))
                    let after = result.errors[start..<min(start + probesPerSecond, result.errors.count)]
                    startErrors.append(after.map(abs).max() ?? 0)
                }
            }
            /// |error| over every run's probes from `from` to `to` seconds.
            func magnitudes(from: Int, to: Int? = nil) -> Statistics {
                Statistics(errors.flatMap { run in
                    let end = min(to.map { $0 * probesPerSecond } ?? run.count, run.count)
                    return run[min(from * probesPerSecond, end)..<end].map(abs)
                })
            }
            let steadyFrom = Int(Self.steadyAfter.nanosecondCount / 1_000_000_000)
            let steady = magnitudes(from: steadyFrom)
            // A bias every follower on a path shares shows here; the magnitudes hide its sign.
            let signed = Statistics(errors.flatMap { run in run[min(steadyFrom * probesPerSecond, run.count)...] })
            // Each follower's own steady bias (its signed median from 10 s on): the largest
            // is what one room of the group would be left with.
            let biases = errors.map { run in
                Statistics(Array(run[min(Self.biasFrom * probesPerSecond, run.count)...])).median
            }
            let worstBias = biases.map(abs).max() ?? .nan
            var pairs: [Double] = []
            for index in errors.indices {
                let a = errors[index], b = errors[(index + 1) % errors.count]
                for k in (steadyFrom * probesPerSecond)..<min(a.count, b.count) { pairs.append(abs(a[k] - b[k])) }
            }
            let pair = Statistics(pairs)
            let joinStats = Statistics(joins)
            let perSecond = Double(exchanges) / Double(runs * seconds)
            func µs(_ value: Double) -> String { Format.fixed(value * 1e6, 1) }
            table.add([path.name, Format.fixed(perSecond, 1), Format.fixed(joinStats.median, 2), Format.fixed(joinStats.maximum, 2), "\(never)",
                       starts.count < runs ? "never (\(runs - starts.count))" : Format.fixed(Statistics(starts).maximum, 2),
                       µs(Statistics(startErrors).maximum),
                       µs(magnitudes(from: 1, to: 2).percentile(99)), µs(magnitudes(from: 2, to: 10).percentile(99)),
                       µs(magnitudes(from: 10).percentile(99)), µs(steady.median), µs(signed.median), µs(worstBias), µs(steady.maximum),
                       µs(pair.percentile(99)), µs(pair.maximum),
                       Format.fixed(100 * Double(overconfidentEarly) / Double(max(judgedEarly, 1)), 1),
                       Format.fixed(100 * Double(overconfident) / Double(max(judged, 1)), 1)])
            sink.record("clock", "\(path.name): pair p99 µs", µs(pair.percentile(99)))
            sink.record("clock", "\(path.name): slowest join s", never > 0 ? "never (\(never))" : Format.fixed(joinStats.maximum, 2))
        }
        for path in chosen { table.notes.append("\(path.name): \(path.description)") }
        table.notes.append("followers' clocks: offsets of seconds, skews uniform in ±200 ppm; error = estimated − true leader time every \(Self.probeInterval.formattedMilliseconds) ms from the first exchange")
        table.notes.append("beyond 3σ = probes from \(Self.steadyAfter.formattedSeconds) s on whose error exceeds three of the estimate's own published deviations (an honest estimate: about 0.3 %); \"to \(Self.steadyAfter.formattedSeconds) s\": the same for the converged probes before")
        table.notes.append("start = the first probe at which a follower would play (FollowerCore.canStart(on:): a converged estimate within \(Int(Double(FollowerCore.startingUncertainty.nanosecondCount) / 1e3)) µs); max 1 s from start = the largest |error| in the second after it, which a starting follower's output follows")
        table.notes.append("join = first exchange to the first moment within \(Int(Self.joinTolerance * 1e6)) µs that holds for \(Self.joinHold.formattedSeconds) s; times from the first exchange; pair = run i against run i + 1 at the same time since joining")
        table.print()
    }

    /// How often the estimate's error exceeded `honestDeviations` of its own published
    /// deviation: during the join (converged probes before `steadyAfter`) and after.
    struct Honesty {
        var judgedEarly = 0, overconfidentEarly = 0
        var judged = 0, overconfident = 0
    }

    /// One follower's run: the error at every probe, the join time, the probe at which a
    /// follower would start playing, exchanges sent, and the estimate's honesty.
    private func simulate(_ path: Path, seed: UInt64) -> (errors: [Double], join: Double?, start: Int?, exchanges: Int, honesty: Honesty) {
        var random = SeededGenerator(seed: seed)
        // The leader's clock against the follower's: leader = offset + host · (1 + skew).
        let skew = Double.random(in: -200e-6...200e-6, using: &random)
        let offset = Int64.random(in: -10_000_000_000...10_000_000_000, using: &random)
        let hostStart: Int64 = 1_000_000_000_000
        func leader(_ host: Int64) -> LeaderTime {
            LeaderTime(nanoseconds: offset + host + Int64((Double(host - hostStart) * skew).rounded()))
        }
        // The relay's ticks in follower host ns: tick k at tickPhase + k · tickPeriod. Drawn
        // only for a path with ticks, so the other paths' runs stay as they were.
        var tickPeriod = 0.0, tickPhase = 0.0
        if let tick = path.releaseTick {
            tickPeriod = Double(tick.nanosecondCount) * (1 + Double.random(in: -Self.relayRateSpread...Self.relayRateSpread, using: &random))
            tickPhase = Double.random(in: 0..<tickPeriod, using: &random)
        }
        /// The delay of a crossing that reaches the relay at host time `departure`, or `nil`
        /// when it is lost.
        func oneWay(forward: Bool, departing departure: Int64) -> Int64? {
            guard let delay = drawnDelay(forward: forward) else { return nil }
            guard path.releaseTick != nil else { return delay }
            let due = Double(departure + delay) - tickPhase
            let release = (due / tickPeriod).rounded(.up) * tickPeriod + tickPhase
            return Int64(release.rounded(.up)) - departure
        }
        func drawnDelay(forward: Bool) -> Int64? {
            if Double.random(in: 0..<1, using: &random) < path.loss { return nil }
            if let recorded = path.recorded {
                let delays = forward ? recorded.forward : recorded.backward
                return delays[Int.random(in: 0..<delays.count, using: &random)]
            }
            var delay = Double(path.floor.nanosecondCount)
            if path.uniformJitter > .zero {
                delay += Double.random(in: 0...(2 * Double(path.uniformJitter.nanosecondCount)), using: &random)
            }
            if path.exponentialJitter > .zero {
                delay += -Double(path.exponentialJitter.nanosecondCount) * log(1 - Double.random(in: 0..<1, using: &random))
            }
            if path.wakeupLatency > .zero {
                // Shape 2: the sum of two exponentials of half the mean.
                let scale = Double(path.wakeupLatency.nanosecondCount) / 2
                delay -= scale * (log(1 - Double.random(in: 0..<1, using: &random)) + log(1 - Double.random(in: 0..<1, using: &random)))
            }
            return Int64(delay.rounded())
        }

        var estimator = ClockEstimator()
        let end = hostStart + Int64(seconds) * 1_000_000_000
        let probeStep = Int64(Self.probeInterval.nanosecondCount)
        let turnaround = Int64(Self.leaderTurnaround.nanosecondCount)
        // Replies in flight: (arrival host time, sample).
        var inFlight: [(arrival: Int64, sample: ClockSample)] = []
        var nextRequest = hostStart
        var nextProbe = hostStart
        var sent = 0
        var errors: [Double] = []
        // Probes judged for honesty, and those whose error exceeded three of the estimate's
        // own published deviations: an honest estimate has almost none.
        var honesty = Honesty()
        var start: Int?
        errors.reserveCapacity(Int((end - hostStart) / probeStep) + 1)
        while true {
            let nextArrival = inFlight.map(\.arrival).min() ?? .max
            let now = min(nextRequest, nextProbe, nextArrival)
            guard now <= end else { break }
            if now == nextArrival, let index = inFlight.firstIndex(where: { $0.arrival == now }) {
                estimator.add(inFlight.remove(at: index).sample)
            } else if now == nextRequest {
                sent += 1
                // The reply reaches the relay as the leader sends it.
                if let forward = oneWay(forward: true, departing: now),
                   let backward = oneWay(forward: false, departing: now + forward + turnaround) {
                    let t2 = leader(now + forward)
                    let t3 = t2 + .nanoseconds(turnaround)
                    // The reply leaves at host time now + forward + turnaround (near enough:
                    // the turnaround is µs and the skew ppm).
                    let arrival = now + forward + turnaround + backward
                    inFlight.append((arrival, ClockSample(t1: HostTime(nanoseconds: now), t2: t2, t3: t3,
                                                          t4: HostTime(nanoseconds: arrival))))
                }
                nextRequest = now + Int64(ClockEstimator.dithered(estimator.nextPollInterval(requestsSent: sent), requestsSent: sent).nanosecondCount)
            } else {
                if let estimate = estimator.estimate {
                    let estimated = estimate.leaderTime(atHost: HostTime(nanoseconds: now))
                    let error = Double(estimated.nanoseconds - leader(now).nanoseconds) / 1e9
                    if start == nil, FollowerCore.canStart(on: estimate) {
                        start = errors.count
                    }
                    errors.append(error)
                    let deviation = Double(estimate.uncertainty.nanosecondCount) / 1e9
                    let beyond = abs(error) > Self.honestDeviations * deviation
                    if now - hostStart >= Int64(Self.steadyAfter.nanosecondCount) {
                        honesty.judged += 1
                        if beyond { honesty.overconfident += 1 }
                    } else if estimate.converged {
                        honesty.judgedEarly += 1
                        if beyond { honesty.overconfidentEarly += 1 }
                    }
                } else {
                    errors.append(.infinity)
                }
                nextProbe = now + probeStep
            }
        }
        // Join: the first probe from which the error stays within tolerance for the hold.
        let hold = Int(Self.joinHold.nanosecondCount / Self.probeInterval.nanosecondCount)
        var join: Double?
        var run = 0
        for (index, error) in errors.enumerated() {
            run = abs(error) <= Self.joinTolerance ? run + 1 : 0
            if run > hold {
                join = Double(index - hold) * Double(probeStep) / 1e9
                break
            }
        }
        return (errors, join, start, sent, honesty)
    }
}

private extension Duration {
    var formattedMilliseconds: String { Format.fixed(Double(nanosecondCount) / 1e6, 0) }
    var formattedSeconds: String { Format.fixed(Double(nanosecondCount) / 1e9, 0) }
    var nanosecondCount: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
