import Foundation
import MediaPipeline
import MutexAnnotations
import Synchronization
@_exported import VideoDisplay

/// A window that shows a player's pictures, in the role of AVKit's `AVPlayerView`: it hosts
/// an `AVPlayerLayer`, draws light on-screen controls when the mouse moves (play/pause, a
/// scrub bar, elapsed and remaining time, the speed), and goes fullscreen on `f` or a
/// double-click. A Chorus addition: on Apple's platforms the view comes from AVKit.
///
/// Runs on X11, Wayland or a console's KMS/DRM through SDL2. With no display, creating one
/// throws `VideoWindowError.noDisplay` with the reason.
///
/// Input: with no `onEvent`, the view acts on its player as AVKit's does (space and the
/// button pause and play, the bar and the arrows seek, `,` and `.` step while paused,
/// closing pauses). With `onEvent`, every input goes there instead, for an application
/// (a group's member, say) that routes them through its own transport.
public final class AVPlayerView: Sendable {
    /// How often the view brings the controls and the picture's shape up to date, off the
    /// display thread: ten times a second, faster than the eye reads the time.
    public static let housekeepingInterval: Duration = .milliseconds(100)
    /// How far the arrow keys seek, in seconds, when the view acts on its own.
    public static let arrowSeekSeconds: Double = 5

    /// The layer the view hosts.
    public let playerLayer: AVPlayerLayer
    /// The player whose pictures the view shows, as AVKit's view has it: its layer's.
    public var player: AVPlayer? {
        get { playerLayer.player }
        set { playerLayer.player = newValue }
    }
    private let window: VideoWindow
    private let source: LayerSource
    private let housekeeping: Mutex<RepeatingTimer?>
    private let crop: CropRect?
    /// Told, once per item, why its picture is shown otherwise than asked (a crop outside it).
    private let onWarning: (@Sendable (String) -> Void)?
    /// Lays out the chosen subtitles; nil when no font can be found (said once).
    private let rasterizer: SubtitleRasterizer?
    /// Subtitle bitmaps made so far, by what they show, with the identity each was given.
    private let subtitleCache = Mutex<(bitmaps: [String: SubtitleBitmap], made: Int)>(([:], 0))

    /// Opens a window showing `player`'s pictures. `geometry` is mpv's `--geometry`
    /// syntax (`WxH+X+Y`); `crop` is FFmpeg's (`W:H:X:Y`, source pixels), for a screen of a
    /// video wall that shows its own part of the picture.
    public init(player: AVPlayer?, title: String = "Chorus", geometry: String? = nil, fullscreen: Bool = false,
                crop: String? = nil, gravity: AVLayerVideoGravity = .resizeAspect,
                onEvent: (@Sendable (WindowEvent) -> Void)? = nil,
                onWarning: (@Sendable (String) -> Void)? = nil) throws(VideoWindowError) {
        self.onWarning = onWarning
        rasterizer = SubtitleRasterizer(failure: { onWarning?("\($0): subtitles are not drawn") })
        let layer = AVPlayerLayer(player: player)
        layer.videoGravity = gravity
        playerLayer = layer
        self.crop = try crop.map { text throws(VideoWindowError) in try CropRect(parsing: text) }
        let parsedGeometry = try geometry.map { text throws(VideoWindowError) in try WindowGeometry(parsing: text) }
        let source = LayerSource(layer: layer)
        self.source = source
        let handler = Mutex<(@Sendable (WindowEvent) -> Void)?>(nil)
        let opened = try VideoWindow(title: title, geometry: parsedGeometry, fullscreen: fullscreen,
                                     gravity: Self.displayGravity(gravity), source: source) { event in
            handler.withLockAnnotated { $0 }?(event)
        }
        window = opened
        housekeeping = Mutex(nil)
        let weakSelf = WeakBox<AVPlayerView>()
        let route: @Sendable (WindowEvent) -> Void = onEvent ?? { event in weakSelf.value?.act(on: event) }
        handler.withLockAnnotated { $0 = route }
        weakSelf.value = self
        let timer = RepeatingTimer(label: "chorus.view", interval: Self.housekeepingInterval,
                                   queue: DispatchQueue(label: "chorus.view.housekeeping")) { weakSelf.value?.keepUp() }
        housekeeping.withLockAnnotated { $0 = timer }
        keepUp()
    }

    deinit { close() }

    /// Closes the window (idempotent). The player goes on.
    public func close() {
        housekeeping.withLockAnnotated { timer in timer?.cancel(); timer = nil }
        window.close()
        playerLayer.player = nil
    }

    /// Whether the window fills its screen.
    public var isFullscreen: Bool {
        get { window.isFullscreen }
        set { window.isFullscreen = newValue }
    }

    /// Whether the person or the system closed the window.
    public var isClosed: Bool { window.isClosed }

