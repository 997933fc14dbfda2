import Foundation
import ChorusTestSupport
@testable import AVPlayback

/// Monitor ticks a window for something that must not happen lasts: 30 (300 ms), each a
/// chance for the player to do it. Only such windows are slept through: a loaded machine
/// that runs fewer ticks in one can make the check see less, never fail it.
let quietWindowTicks = 30

/// Sleeps through `quietWindowTicks` of the player's monitor, for a check that nothing
/// more happens; anything awaited is polled for with `waitUntil` instead.
func sleepThroughQuietWindow() async {
    try? await Task.sleep(for: AVPlayer.monitorInterval * quietWindowTicks)
}

/// Counts notifications of one name for one object.
final class NotificationCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    private var lastUserInfo: [AnyHashable: Any]?
    private var token: NSObjectProtocol?

    init(_ name: Notification.Name, object: AnyObject?) {
        token = NotificationCenter.default.addObserver(forName: name, object: object, queue: nil) { [weak self] note in
            self?.lock.withLock {
                self?.count += 1
                self?.lastUserInfo = note.userInfo
            }
        }
    }

    deinit { if let token { NotificationCenter.default.removeObserver(token) } }

    var value: Int { lock.withLock { count } }
    var userInfo: [AnyHashable: Any]? { lock.withLock { lastUserInfo } }
}

/// A thread-safe box for values gathered by callbacks.
final class Collected<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [Value] = []
    func append(_ value: Value) { lock.withLock { items.append(value) } }
    var all: [Value] { lock.withLock { items } }
    var count: Int { lock.withLock { items.count } }
    func removeAll() { lock.withLock { items.removeAll() } }
}

/// Plays `url` to its end into a WAV file and returns what the file holds; the file is
/// removed either way.
func renderToPCM(_ url: URL, name: String, configure: (AVPlayer, AVPlayerItem) async -> Void = { _, _ in }) async throws -> PCM {
    let out = FileManager.default.temporaryDirectory.appendingPathComponent("chorus-render-\(getpid())-\(name).wav")
    defer { try? FileManager.default.removeItem(at: out) }
    let item = AVPlayerItem(url: url)
    let player = AVPlayer(playerItem: item, output: .wav(path: out.path))
    let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
    await configure(player, item)
    player.play()
    let finished = await waitUntil(60) { ended.value > 0 || item.status == .failed }
    player.close()
    guard finished, item.status != .failed else { throw RenderFailure(reason: "\(item.error.map { "\($0)" } ?? "timed out")") }
    return try PCM(wavFile: out)
}

struct RenderFailure: Error { let reason: String }

/// A player of one item shown in a layer, with counts of the item's end and failure
/// notifications, once the item is ready (`player.close()` is the caller's).
struct ShownPlayer {
    let item: AVPlayerItem
    let player: AVPlayer
    let layer: AVPlayerLayer
    let ended: NotificationCounter
    let failed: NotificationCounter

    /// Made for `url` on a silent device; `ready` is whether the item was ready within
    /// `timeout` seconds.
    static func open(_ url: URL, timeout: Double) async -> (shown: ShownPlayer, ready: Bool) {
        let item = AVPlayerItem(url: url)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        let shown = ShownPlayer(item: item, player: player, layer: AVPlayerLayer(player: player),
                                ended: NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item),
                                failed: NotificationCounter(AVPlayerItem.failedToPlayToEndTimeNotification, object: item))
        return (shown, await waitUntil(timeout) { item.status == .readyToPlay })
    }
}

/// Waits up to `timeout` seconds for `layer` to show an identity picture
/// (`TestMedia.identity`) whose number lies in `expected`; returns whether it did, and the
/// number last read (-1 for none).
func waitForIdentityPicture(in layer: AVPlayerLayer, numbered expected: ClosedRange<Int>, timeout: Double) async -> (shown: Bool, number: Int) {
    var number = -1
    let shown = await waitUntil(timeout) {
        if let picture = layer.picture(forRefreshAt: .now()), let luma = picture.plane0 {
            number = TestMedia.identity(luma: luma, stride: picture.stride0, width: picture.info.width, height: picture.info.height)
        }
        return expected.contains(number)
    }
    return (shown, number)
}
