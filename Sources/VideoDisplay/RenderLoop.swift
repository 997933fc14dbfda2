internal import CSDL2
import Glibc
import Synchronization

/// Everything that runs on the window thread: SDL setup, the refresh loop,
/// input, overlay drawing and teardown. Confined to that thread (it is handed
/// over whole through `pthread_create`), so its SDL state needs no locks.
///
/// Steady-state discipline: no heap allocation per refresh (the rectangle
/// batch and text line are preallocated or inline; SDL's own software paths
/// may still allocate internally), no logging, and no blocking lock: caller
/// changes arrive through atomics and try-locks. Allocation happens only on
/// rare events: key text, title changes, texture (re)creation, read-backs.
final class RenderLoop {
    struct Configuration {
        var geometry: WindowGeometry?
        var fullscreen: Bool
        var environment: [EnvironmentOverride]
    }

    /// Refresh rate assumed when the display mode reports 0 Hz (Xvfb, some
    /// virtual machines), in Hz: what nearly every desktop display runs at.
    static let fallbackRefreshRate: Int64 = 60
    /// `fallbackRefreshRate` as a period, in nanoseconds.
    static let fallbackRefreshInterval: Int64 = HostClock.nanosecondsPerSecond / fallbackRefreshRate
    /// Window width without a `--geometry`, in pixels: 16:9 with
    /// `defaultWindowHeight`, and fits a 1280x720 screen with decorations.
    static let defaultWindowWidth = 960
    /// Window height without a `--geometry`, in pixels (see `defaultWindowWidth`).
    static let defaultWindowHeight = 540
    /// How long the overlay stays after the last mouse motion, in nanoseconds.
    static let overlayLinger: Int64 = 2 * HostClock.nanosecondsPerSecond
    /// Consecutive presents that must contradict the current pacing mode
    /// before switching, in presents: one odd present (a missed vblank, a
    /// triple-buffered queue filling up) must not flip the mode.
    static let pacingEvidence = 8
    /// Rectangles batched into one SDL_RenderFillRects call, in rectangles:
    /// a full overlay line needs a few hundred.
    static let rectBatchCapacity = 2048
    /// Video drivers that run without any display. SDL falls back to them
    /// when X11/Wayland/KMS fail, which would "open" an invisible window, so
    /// they are only used when SDL_VIDEODRIVER names them.
    static let headlessVideoDrivers: Set<String> = ["offscreen", "dummy", "evdev"]

    /// Overlay colours, RGBA: a translucent band keeps the picture visible
    /// behind the controls.
    static let panelColor = (red: UInt8(0), green: UInt8(0), blue: UInt8(0), alpha: UInt8(160))
    static let trackColor = (red: UInt8(255), green: UInt8(255), blue: UInt8(255), alpha: UInt8(80))
    static let foregroundColor = (red: UInt8(255), green: UInt8(255), blue: UInt8(255), alpha: UInt8(230))
    /// Extra height of the scrub handle above and below the track, in pixels at scale 1.
    static let handleOverhang = 3
    /// Width of the scrub handle, in pixels at scale 1.
    static let handleWidth = 4
    /// Gap between the right-hand text's fields ("dropped 3", "1.5x", "-1:02"), in spaces.
    static let fieldGap: StaticString = "  "

    private let shared: WindowShared
    private let source: any VideoFrameSource
    private let onEvent: @Sendable (WindowEvent) -> Void
    private let configuration: Configuration

    private var sdlInitialized = false
    private var window: OpaquePointer?
    private var renderer: OpaquePointer?
    private var texture: OpaquePointer?
    private var textureFormat: DisplayPixelFormat?
    private var textureWidth = 0
    private var textureHeight = 0
    /// The frame now in the texture; it is what a read-back shows.
    private var textureIdentity: Int64?

    private var content: ContentGeometry?
    private var seenContentGeneration: UInt64 = 0
    private var seenTitleGeneration: UInt64 = 0
    private var gravity: VideoGravity
    private var geometry: VideoGeometry?
    private var geometryDirty = true
    private var videoRectToPublish: DisplayRect?
    private var fullscreenApplied: Bool
    /// Whether the display is kept awake, as last applied (none is when the window opens:
    /// `SDL_HINT_VIDEO_ALLOW_SCREENSAVER`).
    private var keepAwakeApplied = false
    private var outputWidth = 0
    private var outputHeight = 0
    private var windowWidth = 0
    private var windowHeight = 0
    private var layout = OverlayLayout(drawableWidth: 1, drawableHeight: 1)

