@_exported import MediaClock
// What `import AVFoundation` brings with it on Apple's platforms, so a file that imported
// only that compiles with only this module's name changed.
@_exported import Foundation
@_exported import Dispatch
import MediaPipeline

/// Why an asset or item could not be loaded or played: a typed value whose description
/// names the input and the reason ("song.mp3: corrupt data: ...").
public typealias AVPlaybackError = MediaPipeline.MediaError

/// The domain of the errors Apple's classes hand over as `NSError`s.
public let AVFoundationErrorDomain = "AVFoundationErrorDomain"

/// Where a player sends its sound: `alsa:DEVICE`, `null:drift=PPM` or `wav:PATH`.
public typealias OutputSpec = MediaPipeline.OutputSpec

/// Records every rendered period's presentation time (a group node's `--capture`).
public typealias RenderCapture = MediaPipeline.RenderCapture

/// The render thread's report (see `AVPlayer.renderStatus`).
public typealias RenderStatus = MediaPipeline.RenderStatus

/// A render capture read back, for comparing group members (see `RenderCapture`).
public typealias RenderCaptureLog = MediaPipeline.RenderCaptureLog
