import Foundation
import MediaPipeline
import MutexAnnotations
import Synchronization

extension AVPlayer {
    /// Registers something that shows this player's pictures (a layer, a video output):
    /// pictures are decoded only while at least one is registered. An item already loaded
    /// starts its pictures' reader at once, at the current position.
    func addVideoConsumer() {
        videoConsumers.withLockAnnotated { $0 += 1 }
        updateVideoDecoding()
    }

    /// Undoes `addVideoConsumer`; with none left, the pictures stop being decoded.
    func removeVideoConsumer() {
        videoConsumers.withLockAnnotated { $0 = max(0, $0 - 1) }
        updateVideoDecoding()
    }

    /// A track of `item` was turned on or off: the sound's gain, and the pictures, follow
    /// at once.
    func tracksChanged(of item: AVPlayerItem) {
        guard currentItem === item else { return }
        applyVolume()
        updateVideoDecoding()
    }

    /// Decodes pictures while something shows them and the current item's video track is
    /// enabled: starts the current item's pictures' reader at the current position, or
    /// stops it. In order with item changes, on the setup queue.
    func updateVideoDecoding() {
        let consumers = videoConsumers.withLockAnnotated { $0 }
        let enabled = currentItem.map { $0.tracks.isEmpty || $0.showsPictures } ?? true
        let wanted = consumers > 0 && enabled
        engine.decodesVideo = wanted
        setupQueue.async { [weak self] in
            guard let self else { return }
            guard wanted else {
                engine.unloadVideo()
                return
            }
            let start = self.state.withLockAnnotated { state -> (serial: Int, frame: Int64)? in
                guard state.itemLoaded, let format = state.format else { return nil }
                return (state.serial, frames(of: currentTimeLocked(&state), format: format))
            }
            if let start { engine.loadVideoForCurrentItem(serial: start.serial, startFrame: start.frame) }
        }
    }

