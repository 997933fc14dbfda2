import Foundation
import MediaClock

/// A node's simulated clock as it announced it (`simulated clock: offset … ns, skew … ppm,
/// pivot … ns of CLOCK_MONOTONIC`): the exact map from the machine's clock to the node's.
struct AnnouncedClock {
    var offset: Double
    var skewPPM: Double
    var pivot: Double

    /// The machine's own clock, for a node that announced none.
    static let machine = AnnouncedClock(offset: 0, skewPPM: 0, pivot: 0)

    /// The announcement among a node's standard-error lines, if any.
    init?(lines: [NodeProcess.Line]) {
        guard let line = lines.first(where: { $0.text.contains("simulated clock: offset ") }) else { return nil }
        let numbers = line.text.split(whereSeparator: { $0 == " " || $0 == "," }).compactMap { Double($0) }
        guard numbers.count >= 3 else { return nil }
        self.init(offset: numbers[0], skewPPM: numbers[1], pivot: numbers[2])
    }

    /// The announcement in a node's saved standard error, if any.
    init?(text: String) {
        self.init(lines: text.split(separator: "\n").map { NodeProcess.Line(host: HostTime(nanoseconds: 0), text: String($0)) })
    }

    init(offset: Double, skewPPM: Double, pivot: Double) {
        self.offset = offset
        self.skewPPM = skewPPM
        self.pivot = pivot
    }

    /// The node's reading at machine time `machine` (ns).
    func node(atMachine machine: Double) -> Double {
        pivot + offset + (machine - pivot) * (1 + skewPPM / 1e6)
    }

    /// The machine time (ns) at which the node reads `node`.
    func machine(atNode node: Double) -> Double {
        pivot + (node - pivot - offset) / (1 + skewPPM / 1e6)
    }
}

/// A follower's `--clock-log` against the truth: each estimate's error, the machine time
/// it was made at, and its own published deviation.
struct ClockLogAnalysis {
    /// Machine time (ns) of each row's reply, its estimate's error (s), and the
    /// estimate's published deviation (s).
    var rows: [(machine: Double, error: Double, deviation: Double)] = []

    init(path: String, follower: AnnouncedClock, leader: AnnouncedClock) throws {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: ",")
            guard fields.count >= 6, let t4 = Double(fields[3]), let estimate = Double(fields[4]),
                  let deviation = Double(fields[5]) else { continue }
            // A double holds readings up to 2^53 ns (104 days of uptime) exactly.
            let machine = follower.machine(atNode: t4)
            let truth = leader.node(atMachine: machine)
            rows.append((machine, (estimate - truth) / 1e9, deviation / 1e9))
        }
    }

    /// The first machine time (ns) from which the error stays within `tolerance` (s) for
    /// `hold` (s), or nil.
    func join(tolerance: Double, hold: Double) -> Double? {
        var start: Double?
        for row in rows {
            if abs(row.error) <= tolerance {
                let first = start ?? row.machine
                start = first
                if row.machine - first >= hold * 1e9 { return first }
            } else {
                start = nil
            }
        }
        return nil
    }
}
