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

    /// Stops `process`: an interrupt, then a kill if it has not gone within two seconds
    /// (some tools, parec among them, can miss a polite signal while blocked).
    public static func stop(_ process: Process) {
        guard process.isRunning else { return }
        process.interrupt()
        let deadline = Date().addingTimeInterval(2)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
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
        let killer = DispatchWorkItem { stop(process) }
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
