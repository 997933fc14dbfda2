import AVPlayback
import ChorusSession
import Foundation
import Logging
import MutexAnnotations
import Synchronization

/// A session as the command line drives it: commands in, events out, and the player it
/// plays on (for the status line's output name).
protocol DrivenSession: Sendable {
    var player: AVPlayer { get }
    var events: AsyncStream<SessionEvent> { get }
    func send(_ command: SessionCommand)
}

extension PlaylistSession: DrivenSession {}
extension LeaderSession: DrivenSession {}
extension FollowerSession: DrivenSession {}

/// The terminal around a session: keys and script commands become `SessionCommand`s, the
/// session's events become log lines and the status line, and Ctrl-C or SIGTERM stops it as
/// `q` does (a leader then says Goodbye, and every room fades out at once, where being
/// killed left them playing on, in holdover, for ten seconds).
final class SessionShell: Sendable {
    /// How far the arrow keys seek.
    static let seekStep = CMTime(value: 5, timescale: 1)
    /// Width of the progress bar in characters.
    static let barWidth = 30

    private let session: any DrivenSession
    private let terminal: Terminal?
    /// The node's video window, when it may have one: its dropped pictures join the status
    /// line and the statistics.
    private let screen: Screen?
    private let drained = WakeSignal()
    private let status = Mutex(StatusLine())
    private let signalsReceived = Atomic<Int>(0)
    private let signalSources = Mutex<[DispatchSourceSignal]>([])

    private struct StatusLine {
        var state = SessionPlaybackState.waiting
        var position = CMTime.zero
        var duration = CMTime.indefinite
        var rate: Float = 1
    }

    /// A shell for `session`, with a status line and keys when `interactive`, around the
    /// node's `screen` if it has one.
    init(session: any DrivenSession, interactive: Bool, screen: Screen? = nil) {
        self.session = session
        terminal = interactive ? Terminal() : nil
        self.screen = screen
    }

