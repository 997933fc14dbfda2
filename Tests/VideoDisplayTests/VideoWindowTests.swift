internal import CSDL2
import Glibc
import MutexAnnotations
import Synchronization
import Testing
import ChorusTestSupport
@testable import VideoDisplay

/// Whether an X display is there to open windows on (run under Xvfb:
/// `Xvfb :97 -screen 0 1280x720x24 -nolisten tcp & export DISPLAY=:97`).
let hasDisplay = getenv("DISPLAY") != nil

/// Collects what the window sends, from its thread.
private final class EventLog: Sendable {
    private let events = Mutex<[WindowEvent]>([])

    var all: [WindowEvent] { events.withLockAnnotated { $0 } }

    func record(_ event: WindowEvent) { events.withLockAnnotated { $0.append(event) } }
}

/// Planes a test source owns. `@unchecked Sendable`: the buffers are written
/// in `init` and afterwards only inside `frame(forRefreshAt:)` on the window
/// thread, which is also the only reader (through the frames it hands out).
private final class Planes: @unchecked Sendable {
    let width: Int
    let height: Int
    let y: UnsafeMutablePointer<UInt8>
    let u: UnsafeMutablePointer<UInt8>
    let v: UnsafeMutablePointer<UInt8>
    let uv: UnsafeMutablePointer<UInt8>

    init(width: Int, height: Int, y: UInt8, u: UInt8, v: UInt8) {
        self.width = width
        self.height = height
        let chroma = (width / 2) * (height / 2)
        self.y = .allocate(capacity: width * height)
        self.u = .allocate(capacity: chroma)
        self.v = .allocate(capacity: chroma)
        self.uv = .allocate(capacity: chroma * 2)
        self.y.initialize(repeating: y, count: width * height)
        self.u.initialize(repeating: u, count: chroma)
        self.v.initialize(repeating: v, count: chroma)
        for i in 0..<chroma {
            self.uv[2 * i] = u
            self.uv[2 * i + 1] = v
        }
    }

    deinit {
        y.deallocate()
        u.deallocate()
        v.deallocate()
        uv.deallocate()
    }

    func frame(_ format: DisplayPixelFormat, identity: Int64) -> DisplayFrame {
        switch format {
        case .yuv420p:
            DisplayFrame(
                format: .yuv420p, width: width, height: height,
                planes: (UnsafePointer(y), UnsafePointer(u), UnsafePointer(v)),
                strides: (width, width / 2, width / 2), identity: identity)
        case .nv12:
            DisplayFrame(
                format: .nv12, width: width, height: height,
                planes: (UnsafePointer(y), UnsafePointer(uv), nil),
                strides: (width, width, 0), identity: identity)
        }
    }
}

/// Hands out one solid-colour frame, then keeps it on screen.
private final class SolidSource: VideoFrameSource {
    let planes: Planes
    let format: DisplayPixelFormat
    let identity: Int64
    private let state = Mutex<(handedOut: Bool, presented: [Int64])>((false, []))
    let overlayState: OverlayState

    let colorMatrix: DisplayColorMatrix

    init(format: DisplayPixelFormat, identity: Int64, overlay: OverlayState = OverlayState(),
         yuv: (UInt8, UInt8, UInt8) = (81, 90, 240), colorMatrix: DisplayColorMatrix = .bt601) {
        // By default BT.601 limited range for pure red: R=255, G=0, B=0.
        planes = Planes(width: 320, height: 240, y: yuv.0, u: yuv.1, v: yuv.2)
        self.format = format
        self.identity = identity
        self.colorMatrix = colorMatrix
        overlayState = overlay
    }

    var presented: [Int64] { state.withLockAnnotated { $0.presented } }

    func frame(forRefreshAt hostNanoseconds: Int64, refreshNanoseconds: Int64) -> DisplayFrame? {
        let first = state.withLockAnnotated { s in
            defer { s.handedOut = true }
            return !s.handedOut
        }
        guard first else { return nil }
        var frame = planes.frame(format, identity: identity)
        frame.colorMatrix = colorMatrix
        return frame
    }