    private var interval = RenderLoop.fallbackRefreshInterval
    private var hasVSync = false
    /// The colour conversion the texture was made with.
    private var textureMatrix = DisplayColorMatrix.bt601
    /// What a present has been taking lately, in nanoseconds, when the loop paces itself.
    private var presentCost: Int64 = 0
    /// Whether `presentCost` has been measured once (it starts from the first present's cost).
    private var presentCostMeasured = false
    /// How far one present moves `presentCost`, in nanoseconds, toward its own cost: the
    /// estimate walks to the median cost, and a present's cost of a few milliseconds is
    /// followed within a few dozen presents after a resize.
    static let presentCostStep: Int64 = 100_000
    /// How long before a picture's present starts, in nanoseconds, the loop wakes to take
    /// it, upload it and draw it, on a display with no refresh rate: a 1080p picture's
    /// upload takes about a millisecond, and a busy machine wakes a thread late by more.
    static let preparationLead: Int64 = 4_000_000
    /// Whether the display reports a refresh rate (a real screen's vertical blank).
    private var displayHasRefreshRate = false
    /// True while presents are seen to block until vblank; false means the
    /// loop sleeps to its own refresh grid instead.
    private var pacedByVSync = false
    private var contraryPresents = 0
    private var lastPresentEnd: Int64 = 0
    /// The next instant of the loop's own refresh grid.
    private var nextRefresh: Int64 = 0
    /// The last due time the loop woke for, on a display with no refresh rate: a frame is
    /// woken for once, so a source that keeps reporting a due time it does not honour
    /// cannot make the loop spin.
    private var lastDueTarget: Int64 = .min

    /// The subtitle drawn over the picture, and its texture (made at the largest size
    /// needed so far, so a new line is an upload, not an allocation).
    private var subtitle: SubtitleBitmap?
    private var subtitleTexture: OpaquePointer?
    private var subtitleTextureWidth = 0
    private var subtitleTextureHeight = 0
    private var subtitleUploaded: Int?

    private var overlayDeadline: Int64 = 0
    private var overlayShown = false
    private var overlayState: OverlayState?
    private var cursorHidden = false
    private var dragging = false
    private var pendingSeek: Double?
    private var swallowText = false
    private var closedSent = false
    private var needsRedraw = true

    private var servedReadRequest: UInt64 = 0
    private var pendingReply: ReadReply?

    private let rects: UnsafeMutableBufferPointer<SDL_Rect>
    private var rectCount = 0
    private var text = OverlayText()

    init(
        shared: WindowShared, source: any VideoFrameSource,
        onEvent: @escaping @Sendable (WindowEvent) -> Void, configuration: Configuration
    ) {
        self.shared = shared
        self.source = source
        self.onEvent = onEvent
        self.configuration = configuration
        gravity = VideoGravity(code: shared.gravity.load(ordering: .acquiring))
        fullscreenApplied = configuration.fullscreen
        rects = .allocate(capacity: Self.rectBatchCapacity)
    }

    deinit {
        rects.deallocate()
    }

    // MARK: Thread body

    /// Name of the window thread, as `top -H` and debuggers show it (at most
    /// 15 characters, the kernel's limit).
    static let threadName = "chorus-video"

    func run() {
        chorus_name_current_thread(Self.threadName)
        let outcome = start()
        shared.startup.withLock { $0 = outcome }
        shared.startupSignal.signal()
        if case .running = outcome, !shared.stopRequested.load(ordering: .acquiring) {
            refreshLoop()
        }
        teardown()
        shared.hasStopped.store(true, ordering: .releasing)
        // Wake a `readPixels` caller waiting for a refresh that will not come.
        shared.readSignal.signal()
        SDLOwnership.release()
    }

