import Foundation
import MediaClock
import MediaPipeline
import MutexAnnotations
import Synchronization

/// Plays one item at a time through a timed audio output, with Apple's AVPlayer API.
///
/// Threads: every method may be called from any thread. State changes, key-value
/// observations, notifications and seek/preroll completion handlers happen on the player's
/// serial `eventQueue`; time observers run on the queue given when they were added (the
/// main queue when nil, as on Apple's platforms).
// @unchecked only because the class is open, as Apple's is (a non-final class cannot be
// checked): what changes is in `state`, a Mutex, and `monitor` is set once, in init, before
// any other thread can see the player.
open class AVPlayer: AVKeyValueObservable, @unchecked Sendable {
    /// How often the player reads the render thread's report to update its status, fire
    /// time observers and notice the end: 10 ms, one device period, so observers are at
    /// most a period late and the end is reported within a period of being heard.
    public static let monitorInterval: Duration = .milliseconds(10)
    /// Seconds the device may play on past the old sound's last frame, following on, before
    /// the player says it waits: two monitor ticks, so a new sound whose start is read a tick
    /// late (it is heard from the frame after the old one's last) is no wait.
    static let followOnWaitMargin = 0.02

    public let observationRegistry = ObservationRegistry()
    /// The serial queue on which state changes and their callbacks are delivered.
    public let eventQueue = DispatchQueue(label: "chorus.player.events")
    /// Where the work that blocks is done, in order: opening the output device (a sound
    /// server's round trips) and stopping and making readers (waiting for a reader's thread
    /// to end). On the event queue it held up the 10 ms monitor, observers and completion
    /// handlers. Only the player's own code runs here, never a caller's.
    let setupQueue = DispatchQueue(label: "chorus.player.setup")
    /// Where the player sends its sound. Fixed at creation.
    public let outputSpec: OutputSpec
    /// The host clock of this machine (or a simulated one, in tests).
    public let hostClock: CMClock

    let engine: PlaybackEngine
    /// Everything the player knows. Methods named `…Locked` take it from a caller that holds
    /// the lock.
    let state: Mutex<PlayerState>
    /// How many layers and video outputs show this player's pictures.
    let videoConsumers = Mutex(0)
    /// Whether the current item's layers leave its pictures to a video output
    /// (`AVPlayerItemOutput.suppressesPlayerRendering`): what a layer's display thread reads,
    /// an atomic so that it neither waits nor holds the item. Stored under `state`'s lock
    /// whenever the current item or its outputs change (`currentItemOutputsChanged()`).
    let layersSuppressed = Atomic<Bool>(false)
    private var monitor: RepeatingTimer?

    // Every initializer Apple's player has is designated here too, so that a subclass
    // inherits them all (and calls `super.init()` from its own), as it does on Apple's
    // platforms; each makes the same parts (`AVPlayer.Parts`).

    /// A player with no item.
    public init() {
        let parts = Parts(output: .defaultOutput)
        (outputSpec, hostClock, engine) = (parts.output, parts.hostClock, parts.engine)
        state = Mutex(PlayerState(status: .unknown))
        begin(with: nil)
    }

    /// A player for the media at `url`.
    public init(url: URL) {
        let parts = Parts(output: .defaultOutput)
        (outputSpec, hostClock, engine) = (parts.output, parts.hostClock, parts.engine)
        state = Mutex(PlayerState(status: .unknown))
        begin(with: AVPlayerItem(url: url))
    }

    /// A player for `item`, on the default output (ALSA's default device).
    public init(playerItem item: AVPlayerItem?) {
        let parts = Parts(output: .defaultOutput)
        (outputSpec, hostClock, engine) = (parts.output, parts.hostClock, parts.engine)
        state = Mutex(PlayerState(status: .unknown))
        begin(with: item)
    }

    /// A player for `item` that renders to `output` (`alsa:DEVICE`, `null[:drift=PPM]`,
    /// `wav:PATH`). The output opens with the first item.
    public init(playerItem item: AVPlayerItem?, output: OutputSpec) {
        let parts = Parts(output: output)
        (outputSpec, hostClock, engine) = (parts.output, parts.hostClock, parts.engine)
        state = Mutex(PlayerState(status: .unknown))
        begin(with: item)
    }

    /// A player working in `hostClock`, where `hostMapping` turns the real CLOCK_MONOTONIC
    /// times the device reports into that clock's: the seam through which a group node on
    /// one machine plays as if on another's clock. With `capture`, every period's
    /// presentation time is recorded to that file (see `RenderCapture`). For the package's
    /// sessions, tests and benchmarks; not part of Apple's API. (A convenience initializer,
    /// which subclasses inherit: it hands the seams to the designated one, `PlayerSeams`.)
    package convenience init(playerItem item: AVPlayerItem?, output: OutputSpec, hostClock: CMClock,
                             hostMapping: @escaping @Sendable (HostTime) -> HostTime, capture: RenderCapture?) {
        PlayerSeams.hand(PlayerSeams(hostClock: hostClock, hostMapping: hostMapping, capture: capture))
        self.init(playerItem: item, output: output)
    }

    /// Posted, with the player as its object, when the first picture of a run of the
    /// current item (from its start, a seek, a join) is decoded and queued, on the reader's
    /// thread: what makes a layer ready for display.
    static let pictureQueuedNotification = Notification.Name("ChorusPlayerPictureQueued")

    /// What every initializer makes: the output's spec, the host clock and the engine, with
    /// any seams a package initializer handed over on this thread.
    private struct Parts {
        let output: OutputSpec
        let hostClock: CMClock
        let engine: PlaybackEngine

        init(output: OutputSpec) {
            let seams = PlayerSeams.take()
            self.output = output
            hostClock = seams.hostClock
            engine = PlaybackEngine(spec: output, hostMapping: seams.hostMapping, capture: seams.capture)
        }
    }

    /// The rest of making a player: its video warnings, its monitor, and its first item.
    private func begin(with item: AVPlayerItem?) {
        // What a change moves, and what the monitor notices, reach observers on one queue.
        observationRegistry.rereadQueue = eventQueue
        // A picture track that cannot be shown costs the pictures, never the sound: said
        // once per reader, on the reader's thread.
        engine.onVideoEvent = { [weak self] event in
            switch event {
            case .ready:
                // A first picture is decoded and queued: the player's layers are ready for
                // display (`AVPlayerLayer.isReadyForDisplay`), shown anywhere yet or not.
                if let self { NotificationCenter.default.post(name: AVPlayer.pictureQueuedNotification, object: self) }
            case .failed(_, let error):
                playerLog.warning("no picture: \(error); the sound plays on")
            case .damaged(let count) where count == 1:
                playerLog.notice("damaged pictures are skipped; the sound plays on")
            default:
                break
            }
        }
        startMonitor()
        if let item { replaceCurrentItem(with: item) }
    }

    deinit {
        monitor?.cancel()
        engine.shutdown()
        state.withLockAnnotated { $0.item }?.stopFollowingLive()
    }

    // MARK: - Properties

    /// Whether the player can play: `.unknown` until it has tried a first item, then
    /// `.readyToPlay` (once its output has opened for the item, or once the item failed to
    /// open: the player can still play others, as Apple's says), or `.failed` when the output
    /// could not be opened. Observable.
    open var status: Status { state.withLockAnnotated { $0.status } }
    /// Why the player failed: an `AVError` (or a `URLError`), as on Apple's platforms, with
    /// the typed `AVPlaybackError` under `NSUnderlyingErrorKey`.
    open var error: (any Error)? { state.withLockAnnotated { $0.error?.avFoundationError } }
    /// The item being played.
    open var currentItem: AVPlayerItem? { state.withLockAnnotated { $0.item } }
    /// What the player is doing now.
    open var timeControlStatus: TimeControlStatus { state.withLockAnnotated { $0.timeControlStatus } }
    /// Why the player waits, while `timeControlStatus` is `.waitingToPlayAtSpecifiedRate`.
    open var reasonForWaitingToPlay: WaitingReason? { state.withLockAnnotated { $0.waitingReason } }
    /// The render thread's latest report: timeline error, corrections, resyncs, stalls.
    /// (A Chorus addition, for statistics.)
    public var renderStatus: RenderStatus { engine.status }

    /// The output device's name, as shown in status lines.
    public var outputName: String { engine.outputName }

    /// The playback rate: 0 paused, 1 normal speed, 0.5 half speed, 2 double. Setting a
    /// non-zero rate plays; changing it while playing changes the speed without a break.
    /// Forward rates from `slowestRate` to `fastestRate` play (beyond them, the nearer
    /// bound), with the pitch kept or not as the item's `audioTimePitchAlgorithm` says
    /// (kept by default). Negative rates from -`fastestRate` to -`slowestRate` play the item
    /// backwards when it `canPlayReverse` (the sound decoded backwards; the picture holds),
    /// down to its start or `reversePlaybackEndTime`, where it pauses. A non-finite rate, or
    /// a negative one for an item that cannot play backwards, is refused with a warning
    /// (logged through swift-log as `chorus.avplayback`) and changes nothing.
    open var rate: Float {
        get { state.withLockAnnotated { $0.rate } }
        set {
            if newValue == 0 { pause(); return }
            guard let rate = rateForCurrentItem(newValue) else { return }
            start(rate: rate, at: nil, hostTime: nil, seekFirst: false)
        }
    }

    /// The slowest forward rate played (a Chorus addition): slower rates play at this.
    public static let slowestRate: Float = 1.0 / 32
    /// The fastest forward rate played (a Chorus addition): faster rates play at this, the
    /// most the render thread's resampler reads without aliasing.
    public static let fastestRate: Float = 8

    /// `rate` bounded to the rates played, or nil (with a warning) for one that cannot be.
    static func playableRate(_ rate: Float) -> Float? {
        guard rate.isFinite, rate != 0 else {
            playerLog.warning("AVPlayer: rate \(rate) ignored")
            return nil
        }
        let magnitude = min(max(abs(rate), slowestRate), fastestRate)
        return rate < 0 ? -magnitude : magnitude
    }

    /// `rate` if the current item can play it (a negative rate needs `canPlayReverse`), or
    /// nil with a warning, the rate unchanged and `rateDidChangeNotification` posted with
    /// `.setRateFailed`, as Apple's players report a rate they cannot play.
    /// (`play()`, which falls back to rate 1 for a `defaultRate` it cannot play, does not
    /// report the failure: it plays.)
    func rateForCurrentItem(_ rate: Float, reportingFailure: Bool = true) -> Float? {
        guard let playable = Self.playableRate(rate) else {
            if reportingFailure { rateFailed() }
            return nil
        }
        if playable < 0, let item = currentItem, item.status == .readyToPlay, !item.canPlayReverse {
            playerLog.warning("AVPlayer: rate \(rate) ignored: the item cannot play in reverse (it has no sound, cannot be sought, or is an HLS presentation spliced from several)")
            if reportingFailure { rateFailed() }
            return nil
        }
        return playable
    }