    /// Starts reading keys (when interactive), reading the session's events, and catching
    /// the signals that stop it. Call before the session runs.
    func start() {
        terminal?.enterRawMode { [weak self] key in self?.handle(key) }
        let events = session.events
        Task { [self] in
            for await event in events { show(event) }
            drained.signal()
        }
        signalSources.withLockAnnotated { sources in
            sources = [SIGINT, SIGTERM].map { sig in
                signal(sig, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
                source.setEventHandler { [weak self] in self?.signalled() }
                source.resume()
                return source
            }
        }
    }

    /// After the session has run: waits for its last events to be shown, and gives the
    /// terminal back.
    func finish() {
        // The stream ends when the session does; its last events are a few lines.
        drained.wait(timeout: .seconds(2))
        screen?.close()
        signalSources.withLockAnnotated { $0.forEach { $0.cancel() } }
        terminal?.clearLine()
        terminal?.restore()
    }

    /// Reads commands from standard input, one a line, when it is not a terminal:
    /// `pause`, `play`, `toggle`, `seek SECONDS`, `rate RATE`, `step N`, `next`, `previous`,
    /// `audio` (the next sound track), `subtitles` (the next subtitles), `quit`.
    /// For scripts and tests.
    func acceptCommands() {
        let thread = Thread { [weak self] in
            while let line = readLine() {
                let words = line.split(separator: " ")
                guard let self, let verb = words.first else { continue }
                switch verb {
                case "pause": session.send(.pause)
                case "play": session.send(.play)
                case "toggle": session.send(.togglePause)
                case "seek":
                    if words.count == 2, let seconds = Double(words[1]), seconds.isFinite {
                        session.send(.seek(to: CMTime(seconds: seconds, preferredTimescale: 1_000_000)))
                    } else {
                        log.warning("seek needs a number of seconds")
                    }
                case "rate":
                    if words.count == 2, let rate = Float(words[1]) {
                        session.send(.rate(rate))
                    } else {
                        log.warning("rate needs a number (1 is normal speed, -1 backwards)")
                    }
                case "next": session.send(.next)
                case "previous": session.send(.previous)
                case "step":
                    if words.count == 2, let count = Int(words[1]) {
                        session.send(.step(by: count))
                    } else {
                        log.warning("step needs a whole number of pictures")
                    }
                case "audio": session.send(.cycleAudio)
                case "subtitles": session.send(.cycleSubtitles)
                case "quit": session.send(.stop)
                default: log.warning("unknown command \(verb): use pause, play, toggle, seek SECONDS, rate RATE, step N, next, previous, audio, subtitles or quit")
                }
            }
        }
        thread.name = "chorus.commands"
        thread.start()
    }

    private func signalled() {
        if signalsReceived.wrappingAdd(1, ordering: .relaxed).oldValue > 0 {
            // A second signal, should the first not end it, leaves at once.
            terminal?.restore()
            exit(130)
        }
        session.send(.stop)
    }

    private func handle(_ key: Terminal.Key) {
        let player = session.player
        switch key {
        case .space: session.send(.togglePause)
        case .left: session.send(.skip(by: CMTime(value: -Self.seekStep.value, timescale: Self.seekStep.timescale)))
        case .right: session.send(.skip(by: Self.seekStep))
        case .quit: session.send(.stop)
        case .slower: session.send(.rate(PlaylistSession.rate(after: player.defaultRate, faster: false)))
        case .faster: session.send(.rate(PlaylistSession.rate(after: player.defaultRate, faster: true)))
        case .normalSpeed: session.send(.rate(1))
        // Backwards at normal speed, or forwards again at the speed play resumes at.
        case .backwards: session.send(.rate(player.rate < 0 ? player.defaultRate : -1))
        case .next: session.send(.next)
        case .previous: session.send(.previous)
        case .cycleAudio: session.send(.cycleAudio)
        case .cycleSubtitles: session.send(.cycleSubtitles)
        }
    }

    private func show(_ event: SessionEvent) {
        switch event {
        case .message(let level, let text):
            terminal?.clearLine()
            log.log(level: level, "\(text)")
        case .clock(let statistics):
            let pictures = screen?.droppedFrames.map { " frames dropped \($0)" } ?? ""
            log.notice("\(statistics.line)\(pictures)")
        case .state(let state):
            status.withLockAnnotated { $0.state = state }
            drawStatus()
        case .position(let time, let duration, let rate):
            status.withLockAnnotated { line in
                line.position = time
                line.duration = duration
                line.rate = rate
            }
            drawStatus()
        case .title(let title):
            if let title {
                terminal?.clearLine()
                log.notice("now playing: \(title)")
            }
        case .item, .finished:
            break
        }
    }

    private func drawStatus() {
        guard let terminal else { return }
        let line = status.withLockAnnotated { $0 }
        let position = line.position.isNumeric ? line.position.seconds : 0
        let total = line.duration.isNumeric ? line.duration.seconds : 0
        let filled = total > 0 ? min(Self.barWidth, max(0, Int(Double(Self.barWidth) * position / total))) : 0
        let bar = String(repeating: "=", count: filled) + String(repeating: "-", count: Self.barWidth - filled)
        let state: String
        switch line.state {
        case .playing: state = ">"
        case .paused, .stopped: state = "||"
        case .waiting: state = "..."
        }
        let speed = line.rate == 1 ? "" : String(format: " x%g", line.rate)
        let dropped = screen?.droppedFrames.map { " dropped \($0)" } ?? ""
        terminal.draw("\(state) \(Self.clock(position)) / \(total > 0 ? Self.clock(total) : "--:--") [\(bar)]\(speed)\(dropped) \(session.player.outputName)")
    }

    /// "m:ss" or "h:mm:ss".
    static func clock(_ seconds: Double) -> String {
        let whole = Int(max(0, seconds.isFinite ? seconds : 0))
        let h = whole / 3600, m = (whole / 60) % 60, s = whole % 60
        return h > 0 ? String(format: "%d:%02d:%02d", h, m, s) : String(format: "%d:%02d", m, s)
    }
}
