import ArgumentParser
import Foundation
import Logging
import Synchronization

/// `--log-level`, on every command that plays.
struct LogOptions: ParsableArguments {
    @Option(name: .long, help: "The least severe messages shown.")
    var logLevel: Logger.Level = .info

    /// Makes the level the one every logger of the process, the libraries' included, uses.
    func apply() { StandardErrorLogHandler.threshold = logLevel }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

/// The command line's messages.
let log = Logger(label: "chorus")

/// The command line's log handler: each message as one line on standard error, prefixed
/// with the program's name, as a command-line tool speaks. Installed before anything logs
/// (`bootstrap`); the level is one for the whole process and may be set after loggers were
/// made, since `--log-level` is parsed after the first of them exist.
struct StandardErrorLogHandler: LogHandler {
    /// The process's level, as an index into `Logger.Level.allCases`.
    private static let level = Atomic<Int>(Logger.Level.allCases.firstIndex(of: .info) ?? 2)

    static var threshold: Logger.Level {
        get { Logger.Level.allCases[level.load(ordering: .relaxed)] }
        set { level.store(Logger.Level.allCases.firstIndex(of: newValue) ?? 2, ordering: .relaxed) }
    }

    /// Installs the handler for every logger made from now on. Once per process.
    static func bootstrap() {
        LoggingSystem.bootstrap { _ in StandardErrorLogHandler() }
    }

    var metadata: Logger.Metadata = [:]

    var logLevel: Logger.Level {
        get { Self.threshold }
        // One level for the process: a logger's own change would surprise the other loggers'
        // readers of `--log-level`, so it is not kept.
        set {}
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        let suffix = merged.isEmpty ? "" : " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        FileHandle.standardError.write(Data("chorus: \(event.message)\(suffix)\n".utf8))
    }
}
