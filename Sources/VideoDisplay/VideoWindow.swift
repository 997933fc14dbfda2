import Dispatch
import Glibc
import Synchronization

/// A picture read back from the window: exactly what the last presentation
/// showed, overlay included. Meant for tests and for screenshots.
public struct WindowSnapshot: Sendable, Equatable {
    /// Width of the drawable, in pixels.
    public let width: Int
    /// Height of the drawable, in pixels.
    public let height: Int
    /// Pixels row by row from the top-left, four bytes each: red, green,
    /// blue, alpha.
    public let rgba: [UInt8]
    /// Identity of the source frame in the picture, nil before the first one.
    public let frameIdentity: Int64?

    /// The pixel at a drawable position, nil outside the picture.
    public func pixel(x: Int, y: Int) -> RGBA? {
        guard x >= 0, y >= 0, x < width, y < height else { return nil }
        let i = (y * width + x) * 4
        return RGBA(red: rgba[i], green: rgba[i + 1], blue: rgba[i + 2], alpha: rgba[i + 3])
    }
}

/// One 8-bit-per-channel colour.
public struct RGBA: Sendable, Equatable, CustomStringConvertible {
    /// Red, 0...255.
    public var red: UInt8
    /// Green, 0...255.
    public var green: UInt8
    /// Blue, 0...255.
    public var blue: UInt8
    /// Alpha, 0...255 (255 is opaque).
    public var alpha: UInt8

    /// A colour from its channels.
    public init(red: UInt8, green: UInt8, blue: UInt8, alpha: UInt8 = 255) {
        self.red = red
        self.green = green
        self.blue = blue
        self.alpha = alpha
    }

    /// `rgb(r,g,b)`, for test failures.
    public var description: String { "rgb(\(red),\(green),\(blue))" }
}

/// The video window: one native window whose every SDL call runs on one
/// dedicated thread that pulls frames from a `VideoFrameSource` once per
/// display refresh.
///
/// All properties may be read and set from any thread; changes reach the
/// window thread at its next refresh. SDL keeps one video subsystem per
/// process, so only one window may be open at a time.
public final class VideoWindow: Sendable {
    /// Longest wait for the window thread to report a window or a failure:
    /// X11 and Wayland connect in milliseconds, so 5 s only expires when a
    /// display server hangs, and then the caller gets an error, not a hang.
    public static let startupTimeout: Duration = .seconds(5)
    /// Longest `readPixels` waits by default: a few refreshes plus a slow
    /// software read-back of a 4K drawable.
    public static let defaultReadTimeout: Duration = .seconds(2)

    /// SDL's name for the renderer in use: "opengl", "opengles2",
    /// "software", …
    public let rendererName: String
    /// SDL's name for the video driver in use: "x11", "wayland", "KMSDRM", …
    public let videoDriver: String
    /// Whether the renderer was created with vsync (SDL_RENDERER_PRESENTVSYNC);
    /// the window still paces itself when presents turn out not to wait.
    public let hasVSync: Bool

    private let shared: WindowShared
    private let thread: pthread_t
    /// Whether the thread has been joined or detached; the lock is held while
    /// joining so a second `close()` returns only once the thread is gone.
    private let threadReleased = Mutex<Bool>(false)
    /// Serialises `readPixels` callers; the window thread never takes it.
    private let readGate = Mutex<UInt64>(0)

    /// Opens the window and waits (at most `startupTimeout`) until it exists.
    ///
    /// - Parameters:
    ///   - title: the window title.
    ///   - geometry: size and position; nil for 960x540, centred.
    ///   - fullscreen: start in (desktop) fullscreen.
    ///   - gravity: how the picture fills the window.
    ///   - source: supplies frames and overlay facts, on the window thread.
    ///   - onEvent: receives the person's input, on the window thread; must
    ///     return quickly (it may call any method of the window, `close()`
    ///     included).
    /// - Throws: `.noDisplay` with SDL's reason when there is no display,
    ///   `.sdlFailure` when SDL cannot create the window or renderer,
    ///   `.windowAlreadyOpen` when another window is open.
    public convenience init(
        title: String, geometry: WindowGeometry?, fullscreen: Bool, gravity: VideoGravity,
        source: any VideoFrameSource, onEvent: @escaping @Sendable (WindowEvent) -> Void
    ) throws(VideoWindowError) {
        try self.init(
            title: title, geometry: geometry, fullscreen: fullscreen, gravity: gravity,
            source: source, onEvent: onEvent, environment: [])
    }

