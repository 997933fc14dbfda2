import Foundation
import MediaPipeline
import MutexAnnotations
import Synchronization

extension AVPlayer {
    // MARK: - Criteria (the public members are in the class body, to be overridable)

    /// Chooses `item`'s options by the player's criteria where it has no explicit choice.
    func applySelectionCriteria(to item: AVPlayerItem, info: MediaInfo) {
        let criteria = state.withLockAnnotated { $0.appliesSelectionCriteria ? $0.selectionCriteria : [:] }
        for (characteristic, criterion) in criteria where !item.hasExplicitChoice(for: characteristic) {
            guard let group = AVMediaSelectionGroup(characteristic: characteristic, info: info, asset: item.asset) else { continue }
            if let option = criterion.choose(in: group) {
                item.setChoice(option.streamIndex, for: characteristic, explicit: false)
            } else if group.allowsEmptySelection {
                // Subtitles in none of the languages asked for: none, rather than a default.
                item.setChoice(nil, for: characteristic, explicit: false)
            }
        }
    }

    // MARK: - A new choice

    /// The sound stream `item` should play: its choice, else the asset's default.
    func wantedSoundStream(of item: AVPlayerItem) -> Int? {
        item.chosenAudioStream ?? (item.loadedInfo ?? item.asset.loadedMediaInfo)?.preferredAudioTrack?.streamIndex
    }

    /// `item`'s choice for `characteristic` changed. Subtitles need nothing here: every text
    /// track is read, and what shows follows the choice on the next tick. Another sound is
    /// opened in the background and takes over from the time reached.
    func mediaSelectionChanged(of item: AVPlayerItem, characteristic: AVMediaCharacteristic) {
        guard characteristic == .audible else { return }
        setupQueue.async { [weak self] in self?.reopenSound(of: item) }
    }

    /// On the setup queue: reads `item`'s chosen sound from where the item stands, in place
    /// of the sound it plays. The item's time, rate and state are kept; while the new reader
    /// fills, the player waits (`.toMinimizeStalls`), as after a seek, but no time jump is
    /// posted. A group's follower keeps its place on the group's timeline.
    private func reopenSound(of item: AVPlayerItem) {
        let wanted = wantedSoundStream(of: item)
        let playing = state.withLockAnnotated { state -> Int?? in
            guard state.item === item, state.itemLoaded, state.format != nil else { return nil }
            return .some(state.soundStream)
        }
        guard let playing, playing != wanted else { return }
        let source: MediaSource
        do throws(MediaError) {
            source = try MediaSource(url: item.asset.location, audioStream: wanted)
            source.gain = item.gain
        } catch {
            playerLog.warning("the chosen sound of \(item.asset.location) cannot be opened (\(error)); the item plays on with the sound it had")
            return
        }
        var effects = Effects()
        let reading = state.withLockAnnotated { state -> (serial: Int, startFrame: Int64, followsOn: FollowOn?)? in
            guard state.item === item, state.itemLoaded, let format = state.format else { return nil }
            let time = currentTimeLocked(&state)
            let status = engine.status
            let playedOn = status.serial == state.serial && status.phase == .playing
            // Where the device's writing stands, on the run's frames (counted on from an
            // earlier item's after a gapless join) before the run restarts.
            let written = state.itemPosition(ofRenderPosition: Double(status.writtenEndFrame))
            let writtenRun = FollowOn(serial: state.serial, frameShift: state.frameBase)
            var followsOn: FollowOn?
            state.serial += 1
            state.resetRunLocked()
            // The engine's load, below, stops them with the old reader.
            state.successors = []
            state.endHandledSerial = nil
            // On a schedule (a group's timeline, a host-time start) the item keeps its place
            // on it: the new sound starts at the frame due when it is ready. Otherwise it
            // goes on from where it is heard now.
            if state.masterAnchor == nil && state.scheduledHost == nil {
                state.position = time
                // Playing at speed 1: the new sound follows on from the last frame written
                // to the device, which plays what it holds meanwhile (`followsOn`).
                // The render thread skips what it writes meanwhile (`followsOn`).
                if state.rate == 1, !state.reversed, playedOn, written.isFinite, written >= 0 {
                    state.position = CMTime(value: Int64(written), timescale: Int32(format.sampleRate))
                    followsOn = writtenRun
                }
            }
            let start = state.rate > 0 ? readerStartFrameLocked(&state, format: format) : frames(of: state.position, format: format)
            if state.rate != 0 { setTimeControlLocked(&state, .waitingToPlayAtSpecifiedRate, reason: .toMinimizeStalls, &effects) }
            return (state.serial, start, followsOn)
        }
        effects.run(on: eventQueue)
        guard let reading else { return }
        do throws(MediaError) {
            // The pictures, if shown, read on: only the sound is read anew.
            try engine.reloadSound(source: source, serial: reading.serial, startFrame: reading.startFrame,
                                   forwardBuffer: Self.forwardBuffer(of: item), subtitles: item.subtitleCues,
                                   onEvent: readerEvents(of: item))
        } catch {
            playerLog.warning("the chosen sound of \(item.asset.location) cannot be read (\(error))")
            eventQueue.async { item.failed(error) }
            return
        }
        applyVolume()
        let current = state.withLockAnnotated { state -> Bool in
            guard state.item === item, let format = state.format else { return false }
            state.soundStream = source.info.preferredAudioTrack?.streamIndex
            // Reversed, or moved meanwhile: the reader goes where the player now stands.
            if state.serial != reading.serial || state.rate < 0 {
                let frame = state.rate > 0 ? readerStartFrameLocked(&state, format: format) : frames(of: state.position, format: format)
                seekReaderLocked(&state, toItemFrame: frame, format: format)
            }
            // Not flushed: what the device holds of the old sound is heard out while the new
            // one's first block comes, and the new one goes on from the frame after it (or,
            // on a schedule, from where the timeline then stands). Only a player that moved
            // or turned meanwhile starts afresh.
            let followsOn = state.serial == reading.serial && state.rate >= 0
            applyModeLocked(&state, flush: !followsOn, followsOn: followsOn ? reading.followsOn : nil)
            if !successorsWantedLocked(&state).isEmpty { engine.expectSuccessor(true) }
            return true
        }
        guard current else { return }
        engine.startReader()
        refreshSuccessors()
        // Chosen again while this one opened.
        if wantedSoundStream(of: item) != source.info.preferredAudioTrack?.streamIndex {
            mediaSelectionChanged(of: item, characteristic: .audible)
        }
    }

    // MARK: - Subtitles

    /// The subtitle lines the current item shows at its current time (none when subtitles
    /// are off or the item has none): what a window draws and a legible output delivers.
    public func currentSubtitleLines() -> [String] {
        guard let item = currentItem, let stream = item.shownSubtitleStream else { return [] }
        return item.subtitleCues.cues(stream: stream, at: currentTime()).map(\.text)
    }
}
