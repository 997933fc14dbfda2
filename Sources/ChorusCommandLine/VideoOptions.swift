import ArgumentParser
import AVPlayback

/// Whether a node shows pictures.
enum VideoMode: String, ExpressibleByArgument, Sendable {
    /// A window when an item has pictures and there is a display; sound alone otherwise.
    case auto
    /// A window, always: no display is an error.
    case window
    /// No window: sound only.
    case none
}

/// The picture options of `play`, `lead` and `follow`.
struct VideoOptions: ParsableArguments {
    @Option(name: .long, help: "window: show pictures in a window (an error with no display); none: sound only. play's default opens a window when an item has pictures and there is a display; lead's and follow's is none.")
    var video: VideoMode?

    @Option(name: .long, help: "The window's size and place, as mpv takes it: WxH, WxH+X+Y, +X+Y, or W%xH%.")
    var geometry: String?

    @Flag(name: .long, help: "Open the window fullscreen (f or a double-click toggles it).")
    var fullscreen = false

    @Option(name: .long, help: "Show only this part of the picture, in source pixels, as FFmpeg's crop takes it: W:H:X:Y (one screen of a video wall).")
    var crop: String?

    func validate() throws {
        if let geometry {
            do { _ = try WindowGeometry(parsing: geometry) } catch { throw ValidationError("--geometry: \(error)") }
        }
        if let crop {
            do { _ = try CropRect(parsing: crop) } catch { throw ValidationError("--crop: \(error)") }
        }
        if video == VideoMode.none && (geometry != nil || fullscreen || crop != nil) {
            throw ValidationError("--geometry, --fullscreen and --crop need a window: drop --video none")
        }
    }

    /// What the node does with pictures, `defaultMode` when `--video` is not given (but
    /// asking for a window's geometry, fullscreen or a crop asks for a window).
    func mode(default defaultMode: VideoMode) -> VideoMode {
        if let video { return video }
        if defaultMode == VideoMode.none && (geometry != nil || fullscreen || crop != nil) { return .window }
        return defaultMode
    }
}
