import Foundation
import MediaPipeline
import MutexAnnotations
import Synchronization

/// An item opened to be heard right after the current one, with no gap (a queue player's
/// next item), and what its reader has said so far.
struct QueuedSuccessor {
    let item: AVPlayerItem
    /// The engine's name for it (`PlaybackEngine.successorTokens`).
    let token: Int
    /// Being opened: not yet in the engine's list (its reader's events may already come,
    /// as it can begin the moment it is attached).
    var opening = true
    var decodedToEnd = false
    /// Where its own sound ended and the next successor's began (item frames), once handed on.
    var continuedAt: Int64?
    var failure: MediaError?
    var damagedPackets = 0
}

extension AVPlayer {
    // MARK: - Keeping the successors in line with the queue

    /// Brings the items opened to follow the current one in line with the queue: drops
    /// those no longer next (re-reading the current item from where it stands, if one of
    /// them was already being fed to the device), and opens the next one when the last
    /// opened has begun. On the setup queue, in order with item changes.
    func refreshSuccessors() {
        setupQueue.async { [weak self] in self?.refreshSuccessorsInOrder() }
    }

    private func refreshSuccessorsInOrder() {
        // An item that will follow at the end rather than join on (the current item has no
        // sound) is opened now all the same, and kept open for its turn: started on a
        // timeline at the end of the item before, it starts that much sooner (a file's probe
        // is tens of milliseconds, a network item's more).
        let upcoming = state.withLockAnnotated { state -> AVPlayerItem? in
            guard state.actionAtItemEnd == .advance, state.itemLoaded, successorsWantedLocked(&state).isEmpty else { return nil }
            return itemsQueuedAfterCurrent().first
        }
        upcoming?.asset.requestInfo(keepingSource: true) { _ in }
        var effects = Effects()
        let next: (item: AVPlayerItem, token: Int)? = state.withLockAnnotated { state in
            let wanted = successorsWantedLocked(&state)
            var keep = 0
            while keep < state.successors.count, keep < wanted.count, state.successors[keep].item === wanted[keep] { keep += 1 }
            if keep < state.successors.count {
                if engine.successorHasBegun(at: keep) {
                    // Its sound is already in the ring: only a re-read of the current item
                    // takes it out.
                    rereadCurrentItemLocked(&state, &effects)
                } else {
                    engine.dropSuccessors(keepingPrefix: keep)
                }
                syncSuccessorsLocked(&state)
            }
            // The last reader queued waits at its end while more is to follow, so that even
            // an item shorter than the ring joins the next.
            engine.expectSuccessor(wanted.count > state.successors.count)
            // One successor ahead of the sound: another once the last one has begun.
            let begun = (0..<state.successors.count).filter { engine.successorHasBegun(at: $0) }.count
            guard state.successors.count < min(wanted.count, begun + 1) else { return nil }
            let item = wanted[state.successors.count]
            state.successorTokenCount += 1
            state.successors.append(QueuedSuccessor(item: item, token: state.successorTokenCount))
            return (item, state.successorTokenCount)
        }
        effects.run(on: eventQueue)
        guard let next else { return }
        // What cannot follow gaplessly follows at the end, as on a plain player: the reader
        // before it stops waiting for it.
        guard let info = Self.loadInfoWaiting(next.item.asset) else {
            abandonSuccessor(token: next.token, openFailed: true)
            return
        }
        guard info.preferredAudioTrack != nil else {
            abandonSuccessor(token: next.token)
            return
        }
        applySelectionCriteria(to: next.item, info: info)
        let source: MediaSource
        do throws(MediaError) {
            source = try next.item.openSource()
        } catch {
            abandonSuccessor(token: next.token, openFailed: true)
            return
        }
        let item = next.item
        // The item is open and ready for its turn, as a queue player's next item is; said
        // before its sound can begin.
        eventQueue.async { [self] in item.becameReady(info, hostClock: hostClock) }
        let queued: Bool
        do throws(MediaError) {
            queued = try engine.queueSuccessor(source: source, token: next.token, forwardBuffer: Self.forwardBuffer(of: item),
                                               subtitles: item.subtitleCues, metadata: item.timedMetadataLog, onEvent: readerEvents(of: item))
        } catch {
            abandonSuccessor(token: next.token, openFailed: true)
            return
        }
        guard queued else {
            abandonSuccessor(token: next.token)
            return
        }
        let again = state.withLockAnnotated { state -> Bool in
            if let index = state.successors.firstIndex(where: { $0.token == next.token }) { state.successors[index].opening = false }
            syncSuccessorsLocked(&state)
            let more = successorsWantedLocked(&state).count > state.successors.count
            engine.expectSuccessor(more)
            return state.successors.last?.token == next.token
        }
        guard again else { return }
        // The next may be due already (a short item that has begun).
        refreshSuccessorsInOrder()
    }

