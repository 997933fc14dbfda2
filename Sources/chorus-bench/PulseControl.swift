import Foundation

/// The PulseAudio server the benchmarks play into, driven through `pactl`.
enum PulseControl {
    /// Runs pactl; its standard output, or nil when it failed.
    static func pactl(_ arguments: [String]) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["pactl"] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return process.terminationStatus == 0 ? String(decoding: data, as: UTF8.self) : nil
    }

    /// A sink's configured latency in seconds, from `pactl list sinks` ("Latency: 1234 usec,
    /// configured 2000 usec"): how far ahead of its clock the sink renders, so how early its
    /// monitor hears audio.
    static func configuredLatency(of sink: String) -> Double? {
        guard let text = pactl(["list", "sinks"]) else { return nil }
        var inSink = false
        for line in text.split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("Name: ") { inSink = trimmed == "Name: \(sink)" }
            guard inSink, trimmed.hasPrefix("Latency:"), let range = trimmed.range(of: "configured ") else { continue }
            return Double(trimmed[range.upperBound...].prefix { $0.isNumber }).map { $0 / 1e6 }
        }
        return nil
    }
}