    private func start() -> StartupOutcome {
        let saved = configuration.environment.map { ($0.name, Self.environment($0.name)) }
        for override in configuration.environment {
            if let value = override.value {
                setenv(override.name, value, 1)
            } else {
                unsetenv(override.name)
            }
        }
        let userChoseDriver = Self.environment("SDL_VIDEODRIVER") != nil
        // A media player owns SIGINT/SIGTERM; SDL turning them into SDL_QUIT
        // would close the window instead of stopping the player.
        SDL_SetHint(SDL_HINT_NO_SIGNAL_HANDLERS, "1")
        SDL_SetHint(SDL_HINT_RENDER_SCALE_QUALITY, "linear")
        // SDL keeps the display awake for as long as its video is up unless told otherwise;
        // a window that stays open over a paused player should let the display sleep. The
        // player asks for the display to be kept awake while it plays (`keepsDisplayAwake`).
        SDL_SetHint(SDL_HINT_VIDEO_ALLOW_SCREENSAVER, "1")
        if !userChoseDriver {
            SDL_SetHint(SDL_HINT_VIDEODRIVER, Self.displayDrivers())
        }
        let initialized = SDL_Init(SDL_INIT_VIDEO) == 0
        let seen = Self.displayVariables()
        for (name, value) in saved {
            if let value { setenv(name, value, 1) } else { unsetenv(name) }
        }
        guard initialized else {
            return .failed(.noDisplay(reason: "SDL_Init: \(Self.sdlError()) (\(seen))"))
        }
        sdlInitialized = true
        let driver = SDL_GetCurrentVideoDriver().map { String(cString: $0) } ?? "unknown"
        if Self.headlessVideoDrivers.contains(driver) && !userChoseDriver {
            return .failed(.noDisplay(reason: "SDL found only the headless \"\(driver)\" video driver (\(seen))"))
        }

        var bounds = SDL_Rect()
        let screen =
            SDL_GetDisplayUsableBounds(0, &bounds) == 0
            ? DisplayRect(x: Double(bounds.x), y: Double(bounds.y), width: Double(bounds.w), height: Double(bounds.h))
            : DisplayRect(x: 0, y: 0, width: Double(Self.defaultWindowWidth), height: Double(Self.defaultWindowHeight))
        let placement = (configuration.geometry ?? WindowGeometry()).resolved(
            in: screen, defaultWidth: Self.defaultWindowWidth, defaultHeight: Self.defaultWindowHeight)
        var flags = SDL_WINDOW_RESIZABLE.rawValue | SDL_WINDOW_ALLOW_HIGHDPI.rawValue
        if configuration.fullscreen { flags |= SDL_WINDOW_FULLSCREEN_DESKTOP.rawValue }
        seenTitleGeneration = shared.titleGeneration.load(ordering: .acquiring)
        let title = shared.title.withLock { $0 }
        window = SDL_CreateWindow(
            title,
            Int32(placement.x ?? Int(chorus_sdl_windowpos_centered())),
            Int32(placement.y ?? Int(chorus_sdl_windowpos_centered())),
            Int32(placement.width), Int32(placement.height), flags)
        guard let window else {
            return .failed(.sdlFailure(call: "SDL_CreateWindow", message: Self.sdlError()))
        }

        // A display that reports no refresh rate (Xvfb, a virtual screen) has no vertical
        // blank to wait for: its renderer's "vsync" is a per-process throttle of arbitrary
        // phase. Without it the loop keeps its own grid, in phase with the host clock, so
        // windows of several processes on one display change pictures at the same instants.
        updateRefreshInterval(window: window)
        let vsync = displayHasRefreshRate ? SDL_RENDERER_PRESENTVSYNC.rawValue : 0
        renderer = SDL_CreateRenderer(window, -1, SDL_RENDERER_ACCELERATED.rawValue | vsync)
        if renderer == nil {
            // No GPU (or no GL for it): SDL's software renderer always works.
            renderer = SDL_CreateRenderer(window, -1, SDL_RENDERER_SOFTWARE.rawValue)
        }
        guard let renderer else {
            return .failed(.sdlFailure(call: "SDL_CreateRenderer", message: Self.sdlError()))
        }
        var info = SDL_RendererInfo()
        SDL_GetRendererInfo(renderer, &info)
        let rendererName = info.name.map { String(cString: $0) } ?? "unknown"
        hasVSync = info.flags & SDL_RENDERER_PRESENTVSYNC.rawValue != 0
        pacedByVSync = hasVSync
        SDL_SetRenderDrawBlendMode(renderer, SDL_BLENDMODE_BLEND)

        updateRefreshInterval()
        updateSizes(report: false)
        seenContentGeneration = shared.contentGeneration.load(ordering: .acquiring)
        content = shared.content.withLock { $0 }
        updateGeometryIfNeeded()

        // Black rather than whatever the window's memory held until the
        // first frame arrives.
        SDL_SetRenderDrawColor(renderer, 0, 0, 0, 255)
        SDL_RenderClear(renderer)
        SDL_RenderPresent(renderer)
        lastPresentEnd = HostClock.now()
        nextRefresh = (lastPresentEnd / interval + 1) * interval
        return .running(renderer: rendererName, driver: driver, vsync: hasVSync)
    }

    private func teardown() {
        if let subtitleTexture { SDL_DestroyTexture(subtitleTexture) }
        subtitleTexture = nil
        if let texture { SDL_DestroyTexture(texture) }
        if let renderer { SDL_DestroyRenderer(renderer) }
        if let window { SDL_DestroyWindow(window) }
        texture = nil
        renderer = nil
        window = nil
        if sdlInitialized { SDL_Quit() }
        sdlInitialized = false
    }

    // MARK: Refresh loop

    private func refreshLoop() {
        while !shared.stopRequested.load(ordering: .acquiring) {
            var target = nextRefresh
            let now = HostClock.now()
            // A display with no vertical blank (Xvfb, a virtual screen) shows a picture the
            // moment it is presented: each frame goes out at its own due time, between the
            // grid's refreshes, which then only keep the controls and input going. Screens of
            // one group, sharing the timeline, still change pictures at the same instants.
            let presentsOnDemand = !displayHasRefreshRate
            if presentsOnDemand, let due = source.nextFrameDue(), due > lastDueTarget, due < target + interval {
                target = max(due, now)
                lastDueTarget = due
            }
            pollEvents(now: now)
            if closedSent { return }
            applyRequests()
            deliverReply()

            var newIdentity: Int64?
            if let frame = source.frame(forRefreshAt: target, refreshNanoseconds: presentsOnDemand ? 0 : interval),
                upload(frame)
            {
                newIdentity = frame.identity
                needsRedraw = true
            }
            updateGeometryIfNeeded()
            publishVideoRect()
            updateOverlay(now: now)
            let wantedSubtitle = source.subtitle()
            if wantedSubtitle?.identity != subtitle?.identity {
                subtitle = wantedSubtitle
                needsRedraw = true
            }

            let readRequest = shared.readRequest.load(ordering: .acquiring)
            let wantsRead = readRequest != servedReadRequest && pendingReply == nil
            guard needsRedraw || wantsRead else {
                // Nothing changed: keep the refresh cadence without presenting, waking early
                // enough to prepare a picture that comes due before the grid's next instant.
                var wake = target
                if presentsOnDemand, let due = source.nextFrameDue(), due > lastDueTarget {
                    wake = min(wake, due - presentCost - Self.preparationLead)
                }
                HostClock.sleep(until: wake)
                advanceGrid(now: HostClock.now())
                continue
            }
            draw()
            if wantsRead {
                pendingReply = ReadReply(id: readRequest, snapshot: readBack())
                servedReadRequest = readRequest
            }
            // Started early by what presenting has been taking (a software renderer draws the
            // whole frame inside the present), so the picture is out at the refresh's instant.
            if !pacedByVSync { HostClock.sleep(until: target - presentCost) }
            let presentStart = HostClock.now()
            SDL_RenderPresent(renderer)
            let presentEnd = HostClock.now()
            if !pacedByVSync {
                // A median, followed in fixed steps: one slow present (a busy machine) moves it
                // by a step, not by its size, and a lasting change is followed within a second.
                let cost = presentEnd - presentStart
                let step = presentCostMeasured ? (cost > presentCost ? Self.presentCostStep : -Self.presentCostStep) : cost - presentCost
                presentCost = max(0, min(interval, presentCost + step))
                presentCostMeasured = true
            }
            needsRedraw = false
            if let newIdentity {
                source.presented(identity: newIdentity, atHostNanoseconds: presentEnd)
                shared.readyForDisplay.store(true, ordering: .releasing)
            }
            deliverReply()
            updatePacing(presentStart: presentStart, presentEnd: presentEnd)
            if pacedByVSync {
                nextRefresh = presentEnd + interval
            } else {
                advanceGrid(now: presentEnd)
            }
        }
    }

