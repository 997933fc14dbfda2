import Glibc
import MediaClock

/// Where the render thread sends PCM, and the authority on when each frame is heard.
///
/// Contract:
/// - `open` and `close` are called from an ordinary thread, before the render thread starts
///   and after it stops. Everything else is called only from the render thread, which is
///   real-time: implementations must not allocate, log, or wait on a lock another thread
///   may hold.
/// - `write` must not start playback early or late: the device starts consuming when its
///   buffer first holds data, and `presentationTimestamp()` accounts for that.
/// - `presentationTimestamp()` says when the next frame handed to `write` will leave the
///   device as a device says it: a moment on the host clock and the frames the device holds
///   ahead of that frame then (every frame queued in the driver, the sound server and the
///   hardware). It does not turn those frames into time: they play at the device's actual
///   rate, which only the caller learns (`DeviceTimingFilter`), and a sound server's 100 ms
///   converted at the nominal rate instead is 10 µs off for every 100 ppm the device is off.
/// - An underrun is recovered inside `write` and counted; it never surfaces as an error.
/// - A stream that stops taking frames may be given up and replaced by a fresh one, counted
///   in `streamRestartCount`. The replacing happens off the render thread: meanwhile
///   `waitUntilWritable` returns 0 within its timeout, and the caller places its content
///   afresh once the new stream takes frames, as after an underrun.
public protocol AudioOutput: AnyObject, Sendable {
    /// A short name for status lines: "alsa:default", "null", "wav:out.wav".
    var name: String { get }
    /// The format the device was opened with (valid after `open`).
    var format: AudioFormat { get }
    /// Frames the render thread writes at a time.
    var periodFrames: Int { get }
    /// False for outputs that render as fast as possible (a file): their presentation
    /// times are virtual, counted from `open` at the nominal rate.
    var isRealtime: Bool { get }
    /// Whether the render thread should run at real-time priority
    /// (`RealtimeScheduling.renderPriority`): true for a device whose deadline is the
    /// render thread's own (a card), false where a sound server's ordinary threads must run
    /// for the stream to play. Read once, after `open`, as the render thread starts.
    var wantsRealtimePriority: Bool { get }
    /// Underruns recovered so far.
    var underrunCount: Int { get }
    /// Streams given up so far because they stopped taking frames, each replaced by a fresh
    /// one (the frames queued in it were lost). Kept apart from underruns: the device did not
    /// run dry, its stream died. Any thread.
    var streamRestartCount: Int { get }
    /// How often the source of `presentationTimestamp()` changed (a sound server's own
    /// figures in place of the device's reports, or back): each change may move the
    /// reported timeline, as an underrun does, so the smoothed line restarts.
    var timingSourceChanges: Int { get }
    /// False while the device's timing is about to come from a better source than now (a
    /// sound server's own figures, not yet read): a start placed by a schedule waits for it
    /// rather than start on timing that is about to move by milliseconds.
    var isTimingSettled: Bool { get }

    /// Frames the render thread may write at a time when no schedule needs the device's
    /// timing every period (plain play): fewer, larger writes cost fewer wake-ups.
    var relaxedWriteFrames: Int { get }
    /// Whether the device's timing is needed every period (a schedule, a followed timeline,
    /// a capture) or only now and then (plain play), so a device that measures its timing
    /// at a cost may measure less often. Render thread only.
    func setTimingPrecision(_ precision: TimingPrecision)

    /// Opens the device, as close to `preferred` as it allows.
    func open(preferred: AudioFormat) throws(MediaError)
    /// Blocks until at least `frames` can be written (at least one period, at most the
    /// buffer), or `timeout` passes. Returns the frames writable now.
    func waitUntilWritable(frames: Int, timeout: Duration) -> Int
    /// Ends a `waitUntilWritable` that is sleeping for a larger write than a period (plain
    /// play's), so that the render thread takes a new control at once rather than when
    /// that much has played: a seek is heard tens of milliseconds sooner. Any thread; a
    /// signal with nobody waiting ends the next such sleep.
    func interruptWait()
    /// When the next written frame will be presented: a moment and the frames queued ahead
    /// of it then.
    func presentationTimestamp() -> PresentationTimestamp
    /// Writes `frames` interleaved frames; returns how many were taken.
    func write(_ samples: UnsafePointer<Float>, frames: Int) -> Int
    /// Discards every frame queued and not yet presented, so new data is heard at once.
    func flush()
    /// The render thread has nothing to write for now and waits `duration` before looking
    /// again (a start waiting for its first content on an emptied device). A device sleeps
    /// the thread; a simulated one lets its clock run instead.
    func idle(for duration: Duration)
    /// Releases the device. Frames still queued are dropped.
    func close()
}

extension AudioOutput {
    /// Nothing to interrupt: the output's waits are a period at most.
    public func interruptWait() {}

    public func idle(for duration: Duration) {
        var request = timespec(tv_sec: Int(duration.components.seconds), tv_nsec: Int(duration.components.attoseconds / 1_000_000_000))
        nanosleep(&request, nil)
    }
}