    /// As the public initializer, plus environment variables to set on the
    /// window thread around SDL_Init only (then restored): SDL reads DISPLAY
    /// and friends there and offers no hint for them. For tests.
    init(
        title: String, geometry: WindowGeometry?, fullscreen: Bool, gravity: VideoGravity,
        source: any VideoFrameSource, onEvent: @escaping @Sendable (WindowEvent) -> Void,
        environment: [EnvironmentOverride]
    ) throws(VideoWindowError) {
        guard SDLOwnership.claim() else { throw .windowAlreadyOpen }
        let shared = WindowShared(gravity: gravity, fullscreen: fullscreen, title: title)
        let loop = RenderLoop(
            shared: shared, source: source, onEvent: onEvent,
            configuration: .init(geometry: geometry, fullscreen: fullscreen, environment: environment))

        // The loop is handed whole to the new thread (this side keeps no
        // reference), so its non-Sendable SDL state is only ever touched there.
        let context = Unmanaged.passRetained(loop).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { context in
            let loop = Unmanaged<RenderLoop>.fromOpaque(context!).takeRetainedValue()
            loop.run()
            return nil
        }, context)
        guard status == 0 else {
            Unmanaged<RenderLoop>.fromOpaque(context).release()
            SDLOwnership.release()
            throw .sdlFailure(call: "pthread_create", message: String(cString: strerror(status)))
        }

        let deadline = DispatchTime.now() + .nanoseconds(Int(Self.startupTimeout.nanoseconds))
        guard shared.startupSignal.wait(timeout: deadline) == .success,
            let outcome = shared.startup.withLock({ $0 })
        else {
            // The thread may be stuck inside a display connection; it tears
            // down and releases SDL by itself if that ever returns.
            shared.stopRequested.store(true, ordering: .releasing)
            pthread_detach(thread)
            throw .noDisplay(reason: "the window did not appear within \(Self.startupTimeout)")
        }
        switch outcome {
        case .failed(let error):
            pthread_join(thread, nil)
            throw error
        case .running(let renderer, let driver, let vsync):
            rendererName = renderer
            videoDriver = driver
            hasVSync = vsync
        }
        self.shared = shared
        self.thread = thread
    }

    deinit {
        close()
    }

    /// Sets what is known about the current item's pictures (frame size,
    /// sample aspect ratio, rotation, crop); nil forgets it and the picture on
    /// show (black until the next frame, which is then shown at its own size,
    /// 1:1, unrotated). Call it when an item loads.
    /// Frames of another coded size keep the SAR and rotation but lose the crop.
    public func setContentGeometry(_ content: ContentGeometry?) {
        shared.content.withLock { $0 = content }
        shared.contentGeneration.add(1, ordering: .releasing)
    }

    /// Changes the window title.
    public func setTitle(_ title: String) {
        shared.title.withLock { $0 = title }
        shared.titleGeneration.add(1, ordering: .releasing)
    }

    /// How the picture fills the window.
    public var gravity: VideoGravity {
        get { VideoGravity(code: shared.gravity.load(ordering: .acquiring)) }
        set { shared.gravity.store(newValue.code, ordering: .releasing) }
    }

    /// Whether the window covers its screen (desktop fullscreen, no mode
    /// change). Reads back the last request, or what the window manager did.
    public var isFullscreen: Bool {
        get { shared.fullscreenRequested.load(ordering: .acquiring) }
        set { shared.fullscreenRequested.store(newValue, ordering: .releasing) }
    }

    /// Whether the window keeps the display awake (no screen saver, no display sleep) while
    /// it is open. False when the window opens: the player showing pictures asks for it
    /// while it plays. Reads back the last request; `isKeepingDisplayAwake` is what the
    /// display thread last applied.
    public var keepsDisplayAwake: Bool {
        get { shared.keepAwakeRequested.load(ordering: .acquiring) }
        set { shared.keepAwakeRequested.store(newValue, ordering: .releasing) }
    }

    /// Whether the display is being kept awake, as SDL reports it after the display thread
    /// last applied `keepsDisplayAwake` (within a refresh of a change).
    public var isKeepingDisplayAwake: Bool { shared.keepAwakeApplied.load(ordering: .acquiring) }

    /// Where the picture was last placed in the drawable, in pixels; zero
    /// before anything is known about the picture.
    public var videoRect: DisplayRect {
        shared.videoRect.withLock { $0 }
    }

    /// The refresh period of the window's display; 60 Hz when the display
    /// does not say (as Xvfb does not).
    public var refreshInterval: Duration {
        .nanoseconds(shared.refreshInterval.load(ordering: .relaxed))
    }

    /// Whether a first frame has been presented.
    public var isReadyForDisplay: Bool {
        shared.readyForDisplay.load(ordering: .acquiring)
    }

    /// Whether the window thread has stopped (after `close()`, or after the
    /// person closed the window).
    public var isClosed: Bool {
        shared.hasStopped.load(ordering: .acquiring)
    }

    /// Reads back the picture the window shows, as drawn for the next
    /// presentation. Slow (a GPU read-back), so for tests and screenshots,
    /// not per frame; blocks until the window thread's next refresh.
    ///
    /// - Returns: nil when the window is closed or the timeout passes.
    public func readPixels(timeout: Duration = defaultReadTimeout) -> WindowSnapshot? {
        readGate.withLock { lastID -> WindowSnapshot? in
            guard !shared.hasStopped.load(ordering: .acquiring) else { return nil }
            lastID += 1
            let id = lastID
            shared.readRequest.store(id, ordering: .releasing)
            let deadline = DispatchTime.now() + .nanoseconds(Int(timeout.nanoseconds))
            while true {
                let waited = shared.readSignal.wait(timeout: deadline)
                // A signal may be left over from an earlier caller that timed
                // out, so only a reply carrying this id counts.
                let reply = shared.readReply.withLock { reply -> WindowSnapshot? in
                    guard reply.id == id else { return nil }
                    defer { reply.snapshot = nil }
                    return reply.snapshot
                }
                if let reply { return reply }
                if waited == .timedOut || shared.hasStopped.load(ordering: .acquiring) {
                    return nil
                }
            }
        }
    }

    /// Stops the window thread, destroys the window and shuts SDL down (all
    /// on that thread) and waits for it. Safe to call repeatedly, from any
    /// thread, after the person closed the window, and from `onEvent`
    /// (which cannot wait for its own thread, so then it only stops it).
    public func close() {
        shared.stopRequested.store(true, ordering: .releasing)
        threadReleased.withLock { released in
            guard !released else { return }
            released = true
            if pthread_equal(pthread_self(), thread) != 0 {
                pthread_detach(thread)
            } else {
                pthread_join(thread, nil)
            }
        }
    }
}

