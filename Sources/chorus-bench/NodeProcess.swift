import Foundation
import MediaClock
import MutexAnnotations
import Synchronization

/// A program run in the background for the length of a benchmark scenario (a `chorus lead`,
/// a `chorus follow`, a snapserver or snapclient), unlike `ChildProcess`, which runs one to
/// completion.
///
/// Its standard error is read line by line, each line stamped with the host time
/// (CLOCK_MONOTONIC, the clock of render captures) it arrived at, and copied to a log file;
/// its standard input is a pipe when asked for (for `chorus lead --commands`), else
/// /dev/null; its standard output is discarded.
final class NodeProcess: Sendable {
    /// One line of standard error and when it arrived.
    struct Line {
        var host: HostTime
        var text: String
    }

    let name: String
    let arguments: [String]
    let environment: [String: String]
    /// What the reading of standard error has gathered, and where it copies it: the pipe's
    /// handler writes it on a thread of its own, and `stop` may give up waiting for that.
    private struct Output {
        var launchedAt = HostTime(nanoseconds: 0)
        var lines: [Line] = []
        var partial = Data()
        /// The log file; nil once closed, so that a late line is not written to it.
        var log: FileHandle?
    }

    private let process = Process()
    private let input: Pipe?
    private let errors = Pipe()
    private let output: Mutex<Output>
    private let drained = DispatchSemaphore(value: 0)

    /// Host time just before the process was started.
    var launchedAt: HostTime { output.withLockAnnotated { $0.launchedAt } }

    init(name: String, arguments: [String], environment: [String: String] = [:], stdin: Bool = false, logPath: String?) {
        self.name = name
        self.arguments = arguments
        self.environment = environment
        input = stdin ? Pipe() : nil
        var log: FileHandle?
        if let logPath, FileManager.default.createFile(atPath: logPath, contents: nil) {
            log = FileHandle(forWritingAtPath: logPath)
        }
        output = Mutex(Output(log: log))
    }

    /// The command as a shell would read it.
    var commandLine: String {
        ChildProcess(arguments, environment: environment).commandLine
    }

    /// Starts it. Throws when it cannot be started.
    func start() throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        var merged = ProcessInfo.processInfo.environment
        for (key, value) in environment { merged[key] = value }
        process.environment = merged
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = input ?? FileHandle.nullDevice
        process.standardError = errors
        errors.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self else { return }
            if data.isEmpty {
                handle.readabilityHandler = nil
                self.drained.signal()
                return
            }
            self.take(data)
        }
        output.withLockAnnotated { $0.launchedAt = HostTime.now() }
        do {
            try process.run()
        } catch {
            throw BenchError("cannot start \(arguments.first ?? name): \(error)")
        }
    }

    private func take(_ data: Data) {
        let now = HostTime.now()
        output.withLockAnnotated { output in
            output.log?.write(data)
            output.partial.append(data)
            while let newline = output.partial.firstIndex(of: UInt8(ascii: "\n")) {
                let text = String(decoding: output.partial[output.partial.startIndex..<newline], as: UTF8.self)
                output.lines.append(Line(host: now, text: text))
                output.partial.removeSubrange(output.partial.startIndex...newline)
            }
        }
    }

    /// Writes one line to its standard input.
    func send(_ line: String) {
        input?.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    var isRunning: Bool { process.isRunning }

    /// Lines of standard error so far.
    var errorLines: [Line] { output.withLockAnnotated { $0.lines } }

    /// Asks it to stop with `signal` (or, for a leader, the `quit` command when `quit` is
    /// set) and waits up to `timeout`, then kills it. Returns its exit status.
    @discardableResult
    func stop(quit: Bool = false, signal: Int32 = SIGTERM, timeout: Duration = .seconds(5)) -> Int32 {
        if process.isRunning {
            if quit, input != nil {
                send("quit")
            } else {
                kill(process.processIdentifier, signal)
            }
            let deadline = HostTime.now() + timeout
            while process.isRunning && HostTime.now() < deadline { usleep(10_000) }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
            }
        }
        process.waitUntilExit()
        try? input?.fileHandleForWriting.close()
        // The reader hands over the last lines when the pipe closes; don't wait forever for
        // a grandchild that keeps it open.
        _ = drained.wait(timeout: .now() + 1)
        output.withLockAnnotated { output in
            try? output.log?.close()
            output.log = nil
        }
        return process.terminationStatus
    }
}