    /// The items that should follow the current one without a gap: none unless the current
    /// item is loaded and has sound. An item whose pictures are shown joins on too, sound and
    /// pictures at the sample (`PlaybackEngine.queueSuccessor`, `VideoItems`).
    func successorsWantedLocked(_ state: inout PlayerState) -> [AVPlayerItem] {
        guard state.actionAtItemEnd == .advance, state.rate >= 0, !state.reversed, state.itemLoaded, state.format != nil, state.silentItemClock == nil,
              let item = state.item, item.status != .failed else { return [] }
        // An item that ends before its decoded end (a forward end time) ends on the monitor's
        // tick, and the one after it follows from there.
        if item.forwardPlaybackEndTime.isNumeric, item.forwardPlaybackEndTime > .zero { return [] }
        // Items that start elsewhere than at their beginning are opened at their turn.
        return Array(itemsQueuedAfterCurrent().prefix { !$0.startTime.isNumeric || $0.startTime == .zero })
    }

    /// Keeps the player's list of successors to those the engine still holds (and the one
    /// being opened).
    func syncSuccessorsLocked(_ state: inout PlayerState) {
        let tokens = engine.successorTokens
        state.successors.removeAll { !$0.opening && !tokens.contains($0.token) }
        if tokens.isEmpty { state.pendingBoundary = nil }
    }

    /// A successor will not follow gaplessly (it has no sound, or, when
    /// `openFailed`, it could not be opened): it follows at the end instead, as on a plain
    /// player, and the reader before it stops waiting for it.
    private func abandonSuccessor(token: Int, openFailed: Bool = false) {
        state.withLockAnnotated { state in
            let item = state.successors.first { $0.token == token }?.item
            state.refusedSuccessor = item
            if openFailed { state.unopenedSuccessor = item }
            state.successors.removeAll { $0.token == token }
            engine.expectSuccessor(false)
        }
    }

    /// The asset's media information, waiting for it on the calling (setup) thread; nil when
    /// it cannot be opened.
    private static func loadInfoWaiting(_ asset: AVAsset) -> MediaInfo? {
        let result = Mutex<Result<MediaInfo, MediaError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        asset.requestInfo { outcome in
            result.withLockAnnotated { $0 = outcome }
            done.signal()
        }
        done.wait()
        return try? result.withLockAnnotated({ $0 })?.get()
    }

    /// Re-reads the current item from where it stands under a new serial (the queue
    /// changed after the next item's sound had gone to the device): playback goes on from
    /// the same item time, after a flush.
    func rereadCurrentItemLocked(_ state: inout PlayerState, _ effects: inout Effects) {
        guard state.itemLoaded, let format = state.format else { return }
        let time = currentTimeLocked(&state)
        state.serial += 1
        state.resetRunLocked()
        state.position = time
        state.scheduledHost = nil
        state.endHandledSerial = nil
        seekReaderLocked(&state, toItemFrame: state.rate > 0 ? readerStartFrameLocked(&state, format: format) : frames(of: time, format: format),
                         format: format)
        applyModeLocked(&state, flush: true)
    }

    // MARK: - The boundary

    /// On the monitor tick: once the first successor's sound is heard, it becomes the
    /// current item. The item before it has played to its end (its notification is posted),
    /// the item's time starts at zero, and nothing is flushed or re-read.
    func promoteIfHeardLocked(_ state: inout PlayerState, status: RenderStatus, now: HostTime, realtime: Bool,
                              _ effects: inout Effects) {
        // Short items may all have been heard since the last tick.
        while promoteOnceIfHeardLocked(&state, status: status, now: now, realtime: realtime, &effects) {}
    }

