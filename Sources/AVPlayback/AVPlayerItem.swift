import Foundation
import MediaClock
import MediaPipeline
import MutexAnnotations
import Synchronization

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
    /// Keeps pitch cheaply, for brief scans; played here as `.timeDomain`, whose engine is
    /// already the cheap one.
    public static let lowQualityZeroLatency = AVAudioTimePitchAlgorithm(rawValue: "LowQualityZeroLatency")
}

/// The presentation state of an asset as a player plays it: its status, timing and tracks.
///
/// Loading begins when the item is given to a player. Properties are thread-safe to read;
/// changes (and their observations) happen on the owning player's event queue.
// @unchecked only because the class is open to subclassing, as Apple's is (a non-final class
// cannot be checked): its state is in `state`, a Mutex, and every other field is a let or
// itself thread-safe.
open class AVPlayerItem: AVKeyValueObservable, @unchecked Sendable {
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
    /// `userInfo[AVPlayerItemFailedToPlayToEndTimeErrorKey]`, an `NSError` (the typed
    /// `AVPlaybackError` under its `NSUnderlyingErrorKey`).
    public static let failedToPlayToEndTimeNotification = Notification.Name("AVPlayerItemFailedToPlayToEndTimeNotification")
    /// Posted (object: the item) when data ran out during playback.
    public static let playbackStalledNotification = Notification.Name("AVPlayerItemPlaybackStalledNotification")
    /// Posted (object: the item) when the item's time changed discontinuously (a seek).
    public static let timeJumpedNotification = Notification.Name("AVPlayerItemTimeJumpedNotification")
    /// Posted (object: the item) when an option is chosen in one of its media selection
    /// groups.
    public static let mediaSelectionDidChangeNotification = Notification.Name("AVPlayerItemMediaSelectionDidChangeNotification")

    /// Everything about the item that changes, read and written from any thread.
    private struct State {
        weak var player: AVPlayer?
        /// The queue player holding the item, current or waiting its turn.
        weak var queue: AVQueuePlayer?
        var status = Status.unknown
        var error: MediaError?
        var duration = CMTime.indefinite
        var tracks: [AVPlayerItemTrack] = []
        var mediaInfo: MediaInfo?
        var startTime = CMTime.zero
        var damagedPackets = 0
        var forwardPlaybackEndTime = CMTime.invalid
        var reversePlaybackEndTime = CMTime.invalid
        var preferredForwardBufferDuration: TimeInterval = 0
        var audioTimePitchAlgorithm = AVAudioTimePitchAlgorithm.timeDomain
        var timebase: CMTimebase?
        /// A live HLS item's playlist, followed while a player plays the item.
        var live: HLSLiveWindow?
        /// Where a player last opened the live stream, on the item's timeline.
        var liveOpening: CMTime?
        /// An on-demand HLS item's segment dates, once read (`readProgramDates(of:)`).
        var onDemandDates: HLSProgramDates?
        /// Whether they have been asked for, so that each item reads them once.
        var datesRequested = false
        /// Whether that reading has ended, with dates or without.
        var datesRead = false
        /// Whether it found the on-demand playlist spliced from several, which cannot be
        /// played backwards (`canPlayReverse`).
        var spliced = false
        /// Where another player of the same live stream closed up its jumps, for this item to
        /// count as it does (`countsAcrossSplices(_:)`).
        var splices: [TimelineSplice] = []
        /// Options chosen with `select(_:in:)`, by characteristic: a stream index, or nil
        /// for "none".
        var chosen: [AVMediaCharacteristic: Int?] = [:]
        /// Options a player's selection criteria chose, for characteristics not chosen
        /// explicitly.
        var automatic: [AVMediaCharacteristic: Int?] = [:]
    }

    public let asset: AVAsset
    /// Whether the item is read over the network (HTTP or HTTPS), which alone has access
    /// and error logs and chooses among variants: worked out once, since the player's
    /// monitor asks it every tick.
    let isNetworkItem: Bool
    /// The asset keys named when the item was made, which Apple's player loads before the
    /// item is ready (here every key loads, together, before it is); empty when none were.
    public let automaticallyLoadedAssetKeys: [String]
    /// What the item's access and error logs call its playback: one identifier for the item's
    /// life, as Apple's `playbackSessionID`.
    let playbackSessionID = UUID().uuidString
    /// Set when the item goes, to cut short a background read of its playlist's dates.
    let datesInterrupt = InterruptFlag()
    public let observationRegistry = ObservationRegistry()
    private let state = Mutex(State())

    /// The lines of the item's text subtitles read so far, whichever is chosen: a choice
    /// shows at once what has been read of it.
    let subtitleCues = SubtitleCues()
    /// The item's timed metadata read so far (a station's titles, a stream's ID3 tags).
    let timedMetadataLog = TimedMetadataLog()
    /// The group of timed metadata playback last stood in, as `timedMetadata` gives it:
    /// the same objects while it stands there.
    private let standingMetadata = Mutex<(time: CMTime, items: [AVMetadataItem])?>(nil)

    /// The outputs added with `add(_:)`.
    let outputList = Mutex<[AVPlayerItemOutput]>([])
    /// Whether a video output added to the item keeps the player's layers from showing its
    /// pictures (`suppressesPlayerRendering`), kept up by `outputsChanged()`; its player
    /// copies it for its layers while the item is current (`AVPlayer.layersSuppressed`).
    let layersSuppressed = Atomic<Bool>(false)

    /// What the item's access and error logs are made from (`accessLog()`, `errorLog()`).
    let networkLog = Mutex(NetworkLog())
    /// The item's own choice among an HLS master playlist's variants (`VariantAdaptation`).
    let variantAdaptation = Mutex(VariantAdaptation())
    /// The bytes every opening of the item has read (its access log's bytes transferred).
    let networkActivity: NetworkActivity

    /// The queue player the item waits in (or plays in), if any: an item is in one queue at
    /// a time.
    var queue: AVQueuePlayer? {
        get { state.withLockAnnotated { $0.queue } }
        set { state.withLockAnnotated { $0.queue = newValue } }
    }