    func presented(identity: Int64, atHostNanoseconds: Int64) {
        state.withLockAnnotated { $0.presented.append(identity) }
    }

    func overlay() -> OverlayState { overlayState }
}

/// Frame N at refresh N, each with N drawn in its Y plane as 16 blocks,
/// most significant bit left, white for 1 and black for 0.
private final class CountingSource: VideoFrameSource {
    static let bits = 16
    static let blockWidth = 16
    let planes = Planes(width: CountingSource.bits * CountingSource.blockWidth, height: 64, y: 16, u: 128, v: 128)
    private let state = Mutex<(next: Int64, presented: [Int64])>((1, []))

    var presented: [Int64] { state.withLockAnnotated { $0.presented } }

    func frame(forRefreshAt hostNanoseconds: Int64, refreshNanoseconds: Int64) -> DisplayFrame? {
        let identity = state.withLockAnnotated { s in
            defer { s.next += 1 }
            return s.next
        }
        for bit in 0..<Self.bits {
            let on = identity & (1 << Int64(Self.bits - 1 - bit)) != 0
            for row in 0..<planes.height {
                let start = row * planes.width + bit * Self.blockWidth
                (planes.y + start).update(repeating: on ? 235 : 16, count: Self.blockWidth)
            }
        }
        return planes.frame(.yuv420p, identity: identity)
    }

    func presented(identity: Int64, atHostNanoseconds: Int64) {
        state.withLockAnnotated { $0.presented.append(identity) }
    }

    func overlay() -> OverlayState { OverlayState() }
}

/// One frame with a due time off the window's refresh grid: records every refresh it is
/// asked about, and hands the frame out for the first refresh at or after its due time.
private final class DueSource: VideoFrameSource {
    let planes = Planes(width: 64, height: 64, y: 200, u: 128, v: 128)
    private let state = Mutex<(due: Int64?, periods: Set<Int64>, handedOutFor: Int64?)>((nil, [], nil))

    /// The frame's due time, set once the window's loop is running, so that opening the
    /// window (slow on a loaded machine) is not part of what is timed.
    var due: Int64? {
        get { state.withLockAnnotated { $0.due } }
        set { state.withLockAnnotated { $0.due = newValue } }
    }

    /// The refresh the frame was handed out for, and the refresh periods asked with.
    var handedOutFor: Int64? { state.withLockAnnotated { $0.handedOutFor } }
    var refreshPeriods: Set<Int64> { state.withLockAnnotated { $0.periods } }

    func frame(forRefreshAt hostNanoseconds: Int64, refreshNanoseconds: Int64) -> DisplayFrame? {
        let hand = state.withLockAnnotated { s -> Bool in
            s.periods.insert(refreshNanoseconds)
            guard s.handedOutFor == nil, let due = s.due, hostNanoseconds >= due else { return false }
            s.handedOutFor = hostNanoseconds
            return true
        }
        return hand ? planes.frame(.yuv420p, identity: 7) : nil
    }

    func nextFrameDue() -> Int64? { state.withLockAnnotated { $0.handedOutFor == nil ? $0.due : nil } }

    func presented(identity: Int64, atHostNanoseconds: Int64) {}

    func overlay() -> OverlayState { OverlayState() }
}

/// Polls until `condition` holds or `timeout` passes.
private func eventually(timeout: Duration = .seconds(5), _ condition: () -> Bool) async -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while clock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

private func isClose(_ a: UInt8, _ b: UInt8, tolerance: Int = 12) -> Bool {
    abs(Int(a) - Int(b)) <= tolerance
}

private func push(_ event: SDL_Event) {
    var event = event
    SDL_PushEvent(&event)
}

