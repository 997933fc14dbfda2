/// Everything that can go wrong when describing a picture or opening a window.
///
/// Every case carries enough context for its `description` to be shown to a
/// person as is (for example on the command line of the player).
public enum VideoWindowError: Error, CustomStringConvertible, Equatable, Sendable {
    /// No display could be opened: no X11 or Wayland server, no usable
    /// KMS/DRM device, or the window did not come up in time. `reason` holds
    /// SDL's own message plus the display variables it saw.
    case noDisplay(reason: String)
    /// An SDL call failed; `call` names it and `message` is `SDL_GetError()`.
    case sdlFailure(call: String, message: String)
    /// A window geometry string (mpv's `--geometry` syntax) could not be parsed.
    case badGeometry(input: String, reason: String)
    /// A rotation other than 0, 90, 180 or 270 degrees was asked for.
    case badRotation(degrees: Int)
    /// A crop rectangle is empty or does not lie inside the frame.
    case badCrop(reason: String)
    /// A width or height is zero, negative or larger than `VideoGeometry.maximumSide`.
    case absurdSize(what: String, width: Int, height: Int)
    /// SDL keeps one video subsystem per process, so only one window may be
    /// open at a time; close the previous one first.
    case windowAlreadyOpen

    /// A sentence that explains the failure to a person.
    public var description: String {
        switch self {
        case .noDisplay(let reason):
            return "no display available for the video window: \(reason)"
        case .sdlFailure(let call, let message):
            return "\(call) failed: \(message.isEmpty ? "SDL gave no reason" : message)"
        case .badGeometry(let input, let reason):
            return "bad window geometry \"\(input)\": \(reason)"
        case .badRotation(let degrees):
            return "bad rotation \(degrees)°: only 0, 90, 180 and 270 are supported"
        case .badCrop(let reason):
            return "bad crop: \(reason)"
        case .absurdSize(let what, let width, let height):
            return "absurd \(what) \(width)x\(height): each side must be 1...\(VideoGeometry.maximumSide) pixels"
        case .windowAlreadyOpen:
            return "a video window is already open in this process; close it first"
        }
    }
}
