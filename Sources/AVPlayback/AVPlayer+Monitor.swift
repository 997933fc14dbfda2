import Foundation
import MutexAnnotations
import Synchronization
import MediaPipeline

extension AVPlayer {
    /// On the event queue: an event from the reader of `item`, ignored once it is not the
    /// current item (a replaced item's reader can still be stopping).
    func readerEvent(_ event: AudioReaderEvent, of item: AVPlayerItem) {
        var effects = Effects()
        var refresh = false
        state.withLockAnnotated { state in
            if let index = state.successors.firstIndex(where: { $0.item === item }) {
                successorEventLocked(&state, event, index: index)
                if case .continued = event { refresh = true }
                return
            }
            guard state.item === item else { return }
            switch event {
            case .ready(let serial, _), .decodedToEnd(let serial, _), .failed(let serial, _, _), .continued(let serial, _):
                if case .continued(_, let itemFrame) = event, serial == state.serial, !state.successors.isEmpty {
                    // The next item's sound follows this one's in the ring from here.
                    state.pendingBoundary = state.frameBase + itemFrame
                    refresh = true
                }
                state.readySerial = max(state.readySerial, serial)
                if case .ready = event {} else { state.decodedToEndSerial = max(state.decodedToEndSerial, serial) }
                if let pending = state.pendingSeek, serial >= pending.serial {
                    state.pendingSeek = nil
                    effects.completions.append { pending.completion(true) }
                }
                if serial >= state.serial, !state.pendingPrerolls.isEmpty {
                    let prerolls = state.pendingPrerolls
                    state.pendingPrerolls = []
                    effects.completions.append { for handler in prerolls { handler(true) } }
                }
            case .damaged(let count):
                state.item?.noteDamage(count)
            }
        }
        effects.run(on: eventQueue)
        // The successor has begun: the one after it may be opened.
        if refresh { refreshSuccessors() }
    }

