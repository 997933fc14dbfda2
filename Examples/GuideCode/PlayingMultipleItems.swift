// "Playing Multiple Items", in Swift. Lines marked CHANGED differ from what the same code
// says on Apple's platforms; README.md in this folder lists them with the reasons.

import AVPlayback
import Foundation

/// A queue player made from an array of items, played, skipped forward, and appended to
/// after checking that the new item can go in.
@MainActor final class QueueSection {
    var queuePlayer: AVQueuePlayer!

    func start(urls: [URL], outcome: Outcome) {
        let items = urls.map { AVPlayerItem(url: $0) }
        let queuePlayer = AVQueuePlayer(items: items)
        self.queuePlayer = queuePlayer
        queuePlayer.play()
        guard queuePlayer.items().count == items.count, queuePlayer.currentItem === items.first else {
            return outcome.fail("the queue holds \(queuePlayer.items().count) items, not \(items.count)")
        }
        // "If you want to skip to the next item, you send the queue player an advanceToNextItem message."
        queuePlayer.advanceToNextItem()
        guard queuePlayer.currentItem === items.dropFirst().first else { return outcome.fail("advancing did not make the second item current") }

        let anItem = AVPlayerItem(url: urls[0])
        if queuePlayer.canInsert(anItem, after: nil) {
            queuePlayer.insert(anItem, after: nil)
        }
        guard queuePlayer.items().last === anItem else { return outcome.fail("the new item was not appended") }
        // An item already in the queue cannot go in again.
        guard !queuePlayer.canInsert(anItem, after: nil) else { return outcome.fail("an item already queued could be inserted again") }
        queuePlayer.remove(anItem)
        guard !queuePlayer.items().contains(where: { $0 === anItem }) else { return outcome.fail("remove left the item queued") }
        queuePlayer.removeAllItems()
        guard queuePlayer.items().isEmpty, queuePlayer.currentItem == nil else { return outcome.fail("removeAllItems left items") }
        say("     queue of \(items.count): advanced, appended after canInsert, refused a second insert, removed, emptied")
        outcome.pass()
    }
}
