import AVPlayback
import Foundation
import Synchronization

/// How a session starts, pauses and seeks: on its own (`chorus play`) or for a whole group
/// (`chorus lead`). Called on the session's threads; implementations are thread-safe.
protocol PlaybackTransport: Sendable {
    /// The item at `index` is about to play from `start`; begin playing it.
    func begin(_ item: AVPlayerItem, index: Int, url: URL, from start: CMTime, on player: AVPlayer)
    /// Pause if playing, resume if paused.
    func togglePause(on player: AVPlayer)
    /// Move to `time` (clamped by the player), keeping the play state.
    func seek(to time: CMTime, on player: AVPlayer)
    /// Play at `rate` from now on (and after a pause, and for the items after).
    func changeRate(to rate: Float, on player: AVPlayer)
    /// Everything has played, or the user quit.
    func finish(on player: AVPlayer)
}

/// Plays on this machine alone.
struct LocalTransport: PlaybackTransport {
    func begin(_ item: AVPlayerItem, index: Int, url: URL, from start: CMTime, on player: AVPlayer) {
        if start != .zero { player.seek(to: start) }
        player.play()
    }
    func togglePause(on player: AVPlayer) {
        if player.rate == 0 { player.play() } else { player.pause() }
    }
    func seek(to time: CMTime, on player: AVPlayer) { player.seek(to: time) }
    func changeRate(to rate: Float, on player: AVPlayer) {
        player.defaultRate = rate
        if player.rate != 0 { player.rate = rate }
    }
    func finish(on player: AVPlayer) {}
}

/// Drives one player through a list of items for `chorus play` and `chorus lead`.
// @unchecked: every var is read and written under `lock`; the rest are lets.
final class PlaySession: @unchecked Sendable {
    /// How far the arrow keys seek.
    static let seekStep = CMTime(value: 5, timescale: 1)
    /// How often the status line is redrawn: four times a second reads smoothly without
    /// flooding a slow terminal.
    static let statusInterval = CMTime(value: 1, timescale: 4)
    /// Width of the progress bar in characters.
    static let barWidth = 30
    /// The speeds `[` and `]` step through: the usual ones for listening faster or
    /// following slowly, each a clear step from the next.
    static let rateSteps: [Float] = [0.5, 0.75, 0.9, 1, 1.1, 1.25, 1.5, 2]
    /// Going to the previous item this far into the current one starts the current one
    /// again instead, as music players do.
    static let restartThreshold = 3.0

    let player: AVPlayer
    let interactive: Bool
    let transport: any PlaybackTransport
    private let events = DispatchQueue(label: "chorus.cli")
    private let terminal: Terminal?
    private let lock = NSLock()
    private var quitRequested = false
    private var finished: DispatchSemaphore?
    /// The item to go to when the current one is left early (next, previous).
    private var jump: Int?
    /// The index of the item playing, and how many there are.
    private var currentIndex = 0
    private var itemCount = 0
    /// Why the current item failed, once it has.
    private var failure: String?

    /// Reads commands from standard input, one a line, when it is not a terminal:
    /// `pause`, `play`, `toggle`, `seek SECONDS`, `rate RATE`, `next`, `previous`, `quit`.
    /// For scripts and tests.
    func acceptCommands() {
        let thread = Thread { [weak self] in
            while let line = readLine() {
                let words = line.split(separator: " ")
                guard let self, let verb = words.first else { continue }
                switch verb {
                case "pause": if player.rate != 0 { transport.togglePause(on: player) }
                case "play": if player.rate == 0 { transport.togglePause(on: player) }
                case "toggle": handle(.space)
                case "seek":
                    if words.count == 2, let seconds = Double(words[1]), seconds.isFinite {
                        transport.seek(to: CMTime(seconds: seconds, preferredTimescale: 1_000_000), on: player)
                    }
                case "rate":
                    if words.count == 2, let rate = Float(words[1]), rate.isFinite, rate > 0 {
                        transport.changeRate(to: rate, on: player)
                    } else {
                        warn("rate needs a positive number (1 is normal speed)")
                    }
                case "next": handle(.next)
                case "previous": handle(.previous)
                case "quit": handle(.quit)
                default: warn("unknown command \(verb): use pause, play, toggle, seek SECONDS, rate RATE, next, previous or quit")
                }
            }
        }
        thread.name = "chorus.commands"
        thread.start()
    }

    init(player: AVPlayer, volume: Float, interactive: Bool, transport: any PlaybackTransport = LocalTransport()) {
        self.player = player
        player.volume = volume
        self.interactive = interactive
        self.transport = transport
        terminal = interactive ? Terminal() : nil
    }

    /// Plays every item; returns false if any failed.
    func run(urls: [String], start: Double?) -> Bool {
        terminal?.enterRawMode { [weak self] key in self?.handle(key) }
        defer { terminal?.restore() }
        let signals = stopOnSignals()
        defer { signals.forEach { $0.cancel() } }
        var allGood = true
        var statusObserver: Any?
        if interactive {
            statusObserver = player.addPeriodicTimeObserver(forInterval: Self.statusInterval, queue: events) { [weak self] _ in
                self?.drawStatus()
            }
        }
        var index = 0
        var first = true
        lock.withLock { itemCount = urls.count }
        while index < urls.count, index >= 0 {
            if lock.withLock({ quitRequested }) { break }
            let url = urls[index]
            let location = makeURL(url)
            let item = AVPlayerItem(url: location)
            let from = first && start != nil ? CMTime(seconds: start ?? 0, preferredTimescale: 1_000_000) : .zero
            first = false
            lock.withLock { currentIndex = index; jump = nil }
            if !play(item, index: index, url: location, from: from, name: url) { allGood = false }
            index = lock.withLock { jump } ?? index + 1
        }
        transport.finish(on: player)
        if let statusObserver { player.removeTimeObserver(statusObserver) }
        terminal?.clearLine()
        player.close()
        return allGood
    }