    /// Where the picture lies in the window, in its pixels.
    public var videoRect: CGRect {
        let rect = window.videoRect
        return CGRect(x: rect.x, y: rect.y, width: rect.width, height: rect.height)
    }

    /// The display's refresh period.
    public var refreshInterval: Duration { window.refreshInterval }

    /// What the window shows now, read back from it: its pixels as RGBA and the number of
    /// the picture in them (for screenshots, and for checking what was shown).
    public func snapshot() -> WindowSnapshot? { window.readPixels() }

    /// Whether the view's display is being kept awake now (see
    /// `AVPlayer.preventsDisplaySleepDuringVideoPlayback`).
    public var isKeepingDisplayAwake: Bool { window.isKeepingDisplayAwake }

    /// What the view does with input when the application takes none: AVKit's behaviour.
    private func act(on event: WindowEvent) {
        guard let player = playerLayer.player else { return }
        switch event {
        case .togglePause, .key(.space):
            if player.rate == 0 { player.play() } else { player.pause() }
        case .seek(let fraction):
            if let duration = player.currentItem?.duration, duration.isNumeric {
                player.seek(to: CMTime(seconds: duration.seconds * min(max(fraction, 0), 1), preferredTimescale: 1_000_000),
                            toleranceBefore: .zero, toleranceAfter: .zero)
            }
        case .key(.left), .key(.right):
            let step = event == .key(.left) ? -Self.arrowSeekSeconds : Self.arrowSeekSeconds
            player.seek(to: player.currentTime() + CMTime(seconds: step, preferredTimescale: 1_000_000))
        case .key(.period), .key(.comma):
            if player.rate == 0 { player.currentItem?.step(byCount: event == .key(.period) ? 1 : -1) }
        case .toggleFullscreen:
            window.isFullscreen.toggle()
        case .closed:
            player.pause()
        default:
            break
        }
    }

    /// Off the display thread: the controls' figures, and the picture's shape when a new
    /// item brings another.
    private func keepUp() {
        // The layer's values the window moves (its video rectangle, readiness) and key paths
        // through its player are noticed here.
        playerLayer.observationRegistry.poke()
        guard let player = playerLayer.player else {
            window.keepsDisplayAwake = false
            return
        }
        let now = player.currentTime()
        let item = player.currentItem
        // As on Apple's platforms: the display stays awake while pictures play, if the
        // player asks it to (`preventsDisplaySleepDuringVideoPlayback`), and may sleep while
        // they are paused or there are none.
        window.keepsDisplayAwake = player.preventsDisplaySleepDuringVideoPlayback && player.rate != 0
            && item.map { $0.videoTrack != nil && $0.showsPictures } == true
        let duration = item?.duration ?? .indefinite
        source.overlayState.publish(OverlayState(
            isPaused: player.rate == 0, elapsedSeconds: now.isNumeric ? now.seconds : 0,
            durationSeconds: duration.isNumeric ? duration.seconds : nil, rate: Double(player.rate == 0 ? player.defaultRate : player.rate),
            droppedFrames: playerLayer.droppedFrameCount))
        updateSubtitles(player: player, item: item, now: now)
        guard let item, item.status == .readyToPlay else { return }
        guard let track = item.videoTrack, item.showsPictures else {
            // An item without pictures after one with, or the picture turned off: black,
            // rather than the last picture of something else.
            if source.lastShape.withLockAnnotated({ last in defer { last = nil }; return last != nil }) {
                window.setContentGeometry(nil)
            }
            return
        }
        let info = track.trackInfo
        let shape = Shape(width: info.width ?? 0, height: info.height ?? 0, aspect: info.sampleAspectRatio.map { [$0.width, $0.height] },
                          rotation: Int(info.rotationDegrees))
        guard source.lastShape.withLockAnnotated({ last in defer { last = shape }; return last != shape }) else { return }
        func content(crop: CropRect?) throws(VideoWindowError) -> ContentGeometry {
            try ContentGeometry(width: shape.width, height: shape.height,
                                sampleAspectNumerator: shape.aspect?[0] ?? 1, sampleAspectDenominator: shape.aspect?[1] ?? 1,
                                rotationDegrees: shape.rotation, crop: crop)
        }
        var made: ContentGeometry?
        do {
            made = try content(crop: crop)
        } catch {
            // A crop that does not fit this item's picture: the whole picture, and say why.
            onWarning?("\(error); showing the whole picture")
            made = try? content(crop: nil)
        }
        if let content = made {
            window.setContentGeometry(content)
        }
        window.setTitle((item.asset as? AVURLAsset)?.url.lastPathComponent ?? "Chorus")
    }

    // MARK: - Subtitles

