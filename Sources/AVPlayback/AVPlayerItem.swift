import Foundation
import MediaPipeline

/// The key under which `failedToPlayToEndTimeNotification` carries the error.
public let AVPlayerItemFailedToPlayToEndTimeErrorKey = "AVPlayerItemFailedToPlayToEndTimeErrorKey"

/// How an item changes pitch when played at a rate other than 1.
public struct AVAudioTimePitchAlgorithm: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Keeps pitch; tuned for speech.
    public static let timeDomain = AVAudioTimePitchAlgorithm(rawValue: "TimeDomain")
    /// Keeps pitch; tuned for music.
    public static let spectral = AVAudioTimePitchAlgorithm(rawValue: "Spectral")
    /// Pitch follows rate, like a tape.
    public static let varispeed = AVAudioTimePitchAlgorithm(rawValue: "Varispeed")
}

/// The presentation state of an asset as a player plays it: its status, timing and tracks.
///
/// Loading begins when the item is given to a player. Properties are thread-safe to read;
/// changes (and their observations) happen on the owning player's event queue.
public final class AVPlayerItem: AVKeyValueObservable, @unchecked Sendable {
    /// Whether the item can be played.
    public enum Status: Int, Sendable {
        /// Not yet loaded.
        case unknown
        /// Loaded; a player can play it.
        case readyToPlay
        /// It cannot be played; `error` says why.
        case failed
    }

    /// Posted (object: the item) when the item has played to its end: once each time the
    /// end is reached.
    public static let didPlayToEndTimeNotification = Notification.Name("AVPlayerItemDidPlayToEndTimeNotification")
    /// Posted (object: the item) when playback stopped before the end; the error is in
    /// `userInfo[AVPlayerItemFailedToPlayToEndTimeErrorKey]`.
    public static let failedToPlayToEndTimeNotification = Notification.Name("AVPlayerItemFailedToPlayToEndTimeNotification")
    /// Posted (object: the item) when data ran out during playback.
    public static let playbackStalledNotification = Notification.Name("AVPlayerItemPlaybackStalledNotification")
    /// Posted (object: the item) when the item's time changed discontinuously (a seek).
    public static let timeJumpedNotification = Notification.Name("AVPlayerItemTimeJumpedNotification")

    public let asset: AVAsset
    public let observationRegistry = ObservationRegistry()
    let lock = NSLock()
    weak var player: AVPlayer?

    private var statusValue = Status.unknown
    private var errorValue: MediaError?
    private var durationValue = CMTime.indefinite
    private var tracksValue: [AVPlayerItemTrack] = []
    private var mediaInfo: MediaInfo?
    /// Where a new player starts this item (set by seeks made before it plays).
    var startTime = CMTime.zero
    private var damagedPacketsValue = 0

    /// An item for the media at `url`.
    public convenience init(url: URL) {
        self.init(asset: AVURLAsset(url: url))
    }

    /// An item for `asset`.
    public init(asset: AVAsset) {
        self.asset = asset
    }

    /// An item for `asset`; `automaticallyLoadedAssetKeys` is accepted for compatibility
    /// (all keys load together here).
    public convenience init(asset: AVAsset, automaticallyLoadedAssetKeys: [AVPartialAsyncProperty<AVAsset>]) {
        self.init(asset: asset)
    }

    /// The item's status: `.unknown` until loaded by a player.
    public var status: Status { lock.withLock { statusValue } }
    /// Why the item failed; nil unless `status` is `.failed` (or playback stopped early).
    public var error: (any Error)? { lock.withLock { errorValue } }
    /// The item's duration: `.indefinite` until ready, and for live streams.
    public var duration: CMTime { lock.withLock { durationValue } }
    /// The item's tracks: empty until ready.
    public var tracks: [AVPlayerItemTrack] { lock.withLock { tracksValue } }
    /// Damaged packets skipped so far while playing this item.
    public var damagedPacketCount: Int { lock.withLock { damagedPacketsValue } }

    /// The time at which playing forward stops, or `.invalid` for the end.
    public var forwardPlaybackEndTime = CMTime.invalid
    /// The time at which playing in reverse stops, or `.invalid` for the start.
    public var reversePlaybackEndTime = CMTime.invalid
    /// How much media to buffer ahead, in seconds; 0 lets the player choose.
    public var preferredForwardBufferDuration: TimeInterval = 0
    /// How pitch behaves at rates other than 1. Chorus renders every rate as
    /// `.varispeed` for now (the pitch follows the rate, as a turntable's does): that keeps
    /// every frame's place on the timeline exact, which a group's rooms need to stay on the
    /// same sample. The pitch-keeping algorithms are accepted and not yet applied.
    public var audioTimePitchAlgorithm = AVAudioTimePitchAlgorithm.timeDomain

