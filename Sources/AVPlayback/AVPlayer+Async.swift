import Foundation
import MediaClock

extension AVPlayer {
    /// Seeks to `time` exactly; true when the seek finished, false when a later seek (or an
    /// item change) superseded it.
    @discardableResult
    public func seek(to time: CMTime) async -> Bool {
        await withCheckedContinuation { continuation in
            seek(to: time, toleranceBefore: .zero, toleranceAfter: .zero) { continuation.resume(returning: $0) }
        }
    }

    /// Seeks to a time within `[time - toleranceBefore, time + toleranceAfter]`; true when
    /// the seek finished.
    @discardableResult
    public func seek(to time: CMTime, toleranceBefore: CMTime, toleranceAfter: CMTime) async -> Bool {
        await withCheckedContinuation { continuation in
            seek(to: time, toleranceBefore: toleranceBefore, toleranceAfter: toleranceAfter) { continuation.resume(returning: $0) }
        }
    }

    /// Seeks to the moment `date` of the current item, an HLS stream whose playlist dates its
    /// segments (`EXT-X-PROGRAM-DATE-TIME`); false when it has no such date or the seek was
    /// interrupted.
    @discardableResult
    public func seek(to date: Date) async -> Bool {
        await withCheckedContinuation { continuation in
            seek(to: date) { continuation.resume(returning: $0) }
        }
    }

    /// Loads data at the current time so that `play` starts without delay; true once it is
    /// there, false when the player is not paused and ready or the preroll was cancelled.
    @discardableResult
    public func preroll(atRate rate: Float) async -> Bool {
        await withCheckedContinuation { continuation in
            preroll(atRate: rate) { continuation.resume(returning: $0) }
        }
    }
}

extension AVPlayerItem {
    /// Seeks the item's time to `time` exactly; true when the seek finished.
    @discardableResult
    public func seek(to time: CMTime) async -> Bool {
        await withCheckedContinuation { continuation in
            seek(to: time) { continuation.resume(returning: $0) }
        }
    }

    /// Seeks the item's time to within `[time - toleranceBefore, time + toleranceAfter]`;
    /// true when the seek finished, false when a later one superseded it.
    @discardableResult
    public func seek(to time: CMTime, toleranceBefore: CMTime, toleranceAfter: CMTime) async -> Bool {
        await withCheckedContinuation { continuation in
            seek(to: time, toleranceBefore: toleranceBefore, toleranceAfter: toleranceAfter) { continuation.resume(returning: $0) }
        }
    }
}

/// Times and ranges in `NSValue`s, as Apple's boundary observers and collections take them.
/// Swift on Linux has no Objective-C structs in values: a time is kept as its four fields.
extension NSValue {
    /// The layout a time is kept in: value, timescale, flags and epoch, each 64 bits.
    private static let timeLayout = "[4q]"
    /// Two times (start, duration) in the same layout.
    private static let timeRangeLayout = "[8q]"

    /// A value holding `time`.
    public convenience init(time: CMTime) {
        var fields: (Int64, Int64, Int64, Int64) = (time.value, Int64(time.timescale), Int64(time.flags.rawValue), time.epoch)
        self.init(bytes: &fields, objCType: NSValue.timeLayout)
    }

    /// The time the value holds; `.invalid` when it holds none.
    public var timeValue: CMTime {
        guard String(cString: objCType) == NSValue.timeLayout else { return .invalid }
        var fields: (Int64, Int64, Int64, Int64) = (0, 0, 0, 0)
        getValue(&fields)
        return NSValue.time(fields)
    }

    /// A value holding `timeRange`.
    public convenience init(timeRange: CMTimeRange) {
        let start = timeRange.start, duration = timeRange.duration
        var fields: (Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64) = (
            start.value, Int64(start.timescale), Int64(start.flags.rawValue), start.epoch,
            duration.value, Int64(duration.timescale), Int64(duration.flags.rawValue), duration.epoch)
        self.init(bytes: &fields, objCType: NSValue.timeRangeLayout)
    }

    /// The time range the value holds; `.invalid` when it holds none.
    public var timeRangeValue: CMTimeRange {
        guard String(cString: objCType) == NSValue.timeRangeLayout else { return .invalid }
        var fields: (Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64) = (0, 0, 0, 0, 0, 0, 0, 0)
        getValue(&fields)
        return CMTimeRange(start: NSValue.time((fields.0, fields.1, fields.2, fields.3)),
                           duration: NSValue.time((fields.4, fields.5, fields.6, fields.7)))
    }

    /// Two ranges (source, target) in the same layout.
    private static let timeMappingLayout = "[16q]"

    /// A value holding `timeMapping`.
    public convenience init(timeMapping: CMTimeMapping) {
        var fields = [Int64]()
        for time in [timeMapping.source.start, timeMapping.source.duration, timeMapping.target.start, timeMapping.target.duration] {
            fields += [time.value, Int64(time.timescale), Int64(time.flags.rawValue), time.epoch]
        }
        self.init(bytes: fields, objCType: NSValue.timeMappingLayout)
    }

    /// The time mapping the value holds; `.invalid` when it holds none.
    public var timeMappingValue: CMTimeMapping {
        guard String(cString: objCType) == NSValue.timeMappingLayout else { return .invalid }
        var fields = [Int64](repeating: 0, count: 16)
        fields.withUnsafeMutableBytes { if let base = $0.baseAddress { getValue(base) } }
        func time(_ at: Int) -> CMTime { NSValue.time((fields[at], fields[at + 1], fields[at + 2], fields[at + 3])) }
        return CMTimeMapping(source: CMTimeRange(start: time(0), duration: time(4)),
                             target: CMTimeRange(start: time(8), duration: time(12)))
    }

    private static func time(_ fields: (Int64, Int64, Int64, Int64)) -> CMTime {
        guard let timescale = Int32(exactly: fields.1), let flags = UInt32(exactly: fields.2) else { return .invalid }
        return CMTime(value: fields.0, timescale: timescale, flags: CMTimeFlags(rawValue: flags), epoch: fields.3)
    }
}