    /// The subtitles' line height as a share of the picture's height: a twentieth, the size
    /// broadcast subtitles are read at.
    static let subtitleHeightShare = 0.05
    /// The smallest line height drawn, in pixels: smaller is not legible.
    static let minimumSubtitlePixels = 12
    /// How far behind and ahead of the playhead subtitles are laid out, in seconds: a seek
    /// back or a housekeeping tick late still finds them ready.
    static let subtitleLookBehind = 1.0
    static let subtitleLookAhead = 5.0
    /// Bitmaps kept for lines no longer near the playhead, at most.
    static let subtitleCacheLimit = 64

    /// Off the display thread: lays out the chosen subtitles near the playhead and hands
    /// them to the display, which draws the one for the picture it shows.
    private func updateSubtitles(player: AVPlayer, item: AVPlayerItem?, now: CMTime) {
        guard let rasterizer, let item, item.layersDrawSubtitles, let stream = item.shownSubtitleStream, now.isNumeric else {
            source.subtitles.publish([])
            return
        }
        let rect = window.videoRect
        let fontPixels = max(Self.minimumSubtitlePixels, Int((rect.height * Self.subtitleHeightShare).rounded()))
        let maxWidth = Int(rect.width * 0.9)
        guard rect.height > 0, maxWidth > 0 else { return }
        let cues = item.subtitleCues
        var time = max(.zero, now - CMTime(seconds: Self.subtitleLookBehind, preferredTimescale: 1000))
        let horizon = now + CMTime(seconds: Self.subtitleLookAhead, preferredTimescale: 1000)
        var timed: [TimedSubtitle] = []
        var used: Set<String> = []
        while time <= horizon {
            let showing = cues.cues(stream: stream, at: time).map(\.text)
            let next = cues.nextChange(stream: stream, after: time)
            if !showing.isEmpty {
                let key = "\(fontPixels)|\(maxWidth)|" + showing.joined(separator: "\n")
                used.insert(key)
                let bitmap = subtitleCache.withLockAnnotated { cache -> SubtitleBitmap? in cache.bitmaps[key] }
                    ?? makeBitmap(rasterizer, lines: showing, fontPixels: fontPixels, maxWidth: maxWidth, key: key)
                if let bitmap {
                    timed.append(TimedSubtitle(start: Self.nanoseconds(time), end: next.map(Self.nanoseconds) ?? .max, bitmap: bitmap))
                }
            }
            guard let next, next > time else { break }
            time = next
        }
        subtitleCache.withLockAnnotated { cache in
            if cache.bitmaps.count > Self.subtitleCacheLimit { cache.bitmaps = cache.bitmaps.filter { used.contains($0.key) } }
        }
        source.subtitles.publish(timed)
    }

    private func makeBitmap(_ rasterizer: SubtitleRasterizer, lines: [String], fontPixels: Int, maxWidth: Int, key: String) -> SubtitleBitmap? {
        let identity = subtitleCache.withLockAnnotated { cache in
            cache.made += 1
            return cache.made
        }
        guard let bitmap = rasterizer.bitmap(lines: lines, fontPixels: fontPixels, maxWidth: maxWidth, identity: identity) else { return nil }
        subtitleCache.withLockAnnotated { $0.bitmaps[key] = bitmap }
        return bitmap
    }

    /// `time` in nanoseconds, as the pictures carry it.
    static func nanoseconds(_ time: CMTime) -> Int64 {
        time.convertScale(1_000_000_000, method: .roundHalfAwayFromZero).value
    }

    /// A bitmap and the item times (nanoseconds) it shows between.
    struct TimedSubtitle: Sendable {
        let start: Int64
        let end: Int64
        let bitmap: SubtitleBitmap
    }

    private struct Shape: Equatable, Sendable {
        var width: Int, height: Int, aspect: [Int]?, rotation: Int
    }

    static func displayGravity(_ gravity: AVLayerVideoGravity) -> VideoGravity {
        switch gravity {
        case .resize: return .resize
        case .resizeAspectFill: return .resizeAspectFill
        default: return .resizeAspect
        }
    }

    /// The window's side of the layer: each refresh's picture, and when it was shown.
    private final class LayerSource: VideoFrameSource {
        let layer: AVPlayerLayer
        let overlayState = Published(OverlayState(isPaused: true, elapsedSeconds: 0, durationSeconds: nil, rate: 1, droppedFrames: 0))
        let lastShape = Mutex<Shape?>(nil)
        /// The subtitles near the playhead, laid out.
        let subtitles = Published<[TimedSubtitle]>([])
        /// The display thread's copy of them (a busy lock keeps it).
        private let lastSubtitles = Mutex<[TimedSubtitle]>([])
        /// The item time of the picture last handed to the display, in nanoseconds.
        private let pictureTime = Atomic<Int64>(.min)
        /// The display thread's copy of the controls' figures (a busy lock keeps it).
        private let lastOverlay = Mutex(OverlayState(isPaused: true, elapsedSeconds: 0, durationSeconds: nil, rate: 1, droppedFrames: 0))