    /// Plays one item to its end (or until quit). Returns false if it failed.
    private func play(_ item: AVPlayerItem, index: Int, url: URL, from start: CMTime, name: String) -> Bool {
        let done = DispatchSemaphore(value: 0)
        lock.withLock { finished = done }
        lock.withLock { failure = nil }
        let center = NotificationCenter.default
        let ended = center.addObserver(forName: AVPlayerItem.didPlayToEndTimeNotification, object: item, queue: nil) { _ in
            done.signal()
        }
        let failedEarly = center.addObserver(forName: AVPlayerItem.failedToPlayToEndTimeNotification, object: item, queue: nil) { note in
            let error = note.userInfo?[AVPlayerItemFailedToPlayToEndTimeErrorKey]
            self.lock.withLock { self.failure = error.map { "\($0)" } ?? "\(name): playback failed" }
            done.signal()
        }
        let statusWatch = item.observe(\.status) { item, _ in
            if item.status == .failed {
                self.lock.withLock { self.failure = item.error.map { "\($0)" } ?? "\(name): cannot be played" }
                done.signal()
            }
        }
        defer {
            center.removeObserver(ended)
            center.removeObserver(failedEarly)
            statusWatch.invalidate()
        }
        let t0 = HostTime.now()
        let trace = ProcessInfo.processInfo.environment["CHORUS_TRACE"] != nil
        let tcs = player.observe(\.timeControlStatus) { player, _ in
            if trace { warn("t+\((HostTime.now() - t0)) status \(player.timeControlStatus) time \(player.currentTime().seconds)") }
        }
        defer { tcs.invalidate() }
        player.replaceCurrentItem(with: item)
        transport.begin(item, index: index, url: url, from: start, on: player)
        done.wait()
        if let failure = lock.withLock({ failure }) {
            terminal?.clearLine()
            warn(failure)
            return false
        }
        return true
    }

    /// Ctrl-C and SIGTERM (a service stopped) end the session as `q` does: a leader then
    /// says Goodbye and every room fades out at once, where being killed left them playing
    /// on, in holdover, for ten seconds. A second signal, should the first not end it,
    /// leaves at once.
    private func stopOnSignals() -> [DispatchSourceSignal] {
        let received = Atomic<Int>(0)
        return [SIGINT, SIGTERM].map { sig in
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { [weak self] in
                if received.wrappingAdd(1, ordering: .relaxed).oldValue > 0 {
                    self?.terminal?.restore()
                    exit(130)
                }
                self?.handle(.quit)
            }
            source.resume()
            return source
        }
    }

    private func handle(_ key: Terminal.Key) {
        switch key {
        case .space:
            transport.togglePause(on: player)
        case .left:
            transport.seek(to: player.currentTime() - Self.seekStep, on: player)
        case .right:
            transport.seek(to: player.currentTime() + Self.seekStep, on: player)
        case .quit:
            let done: DispatchSemaphore? = lock.withLock { quitRequested = true; return finished }
            player.pause()
            done?.signal()
        case .slower, .faster, .normalSpeed:
            transport.changeRate(to: Self.rate(after: player.defaultRate, key: key), on: player)
        case .next, .previous:
            let restart = key == .previous && player.currentTime().seconds > Self.restartThreshold
            if restart {
                transport.seek(to: .zero, on: player)
            } else {
                // Past the last item there is nothing to go to: the key does nothing, rather
                // than ending the session (and, for a leader, the group's play).
                let done: DispatchSemaphore? = lock.withLock {
                    let target = max(0, currentIndex + (key == .next ? 1 : -1))
                    guard target < itemCount else { return nil }
                    jump = target
                    return finished
                }
                done?.signal()
            }
        }
        drawStatus()
    }

    private func drawStatus() {
        guard let terminal else { return }
        let time = player.currentTime()
        let duration = player.currentItem?.duration ?? .indefinite
        let position = time.isNumeric ? time.seconds : 0
        let total = duration.isNumeric ? duration.seconds : 0
        let filled = total > 0 ? min(Self.barWidth, Int(Double(Self.barWidth) * position / total)) : 0
        let bar = String(repeating: "=", count: filled) + String(repeating: "-", count: Self.barWidth - filled)
        let state: String
        switch player.timeControlStatus {
        case .playing: state = ">"
        case .paused: state = "||"
        case .waitingToPlayAtSpecifiedRate: state = "..."
        }
        let speed = player.defaultRate == 1 ? "" : String(format: " x%g", player.defaultRate)
        terminal.draw("\(state) \(Self.clock(position)) / \(total > 0 ? Self.clock(total) : "--:--") [\(bar)]\(speed) \(player.outputName)")
    }

    /// The speed a rate key moves `rate` to: the next step of `rateSteps` down or up (from
    /// a rate between steps, the nearest step that way), or 1.
    static func rate(after rate: Float, key: Terminal.Key) -> Float {
        switch key {
        case .slower: return rateSteps.last { $0 < rate - 1e-3 } ?? rateSteps[0]
        case .faster: return rateSteps.first { $0 > rate + 1e-3 } ?? rateSteps[rateSteps.count - 1]
        default: return 1
        }
    }

    /// "m:ss" or "h:mm:ss".
    static func clock(_ seconds: Double) -> String {
        let whole = Int(max(0, seconds.isFinite ? seconds : 0))
        let h = whole / 3600, m = (whole / 60) % 60, s = whole % 60
        return h > 0 ? String(format: "%d:%02d:%02d", h, m, s) : String(format: "%d:%02d", m, s)
    }
}