    /// On the event queue, every `monitorInterval`: brings the player's status in line
    /// with what the render thread reports, notices the item's end, fires time observers.
    func tick() {
        var effects = Effects()
        let status = engine.status
        let realtime = engine.isRealtime
        let now = HostTime(hostClock.time) ?? .now()
        var fire: (time: CMTime, playing: Bool, backwards: Bool, jumped: Bool, jumpedTo: CMTime?, previous: CMTime, observers: [TimeObserver],
                   ended: Bool)?
        // Where the item stands, for its pushing outputs (subtitles, timed metadata).
        var pushed: (item: AVPlayerItem, time: CMTime, jumped: Bool)?
        // The item that may move to another of its variants, when it plays.
        var adapting: AVPlayerItem?
        // The item played forward to its end (or its forward end time) this tick, and is
        // still current: the boundaries up to the end were traversed, though it now stands.
        var endedForward = false
        state.withLockAnnotated { state in
            promoteIfHeardLocked(&state, status: status, now: now, realtime: realtime, &effects)
            guard let item = state.item else { return }
            if state.itemLoaded, state.rate != 0 { adapting = item }
            refreshMasterTimelineLocked(&state)
            // Following on, the old sound has all been heard and the new is not yet: waiting
            // (past a margin, for the new sound's start read a moment late).
            if state.itemLoaded, state.rate != 0, let format = state.format,
               let earlier = earlierRunHeardLocked(&state, status: status, format: format),
               earlier.pastEnd > Self.followOnWaitMargin * Double(format.sampleRate) {
                setTimeControlLocked(&state, .waitingToPlayAtSpecifiedRate, reason: .toMinimizeStalls, &effects)
            }
            if state.itemLoaded, state.rate != 0, status.serial == state.serial, status.generation > 0 {
                switch status.phase {
                case .playing:
                    // Playing means heard: a start waits until its first frame leaves the device.
                    if !realtime || now >= status.runStartHost {
                        setTimeControlLocked(&state, .playing, reason: nil, &effects)
                    }
                case .stalled:
                    if status.stalls != state.lastStallCount {
                        state.lastStallCount = status.stalls
                        item.noteStall()
                        setTimeControlLocked(&state, .waitingToPlayAtSpecifiedRate, reason: .toMinimizeStalls, &effects)
                        effects.notifications.append { NotificationCenter.default.post(name: AVPlayerItem.playbackStalledNotification, object: item) }
                    }
                case .ended, .failed:
                    // The end counts once it is heard, not when it is written.
                    if realtime && now < status.endHost { break }
                    guard state.endHandledSerial != state.serial else { break }
                    // The end of items that followed this one gaplessly, whose readers' word
                    // of the handover has not come yet: promoted first, on a later tick.
                    if state.pendingBoundary != nil || engine.successorHasBegun(at: 0) { break }
                    state.endHandledSerial = state.serial
                    let forward = state.rate > 0
                    handleEndLocked(&state, item: item, failed: status.phase == .failed, endFrame: max(0, state.itemFrame(ofRenderFrame: status.endFrame)), &effects)
                    endedForward = forward && state.item === item
                case .idle, .starting:
                    break
                }
            }
            // The item's forward end, when it has one: reached as the monitor sees it, within a
            // tick (10 ms) of it.
            if state.itemLoaded, state.rate > 0, state.endHandledSerial != state.serial, let format = state.format {
                let end = item.forwardPlaybackEndTime
                if end.isNumeric, end > .zero, currentTimeLocked(&state) >= end {
                    state.endHandledSerial = state.serial
                    handleEndLocked(&state, item: item, failed: false, endFrame: frames(of: end, format: format), atEndOfMedia: false, &effects)
                    endedForward = state.item === item
                    if state.rate == 0 {
                        // Paused there: it stands at the end itself, not where the tick
                        // found it, and the reader waits there.
                        state.position = end
                        seekReaderLocked(&state, toItemFrame: frames(of: end, format: format), format: format)
                    }
                }
            }
            let time = currentTimeLocked(&state)
            publishVideoTimelineLocked(&state, status: status, now: now, time: time)
            let playing = state.timeControlStatus == .playing
            // The access log's seconds played: the time since the last tick, while playing.
            if playing, let last = state.lastTickHost, now > last, item.notePlayed(seconds: Double(now.nanoseconds - last.nanoseconds) / 1e9) {
                effects.notifications.append { NotificationCenter.default.post(name: AVPlayerItem.newAccessLogEntryNotification, object: item) }
            }
            state.lastTickHost = now
            if state.itemChanged {
                state.itemChanged = false
                restartPeriodicObservers(state.observers)
            }
            fire = (time, playing, state.rate < 0, state.timeJumped, state.jumpedTo, state.lastObservedTime, state.observers, endedForward)
            if state.itemLoaded { pushed = (item, time, state.timeJumped) }
            state.timeJumped = false
            state.jumpedTo = nil
            state.lastObservedTime = time
        }
        effects.run(on: eventQueue)
        if let adapting, adapting.adaptVariant(now: Double(now.nanoseconds) / 1e9) {
            playerLog.info("\(adapting.asset.location): moving to the variant of \(adapting.adaptedVariantCap ?? 0) bit/s, by what the network brings")
            variantLimitChanged(of: adapting)
        }
        // What changes without being set (the buffered ranges, the buffering flags, a
        // chained key path through the item) is noticed here, once a tick.
        observationRegistry.poke()
        currentItem?.observationRegistry.poke()
        if let fire, !fire.observers.isEmpty {
            fireTimeObservers(now: fire.time, playing: fire.playing, backwards: fire.backwards, jumped: fire.jumped, jumpedTo: fire.jumpedTo,
                              previous: fire.previous, observers: fire.observers, reachedEnd: fire.ended)
        }
        if let pushed {
            if let info = pushed.item.loadedInfo {
                pushed.item.noteMetadataPosition(pushed.time, info: info)
                for output in pushed.item.metadataOutputs {
                    output.deliver(log: pushed.item.timedMetadataLog, at: pushed.time, jumped: pushed.jumped, info: info)
                }
            }
            let outputs = pushed.item.legibleOutputs
            if !outputs.isEmpty {
                let stream = pushed.item.shownSubtitleStream
                for output in outputs {
                    output.deliver(cues: pushed.item.subtitleCues, stream: stream, at: pushed.time, jumped: pushed.jumped)
                }
            }
        }
    }

