import Foundation
import MutexAnnotations
import Synchronization
import MediaPipeline

/// A timed piece of media: a file or a network stream, opened with FFmpeg.
///
/// Properties load asynchronously, once, on a background thread; every accessor is
/// thread-safe. `AVURLAsset` is the concrete class.
// @unchecked only because the class is open to subclassing, as Apple's is (a non-final class
// cannot be checked): its own state is in `loading`, a Mutex, and every other field is a let.
open class AVAsset: AVKeyValueObservable, @unchecked Sendable {
    enum LoadState {
        case notLoaded
        case loading
        case loaded(MediaInfo)
        case failed(MediaError)
        case cancelled
    }

    /// The address the asset reads, as given.
    let location: String
    /// Observers of the asset's properties (`duration`, `tracks`, `isPlayable`, ...): they
    /// hear of the values once the asset has loaded.
    public let observationRegistry = ObservationRegistry()
    /// Where loading stands, and who waits for it to finish.
    private let loading = Mutex<(state: LoadState, waiters: [Waiter])>((.notLoaded, []))
    /// The tracks made so far, by stream index: one object per track for the asset's life,
    /// as Apple's are, so that tracks loaded twice compare equal (tracks compare by
    /// identity). A track is made again only when its description changes.
    private let madeTracks = Mutex<[Int: AVAssetTrack]>([:])

    /// Called once with the outcome of loading, on the loading thread.
    typealias Waiter = @Sendable (Result<MediaInfo, MediaError>) -> Void

    private var state: LoadState { loading.withLockAnnotated { $0.state } }

    init(location: String) { self.location = location }

    /// Loads the values of the given properties, opening the media on first use.
    ///
    /// Throws, when the media cannot be opened, an `AVError` or a `URLError` as Apple's does
    /// (see `AVError`), with the typed `AVPlaybackError` under `NSUnderlyingErrorKey`.
    public func load<each Value>(_ properties: repeat AVAsyncProperty<AVAsset, each Value>) async throws -> (repeat each Value) {
        let info: MediaInfo
        do throws(MediaError) {
            info = try await loadedInfo()
        } catch {
            throw error.avFoundationError
        }
        return (repeat (each properties).extract(self, info))
    }

    /// Where the loading of `property` stands, without starting it.
    public func status<Value>(of property: AVAsyncProperty<AVAsset, Value>) -> AVAsyncProperty<AVAsset, Value>.Status {
        switch state {
        case .notLoaded: return .notYetLoaded
        case .loading: return .loading
        case .loaded(let info): return .loaded(property.extract(self, info))
        case .failed(let error): return .failed(error.avFoundationError)
        case .cancelled: return .failed(MediaError.cancelled(url: location).avFoundationError)
        }
    }

    /// The older form: loads `keys` ("duration", "tracks", "playable", ...) and calls
    /// `handler` on a background queue when all have loaded or failed.
    public func loadValuesAsynchronously(forKeys keys: [String], completionHandler handler: (@Sendable () -> Void)? = nil) {
        requestInfo { _ in handler?() }
    }

    /// The status of one key of the older API; on failure `outError` receives the error.
    public func statusOfValue(forKey key: String, error outError: UnsafeMutablePointer<NSError?>? = nil) -> AVKeyValueStatus {
        switch state {
        case .notLoaded: return .unknown
        case .loading: return .loading
        case .loaded:
            if Self.knownKeys.contains(key) { return .loaded }
            outError?.pointee = AVError(.unknown, userInfo: [NSLocalizedDescriptionKey: "\(location): \"\(key)\" is not a key of an asset"]) as NSError
            return .failed
        case .failed(let error):
            outError?.pointee = error.nsError
            return .failed
        case .cancelled: return .cancelled
        }
    }

    static let knownKeys: Set<String> = ["duration", "tracks", "playable", "readable", "hasProtectedContent",
                                         "preferredRate", "preferredVolume", "preferredTransform",
                                         "providesPreciseDurationAndTiming", "overallDurationHint",
                                         "exportable", "composable", "creationDate", "lyrics",
                                         "availableMediaCharacteristicsWithMediaSelectionOptions", "preferredMediaSelection",
                                         "commonMetadata", "metadata"]

