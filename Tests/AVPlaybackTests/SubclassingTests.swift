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
        super.init(asset: asset)
    }
}

final class NamedAsset: AVURLAsset, @unchecked Sendable {
    var name: String { url.lastPathComponent }
}

@Suite struct SubclassingTests {
    @Test("an item and an asset subclassed for an app's own data play to their end like any other")
    func subclassedItemsAndAssetsPlay() throws {
        let url = try TestMedia.tone(.wav, seconds: 0.5, rate: 48_000)
        let item = TaggedItem(asset: NamedAsset(url: url), tag: "kitchen")
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
        player.play()
        #expect(waitUntil(10) { ended.value == 1 })
        #expect((player.currentItem as? TaggedItem)?.tag == "kitchen")
        #expect((item.asset as? NamedAsset)?.name == url.lastPathComponent)
    }

    @Test("a player subclass overrides the transport and the queue, and the player still plays")
    func aSubclassOverridesTheTransport() throws {
        let items = [AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1, rate: 48_000)),
                     AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1, rate: 48_000))]
        let player = CountingPlayer(items: items, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(waitUntil(10) { items[0].status == .readyToPlay })
        // (Making the player with an item goes through `replaceCurrentItem` too.)
        player.calls.withLock { $0.removeAll() }
        player.play()
        #expect(waitUntil(10) { player.timeControlStatus == .playing })
        player.rate = 0.5
        player.advanceToNextItem()
        #expect(player.currentItem === items[1])
        player.pause()
        #expect(player.calls.withLock { $0 } == ["play", "rate 0.5", "advance", "replace", "pause"])
    }
}