    private func rateFailed() {
        eventQueue.async { [weak self] in
            guard let self else { return }
            NotificationCenter.default.post(name: AVPlayer.rateDidChangeNotification, object: self,
                                            userInfo: [AVPlayer.rateDidChangeReasonKey: RateDidChangeReason.setRateFailed])
        }
    }

    /// An item's outputs changed: when it is the current one, its layers follow.
    func currentItemOutputsChanged() {
        state.withLockAnnotated { state in
            layersSuppressed.store(state.item?.layersSuppressed.load(ordering: .relaxed) ?? false, ordering: .relaxed)
        }
    }

    /// The rate `play()` uses.
    open var defaultRate: Float {
        get { state.withLockAnnotated { $0.defaultRate } }
        set { observationRegistry.set(\AVPlayer.defaultRate) { state.withLockAnnotated { $0.defaultRate = newValue } } }
    }

    /// What happens when the item ends; `.pause` by default (`.advance` for queue players).
    open var actionAtItemEnd: ActionAtItemEnd {
        get { state.withLockAnnotated { $0.actionAtItemEnd } }
        set {
            observationRegistry.set(\AVPlayer.actionAtItemEnd) {
                state.withLockAnnotated { $0.actionAtItemEnd = newValue }
                // Only `.advance` joins the next item on.
                refreshSuccessors()
            }
        }
    }

    /// Whether playback waits for enough data before starting. True by default, as on
    /// Apple's platforms; must be false for `setRate(_:time:atHostTime:)`.
    ///
    /// True: a network item starts, and any item plays on after a stall, once a second of
    /// sound (or the item's `preferredForwardBufferDuration`, up to two) is decoded ahead or
    /// the item's end is; until then `timeControlStatus` is `.waitingToPlayAtSpecifiedRate`
    /// with `.toMinimizeStalls`. False: playback sounds with the first data there is, and
    /// after a stall goes on with the first that comes back.
    open var automaticallyWaitsToMinimizeStalling: Bool {
        get { state.withLockAnnotated { $0.waitsToMinimizeStalling } }
        set {
            observationRegistry.set(\AVPlayer.automaticallyWaitsToMinimizeStalling) {
                let buffers = state.withLockAnnotated { state in
                    state.waitsToMinimizeStalling = newValue
                    return stallBuffersLocked(&state)
                }
                engine.render {
                    $0.startBufferFrames = buffers.start
                    $0.resumeBufferFrames = buffers.resume
                    $0.flush = false
                }
            }
        }
    }

    /// Linear volume, 0...1.
    open var volume: Float {
        get { state.withLockAnnotated { $0.volume } }
        set {
            observationRegistry.set(\AVPlayer.volume) {
                state.withLockAnnotated { state in state.volume = min(1, max(0, newValue.isFinite ? newValue : 1)) }
                applyVolume()
            }
        }
    }

    /// Whether sound is muted.
    open var isMuted: Bool {
        get { state.withLockAnnotated { $0.isMuted } }
        set {
            observationRegistry.set(\AVPlayer.isMuted) {
                state.withLockAnnotated { $0.isMuted = newValue }
                applyVolume()
            }
        }
    }

    /// The clock the item's timebase follows. Nil: the output device's clock (playback runs
    /// free at the device's rate). Set, playback started with `setRate(_:time:atHostTime:)`
    /// is held on that clock continuously: the device's drift and the clock's rate against
    /// the host are corrected by resampling within a few hundred ppm, and a clock that
    /// moves far is followed by a skip. A group follower sets the clock it slaves to its
    /// leader; a leader sets the host clock, so its own device follows the same path.
    open var masterClock: CMClock? {
        get { state.withLockAnnotated { $0.masterClock } }
        set {
            observationRegistry.set(\AVPlayer.masterClock) {
                state.withLockAnnotated { state in
                    state.masterClock = newValue
                    if state.rate != 0, newValue != nil {
                        state.masterAnchor = nil
                        applyModeLocked(&state, flush: false)
                    }
                }
                // A group's speed change is due soon after it is announced: its pitch stage is
                // made now (see the item's set-up), off the player's lock.
                if newValue != nil, let mode = currentItem?.pitchMode {
                    preparePitchKeepingInBackground(mode)
                }
            }
        }
    }

    /// Extra delay of the sound path after the output device (a receiver, a speaker with
    /// its own processing), which playback compensates by starting that much earlier.
    /// Applies to starts on a `masterClock`. (A Chorus addition.)
    public var latencyCompensation: Duration {
        get { state.withLockAnnotated { $0.latencyCompensation } }
        set { observationRegistry.set(\AVPlayer.latencyCompensation) { state.withLockAnnotated { $0.latencyCompensation = newValue } } }
    }

    /// Apple's newer name for `masterClock`.
    open var sourceClock: CMClock? {
        get { masterClock }
        set { masterClock = newValue }
    }

    /// Whether playback may move to another machine. (External playback comes with casting.)
    open var allowsExternalPlayback: Bool {
        get { state.withLockAnnotated { $0.allowsExternalPlayback } }
        set { observationRegistry.set(\AVPlayer.allowsExternalPlayback) { state.withLockAnnotated { $0.allowsExternalPlayback = newValue } } }
    }
    /// Whether playback is happening on another machine now.
    open var isExternalPlaybackActive: Bool { false }
    /// Whether to play externally while an external screen is active.
    open var usesExternalPlaybackWhileExternalScreenIsActive: Bool {
        get { state.withLockAnnotated { $0.usesExternalPlaybackWhileExternalScreenIsActive } }
        set { observationRegistry.set(\AVPlayer.usesExternalPlaybackWhileExternalScreenIsActive) { state.withLockAnnotated { $0.usesExternalPlaybackWhileExternalScreenIsActive = newValue } } }
    }
    /// How pictures played externally fill the other machine's screen (`.resizeAspect`
    /// unless set).
    open var externalPlaybackVideoGravity: AVLayerVideoGravity {
        get { state.withLockAnnotated { $0.externalPlaybackVideoGravity } }
        set { observationRegistry.set(\AVPlayer.externalPlaybackVideoGravity) { state.withLockAnnotated { $0.externalPlaybackVideoGravity = newValue } } }
    }
    /// Whether closed captions are shown (Apple deprecated it for media selection, which
    /// chooses the subtitles here too); kept as set.
    open var isClosedCaptionDisplayEnabled: Bool {
        get { state.withLockAnnotated { $0.isClosedCaptionDisplayEnabled } }
        set { observationRegistry.set(\AVPlayer.isClosedCaptionDisplayEnabled) { state.withLockAnnotated { $0.isClosedCaptionDisplayEnabled = newValue } } }
    }
    /// Whether pictures are hidden because an external screen lacks the content's protection:
    /// never, since no protected content plays.
    open var outputObscuredDueToInsufficientExternalProtection: Bool { false }

    /// Whether the display is kept awake while the player plays video; true by default, as
    /// on Apple's platforms. An `AVPlayerView` showing the player's pictures keeps its
    /// display awake (no screen saver, no display sleep) while the player plays an item with
    /// pictures and this is true, and lets it sleep otherwise, within a tenth of a second.
    open var preventsDisplaySleepDuringVideoPlayback: Bool {
        get { state.withLockAnnotated { $0.preventsDisplaySleep } }
        set {
            observationRegistry.set(\AVPlayer.preventsDisplaySleepDuringVideoPlayback) {
                state.withLockAnnotated { $0.preventsDisplaySleep = newValue }
            }
        }
    }

    // MARK: - Playing

    /// Plays at `defaultRate`.
    open func play() {
        let rate = defaultRate
        start(rate: rate == 0 ? 1 : rateForCurrentItem(rate, reportingFailure: false) ?? 1, at: nil, hostTime: nil, seekFirst: false)
    }

    /// Pauses; the same as setting `rate` to 0.
    open func pause() {
        var effects = Effects()
        state.withLockAnnotated { state in
            state.positioned = true
            pauseLocked(&state, &effects)
        }
        effects.run(on: eventQueue)
    }

    /// Plays at `rate` at once with the sound there is, whether or not enough is buffered
    /// to minimize stalls: the start does not wait for `automaticallyWaitsToMinimizeStalling`'s
    /// second of sound (a stall later still waits, as that setting says).
    open func playImmediately(atRate rate: Float) {
        if rate == 0 { pause(); return }
        guard let rate = rateForCurrentItem(rate) else { return }
        start(rate: rate, at: nil, hostTime: nil, seekFirst: false, immediately: true)
    }

    /// Aligns item time `itemTime` with host time `hostClockTime` and plays at `rate`.
    ///
    /// A host time in the past plays as if the item had started then; in the future, the
    /// item holds at `itemTime` and starts exactly then, to the sample. An invalid
    /// `itemTime` means the current time; an invalid host time means now, without external
    /// synchronisation. As on Apple's platforms this is refused while
    /// `automaticallyWaitsToMinimizeStalling` is true: the call does nothing and a warning
    /// is logged (swift-log, `chorus.avplayback`).
    ///
    /// Without a `masterClock`, a start at a host time is kept on the host clock as if it
    /// were the master clock: the device's drift is corrected to it, and the item keeps its
    /// pitch (`audioTimePitchAlgorithm`) at any rate, then and after. A seek, a pause or a
    /// plain `play()` ends that schedule.
    ///
    /// Playing on a `masterClock` or on such a schedule, a call whose item time is where the
    /// current timeline already puts that host time (within `continuousChangeTolerance`), or
    /// is invalid, with a host time, changes only the rate from that instant on: nothing is
    /// flushed or re-read, and the sound carries on without a break. This is how every room
    /// of a group changes speed together.
    open func setRate(_ rate: Float, time itemTime: CMTime, atHostTime hostClockTime: CMTime) {
        if automaticallyWaitsToMinimizeStalling {
            playerLog.warning("AVPlayer.setRate(_:time:atHostTime:) ignored: set automaticallyWaitsToMinimizeStalling to false first")
            return
        }
        if rate == 0 {
            pause()
            if itemTime.isNumeric { seek(to: itemTime) }
            return
        }
        guard let rate = rateForCurrentItem(rate) else { return }
        let hostTime = hostClockTime.isNumeric ? HostTime(hostClockTime) : nil
        if let hostTime, changeRateContinuously(to: rate, at: itemTime, hostTime: hostTime) { return }
        start(rate: rate, at: itemTime.isNumeric ? itemTime : nil, hostTime: hostTime, seekFirst: true)
    }