/// How closely the render thread needs to know when each frame is heard.
public enum TimingPrecision: Sendable, Equatable {
    /// Every period is placed on a schedule or a followed timeline.
    case everyPeriod
    /// Content plays as soon as it is there; its timing only reports the position.
    case relaxed
}

/// A device's timing report: at host time `host`, `queuedFrames` frames (at the device's
/// own rate, possibly fractional) stand before the next frame to be written, so that frame
/// is heard `queuedFrames` device frames after `host`.
public struct PresentationTimestamp: Sendable, Equatable {
    /// When the device's state was read (or, for a device that knows its timing exactly,
    /// the presentation time itself with nothing queued).
    public var host: HostTime
    /// Frames queued ahead of the next written frame at `host`.
    public var queuedFrames: Double
    /// False while the device is stopped: the report is then a promise (the device starts
    /// when written to), not a reading of a running clock, and fits no line.
    public var isRunning: Bool

    public init(host: HostTime, queuedFrames: Double = 0, isRunning: Bool = true) {
        self.host = host
        self.queuedFrames = queuedFrames
        self.isRunning = isRunning
    }

    /// The presentation time, with the queued frames played at `frameNanoseconds` each: a
    /// device's learned frame duration, which only the render thread knows, so this stays
    /// inside the module.
    func presentation(frameNanoseconds: Double) -> HostTime {
        let nanoseconds = queuedFrames * frameNanoseconds
        // A device's count is finite and small; anything else counts as nothing queued.
        guard nanoseconds.isFinite, abs(nanoseconds) < 1e15 else { return host }
        return host + .nanoseconds(Int64(nanoseconds.rounded()))
    }
}

/// Which output to use, parsed from `--output SPEC`.
public enum OutputSpec: Sendable, Equatable, CustomStringConvertible {
    /// An ALSA PCM device, `default` unless named.
    case alsa(device: String)
    /// A device paced on the host clock that runs `driftPPM` parts per million fast (> 0)
    /// or slow (< 0), like a DAC with an imperfect crystal.
    case null(driftPPM: Double)
    /// Renders every frame that would be played into a WAV file, as fast as possible.
    case wav(path: String)

    /// Parses `alsa`, `alsa:DEVICE`, `null`, `null:drift=PPM` or `wav:PATH`.
    public init(parsing text: String) throws(MediaError) {
        let (kind, argument): (Substring, Substring?) = {
            guard let colon = text.firstIndex(of: ":") else { return (Substring(text), nil) }
            return (text[..<colon], text[text.index(after: colon)...])
        }()
        switch kind {
        case "alsa":
            let device = argument.map(String.init) ?? "default"
            guard !device.isEmpty else { throw .outputFailure(device: text, reason: "empty ALSA device name") }
            self = .alsa(device: device)
        case "null":
            var drift = 0.0
            for option in (argument ?? "").split(separator: ",") {
                let pair = option.split(separator: "=", maxSplits: 1)
                guard pair.count == 2, pair[0] == "drift", let value = Double(pair[1]), value.isFinite,
                      abs(value) <= Self.maximumDriftPPM else {
                    throw .outputFailure(device: text, reason: "expected null:drift=PPM with |PPM| <= \(Int(Self.maximumDriftPPM))")
                }
                drift = value
            }
            self = .null(driftPPM: drift)
        case "wav":
            guard let path = argument, !path.isEmpty else { throw .outputFailure(device: text, reason: "expected wav:PATH") }
            self = .wav(path: String(path))
        default:
            throw .outputFailure(device: text, reason: "unknown output; use alsa[:DEVICE], null[:drift=PPM] or wav:PATH")
        }
    }

    /// Real crystals are within ±100 ppm; a thousand leaves room for tests of extremes while
    /// rejecting typos that would make the device's clock meaningless.
    public static let maximumDriftPPM = 1000.0

    public var description: String {
        switch self {
        case .alsa(let device): return "alsa:\(device)"
        case .null(let drift): return drift == 0 ? "null" : "null:drift=\(drift)"
        case .wav(let path): return "wav:\(path)"
        }
    }

    /// A new, unopened output for this spec.
    public func makeOutput() -> any AudioOutput {
        switch self {
        case .alsa(let device): return ALSAOutput(device: device)
        case .null(let drift): return NullOutput(driftPPM: drift)
        case .wav(let path): return WAVFileOutput(path: path)
        }
    }
}

extension AudioOutput {
    /// Blocks until a period can be written, or `timeout` passes.
    public func waitUntilWritable(timeout: Duration) -> Int {
        waitUntilWritable(frames: periodFrames, timeout: timeout)
    }
    /// Most outputs are written a period at a time however little timing is needed.
    public var relaxedWriteFrames: Int { periodFrames }
    /// Most outputs measure their timing the same way whatever is needed.
    public func setTimingPrecision(_ precision: TimingPrecision) {}
    /// Most outputs time themselves one way only.
    public var timingSourceChanges: Int { 0 }
    /// Most outputs' streams never die: a file, a null device.
    public var streamRestartCount: Int { 0 }
    /// Most outputs are fed by the render thread alone, which real-time priority keeps on time.
    public var wantsRealtimePriority: Bool { true }
    /// Most outputs' timing is what it will be from the first report.
    public var isTimingSettled: Bool { true }
}