    /// The player the item is given to, if any. A player that takes the item decodes its
    /// pictures for as long as a video output is added to it.
    var player: AVPlayer? {
        get { state.withLockAnnotated { $0.player } }
        set {
            let old = state.withLockAnnotated { state in defer { state.player = newValue }; return state.player }
            guard old !== newValue else { return }
            let videoOutputs = outputList.withLockAnnotated { $0.filter { $0 is AVPlayerItemVideoOutput }.count }
            for _ in 0..<videoOutputs {
                old?.removeVideoConsumer()
                newValue?.addVideoConsumer()
            }
        }
    }

    /// Whether the item is its player's current item (a queue's next one, or one it has
    /// moved on from, is not).
    package var isCurrentInItsPlayer: Bool { player?.currentItem === self }

    /// Where a new player starts this item (set by seeks made before it plays).
    var startTime: CMTime {
        get { state.withLockAnnotated { $0.startTime } }
        set { state.withLockAnnotated { $0.startTime = newValue } }
    }

    /// An item for the media at `url`.
    public convenience init(url: URL) {
        self.init(asset: AVURLAsset(url: url))
    }

    /// An item for `asset`; as Apple's, the same as naming the key "duration" to load
    /// before the item is ready (`automaticallyLoadedAssetKeys`).
    public convenience init(asset: AVAsset) {
        self.init(asset: asset, automaticallyLoadedAssetKeys: ["duration"])
    }

    /// An item for `asset`, with the keys named ("duration", "tracks", ...) that Apple's
    /// player loads before the item is ready; kept in `automaticallyLoadedAssetKeys` (every
    /// key loads, together, before the item is ready here). The designated initializer, as
    /// on Apple's platforms: a subclass's own initializer calls it.
    public init(asset: AVAsset, automaticallyLoadedAssetKeys: [String]?) {
        self.asset = asset
        self.automaticallyLoadedAssetKeys = automaticallyLoadedAssetKeys ?? []
        let scheme = URL(string: asset.location)?.scheme?.lowercased()
        isNetworkItem = scheme == "http" || scheme == "https"
        // A fetch that fails while the item is read (a segment the HLS demuxer skips and
        // plays on without) goes to its error log.
        let owner = WeakBox<AVPlayerItem>()
        networkActivity = NetworkActivity { url, reason in owner.value?.noteFetchFailure(url: url, reason: reason) }
        defer { owner.value = self }
        // Subtitles read apart from the item (an HLS rendition) may fail while it plays on.
        let location = asset.location
        subtitleCues.onFailure { stream, error in
            playerLog.warning("subtitles (stream \(stream)) of \(location) stopped: \(error)")
        }
    }

    /// An item for `asset`, with the properties that Apple's player loads before the item is
    /// ready; their keys are kept in `automaticallyLoadedAssetKeys` (every key loads,
    /// together, before the item is ready here).
    public convenience init(asset: AVAsset, automaticallyLoadedAssetKeys: [AVPartialAsyncProperty<AVAsset>]) {
        self.init(asset: asset, automaticallyLoadedAssetKeys: automaticallyLoadedAssetKeys.map(\.name))
    }

    /// A new item for the same asset with this one's settings (`NSCopying`, as Apple's item
    /// is): its end times, buffer duration, pitch algorithm, variant limits, live settings and
    /// audio mix. What it came to by playing (its status, time, logs, outputs) is not copied.
    open func copy(with zone: NSZone? = nil) -> Any {
        let copy = AVPlayerItem(asset: asset, automaticallyLoadedAssetKeys: automaticallyLoadedAssetKeys)
        copy.forwardPlaybackEndTime = forwardPlaybackEndTime
        copy.reversePlaybackEndTime = reversePlaybackEndTime
        copy.preferredForwardBufferDuration = preferredForwardBufferDuration
        copy.audioTimePitchAlgorithm = audioTimePitchAlgorithm
        copy.preferredPeakBitRate = preferredPeakBitRate
        copy.preferredMaximumResolution = preferredMaximumResolution
        copy.canUseNetworkResourcesForLiveStreamingWhilePaused = canUseNetworkResourcesForLiveStreamingWhilePaused
        copy.automaticallyPreservesTimeOffsetFromLive = automaticallyPreservesTimeOffsetFromLive
        copy.configuredTimeOffsetFromLive = configuredTimeOffsetFromLive
        copy.audioMix = audioMix
        return copy
    }

    /// `copy(with:)` (`NSObject.copy()` on Apple's platforms).
    open func copy() -> Any { copy(with: nil) }

    /// The item's status: `.unknown` until loaded by a player.
    open var status: Status { state.withLockAnnotated { $0.status } }
    /// Why the item failed; nil unless `status` is `.failed` (or playback stopped early). As
    /// on Apple's platforms, an `AVError` (a `URLError` when the media could not be reached),
    /// with the typed `AVPlaybackError` under `NSUnderlyingErrorKey` (see `AVError`).
    open var error: (any Error)? { state.withLockAnnotated { $0.error?.avFoundationError } }

    /// Why the item failed, as the library's typed error (a Chorus addition).
    public var playbackError: AVPlaybackError? { state.withLockAnnotated { $0.error } }
    /// The item's duration: `.indefinite` until ready, and for live streams.
    open var duration: CMTime { state.withLockAnnotated { $0.duration } }
    /// The item's tracks: empty until ready.
    open var tracks: [AVPlayerItemTrack] { state.withLockAnnotated { $0.tracks } }
    /// Damaged packets skipped so far while playing this item.
    public var damagedPacketCount: Int { state.withLockAnnotated { $0.damagedPackets } }

