import Foundation
import MediaClock

/// Every client's sink recorded in one stream, so the offset between two clients is counted
/// in samples of a single recording and owes nothing to any capture's timing.
///
/// The clients' sinks are remaps of one null sink with two channels per client (client k
/// on `aux2k`, `aux2k+1`), and `parec` records that sink's monitor. All the remaps render in
/// the same pass of the master, so a click that two clients play at the same instant lands
/// on the same sample of their channels. Each click is found on the first client's left
/// channel, matched on every other client's by its first loud sample, and the match refined
/// to a fraction of a sample by cross-correlating the click's waveform.
struct MixRecording {
    /// Two clients' offsets `f − g` (seconds) for every click both played, with each click's
    /// frame on the first client's channel.
    typealias PairOffsets = (f: Int, g: Int, offsets: [Double], frames: [Int])
    static let masterSink = "chorus_bench_mix"
    /// Frames searched either side of a click for another client's copy of it: 50 ms, far
    /// beyond any offset worth pairing, short of the next click.
    static let searchFrames = 2_400
    /// The waveform compared around a click: 1 ms before its first loud sample to 5 ms after.
    static let correlationBefore = 48
    static let correlationAfter = 240
    /// Lags tried either side of the first-loud-sample match, in frames.
    static let refineLags = 4

    let clients: Int
    let sampleRate: Int

    var channels: Int { 2 * clients }
    /// A click starts at its first loud sample after silence, as `ALSACapture` finds onsets.
    private var silenceFrames: Int { Int(ALSACapture.minimumSilenceBeforeOnset.seconds * Double(sampleRate)) }

    /// The master's channel map: aux0 … aux(2n-1).
    var channelMap: String { (0..<channels).map { "aux\($0)" }.joined(separator: ",") }

    /// Loads the master and a remap sink named `names[k]` for client k. Returns the module
    /// indices to unload (in order), or nil if pactl failed.
    func loadSinks(_ names: [String]) -> [String]? {
        var modules: [String] = []
        func load(_ arguments: [String]) -> Bool {
            guard let module = PulseControl.pactl(["load-module"] + arguments)?.trimmingCharacters(in: .whitespacesAndNewlines),
                  !module.isEmpty else { return false }
            modules.append(module)
            return true
        }
        guard load(["module-null-sink", "sink_name=\(Self.masterSink)", "rate=\(sampleRate)", "channels=\(channels)",
                    "channel_map=\(channelMap)", "sink_properties=device.description=\(Self.masterSink)"]) else { return nil }
        for (index, name) in names.enumerated() {
            guard load(["module-remap-sink", "sink_name=\(name)", "master=\(Self.masterSink)", "channels=2",
                        "master_channel_map=aux\(2 * index),aux\(2 * index + 1)", "channel_map=front-left,front-right",
                        "remix=no", "sink_properties=device.description=\(name)"]) else {
                modules.reversed().forEach { _ = PulseControl.pactl(["unload-module", $0]) }
                return nil
            }
        }
        return modules.reversed()
    }

    /// A parec process recording the master's monitor as raw 32-bit float to `path`.
    func recorder(to path: String, logPath: String) -> NodeProcess {
        NodeProcess(name: "parec", arguments: [
            "parec", "-d", "\(Self.masterSink).monitor", "--raw", "--format=float32le", "--rate=\(sampleRate)",
            "--channels=\(channels)", "--channel-map=\(channelMap)", "--latency-msec=20", path,
        ], logPath: logPath)
    }

    /// For each pair of clients (f < g), the offset `f − g` in seconds of every click from
    /// frame `from` of the recording at `path` that both played, and the frame of each click
    /// on the first client's channel.
    func pairOffsets(path: String, from: Int) -> [PairOffsets] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        let samples: [Float] = data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let frames = samples.count / channels
        func sample(_ client: Int, _ frame: Int) -> Float { samples[frame * channels + 2 * client] }
        func firstLoud(_ client: Int, in range: Range<Int>) -> Int? {
            range.first { abs(sample(client, $0)) > ALSACapture.silenceThreshold }
        }
        // Clicks on the first client's left channel.
        var clicks: [Int] = []
        var quiet = 0
        for frame in 0..<frames {
            if abs(sample(0, frame)) > ALSACapture.silenceThreshold {
                if quiet >= silenceFrames, frame >= from { clicks.append(frame) }
                quiet = 0
            } else {
                quiet += 1
            }
        }
        var result: [PairOffsets] = []
        for f in 0..<clients {
            for g in 0..<clients where g > f {
                var offsets: [Double] = []
                var clickFrames: [Int] = []
                for click in clicks {
                    let low = max(0, click - Self.searchFrames), high = min(frames, click + Self.searchFrames)
                    guard let a = firstLoud(f, in: low..<high), let b = firstLoud(g, in: low..<high),
                          a - Self.correlationBefore - Self.refineLags >= 0, b - Self.correlationBefore - Self.refineLags >= 0,
                          a + Self.correlationAfter + Self.refineLags < frames, b + Self.correlationAfter + Self.refineLags < frames
                    else { continue }
                    // Correlation of f's click with g's at lags around the coarse match.
                    func correlation(_ lag: Int) -> Double {
                        var sum = 0.0
                        for k in -Self.correlationBefore..<Self.correlationAfter {
                            sum += Double(sample(f, a + k)) * Double(sample(g, b + lag + k))
                        }
                        return sum
                    }
                    let values = (-Self.refineLags...Self.refineLags).map(correlation)
                    guard let peak = values.indices.max(by: { values[$0] < values[$1] }) else { continue }
                    var fraction = 0.0
                    if peak > 0, peak < values.count - 1 {
                        let (y0, y1, y2) = (values[peak - 1], values[peak], values[peak + 1])
                        let curvature = y0 - 2 * y1 + y2
                        if curvature < 0 { fraction = 0.5 * (y0 - y2) / curvature }
                    }
                    // g's copy sits at b + lag: f − g in time is (a − (b + lag)) / rate.
                    let lag = Double(peak - Self.refineLags) + fraction
                    offsets.append((Double(a) - (Double(b) + lag)) / Double(sampleRate))
                    clickFrames.append(click)
                }
                result.append((f, g, offsets, clickFrames))
            }
        }
        return result
    }

    /// Seconds from recording frame `from` until every pair of clients stays within
    /// `tolerance` seconds of each other for `hold` seconds (the sync benchmark's join, taken
    /// between clients): nil if that never happens in the recording.
    static func joinTime(_ pairs: [PairOffsets], from: Int, sampleRate: Int, tolerance: Double, hold: Double) -> Double? {
        let holdFrames = Int(hold * Double(sampleRate))
        var latest = 0.0
        for pair in pairs {
            let clicks = zip(pair.frames, pair.offsets).filter { $0.0 >= from }
            guard let lastFrame = clicks.last?.0 else { return nil }
            // The first click from which every click for `hold` is within tolerance.
            var joined: Int?
            for (index, click) in clicks.enumerated() where click.0 + holdFrames <= lastFrame {
                if clicks[index...].prefix(while: { $0.0 <= click.0 + holdFrames }).allSatisfy({ abs($0.1) <= tolerance }) {
                    joined = click.0
                    break
                }
            }
            guard let joined else { return nil }
            latest = max(latest, Double(joined - from) / Double(sampleRate))
        }
        return latest
    }
}
