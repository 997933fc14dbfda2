import ArgumentParser
import AVPlayback
import ChorusSession
import Foundation


/// `chorus play URL...`: plays items in turn on one output.
struct Play: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Play files or URLs in turn.",
        discussion: """
            On a terminal a status line shows the position, the duration and the output. \
            Keys: space pauses and resumes, left and right arrows seek 5 s, [ and ] step the \
            speed down and up, backspace sets it back to 1, n and p go to the next and previous \
            item, a (or #) and s (or j) choose the next sound track and subtitles, q quits.
            """)

    @Argument(help: "Files or URLs to play, in order.")
    var urls: [String]

    @Option(name: .long, help: "alsa[:DEVICE] (default alsa:default), null[:drift=PPM], or wav:PATH.")
    var output: String = "alsa:default"

    @Option(name: .long, help: "Start the first item at this many seconds.")
    var start: Double?

    @Option(name: .long, help: "Linear volume from 0 to 1.")
    var volume: Float = 1

    @Option(name: .long, help: "Speed, from 1/32 to 8 (the pitch is kept from 1/4 to 4).")
    var rate: Float = 1

    @OptionGroup var pitch: PitchOption

    @Flag(name: .long, help: "No status line and no keys.")
    var quiet = false

    @Option(name: .long, help: "Record when every rendered period was heard and every picture shown to this file (for chorus compare and measurements).")
    var capture: String?

    @OptionGroup var videoOptions: VideoOptions

    @OptionGroup var selection: SelectionOptions

    @OptionGroup var logging: LogOptions

    func validate() throws {
        guard !urls.isEmpty else { throw ValidationError("give at least one file or URL") }
        guard volume >= 0, volume <= 1 else { throw ValidationError("--volume must be between 0 and 1") }
        guard rate.isFinite, rate >= AVPlayer.slowestRate, rate <= AVPlayer.fastestRate else {
            throw ValidationError("--rate must be between 1/32 and 8")
        }
        if let start, !(start >= 0 && start.isFinite) { throw ValidationError("--start must be a non-negative number of seconds") }
    }

    func run() throws {
        logging.apply()
        let spec: OutputSpec
        do { spec = try OutputSpec(parsing: output) } catch { throw ValidationError(error.description) }
        var recorder: RenderCapture?
        if let capture {
            do { recorder = try RenderCapture(path: capture) } catch { throw ValidationError("--capture: \(error)") }
        }
        let player = AVQueuePlayer(playerItem: nil, output: spec, hostClock: .hostTimeClock, hostMapping: { $0 }, capture: recorder)
        player.defaultRate = rate
        player.volume = volume
        selection.apply(to: player)
        let session = PlaylistSession(player: player, urls: urls.map(makeURL),
                                      start: start.map { CMTime(seconds: $0, preferredTimescale: 1_000_000) },
                                      pitchAlgorithm: pitch.algorithm)
        let screen = Screen(session: session, options: videoOptions, defaultMode: .auto, title: "Chorus")
        try screen.start()
        let shell = SessionShell(session: session, interactive: !quiet && isatty(STDIN_FILENO) != 0 && isatty(STDERR_FILENO) != 0, screen: screen)
        shell.start()
        let succeeded = session.run()
        shell.finish()
        if !succeeded { throw ExitCode(1) }
    }
}
