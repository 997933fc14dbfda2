import Foundation

/// A recording of the PulseAudio null sink's monitor (`chorus_null.monitor`, the private
/// server `make test` starts), mono float at 48 kHz: what was heard, taken outside the player.
public final class MonitorRecording {
    public let file: URL
    private let recorder = Process()

    /// Starts recording into `file`.
    public init(file: URL) throws {
        self.file = file
        recorder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        recorder.arguments = ["parec", "-d", "chorus_null.monitor", "--raw", "--format=float32le", "--rate=48000",
                              "--channels=1", "--latency-msec=20", file.path]
        try recorder.run()
    }

    deinit { Run.stop(recorder) }

    /// Stops recording and returns the samples heard.
    public func stop() throws -> [Float] {
        Run.stop(recorder)
        let data = try Data(contentsOf: file)
        return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// The index of the first sample louder than `threshold`.
    public static func firstLoud(in samples: [Float], threshold: Float = 0.05) -> Int? {
        samples.firstIndex { abs($0) > threshold }
    }

    /// A tone's frequency over `window`, from the median distance between its zero crossings
    /// (half a cycle): a median, so that a gap or a click from a loaded machine does not
    /// decide it. Nil without two crossings.
    public static func medianFrequency(of window: ArraySlice<Float>, sampleRate: Double) -> Double? {
        var crossings: [Int] = []
        for index in window.indices.dropFirst() where (window[index - 1] < 0) != (window[index] < 0) { crossings.append(index) }
        let halfPeriods = zip(crossings, crossings.dropFirst()).map { $1 - $0 }.sorted()
        guard !halfPeriods.isEmpty else { return nil }
        return sampleRate / (2 * Double(halfPeriods[halfPeriods.count / 2]))
    }
}