    /// How far a scheduled change's item time may lie from the current timeline's and still
    /// be made without a break: a follower's clock estimate and a group's rounding put it
    /// microseconds off, and the render thread's loop absorbs up to a millisecond within a
    /// few seconds, inaudibly; a real jump (a seek) is much larger.
    public static let continuousChangeTolerance = CMTime(value: 1, timescale: 1000)

    /// The item time the current timeline presents at `hostTime` (a Chorus addition, the
    /// player's counterpart of `AVPlayerItemVideoOutput.itemTime(forHostTime:)`): while
    /// playing on a `masterClock`, exact to the timeline, including a rate change scheduled
    /// before it; otherwise the current time projected at the current rate. Invalid when no
    /// item is loaded.
    open func itemTime(forHostTime hostTime: CMTime) -> CMTime {
        state.withLockAnnotated { state in
            guard let host = HostTime(hostTime) else { return .invalid }
            if let frame = timelineFrameLocked(&state, at: host), let format = state.format {
                return CMTime(value: Int64(frame.rounded()), timescale: Int32(format.sampleRate))
            }
            guard state.itemLoaded else { return .invalid }
            let now = currentTimeLocked(&state)
            let elapsed = (host - (HostTime(hostClock.time) ?? .now())).nanosecondsClamped
            return now + CMTime(value: Int64(Double(elapsed) * Double(state.rate)), timescale: 1_000_000_000)
        }
    }

    /// The item frame (of the current item) the followed timeline puts at `host`, when playing on a master clock
    /// (at `rate`, the player's own unless given).
    func timelineFrameLocked(_ state: inout PlayerState, at host: HostTime, rate: Float? = nil) -> Double? {
        guard state.itemLoaded, state.rate != 0, let master = state.timelineClock, let format = state.format,
              state.masterAnchor != nil else { return nil }
        let timeline = masterTimelineLocked(&state, master: master, format: format, rate: rate ?? state.rate)
        let due = state.itemPosition(ofRenderPosition: timeline.due(at: host - state.latencyCompensation, sampleRate: format.sampleRate))
        return due.isFinite ? due : nil
    }

    /// Makes a scheduled rate change on the timeline being followed, if it continues it.
    private func changeRateContinuously(to rate: Float, at itemTime: CMTime, hostTime: HostTime) -> Bool {
        var effects = Effects()
        let changed: Bool = state.withLockAnnotated { state in
            // Turning round re-reads in the other direction: never continuous.
            guard (rate < 0) == state.reversed, state.rate != 0, let master = state.timelineClock, let format = state.format,
                  let due = timelineFrameLocked(&state, at: hostTime) else { return false }
            let continuing = CMTime(value: Int64(due.rounded()), timescale: Int32(format.sampleRate))
            let target = itemTime.isNumeric ? itemTime : continuing
            guard (target - continuing).absoluteValue <= Self.continuousChangeTolerance else { return false }
            let oldRate = state.rate
            state.masterAnchor = MasterAnchor(itemTime: target, masterTime: master.time(atHostTime: hostTime),
                                              rateBefore: oldRate)
            state.rate = rate
            if oldRate != rate {
                announceRateChange(&effects)
            }
            applyModeLocked(&state, flush: false)
            return true
        }
        effects.run(on: eventQueue)
        if changed { updateTimebase() }
        return changed
    }

    // MARK: - Items

    /// Replaces the current item; nil leaves the player empty.
    open func replaceCurrentItem(with item: AVPlayerItem?) {
        var effects = Effects()
        let old: AVPlayerItem? = state.withLockAnnotated { state in
            let old = state.item
            guard old !== item else { return nil }
            state.item = item
            layersSuppressed.store(item?.layersSuppressed.load(ordering: .relaxed) ?? false, ordering: .relaxed)
            state.serial += 1
            state.resetRunLocked()
            // The engine's unload, queued below, stops them.
            state.successors = []
            state.promotedFailure = nil
            state.positioned = false
            state.itemLoaded = false
            state.silentItemClock = nil
            state.pausedAtEnd = false
            state.startsImmediately = false
            state.format = nil
            state.position = item?.startTime ?? .zero
            state.endHandledSerial = nil
            state.readySerial = -1
            // A timeline carries on into the item the queue advanced to, from where the item
            // before it ended; any other item starts on it when it is ready (the old item's
            // anchor would place it as if it had started with that one).
            state.scheduledHost = nil
            if let item, let advance = state.lastAdvance, advance.item === item {
                state.masterAnchor = MasterAnchor(itemTime: state.position, masterTime: advance.masterTime)
            } else {
                state.masterAnchor = nil
                state.lastAdvance = nil
            }
            if let pending = state.pendingSeek { effects.completions.append { pending.completion(false) } }
            state.pendingSeek = nil
            interruptPrerollsLocked(&state, &effects)
            if item != nil { state.itemChanged = true }
            let registry = observationRegistry
            registry.willSet(\AVPlayer.currentItem)
            effects.here.append { registry.didSet(\AVPlayer.currentItem) }
            if state.rate != 0 { setTimeControlLocked(&state, .waitingToPlayAtSpecifiedRate, reason: item == nil ? .noItemToPlay : .toMinimizeStalls, &effects) }
            return old
        }
        // The old reader's blocks are stale from now on; its thread is stopped in order with
        // the setup of the next item, which must not start a reader before it has ended.
        setupQueue.async { [engine] in engine.unload() }
        let serial = state.withLockAnnotated { $0.serial }
        engine.render { $0.mode = .idle(serial: serial); $0.flush = true }
        old?.player = nil
        old?.stopFollowingLive()
        effects.run(on: eventQueue)
        if let item { attach(item) }
    }

    /// Opens `item` for playback in the background and hands it to the engine when ready.
    private func attach(_ item: AVPlayerItem) {
        item.player = self
        let asset = item.asset
        item.asset.requestInfo(keepingSource: true) { [weak self, weak item] result in
            guard let self, let item else {
                // Nobody to play it: the media kept open for the player is let go.
                _ = asset.takeSpareSource()
                return
            }
            switch result {
            case .failure(let error):
                self.eventQueue.async { self.itemFailedToLoad(item, error) }
            case .success(let info):
                self.applySelectionCriteria(to: item, info: info)
                // The playback source is the load's own when this player started the load,
                // its tracks chosen again for the item's sound and variant limit (nothing has
                // read it yet): a network item is then fetched and probed once. Otherwise it
                // is a second, independent demuxer, as the asset's description is shared by
                // every item of the asset.
                let source: Result<MediaSource, MediaError>
                do throws(MediaError) {
                    if let spare = item.asset.takeSpareSource() {
                        item.adopt(spare)
                        source = .success(spare)
                    } else {
                        source = .success(try item.openSource())
                    }
                } catch {
                    source = .failure(error)
                }
                switch source {
                case .success(let source):
                    self.setupQueue.async { self.itemLoaded(item, info: info, source: source) }
                case .failure(let error): self.eventQueue.async { self.itemFailedToLoad(item, error) }
                }
            }
        }
    }

    private func itemFailedToLoad(_ item: AVPlayerItem, _ error: MediaError) {
        guard state.withLockAnnotated({ state in state.item === item }) else { return }
        // The item's failure is its own: the player has tried, and can play other items.
        playerReady()
        item.failed(error)
        var effects = Effects()
        state.withLockAnnotated { state in
            if state.rate != 0 { setTimeControlLocked(&state, .waitingToPlayAtSpecifiedRate, reason: .noItemToPlay, &effects) }
        }
        effects.run(on: eventQueue)
    }

    /// On the setup queue: the item's media is open; opens the device if need be and the
    /// item's reader, then announces the item ready on the event queue.
    private func itemLoaded(_ item: AVPlayerItem, info: MediaInfo, source: MediaSource) {
        guard state.withLockAnnotated({ state in state.item === item }) else { return }
        guard info.isPlayable else {
            playerReady()
            eventQueue.async { item.failed(.noPlayableTrack(url: info.url)) }
            return
        }
        // An item without sound plays silence in the output's own format. The source's sound,
        // not the asset's: a chosen language or variant may be another track.
        let track = source.info.preferredAudioTrack
        let preferred = AudioFormat(sampleRate: track?.sampleRate ?? AudioFormat.fallback.sampleRate,
                                    channels: min(max(track?.channels ?? 2, 1), AudioFormat.maximumChannels))
        let format: AudioFormat
        do throws(MediaError) {
            // Without sound, a missing sound device costs nothing: the item is timed on the
            // host clock alone (a silent device on it), and says so once.
            let fallback: OutputSpec? = track == nil ? .null(driftPPM: 0) : nil
            let wasOpen = engine.format != nil
            format = try engine.prepare(preferred: preferred, fallback: fallback)
            // The pitch stage, if the item keeps its pitch at a speed other than 1, is made
            // here, off the player's lock (the spectral engine's set-up, Rubber Band's, takes tens of
            // milliseconds).
            // On a master clock it is made at any speed, in the background: a group's speed
            // change is due a moment after it is announced, and made in time only with the
            // stage ready, but the item's start must not wait for it (made here, it put a
            // follower's join 0.4 s later).
            let (speed, following) = state.withLockAnnotated { ($0.rate == 0 ? $0.defaultRate : $0.rate, $0.masterClock != nil) }
            if track != nil, speed != 1 {
                engine.preparePitchKeeping(item.pitchMode)
            } else if track != nil, following {
                preparePitchKeepingInBackground(item.pitchMode)
            }
            if !wasOpen && engine.isOnFallback {
                playerLog.warning("output \(outputSpec) cannot be opened: an item without sound is timed on the host clock alone, and the sound of later items will not be heard")
            }
            playerReady()
        } catch {
            eventQueue.async { [self] in
                playerFailed(error)
                item.failed(error)
            }
            return
        }
        let reading = state.withLockAnnotated { state -> (serial: Int, startFrame: Int64)? in
            guard state.item === item else { return nil }
            // A live stream's playlist is followed from now on, for its seekable range and to
            // open it again where a seek asks (until the item is replaced, which stops it).
            item.followLive(source)
            item.readProgramDates(of: source)
            state.format = format
            return (state.serial, readerStartFrameLocked(&state, format: format))
        }
        guard let reading else { return }
        do throws(MediaError) {
            // Started below, once the item's readiness is queued: its events come after it.
            try engine.load(source: source, serial: reading.serial, startFrame: reading.startFrame, start: false,
                            forwardBuffer: Self.forwardBuffer(of: item), subtitles: item.subtitleCues, metadata: item.timedMetadataLog,
                            splices: item.timelineSplices, onEvent: readerEvents(of: item))
        } catch {
            eventQueue.async { item.failed(error) }
            return
        }
        // The new renderer takes the volume (or the mute) before its first period: set
        // after the mode, a muted player's first periods played at full volume.
        applyVolume()
        let current = state.withLockAnnotated { state -> Bool in
            // Replaced meanwhile: the replacement's unload, queued behind this, drops the reader.
            guard state.item === item else { return false }
            state.itemLoaded = true
            state.soundStream = source.info.preferredAudioTrack?.streamIndex
            state.pictureStream = source.info.preferredVideoTrack?.streamIndex
            state.silentItemClock = source.info.preferredAudioTrack == nil ? hostClock : nil
            // A seek or scheduled start made while the reader was being opened has a newer
            // serial than the reader was started with: move the reader there too.
            if state.serial != reading.serial {
                seekReaderLocked(&state, toItemFrame: readerStartFrameLocked(&state, format: format), format: format)
            }
            applyModeLocked(&state, flush: false)
            // A queue's next item is to follow: the reader waits for it at its end, even if
            // it gets there before the next item is open.
            if !successorsWantedLocked(&state).isEmpty { engine.expectSuccessor(true) }
            return true
        }
        guard current else { return }
        // Ready is announced once the player can act on it at once.
        eventQueue.async { [self] in
            item.becameReady(info, hostClock: hostClock)
            applyVolume()
            updateTimebase()
        }
        engine.startReader()
        // A queue's next item opens now, to follow this one without a gap.
        refreshSuccessors()
        // A sound chosen, or a variant limit set, while the item was being opened is taken up now.
        if wantedStreams(of: item) != Self.streams(of: source) {
            mediaSelectionChanged(of: item, characteristic: .audible)
        }
    }

