import ArgumentParser
import AVPlayback
import Foundation
internal import CProcessArguments

/// The entry point: runs `Chorus` on the arguments the program was given.
@main
enum ChorusMain {
    static func main() {
        StandardErrorLogHandler.bootstrap()
        Chorus.main(programArguments())
    }

    /// The arguments after the program's name, from the vector the C library passed the
    /// program (see CProcessArguments); nil, for `CommandLine.arguments`, if none was saved.
    static func programArguments() -> [String]? {
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