        /// What the window shows while a video output takes the pictures
        /// (`suppressesPlayerRendering`), handed to it once as they stop coming.
        private let black = BlackPicture()
        /// Whether the window was last handed `black`.
        private let showsBlack = Atomic<Bool>(false)

        init(layer: AVPlayerLayer) { self.layer = layer }

        func frame(forRefreshAt hostNanoseconds: Int64, refreshNanoseconds: Int64) -> DisplayFrame? {
            let picked = layer.picture(forRefreshAt: HostTime(nanoseconds: hostNanoseconds), refreshInterval: .nanoseconds(refreshNanoseconds))
            if picked == nil, layer.picturesSuppressed {
                return showsBlack.exchange(true, ordering: .relaxed) ? nil : black.frame
            }
            guard let planes = picked else { return nil }
            showsBlack.store(false, ordering: .relaxed)
            let info = planes.info
            pictureTime.store(info.itemNanoseconds, ordering: .relaxed)
            return DisplayFrame(format: info.format == .nv12 ? .nv12 : .yuv420p, width: info.width, height: info.height,
                                planes: (planes.plane0, planes.plane1, planes.plane2),
                                strides: (planes.stride0, planes.stride1, planes.stride2), identity: info.number,
                                colorMatrix: Self.matrix(info.colorMatrix))
        }

        static func matrix(_ matrix: VideoColorMatrix) -> DisplayColorMatrix {
            switch matrix {
            case .bt601: return .bt601
            case .bt709: return .bt709
            case .fullRange601: return .fullRange601
            }
        }

        func presented(identity: Int64, atHostNanoseconds: Int64) {
            guard identity != BlackPicture.identity else { return }
            layer.didPresent(number: identity, at: HostTime(nanoseconds: atHostNanoseconds))
        }

        func nextFrameDue() -> Int64? { layer.nextPictureDue()?.nanoseconds }

        func subtitle() -> SubtitleBitmap? {
            // Nothing over the black of pictures left to a video output.
            if showsBlack.load(ordering: .relaxed) { return nil }
            let time = pictureTime.load(ordering: .relaxed)
            guard time != .min else { return nil }
            let list: [TimedSubtitle]
            if let fresh = subtitles.tryRead() {
                _ = lastSubtitles.withLockIfAvailableAnnotated { $0 = fresh }
                list = fresh
            } else {
                list = lastSubtitles.withLockIfAvailableAnnotated { $0 } ?? []
            }
            for timed in list where timed.start <= time && time < timed.end { return timed.bitmap }
            return nil
        }

        func overlay() -> OverlayState {
            if let fresh = overlayState.tryRead() {
                _ = lastOverlay.withLockIfAvailableAnnotated { $0 = fresh }
                return fresh
            }
            return lastOverlay.withLockIfAvailableAnnotated { $0 } ?? OverlayState(isPaused: true, elapsedSeconds: 0, durationSeconds: nil, rate: 1, droppedFrames: 0)
        }
    }
}

/// A weak reference that can be shared between threads.
final class WeakBox<Object: AnyObject & Sendable>: Sendable {
    private let reference = Mutex<WeakReference>(WeakReference())
    private struct WeakReference: @unchecked Sendable {
        // @unchecked: a weak reference to a Sendable object, only touched under the Mutex.
        weak var object: Object?
    }
    var value: Object? {
        get { reference.withLockAnnotated { $0.object } }
        set { reference.withLockAnnotated { $0.object = newValue } }
    }
}

/// A small black picture (I420, video range) for the window to show in place of the
/// player's: its planes live as long as it does, as `VideoFrameSource` requires.
private final class BlackPicture: Sendable {
    /// The identity handed with it: no picture of a player's is numbered so.
    static let identity = Int64.min
    /// Its side, in pixels: the window scales it to the picture's place.
    static let side = 16
    // Written once here, then only read: safe to share.
    nonisolated(unsafe) private let luma: UnsafeMutablePointer<UInt8>
    nonisolated(unsafe) private let chroma: UnsafeMutablePointer<UInt8>

    init() {
        luma = .allocate(capacity: Self.side * Self.side)
        luma.initialize(repeating: 16, count: Self.side * Self.side)
        chroma = .allocate(capacity: Self.side * Self.side / 4)
        chroma.initialize(repeating: 128, count: Self.side * Self.side / 4)
    }

    deinit {
        luma.deallocate()
        chroma.deallocate()
    }

    var frame: DisplayFrame {
        DisplayFrame(format: .yuv420p, width: Self.side, height: Self.side,
                     planes: (UnsafePointer(luma), UnsafePointer(chroma), UnsafePointer(chroma)),
                     strides: (Self.side, Self.side / 2, Self.side / 2), identity: Self.identity)
    }
}