    /// The time at which playing forward stops, or `.invalid` for the end.
    open var forwardPlaybackEndTime: CMTime {
        get { state.withLockAnnotated { $0.forwardPlaybackEndTime } }
        set { observationRegistry.set(\AVPlayerItem.forwardPlaybackEndTime) { state.withLockAnnotated { $0.forwardPlaybackEndTime = newValue } } }
    }
    /// The time at which playing in reverse stops, or `.invalid` for the start.
    open var reversePlaybackEndTime: CMTime {
        get { state.withLockAnnotated { $0.reversePlaybackEndTime } }
        set { observationRegistry.set(\AVPlayerItem.reversePlaybackEndTime) { state.withLockAnnotated { $0.reversePlaybackEndTime = newValue } } }
    }
    /// How far ahead of the playhead, in seconds, the item is read (0: the player's defaults,
    /// about three seconds): set before the item becomes current, it sizes the packets the
    /// item's demuxer keeps beyond the two seconds of decoded sound.
    open var preferredForwardBufferDuration: TimeInterval {
        get { state.withLockAnnotated { $0.preferredForwardBufferDuration } }
        set { observationRegistry.set(\AVPlayerItem.preferredForwardBufferDuration) { state.withLockAnnotated { $0.preferredForwardBufferDuration = newValue } } }
    }
    /// How pitch behaves at rates other than 1; `.timeDomain` by default.
    /// - `.timeDomain` keeps the pitch by overlapping grains of the waveform (speech, most
    ///   music; cheap);
    /// - `.spectral` keeps it with Rubber Band's finer engine, a phase vocoder (music, chords
    ///   held exactly; many times the CPU);
    /// - `.varispeed` lets it follow the rate, as a turntable's does.
    ///
    /// The pitch is kept from 1/4 to 4 times the speed (`PitchKeeper.slowestKeptRate`,
    /// `fastestKeptRate`); beyond, it moves by what is beyond. Keeping it delays the sound by
    /// the stage's constant latency (65 ms for `.timeDomain`, 256 ms for `.spectral`), which the player places content ahead of, so every frame keeps its place
    /// on the timeline; going from speed 1 to another speed leaves a gap of that latency once
    /// per start. On a `masterClock` (a group) the gap falls at the scheduled change, the same
    /// in every room, and the content of the gap is skipped, so the timeline is kept. A plain
    /// `setRate(_:time:atHostTime:)` start without a master clock is placed on the host
    /// clock's timeline and keeps the pitch in the same way. Changed while playing, it
    /// applies at once.
    open var audioTimePitchAlgorithm: AVAudioTimePitchAlgorithm {
        get { state.withLockAnnotated { $0.audioTimePitchAlgorithm } }
        set {
            observationRegistry.set(\AVPlayerItem.audioTimePitchAlgorithm) {
                state.withLockAnnotated { $0.audioTimePitchAlgorithm = newValue }
                player?.pitchAlgorithmChanged(of: self)
            }
        }
    }

    /// The render thread's pitch mode for `audioTimePitchAlgorithm` (an unknown algorithm is
    /// taken as the default, `.timeDomain`).
    var pitchMode: PitchMode {
        switch audioTimePitchAlgorithm {
        case .varispeed: return .varispeed
        case .spectral: return .spectral
        default: return .timeDomain
        }
    }

    /// Forward rates faster and slower than 1 play once the item is ready (from 1/32 to 8).
    open var canPlayFastForward: Bool { status == .readyToPlay }
    open var canPlaySlowForward: Bool { status == .readyToPlay }
    /// Whether negative rates play: an item with sound that can be sought and has a known
    /// length (its sound is decoded backwards in chunks from the playhead). Not an
    /// on-demand HLS presentation spliced from several (an `EXT-X-DISCONTINUITY`), whose
    /// times jump where a backwards read in chunks cannot follow them; that is known once
    /// its playlist has been read again in the background, a moment after the item is ready,
    /// and observers of this property are told. (Apple's players play no HLS backwards
    /// without a playlist of keyframes.)
    open var canPlayReverse: Bool {
        guard status == .readyToPlay, duration.isNumeric else { return false }
        return state.withLockAnnotated { ($0.mediaInfo.map { $0.isSeekable && $0.preferredAudioTrack != nil } ?? false) && !$0.spliced }
    }
    /// Whether rates from -1 to 0 play: as `canPlayReverse`.
    open var canPlaySlowReverse: Bool { canPlayReverse }
    /// Whether rates below -1 play: as `canPlayReverse`.
    open var canPlayFastReverse: Bool { canPlayReverse }
    /// Stepping is by video frame; audio-only playback cannot step.
    /// Whether `step(byCount:)` can move forward: an item with pictures, ready.
    open var canStepForward: Bool { status == .readyToPlay && videoTrack != nil }
    /// Whether `step(byCount:)` can move back: an item with pictures that can be sought.
    open var canStepBackward: Bool { status == .readyToPlay && videoTrack != nil && (state.withLockAnnotated { $0.mediaInfo?.isSeekable } ?? false) }

    /// The size of the picture as shown: square pixels, turned as the track says; `.zero`
    /// for an item without pictures or before it is ready.
    open var presentationSize: CGSize {
        guard let track = videoTrack else { return .zero }
        let turned = track.naturalSize.applying(track.preferredTransform)
        return CGSize(width: abs(turned.width), height: abs(turned.height))
    }

    /// The track whose pictures play, when the item has one.
    var videoTrack: AVAssetTrack? {
        tracks.lazy.compactMap(\.assetTrack).first { $0.mediaType == .video && $0.isPlayable }
    }

    /// Whether the item's pictures are to be shown: it has a video track, and it is enabled.
    var showsPictures: Bool {
        tracks.contains { $0.assetTrack?.mediaType == .video && $0.assetTrack?.isPlayable == true && $0.isEnabled }
    }

    /// Moves the paused item by `stepCount` pictures (back for a negative count), as
    /// Apple's does: the player stays paused and shows the picture it lands on. Does
    /// nothing while playing, or for an item without pictures.
    open func step(byCount stepCount: Int) {
        guard let player, player.rate == 0, let target = stepTarget(byCount: stepCount) else { return }
        player.seek(to: target, toleranceBefore: .zero, toleranceAfter: .zero)
    }

    /// Where `step(byCount:)` would land, for a caller that moves the item its own way (a
    /// group's leader, whose seeks every room follows); nil when it would not move (a Chorus
    /// addition).
    public func stepTarget(byCount stepCount: Int) -> CMTime? {
        guard stepCount != 0, let track = videoTrack, let player, player.currentItem === self else { return nil }
        if stepCount < 0 && !canStepBackward { return nil }
        let period = track.minFrameDuration.isNumeric && track.minFrameDuration > .zero
            ? track.minFrameDuration : CMTime(value: 1, timescale: 25)
        // From the start of the picture on display, so repeated steps land on picture starts.
        let now = player.currentTime()
        let index = (now.seconds / period.seconds + 1e-6).rounded(.down)
        let target = CMTime(seconds: (index + Double(stepCount)) * period.seconds, preferredTimescale: 1_000_000_000)
        let end = duration.isNumeric ? duration - period : target
        return min(max(target, .zero), max(end, .zero))
    }

    /// The item's timebase: item time against the host clock, at the item's rate. Read-only
    /// to users; the player keeps it current. Nil until the item is ready.
    open var timebase: CMTimebase? { state.withLockAnnotated { $0.timebase } }