    /// Cancels loading that has not finished; waiting loads fail with `.cancelled`.
    public func cancelLoading() {
        let pending: [Waiter] = loading.withLockAnnotated { current in
            guard case .loading = current.state else { return [] }
            current.state = .cancelled
            defer { current.waiters = [] }
            return current.waiters
        }
        for waiter in pending { waiter(.failure(.cancelled(url: location))) }
    }

    // MARK: - Synchronous accessors (Apple's older API)

    /// The asset's duration. As Apple's old synchronous accessor does, this loads the asset
    /// if it has not loaded, blocking the caller until it has; `.indefinite` when it
    /// cannot be opened, and for a live stream. New code awaits `load(.duration)`.
    /// Observed, it never blocks: it is `.indefinite` until the asset loads, then changes.
    public var duration: CMTime { infoLoadingSynchronously()?.duration ?? .indefinite }

    /// The asset's tracks (cover art is metadata, not a track), loading the asset first if
    /// need be (blocking, as `duration`); empty when it cannot be opened.
    public var tracks: [AVAssetTrack] { infoLoadingSynchronously().map(makeTracks) ?? [] }

    /// The asset's tracks of `mediaType`, in container order, loading the asset first if need
    /// be (blocking, as `duration`). New code awaits `loadTracks(withMediaType:)`.
    public func tracks(withMediaType mediaType: AVMediaType) -> [AVAssetTrack] {
        tracks.filter { $0.mediaType == mediaType }
    }

    /// The asset's track with `trackID`, or nil when it has none, loading the asset first if
    /// need be (blocking, as `duration`). New code awaits `loadTrack(withTrackID:)`.
    public func track(withTrackID trackID: CMPersistentTrackID) -> AVAssetTrack? {
        tracks.first { $0.trackID == trackID }
    }

    /// Whether the asset can be played, loading it first if need be (blocking, as `duration`).
    public var isPlayable: Bool { infoLoadingSynchronously()?.isPlayable ?? false }

    /// The duration if the asset has loaded, `.indefinite` otherwise, without waiting: for
    /// the package's own code, which must not block on a load.
    package var loadedDuration: CMTime { loadedMediaInfo?.duration ?? .indefinite }

    /// The media's description, once loaded: at once if it has, else after opening the
    /// media on the loading thread while the caller waits. Opening has its own time limits
    /// (a network read gives up after `MediaSource`'s timeout), so the wait is bounded.
    func infoLoadingSynchronously() -> MediaInfo? {
        if let info = loadedMediaInfo { return info }
        guard !ObservationRead.isObserving else { return nil }
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<MediaInfo?>(nil)
        requestInfo { result in
            if case .success(let info) = result { outcome.withLockAnnotated { $0 = info } }
            done.signal()
        }
        done.wait()
        return outcome.withLockAnnotated { $0 }
    }

    /// Whether the asset is read over a network (http, https, ...), where data can run short.
    var isNetworkStream: Bool {
        guard let scheme = URL(string: location)?.scheme?.lowercased() else { return false }
        return scheme != "file"
    }

    /// Whether the asset is protected: never, since FFmpeg reports encrypted inputs as
    /// unreadable instead.
    public var hasProtectedContent: Bool { false }

    /// An asset for `url`, as `AVURLAsset(url:)` makes one (Apple's `AVAsset(url:)`).
    public convenience init(url: URL) {
        self.init(location: url.isFileURL ? url.path : url.absoluteString)
    }

    /// Loads the asset's tracks of `mediaType`, in container order.
    public func loadTracks(withMediaType mediaType: AVMediaType) async throws -> [AVAssetTrack] {
        try await load(.tracks).filter { $0.mediaType == mediaType }
    }

    /// Loads the asset's tracks of `mediaType`, in container order, and hands them (or the
    /// load's error) to `completionHandler`, on a queue of the loader's.
    public func loadTracks(withMediaType mediaType: AVMediaType,
                           completionHandler: @escaping @Sendable ([AVAssetTrack]?, (any Error)?) -> Void) {
        Task {
            do { completionHandler(try await loadTracks(withMediaType: mediaType), nil) } catch { completionHandler(nil, error) }
        }
    }