    /// Moves the loop's own grid on once `now` has reached its next instant (a wake-up for a
    /// frame's due time between two grid instants leaves it where it is).
    private func advanceGrid(now: Int64) {
        if now >= nextRefresh - interval / 2 {
            nextRefresh = Self.gridInstant(after: nextRefresh, interval: interval, now: now)
        }
    }

    /// The next instant on the refresh grid after `previous`; when the loop
    /// has fallen more than an interval behind, whole intervals are skipped
    /// (keeping the grid's phase) rather than rushing to catch up.
    static func gridInstant(after previous: Int64, interval: Int64, now: Int64) -> Int64 {
        var next = previous + interval
        if now >= next { next += ((now - next) / interval + 1) * interval }
        return next
    }

    /// Decides from what presents actually do whether vsync paces the loop.
    /// SDL's PRESENTVSYNC flag only says vsync was asked for: under Xvfb or
    /// with a hidden window a present may return at once, and then the loop
    /// must sleep to its own grid or it would spin.
    private func updatePacing(presentStart: Int64, presentEnd: Int64) {
        let half = interval / 2
        if pacedByVSync {
            contraryPresents = presentEnd - lastPresentEnd < half ? contraryPresents + 1 : 0
        } else if hasVSync {
            contraryPresents = presentEnd - presentStart > half ? contraryPresents + 1 : 0
        }
        if contraryPresents >= Self.pacingEvidence {
            pacedByVSync.toggle()
            contraryPresents = 0
        }
        lastPresentEnd = presentEnd
    }

    // MARK: Caller requests

    private func applyRequests() {
        let requestedGravity = VideoGravity(code: shared.gravity.load(ordering: .acquiring))
        if requestedGravity != gravity {
            gravity = requestedGravity
            geometryDirty = true
        }
        let contentGeneration = shared.contentGeneration.load(ordering: .acquiring)
        if contentGeneration != seenContentGeneration,
            let latest: ContentGeometry? = shared.content.withLockIfAvailable({ $0 })
        {
            seenContentGeneration = contentGeneration
            if latest != content {
                // Content taken away (an item without pictures, a picture turned off): the
                // last picture goes too, and the window shows black until the next one.
                if latest == nil, let texture {
                    SDL_DestroyTexture(texture)
                    self.texture = nil
                    textureFormat = nil
                    textureWidth = 0
                    textureHeight = 0
                    textureIdentity = nil
                }
                content = latest
                geometryDirty = true
            }
        }
        let titleGeneration = shared.titleGeneration.load(ordering: .acquiring)
        if titleGeneration != seenTitleGeneration,
            let title = shared.title.withLockIfAvailable({ $0 })
        {
            seenTitleGeneration = titleGeneration
            SDL_SetWindowTitle(window, title)
        }
        let wantsAwake = shared.keepAwakeRequested.load(ordering: .acquiring)
        if wantsAwake != keepAwakeApplied {
            if wantsAwake { SDL_DisableScreenSaver() } else { SDL_EnableScreenSaver() }
            keepAwakeApplied = wantsAwake
            shared.keepAwakeApplied.store(SDL_IsScreenSaverEnabled() == SDL_FALSE, ordering: .releasing)
        }
        let wantsFullscreen = shared.fullscreenRequested.load(ordering: .acquiring)
        if wantsFullscreen != fullscreenApplied {
            let flags = wantsFullscreen ? SDL_WINDOW_FULLSCREEN_DESKTOP.rawValue : 0
            if SDL_SetWindowFullscreen(window, flags) == 0 {
                fullscreenApplied = wantsFullscreen
                updateSizes(report: true)
            } else {
                // Keep the getter honest when the window manager refuses.
                _ = shared.fullscreenRequested.compareExchange(
                    expected: wantsFullscreen, desired: fullscreenApplied, ordering: .acquiringAndReleasing)
            }
        }
    }

    private func deliverReply() {
        guard let reply = pendingReply else { return }
        if shared.readReply.withLockIfAvailable({ $0 = reply }) != nil {
            pendingReply = nil
            shared.readSignal.signal()
        }
    }