    /// The current time of the item: what its player's device is presenting now.
    open func currentTime() -> CMTime {
        if let player, player.currentItem === self { return player.currentTime() }
        return startTime
    }

    /// The spans of media already loaded and ready to play, each an `NSValue(timeRange:)`
    /// (read with `timeRangeValue`), as Apple's.
    open var loadedTimeRanges: [NSValue] {
        guard let player, player.currentItem === self else { return [] }
        return player.loadedTimeRanges().map(NSValue.init(timeRange:))
    }

    /// Whether no decoded sound waits ahead of the playhead (playback would stall now).
    /// False while the item is not its player's current one, or after its end was decoded.
    open var isPlaybackBufferEmpty: Bool {
        guard let player, player.currentItem === self, let buffer = player.bufferState() else { return false }
        return !buffer.ended && buffer.ahead == .zero
    }

    /// Whether the buffer holds all it can: the ring is full, or the item's end is decoded.
    open var isPlaybackBufferFull: Bool {
        guard let player, player.currentItem === self, let buffer = player.bufferState() else { return false }
        return buffer.full || buffer.ended
    }

    /// Whether playback is likely to go on without a stall: the buffer is full, or holds at
    /// least `likelyToKeepUpBuffer` (or `preferredForwardBufferDuration`, when longer and
    /// set), or the item's end is already decoded.
    open var isPlaybackLikelyToKeepUp: Bool {
        guard let player, player.currentItem === self, let buffer = player.bufferState() else { return false }
        let preferred = preferredForwardBufferDuration
        let wanted = max(Self.likelyToKeepUpBuffer.seconds, preferred.isFinite ? preferred : 0)
        return buffer.full || buffer.ended || buffer.ahead.seconds >= wanted
    }

    /// Decoded sound ahead of the playhead that counts as likely to keep up: half the ring's
    /// two seconds, more than a network read's usual hiccup.
    public static let likelyToKeepUpBuffer = CMTime(value: 1, timescale: 1)

    /// The spans a seek can reach, each an `NSValue(timeRange:)`: the whole item when the
    /// input can seek; for a live stream, the part of it its playlist still lists, up to
    /// three target durations before its end (`HLSLiveWindow`), which moves on as it does.
    open var seekableTimeRanges: [NSValue] {
        if let range = liveSeekableRange { return [NSValue(timeRange: range)] }
        return state.withLockAnnotated { current in
            guard let mediaInfo = current.mediaInfo, mediaInfo.isSeekable, current.duration.isNumeric else { return [] }
            return [NSValue(timeRange: CMTimeRange(start: .zero, duration: current.duration))]
        }
    }

    /// A live item's seekable span, once its playlist has been read; nil otherwise.
    var liveSeekableRange: CMTimeRange? {
        guard let reading = state.withLockAnnotated({ $0.live })?.current else { return nil }
        let span = reading.seekable
        let start = CMTime(seconds: span.lowerBound, preferredTimescale: 1_000_000)
        return CMTimeRange(start: start, end: CMTime(seconds: span.upperBound, preferredTimescale: 1_000_000))
    }

    deinit {
        state.withLockAnnotated { $0.live }?.stop()
        // A read of the dates still under way is for nobody now.
        datesInterrupt.set()
    }

    /// Where a player opened this live stream, on the item's timeline (the start of the
    /// segment it opened at): a live item has no time 0, its times being the stream's own.
    /// Nil until a player has opened it, and for any item that is not live.
    package var liveOpening: CMTime? { state.withLockAnnotated { $0.liveOpening } }

    /// The live playlist followed, for a player opening the stream again for a seek; nil for
    /// any other item.
    var live: HLSLiveWindow? { state.withLockAnnotated { $0.live } }

    /// Starts following the live playlist of `source` when it is a live HLS stream (opened
    /// where its first packet was stamped); any other item is left alone.
    func followLive(_ source: MediaSource) {
        guard source.info.isLiveHLS else { return }
        // Where the stream was opened, on the item's timeline: past a splice another player
        // closed up, by that splice's shift.
        let item = source.openedAtNanoseconds(after: timelineSplices)
        let window = HLSLiveWindow(url: source.url, openedAt: Double(item) / 1e9, openings: source.liveOpenings, fields: source.requestFields)
        let old = state.withLockAnnotated { current in
            defer {
                current.live = window
                current.liveOpening = CMTime(value: item, timescale: HostTime.nanosecondTimescale)
            }
            return current.live
        }
        old?.stop()
    }

    /// Reads the dates an on-demand HLS item's playlist gives its segments, and whether it is
    /// spliced, in the background, once per item (a live item's come with each reading of
    /// its playlist): one or two small fetches of playlists the demuxer has just read.
    func readProgramDates(of source: MediaSource) {
        guard source.info.formatName == "hls", !source.info.isLiveHLS else { return }
        let first = state.withLockAnnotated { current in defer { current.datesRequested = true }; return !current.datesRequested }
        guard first else { return }
        let (url, fields) = (source.url, source.requestFields)
        let interrupt = datesInterrupt
        DispatchQueue.global(qos: .utility).async { [weak self] in
            let reading = HLSProgramDates.readOnDemand(url: url, fields: fields, interrupt: interrupt)
            guard let self else { return }
            state.withLockAnnotated { current in
                current.onDemandDates = reading?.dates ?? nil
                current.spliced = reading?.isSpliced ?? false
                current.datesRead = true
            }
            guard reading?.isSpliced == true else { return }
            // `canPlayReverse` and its kin turned false; a backwards run begun before this was
            // known stops where it stands rather than read on into silence.
            observationRegistry.changed(\AVPlayerItem.canPlayReverse)
            if let player, player.currentItem === self, player.rate < 0 {
                playerLog.warning("AVPlayer: \(asset.location) is an HLS presentation spliced from several, which cannot play in reverse: paused")
                player.rate = 0
            }
        }
    }

    /// Whether an on-demand HLS item's dates have been read (with dates or without them).
    var programDatesRead: Bool { state.withLockAnnotated { $0.datesRead } }

    /// The item's segment dates: a live item's by its playlist as last read, an on-demand
    /// one's once read; nil when it has none (or they are not read yet).
    var programDates: HLSProgramDates? {
        if let reading = live?.current { return reading.programDates }
        return state.withLockAnnotated { $0.onDemandDates }
    }

