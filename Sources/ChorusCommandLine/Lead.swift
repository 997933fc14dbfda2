import ArgumentParser
import AVPlayback
import Foundation
import ChorusSession
import GroupSync

/// `chorus lead URL...`: plays items for a whole group.
struct Lead: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Play files for a group: publish the clock and the playback state, serve the files.",
        discussion: """
            Followers join with `chorus follow ADDR:PORT`. The files are served over HTTP on the \
            next port up (or --http-port). Same keys as `chorus play`.
            """)

    @Argument(help: "Files or URLs to play, in order.")
    var urls: [String]

    @Option(name: .long, help: "Address and port for the group's UDP messages.")
    var listen = "0.0.0.0:7700"

    @Option(name: .long, help: "Port for serving the files over HTTP (default: the UDP port + 1).")
    var httpPort: UInt16?

    @Option(name: .long, help: "Linear volume from 0 to 1 for the leader's own output.")
    var volume: Float = 1

    @Flag(name: .long, help: "No status line and no keys.")
    var quiet = false

    @Flag(name: .long, help: "Read commands from standard input: pause, play, toggle, seek SECONDS, rate RATE, step N, next, previous, audio, subtitles, quit.")
    var commands = false

    @Flag(name: .long, help: "Log followers joining and leaving.")
    var verbose = false

    @OptionGroup var node: NodeOptions

    @OptionGroup var videoOptions: VideoOptions

    @OptionGroup var selection: SelectionOptions

    @OptionGroup var logging: LogOptions

    func validate() throws {
        guard !urls.isEmpty else { throw ValidationError("give at least one file or URL") }
        guard UDPEndpoint(parsing: listen) != nil else { throw ValidationError("--listen must be ADDR:PORT") }
        guard volume >= 0, volume <= 1 else { throw ValidationError("--volume must be between 0 and 1") }
    }

    func run() throws {
        logging.apply()
        guard let endpoint = UDPEndpoint(parsing: listen) else { throw ValidationError("--listen must be ADDR:PORT") }
        let session: LeaderSession
        do {
            session = try LeaderSession(configuration: try node.configuration(), listen: endpoint,
                                        httpPort: httpPort ?? endpoint.port &+ 1, urls: urls.map(makeURL),
                                        volume: volume, reportMembership: verbose)
        } catch let error as SessionError {
            throw ValidationError(error.description)
        }
        selection.apply(to: session.player)
        let screen = Screen(session: session, options: videoOptions, defaultMode: .none, title: "Chorus leader")
        try screen.start()
        let shell = SessionShell(session: session, interactive: !quiet && isatty(STDIN_FILENO) != 0 && isatty(STDERR_FILENO) != 0, screen: screen)
        shell.start()
        if commands { shell.acceptCommands() }
        let succeeded = session.run()
        shell.finish()
        if !succeeded { throw ExitCode(1) }
    }
}