    private func publishVideoRect() {
        guard let rect = videoRectToPublish else { return }
        if shared.videoRect.withLockIfAvailable({ $0 = rect }) != nil {
            videoRectToPublish = nil
        }
    }

    // MARK: Geometry

    private func updateGeometryIfNeeded() {
        guard geometryDirty else { return }
        geometryDirty = false
        let picture: ContentGeometry?
        if textureWidth > 0 {
            picture =
                content?.adapted(toWidth: textureWidth, height: textureHeight)
                ?? (try? ContentGeometry(width: textureWidth, height: textureHeight))
        } else {
            picture = content
        }
        // A minimised window has a 0x0 drawable: no geometry, nothing drawn.
        geometry = picture.flatMap {
            try? VideoGeometry(
                content: $0, gravity: gravity, drawableWidth: outputWidth, drawableHeight: outputHeight)
        }
        videoRectToPublish = geometry?.videoRect ?? .zero
        needsRedraw = true
    }

    private func updateSizes(report: Bool) {
        var width: Int32 = 0
        var height: Int32 = 0
        SDL_GetRendererOutputSize(renderer, &width, &height)
        var pointsWide: Int32 = 0
        var pointsHigh: Int32 = 0
        SDL_GetWindowSize(window, &pointsWide, &pointsHigh)
        windowWidth = Int(pointsWide)
        windowHeight = Int(pointsHigh)
        needsRedraw = true
        guard Int(width) != outputWidth || Int(height) != outputHeight else { return }
        outputWidth = Int(width)
        outputHeight = Int(height)
        layout = OverlayLayout(drawableWidth: outputWidth, drawableHeight: outputHeight)
        geometryDirty = true
        if report { onEvent(.resized(width: outputWidth, height: outputHeight)) }
    }

    private func updateRefreshInterval(window: OpaquePointer? = nil) {
        var mode = SDL_DisplayMode()
        let display = max(0, SDL_GetWindowDisplayIndex(window ?? self.window))
        if SDL_GetCurrentDisplayMode(display, &mode) == 0, mode.refresh_rate > 0 {
            interval = HostClock.nanosecondsPerSecond / Int64(mode.refresh_rate)
            displayHasRefreshRate = true
        } else {
            interval = Self.fallbackRefreshInterval
            displayHasRefreshRate = false
        }
        shared.refreshInterval.store(interval, ordering: .relaxed)
    }

    // MARK: Frames

    private func upload(_ frame: DisplayFrame) -> Bool {
        guard frame.isUploadable else { return false }
        if texture == nil || textureFormat != frame.format
            || textureWidth != frame.width || textureHeight != frame.height || textureMatrix != frame.colorMatrix
        {
            if let texture { SDL_DestroyTexture(texture) }
            let format = frame.format == .yuv420p ? SDL_PIXELFORMAT_IYUV : SDL_PIXELFORMAT_NV12
            // SDL picks a texture's YUV conversion when the texture is made.
            switch frame.colorMatrix {
            case .bt601: SDL_SetYUVConversionMode(SDL_YUV_CONVERSION_BT601)
            case .bt709: SDL_SetYUVConversionMode(SDL_YUV_CONVERSION_BT709)
            case .fullRange601: SDL_SetYUVConversionMode(SDL_YUV_CONVERSION_JPEG)
            }
            textureMatrix = frame.colorMatrix
            texture = SDL_CreateTexture(
                renderer, format.rawValue, Int32(SDL_TEXTUREACCESS_STREAMING.rawValue),
                Int32(frame.width), Int32(frame.height))
            geometryDirty = true
            guard texture != nil else {
                textureFormat = nil
                textureWidth = 0
                textureHeight = 0
                textureIdentity = nil
                return false
            }
            textureFormat = frame.format
            textureWidth = frame.width
            textureHeight = frame.height
        }
        let status: Int32
        switch frame.format {
        case .yuv420p:
            status = SDL_UpdateYUVTexture(
                texture, nil,
                frame.planes.0, Int32(frame.strides.0),
                frame.planes.1, Int32(frame.strides.1),
                frame.planes.2, Int32(frame.strides.2))
        case .nv12:
            status = SDL_UpdateNVTexture(
                texture, nil,
                frame.planes.0, Int32(frame.strides.0),
                frame.planes.1, Int32(frame.strides.1))
        }
        guard status == 0 else { return false }
        textureIdentity = frame.identity
        return true
    }

    private func draw() {
        SDL_SetRenderDrawColor(renderer, 0, 0, 0, 255)
        SDL_RenderClear(renderer)
        if let texture, let geometry {
            var source = SDL_Rect(
                x: Int32(geometry.sourceRect.x), y: Int32(geometry.sourceRect.y),
                w: Int32(geometry.sourceRect.width), h: Int32(geometry.sourceRect.height))
            var destination = SDL_FRect(
                x: Float(geometry.drawRect.x), y: Float(geometry.drawRect.y),
                w: Float(geometry.drawRect.width), h: Float(geometry.drawRect.height))
            if geometry.rotationDegrees == 0 {
                // The plain copy avoids the software renderer's per-call
                // rotation surfaces.
                SDL_RenderCopyF(renderer, texture, &source, &destination)
            } else {
                SDL_RenderCopyExF(
                    renderer, texture, &source, &destination,
                    Double(geometry.rotationDegrees), nil, SDL_FLIP_NONE)
            }
        }
        if let subtitle { drawSubtitle(subtitle) }
        if overlayShown, let overlayState { drawOverlay(overlayState) }
    }