    /// Where item frame `endFrame` of the current item lies on the followed timeline, in the
    /// timeline clock's time (nil off a timeline, or going backwards): the anchor the item
    /// after it starts on when the queue advances.
    func endAnchorLocked(_ state: inout PlayerState, endFrame: Int64) -> MasterAnchor? {
        guard state.rate > 0, !state.reversed, let anchor = state.masterAnchor, state.timelineClock != nil,
              let format = state.format else { return nil }
        let anchorFrame = Double(signedFrames(of: anchor.itemTime, format: format))
        let seconds = (Double(endFrame) - anchorFrame) / Double(format.sampleRate) / Double(state.rate)
        guard seconds.isFinite, abs(seconds) < Self.longestAdvanceProjection else { return nil }
        // On a master clock (a group) the next item starts `advanceLead` after the end, so
        // that every room has opened it by then and none skips its first moments.
        let lead = state.masterClock != nil ? Self.advanceLead.nanosecondsClamped : 0
        let masterTime = anchor.masterTime + CMTime(value: Int64((seconds * 1e9).rounded()) + lead, timescale: 1_000_000_000)
        return MasterAnchor(itemTime: .zero, masterTime: masterTime)
    }

    /// How long after an item's end on a master clock the queue's next item starts, when it
    /// does not join on at the sample (the item that ended had no sound): the time a room
    /// takes to open it. Started at the end itself, every room skipped the first 100 to
    /// 130 ms of a local H.264 item (a debug build on a 2-core machine); a start's usual lead
    /// (0.8 s) is for items announced from nothing, over a network.
    public static let advanceLead: Duration = .milliseconds(150)

    /// The furthest an item's end may lie from its anchor for the next item to start there
    /// (seconds): a day, beyond any item played from one anchor; a projection beyond it comes
    /// from a time or a rate from outside, and the next item starts when it is ready instead.
    static let longestAdvanceProjection = 86_400.0

    private func handleEndLocked(_ state: inout PlayerState, item: AVPlayerItem, failed: Bool, endFrame: Int64,
                                 atEndOfMedia: Bool = true, _ effects: inout Effects) {
        if let format = state.format {
            state.position = CMTime(value: endFrame, timescale: Int32(format.sampleRate))
        }
        if failed {
            let reported = engine.lastReaderError ?? state.promotedFailure
                ?? MediaError.corruptData(url: item.asset.location, reason: "playback stopped early")
            effects.notifications.append {
                item.failed(reported)
                NotificationCenter.default.post(name: AVPlayerItem.failedToPlayToEndTimeNotification, object: item,
                                                userInfo: [AVPlayerItemFailedToPlayToEndTimeErrorKey: reported.nsError])
            }
            pauseLocked(&state, &effects)
            return
        }
        // Pictures keep the container's duration: the playhead stands there once paused.
        var standsAt: CMTime?
        if atEndOfMedia, !state.reversed, let format = state.format {
            let end = CMTime(value: endFrame, timescale: Int32(format.sampleRate))
            if let duration = item.pictureItemEnd(soundEndedAt: end) {
                standsAt = duration
            } else {
                // The decoded length, now known, is the duration (before the end is posted).
                effects.notifications.append { item.settleDuration(atEnd: end) }
            }
        }
        effects.notifications.append { NotificationCenter.default.post(name: AVPlayerItem.didPlayToEndTimeNotification, object: item) }
        if state.reversed {
            // Played back to the start (or the reverse end time): it stands there, and playing
            // forward, or a seek, goes on from there.
            pauseLocked(&state, &effects)
            return
        }
        switch state.actionAtItemEnd {
        case .pause:
            pauseLocked(&state, &effects)
            state.pausedAtEnd = true
            if let standsAt {
                state.position = standsAt
                // The pause's call to the periodic observers tells where it stands.
                state.jumpedTo = standsAt
            }
        case .advance:
            // On a timeline (a master clock's, or an item without sound on the host clock)
            // the next item starts where this one's end lies on it: every room of a group
            // works that out alike, so they start the next item at the same instant.
            state.lastAdvance = endAnchorLocked(&state, endFrame: endFrame).map { (itemsQueuedAfterCurrent().first, $0.masterTime) }
            effects.after.append { [weak self] in self?.advanceAfterItemEnd() }
        case .none:
            break
        }
    }
}