extension Duration {
    /// Whole nanoseconds, saturating.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : product + attoseconds / 1_000_000_000
    }
}

extension VideoGravity {
    /// A compact code so the gravity can live in an `Atomic`.
    var code: UInt8 {
        switch self {
        case .resize: 0
        case .resizeAspect: 1
        case .resizeAspectFill: 2
        }
    }

    init(code: UInt8) {
        switch code {
        case 0: self = .resize
        case 2: self = .resizeAspectFill
        default: self = .resizeAspect
        }
    }
}

/// An environment variable to set (or, with a nil value, unset) around SDL_Init.
struct EnvironmentOverride: Sendable {
    var name: String
    var value: String?
}

/// Guards SDL's process-wide video subsystem: claimed by a window before its
/// thread starts, released by that thread after SDL_Quit.
enum SDLOwnership {
    private static let inUse = Atomic<Bool>(false)

    static func claim() -> Bool {
        inUse.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }

    static func release() {
        inUse.store(false, ordering: .releasing)
    }
}

/// What the window thread reports once it has a window, or has failed.
enum StartupOutcome: Sendable {
    case running(renderer: String, driver: String, vsync: Bool)
    case failed(VideoWindowError)
}

/// A `readPixels` answer, tagged with the request it answers.
struct ReadReply: Sendable {
    var id: UInt64 = 0
    var snapshot: WindowSnapshot?
}

/// State shared by the public API and the window thread. Callers write with
/// plain locks or atomics; the window thread only reads atomics and try-locks,
/// so a caller holding a lock can delay a change by a refresh, never stall a
/// refresh.
final class WindowShared: Sendable {
    let stopRequested = Atomic<Bool>(false)
    let hasStopped = Atomic<Bool>(false)
    let gravity: Atomic<UInt8>
    let fullscreenRequested: Atomic<Bool>
    let keepAwakeRequested = Atomic<Bool>(false)
    let keepAwakeApplied = Atomic<Bool>(false)
    let content = Mutex<ContentGeometry?>(nil)
    let contentGeneration = Atomic<UInt64>(0)
    let title: Mutex<String>
    let titleGeneration = Atomic<UInt64>(0)
    let videoRect = Mutex<DisplayRect>(.zero)
    let refreshInterval: Atomic<Int64>
    let readyForDisplay = Atomic<Bool>(false)
    /// Id of the newest `readPixels` request; 0 before the first.
    let readRequest = Atomic<UInt64>(0)
    let readReply = Mutex(ReadReply())
    let readSignal = DispatchSemaphore(value: 0)
    let startup = Mutex<StartupOutcome?>(nil)
    let startupSignal = DispatchSemaphore(value: 0)

    init(gravity: VideoGravity, fullscreen: Bool, title: String) {
        self.gravity = Atomic(gravity.code)
        fullscreenRequested = Atomic(fullscreen)
        self.title = Mutex(title)
        refreshInterval = Atomic(RenderLoop.fallbackRefreshInterval)
    }
}
