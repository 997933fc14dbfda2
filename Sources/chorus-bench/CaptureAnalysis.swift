import Foundation
import MediaPipeline

/// A render capture written by `chorus ... --capture PATH` (the format `RenderCapture`
/// writes and `RenderCaptureLog` reads): one line per rendered period, where the host time
/// is the real CLOCK_MONOTONIC time the period's first frame is heard. Captures of
/// processes on one machine share that clock, so the same item position's presentation
/// times compare directly across them.
struct RenderCaptureFile {
    typealias Period = RenderCaptureLog.Period

    let periods: [Period]

    init(path: String) throws {
        guard let log = try? RenderCaptureLog(path: path) else {
            throw BenchError("cannot read the capture \(path)")
        }
        periods = log.periods.filter { $0.frames > 0 && $0.sampleRate > 0 }
    }

    /// Whether period `index + 1` continues period `index`: same serial, content moved on by
    /// about one period's worth at its speed (a soft correction changes it by ppm; a seek or
    /// hard resync by far more), and the device's clock too (an underrun restarts it later).
    func continues(_ index: Int) -> Bool {
        guard index + 1 < periods.count else { return false }
        let a = periods[index], b = periods[index + 1]
        let advance = b.position - a.position
        let hostAdvance = Double(b.host - a.host) * Double(a.sampleRate) / 1e9
        let expected = Double(a.frames) * a.playbackRate
        return a.serial == b.serial && advance > 0 && abs(advance - expected) < 0.01 * expected
            && abs(hostAdvance - Double(a.frames)) < 0.2 * Double(a.frames)
    }

    /// Host time (ns) at which item position `position` was heard, looking only at periods
    /// heard within `window` ns of `near` (the same position may play again after a seek).
    /// Interpolated between two continuous periods; nil when no such pair holds it.
    func host(of position: Double, near: Int64, window: Int64) -> Double? {
        var lo = 0, hi = periods.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if periods[mid].host < near - window { lo = mid + 1 } else { hi = mid }
        }
        var index = lo
        while index + 1 < periods.count, periods[index].host <= near + window {
            let a = periods[index], b = periods[index + 1]
            if a.position <= position, position < b.position, continues(index) {
                let fraction = (position - a.position) / (b.position - a.position)
                return Double(a.host) + fraction * Double(b.host - a.host)
            }
            index += 1
        }
        return nil
    }

    /// Reference points: (host, position) of each period that is continued by the next and
    /// is not the first of its run (whose start may be lead-in silence).
    var referencePoints: [(host: Int64, position: Double)] {
        var points: [(Int64, Double)] = []
        for index in periods.indices.dropFirst() where continues(index) && continues(index - 1) {
            points.append((periods[index].host, periods[index].position))
        }
        return points
    }
}

/// The offsets of several followers against a leader, at the leader's periods.
struct SyncAnalysis {
    /// How far apart in host time the same position may be and still be taken as the same
    /// playing of it (positions repeat after a backward seek, seconds later).
    static let matchWindow: Int64 = 500_000_000
    /// "In sync": within this of the leader.
    static let tolerance = 100e-6
    /// ... and staying within it this long.
    static let holdTime = 1.0
    /// A hole in the samples longer than this breaks a hold (a pause, a missing stretch).
    static let maximumGap = 0.1

    let hosts: [Int64]
    /// offsets[f][k]: follower f's presentation of the leader's sample k minus the leader's, in seconds.
    let offsets: [[Double?]]

    init(leader: RenderCaptureFile, followers: [RenderCaptureFile]) {
        let points = leader.referencePoints
        hosts = points.map(\.host)
        offsets = followers.map { follower in
            points.map { point in
                follower.host(of: point.position, near: point.host, window: Self.matchWindow)
                    .map { ($0 - Double(point.host)) / 1e9 }
            }
        }
    }

    /// The first host time from which follower `f` stays within `tolerance` of the leader
    /// for `holdTime`, with no hole longer than `maximumGap`; nil if never.
    func convergence(of f: Int, notBefore start: Int64) -> Int64? {
        let series = offsets[f]
        var k = 0
        while k < hosts.count {
            guard hosts[k] >= start, let first = series[k], abs(first) <= Self.tolerance else { k += 1; continue }
            var j = k
            var lastHost = hosts[k]
            var ok = true
            while j + 1 < hosts.count, Double(hosts[j + 1] - hosts[k]) / 1e9 <= Self.holdTime {
                j += 1
                guard let value = series[j] else { continue }
                if abs(value) > Self.tolerance || Double(hosts[j] - lastHost) / 1e9 > Self.maximumGap { ok = false; break }
                lastHost = hosts[j]
            }
            if ok, Double(lastHost - hosts[k]) / 1e9 >= Self.holdTime - Self.maximumGap { return hosts[k] }
            k = ok ? k + 1 : j + 1
        }
        return nil
    }

    /// Writes every follower's offset to the leader as CSV, a row per leader reference point:
    /// seconds since the first follower's launch, then one column of µs per follower (empty
    /// where it played nothing), so that an excursion can be found and plotted.
    func writeSeries(to path: String, names: [String], launches: [Int64]) throws {
        let origin = launches.min() ?? hosts.first ?? 0
        var text = "seconds," + names.map { "\($0) µs" }.joined(separator: ",") + "\n"
        for (k, host) in hosts.enumerated() {
            text += Format.fixed(Double(host - origin) / 1e9, 3)
            for series in offsets {
                text += "," + (series[k].map { Format.fixed($0 * 1e6, 1) } ?? "")
            }
            text += "\n"
        }
        do {
            try text.write(toFile: path, atomically: true, encoding: .utf8)
        } catch {
            throw BenchError("cannot write \(path): \(error)")
        }
    }

    /// Follower f's offsets (seconds) at samples from host `from` on.
    func offsets(of f: Int, from: Int64) -> [Double] {
        zip(hosts, offsets[f]).compactMap { host, value in host >= from ? value : nil }
    }

    /// Followers f minus g (seconds) at samples from host `from` on, where both played.
    func offsets(of f: Int, minus g: Int, from: Int64) -> [Double] {
        hosts.indices.compactMap { k in
            guard hosts[k] >= from, let a = offsets[f][k], let b = offsets[g][k] else { return nil }
            return a - b
        }
    }
}

/// A cumulative count a follower reported after host time `from`, from its `--stats` lines
/// ("... resyncs N ...", "... underruns N ..."; `key` is the word before the number). Hard
/// resyncs start again from 0 when the follower takes a new timeline (a seek, a pause and
/// play), so a fall of N counts as a restart.
func reportedCount(_ key: String, in lines: [NodeProcess.Line], after from: Int64) -> (count: Int, reports: Int) {
    var previous: Int?
    var count = 0
    var reports = 0
    for line in lines {
        guard let range = line.text.range(of: " \(key) ") else { continue }
        guard let value = Int(line.text[range.upperBound...].prefix { $0.isNumber }) else { continue }
        if line.host.nanoseconds >= from {
            reports += 1
            let before = previous ?? 0
            count += value >= before ? value - before : value
        }
        previous = value
    }
    return (count, reports)
}
