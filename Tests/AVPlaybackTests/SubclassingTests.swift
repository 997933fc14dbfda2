// Imported as an app imports it (not `@testable`): what compiles here is what a port's own
// subclasses may override.
import AVPlayback
import ChorusTestSupport
import Synchronization
import Testing

/// A player subclass as apps write them: it counts the calls it overrides and passes them on.
final class CountingPlayer: AVQueuePlayer, @unchecked Sendable {
    let calls = Mutex<[String]>([])

    override func play() {
        calls.withLock { $0.append("play") }
        super.play()
    }

    override func pause() {
        calls.withLock { $0.append("pause") }
        super.pause()
    }

    override var rate: Float {
        didSet { calls.withLock { $0.append("rate \(rate)") } }
    }

    override func replaceCurrentItem(with item: AVPlayerItem?) {
        calls.withLock { $0.append("replace") }
        super.replaceCurrentItem(with: item)
    }

    override func advanceToNextItem() {
        calls.withLock { $0.append("advance") }
        super.advanceToNextItem()
    }
}

/// An item and an asset that carry an app's own data, as apps subclass them.
final class TaggedItem: AVPlayerItem, @unchecked Sendable {
    let tag: String

    init(asset: AVAsset, tag: String) {
        self.tag = tag
        super.init(asset: asset, automaticallyLoadedAssetKeys: nil)
    }
}

final class NamedAsset: AVURLAsset, @unchecked Sendable {
    var name: String { url.lastPathComponent }
}

/// A player subclass that logs its seeks, prerolls and time observers, as an app's
/// analytics or a custom control does, and passes each on.
final class LoggingPlayer: AVPlayer, @unchecked Sendable {
    let calls = Mutex<[String]>([])

    override func seek(to time: CMTime, toleranceBefore: CMTime, toleranceAfter: CMTime,
                       completionHandler: @escaping @Sendable (Bool) -> Void) {
        calls.withLock { $0.append("seek \(time.seconds)") }
        super.seek(to: time, toleranceBefore: toleranceBefore, toleranceAfter: toleranceAfter, completionHandler: completionHandler)
    }

    override func preroll(atRate rate: Float, completionHandler: (@Sendable (Bool) -> Void)?) {
        calls.withLock { $0.append("preroll") }
        super.preroll(atRate: rate, completionHandler: completionHandler)
    }

    override func addPeriodicTimeObserver(forInterval interval: CMTime, queue: DispatchQueue?,
                                          using block: @escaping @Sendable (CMTime) -> Void) -> Any {
        calls.withLock { $0.append("observe every \(interval.seconds)") }
        return super.addPeriodicTimeObserver(forInterval: interval, queue: queue, using: block)
    }

    override func addBoundaryTimeObserver(forTimes times: [NSValue], queue: DispatchQueue?,
                                          using block: @escaping @Sendable () -> Void) -> Any {
        calls.withLock { $0.append("observe \(times.count) boundaries") }
        return super.addBoundaryTimeObserver(forTimes: times, queue: queue, using: block)
    }

    override func removeTimeObserver(_ observer: Any) {
        calls.withLock { $0.append("remove observer") }
        super.removeTimeObserver(observer)
    }
}

/// An item subclass that refuses seeks past a point, as a preview of paid content does.
final class PreviewItem: AVPlayerItem, @unchecked Sendable {
    static let previewEnd = CMTime(value: 1, timescale: 2)

    override func seek(to time: CMTime, toleranceBefore: CMTime, toleranceAfter: CMTime,
                       completionHandler: (@Sendable (Bool) -> Void)?) {
        super.seek(to: min(time, Self.previewEnd), toleranceBefore: toleranceBefore, toleranceAfter: toleranceAfter,
                   completionHandler: completionHandler)
    }

    override var canPlayReverse: Bool { false }
}

/// An asset subclass that counts two assets of the same URL as equal, as an app's cache may.
final class CachedAsset: AVURLAsset, @unchecked Sendable {
    override func isEqual(_ object: Any?) -> Bool { (object as? CachedAsset)?.url == url }
    override var hash: Int { url.hashValue }
    override var description: String { "cached \(url.lastPathComponent)" }
}

/// A video output's delegate as apps write one: a plain class with state of its own, touched
/// only on the queue it is told on (Apple's delegate protocols are not Sendable).
final class PullCounter: AVPlayerItemOutputPullDelegate {
    var notices = 0
    func outputMediaDataWillChange(_ sender: AVPlayerItemOutput) { notices += 1 }
}

