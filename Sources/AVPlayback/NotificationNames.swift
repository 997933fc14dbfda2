import Foundation

/// The notification names in the spelling Apple's SDK also gives them
/// (`.AVPlayerItemDidPlayToEndTime`), so that code written either way ports: each is the
/// same name as the `AVPlayerItem` static it stands for.
extension NSNotification.Name {
    /// `AVPlayerItem.didPlayToEndTimeNotification`.
    public static let AVPlayerItemDidPlayToEndTime = AVPlayerItem.didPlayToEndTimeNotification
    /// `AVPlayerItem.failedToPlayToEndTimeNotification`.
    public static let AVPlayerItemFailedToPlayToEndTime = AVPlayerItem.failedToPlayToEndTimeNotification
    /// `AVPlayerItem.playbackStalledNotification`.
    public static let AVPlayerItemPlaybackStalled = AVPlayerItem.playbackStalledNotification
    /// `AVPlayerItem.timeJumpedNotification`.
    public static let AVPlayerItemTimeJumped = AVPlayerItem.timeJumpedNotification
}