    /// Stops following a live playlist (the item left its player).
    func stopFollowingLive() {
        state.withLockAnnotated { current in defer { current.live = nil }; return current.live }?.stop()
    }

    /// Seeks to `time` exactly; see `AVPlayer.seek(to:completionHandler:)`.
    open func seek(to time: CMTime, completionHandler: (@Sendable (Bool) -> Void)? = nil) {
        seek(to: time, toleranceBefore: .zero, toleranceAfter: .zero, completionHandler: completionHandler)
    }

    /// Seeks to `time` within the tolerances; see `AVPlayer.seek(to:toleranceBefore:toleranceAfter:completionHandler:)`.
    open func seek(to time: CMTime, toleranceBefore: CMTime, toleranceAfter: CMTime,
                   completionHandler: (@Sendable (Bool) -> Void)? = nil) {
        if let player, player.currentItem === self {
            player.seek(to: time, toleranceBefore: toleranceBefore, toleranceAfter: toleranceAfter,
                        completionHandler: completionHandler ?? { _ in })
            return
        }
        startTime = time.isNumeric ? max(time, .zero) : .zero
        completionHandler?(true)
    }

    /// Cancels seeks in flight; their handlers get `false`.
    open func cancelPendingSeeks() {
        if let player, player.currentItem === self { player.cancelPendingSeeks() }
    }

    // MARK: - Network and variant settings

    /// The settings of this section: apart from `state` so that they stay in one place.
    private struct NetworkSettings {
        var preferredPeakBitRate: Double = 0
        var preferredMaximumResolution = CGSize.zero
        var canUseNetworkResourcesForLiveStreamingWhilePaused = false
        var automaticallyPreservesTimeOffsetFromLive = false
        var configuredTimeOffsetFromLive = CMTime.invalid
        var audioMix: AVAudioMix?
    }
    private let networkSettings = Mutex(NetworkSettings())

    /// Sets one of `networkSettings` and tells the observers of `observed`.
    private func set<Value: Sendable>(_ setting: WritableKeyPath<NetworkSettings, Value>, to newValue: Value, observed: AnyKeyPath) {
        observationRegistry.set(observed) { networkSettings.withLockAnnotated { $0[keyPath: setting] = newValue } }
    }

    /// The most bits per second the item should use from an HLS master playlist's variants;
    /// 0, the default, for no limit.
    ///
    /// With a limit, the item plays one variant: of those whose `BANDWIDTH` is within it
    /// (and whose pictures fit `preferredMaximumResolution`), the one of highest bandwidth;
    /// when none is, the one of lowest bandwidth. Its sound is the chosen one (media
    /// selection) if the variant carries it, else the variant's sound in the same language,
    /// so a choice of language holds; a chosen sound narrows the variants to those that
    /// carry it or its language. The variants not chosen are not fetched. The choice is
    /// made when the item is opened and again whenever this or `preferredMaximumResolution`
    /// changes while it plays, when another variant is then the one to play, which takes
    /// over from the time reached after a moment's wait, as a chosen sound does (another
    /// variant's pictures restart from the keyframe before). Without a limit (nor a
    /// resolution limit), FFmpeg's choice stands at first: the first variant listed, of
    /// those alike. Other media ignore it.
    ///
    /// As Apple's players do, an item then moves between the variants within these limits
    /// by what its network brings, while it plays: down as soon as the network cannot
    /// carry the variant playing, or when playback stalls; up one variant at a time once
    /// the network has carried the next for a while (`AdaptiveVariantChoice`).
    open var preferredPeakBitRate: Double {
        get { networkSettings.withLockAnnotated { $0.preferredPeakBitRate } }
        set {
            set(\.preferredPeakBitRate, to: newValue, observed: \AVPlayerItem.preferredPeakBitRate)
            forgetVariantAdaptation()
            player?.variantLimitChanged(of: self)
        }
    }

    /// The largest picture, in pixels, the item should choose among an HLS master
    /// playlist's variants; `.zero`, the default, for no limit (a dimension of zero limits
    /// only the other). A variant fits when its video's width and height are both within
    /// it; a variant without pictures fits any. Applied with `preferredPeakBitRate`, by the
    /// rules and at the times said there: the chosen variant is the one of highest bandwidth
    /// among those that fit both, else the lowest.
    open var preferredMaximumResolution: CGSize {
        get { networkSettings.withLockAnnotated { $0.preferredMaximumResolution } }
        set {
            set(\.preferredMaximumResolution, to: newValue, observed: \AVPlayerItem.preferredMaximumResolution)
            forgetVariantAdaptation()
            player?.variantLimitChanged(of: self)
        }
    }

    /// `preferredPeakBitRate` and `preferredMaximumResolution` as the pipeline takes them:
    /// whole bits per second and pixels, a limit below one rounded up to one (a limit that
    /// allows nothing still chooses the lowest variant), anything not finite and positive
    /// none.
    /// With the item's own choice by what its network brings (`adaptedVariantCap`), the
    /// lower of the two bandwidths.
    var variantLimit: VariantLimit {
        var limit = requestedVariantLimit
        if let cap = adaptedVariantCap {
            limit.bitsPerSecond = limit.bitsPerSecond > 0 ? min(limit.bitsPerSecond, cap) : cap
        }
        return limit
    }

    /// `preferredPeakBitRate` and `preferredMaximumResolution` alone, as `variantLimit`
    /// takes them.
    var requestedVariantLimit: VariantLimit {
        let (rate, size) = networkSettings.withLockAnnotated { ($0.preferredPeakBitRate, $0.preferredMaximumResolution) }
        return VariantLimit(bitsPerSecond: Self.wholeLimit(rate), width: Self.wholeLimit(Double(size.width)),
                            height: Self.wholeLimit(Double(size.height)))
    }

    /// Opens this item's media for playback: its chosen sound, within its variant limit,
    /// read through its audio mix. Every source a player plays an item from is opened here
    /// or by `openSource(soundStream:liveStartIndex:)`, so that none misses a setting.
    func openSource() throws(MediaError) -> MediaSource {
        let source = try MediaSource(url: asset.location, audioStream: chosenAudioStream, variantLimit: variantLimit, gain: gain)
        source.networkActivity = networkActivity
        return source
    }