@Suite(.ownThread) struct SubclassingTests {
    @Test("an item and an asset subclassed for an app's own data play to their end like any other")
    func subclassedItemsAndAssetsPlay() async throws {
        let url = try TestMedia.tone(.wav, seconds: 0.5, rate: 48_000)
        let item = TaggedItem(asset: NamedAsset(url: url), tag: "kitchen")
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
        player.play()
        #expect(await waitUntil(10) { ended.value == 1 })
        #expect((player.currentItem as? TaggedItem)?.tag == "kitchen")
        #expect((item.asset as? NamedAsset)?.name == url.lastPathComponent)
    }

    @Test("a player subclass overrides the transport and the queue, and the player still plays")
    func aSubclassOverridesTheTransport() async throws {
        let items = [AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1, rate: 48_000)),
                     AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1, rate: 48_000))]
        let player = CountingPlayer(items: items, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil(10) { items[0].status == .readyToPlay })
        // (Making the player with an item goes through `replaceCurrentItem` too.)
        player.calls.withLock { $0.removeAll() }
        player.play()
        #expect(await waitUntil(10) { player.timeControlStatus == .playing })
        player.rate = 0.5
        player.advanceToNextItem()
        #expect(player.currentItem === items[1])
        player.pause()
        #expect(player.calls.withLock { $0 } == ["play", "rate 0.5", "advance", "replace", "pause"])
    }

    @Test("a player subclass overrides seeking, prerolling and time observers, and every form of each goes through it")
    func aSubclassOverridesSeeksAndObservers() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 2, rate: 48_000))
        let player = LoggingPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        // The short forms and the awaited one reach the full form, as on Apple's players.
        player.seek(to: CMTime(value: 1, timescale: 2)) { _ in }
        #expect(await player.seek(to: CMTime(value: 1, timescale: 1)))
        #expect(await player.preroll(atRate: 1))
        let periodic = player.addPeriodicTimeObserver(forInterval: CMTime(value: 1, timescale: 10), queue: nil) { _ in }
        let boundary = player.addBoundaryTimeObserver(forTimes: [NSValue(time: CMTime(value: 3, timescale: 2))], queue: nil) {}
        player.removeTimeObserver(periodic)
        player.removeTimeObserver(boundary)
        #expect(player.calls.withLock { $0 } == ["seek 0.5", "seek 1.0", "preroll", "observe every 0.1", "observe 1 boundaries",
                                                 "remove observer", "remove observer"])
        #expect(player.currentTime() == CMTime(value: 1, timescale: 1))
    }

    @Test("an item subclass overrides its own seek and flags, and the player goes by them")
    func anItemSubclassOverridesItsSeek() async throws {
        let item = PreviewItem(url: try TestMedia.tone(.wav, seconds: 2, rate: 48_000))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        #expect(await item.seek(to: CMTime(value: 3, timescale: 2)))
        #expect(player.currentTime() == PreviewItem.previewEnd)
        let current: AVPlayerItem? = player.currentItem
        #expect(current?.canPlayReverse == false)
    }

    @Test("identity is NSObject's: outputs, tracks and layers compare and hash, and a subclass's isEqual, hash and description are used")
    func identityAsNSObjects() async throws {
        let url = try TestMedia.video(seconds: 1)
        let item = AVPlayerItem(url: url)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let output = AVPlayerItemVideoOutput(pixelBufferAttributes: nil)
        if !item.outputs.contains(output) { item.add(output) }
        #expect(item.outputs.contains(output))
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        let track = try #require(item.tracks.first)
        #expect(item.tracks.contains(track))
        let layers: Set<AVPlayerLayer> = [AVPlayerLayer(player: player), AVPlayerLayer(player: player)]
        #expect(layers.count == 2)
        #expect(player.description.hasPrefix("<AVPlayer: 0x"))
        // A subclass's own equality: two assets of one URL are one in a set, and equal.
        let first = CachedAsset(url: url), second = CachedAsset(url: url)
        #expect(first == second)
        #expect(Set<AVAsset>([first, second]).count == 1)
        #expect("\(first)" == "cached \(url.lastPathComponent)")
    }

    @Test("a video output's delegate need not be Sendable, and is told on its queue")
    func aPlainDelegateIsTold() async throws {
        let item = AVPlayerItem(url: try TestMedia.video(seconds: 2))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let output = AVPlayerItemVideoOutput(pixelBufferAttributes: nil)
        item.add(output)
        let queue = DispatchQueue(label: "delegate")
        let counter = PullCounter()
        output.setDelegate(counter, queue: queue)
        player.play()
        output.requestNotificationOfMediaDataChange(withAdvanceInterval: 0.1)
        #expect(await waitUntil(10) { queue.sync { counter.notices } == 1 })
    }
}