    /// How far ahead of the playhead the engine reads `item`: its preferred forward buffer,
    /// up to an hour; zero (the engine's defaults) when it has none.
    static func forwardBuffer(of item: AVPlayerItem) -> Duration {
        let seconds = item.preferredForwardBufferDuration
        return seconds.isFinite && seconds > 0 ? .milliseconds(Int64(min(seconds, 3_600) * 1000)) : .zero
    }

    /// The engine's callback for the events of `item`'s reader: each handled on the event
    /// queue, and dropped once the player or the item is gone.
    func readerEvents(of item: AVPlayerItem) -> @Sendable (AudioReaderEvent) -> Void {
        let queue = eventQueue
        return { [weak self, weak item] event in
            queue.async { [weak self, weak item] in
                guard let self, let item else { return }
                self.readerEvent(event, of: item)
            }
        }
    }

    /// The output is open, or a first item failed on its own: the player can play
    /// (announced once, as the status changes).
    private func playerReady() {
        let changed = state.withLockAnnotated { state -> Bool in
            guard state.status == .unknown else { return false }
            state.status = .readyToPlay
            return true
        }
        if changed {
            eventQueue.async { [self] in observationRegistry.notify(\AVPlayer.status, old: Status.unknown, new: Status.readyToPlay) }
        }
    }

    private func playerFailed(_ error: MediaError) {
        let old: Status = state.withLockAnnotated { state in
            defer { state.status = .failed; state.error = error }
            return state.status
        }
        observationRegistry.notify(\AVPlayer.status, old: old, new: Status.failed)
    }

    // MARK: - Seeking, prerolling, time observers and choices
    //
    // Declared in the class body, as the transport is, so that a subclass can override them:
    // Swift lets a subclass override a member declared in an extension only through the
    // Objective-C runtime, which Linux lacks. A seek's work is in AVPlayer+Seeking.swift, the
    // observers' in AVPlayer+TimeObservers.swift.

    /// Seeks to `time` exactly.
    open func seek(to time: CMTime) {
        seek(to: time, toleranceBefore: .zero, toleranceAfter: .zero, completionHandler: { _ in })
    }

    /// Seeks to `time` exactly and calls `completionHandler` on the event queue: `true` when
    /// the seek finished, `false` when a later seek (or an item change) superseded it.
    open func seek(to time: CMTime, completionHandler: @escaping @Sendable (Bool) -> Void) {
        seek(to: time, toleranceBefore: .zero, toleranceAfter: .zero, completionHandler: completionHandler)
    }

    /// Seeks to a time within `[time - toleranceBefore, time + toleranceAfter]`.
    open func seek(to time: CMTime, toleranceBefore: CMTime, toleranceAfter: CMTime) {
        seek(to: time, toleranceBefore: toleranceBefore, toleranceAfter: toleranceAfter, completionHandler: { _ in })
    }

    /// Seeks to a time within `[time - toleranceBefore, time + toleranceAfter]` and calls
    /// `completionHandler` as `seek(to:completionHandler:)` does.
    ///
    /// Audio is decoded from before the target and trimmed, so every seek lands on the
    /// exact sample, which lies within any tolerance; zero tolerances cost nothing extra.
    /// Times before 0 land at 0 and times past the end at the end.
    open func seek(to time: CMTime, toleranceBefore: CMTime, toleranceAfter: CMTime,
                   completionHandler: @escaping @Sendable (Bool) -> Void) {
        startSeek(to: time, completionHandler: completionHandler)
    }

    /// Seeks to the moment `date` of the current item, an HLS stream whose playlist dates
    /// its segments (`AVPlayerItem.seek(to:completionHandler:)`); the handler is called with
    /// `false` when the item has no such date.
    open func seek(to date: Date, completionHandler: @escaping @Sendable (Bool) -> Void = { _ in }) {
        guard let time = currentItem?.time(at: date) else {
            eventQueue.async { completionHandler(false) }
            return
        }
        seek(to: time, toleranceBefore: .zero, toleranceAfter: .zero, completionHandler: completionHandler)
    }

    /// Cancels the seek in flight; its handler gets `false`.
    open func cancelPendingSeeks() {
        let pending: PendingSeek? = state.withLockAnnotated { state in defer { state.pendingSeek = nil }; return state.pendingSeek }
        if let pending { eventQueue.async { pending.completion(false) } }
    }

    /// Loads data at the current time so that `play` starts without delay. Only while
    /// paused and ready; otherwise the handler gets `false`. The handler runs on the event
    /// queue with `true` once data is there, or with `false` when a seek, a start or another
    /// item interrupts the preroll first.
    open func preroll(atRate rate: Float, completionHandler: (@Sendable (Bool) -> Void)? = nil) {
        let handler = completionHandler ?? { _ in }
        let immediate: Bool? = state.withLockAnnotated { state in
            guard state.rate == 0, state.itemLoaded else { return false }
            if state.readySerial >= state.serial { return true }
            state.pendingPrerolls.append(handler)
            return nil
        }
        if let immediate { eventQueue.async { handler(immediate) } }
    }

    /// Prerolls in flight are interrupted (a seek, a start, another item): their handlers
    /// get `false`, as Apple's do when a change of time or rate interrupts them.
    func interruptPrerollsLocked(_ state: inout PlayerState, _ effects: inout Effects) {
        guard !state.pendingPrerolls.isEmpty else { return }
        let prerolls = state.pendingPrerolls
        state.pendingPrerolls = []
        effects.completions.append { for handler in prerolls { handler(false) } }
    }

    /// Cancels prerolls in flight; their handlers get `false`.
    open func cancelPendingPrerolls() {
        let pending = state.withLockAnnotated { state in defer { state.pendingPrerolls = [] }; return state.pendingPrerolls }
        if !pending.isEmpty { eventQueue.async { for handler in pending { handler(false) } } }
    }

    /// Calls `block` every `interval` of item time while playing, and also whenever
    /// playback starts or stops and whenever time jumps. The block runs on `queue` (the main
    /// queue when nil) and is not called again while a previous call is still running.
    /// Returns a token for `removeTimeObserver(_:)`.
    open func addPeriodicTimeObserver(forInterval interval: CMTime, queue: DispatchQueue?,
                                      using block: @escaping @Sendable (CMTime) -> Void) -> Any {
        addTimeObserver(TimeObserver(kind: .periodic(interval: interval, block: block), queue: queue ?? .main))
    }

    /// Calls `block` whenever playback crosses one of `times` (each an `NSValue(time:)`), as
    /// Apple's players take them. Values that hold no time are ignored.
    open func addBoundaryTimeObserver(forTimes times: [NSValue], queue: DispatchQueue?,
                                      using block: @escaping @Sendable () -> Void) -> Any {
        addBoundaryObserver(times.map(\.timeValue), queue: queue, block: block)
    }

    /// Removes a time observer. No call of its block begins after this returns; one already
    /// running may finish after it (the caller is not made to wait for it, as on Apple's players).
    open func removeTimeObserver(_ observer: Any) {
        guard let observer = observer as? TimeObserver else { return }
        state.withLockAnnotated { state in state.observers.removeAll { $0 === observer } }
        observer.remove()
    }

    /// Whether the player chooses each item's options by its criteria
    /// (`setMediaSelectionCriteria(_:forMediaCharacteristic:)`) where the item has no
    /// explicit choice. True by default.
    open var appliesMediaSelectionCriteriaAutomatically: Bool {
        get { state.withLockAnnotated { $0.appliesSelectionCriteria } }
        set { state.withLockAnnotated { $0.appliesSelectionCriteria = newValue } }
    }

    /// Sets the player's standing choice for `characteristic` (`.audible`: the sound's
    /// language; `.legible`: the subtitles'), applied to every item as it opens, and to the
    /// current item at once; nil removes it. Subtitles in none of the preferred languages
    /// show none; a sound in none of them plays the item's default.
    open func setMediaSelectionCriteria(_ criteria: AVPlayerMediaSelectionCriteria?,
                                        forMediaCharacteristic characteristic: AVMediaCharacteristic) {
        let item = state.withLockAnnotated { state -> AVPlayerItem? in
            state.selectionCriteria[characteristic] = criteria
            return state.item
        }
        guard let item, let info = item.loadedInfo ?? item.asset.loadedMediaInfo else { return }
        applySelectionCriteria(to: item, info: info)
    }

    /// The player's standing choice for `characteristic`, if any.
    open func mediaSelectionCriteria(forMediaCharacteristic characteristic: AVMediaCharacteristic) -> AVPlayerMediaSelectionCriteria? {
        state.withLockAnnotated { $0.selectionCriteria[characteristic] }
    }