    /// As `openSource()`, for a live HLS stream reopened from segment `liveStartIndex`,
    /// keeping the sound `soundStream` (an FFmpeg stream index) it was playing.
    func openSource(soundStream: Int?, liveStartIndex: Int) throws(MediaError) -> MediaSource {
        let source = try MediaSource(url: asset.location, audioStream: soundStream, variantLimit: variantLimit,
                                     liveStartIndex: liveStartIndex, gain: gain)
        source.networkActivity = networkActivity
        return source
    }

    /// Makes `source`, opened by the asset's load before anyone knew this item's settings,
    /// play as `openSource()` would have opened it: the item's sound and variant, its mix.
    /// Before the source is read.
    func adopt(_ source: MediaSource) {
        source.choose(audioStream: chosenAudioStream, variantLimit: variantLimit)
        source.gain = gain
        source.networkActivity = networkActivity
    }

    /// `value` as a whole limit: 0 (none) unless finite and positive, else at least 1, at
    /// most `Int32.max` (no bandwidth or picture size comes near it).
    private static func wholeLimit(_ value: Double) -> Int {
        guard value.isFinite, value > 0 else { return 0 }
        return Int(min(max(value.rounded(.down), 1), Double(Int32.max)))
    }

    /// Whether a paused live stream keeps loading so that playing again resumes at once;
    /// false by default. Kept and observable, not yet applied.
    open var canUseNetworkResourcesForLiveStreamingWhilePaused: Bool {
        get { networkSettings.withLockAnnotated { $0.canUseNetworkResourcesForLiveStreamingWhilePaused } }
        set {
            set(\.canUseNetworkResourcesForLiveStreamingWhilePaused, to: newValue,
                observed: \AVPlayerItem.canUseNetworkResourcesForLiveStreamingWhilePaused)
        }
    }

    /// Whether a live item, after a pause or a stall, moves on to keep its distance from the
    /// live edge; false by default. Kept and observable, not yet applied.
    open var automaticallyPreservesTimeOffsetFromLive: Bool {
        get { networkSettings.withLockAnnotated { $0.automaticallyPreservesTimeOffsetFromLive } }
        set {
            set(\.automaticallyPreservesTimeOffsetFromLive, to: newValue,
                observed: \AVPlayerItem.automaticallyPreservesTimeOffsetFromLive)
        }
    }

    /// How far behind the live edge a live item should start; `.invalid`, the default, for
    /// the stream's own recommendation. Kept and observable, not yet applied: a live item
    /// here starts where FFmpeg's HLS demuxer starts it, three segments before the end of its
    /// playlist.
    open var configuredTimeOffsetFromLive: CMTime {
        get { networkSettings.withLockAnnotated { $0.configuredTimeOffsetFromLive } }
        set { set(\.configuredTimeOffsetFromLive, to: newValue, observed: \AVPlayerItem.configuredTimeOffsetFromLive) }
    }

    /// The volumes of the item's audio tracks over time; nil, the default, for none. The item
    /// keeps a copy, as Apple's does, so a mutable mix changed later does not change it: set
    /// it again to apply the change. The track playing is heard at its parameters' volume
    /// at each moment of the item's time, times the player's `volume`; a mix set while the
    /// item plays is heard from the sound decoded after it, which the player reads up to
    /// `PlaybackEngine.readAhead` (2 s) ahead of what is heard.
    open var audioMix: AVAudioMix? {
        get { networkSettings.withLockAnnotated { $0.audioMix } }
        set {
            let kept = newValue.flatMap { $0.copy() as? AVAudioMix }
            gain.set(Self.gainCurves(of: kept))
            set(\.audioMix, to: kept, observed: \AVPlayerItem.audioMix)
        }
    }

    /// The item's audio mix as every reader of its sound applies it.
    let gain = ItemGain()

    /// Each track's volume settings in `mix`, as gain curves by track ID (the settings'
    /// times in seconds of the item's time); a track of no ID is left out, as a mix's
    /// parameters for no track apply to none.
    static func gainCurves(of mix: AVAudioMix?) -> [Int32: GainCurve] {
        var curves: [Int32: GainCurve] = [:]
        for parameters in mix?.inputParameters ?? [] where parameters.trackID != kCMPersistentTrackID_Invalid {
            let settings = parameters.settings.withLockAnnotated { $0.volumes }.compactMap { setting -> GainCurve.Setting? in
                let start = setting.timeRange.start
                guard start.isNumeric else { return nil }
                // A ramp without a numeric end is a step to its end volume, as the parameters
                // themselves report it (`volume(at:)`).
                let end = setting.timeRange.end
                return GainCurve.Setting(start: start.seconds, end: end.isNumeric ? end.seconds : start.seconds,
                                         startGain: setting.startVolume, endGain: setting.endVolume)
            }
            curves[parameters.trackID] = GainCurve(settings: settings)
        }
        return curves
    }

    // MARK: - Outputs

    /// Adds an output that receives this item's pictures (`AVPlayerItemVideoOutput`) or its
    /// subtitles (`AVPlayerItemLegibleOutput`).
    open func add(_ output: AVPlayerItemOutput) {
        let added = outputList.withLockAnnotated { outputs -> Bool in
            guard !outputs.contains(where: { $0 === output }) else { return false }
            outputs.append(output)
            return true
        }
        guard added else { return }
        output.attachment.withLockAnnotated { $0.item = self }
        if output is AVPlayerItemVideoOutput { player?.addVideoConsumer() }
        outputsChanged()
    }

    /// Removes an output added with `add(_:)`.
    open func remove(_ output: AVPlayerItemOutput) {
        let removed = outputList.withLockAnnotated { outputs -> Bool in
            guard let index = outputs.firstIndex(where: { $0 === output }) else { return false }
            outputs.remove(at: index)
            return true
        }
        guard removed else { return }
        output.attachment.withLockAnnotated { $0.item = nil }
        if output is AVPlayerItemVideoOutput { player?.removeVideoConsumer() }
        outputsChanged()
    }

    /// An output was added or removed, or one changed `suppressesPlayerRendering`. Stored
    /// under the list's lock, so that of two changes at once the later one's answer stands.
    func outputsChanged() {
        outputList.withLockAnnotated { outputs in
            let suppressed = outputs.contains { $0 is AVPlayerItemVideoOutput && $0.suppressesPlayerRendering }
            layersSuppressed.store(suppressed, ordering: .relaxed)
        }
        player?.currentItemOutputsChanged()
    }

