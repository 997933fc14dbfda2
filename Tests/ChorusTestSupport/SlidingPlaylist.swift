import Foundation

/// A live HLS playlist over a finished presentation's segments, as a live encoder writes
/// one: a window of `window` segments, each listed as a second long, moved on by one every
/// `step` until stopped or the segments run out.
public final class SlidingPlaylist: @unchecked Sendable {
    // @unchecked: `stopped` is behind `lock`; everything else is set once in `init`.
    /// The playlist file, rewritten whole (atomically) at each move.
    public let playlist: URL
    private let segments: [String]
    private let window: Int
    /// The segment a splice comes before (an `EXT-X-DISCONTINUITY` is listed before it).
    private let discontinuityBefore: String?
    private let lock = NSLock()
    private var stopped = false

    /// Writes the first window to `name` in `folder` (beside the segments) and starts moving
    /// it. With `discontinuityBefore`, that segment is listed after an `EXT-X-DISCONTINUITY`.
    public init(segments: [String], in folder: URL, name: String, window: Int, step: Duration = .seconds(1),
                discontinuityBefore: String? = nil) throws {
        playlist = folder.appendingPathComponent(name)
        self.segments = segments
        self.window = window
        self.discontinuityBefore = discontinuityBefore
        try write(from: 0)
        let microseconds = UInt32(step.components.seconds * 1_000_000 + step.components.attoseconds / 1_000_000_000_000)
        Thread { [self] in
            var first = 0
            while !isStopped, first + window < segments.count {
                usleep(microseconds)
                first += 1
                try? write(from: first)
            }
        }.start()
    }

    deinit { stop() }

    /// Stops moving the window.
    public func stop() { lock.withLock { stopped = true } }

    private var isStopped: Bool { lock.withLock { stopped } }

    private func write(from first: Int) throws {
        var text = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:\(first)\n"
        for name in segments[first..<min(first + window, segments.count)] {
            if name == discontinuityBefore { text += "#EXT-X-DISCONTINUITY\n" }
            text += "#EXTINF:1.0,\n\(name)\n"
        }
        try text.write(to: playlist, atomically: true, encoding: .utf8)
    }
}
