import Foundation
import MediaPipeline
import MutexAnnotations
import Synchronization

/// How a layer fits its video into its bounds, with Apple's names and raw values.
public struct AVLayerVideoGravity: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Stretch the picture to fill the bounds exactly.
    public static let resize = AVLayerVideoGravity(rawValue: "AVLayerVideoGravityResize")
    /// Fit the whole picture inside the bounds, keeping its shape (bars where it falls short).
    public static let resizeAspect = AVLayerVideoGravity(rawValue: "AVLayerVideoGravityResizeAspect")
    /// Fill the bounds, keeping the picture's shape (what overflows is cut off).
    public static let resizeAspectFill = AVLayerVideoGravity(rawValue: "AVLayerVideoGravityResizeAspectFill")
}

/// Shows a player's pictures, as Apple's `AVPlayerLayer` does.
///
/// A layer has no window of its own: a view hosts it (`AVPlayerView`, a window on X11,
/// Wayland or a console), sets its `bounds`, and once per display refresh asks it which
/// picture to show. Setting `player` makes that player decode its pictures for as long as
/// the layer shows them.
///
/// Each picture is shown at the first refresh at or after the moment its sound is heard
/// (the player's timeline, from the same report of the audio device that times the sound),
/// so picture and sound agree to within a refresh; pictures that came due between two
/// refreshes are dropped and counted.
// @unchecked only because the class is open, as Apple's is: its state is in `state`, a
// Mutex; the refresh path's own copy is in `refresh`, used by the hosting view's one
// display thread.
open class AVPlayerLayer: AVKeyValueObservable, @unchecked Sendable {
    /// Where the layer's key-value observations are registered.
    public let observationRegistry = ObservationRegistry()

    struct State {
        var player: AVPlayer?
        var gravity = AVLayerVideoGravity.resizeAspect
        var bounds = CGRect.zero
        /// Where the layer lies in its host's coordinates (`frame`'s origin).
        var origin = CGPoint.zero
        var isReadyForDisplay = false
    }
    private let state = Mutex(State())
    /// What the display thread needs each refresh, published by whoever changes it and read
    /// with a try-lock there.
    private let target = Published<AVPlayer?>(nil)
    private let refresh = RefreshState()
    /// Frames shown and when, for `isReadyForDisplay` and the figures.
    private let lastPresentationError = Atomic<Int64>(0)

    /// A layer that shows nothing until it is given a player.
    public init() {}

    /// A layer that shows `player`'s pictures.
    public convenience init(player: AVPlayer?) {
        self.init()
        self.player = player
    }

    deinit {
        watchPictures(of: nil)
        state.withLockAnnotated { $0.player }?.removeVideoConsumer()
    }

    /// The observer of the player's first pictures (`AVPlayer.pictureQueuedNotification`).
    private let pictureWatch = Mutex<NotificationToken?>(nil)
    /// The observation of the player's current item: another item's first picture is not
    /// there yet.
    private let itemWatch = Mutex<NSKeyValueObservation?>(nil)

    /// A notification observer's token (an `NSObjectProtocol`, which is not `Sendable`; it is
    /// only handed to `NotificationCenter` to remove the observer).
    private struct NotificationToken: @unchecked Sendable {
        let token: any NSObjectProtocol
    }

    /// Becomes ready for display as soon as `player` has a first picture decoded, as Apple's
    /// layer does, whether or not a view shows it yet; and at once if it has one already
    /// (another layer made it decode).
    private func watchPictures(of player: AVPlayer?) {
        let token = player.map { player in
            NotificationToken(token: NotificationCenter.default.addObserver(forName: AVPlayer.pictureQueuedNotification, object: player,
                                                                             queue: nil) { [weak self] _ in self?.markReady() })
        }
        let old = pictureWatch.withLockAnnotated { watch in defer { watch = token }; return watch }
        if let old { NotificationCenter.default.removeObserver(old.token) }
        let observation = player?.observe(\.currentItem) { [weak self] player, _ in self?.currentItemChanged(on: player) }
        itemWatch.withLockAnnotated { watch in defer { watch = observation }; return watch }?.invalidate()
        if let queue = player?.engine.videoQueue, player?.engine.hasVideo == true,
           queue.displayed != nil || !queue.queuedItemNanoseconds().isEmpty {
            markReady()
        }
    }

