import ArgumentParser
import AVPlayback
import Foundation

@main
struct Chorus: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chorus",
        abstract: "Plays media through an AVFoundation-style player on Linux, alone or as a synchronized group.",
        subcommands: [Probe.self, Play.self, Lead.self, Follow.self, Compare.self]
    )
}

/// Prints one line on standard error, prefixed with the program's name.
func warn(_ message: String) {
    FileHandle.standardError.write(Data("chorus: \(message)\n".utf8))
}