/// One suite, serialized: SDL allows one video subsystem per process, and
/// the no-display test changes DISPLAY for the duration of its SDL_Init.
@Suite(.serialized, .ownThread) struct VideoWindowTests {
    private func open(
        _ source: any VideoFrameSource, geometry: String = "640x360", gravity: VideoGravity = .resizeAspect,
        log: EventLog = EventLog()
    ) throws -> VideoWindow {
        try VideoWindow(
            title: "Chorus test", geometry: WindowGeometry(parsing: geometry), fullscreen: false,
            gravity: gravity, source: source, onEvent: { log.record($0) })
    }

    @Test func missingDisplayIsAnErrorNotACrash() {
        let environment = [
            EnvironmentOverride(name: "DISPLAY", value: ":4242"),
            EnvironmentOverride(name: "WAYLAND_DISPLAY", value: nil),
            EnvironmentOverride(name: "SDL_VIDEODRIVER", value: nil),
        ]
        do {
            let window = try VideoWindow(
                title: "nowhere", geometry: nil, fullscreen: false, gravity: .resizeAspect,
                source: SolidSource(format: .yuv420p, identity: 1), onEvent: { _ in },
                environment: environment)
            window.close()
            Issue.record("a window opened on a display that does not exist")
        } catch {
            guard case .noDisplay(let reason) = error else {
                Issue.record("expected noDisplay, got \(error)")
                return
            }
            #expect(reason.contains("DISPLAY=:4242"))
        }
        // The failed attempt released SDL: a second one fails the same way
        // rather than with windowAlreadyOpen.
        #expect(throws: VideoWindowError.self) {
            try VideoWindow(
                title: "nowhere", geometry: nil, fullscreen: false, gravity: .resizeAspect,
                source: SolidSource(format: .yuv420p, identity: 1), onEvent: { _ in },
                environment: environment)
        }
        #expect(SDLOwnership.claim())
        SDLOwnership.release()
    }

    @Test(.enabled(if: hasDisplay), arguments: [DisplayPixelFormat.yuv420p, .nv12])
    func solidFrameIsPresentedAndReadBack(format: DisplayPixelFormat) async throws {
        let source = SolidSource(format: format, identity: 42)
        let window = try open(source)
        defer { window.close() }
        #expect(await eventually { window.isReadyForDisplay })
        #expect(source.presented == [42])
        let snapshot = try #require(window.readPixels())
        #expect(snapshot.frameIdentity == 42)
        let centre = try #require(snapshot.pixel(x: snapshot.width / 2, y: snapshot.height / 2))
        #expect(isClose(centre.red, 255) && isClose(centre.green, 0) && isClose(centre.blue, 0), "centre is \(centre)")
        // A 4:3 picture in a 16:9 window is pillarboxed: the left edge is black.
        let edge = try #require(snapshot.pixel(x: 4, y: snapshot.height / 2))
        #expect(edge.red < 8 && edge.green < 8 && edge.blue < 8, "edge is \(edge)")
        let rect = window.videoRect
        #expect(rect.height == Double(snapshot.height))
        #expect(rect.width == (Double(snapshot.height) * 4 / 3).rounded())
    }

    /// BT.709's red (limited range Y 63, U 102, V 240) is full red only through BT.709's
    /// matrix: through BT.601's its red channel reads about 233.
    @Test(.enabled(if: hasDisplay), arguments: [DisplayColorMatrix.bt709, .bt601])
    func colourMatrixIsTheFramesOwn(matrix: DisplayColorMatrix) async throws {
        let source = SolidSource(format: .yuv420p, identity: 7, yuv: (63, 102, 240), colorMatrix: matrix)
        let window = try open(source)
        defer { window.close() }
        #expect(await eventually { window.isReadyForDisplay })
        let snapshot = try #require(window.readPixels())
        let centre = try #require(snapshot.pixel(x: snapshot.width / 2, y: snapshot.height / 2))
        if matrix == .bt709 {
            #expect(centre.red >= 248 && centre.green <= 8 && centre.blue <= 8, "centre is \(centre)")
        } else {
            #expect(centre.red >= 222 && centre.red <= 244, "centre is \(centre)")
        }
    }

    @Test(.enabled(if: hasDisplay)) func shownPictureCarriesTheLastPresentedIdentity() async throws {
        let source = CountingSource()
        let window = try open(source)
        defer { window.close() }
        #expect(await eventually { source.presented.count >= 20 })
        for _ in 0..<3 {
            let snapshot = try #require(window.readPixels())
            let identity = try #require(snapshot.frameIdentity)
            let rect = window.videoRect
            var decoded: Int64 = 0
            for bit in 0..<CountingSource.bits {
                let across: Double = (Double(bit) + 0.5) / Double(CountingSource.bits)
                let x = Int(rect.x + across * rect.width)
                let middle: Double = rect.y + rect.height / 2
                let pixel = try #require(snapshot.pixel(x: x, y: Int(middle)))
                decoded = decoded << 1 | (pixel.green > 128 ? 1 : 0)
            }
            #expect(decoded == identity & 0xFFFF)
            // The snapshot is taken on the refresh that presents it, and the
            // reply is sent after `presented`.
            #expect(source.presented.contains(identity))
        }
        #expect(window.refreshInterval > .zero)
    }

    /// A display with no refresh rate of its own (Xvfb) takes a frame for the instant it is
    /// due, not for the next instant of the window's own grid.
    @Test(.enabled(if: hasDisplay)) func aDisplayWithoutRefreshRateShowsAFrameAtItsDueTime() async throws {
        let source = DueSource()
        let window = try open(source)
        defer { window.close() }
        #expect(await eventually { !source.refreshPeriods.isEmpty })
        // Set once the loop runs, well ahead so the loop is not late for it even on a busy
        // machine, and a third of a millisecond off any 60 Hz grid instant.
        let due = HostClock.now() + 300_333_333
        source.due = due
        #expect(await eventually { window.isReadyForDisplay })
        let periods = source.refreshPeriods
        try #require(periods == [0], "the display reports a refresh rate (\(periods)): nothing to check here")
        #expect(source.handedOutFor == due)
    }

    @Test(.enabled(if: hasDisplay)) func closingTwiceIsSafe() throws {
        let window = try open(SolidSource(format: .yuv420p, identity: 1))
        #expect(!window.isClosed)
        window.close()
        window.close()
        #expect(window.isClosed)
        #expect(window.readPixels(timeout: .milliseconds(200)) == nil)
        // SDL was released: another window may open.
        let second = try open(SolidSource(format: .yuv420p, identity: 2))
        second.close()
    }

    @Test(.enabled(if: hasDisplay)) func onlyOneWindowAtATime() throws {
        let window = try open(SolidSource(format: .yuv420p, identity: 1))
        defer { window.close() }
        #expect(throws: VideoWindowError.windowAlreadyOpen) {
            try open(SolidSource(format: .yuv420p, identity: 2))
        }
    }

    @Test(.enabled(if: hasDisplay)) func gravityChangesMoveTheVideoRect() async throws {
        let window = try open(SolidSource(format: .yuv420p, identity: 1), geometry: "800x600")
        defer { window.close() }
        let content = try ContentGeometry(width: 1920, height: 1080)
        window.setContentGeometry(content)
        let snapshot = try #require(window.readPixels())
        for gravity in [VideoGravity.resizeAspect, .resizeAspectFill, .resize, .resizeAspect] {
            window.gravity = gravity
            #expect(window.gravity == gravity)
            // The source's frame (320x240) keeps the content's SAR and
            // rotation; its own size decides the shape.
            let frame = try #require(content.adapted(toWidth: 320, height: 240))
            let expected = try VideoGeometry(
                content: frame, gravity: gravity,
                drawableWidth: snapshot.width, drawableHeight: snapshot.height
            ).videoRect
            #expect(await eventually { window.videoRect == expected }, "\(gravity): \(window.videoRect) != \(expected)")
        }
    }

    @Test(.enabled(if: hasDisplay)) func fullscreenCoversTheScreen() async throws {
        let log = EventLog()
        let window = try open(SolidSource(format: .yuv420p, identity: 1), geometry: "800x450+10+10", log: log)
        defer { window.close() }
        #expect(!window.isFullscreen)
        window.isFullscreen = true
        #expect(window.isFullscreen)
        #expect(await eventually { log.all.contains { if case .resized = $0 { true } else { false } } })
        let snapshot = try #require(window.readPixels())
        #expect(snapshot.width > 800 && snapshot.height > 450, "\(snapshot.width)x\(snapshot.height)")
    }

    @Test(.enabled(if: hasDisplay)) func closedByThePersonIsReportedOnce() async throws {
        let log = EventLog()
        let window = try open(SolidSource(format: .yuv420p, identity: 1), log: log)
        var event = SDL_Event()
        event.type = SDL_QUIT.rawValue
        push(event)
        push(event)
        #expect(await eventually { window.isClosed })
        #expect(log.all.filter { $0 == .closed }.count == 1)
        window.close()
        window.close()
        #expect(window.readPixels(timeout: .milliseconds(200)) == nil)
    }

    @Test(.enabled(if: hasDisplay)) func keysAndOverlayClicksBecomeEvents() async throws {
        let log = EventLog()
        let source = SolidSource(
            format: .yuv420p, identity: 1,
            overlay: OverlayState(isPaused: true, elapsedSeconds: 30, durationSeconds: 120, rate: 1.5, droppedFrames: 2))
        let window = try open(source, log: log)
        defer { window.close() }
        let snapshot = try #require(window.readPixels())
        let layout = OverlayLayout(drawableWidth: snapshot.width, drawableHeight: snapshot.height)

        var key = SDL_Event()
        key.type = SDL_KEYDOWN.rawValue
        key.key.keysym.sym = SDL_Keycode(SDLK_f.rawValue)
        push(key)
        key.key.keysym.sym = SDL_Keycode(SDLK_SPACE.rawValue)
        push(key)
        #expect(await eventually { log.all.contains(.toggleFullscreen) && log.all.contains(.key(.space)) })

        // Motion shows the overlay; clicks only act on controls that are shown.
        var motion = SDL_Event()
        motion.type = SDL_MOUSEMOTION.rawValue
        motion.motion.x = Int32(snapshot.width / 2)
        motion.motion.y = Int32(snapshot.height / 2)
        push(motion)
        let shown = await eventually {
            guard let s = window.readPixels(), let p = s.pixel(x: layout.panel.x + 300, y: layout.panel.y + 2) else {
                return false
            }
            // The translucent band darkens the red picture behind it.
            return p.red < 200
        }
        #expect(shown)

        var click = SDL_Event()
        click.type = SDL_MOUSEBUTTONDOWN.rawValue
        click.button.button = UInt8(SDL_BUTTON_LEFT)
        click.button.clicks = 1
        click.button.x = Int32(layout.button.x + layout.button.width / 2)
        click.button.y = Int32(layout.button.y + layout.button.height / 2)
        push(click)
        #expect(await eventually { log.all.contains(.togglePause) })

        click.button.x = Int32(layout.track.x + (layout.track.width - 1) / 4)
        click.button.y = Int32(layout.track.y + 1)
        push(click)
        var release = click
        release.type = SDL_MOUSEBUTTONUP.rawValue
        push(release)
        #expect(await eventually { log.all.contains { if case .seek = $0 { true } else { false } } })
        if case .seek(let fraction)? = log.all.last(where: { if case .seek = $0 { true } else { false } }) {
            #expect(abs(fraction - 0.25) < 0.01)
        }

        // A double-click on the picture asks for fullscreen.
        let before = log.all.filter { $0 == .toggleFullscreen }.count
        click.button.clicks = 2
        click.button.x = Int32(snapshot.width / 2)
        click.button.y = Int32(snapshot.height / 3)
        push(click)
        #expect(await eventually { log.all.filter { $0 == .toggleFullscreen }.count == before + 1 })
    }
}