    private func promoteOnceIfHeardLocked(_ state: inout PlayerState, status: RenderStatus, now: HostTime, realtime: Bool,
                                          _ effects: inout Effects) -> Bool {
        guard let boundary = state.pendingBoundary, let next = state.successors.first, let old = state.item,
              state.itemLoaded, state.rate != 0, status.serial == state.serial, status.generation > 0,
              let format = state.format else { return false }
        switch status.phase {
        case .idle, .starting: return false
        case .playing, .stalled, .ended, .failed: break
        }
        let heard = realtime ? status.position(at: now, sampleRate: format.sampleRate) : Double(status.writtenEndFrame)
        guard heard.isFinite, heard >= Double(boundary) else { return false }
        guard takeQueuedItem(next.item, after: old) else {
            // The queue changed under the boundary: stay on this item, without the sound
            // that followed it.
            rereadCurrentItemLocked(&state, &effects)
            syncSuccessorsLocked(&state)
            effects.after.append { [weak self] in self?.refreshSuccessors() }
            return false
        }
        state.successors.removeFirst()
        engine.promoteSuccessor()
        let sampleRate = Int32(format.sampleRate)
        // A timeline anchored on a clock carries on; only its item time is now the new item's.
        if let anchor = state.masterAnchor {
            state.masterAnchor = MasterAnchor(itemTime: anchor.itemTime - CMTime(value: boundary - state.frameBase, timescale: sampleRate),
                                              masterTime: anchor.masterTime, rateBefore: anchor.rateBefore)
        }
        state.lastJoin = (next.item, CMTime(value: boundary - state.frameBase, timescale: sampleRate))
        state.frameBase = boundary
        state.item = next.item
        layersSuppressed.store(next.item.layersSuppressed.load(ordering: .relaxed), ordering: .relaxed)
        (state.soundStream, state.pictureStream) = wantedStreams(of: next.item)
        state.position = .zero
        state.pendingBoundary = next.continuedAt.map { boundary + $0 }
        state.decodedToEndSerial = next.decodedToEnd ? state.serial : -1
        state.endHandledSerial = nil
        state.pausedAtEnd = false
        state.promotedFailure = next.failure
        state.lastObservedTime = .invalid
        state.itemChanged = true
        let newItem = next.item
        // As a queue player's items end on Apple's players: the end of the one, then the next
        // as the current item. Each item knows its player first, so that whoever hears of the
        // end (a looper putting the item back) finds it free.
        // The re-read leaves the new current item to this announcement, which comes after
        // the end notification of the one before.
        observationRegistry.willSet(\AVPlayer.currentItem)
        let registry = observationRegistry
        effects.changes.append { [weak self] in
            defer { registry.didSet(\AVPlayer.currentItem) }
            guard let self else { return }
            newItem.player = self
            old.player = nil
            if next.damagedPackets > 0 { newItem.noteDamage(next.damagedPackets) }
            NotificationCenter.default.post(name: AVPlayerItem.didPlayToEndTimeNotification, object: old)
        }
        effects.after.append { [weak self] in
            guard let self else { return }
            updateTimebase()
            // The new item's tracks may be disabled, and its pitch kept otherwise.
            applyVolume()
            pitchAlgorithmChanged(of: newItem)
            // A display shown meanwhile gets the new item's pictures.
            if engine.decodesVideo { updateVideoDecoding() }
            refreshSuccessors()
        }
        return true
    }

    /// A reader's event for a successor (not yet the current item).
    func successorEventLocked(_ state: inout PlayerState, _ event: AudioReaderEvent, index: Int) {
        switch event {
        case .ready:
            break
        case .decodedToEnd:
            state.successors[index].decodedToEnd = true
        case .failed(_, _, let error):
            state.successors[index].decodedToEnd = true
            state.successors[index].failure = error
        case .continued(_, let itemFrame):
            state.successors[index].decodedToEnd = true
            state.successors[index].continuedAt = itemFrame
        case .damaged(let count):
            state.successors[index].damagedPackets = count
        }
    }
}

extension AVPlayer {
    /// Whether `item`, waiting in the queue, will be joined on gaplessly: true once it is
    /// open to follow, false once it is known it will not (it will follow at the end, as
    /// after `replaceCurrentItem(with:)`), nil while that is not yet decided. For a group's
    /// leader, which announces the next item only when every room can join it on.
    package func followsGaplessly(_ item: AVPlayerItem) -> Bool? {
        state.withLockAnnotated { state -> Bool? in
            if let successor = state.successors.first(where: { $0.item === item }) { return successor.opening ? nil : true }
            if state.refusedSuccessor === item { return false }
            guard state.itemLoaded, state.item?.status == .readyToPlay else { return nil }
            // Loaded, and not opened to follow although next: it will not be.
            return successorsWantedLocked(&state).first === item ? nil : false
        }
    }

    /// Whether `item` was to follow the current one gaplessly but could not be opened.
    package func couldNotOpenToFollow(_ item: AVPlayerItem) -> Bool {
        state.withLockAnnotated { $0.unopenedSuccessor === item }
    }

    /// The master clock's time at which `item`'s start is anchored, when the queue advanced
    /// to it (or is advancing to it) at the end of the item before on a master clock's
    /// timeline, without joining it gaplessly; nil otherwise.
    package func advanceStart(of item: AVPlayerItem) -> CMTime? {
        state.withLockAnnotated { state in
            guard state.masterClock != nil, let advance = state.lastAdvance, advance.item === item else { return nil }
            return advance.masterTime
        }
    }

    /// Where the item before `item` ended, in its own time, when `item` joined it gaplessly
    /// (the last such join); nil otherwise.
    package func gaplessJoin(into item: AVPlayerItem) -> CMTime? {
        state.withLockAnnotated { state in state.lastJoin.flatMap { $0.item === item ? $0.previousEnd : nil } }
    }
}

extension PlayerState {
    /// A new serial starts a new run: frames are the item's own again, and nothing follows
    /// the current item's end until a successor is handed the ring again.
    mutating func resetRunLocked() {
        frameBase = 0
        pendingBoundary = nil
    }

    /// The render thread's frame for item frame `frame` of the current item: moved on by a
    /// gapless run's base going forward, counted down from −1 going backwards.
    func renderFrame(ofItemFrame frame: Int64) -> Int64 {
        reversed ? -frame : frame + frameBase
    }

    /// The current item's frame for the render thread's frame `frame`.
    func itemFrame(ofRenderFrame frame: Int64) -> Int64 {
        reversed ? -frame : frame - frameBase
    }

    /// `itemFrame(ofRenderFrame:)` for a fractional position.
    func itemPosition(ofRenderPosition position: Double) -> Double {
        reversed ? -position : position - Double(frameBase)
    }
}