    /// The player whose pictures the layer shows.
    open var player: AVPlayer? {
        get { state.withLockAnnotated { $0.player } }
        set {
            observationRegistry.set(\AVPlayerLayer.player) {
                // The same player again changes nothing: its pictures stay ready to show.
                let old: AVPlayer?? = state.withLockAnnotated { state in
                    guard state.player !== newValue else { return nil }
                    defer { state.player = newValue; state.isReadyForDisplay = false }
                    return state.player
                }
                guard let old else { return }
                readyFlag.store(false, ordering: .relaxed)
                watchPictures(of: newValue)
                old?.removeVideoConsumer()
                newValue?.addVideoConsumer()
                target.publish(newValue)
            }
        }
    }

    /// How the picture fits the layer's bounds (`.resizeAspect` by default, as on Apple's).
    open var videoGravity: AVLayerVideoGravity {
        get { state.withLockAnnotated { $0.gravity } }
        set { observationRegistry.set(\AVPlayerLayer.videoGravity) { state.withLockAnnotated { $0.gravity = newValue } } }
    }

    /// The layer's size, set by the view that hosts it.
    open var bounds: CGRect {
        get { state.withLockAnnotated { $0.bounds } }
        set { state.withLockAnnotated { $0.bounds = newValue } }
    }

    /// The layer's place and size in its host's coordinates, as a core animation layer's
    /// frame: setting it (`playerLayer.frame = view.bounds`) sizes `bounds` to match, and
    /// the picture fits that size under `videoGravity`.
    open var frame: CGRect {
        get { state.withLockAnnotated { CGRect(origin: $0.origin, size: $0.bounds.size) } }
        set {
            state.withLockAnnotated { state in
                state.origin = newValue.origin
                state.bounds.size = newValue.size
            }
        }
    }

    /// Whether a first picture of the current item is decoded and ready to show: observable,
    /// for an app to reveal its video area only once there is something to put in it.
    open var isReadyForDisplay: Bool { state.withLockAnnotated { $0.isReadyForDisplay } }

    /// Where the picture lies in the layer's bounds under the current gravity (zero until
    /// the picture's size is known).
    open var videoRect: CGRect {
        let (gravity, bounds, player) = state.withLockAnnotated { ($0.gravity, $0.bounds, $0.player) }
        return Self.videoRect(of: player?.currentItem?.presentationSize ?? .zero, in: bounds, gravity: gravity)
    }

    /// The rectangle a picture of `size` takes in `bounds` under `gravity`.
    public static func videoRect(of size: CGSize, in bounds: CGRect, gravity: AVLayerVideoGravity) -> CGRect {
        guard size.width > 0, size.height > 0, bounds.width > 0, bounds.height > 0 else { return .zero }
        if gravity == .resize { return bounds }
        let widthScale = bounds.width / size.width, heightScale = bounds.height / size.height
        let scale = gravity == .resizeAspectFill ? max(widthScale, heightScale) : min(widthScale, heightScale)
        let width = size.width * scale, height = size.height * scale
        return CGRect(x: bounds.minX + (bounds.width - width) / 2, y: bounds.minY + (bounds.height - height) / 2,
                      width: width, height: height)
    }

    // MARK: - The hosting view's refresh (Chorus additions)

    /// The share of a refresh period by which a picture may be shown before its time: half,
    /// so each picture goes to the refresh nearest its time. Shown at the first refresh at
    /// or after its time instead, a picture would be late by up to a whole refresh (16.7 ms
    /// at 60 Hz, on average half of it), which breaks the broadcast tolerance of 15 ms for
    /// sound ahead of the picture; centred, it is within half a refresh either way.
    public static let refreshLeadFraction = 0.5

