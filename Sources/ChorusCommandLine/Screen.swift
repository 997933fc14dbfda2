import ArgumentParser
import AVPlayback
import ChorusSession
import Foundation
import MediaClock
import MutexAnnotations
import Synchronization

/// A node's video window: opened at once (`--video window`), or when an item with pictures
/// comes (play's default), and closed with the session. Its input becomes the same
/// `SessionCommand`s as the terminal's keys, so a leader's window drives the whole group.
final class Screen: Sendable {
    /// How often an `auto` screen looks for an item with pictures: a fifth of a second, well
    /// within an item's start.
    static let lookInterval: Duration = .milliseconds(200)

    private let session: any DrivenSession
    private let options: VideoOptions
    private let mode: VideoMode
    private let title: String
    private let view = Mutex<AVPlayerView?>(nil)
    private let watcher = Mutex<RepeatingTimer?>(nil)
    /// Set once an `auto` screen has found no display: said once, then sound alone.
    private let gaveUp = Atomic<Bool>(false)

    init(session: any DrivenSession, options: VideoOptions, defaultMode: VideoMode, title: String) {
        self.session = session
        self.options = options
        mode = options.mode(default: defaultMode)
        self.title = title
    }

    /// Opens the window now (`--video window`: failing is an error naming the reason), or
    /// starts looking for pictures (`auto`).
    func start() throws {
        switch mode {
        case .none:
            return
        case .window:
            do { try open() } catch {
                log.error("--video window: \(error)")
                throw ExitCode(1)
            }
        case .auto:
            let timer = RepeatingTimer(label: "chorus.screen", interval: Self.lookInterval,
                                       queue: DispatchQueue(label: "chorus.screen")) { [weak self] in self?.look() }
            watcher.withLockAnnotated { $0 = timer }
        }
    }

    /// Pictures dropped because they came due between two refreshes; nil with no window.
    var droppedFrames: Int? { view.withLockAnnotated { $0 }?.playerLayer.droppedFrameCount }

    /// Closes the window, if one is open.
    func close() {
        watcher.withLockAnnotated { timer in timer?.cancel(); timer = nil }
        let closing = view.withLockAnnotated { view in defer { view = nil }; return view }
        closing?.close()
    }

    private func look() {
        guard !gaveUp.load(ordering: .relaxed), view.withLockAnnotated({ $0 == nil }),
              let item = session.player.currentItem, item.status == .readyToPlay, item.presentationSize != .zero else { return }
        do {
            try open()
        } catch {
            gaveUp.store(true, ordering: .relaxed)
            watcher.withLockAnnotated { timer in timer?.cancel(); timer = nil }
            log.warning("no picture: \(error); playing the sound only")
        }
    }

    private func open() throws {
        let opened = try AVPlayerView(player: session.player, title: title, geometry: options.geometry,
                                      fullscreen: options.fullscreen, crop: options.crop,
                                      onEvent: { [weak self] event in self?.handle(event) },
                                      onWarning: { log.warning("\($0)") })
        view.withLockAnnotated { $0 = opened }
    }

    /// The window's input as the terminal's keys: the same commands, through the session.
    private func handle(_ event: WindowEvent) {
        let player = session.player
        switch event {
        case .togglePause, .key(.space): session.send(.togglePause)
        case .key(.left): session.send(.skip(by: CMTime(value: -SessionShell.seekStep.value, timescale: SessionShell.seekStep.timescale)))
        case .key(.right): session.send(.skip(by: SessionShell.seekStep))
        case .key(.leftBracket): session.send(.rate(PlaylistSession.rate(after: player.defaultRate, faster: false)))
        case .key(.rightBracket): session.send(.rate(PlaylistSession.rate(after: player.defaultRate, faster: true)))
        case .key(.period): session.send(.step(by: 1))
        case .key(.comma): session.send(.step(by: -1))
        case .key(.character("n")): session.send(.next)
        case .key(.character("p")): session.send(.previous)
        case .key(.q), .key(.escape), .closed: session.send(.stop)
        case .seek(let fraction):
            if let duration = player.currentItem?.duration, duration.isNumeric {
                session.send(.seek(to: CMTime(seconds: duration.seconds * min(max(fraction, 0), 1), preferredTimescale: 1_000_000)))
            }
        case .toggleFullscreen:
            if let view = view.withLockAnnotated({ $0 }) { view.isFullscreen.toggle() }
        default:
            break
        }
    }
}
