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

    /// The sound stream `item` should play: its choice, else the asset's default, within
    /// its variant limit (`wantedStreams(of:)`).
    func wantedSoundStream(of item: AVPlayerItem) -> Int? { wantedStreams(of: item).sound }

    /// The sound and picture streams `item` should play, as its source chooses them when
    /// opened for its chosen sound and variant limit (`MediaInfo.playedTracks`), worked out
    /// from the asset's description without opening anything.
    func wantedStreams(of item: AVPlayerItem) -> (sound: Int?, pictures: Int?) {
        guard let info = item.loadedInfo ?? item.asset.loadedMediaInfo else { return (item.chosenAudioStream, nil) }
        let played = info.playedTracks(audioStream: item.chosenAudioStream, within: item.variantLimit)
        return (played.audio?.streamIndex, played.video?.streamIndex)
    }

    /// The sound and picture streams `source` was opened for.
    static func streams(of source: MediaSource) -> (sound: Int?, pictures: Int?) {
        (source.info.preferredAudioTrack?.streamIndex, source.info.preferredVideoTrack?.streamIndex)
    }

    /// `item`'s choice for `characteristic` changed. Subtitles need nothing here: every text
    /// track is read, and what shows follows the choice on the next tick. Another sound is
    /// opened in the background and takes over from the time reached.
    func mediaSelectionChanged(of item: AVPlayerItem, characteristic: AVMediaCharacteristic) {
        guard characteristic == .audible else { return }
        setupQueue.async { [weak self] in self?.reopenSound(of: item) }
    }

    /// `item`'s variant limit changed (`preferredPeakBitRate`, `preferredMaximumResolution`).
    /// When that makes another of an HLS master playlist's variants the one to play, it is
    /// opened in the background and takes over from the time reached, as a chosen sound does;
    /// anything else plays on untouched.
    func variantLimitChanged(of item: AVPlayerItem) {
        setupQueue.async { [weak self] in self?.reopenSound(of: item) }
    }

    /// On the setup queue: reads `item`'s wanted sound and pictures (`wantedStreams(of:)`)
    /// from where the item stands, in place of those it plays, when they differ. The item's
    /// time, rate and state are kept; while the new reader fills, the player waits
    /// (`.toMinimizeStalls`), as after a seek, but no time jump is posted. A group's follower
    /// keeps its place on the group's timeline. Another sound alone is read beside the
    /// pictures, which play on. Other pictures (another variant's, or any of a live
    /// stream's new opening) are read from the new opening too, and take over from the old
    /// one's between one picture and the next (`PlaybackEngine.reloadItem`), the sound
    /// following on as for another sound alone. A live stream is opened again at the
    /// segment that holds the time reached, as for a seek, and runs on the timeline its
    /// earlier opening closed up.
    private func reopenSound(of item: AVPlayerItem) {
        let wanted = wantedStreams(of: item)
        let playing = state.withLockAnnotated { state -> (sound: Int?, pictures: Int?)? in
            guard state.item === item, state.itemLoaded, state.format != nil else { return nil }
            return (state.soundStream, state.pictureStream)
        }
        guard let playing, playing != wanted else { return }
        let live = item.live
        let source: MediaSource
        do throws(MediaError) {
            if let live {
                // Before the playlist was read: where the demuxer starts a live stream by itself.
                let index = live.current.map { $0.segment(holding: currentTime().seconds).index } ?? -HLSLiveWindow.defaultStartFromEnd
                source = try item.openSource(soundStream: item.chosenAudioStream, liveStartIndex: index)
            } else {
                source = try item.openSource()
            }
        } catch {
            playerLog.warning("\(item.asset.location) cannot be opened for its chosen sound or variant (\(error)); the item plays on with what it had")
            return
        }
        // Another variant's pictures: nothing of the old reading carries on. (Nor does a live
        // stream's, whose pictures' reader would not run on the new opening's timeline.)
        let whole = Self.streams(of: source).pictures != playing.pictures || (live != nil && playing.pictures != nil)
        // Another variant's pictures, while pictures are shown: the new opening's take over
        // from the old one's without a break (`PlaybackEngine.reloadItem`), and its sound
        // follows on as another sound alone does.
        let takesOver = whole && playing.pictures != nil && Self.streams(of: source).pictures != nil && engine.hasVideo
        var effects = Effects()
        let reading = state.withLockAnnotated { state -> (serial: Int, startFrame: Int64, followsOn: FollowOn?, picturesFrom: Int64)? in
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
                if !whole || takesOver, state.rate == 1, !state.reversed, playedOn, written.isFinite, written >= 0 {
                    state.position = CMTime(value: Int64(written), timescale: Int32(format.sampleRate))
                    followsOn = writtenRun
                    // Until the new sound is heard, the time runs on with the old one's,
                    // from no earlier than the time reported so far: the old run's latest
                    // report, extrapolated, can stand behind an earlier reading of its own.
                    state.followingOn = FollowingOn(serial: state.serial, earlier: status, frameShift: writtenRun.frameShift)
                    let reported = time.convertScale(Int32(format.sampleRate), method: .roundTowardZero)
                    if reported.isNumeric { state.heardFloor = (state.serial, max(0, reported.value)) }
                }
            }
            let start = state.rate > 0 ? readerStartFrameLocked(&state, format: format) : frames(of: state.position, format: format)
            // Following on, playback does not wait: the device plays the old sound on until
            // the new is heard (the monitor says waiting if the old runs out first).
            if state.rate != 0, followsOn == nil {
                setTimeControlLocked(&state, .waitingToPlayAtSpecifiedRate, reason: .toMinimizeStalls, &effects)
            }
            // The new pictures from the time reached: those before it are on display or gone.
            let seen = time.convertScale(1_000_000_000, method: .roundTowardZero)
            return (state.serial, start, followsOn, seen.isNumeric ? max(0, seen.value) : 0)
        }
        effects.run(on: eventQueue)
        guard let reading else { return }
        do throws(MediaError) {
            if takesOver {
                try engine.reloadItem(source: source, serial: reading.serial, startFrame: reading.startFrame,
                                      picturesFromNanoseconds: reading.picturesFrom, forwardBuffer: Self.forwardBuffer(of: item),
                                      subtitles: item.subtitleCues, metadata: item.timedMetadataLog, continuing: live != nil,
                                      onEvent: readerEvents(of: item))
            } else if whole {
                try engine.load(source: source, serial: reading.serial, startFrame: reading.startFrame, start: false,
                                forwardBuffer: Self.forwardBuffer(of: item), subtitles: item.subtitleCues, metadata: item.timedMetadataLog,
                                continuing: live != nil, onEvent: readerEvents(of: item))
            } else {
                // The pictures, if shown, read on: only the sound is read anew.
                try engine.reloadSound(source: source, serial: reading.serial, startFrame: reading.startFrame,
                                       forwardBuffer: Self.forwardBuffer(of: item), subtitles: item.subtitleCues, metadata: item.timedMetadataLog,
                                       continuing: live != nil, onEvent: readerEvents(of: item))
            }
        } catch {
            playerLog.warning("the chosen sound of \(item.asset.location) cannot be read (\(error))")
            eventQueue.async { item.failed(error) }
            return
        }
        applyVolume()
        let current = state.withLockAnnotated { state -> Bool in
            guard state.item === item, let format = state.format else { return false }
            (state.soundStream, state.pictureStream) = Self.streams(of: source)
            // Reversed, or moved meanwhile: the reader goes where the player now stands.
            if state.serial != reading.serial || state.rate < 0 {
                let frame = state.rate > 0 ? readerStartFrameLocked(&state, format: format) : frames(of: state.position, format: format)
                seekReaderLocked(&state, toItemFrame: frame, format: format)
            }
            // Not flushed: what the device holds of the old sound is heard out while the new
            // one's first block comes, and the new one goes on from the frame after it (or,
            // on a schedule, from where the timeline then stands). Only a player that moved
            // or turned meanwhile starts afresh.
            let followsOn = (!whole || takesOver) && state.serial == reading.serial && state.rate >= 0
            applyModeLocked(&state, flush: !followsOn, followsOn: followsOn ? reading.followsOn : nil)
            if !successorsWantedLocked(&state).isEmpty { engine.expectSuccessor(true) }
            return true
        }
        guard current else { return }
        engine.startReader()
        refreshSuccessors()
        // Another variant plays from here: its access log's next event.
        if item.noteVariantMove() {
            eventQueue.async { NotificationCenter.default.post(name: AVPlayerItem.newAccessLogEntryNotification, object: item) }
        }
        // Chosen again, or limited again, while this one opened.
        if wantedStreams(of: item) != Self.streams(of: source) {
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
