/// Keys the window reports by name; anything else printable arrives as
/// `.character`.
public enum WindowKey: Sendable, Equatable {
    /// The space bar.
    case space
    /// Q (lower case; Shift+Q arrives as `.character("Q")`).
    case q
    /// Escape.
    case escape
    /// F. The window itself reports F as `WindowEvent.toggleFullscreen`; the
    /// case exists so that key-binding tables can still name the key.
    case f
    /// Cursor left.
    case left
    /// Cursor right.
    case right
    /// Cursor up.
    case up
    /// Cursor down.
    case down
    /// `.` (mpv: step one frame forward).
    case period
    /// `,` (mpv: step one frame back).
    case comma
    /// `[` (mpv: slower).
    case leftBracket
    /// `]` (mpv: faster).
    case rightBracket
    /// M (mpv: mute).
    case m
    /// A digit key, 0...9 (top row or keypad).
    case digit(Int)
    /// Any other printable key, after the keyboard layout and Shift.
    case character(Character)
}

/// What the person did to the window, delivered on the window's thread.
public enum WindowEvent: Sendable, Equatable {
    /// A key press (auto-repeat is reported for the arrows, `.`, `,`, `[`, `]`).
    case key(WindowKey)
    /// A click or drag on the overlay's scrub bar, as a fraction 0...1 of the
    /// duration; drags are coalesced to at most one per refresh.
    case seek(toFraction: Double)
    /// A click on the overlay's play/pause button.
    case togglePause
    /// A double-click on the picture, or F. The window does not change its
    /// own state: the app decides and sets `VideoWindow.isFullscreen`.
    case toggleFullscreen
    /// The person or window manager closed the window; sent once, after
    /// which the window stops rendering.
    case closed
    /// The drawable changed size, in pixels.
    case resized(width: Int, height: Int)
}

/// What the overlay shows, asked of the source only while it is visible.
public struct OverlayState: Sendable, Equatable {
    /// Whether playback is paused (the button then offers "play").
    public var isPaused: Bool
    /// Position in the item, in seconds.
    public var elapsedSeconds: Double
    /// Length of the item in seconds; nil when unknown or live, which hides
    /// the remaining time and disables seeking on the bar.
    public var durationSeconds: Double?
    /// Playback speed, 1 for normal.
    public var rate: Double
    /// Frames dropped so far; shown only when non-zero.
    public var droppedFrames: Int

    /// An overlay state from its parts.
    public init(
        isPaused: Bool = false, elapsedSeconds: Double = 0, durationSeconds: Double? = nil,
        rate: Double = 1, droppedFrames: Int = 0
    ) {
        self.isPaused = isPaused
        self.elapsedSeconds = elapsedSeconds
        self.durationSeconds = durationSeconds
        self.rate = rate
        self.droppedFrames = droppedFrames
    }
}

/// Supplies pictures and overlay facts to a `VideoWindow`.
///
/// Every method is called only on the window's own thread, once per refresh
/// at most, so implementations must return quickly and never block on
/// anything slower than a short lock.
///
/// Plane lifetime: the window reads a frame's planes only between
/// `frame(forRefreshAt:)` returning it and the end of that refresh (it copies
/// them into a texture before presenting). The producer may reuse them as
/// soon as `presented` is called for that identity or the window calls
/// `frame(forRefreshAt:)` again, whichever comes first (a frame the window
/// cannot upload is never `presented`).
public protocol VideoFrameSource: AnyObject, Sendable {
    /// The frame to show at the refresh that becomes visible at
    /// `hostNanoseconds` on CLOCK_MONOTONIC, on a display that refreshes every
    /// `refreshNanoseconds`; nil keeps the current picture. A `refreshNanoseconds`
    /// of zero means a display that shows a picture at any instant (one with no
    /// refresh rate of its own, such as Xvfb): only a frame already due is wanted.
    func frame(forRefreshAt hostNanoseconds: Int64, refreshNanoseconds: Int64) -> DisplayFrame?
    /// When the next frame not yet shown becomes due (CLOCK_MONOTONIC), or nil when
    /// none is known. A display that shows a picture at any instant presents at that
    /// time instead of waiting for its next housekeeping refresh.
    func nextFrameDue() -> Int64?
    /// The frame `identity` was handed to the display at `atHostNanoseconds`
    /// (CLOCK_MONOTONIC read right after the present call returned).
    func presented(identity: Int64, atHostNanoseconds: Int64)
    /// The facts the overlay shows; called only while the overlay is visible.
    func overlay() -> OverlayState
    /// The subtitle to draw over the picture now shown, if any; called every refresh on
    /// the display thread, so it must neither wait nor allocate.
    func subtitle() -> SubtitleBitmap?
}

extension VideoFrameSource {
    /// No schedule known: the window shows frames at its refreshes only.
    public func nextFrameDue() -> Int64? { nil }
    /// No subtitles.
    public func subtitle() -> SubtitleBitmap? { nil }
}
