import Foundation

/// Runs a program and collects what it printed.
public enum Run {
    public struct Result: Sendable {
        public var status: Int32
        public var standardOutput: Data
        public var standardError: String
        public var seconds: Double
        public var output: String { String(decoding: standardOutput, as: UTF8.self) }
    }

    /// Runs `program` (a path, or a name looked up on PATH) with `arguments`; kills it after
    /// `timeout` seconds so a hung child fails the test instead of hanging the run.
    public static func command(_ program: String, _ arguments: [String], timeout: Double = 120,
                               environment: [String: String]? = nil) throws -> Result {
        let process = Process()
        if program.contains("/") {
            process.executableURL = URL(fileURLWithPath: program)
            process.arguments = arguments
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [program] + arguments
        }
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        let start = Date()
        try process.run()
        let killer = DispatchWorkItem { if process.isRunning { process.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: killer)
        // Read both pipes before waiting, so a chatty child cannot block on a full pipe.
        let group = DispatchGroup()
        nonisolated(unsafe) var outData = Data()
        nonisolated(unsafe) var errData = Data()
        DispatchQueue.global().async(group: group) { outData = out.fileHandleForReading.readDataToEndOfFile() }
        DispatchQueue.global().async(group: group) { errData = err.fileHandleForReading.readDataToEndOfFile() }
        process.waitUntilExit()
        group.wait()
        killer.cancel()
        return Result(status: process.terminationStatus, standardOutput: outData,
                      standardError: String(decoding: errData, as: UTF8.self),
                      seconds: Date().timeIntervalSince(start))
    }
}