    /// Forward rates faster and slower than 1 play once the item is ready (from 1/32 to 8);
    /// reverse play is not supported yet.
    public var canPlayFastForward: Bool { status == .readyToPlay }
    public var canPlaySlowForward: Bool { status == .readyToPlay }
    public var canPlayReverse: Bool { false }
    public var canPlaySlowReverse: Bool { false }
    public var canPlayFastReverse: Bool { false }
    /// Stepping is by video frame; audio-only playback cannot step.
    public var canStepForward: Bool { false }
    public var canStepBackward: Bool { false }

    /// The item's timebase: item time against the host clock, at the item's rate. Read-only
    /// to users; the player keeps it current. Nil until the item is ready.
    public private(set) var timebase: CMTimebase?

    /// The current time of the item: what its player's device is presenting now.
    public func currentTime() -> CMTime {
        if let player, player.currentItem === self { return player.currentTime() }
        return lock.withLock { startTime }
    }

    /// The spans of media already loaded and ready to play.
    public var loadedTimeRanges: [CMTimeRange] {
        if let player, player.currentItem === self { return player.loadedTimeRanges() }
        return []
    }

    /// The spans a seek can reach: the whole item when the input can seek.
    public var seekableTimeRanges: [CMTimeRange] {
        lock.withLock {
            guard let mediaInfo, mediaInfo.isSeekable, durationValue.isNumeric else { return [] }
            return [CMTimeRange(start: .zero, duration: durationValue)]
        }
    }

    /// Seeks to `time` exactly; see `AVPlayer.seek(to:completionHandler:)`.
    public func seek(to time: CMTime, completionHandler: (@Sendable (Bool) -> Void)? = nil) {
        seek(to: time, toleranceBefore: .zero, toleranceAfter: .zero, completionHandler: completionHandler)
    }

    /// Seeks to `time` within the tolerances; see `AVPlayer.seek(to:toleranceBefore:toleranceAfter:completionHandler:)`.
    public func seek(to time: CMTime, toleranceBefore: CMTime, toleranceAfter: CMTime,
                     completionHandler: (@Sendable (Bool) -> Void)? = nil) {
        if let player, player.currentItem === self {
            player.seek(to: time, toleranceBefore: toleranceBefore, toleranceAfter: toleranceAfter,
                        completionHandler: completionHandler ?? { _ in })
            return
        }
        lock.withLock { startTime = time.isNumeric ? max(time, .zero) : .zero }
        completionHandler?(true)
    }

    /// Cancels seeks in flight; their handlers get `false`.
    public func cancelPendingSeeks() {
        if let player, player.currentItem === self { player.cancelPendingSeeks() }
    }

    // MARK: - Updates from the player (on its event queue)

    var loadedInfo: MediaInfo? { lock.withLock { mediaInfo } }

    func becameReady(_ info: MediaInfo, hostClock: CMClock) {
        let tracks = asset.makeTracks(info).map { AVPlayerItemTrack(assetTrack: $0) }
        let timebase = CMTimebase(sourceClock: hostClock)
        let (oldStatus, oldDuration): (Status, CMTime) = lock.withLock {
            defer {
                mediaInfo = info
                statusValue = .readyToPlay
                durationValue = info.duration
                tracksValue = tracks
                self.timebase = timebase
            }
            return (statusValue, durationValue)
        }
        observationRegistry.notify(\AVPlayerItem.duration, old: oldDuration, new: info.duration)
        observationRegistry.notify(\AVPlayerItem.tracks, old: [AVPlayerItemTrack](), new: tracks)
        observationRegistry.notify(\AVPlayerItem.status, old: oldStatus, new: Status.readyToPlay)
    }

    func failed(_ error: MediaError) {
        let oldStatus: Status = lock.withLock {
            defer { statusValue = .failed; errorValue = error }
            return statusValue
        }
        observationRegistry.notify(\AVPlayerItem.status, old: oldStatus, new: Status.failed)
    }

    func noteDamage(_ count: Int) { lock.withLock { damagedPacketsValue = count } }
}

/// One track of an item as it plays: the asset's track, and whether it is enabled.
public final class AVPlayerItemTrack: @unchecked Sendable {
    /// The asset track this stands for.
    public let assetTrack: AVAssetTrack?
    private let lock = NSLock()
    private var enabled = true

    init(assetTrack: AVAssetTrack) { self.assetTrack = assetTrack }

    /// Whether the track plays. Disabling the audio track of an item silences it.
    public var isEnabled: Bool {
        get { lock.withLock { enabled } }
        set { lock.withLock { enabled = newValue } }
    }

    /// A video track's frame rate as played; 0 for audio.
    public var currentVideoFrameRate: Float { assetTrack?.nominalFrameRate ?? 0 }
}