    /// The picture to show at the refresh that becomes visible at host time `refreshAt`
    /// (CLOCK_MONOTONIC), of a display refreshing every `refreshInterval` (zero: a picture
    /// only once its time has come), or nil to keep the one on display. Called by the
    /// hosting view's display thread only: real-time safe (try-locks, no allocation).
    public func picture(forRefreshAt refreshAt: HostTime, refreshInterval: Duration = .zero) -> VideoPlanes? {
        let player = target.tryRead() ?? refresh.player
        refresh.player = player
        guard let player, let queue = player.engine.videoQueue, player.engine.decodesVideo else { return nil }
        let engine = player.engine
        let timeline = engine.videoTimeline.tryRead() ?? refresh.timeline
        refresh.timeline = timeline
        guard let timeline, timeline.showsPictures else { return nil }
        if player.layersSuppressed.load(ordering: .relaxed) {
            refresh.wasSuppressed = true
            return nil
        }
        if refresh.wasSuppressed {
            // Shown again: the picture on display now, which the host no longer shows, when
            // it is still the timeline's (not one from before a seek made meanwhile); then
            // the pictures as they come due. Not a new presentation: its lateness and capture
            // were counted when it was first shown.
            guard let shown = queue.displayedIfAvailable else { return nil }
            refresh.wasSuppressed = false
            if let shown, shown.info.serial == timeline.serial, timeline.items.timelineNanoseconds(of: shown.info) != nil {
                return shown
            }
        }
        let lead = Duration.nanoseconds(Int64(Double(refreshInterval.nanosecondsClamped) * Self.refreshLeadFraction))
        let due = timeline.itemNanoseconds(at: engine.playerHostTime(ofReal: refreshAt) + lead)
        switch queue.next(dueNanoseconds: due, showFirstEarly: timeline.rate == 0, timelineSerial: timeline.serial, items: timeline.items) {
        case .keep: return nil
        case .show(let planes):
            refresh.pending = (planes.info, timeline)
            return planes
        }
    }

    /// When the next picture not yet shown becomes due (CLOCK_MONOTONIC), or nil when none
    /// is queued or the timeline stands still. A display that can show a picture at any
    /// instant presents it then. Called by the hosting view's display thread only: real-time
    /// safe (try-locks, no allocation).
    public func nextPictureDue() -> HostTime? {
        let player = target.tryRead() ?? refresh.player
        refresh.player = player
        guard let engine = player?.engine, let queue = engine.videoQueue, engine.decodesVideo else { return nil }
        let timeline = engine.videoTimeline.tryRead() ?? refresh.timeline
        refresh.timeline = timeline
        guard let timeline, timeline.showsPictures, timeline.rate != 0, let player, !player.layersSuppressed.load(ordering: .relaxed),
              let item = queue.nextQueuedItemNanoseconds(timelineSerial: timeline.serial, items: timeline.items),
              let due = timeline.hostTime(atItemNanoseconds: item) else { return nil }
        // The timeline is in the player's host time; the display's clock is the real one (they
        // differ only where a node simulates another machine's clock). The mapping is nearly a
        // shift, so a few steps of correcting a guess by how far it maps off invert it to the
        // nanosecond; one step alone left a simulated node's guesses up to a millisecond early,
        // and a picture asked for before its time waited for the next refresh.
        var real = due
        for _ in 0..<Self.inversionSteps { real = real - (engine.playerHostTime(ofReal: real) - due) }
        return real + Self.dueRoundingAllowance
    }

    /// Whether the last refresh found the current item's pictures left to a video output
    /// (`AVPlayerItemOutput.suppressesPlayerRendering`), so that the host shows none: black,
    /// where it would keep the last picture for a nil from `picture(forRefreshAt:)`
    /// otherwise (a Chorus addition). Called by the hosting view's display thread only,
    /// after `picture(forRefreshAt:)`.
    public var picturesSuppressed: Bool { refresh.wasSuppressed }

    /// Added to a picture's due time when a display wakes for it: the item-to-host mapping and
    /// its inverse each round to a nanosecond, and a wake-up a nanosecond early would find the
    /// picture not yet due and leave it to the next refresh.
    static let dueRoundingAllowance: Duration = .microseconds(1)
    /// Steps of the inversion of the player's host-time mapping: each shrinks the error by the
    /// mapping's rate error (hundreds of ppm at most), so three leave well under a nanosecond.
    static let inversionSteps = 3

