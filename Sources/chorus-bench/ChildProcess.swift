import Foundation

/// A program run to completion with its CPU time and peak memory, as `wait4` reports them.
///
/// Spawned with `posix_spawnp` (so `PATH` finds it), standard input from /dev/null (a
/// player must not read the terminal), standard output discarded, standard error inherited
/// so its failures show in the benchmark's log.
struct ChildProcess {
    /// What one run cost.
    struct Outcome {
        var exitStatus: Int32
        var wall: Duration
        var usage: ResourceUsage
        var succeeded: Bool { exitStatus == 0 }
    }

    let arguments: [String]
    /// Variables set on top of this process's environment.
    var environment: [String: String] = [:]

    init(_ arguments: [String], environment: [String: String] = [:]) {
        self.arguments = arguments
        self.environment = environment
    }

    /// The command as a shell would read it, for reproduce lines.
    var commandLine: String {
        let env = environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value) " }.joined()
        return env + arguments.map(Self.quoted).joined(separator: " ")
    }

    static func quoted(_ word: String) -> String {
        let safe = word.allSatisfy { $0.isLetter || $0.isNumber || "-_./:=,@%+".contains($0) }
        return safe && !word.isEmpty ? word : "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// Runs the program and waits for it. Throws when it cannot be started.
    func run() throws -> Outcome {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0)

        var merged = ProcessInfo.processInfo.environment
        for (key, value) in environment { merged[key] = value }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let started = ContinuousClock.now
        let code = posix_spawnp(&pid, arguments[0], &actions, nil, argv, envp)
        guard code == 0 else {
            throw BenchError("cannot start \(arguments[0]): \(String(cString: strerror(code)))")
        }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            guard errno == EINTR else { throw BenchError("wait4 failed for \(arguments[0])") }
        }
        let wall = ContinuousClock.now - started
        // WIFEXITED/WEXITSTATUS are macros Swift cannot import.
        let exited = (status & 0x7f) == 0
        let exitStatus: Int32 = exited ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Outcome(exitStatus: exitStatus, wall: wall, usage: ResourceUsage(usage))
    }
}