    /// The outputs added to this item.
    open var outputs: [AVPlayerItemOutput] { outputList.withLockAnnotated { $0 } }

    /// The timed metadata that holds where playback stands (a station's current title, a
    /// stream's latest ID3 tags); nil before any. Observable. Apple has deprecated this in
    /// favour of `AVPlayerItemMetadataOutput`, which gives the same items as they come due.
    open var timedMetadata: [AVMetadataItem]? { standingMetadata.withLockAnnotated { $0?.items } }

    /// On the player's monitor: notes where playback stands, for `timedMetadata`.
    func noteMetadataPosition(_ time: CMTime, info: MediaInfo) {
        guard let (group, until) = timedMetadataLog.group(at: time) else { return }
        guard standingMetadata.withLockAnnotated({ $0?.time != group.time }) else { return }
        let items = AVMetadataItem.items(of: group, until: until, info: info)
        standingMetadata.withLockAnnotated { $0 = (group.time, items) }
    }

    // MARK: - Media selection

    /// What is chosen in each of the item's media selection groups: explicit choices, then
    /// its player's criteria, then each group's default.
    open var currentMediaSelection: AVMediaSelection {
        let choices = state.withLockAnnotated { $0.automatic.merging($0.chosen) { _, explicit in explicit } }
        // The sound that plays where none was chosen: within a variant limit, the chosen
        // variant's, which need not be the default FFmpeg picked at the open.
        var played: [AVMediaCharacteristic: Int] = [:]
        if choices[.audible] == nil, let info = loadedInfo ?? asset.loadedMediaInfo,
           let sound = info.playedTracks(audioStream: nil, within: variantLimit).audio?.streamIndex {
            played[.audible] = sound
        }
        return AVMediaSelection(asset: asset, choices: choices, played: played)
    }

    /// Chooses `option` in `group`: a sound track in another language, or subtitles (nil
    /// turns subtitles off). A sound chosen while the item plays is heard from the time it
    /// has reached, after a moment's silence while the new track is opened; subtitles change
    /// at once. An option not in `group`, a group of other media, an option that cannot
    /// play, and nil in a group that does not allow it are ignored with a warning, as
    /// Apple's are.
    open func select(_ option: AVMediaSelectionOption?, in group: AVMediaSelectionGroup) {
        guard group.media == asset.location else {
            playerLog.warning("select(_:in:): the group is not one of this item's media")
            return
        }
        if let option {
            guard group.options.contains(option), option.isPlayable else {
                playerLog.warning("select(_:in:): \(option) is not a playable option of \(group)")
                return
            }
        } else if !group.allowsEmptySelection {
            playerLog.warning("select(_:in:): \(group) needs an option")
            return
        }
        setChoice(option?.streamIndex, for: group.characteristic, explicit: true)
    }

    /// Leaves the choice in `group` to the player's criteria (or the group's default).
    open func selectMediaOptionAutomatically(in group: AVMediaSelectionGroup) {
        let had = state.withLockAnnotated { $0.chosen.removeValue(forKey: group.characteristic) }
        if had != nil { selectionChanged(group.characteristic) }
    }

    /// The stream to play for `characteristic`: `.some(index)`, `.some(nil)` for none, or nil
    /// when nothing decided it (the group's default applies).
    func choice(for characteristic: AVMediaCharacteristic) -> Int?? {
        state.withLockAnnotated { $0.chosen[characteristic] ?? $0.automatic[characteristic] }
    }

    /// The sound stream the item is to play; nil for FFmpeg's own choice.
    var chosenAudioStream: Int? { choice(for: .audible) ?? nil }

    /// The subtitle stream to show, if any.
    var shownSubtitleStream: Int? {
        if let choice = choice(for: .legible) { return choice }
        guard let info = loadedInfo ?? asset.loadedMediaInfo else { return nil }
        return AVMediaSelectionGroup(characteristic: .legible, info: info, asset: asset)?.defaultOption?.streamIndex
    }

    /// Whether the item has an explicit choice for `characteristic`.
    func hasExplicitChoice(for characteristic: AVMediaCharacteristic) -> Bool {
        state.withLockAnnotated { $0.chosen[characteristic] != nil }
    }

    /// The sound (nil: the item's default) and subtitles (nil: none) the item plays and
    /// shows, by stream index: what a group's leader announces.
    package var chosenStreams: (audio: Int?, subtitles: Int?) { (chosenAudioStream, shownSubtitleStream) }

    /// Where a group's leader closed up the jumps of this live stream (`AVPlayer.currentSplices`),
    /// for a follower's item to count as the leader's does: given before the item is loaded,
    /// its first opening takes them as its own. A player that reads across a jump itself
    /// closes it up the same way, so these matter only for the jumps before its opening.
    package func countsAcrossSplices(_ splices: [TimelineSplice]) {
        state.withLockAnnotated { $0.splices = splices }
    }

    /// The splices given with `countsAcrossSplices(_:)`.
    var timelineSplices: [TimelineSplice] { state.withLockAnnotated { $0.splices } }

    /// Chooses by stream index, as a group's follower does what its leader announces: a
    /// sound (nil: the item's default) and subtitles (nil: none). Indexes that are not a
    /// playable stream of the item's kind are ignored once the item is loaded.
    package func chooseStreams(audio: Int?, subtitles: Int?) {
        let info = loadedInfo ?? asset.loadedMediaInfo
        if let audio {
            let playable = info.map { info in info.tracks.contains { $0.streamIndex == audio && $0.kind == .audio && MediaInfo.hasDecoder(for: $0) } } ?? true
            if playable { setChoice(audio, for: .audible, explicit: true) }
        } else if state.withLockAnnotated({ $0.chosen.removeValue(forKey: .audible) }) != nil {
            selectionChanged(.audible)
        }
        let showable = subtitles.map { subtitles in
            info.map { info in info.tracks.contains { $0.streamIndex == subtitles && MediaInfo.isTextSubtitle($0) } } ?? true
        } ?? true
        if showable { setChoice(subtitles, for: .legible, explicit: true) }
    }

    /// Records a choice; an explicit one overrides criteria. Announces a change.
    func setChoice(_ stream: Int?, for characteristic: AVMediaCharacteristic, explicit: Bool) {
        let changed = state.withLockAnnotated { current -> Bool in
            let before = current.chosen[characteristic] ?? current.automatic[characteristic]
            if explicit { current.chosen[characteristic] = .some(stream) } else { current.automatic[characteristic] = .some(stream) }
            let after = current.chosen[characteristic] ?? current.automatic[characteristic]
            return before != after
        }
        if changed { selectionChanged(characteristic) }
    }

