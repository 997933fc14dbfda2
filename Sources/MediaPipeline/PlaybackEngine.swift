import Foundation
import MediaClock
import Synchronization

/// One player's audio path: an output opened once, a ring, the render thread, and the
/// reader of the current item.
///
/// Contract: methods may be called from any thread but are meant to be driven by one owner
/// (the player) that serialises them; the engine guards its own fields with a lock that
/// the render thread never touches.
public final class PlaybackEngine: @unchecked Sendable {
    /// Decoded audio held ahead of the device: two seconds absorbs a slow network read or a
    /// busy core without a stall, and is what a seek throws away at most.
    public static let readAhead: Duration = .seconds(2)

    public let spec: OutputSpec
    /// Maps the device's real host times onto the player's host clock.
    private let hostMapping: @Sendable (HostTime) -> HostTime
    /// Where the render thread records presentation times, when asked.
    public let capture: RenderCapture?
    private let lock = NSLock()
    private var output: (any AudioOutput)?
    private var renderer: AudioRenderer?
    private var reader: AudioReader?
    private var readerError: MediaError?

    /// An engine for `spec`. `hostMapping` converts the real CLOCK_MONOTONIC times devices
    /// report into the host clock the player uses (identity, unless the process simulates
    /// another machine's clock); `capture` records every period's presentation time.
    public init(spec: OutputSpec, hostMapping: @escaping @Sendable (HostTime) -> HostTime = { $0 },
                capture: RenderCapture? = nil) {
        self.spec = spec
        self.hostMapping = hostMapping
        self.capture = capture
    }

    deinit { shutdown() }

    /// The output's format, once open.
    public var format: AudioFormat? { lock.withLock { output?.format } }
    /// The output's name, once open.
    public var outputName: String { lock.withLock { output?.name } ?? spec.description }
    /// Whether frames are heard in real time (false when rendering to a file).
    public var isRealtime: Bool { lock.withLock { output?.isRealtime } ?? true }
    /// Device underruns recovered so far.
    public var underrunCount: Int { lock.withLock { output?.underrunCount } ?? 0 }

    /// Opens the output on first use (in `preferred` format, or as near as the device
    /// allows) and starts the render thread. Later calls return the open format.
    @discardableResult
    public func prepare(preferred: AudioFormat) throws(MediaError) -> AudioFormat {
        lock.lock()
        defer { lock.unlock() }
        if let output { return output.format }
        let candidate = spec.makeOutput()
        try candidate.open(preferred: preferred)
        let ring = AudioRing(format: candidate.format, capacity: Self.readAhead)
        let renderer = AudioRenderer(output: candidate, ring: ring, hostMapping: hostMapping, capture: capture)
        output = candidate
        self.renderer = renderer
        renderer.start()
        return candidate.format
    }

    /// Starts reading `source` into the ring under `serial` from item frame `startFrame`,
    /// replacing any previous reader. The render thread stays idle until told to play.
    public func load(source: MediaSource, serial: Int, startFrame: Int64,
                     onEvent: @escaping @Sendable (AudioReaderEvent) -> Void) throws(MediaError) {
        unload()
        let ring: AudioRing? = lock.withLock { renderer?.ring }
        guard let ring else { throw .outputFailure(device: spec.description, reason: "output not open") }
        source.resetInterrupt()
        lock.withLock { readerError = nil }
        let newReader = try AudioReader(source: source, ring: ring, serial: serial, startFrame: startFrame) { [weak self] event in
            if case .failed(_, _, let error) = event { self?.lock.withLock { self?.readerError = error } }
            onEvent(event)
        }
        lock.withLock { reader = newReader }
        newReader.start()
    }

    /// Stops the current reader; its blocks become stale at the next serial.
    public func unload() {
        let old: AudioReader? = lock.withLock { defer { reader = nil }; return reader }
        old?.stop()
    }

    /// Moves the current reader to item frame `frame` under a new `serial`.
    public func seek(toFrame frame: Int64, serial: Int) {
        lock.withLock { reader }?.seek(toFrame: frame, serial: serial)
    }

    /// Changes what the render thread does.
    public func render(_ change: (inout RenderControl) -> Void) {
        lock.withLock { renderer }?.update(change)
    }

    /// Frames decoded and waiting in the ring.
    public var queuedFrames: Int {
        lock.withLock { renderer }.map { $0.ring.queuedBlocks * AudioRing.framesPerBlock } ?? 0
    }

    /// The error the current reader stopped on, if it failed.
    public var lastReaderError: MediaError? { lock.withLock { readerError } }

    /// The control last posted to the render thread.
    public var currentControl: RenderControl? { lock.withLock { renderer }?.currentControl }

    /// The render thread's latest report.
    public var status: RenderStatus { lock.withLock { renderer }?.currentStatus ?? RenderStatus() }

    /// Stops reading and rendering and closes the output.
    public func shutdown() {
        unload()
        let (oldRenderer, oldOutput): (AudioRenderer?, (any AudioOutput)?) = lock.withLock {
            defer { renderer = nil; output = nil }
            return (renderer, output)
        }
        oldRenderer?.stop()
        oldOutput?.close()
        capture?.close()
    }
}