    /// The gap below a subtitle, as a share of the picture's height.
    static let subtitleMarginShare = 0.04

    /// Draws `bitmap` centred at the foot of the picture (of the window, before the first
    /// picture), within the window.
    private func drawSubtitle(_ bitmap: SubtitleBitmap) {
        guard bitmap.width > 0, bitmap.height > 0, bitmap.pixels.count >= bitmap.width * bitmap.height * 4 else { return }
        if subtitleTexture == nil || bitmap.width > subtitleTextureWidth || bitmap.height > subtitleTextureHeight {
            if let subtitleTexture { SDL_DestroyTexture(subtitleTexture) }
            let width = max(bitmap.width, subtitleTextureWidth)
            let height = max(bitmap.height, subtitleTextureHeight)
            subtitleTexture = SDL_CreateTexture(renderer, SDL_PIXELFORMAT_ARGB8888.rawValue,
                                                Int32(SDL_TEXTUREACCESS_STREAMING.rawValue), Int32(width), Int32(height))
            guard let subtitleTexture else { return }
            SDL_SetTextureBlendMode(subtitleTexture, SDL_BLENDMODE_BLEND)
            subtitleTextureWidth = width
            subtitleTextureHeight = height
            subtitleUploaded = nil
        }
        var area = SDL_Rect(x: 0, y: 0, w: Int32(bitmap.width), h: Int32(bitmap.height))
        if subtitleUploaded != bitmap.identity {
            let status = bitmap.pixels.withUnsafeBytes { bytes in
                SDL_UpdateTexture(subtitleTexture, &area, bytes.baseAddress, Int32(bitmap.width * 4))
            }
            guard status == 0 else { return }
            subtitleUploaded = bitmap.identity
        }
        let picture = geometry?.drawRect
        let (left, top, width, height) = picture.map { ($0.x, $0.y, $0.width, $0.height) } ?? (0, 0, Double(outputWidth), Double(outputHeight))
        let x = left + (width - Double(bitmap.width)) / 2
        let y = min(top + height, Double(outputHeight)) - Double(bitmap.height) - height * Self.subtitleMarginShare
        var destination = SDL_FRect(x: Float(x), y: Float(max(0, y)), w: Float(bitmap.width), h: Float(bitmap.height))
        SDL_RenderCopyF(renderer, subtitleTexture, &area, &destination)
    }

    private func readBack() -> WindowSnapshot? {
        guard outputWidth > 0, outputHeight > 0 else { return nil }
        var pixels = [UInt8](repeating: 0, count: outputWidth * outputHeight * 4)
        let status = pixels.withUnsafeMutableBytes { buffer in
            SDL_RenderReadPixels(
                renderer, nil, SDL_PIXELFORMAT_RGBA32.rawValue, buffer.baseAddress, Int32(outputWidth * 4))
        }
        guard status == 0 else { return nil }
        return WindowSnapshot(
            width: outputWidth, height: outputHeight, rgba: pixels, frameIdentity: textureIdentity)
    }

    // MARK: Input

    private func pollEvents(now: Int64) {
        var event = SDL_Event()
        while SDL_PollEvent(&event) != 0 {
            switch event.type {
            case SDL_QUIT.rawValue:
                sendClosed()
            case SDL_WINDOWEVENT.rawValue:
                handleWindowEvent(event.window)
            case SDL_KEYDOWN.rawValue:
                let key = event.key
                let translation = KeyTranslation.translate(
                    keycode: Int(key.keysym.sym), modifiers: Int(key.keysym.mod), isRepeat: key.repeat != 0)
                swallowText = translation.swallowsText
                if let translated = translation.event { onEvent(translated) }
            case SDL_TEXTINPUT.rawValue:
                handleText(event.text)
            case SDL_MOUSEMOTION.rawValue:
                overlayDeadline = now + Self.overlayLinger
                if dragging {
                    pendingSeek = layout.fraction(atX: pixelX(event.motion.x))
                }
            case SDL_MOUSEBUTTONDOWN.rawValue where Int32(event.button.button) == SDL_BUTTON_LEFT:
                handleClick(event.button, now: now)
            case SDL_MOUSEBUTTONUP.rawValue where Int32(event.button.button) == SDL_BUTTON_LEFT:
                dragging = false
            default:
                break
            }
            if closedSent { return }
        }
        if let seek = pendingSeek {
            pendingSeek = nil
            onEvent(.seek(toFraction: seek))
        }
    }

    private func sendClosed() {
        guard !closedSent else { return }
        closedSent = true
        onEvent(.closed)
    }

    private func handleWindowEvent(_ event: SDL_WindowEvent) {
        switch UInt32(event.event) {
        case SDL_WINDOWEVENT_CLOSE.rawValue:
            sendClosed()
        case SDL_WINDOWEVENT_SIZE_CHANGED.rawValue:
            let actual = SDL_GetWindowFlags(window) & SDL_WINDOW_FULLSCREEN.rawValue != 0
            if actual != fullscreenApplied {
                // The window manager changed it (a keyboard shortcut, say).
                fullscreenApplied = actual
                shared.fullscreenRequested.store(actual, ordering: .releasing)
            }
            updateSizes(report: true)
        case SDL_WINDOWEVENT_EXPOSED.rawValue:
            needsRedraw = true
        case SDL_WINDOWEVENT_DISPLAY_CHANGED.rawValue:
            updateRefreshInterval()
        default:
            break
        }
    }