    /// Tells the layer the picture numbered `number` reached the display at `presentedAt`
    /// (CLOCK_MONOTONIC, read right after the display took it). The first one makes the layer
    /// ready for display.
    public func didPresent(number: Int64, at presentedAt: HostTime) {
        if let (info, timeline) = refresh.pending, info.number == number {
            refresh.pending = nil
            if let engine = refresh.player?.engine {
                if let onTimeline = timeline.items.timelineNanoseconds(of: info), let due = timeline.hostTime(atItemNanoseconds: onTimeline) {
                    let error = (engine.playerHostTime(ofReal: presentedAt) - due).nanosecondsClamped
                    lastPresentationError.store(error, ordering: .relaxed)
                }
                engine.capture?.recordPicture(hostNanoseconds: presentedAt.nanoseconds, itemNanoseconds: info.itemNanoseconds,
                                              number: info.number, serial: info.serial)
            }
        }
        // Once per player: the one allocation of this path (queueing the change), never in
        // the steady state.
        if !isReadyForDisplayFast { markReady() }
    }

    /// Pictures skipped because they came due between two refreshes (a Chorus addition).
    public var droppedFrameCount: Int { player?.engine.videoQueue?.counts.dropped ?? 0 }

    /// How late the last picture reached the display against when it was due, in
    /// nanoseconds (a Chorus addition: negative when early).
    public var lastPresentationErrorNanoseconds: Int64 { lastPresentationError.load(ordering: .relaxed) }

    private let readyFlag = Atomic<Bool>(false)
    private var isReadyForDisplayFast: Bool { readyFlag.load(ordering: .relaxed) }

    /// The player's current item changed: as Apple's layer, it is ready for display once the
    /// new item's first picture is, so not ready until then. An item with pictures the queue
    /// joined on gaplessly had its first picture decoded before it became current: it stays
    /// ready.
    private func currentItemChanged(on player: AVPlayer) {
        let joined = player.state.withLockAnnotated { state in state.item != nil && state.lastJoin?.item === state.item }
        if joined, player.currentItem?.asset.loadedMediaInfo?.preferredVideoTrack != nil { return }
        guard readyFlag.exchange(false, ordering: .relaxed) else { return }
        // On the queue `markReady` tells its change on, after any it queued before.
        let queue = player.eventQueue
        queue.async { [self] in
            guard !readyFlag.load(ordering: .relaxed) else { return }
            let changed = state.withLockAnnotated { state -> Bool in
                defer { state.isReadyForDisplay = false }
                return state.isReadyForDisplay
            }
            if changed { observationRegistry.notify(\AVPlayerLayer.isReadyForDisplay, old: true, new: false) }
        }
    }

    /// Off the display thread: flips `isReadyForDisplay` and tells its observers.
    private func markReady() {
        guard !readyFlag.exchange(true, ordering: .relaxed) else { return }
        let queue = player?.eventQueue ?? DispatchQueue.global()
        queue.async { [self] in
            // Made not ready again since (another item): nothing to tell.
            guard readyFlag.load(ordering: .relaxed) else { return }
            let changed = state.withLockAnnotated { state -> Bool in
                defer { state.isReadyForDisplay = true }
                return !state.isReadyForDisplay
            }
            if changed { observationRegistry.notify(\AVPlayerLayer.isReadyForDisplay, old: false, new: true) }
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

/// The display thread's own copies of what the layer last read, so a busy lock costs
/// nothing but a refresh on the previous values.
// @unchecked: used only by the hosting view's one display thread (the layer's contract).
private final class RefreshState: @unchecked Sendable {
    var player: AVPlayer?
    var timeline: VideoTimeline?
    var pending: (VideoFrameInfo, VideoTimeline)?
    /// Whether the last refresh left the pictures to a video output: the next one shown
    /// again starts with the picture on display.
    var wasSuppressed = false
}