    /// Loads the asset's track with `trackID`, or nil when it has none.
    public func loadTrack(withTrackID trackID: CMPersistentTrackID) async throws -> AVAssetTrack? {
        try await load(.tracks).first { $0.trackID == trackID }
    }

    // MARK: - Loading

    /// The asset's tracks: every stream but the container's pictures. Cover art is a stream to
    /// FFmpeg but metadata to Apple (`AVMetadataItem`'s `.commonKeyArtwork`): an MP3 with a
    /// cover has one track, its sound, and no video track to show.
    func makeTracks(_ info: MediaInfo) -> [AVAssetTrack] {
        madeTracks.withLockAnnotated { made in
            info.tracks.filter { !$0.isAttachedPicture }.map { track in
                let isPlayable = track == info.preferredAudioTrack || track == info.preferredVideoTrack
                if let kept = made[track.streamIndex], kept.trackInfo == track, kept.isPlayable == isPlayable { return kept }
                let fresh = AVAssetTrack(info: track, asset: self, isPlayable: isPlayable)
                made[track.streamIndex] = fresh
                return fresh
            }
        }
    }

    var loadedMediaInfo: MediaInfo? {
        if case .loaded(let info) = state { return info }
        return nil
    }

    func loadedInfo() async throws(MediaError) -> MediaInfo {
        let result: Result<MediaInfo, MediaError> = await withCheckedContinuation { continuation in
            requestInfo { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// The load's own opened media, kept when the caller that started the load asked for
    /// it (a player about to play the asset), so that a network item is fetched and probed
    /// once rather than twice. Taken at most once.
    private let spareSource = Mutex<MediaSource?>(nil)

    /// The media the load opened, if it was kept for the caller and not yet taken.
    func takeSpareSource() -> MediaSource? {
        spareSource.withLockAnnotated { spare in defer { spare = nil }; return spare }
    }

    /// Opens the media once; every caller gets the same result. `keepingSource`: when this
    /// call starts the load, the opened media is kept for `takeSpareSource()`.
    func requestInfo(keepingSource: Bool = false, _ completion: @escaping Waiter) {
        enum Next { case wait, start, done(Result<MediaInfo, MediaError>) }
        let next: Next = loading.withLockAnnotated { current in
            switch current.state {
            case .loaded(let info): return .done(.success(info))
            case .failed(let error): return .done(.failure(error))
            case .cancelled: return .done(.failure(.cancelled(url: location)))
            case .loading:
                current.waiters.append(completion)
                return .wait
            case .notLoaded:
                current.state = .loading
                current.waiters.append(completion)
                return .start
            }
        }
        switch next {
        case .wait: return
        case .done(let result): completion(result)
        case .start:
            let location = self.location
            DispatchQueue.global(qos: .userInitiated).async { [self] in
                let result: Result<MediaInfo, MediaError>
                do throws(MediaError) {
                    let source = try MediaSource(url: location)
                    if keepingSource { spareSource.withLockAnnotated { $0 = source } }
                    result = .success(source.info)
                } catch {
                    result = .failure(error)
                }
                let pending: [Waiter] = loading.withLockAnnotated { current in
                    if case .cancelled = current.state { return [] }
                    switch result {
                    case .success(let info): current.state = .loaded(info)
                    case .failure(let error): current.state = .failed(error)
                    }
                    defer { current.waiters = [] }
                    return current.waiters
                }
                for waiter in pending { waiter(result) }
                observationRegistry.poke()
            }
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

/// An asset read from a URL: a local file (a path or file:// URL) or a network stream
/// (http, https, HLS).
// @unchecked restates its superclass's: it adds only a let. Open, as Apple's: an app's
// subclass (an asset that carries its own metadata, say) plays like any other.
open class AVURLAsset: AVAsset, @unchecked Sendable {
    /// The asset's URL.
    public let url: URL

    /// The asset's HTTP fields, registered for its server while it lives.
    private let requestFields: HTTPRequestFields.Registration?

    /// Creates an asset for `url`. Nothing is read until a property is loaded.
    ///
    /// Of Apple's `options`, these change what is sent to an HTTP or HTTPS server, on every
    /// request for the asset (its playlists, segments and ranges): `AVURLAssetHTTPUserAgentKey`
    /// (a `String`), `AVURLAssetHTTPHeaderFieldsKey` (`[String: String]`) and
    /// `AVURLAssetHTTPCookiesKey`. The others are accepted and change nothing:
    /// durations and times are always precise (`AVURLAssetPreferPreciseDurationAndTimingKey`),
    /// and there is no cellular or constrained network to spare.
    public init(url: URL, options: [String: Any]? = nil) {
        self.url = url
        let location = url.isFileURL ? url.path : url.absoluteString
        requestFields = Self.requestFields(from: options).flatMap { HTTPRequestFields.register($0, for: location) }
        super.init(location: location)
    }

    /// The HTTP fields `options` ask for.
    static func requestFields(from options: [String: Any]?) -> HTTPRequestFields? {
        guard let options else { return nil }
        let cookies = options[AVURLAssetHTTPCookiesKey] as? [String] ?? []
        if let given = options[AVURLAssetHTTPCookiesKey], !(given is [String]) {
            playerLog.warning("AVURLAssetHTTPCookiesKey takes Set-Cookie strings here (HTTPCookie needs FoundationNetworking): cookies not sent")
        }
        if let given = options[AVURLAssetHTTPHeaderFieldsKey], !(given is [String: String]) {
            playerLog.warning("AVURLAssetHTTPHeaderFieldsKey takes [String: String]: header fields not sent")
        }
        let fields = HTTPRequestFields(userAgent: options[AVURLAssetHTTPUserAgentKey] as? String,
                                       headers: options[AVURLAssetHTTPHeaderFieldsKey] as? [String: String] ?? [:], cookies: cookies)
        return fields.isEmpty ? nil : fields
    }
}

/// `AVURLAsset` option: the `User-Agent` every HTTP request for the asset carries (a `String`).
public let AVURLAssetHTTPUserAgentKey = "AVURLAssetHTTPUserAgentKey"
/// `AVURLAsset` option: header fields every HTTP request for the asset carries
/// (`[String: String]`). Apple's players take it under this name without declaring it.
public let AVURLAssetHTTPHeaderFieldsKey = "AVURLAssetHTTPHeaderFieldsKey"
/// `AVURLAsset` option: cookies every HTTP request for the asset carries, each a
/// `Set-Cookie` value (`[String]`, "name=value; domain=host; path=/"). Apple's takes
/// `[HTTPCookie]`, which on Linux lives in FoundationNetworking (and libcurl) that this
/// library does not link: such cookies go as a `Cookie` field in
/// `AVURLAssetHTTPHeaderFieldsKey` instead, or as strings here.
public let AVURLAssetHTTPCookiesKey = "AVURLAssetHTTPCookiesKey"
/// `AVURLAsset` option: whether the asset may be loaded over an expensive network (there
/// is no such distinction here).
public let AVURLAssetAllowsExpensiveNetworkAccessKey = "AVURLAssetAllowsExpensiveNetworkAccessKey"
/// `AVURLAsset` option: whether the asset may be loaded over a constrained network (there
/// is no such distinction here).
public let AVURLAssetAllowsConstrainedNetworkAccessKey = "AVURLAssetAllowsConstrainedNetworkAccessKey"
/// `AVURLAsset` option: a MIME type to take the asset for (accepted; FFmpeg probes the
/// content itself).
public let AVURLAssetOverrideMIMETypeKey = "AVURLAssetOverrideMIMETypeKey"

/// `AVURLAsset` option: ask for precise durations and times (always so here).
public let AVURLAssetPreferPreciseDurationAndTimingKey = "AVURLAssetPreferPreciseDurationAndTimingKey"
/// `AVURLAsset` option: whether the asset may be loaded over a cellular network (there is
/// no such distinction here).
public let AVURLAssetAllowsCellularAccessKey = "AVURLAssetAllowsCellularAccessKey"