    private func handleText(_ event: SDL_TextInputEvent) {
        guard !swallowText else {
            swallowText = false
            return
        }
        let text = withUnsafeBytes(of: event.text) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
        for character in text { onEvent(.key(.character(character))) }
    }

    private func handleClick(_ event: SDL_MouseButtonEvent, now: Int64) {
        let wasShown = overlayShown
        overlayDeadline = now + Self.overlayLinger
        // Controls the person cannot see do not react; the click only shows them.
        let hit = wasShown ? layout.hit(x: pixelX(event.x), y: pixelY(event.y)) : .outside
        switch hit {
        case .scrub(let fraction):
            if overlayState?.durationSeconds != nil {
                dragging = true
                pendingSeek = fraction
            }
        case .playPause:
            onEvent(.togglePause)
        case .panel:
            break
        case .outside:
            if event.clicks == 2 { onEvent(.toggleFullscreen) }
        }
    }

    /// Mouse positions arrive in window points; the layout is in drawable
    /// pixels, which differ on HiDPI screens.
    private func pixelX(_ x: Int32) -> Int {
        windowWidth > 0 ? Int(x) * outputWidth / windowWidth : Int(x)
    }

    private func pixelY(_ y: Int32) -> Int {
        windowHeight > 0 ? Int(y) * outputHeight / windowHeight : Int(y)
    }

    // MARK: Overlay

    private func updateOverlay(now: Int64) {
        let visible = dragging || now < overlayDeadline
        if visible != overlayShown {
            overlayShown = visible
            needsRedraw = true
        }
        // In fullscreen the pointer would sit on the picture; it goes with
        // the controls, and comes back on leaving fullscreen.
        let hideCursor = !visible && fullscreenApplied
        if hideCursor != cursorHidden {
            cursorHidden = hideCursor
            SDL_ShowCursor(hideCursor ? SDL_DISABLE : SDL_ENABLE)
        }
        guard overlayShown else { return }
        let state = source.overlay()
        if state != overlayState {
            overlayState = state
            needsRedraw = true
        }
    }

    private func drawOverlay(_ state: OverlayState) {
        let s = layout.scale
        setColor(Self.panelColor)
        addRect(layout.panel)
        setColor(Self.trackColor)
        addRect(layout.track)
        setColor(Self.foregroundColor)
        if let duration = state.durationSeconds, duration > 0, state.elapsedSeconds.isFinite {
            let fraction = min(max(state.elapsedSeconds / duration, 0), 1)
            let filled = Int(Double(layout.track.width) * fraction)
            addRect(PixelRect(x: layout.track.x, y: layout.track.y, width: filled, height: layout.track.height))
            addRect(
                PixelRect(
                    x: layout.track.x + filled - Self.handleWidth * s / 2,
                    y: layout.track.y - Self.handleOverhang * s,
                    width: Self.handleWidth * s,
                    height: layout.track.height + 2 * Self.handleOverhang * s))
        }
        let button = layout.button
        if state.isPaused {
            // A right-pointing triangle ("play"), in rows one scale unit high.
            let half = Double(button.height) / 2
            for row in stride(from: 0, to: button.height, by: s) {
                let distance = abs(Double(row) + Double(s) / 2 - half) / half
                let width = Int(Double(button.width) * (1 - distance))
                addRect(PixelRect(x: button.x, y: button.y + row, width: width, height: s))
            }
        } else {
            let bar = button.width / 3
            addRect(PixelRect(x: button.x, y: button.y, width: bar, height: button.height))
            addRect(PixelRect(x: button.x + button.width - bar, y: button.y, width: bar, height: button.height))
        }

        text.clear()
        text.appendTime(seconds: state.elapsedSeconds)
        addText(x: layout.leftTextX)

        text.clear()
        if state.droppedFrames > 0 {
            text.append("dropped ")
            text.append(state.droppedFrames)
            text.append(Self.fieldGap)
        }
        text.appendRate(state.rate)
        if let duration = state.durationSeconds {
            text.append(Self.fieldGap)
            text.append(UInt8(ascii: "-"))
            text.appendTime(seconds: max(0, duration - max(0, state.elapsedSeconds)))
        }
        addText(x: layout.rightTextEnd - layout.textWidth(characters: text.count))
        flushRects()
    }

    /// Adds the current line as filled rectangles, one per horizontal run of
    /// set pixels in each glyph row.
    private func addText(x: Int) {
        let pixel = layout.fontPixel
        for index in 0..<text.count {
            let glyph = BitmapFont.glyph(text.bytes[index])
            guard glyph != 0 else { continue }
            let left = x + index * BitmapFont.advance * pixel
            for row in 0..<BitmapFont.glyphHeight {
                let bits = BitmapFont.row(glyph, row)
                var column = 0
                while column < BitmapFont.glyphWidth {
                    let mask = UInt8(1) << UInt8(BitmapFont.glyphWidth - 1 - column)
                    guard bits & mask != 0 else {
                        column += 1
                        continue
                    }
                    let start = column
                    while column < BitmapFont.glyphWidth,
                        bits & (UInt8(1) << UInt8(BitmapFont.glyphWidth - 1 - column)) != 0
                    {
                        column += 1
                    }
                    addRect(
                        PixelRect(
                            x: left + start * pixel, y: layout.textTop + row * pixel,
                            width: (column - start) * pixel, height: pixel))
                }
            }
        }
    }