    /// Publishes where the pictures' timeline stands (on the monitor tick, from the same
    /// report of the render thread that times the sound): moving at the rate heard while
    /// the sound is heard, standing still otherwise (paused, starting, stalled, ended).
    func publishVideoTimelineLocked(_ state: inout PlayerState, status: RenderStatus, now: HostTime, time: CMTime) {
        guard engine.decodesVideo else { return }
        let items = videoItemsLocked(&state)
        // A group member: the group's timeline itself, which its sound is held to within
        // microseconds, so its pictures are where the group's are from the first one on
        // (through its start, a join mid-item, and a hard resync of its sound alike).
        // An item without sound: its timeline on the host clock, which nothing heard follows.
        if state.itemLoaded, state.rate > 0, let master = state.timelineClock, let format = state.format,
           let anchor = state.masterAnchor {
            let timeline = masterTimelineLocked(&state, master: master, format: format)
            let shift = state.latencyCompensation
            let nanosecondsPerFrame = 1e9 / Double(format.sampleRate)
            // The timeline's frames as the item's own (less a gapless run's base).
            let run = state
            func nanoseconds(_ frame: Double) -> Int64 {
                Int64(max(-9e18, min(9e18, (run.itemPosition(ofRenderPosition: frame) * nanosecondsPerFrame).rounded())))
            }
            let anchorHeard = timeline.host + shift
            let published: VideoTimeline
            if anchor.rateBefore == nil && now < anchorHeard {
                // A start ahead: the picture holds at the anchor until it is heard.
                published = VideoTimeline(serial: state.serial, anchorHost: anchorHeard, anchorItemNanoseconds: nanoseconds(Double(timeline.frame)),
                                          rate: timeline.rate, holdsBeforeAnchor: true, items: items)
            } else {
                let heardFrame = timeline.due(at: now - shift, sampleRate: format.sampleRate)
                published = VideoTimeline(serial: state.serial, anchorHost: now, anchorItemNanoseconds: nanoseconds(heardFrame),
                                          rate: timeline.rate(at: now - shift), items: items)
            }
            engine.videoTimeline.publish(published)
            return
        }
        // Following on from the run before (another sound or variant read anew): the
        // pictures move with that run's sound, which the device still plays, rather than
        // standing at the last frame it wrote until the new sound is heard.
        if let format = state.format, let earlier = earlierRunHeardLocked(&state, status: status, format: format) {
            let itemNanoseconds = Int64(max(-9e18, min(9e18, (earlier.position * 1e9 / Double(format.sampleRate)).rounded())))
            engine.videoTimeline.publish(VideoTimeline(serial: state.serial, anchorHost: now, anchorItemNanoseconds: itemNanoseconds,
                                                       rate: earlier.rate, items: items))
            return
        }
        var moving = false
        // The end is written a device's queue before it is heard: until then the sound, and
        // the pictures with it, still move (standing still there made the item's last
        // pictures up to 40 ms late).
        let sounding = status.phase == .playing || (status.phase == .ended && engine.isRealtime && now < status.endHost)
        if state.itemLoaded, state.rate != 0, status.serial == state.serial, sounding {
            moving = !engine.isRealtime || now >= status.runStartHost
        }
        var itemNanoseconds = time.isNumeric ? time.convertScale(1_000_000_000, method: .roundHalfAwayFromZero).value : 0
        if moving, let format = state.format {
            // Between frames: the timeline's own fraction, not the current time's rounding.
            let position = state.itemPosition(ofRenderPosition: status.position(at: now, sampleRate: format.sampleRate))
            if position.isFinite { itemNanoseconds = Int64(max(-9e18, min(9e18, (position * 1e9 / Double(format.sampleRate)).rounded()))) }
        }
        // The render thread's frames run forward either way; backwards, item time runs down.
        let rate = moving && status.anchorRate.isFinite ? (state.reversed ? -status.anchorRate : status.anchorRate) : 0
        // A start scheduled at a host time (a group's leader's, `setRate(_:time:atHostTime:)`)
        // whose sound is not heard yet, while its device settles: the pictures keep the
        // schedule, held at the start until its moment, rather than the still of a paused
        // player.
        if !moving, state.itemLoaded, state.rate != 0, let scheduled = state.scheduledHost {
            let start = state.position.isNumeric ? state.position.convertScale(1_000_000_000, method: .roundHalfAwayFromZero).value : 0
            engine.videoTimeline.publish(VideoTimeline(serial: state.serial, anchorHost: scheduled, anchorItemNanoseconds: start,
                                                       rate: Double(state.rate), holdsBeforeAnchor: true, items: items))
            return
        }
        // A group member's item opened ahead of its start shows nothing until it starts; a
        // player of its own shows the still of where it stands, as Apple's layers do.
        let shows = state.masterClock == nil || state.positioned
        engine.videoTimeline.publish(VideoTimeline(serial: state.serial, anchorHost: now,
                                                   anchorItemNanoseconds: itemNanoseconds, rate: rate, showsPictures: shows, items: items))
    }

    /// The items the pictures' timeline names: the current one, and, once its sound's end is
    /// known with an item joined on after it, that item and where it starts, so the
    /// timeline runs through the join (`VideoItems`).
    private func videoItemsLocked(_ state: inout PlayerState) -> VideoItems {
        let numbers = engine.itemNumbers
        guard !state.reversed, let boundary = state.pendingBoundary, let next = numbers.next, !state.successors.isEmpty,
              let format = state.format, format.sampleRate > 0 else { return VideoItems(current: numbers.current) }
        let start = CMTime(value: boundary - state.frameBase, timescale: Int32(format.sampleRate))
            .convertScale(1_000_000_000, method: .roundHalfAwayFromZero)
        guard start.isNumeric else { return VideoItems(current: numbers.current) }
        return VideoItems(current: numbers.current, next: next, nextStartNanoseconds: start.value)
    }
}
