import Foundation

/// A render capture read back from the file `RenderCapture` writes: when each period's first
/// frame was heard (real CLOCK_MONOTONIC nanoseconds) and which item position it held; and
/// the comparison of two captures.
public struct RenderCaptureLog: Sendable {
    /// One rendered period.
    public struct Period: Sendable {
        public var host: Int64
        public var position: Double
        public var frames: Int
        public var sampleRate: Int
        public var serial: Int
        /// Item frames played per frame heard (1 at normal speed, and in older captures).
        public var playbackRate: Double = 1
    }
    /// One picture a display presented.
    public struct Picture: Sendable, Equatable {
        /// When it was presented (real CLOCK_MONOTONIC nanoseconds).
        public var host: Int64
        /// When it was due, in item time (nanoseconds).
        public var itemNanoseconds: Int64
        /// Its number in the order its reader produced it.
        public var number: Int64
        public var serial: Int
    }
    /// Every period, in order.
    public var periods: [Period]
    /// Every picture presented, in order.
    public var pictures: [Picture] = []

    /// A capture of `periods` and `pictures`.
    public init(periods: [Period], pictures: [Picture] = []) {
        self.periods = periods
        self.pictures = pictures
    }

    /// Only the periods of the serial that was playing at host time `host` (nanoseconds):
    /// one item, or one stretch between seeks.
    public func run(at host: Int64) -> RenderCaptureLog {
        guard let serial = periods.last(where: { $0.host <= host })?.serial else { return RenderCaptureLog(periods: []) }
        return RenderCaptureLog(periods: periods.filter { $0.serial == serial })
    }

    /// Reads the capture at `path`; malformed lines are skipped.
    public init(path: String) throws {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        pictures = text.split(separator: "\n").compactMap { line in
            let f = line.split(separator: " ")
            guard f.count == 5, f[0] == "V", let host = Int64(f[1]), let item = Int64(f[2]), let number = Int64(f[3]),
                  let serial = Int(f[4]) else { return nil }
            return Picture(host: host, itemNanoseconds: item, number: number, serial: serial)
        }
        periods = text.split(separator: "\n").compactMap { line in
            let f = line.split(separator: " ")
            guard (5...7).contains(f.count), let host = Int64(f[0]), let position = Double(f[1]), let frames = Int(f[2]),
                  let rate = Int(f[3]), let serial = Int(f[4]) else { return nil }
            let playbackRate = f.count == 7 ? Double(f[6]) ?? 1 : 1
            return Period(host: host, position: position, frames: frames, sampleRate: rate, serial: serial,
                          playbackRate: playbackRate.isFinite && playbackRate > 0 ? playbackRate : 1)
        }
    }

    /// The periods of the newest serial (the current item and seek).
    public var lastRun: [Period] {
        guard let serial = periods.last?.serial else { return [] }
        return periods.filter { $0.serial == serial }
    }

    /// When item position `position` was heard, interpolated between periods of `run`.
    public static func host(of position: Double, in run: [Period]) -> Double? {
        guard let after = run.firstIndex(where: { $0.position >= position }), after > 0 else { return nil }
        let a = run[after - 1], b = run[after]
        guard b.position > a.position else { return nil }
        let fraction = (position - a.position) / (b.position - a.position)
        return Double(a.host) + fraction * Double(b.host - a.host)
    }

    /// Offsets (seconds) between this capture's and `reference`'s presentation of the same
    /// positions, sampled every `step` frames over their common span after `skip` frames.
    public func offsets(against reference: RenderCaptureLog, skip: Double, step: Double = 480) -> [Double] {
        let mine = lastRun, theirs = reference.lastRun
        guard let lo1 = mine.first?.position, let hi1 = mine.last?.position,
              let lo2 = theirs.first?.position, let hi2 = theirs.last?.position else { return [] }
        let lo = max(lo1, lo2) + skip, hi = min(hi1, hi2) - step
        guard hi > lo else { return [] }
        var result: [Double] = []
        var position = lo
        while position < hi {
            if let a = Self.host(of: position, in: mine), let b = Self.host(of: position, in: theirs) {
                result.append((a - b) / 1e9)
            }
            position += step
        }
        return result
    }
}

extension RenderCaptureLog {
    /// For each picture presented after `skip` nanoseconds of item time, how late it reached
    /// the display against when its sound was heard (seconds; negative: the picture early):
    /// the picture's presentation minus the moment the audio periods put its item time at.
    /// Each picture is compared with the sound of its own serial (the same item and seek).
    public func pictureToSound(skip: Int64) -> [Double] {
        let runs = Dictionary(grouping: periods, by: \.serial)
        return pictures.compactMap { picture in
            guard picture.itemNanoseconds >= skip, let run = runs[picture.serial], let rate = run.first?.sampleRate else { return nil }
            let position = Double(picture.itemNanoseconds) * Double(rate) / 1e9
            return Self.host(of: position, in: run).map { (Double(picture.host) - $0) / 1e9 }
        }
    }

    /// For each picture both captures presented (by item time, after `skip` nanoseconds),
    /// how much later this one presented it than `reference` (seconds): 0 for the same
    /// picture at the same refresh.
    public func pictureOffsets(against reference: RenderCaptureLog, skip: Int64) -> [Double] {
        var theirs: [Int64: Int64] = [:]
        for picture in reference.pictures where picture.itemNanoseconds >= skip {
            if theirs[picture.itemNanoseconds] == nil { theirs[picture.itemNanoseconds] = picture.host }
        }
        var seen = Set<Int64>()
        return pictures.compactMap { picture in
            guard picture.itemNanoseconds >= skip, seen.insert(picture.itemNanoseconds).inserted,
                  let other = theirs[picture.itemNanoseconds] else { return nil }
            return Double(picture.host - other) / 1e9
        }
    }

    /// The share of pictures of `reference` (after `skip`) this capture presented at the
    /// same refresh: within `tolerance` nanoseconds (half a refresh, say).
    public func samePictureShare(against reference: RenderCaptureLog, skip: Int64, tolerance: Int64) -> Double? {
        let offsets = pictureOffsets(against: reference, skip: skip)
        let total = reference.pictures.filter { $0.itemNanoseconds >= skip }.count
        guard total > 0 else { return nil }
        return Double(offsets.filter { abs($0) * 1e9 <= Double(tolerance) }.count) / Double(total)
    }
}

extension RenderCaptureLog {
    /// How two captures agree: offsets of the same item positions, in seconds.
    public struct Agreement: Sendable {
        public var count: Int
        public var median: Double
        public var p99: Double
        public var maximum: Double
        public var mean: Double

        /// Summarises `offsets` (signed seconds) by their magnitudes; nil when empty.
        public init?(offsets: [Double]) {
            guard !offsets.isEmpty else { return nil }
            let magnitudes = offsets.map(abs).sorted()
            count = magnitudes.count
            median = magnitudes[magnitudes.count / 2]
            p99 = magnitudes[min(magnitudes.count - 1, Int((Double(magnitudes.count) * 0.99).rounded(.down)))]
            maximum = magnitudes[magnitudes.count - 1]
            mean = offsets.reduce(0, +) / Double(offsets.count)
        }
    }
}