    // MARK: - Time

    /// The current time of the current item: the item time the device presents now.
    open func currentTime() -> CMTime {
        state.withLockAnnotated { state in currentTimeLocked(&state) }
    }

    func currentTimeLocked(_ state: inout PlayerState) -> CMTime {
        guard let format = state.format else { return state.position }
        guard let frame = renderedFrameLocked(&state, format: format) else { return state.position }
        let time = CMTime(value: frame, timescale: Int32(format.sampleRate))
        // Playing forward, the item ends at its forward end time: the monitor stops it there
        // within a tick, and until it does the time stands at the end rather than past it
        // (a loaded machine's late tick once let it read 22 ms beyond). Going backwards the
        // reader itself stops at the reverse end.
        if state.rate > 0, let end = state.item?.forwardPlaybackEndTime, end.isNumeric, end > .zero, time > end {
            return end
        }
        return time
    }

    /// The item frame presented now, when the render thread is playing this serial (or,
    /// following on, the run before it: `PlayerState.followingOn`).
    func renderedFrameLocked(_ state: inout PlayerState, format: AudioFormat) -> Int64? {
        guard state.itemLoaded, state.rate != 0 else { return nil }
        let status = engine.status
        if let earlier = earlierRunHeardLocked(&state, status: status, format: format) {
            let position = earlier.position.isFinite ? Int64(min(max(earlier.position.rounded(), -9e18), 9e18)) : 0
            var heard = position
            if let floor = state.heardFloor, floor.serial == state.serial { heard = max(heard, floor.frame) }
            state.heardFloor = (state.serial, heard)
            return max(0, heard)
        }
        guard status.serial == state.serial else { return nil }
        switch status.phase {
        case .idle, .starting:
            return nil
        case .playing, .stalled, .ended, .failed:
            let upper = status.phase == .ended || status.phase == .failed ? status.endFrame : status.writtenEndFrame
            if !engine.isRealtime { return max(0, state.itemFrame(ofRenderFrame: min(upper, state.pendingBoundary ?? upper))) }
            let now = HostTime(hostClock.time) ?? .now()
            let position = status.position(at: now, sampleRate: format.sampleRate)
            let frame = position.isFinite ? Int64(min(max(position.rounded(), -9e18), 9e18)) : status.anchorFrame
            var heard = min(max(frame, status.runStartFrame), upper)
            if let floor = state.heardFloor, floor.serial == state.serial { heard = max(heard, floor.frame) }
            state.heardFloor = (state.serial, heard)
            // The next item's sound follows in the same frames: this item ends at the boundary.
            if let boundary = state.pendingBoundary { heard = min(heard, boundary) }
            return max(0, state.itemFrame(ofRenderFrame: heard))
        }
    }

    /// Following on (`PlayerState.followingOn`), until this serial's own frames are heard:
    /// the item position the device plays now, in fractional item frames, read from the run
    /// before (its status while the render thread still writes it, else the last one seen),
    /// no further than the last frame that run wrote; and the rate it plays at (0 once it
    /// stands at that frame, the new sound not yet heard), with how many frames the device
    /// has played past that frame (0 until then). Nil when not following on, or once this
    /// serial is heard (which ends the following on).
    func earlierRunHeardLocked(_ state: inout PlayerState, status: RenderStatus, format: AudioFormat) -> (position: Double, rate: Double, pastEnd: Double)? {
        guard var on = state.followingOn else { return nil }
        guard on.serial == state.serial, engine.isRealtime, !state.reversed else {
            state.followingOn = nil
            return nil
        }
        let now = HostTime(hostClock.time) ?? .now()
        if status.serial == state.serial, status.phase != .starting, status.phase != .idle, now >= status.runStartHost {
            state.followingOn = nil
            return nil
        }
        if status.serial == on.earlier.serial, status.phase == .playing {
            on.earlier = status
            state.followingOn = on
        }
        let earlier = on.earlier
        let extrapolated = earlier.position(at: now, sampleRate: format.sampleRate)
        let written = Double(earlier.writtenEndFrame)
        guard extrapolated.isFinite else { return nil }
        let rate = extrapolated >= written ? 0 : (earlier.anchorRate.isFinite ? earlier.anchorRate : 1)
        return (min(extrapolated, written) - Double(on.frameShift), rate, max(0, extrapolated - written))
    }

    /// How much decoded sound waits ahead of the playhead, whether the ring is full, and
    /// whether the reader has reached the item's end; nil while the item is not loaded.
    func bufferState() -> (ahead: CMTime, full: Bool, ended: Bool)? {
        state.withLockAnnotated { state in
            guard state.itemLoaded, let format = state.format else { return nil }
            let queued = engine.queuedFrames
            let capacity = engine.ringCapacityFrames
            return (CMTime(value: Int64(queued), timescale: Int32(format.sampleRate)),
                    capacity > 0 && queued + AudioRing.framesPerBlock >= capacity,
                    state.decodedToEndSerial >= state.serial)
        }
    }

    /// The loaded span: from the current time to the end of what is decoded.
    func loadedTimeRanges() -> [CMTimeRange] {
        state.withLockAnnotated { state in
            guard state.itemLoaded, let format = state.format else { return [] }
            let now = currentTimeLocked(&state)
            // Decoded sound, then the packets read ahead of it.
            let decoded = CMTime(value: Int64(engine.queuedFrames), timescale: Int32(format.sampleRate))
            let read = CMTime(value: engine.queuedPacketDuration.nanosecondsClamped, timescale: 1_000_000_000)
            return [CMTimeRange(start: now, duration: decoded + read)]
        }
    }

    /// `time` in frames at `format`'s rate, negative times kept (an anchor carried over
    /// from the item before, gaplessly), bounded as `frames(of:format:)` is.
    func signedFrames(of time: CMTime, format: AudioFormat) -> Int64 {
        guard time.isNumeric else { return 0 }
        let scaled = time.convertScale(Int32(format.sampleRate), method: .roundHalfAwayFromZero)
        return min(max(-Self.maximumItemFrame, scaled.value), Self.maximumItemFrame)
    }

    func frames(of time: CMTime, format: AudioFormat) -> Int64 {
        guard time.isNumeric else { return 0 }
        let scaled = time.convertScale(Int32(format.sampleRate), method: .roundHalfAwayFromZero)
        return min(max(0, scaled.value), Self.maximumItemFrame)
    }

    /// Where the reader starts for the current position. Usually the position itself; but a
    /// forward start whose host time has already passed (a follower joining a group's item
    /// minutes after its anchor) plays from the frame due now, and decoding every frame
    /// from the anchor only to skip it cost 10 ms per second of the item gone by (an MP3
    /// joined 40 s in played its first sound 0.58 s after launch instead of 0.20 s, and an
    /// hour in it would take half a minute, fetching the whole hour over HTTP first). The
    /// reader then starts `lateStartMargin` before that frame, and the render thread skips
    /// the little that is late by its first period as for any scheduled start.
    func readerStartFrameLocked(_ state: inout PlayerState, format: AudioFormat) -> Int64 {
        let anchorFrame = frames(of: state.position, format: format)
        guard state.rate > 0 else { return anchorFrame }
        let anchorHost: HostTime?
        if let master = state.timelineClock, let anchor = state.masterAnchor {
            anchorHost = master.hostTime(forClockTime: anchor.masterTime)
        } else {
            anchorHost = state.scheduledHost
        }
        guard let anchorHost, let now = HostTime(hostClock.time) else { return anchorFrame }
        let late = (now - anchorHost).nanosecondsClamped - Self.lateStartMargin.nanosecondsClamped
        guard late > 0 else { return anchorFrame }
        // In item seconds; a rate or a lateness from outside cannot take it past the bound.
        let itemSeconds = Double(late) / 1e9 * Double(state.rate)
        let ahead = min(itemSeconds * Double(format.sampleRate), Double(Self.maximumItemFrame))
        guard ahead.isFinite, ahead >= 1 else { return anchorFrame }
        return min(anchorFrame + Int64(ahead), Self.maximumItemFrame)
    }

    /// How far before the frame due now a late start's reader begins: more than a clock
    /// estimate's revisions move a followed timeline while the reader opens (hundreds of µs
    /// on a jittery path) and than the time from the seek to the first period (tens of ms),
    /// so the first period always finds its due frame decoded; 100 ms costs nothing to
    /// decode and skip.
    static let lateStartMargin: Duration = .milliseconds(100)

    /// The furthest item frame a position maps to: 2⁴⁰ frames, 265 days at 48 kHz, past the
    /// end of any item (where playback simply ends). Times from outside (a caller's, or a
    /// group's State from the network) can be anything; bounded so, a frame times a million
    /// (the reader's seek in µs) stays far inside 64 bits.
    static let maximumItemFrame: Int64 = 1 << 40

    // MARK: - Internals shared with the extensions

