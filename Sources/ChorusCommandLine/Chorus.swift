import ArgumentParser
import AVPlayback
import ChorusSession
import Foundation
import MutexAnnotations
import Synchronization
internal import CProcessArguments

/// The `chorus` command line, for the programs that run it.
public enum ChorusCommandLine {
    /// Where every group node's clock comes from.
    private static let nodeClockSource = Mutex<@Sendable () -> NodeClock>({ NodeClock() })

    /// Runs the command line on the arguments the program was given, every group node on
    /// the clock `nodeClock` makes (the machine's own unless a test's program says
    /// otherwise), and exits.
    public static func main(arguments: [String]? = programArguments(), nodeClock: @escaping @Sendable () -> NodeClock = { NodeClock() }) -> Never {
        nodeClockSource.withLockAnnotated { $0 = nodeClock }
        StandardErrorLogHandler.bootstrap()
        Chorus.main(arguments)
        exit(0)
    }

    static func makeNodeClock() -> NodeClock {
        nodeClockSource.withLockAnnotated { $0 }()
    }

    /// The arguments after the program's name, from the vector the C library passed the
    /// program (see CProcessArguments); nil, for `CommandLine.arguments`, if none was saved.
    public static func programArguments() -> [String]? {
        let count = Int(chorus_process_argument_count())
        guard count > 0 else { return nil }
        return (1..<count).map { index in chorus_process_argument(Int32(index)).map { String(cString: $0) } ?? "" }
    }
}

struct Chorus: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chorus",
        abstract: "Plays media through an AVFoundation-style player on Linux, alone or as a synchronized group.",
        subcommands: [Probe.self, Play.self, Lead.self, Follow.self, Compare.self]
    )
}