    private func setColor(_ color: (red: UInt8, green: UInt8, blue: UInt8, alpha: UInt8)) {
        flushRects()
        SDL_SetRenderDrawColor(renderer, color.red, color.green, color.blue, color.alpha)
    }

    private func addRect(_ rect: PixelRect) {
        guard rect.width > 0, rect.height > 0 else { return }
        if rectCount == rects.count { flushRects() }
        rects[rectCount] = SDL_Rect(x: Int32(rect.x), y: Int32(rect.y), w: Int32(rect.width), h: Int32(rect.height))
        rectCount += 1
    }

    private func flushRects() {
        guard rectCount > 0 else { return }
        SDL_RenderFillRects(renderer, rects.baseAddress, Int32(rectCount))
        rectCount = 0
    }

    // MARK: Helpers

    private static func sdlError() -> String {
        SDL_GetError().map { String(cString: $0) } ?? ""
    }

    private static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// DISPLAY and WAYLAND_DISPLAY as SDL saw them, for error messages.
    private static func displayVariables() -> String {
        ["DISPLAY", "WAYLAND_DISPLAY"].map { name in
            environment(name).map { "\(name)=\($0)" } ?? "\(name) unset"
        }.joined(separator: ", ")
    }

    /// SDL's compiled-in video drivers minus the headless ones, in SDL's
    /// order of preference, as a SDL_VIDEODRIVER list.
    private static func displayDrivers() -> String {
        // libwayland finds its socket only through these variables; with none
        // set it cannot connect and only prints an error on stderr.
        let waylandReachable = ["WAYLAND_DISPLAY", "WAYLAND_SOCKET", "XDG_RUNTIME_DIR"]
            .contains { environment($0) != nil }
        var names: [String] = []
        for index in 0..<SDL_GetNumVideoDrivers() {
            guard let name = SDL_GetVideoDriver(index).map({ String(cString: $0) }),
                !headlessVideoDrivers.contains(name),
                name != "wayland" || waylandReachable
            else { continue }
            names.append(name)
        }
        return names.joined(separator: ",")
    }
}

/// Turns a key press into a `WindowEvent`. Pure, so the mapping is tested
/// without a display.
enum KeyTranslation {
    struct Result: Equatable {
        /// The event to send, if any.
        var event: WindowEvent?
        /// Whether SDL's text event for this press must be dropped because
        /// the press was already reported by name.
        var swallowsText: Bool
    }

    /// - Parameters:
    ///   - keycode: SDL_Keycode (layout-mapped, unshifted).
    ///   - modifiers: SDL_Keymod bits.
    ///   - isRepeat: whether this is auto-repeat.
    static func translate(keycode: Int, modifiers: Int, isRepeat: Bool) -> Result {
        let commandKeys = Int(KMOD_CTRL.rawValue | KMOD_ALT.rawValue | KMOD_GUI.rawValue)
        guard modifiers & commandKeys == 0 else { return Result(event: nil, swallowsText: false) }
        let shifted = modifiers & Int(KMOD_SHIFT.rawValue) != 0

        func code(_ key: SDL_KeyCode) -> Int { Int(key.rawValue) }
        var key: WindowKey?
        var repeats = false
        var producesText = true
        switch keycode {
        case code(SDLK_ESCAPE): key = .escape; producesText = false
        case code(SDLK_LEFT): key = .left; producesText = false; repeats = true
        case code(SDLK_RIGHT): key = .right; producesText = false; repeats = true
        case code(SDLK_UP): key = .up; producesText = false; repeats = true
        case code(SDLK_DOWN): key = .down; producesText = false; repeats = true
        case code(SDLK_SPACE): key = .space
        case _ where shifted:
            // Shift changes the character (Q, >, {, !): SDL's text event
            // reports it correctly for the layout, as `.character`.
            return Result(event: nil, swallowsText: false)
        case code(SDLK_q): key = .q
        case code(SDLK_f): key = .f
        case code(SDLK_m): key = .m
        case code(SDLK_PERIOD): key = .period; repeats = true
        case code(SDLK_COMMA): key = .comma; repeats = true
        case code(SDLK_LEFTBRACKET): key = .leftBracket; repeats = true
        case code(SDLK_RIGHTBRACKET): key = .rightBracket; repeats = true
        case code(SDLK_0)...code(SDLK_9): key = .digit(keycode - code(SDLK_0))
        case code(SDLK_KP_1)...code(SDLK_KP_9): key = .digit(keycode - code(SDLK_KP_1) + 1)
        case code(SDLK_KP_0): key = .digit(0)
        default:
            return Result(event: nil, swallowsText: false)
        }
        guard let key, !isRepeat || repeats else {
            return Result(event: nil, swallowsText: producesText)
        }
        return Result(event: key == .f ? .toggleFullscreen : .key(key), swallowsText: producesText)
    }
}