    /// Starts playing at `rate`, optionally from `itemTime`, optionally at `hostTime`.
    func start(rate: Float, at itemTime: CMTime?, hostTime: HostTime?, seekFirst: Bool, immediately: Bool = false) {
        var effects = Effects()
        let refused = state.withLockAnnotated { state -> Bool in
            // At the item's end, as on Apple's players, only a seek makes forward play
            // possible again; a negative rate plays the item backwards from its end.
            guard state.pausedAtEnd, !seekFirst else { return false }
            return rate > 0
        }
        if refused { return }
        state.withLockAnnotated { state in
            state.pausedAtEnd = false
            state.startsImmediately = immediately
            let oldRate = state.rate
            if rate != 0 || seekFirst { interruptPrerollsLocked(&state, &effects) }
            // Where the item stands before the new rate changes the reckoning.
            let standing = state.itemLoaded && oldRate != 0 ? currentTimeLocked(&state) : state.position
            state.rate = rate
            state.positioned = true
            if oldRate != rate {
                announceRateChange(&effects)
            }
            if seekFirst {
                state.position = itemTime ?? currentTimeLocked(&state)
                state.serial += 1
                state.resetRunLocked()
                state.endHandledSerial = nil
                state.scheduledHost = hostTime
                // A host-time start is placed on the host clock's timeline (a file's output
                // has no clock to keep, and copies frames as they are). Its speed changes are
                // then made 20 ms ahead, and made in time only with the pitch stage ready.
                if hostTime != nil, state.masterClock == nil, engine.isRealtime {
                    state.scheduledClock = hostClock
                    if let mode = state.item?.pitchMode { effects.after.append { [weak self] in self?.preparePitchKeepingInBackground(mode) } }
                }
                // On a master clock the start is pinned in the master clock's time now, with
                // the estimate the caller converted by: the clock's later estimates move the
                // host time, not the instant the caller meant.
                state.masterAnchor = state.timelineClock.map { master in
                    MasterAnchor(itemTime: state.position,
                                 masterTime: master.time(atHostTime: hostTime ?? (HostTime(hostClock.time) ?? .now())))
                }
                if state.itemLoaded, let format = state.format {
                    seekReaderLocked(&state, toItemFrame: readerStartFrameLocked(&state, format: format), format: format)
                }
                syncSuccessorsLocked(&state)
                effects.after.append { [weak self] in self?.refreshSuccessors() }
                applyModeLocked(&state, flush: true)
                state.timeJumped = true
                state.jumpedTo = currentTimeLocked(&state)
                // A start at a given time is a jump of the item's time, as a seek is.
                if let item = state.item {
                    effects.notifications.append { NotificationCenter.default.post(name: AVPlayerItem.timeJumpedNotification, object: item) }
                }
            } else if (rate < 0) != state.reversed {
                // The other way: read afresh from where the item stands, in the new direction.
                state.position = standing
                state.serial += 1
                state.resetRunLocked()
                state.endHandledSerial = nil
                state.scheduledHost = nil
                state.masterAnchor = nil
                if state.itemLoaded, let format = state.format {
                    seekReaderLocked(&state, toItemFrame: frames(of: state.position, format: format), format: format)
                }
                syncSuccessorsLocked(&state)
                effects.after.append { [weak self] in self?.refreshSuccessors() }
                applyModeLocked(&state, flush: oldRate != 0)
            } else if oldRate == 0 {
                state.scheduledHost = nil
                state.masterAnchor = nil
                applyModeLocked(&state, flush: false)
            } else if oldRate != rate {
                changeRateWhilePlayingLocked(&state, from: oldRate)
            } else if immediately {
                // Waiting at this rate for the buffer: from now on it does not.
                applyModeLocked(&state, flush: false)
            }
            let reason: WaitingReason = state.item == nil || state.item?.status == .failed ? .noItemToPlay
                : hostTime != nil ? .waitingForScheduledStart : .toMinimizeStalls
            if state.timeControlStatus != .playing || seekFirst {
                setTimeControlLocked(&state, .waitingToPlayAtSpecifiedRate, reason: reason, &effects)
            }
            // A start, a stop or a new rate calls the periodic observers; the same rate again
            // (`play()` while playing) changes nothing, and calls none.
            if oldRate != rate || seekFirst {
                state.timeJumped = true
                state.jumpedTo = currentTimeLocked(&state)
            }
        }
        updateTimebase()
        effects.run(on: eventQueue)
    }

    /// A new rate while playing, without a break. Off a master clock the render thread
    /// takes the new speed from its next period. On one, the timeline changes rate at the
    /// first period the render thread has not yet written (plus `rateChangeMargin` for the
    /// control to reach it), where the item stands then: what is already queued plays out
    /// at the old rate.
    private func changeRateWhilePlayingLocked(_ state: inout PlayerState, from oldRate: Float) {
        defer { applyModeLocked(&state, flush: false) }
        guard let master = state.timelineClock, state.masterAnchor != nil, let format = state.format else { return }
        let now = HostTime(hostClock.time) ?? .now()
        let status = engine.status
        let written = status.serial == state.serial && status.updatedAt > now ? status.updatedAt : now
        let change = written + Self.rateChangeMargin
        // A start still to come keeps its instant and item time, and starts at the new rate.
        if let anchor = state.masterAnchor, let anchorHost = master.hostTime(forClockTime: anchor.masterTime),
           anchorHost - state.latencyCompensation >= change {
            state.masterAnchor = MasterAnchor(itemTime: anchor.itemTime, masterTime: anchor.masterTime)
            return
        }
        // The item frame due then on the timeline as it runs now, at the old rate.
        guard let due = timelineFrameLocked(&state, at: change + state.latencyCompensation, rate: oldRate) else { return }
        state.masterAnchor = MasterAnchor(itemTime: CMTime(value: Int64(due.rounded()), timescale: Int32(format.sampleRate)),
                                          masterTime: master.time(atHostTime: change + state.latencyCompensation),
                                          rateBefore: oldRate)
    }

    /// How far past the last period written a rate change on a master clock is placed: two
    /// 10 ms periods, so the render thread has read the new timeline before it writes the
    /// period that holds the change.
    static let rateChangeMargin: Duration = .milliseconds(20)

    func pauseLocked(_ state: inout PlayerState, _ effects: inout Effects) {
        let oldRate = state.rate
        state.startsImmediately = false
        state.lastAdvance = nil
        if let format = state.format, let frame = renderedFrameLocked(&state, format: format) {
            state.position = CMTime(value: frame, timescale: Int32(format.sampleRate))
        }
        state.rate = 0
        state.scheduledHost = nil
        state.masterAnchor = nil
        if oldRate != 0 {
            announceRateChange(&effects)
            // Re-read from the paused position so that resuming starts exactly there,
            // whatever the device had queued.
            state.serial += 1
            state.resetRunLocked()
            if state.itemLoaded, let format = state.format {
                seekReaderLocked(&state, toItemFrame: frames(of: state.position, format: format), format: format)
            }
            syncSuccessorsLocked(&state)
            effects.after.append { [weak self] in self?.refreshSuccessors() }
            applyModeLocked(&state, flush: true)
            state.timeJumped = true
            state.jumpedTo = currentTimeLocked(&state)
        }
        setTimeControlLocked(&state, .paused, reason: nil, &effects)
        effects.after.append { [weak self] in self?.updateTimebase() }
    }

    /// Tells the render thread what to do for the current state.
    func applyModeLocked(_ state: inout PlayerState, flush: Bool, followsOn: FollowOn? = nil) {
        let serial = state.serial
        let mode: RenderMode
        if state.itemLoaded, state.rate != 0, let format = state.format, let master = state.timelineClock {
            mode = .follow(serial: serial, timeline: masterTimelineLocked(&state, master: master, format: format))
        } else if state.itemLoaded, state.rate != 0, let format = state.format {
            let host = state.scheduledHost
            var frame = state.renderFrame(ofItemFrame: frames(of: state.position, format: format))
            // A play's frame only places its start: within a serial (a rate change, or after
            // an item that followed gaplessly, whose position is its own) it stays as posted.
            if case .play(serial, let posted, host)? = engine.currentControl?.mode { frame = posted }
            mode = .play(serial: serial, frame: frame, hostTime: host)
        } else {
            mode = .idle(serial: serial)
        }
        // The render thread's frames run forward in either direction (see `ReverseAudioReader`).
        let rate = state.rate == 0 ? 1 : Double(abs(state.rate))
        let pitch = state.item?.pitchMode ?? .varispeed
        let (startBuffer, resumeBuffer) = stallBuffersLocked(&state)
        engine.render {
            $0.mode = mode
            $0.flush = flush
            $0.followsOn = followsOn
            $0.rate = rate
            $0.pitch = pitch
            $0.startBufferFrames = startBuffer
            $0.resumeBufferFrames = resumeBuffer
            // Only a group keeps its rooms' starts back until their devices' rates are known.
            $0.waitsForDeviceRate = state.masterClock != nil
        }
    }

    /// How much sound plain play waits for before it sounds, in frames: with
    /// `automaticallyWaitsToMinimizeStalling`, what counts as likely to keep up
    /// (`AVPlayerItem.likelyToKeepUpBuffer`, or the item's preferred forward buffer when
    /// longer) at the start of a network item and after any stall; without it, nothing, so
    /// playback goes on with the first sound that comes back.
    func stallBuffersLocked(_ state: inout PlayerState) -> (start: Int, resume: Int) {
        guard state.waitsToMinimizeStalling, let format = state.format, let item = state.item else { return (0, 0) }
        let preferred = item.preferredForwardBufferDuration
        let seconds = max(AVPlayerItem.likelyToKeepUpBuffer.seconds, preferred.isFinite ? preferred : 0)
        let frames = Int(min(seconds, Self.longestStallBuffer) * Double(format.sampleRate))
        return (item.asset.isNetworkStream && !state.startsImmediately ? frames : 0, frames)
    }

    /// The longest wait for sound a player asks for, in seconds: the ring's own two seconds
    /// (a longer preferred buffer waits as packets, and a full ring starts anyway).
    static let longestStallBuffer = 2.0

    /// Sends the reader to item frame `frame` under the current serial, in the direction of
    /// the current rate: backwards (to the item's start or its reverse end time) when it is
    /// negative.
    func seekReaderLocked(_ state: inout PlayerState, toItemFrame frame: Int64, format: AudioFormat) {
        state.reversed = state.rate < 0
        var reverseEnd: Int64 = 0
        if state.reversed, let end = state.item?.reversePlaybackEndTime, end.isNumeric, end > .zero {
            reverseEnd = min(frames(of: end, format: format), frame)
        }
        if let item = state.item, let live = item.live {
            reopenLiveLocked(&state, item: item, live: live, atItemFrame: frame, format: format)
            return
        }
        engine.seek(toFrame: frame, serial: state.serial, reverse: state.reversed, reverseEnd: reverseEnd)
    }

    /// A live HLS stream cannot be sought within (FFmpeg's demuxer refuses a playlist that
    /// moves): the item is opened again at the segment that holds item frame `frame` (by its
    /// playlist as last read) and read from `frame` under the current serial; its item time,
    /// the stream's own, is the same in the new opening. Done in order on the setup queue;
    /// superseded by a later seek or item.
    private func reopenLiveLocked(_ state: inout PlayerState, item: AVPlayerItem, live: HLSLiveWindow,
                                  atItemFrame frame: Int64, format: AudioFormat) {
        let serial = state.serial
        let seconds = Double(frame) / Double(format.sampleRate)
        // Before the playlist was read: where the demuxer starts a live stream by itself.
        let index = live.current.map { $0.segment(holding: seconds).index } ?? -HLSLiveWindow.defaultStartFromEnd
        let soundStream = state.soundStream
        setupQueue.async { [weak self] in
            guard let self, self.state.withLockAnnotated({ $0.serial == serial && $0.item === item }) else { return }
            do throws(MediaError) {
                let source = try item.openSource(soundStream: soundStream, liveStartIndex: index)
                let current = self.state.withLockAnnotated { state -> Bool in
                    guard state.serial == serial && state.item === item else { return false }
                    (state.soundStream, state.pictureStream) = Self.streams(of: source)
                    return true
                }
                guard current else { return }
                try engine.load(source: source, serial: serial, startFrame: frame, start: false, forwardBuffer: Self.forwardBuffer(of: item),
                                subtitles: item.subtitleCues, metadata: item.timedMetadataLog, continuing: true, onEvent: readerEvents(of: item))
                engine.startReader()
            } catch {
                eventQueue.async { item.failed(error) }
            }
        }
    }