    private func selectionChanged(_ characteristic: AVMediaCharacteristic) {
        if characteristic == .legible { subtitleCues.ask(for: shownSubtitleStream) }
        observationRegistry.notify(\AVPlayerItem.currentMediaSelection, old: (nil as AVMediaSelection?) as Any, new: currentMediaSelection)
        NotificationCenter.default.post(name: Self.mediaSelectionDidChangeNotification, object: self)
        player?.mediaSelectionChanged(of: self, characteristic: characteristic)
    }

    // MARK: - Updates from the player (on its event queue)

    var loadedInfo: MediaInfo? { state.withLockAnnotated { $0.mediaInfo } }

    func becameReady(_ info: MediaInfo, hostClock: CMClock) {
        let tracks = asset.makeTracks(info).map { AVPlayerItemTrack(assetTrack: $0, item: self) }
        let timebase = CMTimebase(sourceClock: hostClock)
        let (oldStatus, oldDuration): (Status, CMTime) = state.withLockAnnotated { current in
            defer {
                current.mediaInfo = info
                current.status = .readyToPlay
                current.duration = info.duration
                current.tracks = tracks
                current.timebase = timebase
            }
            return (current.status, current.duration)
        }
        // The subtitles shown by default (the track the item marks so) are known now.
        subtitleCues.ask(for: shownSubtitleStream)
        observationRegistry.notify(\AVPlayerItem.duration, old: oldDuration, new: info.duration)
        observationRegistry.notify(\AVPlayerItem.tracks, old: [AVPlayerItemTrack](), new: tracks)
        observationRegistry.notify(\AVPlayerItem.status, old: oldStatus, new: Status.readyToPlay)
        // Key paths through the player (`\.currentItem?.status`) see it at once.
        player?.observationRegistry.poke()
    }

    /// How far the decoded length of an item may be from the length its container states
    /// for the decoded one to be taken as the item's duration at its end, in seconds: 0.2,
    /// more than an encoder's delay and padding (MP3 up to about 3,400 frames, 0.08 s at
    /// 44.1 kHz; AAC 2,048), less than any loss of real content worth hiding.
    static let durationSettlingLimit = 0.2

    /// The item played to its end at `end`, its decoded length: when that is within
    /// `durationSettlingLimit` of the stated duration (which for MP3 and AAC counts the
    /// encoder's delay and padding that decoding trims), it becomes the duration, observed
    /// as a change, so that at the end `currentTime()` is the duration, as the guide says.
    func settleDuration(atEnd end: CMTime) {
        let old: CMTime? = state.withLockAnnotated { current in
            guard current.duration.isNumeric, end.isNumeric, current.duration != end,
                  abs((current.duration - end).seconds) <= Self.durationSettlingLimit,
                  current.mediaInfo?.preferredVideoTrack == nil else { return nil }
            defer { current.duration = end }
            return current.duration
        }
        if let old { observationRegistry.notify(\AVPlayerItem.duration, old: old, new: end) }
    }

    /// Where the playhead stands once an item with pictures has played to its end, its sound
    /// having ended at `end`: its stated duration, when that lies within
    /// `durationSettlingLimit` of `end`, so that at the end `currentTime()` is the duration
    /// there too. (Its duration is not settled on its sound's length, as a sound's is: the
    /// container counts its pictures, whose last may run a frame or two past the sound, and
    /// the duration is what the pictures are shown against.) Nil for an item without
    /// pictures, and when the two lie further apart.
    func pictureItemEnd(soundEndedAt end: CMTime) -> CMTime? {
        state.withLockAnnotated { current in
            guard current.mediaInfo?.preferredVideoTrack != nil, current.duration.isNumeric, end.isNumeric,
                  abs((current.duration - end).seconds) <= Self.durationSettlingLimit else { return nil }
            return current.duration
        }
    }

    func failed(_ error: MediaError) {
        // In the error log before the status says so, so that whoever sees the failure
        // finds it there.
        noteError(error)
        let oldStatus: Status = state.withLockAnnotated { current in
            defer { current.status = .failed; current.error = error }
            return current.status
        }
        observationRegistry.notify(\AVPlayerItem.status, old: oldStatus, new: Status.failed)
        player?.observationRegistry.poke()
    }

    func noteDamage(_ count: Int) { state.withLockAnnotated { $0.damagedPackets = count } }

    // MARK: - Identity, as NSObject's (a subclass may override these; `==` and hashing follow)

    /// Whether `object` is this one: identity, as NSObject's.
    open func isEqual(_ object: Any?) -> Bool { isSameObject(object, self) }
    /// A hash consistent with `isEqual(_:)`.
    open var hash: Int { ObjectIdentifier(self).hashValue }
    /// `<ClassName: address>`, as NSObject's.
    open var description: String { objectDescription(self) }
}

/// One track of an item as it plays: the asset's track, and whether it is enabled.
public final class AVPlayerItemTrack: AVKeyValueObservable, Sendable {
    /// The asset track this stands for.
    public let assetTrack: AVAssetTrack?
    /// Where observers of the track's properties (`isEnabled`) are told of their changes.
    public let observationRegistry = ObservationRegistry()
    private let enabled = Mutex(true)
    /// The item the track belongs to, told when the track is turned on or off.
    private let owner: WeakBox<AVPlayerItem>

    init(assetTrack: AVAssetTrack, item: AVPlayerItem) {
        self.assetTrack = assetTrack
        owner = WeakBox()
        owner.value = item
    }

    /// Whether the track plays. Disabling the audio track silences the item at once;
    /// disabling the video track takes the picture off its layers (and stops decoding it)
    /// until it is enabled again.
    public var isEnabled: Bool {
        get { enabled.withLockAnnotated { $0 } }
        set {
            observationRegistry.set(\AVPlayerItemTrack.isEnabled) {
                let changed = enabled.withLockAnnotated { old in defer { old = newValue }; return old != newValue }
                if changed, let item = owner.value { item.player?.tracksChanged(of: item) }
            }
        }
    }

    /// A video track's frame rate as played; 0 for audio.
    public var currentVideoFrameRate: Float { assetTrack?.nominalFrameRate ?? 0 }
}
