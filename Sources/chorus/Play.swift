import ArgumentParser
import AVPlayback
import Foundation

/// `chorus play URL...`: plays items in turn on one output.
struct Play: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Play files or URLs in turn.",
        discussion: """
            On a terminal a status line shows the position, the duration and the output. \
            Keys: space pauses and resumes, left and right arrows seek 5 s, q quits.
            """)

    @Argument(help: "Files or URLs to play, in order.")
    var urls: [String]

    @Option(name: .long, help: "alsa[:DEVICE] (default alsa:default), null[:drift=PPM], or wav:PATH.")
    var output: String = "alsa:default"

    @Option(name: .long, help: "Start the first item at this many seconds.")
    var start: Double?

    @Option(name: .long, help: "Linear volume from 0 to 1.")
    var volume: Float = 1

    @Flag(name: .long, help: "No status line and no keys.")
    var quiet = false

    func validate() throws {
        guard !urls.isEmpty else { throw ValidationError("give at least one file or URL") }
        guard volume >= 0, volume <= 1 else { throw ValidationError("--volume must be between 0 and 1") }
        if let start, !(start >= 0 && start.isFinite) { throw ValidationError("--start must be a non-negative number of seconds") }
    }

    func run() throws {
        let spec: OutputSpec
        do { spec = try OutputSpec(parsing: output) } catch { throw ValidationError(error.description) }
        let session = PlaySession(player: AVPlayer(playerItem: nil, output: spec), volume: volume,
                                  interactive: !quiet && isatty(STDIN_FILENO) != 0 && isatty(STDERR_FILENO) != 0)
        let ok = session.run(urls: urls, start: start)
        if !ok { throw ExitCode(1) }
    }
}