    /// Where the times of the item read now jumped and were closed up (a live stream spliced
    /// from several), as a group's leader announces them to the rooms that open the item
    /// after such a jump (`AVPlayerItem.countsAcrossSplices(_:)`); empty when they never jumped,
    /// and while the current item is still being opened (the engine then reads the item
    /// before it, whose splices are not this one's).
    package var currentSplices: [TimelineSplice] {
        state.withLockAnnotated { $0.itemLoaded } ? engine.timelineSplices : []
    }

    /// Makes the pitch stage for `mode` on a utility thread, so that nothing in order with
    /// item changes (the setup queue) waits for it; the render thread takes it once made.
    func preparePitchKeepingInBackground(_ mode: PitchMode) {
        guard mode != .varispeed else { return }
        DispatchQueue.global(qos: .utility).async { [weak self] in self?.engine.preparePitchKeeping(mode) }
    }

    /// The current item's pitch algorithm changed: the render thread keeps (or stops keeping)
    /// the pitch from its next period.
    func pitchAlgorithmChanged(of item: AVPlayerItem) {
        let mode = item.pitchMode
        if state.withLockAnnotated({ $0.masterClock != nil || $0.scheduledClock != nil }) { preparePitchKeepingInBackground(mode) }
        state.withLockAnnotated { state in
            guard state.item === item else { return }
            let pitch = item.pitchMode
            engine.render { $0.pitch = pitch }
        }
    }

    /// Where the item's frames fall on the host clock when playback follows `master`:
    /// the start anchored in the master clock's time, mapped to host time through the
    /// clock's current estimate, at `rate` (the player's own unless given).
    func masterTimelineLocked(_ state: inout PlayerState, master: CMClock, format: AudioFormat, rate: Float? = nil) -> RenderTimeline {
        let anchor: MasterAnchor
        if let existing = state.masterAnchor {
            anchor = existing
        } else {
            let host = state.scheduledHost ?? (HostTime(hostClock.time) ?? .now())
            anchor = MasterAnchor(itemTime: state.position, masterTime: master.time(atHostTime: host))
            state.masterAnchor = anchor
        }
        let host = master.hostTime(forClockTime: anchor.masterTime) ?? (HostTime(hostClock.time) ?? .now())
        // Item frames pass at the playback rate per second of the master clock.
        let clockRate = master.rateRelativeToHost
        // In the render thread's frames: the item's own, moved on by a gapless run's base.
        return RenderTimeline(frame: state.renderFrame(ofItemFrame: signedFrames(of: anchor.itemTime, format: format)),
                              host: host - state.latencyCompensation,
                              rate: clockRate * Double(abs(rate ?? state.rate)),
                              rateBefore: anchor.rateBefore.map { clockRate * Double(abs($0)) },
                              speed: Double(abs(rate ?? state.rate)),
                              speedBefore: anchor.rateBefore.map { Double(abs($0)) })
    }

    /// On each tick while following a master clock: moves the render thread onto the
    /// clock's latest estimate.
    func refreshMasterTimelineLocked(_ state: inout PlayerState) {
        guard state.itemLoaded, state.rate != 0, let master = state.timelineClock, let format = state.format,
              state.masterAnchor != nil else { return }
        let timeline = masterTimelineLocked(&state, master: master, format: format)
        let serial = state.serial
        let current = engine.currentControl?.mode
        if case .follow(serial, let posted)? = current,
           abs((posted.host - timeline.host).nanosecondsClamped) < Self.timelineRepostThresholdNanoseconds,
           abs(posted.rate - timeline.rate) < Self.timelineRepostRateThreshold {
            return
        }
        engine.render {
            $0.mode = .follow(serial: serial, timeline: timeline)
            $0.flush = false
        }
    }

    /// A master clock's new estimate is passed on when it moves the timeline by more than
    /// this (1 µs, a twentieth of a frame) ...
    static let timelineRepostThresholdNanoseconds: Int64 = 1_000
    /// ... or changes its rate by more than this (0.01 ppm).
    static let timelineRepostRateThreshold = 1e-8

    func applyVolume() {
        let (volume, muted, item) = state.withLockAnnotated { state in (state.volume, state.isMuted, state.item) }
        let audioDisabled = item?.tracks.contains { $0.assetTrack?.mediaType == .audio && !$0.isEnabled } ?? false
        let gain: Float = muted || audioDisabled ? 0 : volume
        engine.render { $0.volume = gain; $0.flush = false }
    }

    func setTimeControlLocked(_ state: inout PlayerState, _ status: TimeControlStatus, reason: WaitingReason?, _ effects: inout Effects) {
        let old = state.timeControlStatus
        let oldReason = state.waitingReason
        state.timeControlStatus = status
        state.waitingReason = status == .waitingToPlayAtSpecifiedRate ? reason : nil
        if old != status {
            effects.changes.append { [weak self] in self?.observationRegistry.notify(\AVPlayer.timeControlStatus, old: old, new: status) }
            // The item's timebase moves only while the sound does: it starts and stops with it.
            effects.after.append { [weak self] in self?.updateTimebase() }
        }
        if oldReason != state.waitingReason {
            let newReason = state.waitingReason
            effects.changes.append { [weak self] in self?.observationRegistry.notify(\AVPlayer.reasonForWaitingToPlay, old: oldReason as Any, new: newReason as Any) }
        }
    }

    /// Keeps the item's timebase on the player's timeline.
    func updateTimebase() {
        let (item, time, playing) = state.withLockAnnotated { state in (state.item, currentTimeLocked(&state), state.rate != 0 && state.timeControlStatus == .playing) }
        guard let timebase = item?.timebase else { return }
        let rate = state.withLockAnnotated { $0.rate }
        // Both times are valid here, the only way this can fail.
        try? timebase.setRateAndAnchorTime(rate: playing ? Float64(rate) : 0, anchorTime: time, referenceTime: hostClock.time)
    }

    /// Stops playback and releases the output device (a Chorus addition: a file output is
    /// finished and closed). The player plays nothing afterwards.
    public func close() {
        replaceCurrentItem(with: nil)
        monitor?.cancel()
        // An item being set up finishes first (it finds itself replaced and opens nothing),
        // so nothing is opened after the output is closed.
        setupQueue.sync {}
        engine.shutdown()
    }

    /// Called on the event queue when an item ended and `actionAtItemEnd` is `.advance`.
    /// A plain player has nothing to advance to and pauses; a queue player moves on.
    open func advanceAfterItemEnd() {
        pause()
    }

    /// The items waiting after the current one, in order (a queue player's), that are to be
    /// heard right after it when `actionAtItemEnd` is `.advance`. Called with the player's
    /// lock held: it may take only locks of its own that are never held while calling back
    /// into the player.
    open func itemsQueuedAfterCurrent() -> [AVPlayerItem] { [] }

    /// The current item's sound has ended and `item`, the first of `itemsQueuedAfterCurrent`,
    /// is heard from now on: take it out of the waiting items (and `current` out of the queue). False when it is no longer
    /// the first waiting (the queue changed meanwhile): the player then stays on the current
    /// item, and re-reads it from where it stands. Called with the player's lock held, as
    /// `itemsQueuedAfterCurrent` is.
    open func takeQueuedItem(_ item: AVPlayerItem, after current: AVPlayerItem) -> Bool { false }

    // MARK: - The monitor

    private func startMonitor() {
        monitor = RepeatingTimer(label: "AVPlayer.monitor", interval: Self.monitorInterval, queue: eventQueue) { [weak self] in
            self?.tick()
        }
    }

    // MARK: - Identity, as NSObject's (a subclass may override these; `==` and hashing follow)

    /// Whether `object` is this one: identity, as NSObject's.
    open func isEqual(_ object: Any?) -> Bool { isSameObject(object, self) }
    /// A hash consistent with `isEqual(_:)`.
    open var hash: Int { ObjectIdentifier(self).hashValue }
    /// `<ClassName: address>`, as NSObject's.
    open var description: String { objectDescription(self) }
}

/// Everything the player knows, guarded by its lock.
struct PlayerState {
    var status = AVPlayer.Status.unknown
    var error: MediaError?
    var item: AVPlayerItem?
    var itemLoaded = false
    var format: AudioFormat?
    var rate: Float = 0
    var defaultRate: Float = 1
    var timeControlStatus = AVPlayer.TimeControlStatus.paused
    /// When the monitor last ticked: the seconds an item plays between ticks go to its
    /// access log.
    var lastTickHost: HostTime?
    var waitingReason: AVPlayer.WaitingReason?
    var actionAtItemEnd = AVPlayer.ActionAtItemEnd.pause
    var waitsToMinimizeStalling = true
    /// The play under way began with `playImmediately(atRate:)`: its start waits for no
    /// buffer (until the next start or pause).
    var startsImmediately = false
    var volume: Float = 1
    var isMuted = false
    var masterClock: CMClock?
    /// The newest serial whose reader has decoded to the item's end (or failed): nothing more
    /// is coming into the ring for it.
    var decodedToEndSerial = -1
    /// Paused by the item's end: playing again has no effect until a seek (or another item).
    var pausedAtEnd = false
    var preventsDisplaySleep = true
    /// The player's host clock while the current item has no sound (set once it is loaded).
    var silentItemClock: CMClock?
    /// The clock the item's timeline is anchored on: the master clock the player was given;
    /// or, for an item without sound, the timebase's own master clock (the host clock), so
    /// that its pictures, its current time and its end all run on that clock alone rather
    /// than on a sound device's; or the host clock for a scheduled start. Nil: the output's
    /// clock times the item.
    var timelineClock: CMClock? { masterClock ?? silentItemClock ?? scheduledClock }
    /// Where a start on the master clock is anchored, in the master clock's time.
    var masterAnchor: MasterAnchor?
    /// The item the queue advances to at the last end on a timeline, and the timeline
    /// clock's time its start is anchored at (where the item before ended on it): taken by
    /// the replacement that advances the queue, dropped by a pause or any other replacement.
    var lastAdvance: (item: AVPlayerItem?, masterTime: CMTime)?
    var latencyCompensation: Duration = .zero
    /// The seek serial: bumped by every seek, pause and item change.
    var serial = 0
    /// The furthest render frame reported heard in this serial. What the device has played
    /// only grows; a reading below it comes from an estimate that ran ahead (extrapolated
    /// through an underrun on a starved machine, then re-anchored), and reporting it would
    /// move the time backwards and cross boundary times twice.
    var heardFloor: (serial: Int, frame: Int64)?
    /// Where playback stands when the render thread is not playing this serial.
    var position = CMTime.zero
    /// The run this serial's sound follows on from (another sound or variant of the item,
    /// read anew while it plays: `reopenSound`), while the device still plays that run's
    /// frames out; the time and the pictures' timeline are read from it until this serial's
    /// own frames are heard. Nil otherwise.
    var followingOn: FollowingOn?
    /// A start scheduled with `setRate(_:time:atHostTime:)`. A seek, a pause or a plain
    /// play ends the schedule, and with it the host clock's timeline.
    var scheduledHost: HostTime? {
        didSet { if scheduledHost == nil { scheduledClock = nil } }
    }
    /// The player's host clock, while a start scheduled at a host time without a master
    /// clock is played: its timeline is then anchored on the host clock, as a master clock's
    /// is, so that later rate changes carry on from it without a break and every speed keeps
    /// the item's pitch (a plain scheduled start could only restart, varispeed).
    var scheduledClock: CMClock?
    var pendingSeek: PendingSeek?
    var pendingPrerolls: [@Sendable (Bool) -> Void] = []
    /// The newest serial for which the reader has data.
    var readySerial = -1
    var endHandledSerial: Int?
    var lastStallCount = 0
    var timeJumped = false
    /// The current item changed since the monitor's last tick (an advance, a replacement):
    /// the periodic observers count afresh on its timeline from the next tick, which reads
    /// its time (`restartPeriodicObservers(_:)`).
    var itemChanged = false
    /// Where the item's time stood just after the last jump (a seek's landing, a start, a
    /// pause), for the observers the next tick fires: told that, not the tick's time a few
    /// ms of play later.
    var jumpedTo: CMTime?
    var observers: [TimeObserver] = []
    var lastObservedTime = CMTime.invalid
    var allowsExternalPlayback = true
    var usesExternalPlaybackWhileExternalScreenIsActive = false
    var externalPlaybackVideoGravity = AVLayerVideoGravity.resizeAspect
    var isClosedCaptionDisplayEnabled = false
    /// Items opened to be heard right after the current one without a gap, in order, as the
    /// engine holds them.
    var successors: [QueuedSuccessor] = []
    /// Names the successors for the engine.
    var successorTokenCount = 0
    /// Where, in the render thread's frames, the current item's sound ends and the first
    /// successor's begins: set once the current reader has handed the ring on.
    var pendingBoundary: Int64?
    /// Where the current item's frame 0 falls in the render thread's frames: 0, unless the
    /// item followed the one before it without a gap, under the same serial.
    var frameBase: Int64 = 0
    /// Whether the current serial reads the item backwards: the render thread's frame −(f + 1)
    /// is then item frame f (`ReverseAudioReader`).
    var reversed = false
    /// A successor's reader failure, kept for when it has become the current item.
    var promotedFailure: MediaError?
    /// Whether the current item has been played, paused or sought since it was given: until
    /// then a group member's item is only open ahead of its start, and shows no picture.
    var positioned = false
    /// The sound stream the current item's reader plays (FFmpeg's index), once loaded.
    var soundStream: Int?
    /// The picture stream the current item's source was opened for (FFmpeg's index; nil
    /// without pictures), once loaded: another variant's means opening the item again.
    var pictureStream: Int?
    /// The player's standing choices per characteristic (`setMediaSelectionCriteria`).
    var selectionCriteria: [AVMediaCharacteristic: AVPlayerMediaSelectionCriteria] = [:]
    var appliesSelectionCriteria = true
    /// The last gapless join: the item that followed, and where the item before it ended,
    /// in that item's time.
    var lastJoin: (item: AVPlayerItem, previousEnd: CMTime)?
    /// The last item that could not be opened to follow gaplessly.
    weak var refusedSuccessor: AVPlayerItem?
    /// The last of them that could not be opened at all.
    weak var unopenedSuccessor: AVPlayerItem?
}

/// Item time `itemTime` is heard at master-clock time `masterTime`. With `rateBefore`, the
/// anchor is a rate change: until then the item played at that rate.
struct MasterAnchor {
    let itemTime: CMTime
    let masterTime: CMTime
    var rateBefore: Float? = nil
}

/// A serial whose sound follows on from the run before it (`PlayerState.followingOn`).
struct FollowingOn {
    /// The serial that follows on.
    let serial: Int
    /// The run before: its latest status seen while the render thread still wrote it.
    var earlier: RenderStatus
    /// That run's frame for item frame 0 (its gapless base).
    let frameShift: Int64
}

struct PendingSeek {
    let serial: Int
    let completion: @Sendable (Bool) -> Void
}

extension AVPlayer {
    /// Posted (object: the player) after every change of its `rate`, with the reason under
    /// `rateDidChangeReasonKey`, on the queue key-value observers of `rate` are told on.
    public static let rateDidChangeNotification = Notification.Name("AVPlayerRateDidChangeNotification")
    /// The key of `rateDidChangeNotification`'s user info whose value, a
    /// `RateDidChangeReason`, says why the rate changed.
    public static let rateDidChangeReasonKey = "AVPlayerRateDidChangeReasonKey"

    /// Why a player's rate changed (`rateDidChangeNotification`).
    public struct RateDidChangeReason: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The application changed it: `rate`, `play`, `pause`, `setRate(_:time:atHostTime:)`,
        /// or the player pausing itself at an item's end or failure, as the application's
        /// settings (`actionAtItemEnd`) asked.
        public static let setRateCalled = RateDidChangeReason(rawValue: "AVPlayerRateDidChangeReasonSetRateCalled")
        /// A rate was asked that the item cannot play.
        public static let setRateFailed = RateDidChangeReason(rawValue: "AVPlayerRateDidChangeReasonSetRateFailed")
        /// Another application's audio took the device. (Never on Linux: nothing here takes
        /// a device from a player.)
        public static let audioSessionInterrupted = RateDidChangeReason(rawValue: "AVPlayerRateDidChangeReasonAudioSessionInterrupted")
        /// The application went to the background. (Never on Linux: there is no background.)
        public static let appBackgrounded = RateDidChangeReason(rawValue: "AVPlayerRateDidChangeReasonAppBackgrounded")
    }

    /// Tells `rate`'s observers, then `rateDidChangeNotification`'s, of a change made under
    /// the state's lock, once it is released.
    func announceRateChange(_ effects: inout Effects,
                            reason: RateDidChangeReason = .setRateCalled) {
        let registry = observationRegistry
        registry.willSet(\AVPlayer.rate)
        effects.here.append { registry.didSet(\AVPlayer.rate) }
        effects.notifications.append { [weak self] in
            guard let self else { return }
            NotificationCenter.default.post(name: AVPlayer.rateDidChangeNotification, object: self,
                                            userInfo: [AVPlayer.rateDidChangeReasonKey: reason])
        }
    }
}

/// Work gathered under the lock and run after it is released: `here` on the thread that
/// made the change, the rest in order on the event queue.
struct Effects {
    /// The observers of a change the caller made (`rate`, `currentItem`), told before the
    /// call returns, on its thread, as Apple's key-value observing tells those of a set.
    var here: [@Sendable () -> Void] = []
    var changes: [@Sendable () -> Void] = []
    var completions: [@Sendable () -> Void] = []
    var notifications: [@Sendable () -> Void] = []
    var after: [@Sendable () -> Void] = []

    var isEmpty: Bool { here.isEmpty && changes.isEmpty && completions.isEmpty && notifications.isEmpty && after.isEmpty }

    func run(on queue: DispatchQueue) {
        CallerObservers.run(here)
        let all = changes + completions + notifications + after
        guard !all.isEmpty else { return }
        queue.async { for work in all { work() } }
    }
}

/// The observers of a caller's own change (`Effects.here`), held back while the caller's
/// thread holds a lock of a subclass's around its calls into the player (a queue player's
/// list, `holding(_:)`), and run once the outermost such hold ends: no handler runs under a
/// lock, which a handler waiting on another thread that wants that lock would deadlock.
enum CallerObservers {
    private final class Held {
        var depth = 0
        var work: [@Sendable () -> Void] = []
    }

    private static let key = "chorus.callerObservers"

    private static var held: Held {
        let dictionary = Thread.current.threadDictionary
        if let held = dictionary[key] as? Held { return held }
        let held = Held()
        dictionary[key] = held
        return held
    }

    /// Runs `body`, the observers of changes it makes on this thread waiting for its end.
    static func holding<T>(_ body: () throws -> T) rethrows -> T {
        let held = held
        held.depth += 1
        defer {
            held.depth -= 1
            if held.depth == 0 {
                let work = held.work
                held.work = []
                for observer in work { observer() }
            }
        }
        return try body()
    }

    /// Runs `work` now, or once the hold this thread is in ends.
    static func run(_ work: [@Sendable () -> Void]) {
        guard !work.isEmpty else { return }
        let held = held
        if held.depth > 0 {
            held.work += work
        } else {
            for observer in work { observer() }
        }
    }
}

/// What a package-made player is built with in place of the defaults (a simulated host
/// clock, the mapping of device times onto it, a capture): handed by
/// `AVPlayer.init(playerItem:output:hostClock:hostMapping:capture:)` to the designated
/// initializer it calls, on the same thread, so that no designated initializer takes test
/// seams and subclasses still inherit every initializer.
struct PlayerSeams: Sendable {
    var hostClock: CMClock = .hostTimeClock
    var hostMapping: @Sendable (HostTime) -> HostTime = { $0 }
    var capture: RenderCapture?

    /// Seams handed over and not yet taken, by the thread that handed them.
    private static let pending = Mutex<[UInt: PlayerSeams]>([:])

    private static var thread: UInt { UInt(pthread_self()) }

    /// Hands `seams` to the next player made on this thread.
    static func hand(_ seams: PlayerSeams) {
        pending.withLockAnnotated { $0[thread] = seams }
    }

    /// The seams handed to the player being made on this thread, or the defaults.
    static func take() -> PlayerSeams {
        pending.withLockAnnotated { $0.removeValue(forKey: thread) } ?? PlayerSeams()
    }
}

extension OutputSpec {
    /// Where a player made without an output plays: ALSA's default device.
    static var defaultOutput: OutputSpec { .alsa(device: "default") }
}
