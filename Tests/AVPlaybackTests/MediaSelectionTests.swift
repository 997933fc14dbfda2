import Foundation
import Testing
import ChorusTestSupport
@testable import MediaPipeline
import MutexAnnotations
import MediaServer
@testable import AVPlayback

/// Choosing among an item's sound tracks and subtitles: the groups an asset offers, the
/// sound heard for each choice, criteria, and subtitle text delivered on time.
@Suite(.ownThread) struct MediaSelectionTests {
    /// The tone a stretch of `pcm`'s first channel carries, from its zero crossings, in hertz.
    func tone(of pcm: PCM, fromSecond start: Double, seconds: Double) -> Double {
        let first = Int(start * Double(pcm.sampleRate))
        let count = Int(seconds * Double(pcm.sampleRate))
        guard first + count <= pcm.frameCount, count > 1 else { return 0 }
        var crossings = 0
        for frame in first + 1..<first + count {
            let (a, b) = (pcm.samples[(frame - 1) * pcm.channels], pcm.samples[frame * pcm.channels])
            if (a < 0) != (b < 0) { crossings += 1 }
        }
        return Double(crossings) / 2 / seconds
    }

    func groups(_ asset: AVAsset) async throws -> (audible: AVMediaSelectionGroup, legible: AVMediaSelectionGroup) {
        let audible = try await asset.loadMediaSelectionGroup(for: .audible)
        let legible = try await asset.loadMediaSelectionGroup(for: .legible)
        return (try #require(audible), try #require(legible))
    }

    @Test("an asset with several sound tracks and subtitles offers an audible and a legible group, named by language and title")
    func groupsNameTheirOptions() async throws {
        let asset = AVURLAsset(url: try TestMedia.multilingual())
        let characteristics = try await asset.load(.availableMediaCharacteristicsWithMediaSelectionOptions)
        #expect(characteristics == [.audible, .legible])
        let (audible, legible) = try await groups(asset)
        let english = Locale(identifier: "en")
        #expect(audible.options.map(\.extendedLanguageTag) == ["en", "fr", "de"])
        #expect(audible.options.map { $0.displayName(with: english) } == ["English", "French", "Commentary"])
        #expect(audible.options.allSatisfy { $0.mediaType == .audio && $0.isPlayable && $0.hasMediaCharacteristic(.audible) })
        #expect(audible.options[2].hasMediaCharacteristic(.isAuxiliaryContent))
        #expect(audible.options[0].hasMediaCharacteristic(.isMainProgramContent))
        #expect(!audible.allowsEmptySelection)
        #expect(audible.defaultOption == audible.options[0])
        #expect(legible.options.map(\.extendedLanguageTag) == ["en", "fr"])
        #expect(legible.options.allSatisfy { $0.mediaType == .subtitle && $0.isPlayable })
        #expect(legible.options[1].hasMediaCharacteristic(.containsOnlyForcedSubtitles))
        #expect(legible.allowsEmptySelection)
        #expect(legible.defaultOption == nil)
        // Groups and options are values: loaded again, they are equal.
        let again = try #require(asset.mediaSelectionGroup(forMediaCharacteristic: .audible))
        #expect(again == audible && again.options == audible.options)
        // A choice kept as a property list comes back as the same option.
        #expect(audible.mediaSelectionOption(withPropertyList: audible.options[1].propertyList()) == audible.options[1])
        // An asset with one sound track and no subtitles has neither group.
        let plain = AVURLAsset(url: try TestMedia.tone(.flac))
        #expect(try await plain.loadMediaSelectionGroup(for: .audible) == nil)
        #expect(try await plain.loadMediaSelectionGroup(for: .legible) == nil)
    }

    @Test("options filter by preferred languages, by locale and by characteristics")
    func optionsFilter() async throws {
        let (audible, _) = try await groups(AVURLAsset(url: try TestMedia.multilingual()))
        let sorted = AVMediaSelectionGroup.mediaSelectionOptions(from: audible.options, filteredAndSortedAccordingToPreferredLanguages: ["fr-CA", "en"])
        #expect(sorted.map(\.extendedLanguageTag) == ["fr", "en"])
        #expect(AVMediaSelectionGroup.mediaSelectionOptions(from: audible.options, with: Locale(identifier: "de_DE")).map(\.extendedLanguageTag) == ["de"])
        #expect(AVMediaSelectionGroup.mediaSelectionOptions(from: audible.options, withoutMediaCharacteristics: [.isAuxiliaryContent]).count == 2)
        #expect(AVMediaSelectionGroup.mediaSelectionOptions(from: audible.options, withMediaCharacteristics: [.isAuxiliaryContent]) == [audible.options[2]])
        #expect(AVMediaSelectionGroup.playableMediaSelectionOptions(from: audible.options).count == 3)
    }

    @Test("each sound track chosen before play is the one heard", arguments: [0, 1, 2])
    func theChosenSoundIsHeard(track: Int) async throws {
        let url = try TestMedia.multilingual()
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("chorus-selection-\(getpid())-\(track).wav")
        defer { try? FileManager.default.removeItem(at: out) }
        let (audible, _) = try await groups(AVURLAsset(url: url))
        let item = AVPlayerItem(url: url)
        // Options of another load of the same asset choose in this item's.
        let option = audible.options[track]
        item.select(option, in: try #require(item.asset.mediaSelectionGroup(forMediaCharacteristic: .audible)))
        #expect(item.currentMediaSelection.selectedMediaOption(in: audible) == option)
        let player = AVPlayer(playerItem: item, output: .wav(path: out.path))
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
        player.play()
        #expect(await waitUntil(60) { ended.value > 0 })
        player.close()
        let pcm = try PCM(wavFile: out)
        let heard = tone(of: pcm, fromSecond: 1, seconds: 3)
        #expect(abs(heard - TestMedia.multilingualTones[track]) < 2, "heard \(heard) Hz")
        #expect(abs(Double(pcm.frameCount) / Double(pcm.sampleRate) - 5) < 0.01)
    }

    @Test("a sound chosen on a loaded item is heard from the time it stands at, with no time jump")
    func aChoiceOnALoadedItemTakesOverWhereItStands() async throws {
        let url = try TestMedia.multilingual()
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("chorus-selection-\(getpid())-switch.wav")
        defer { try? FileManager.default.removeItem(at: out) }
        let item = AVPlayerItem(url: url)
        let player = AVPlayer(playerItem: item, output: .wav(path: out.path))
        defer { player.close() }
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
        #expect(await waitUntil(20) { item.status == .readyToPlay })
        let sought = Collected<Bool>()
        player.seek(to: CMTime(value: 2, timescale: 1)) { sought.append($0) }
        #expect(await waitUntil(20) { sought.count == 1 })
        let jumped = NotificationCounter(AVPlayerItem.timeJumpedNotification, object: item)
        let changed = NotificationCounter(AVPlayerItem.mediaSelectionDidChangeNotification, object: item)
        let (audible, _) = try await groups(item.asset)
        item.select(audible.options[1], in: audible)
        #expect(changed.value == 1)
        // The new sound is open once the player holds it for its current time.
        #expect(await waitUntil(20) { player.state.withLockAnnotated { $0.soundStream } == audible.options[1].streamIndex })
        #expect(player.currentTime() == CMTime(value: 2, timescale: 1))
        player.play()
        #expect(await waitUntil(60) { ended.value > 0 },
                "not ended: \(player.timeControlStatus) at \(player.currentTime().seconds) s, render \(player.engine.status.phase) serial \(player.engine.status.serial) of \(player.state.withLockAnnotated { $0.serial })")
        #expect(jumped.value == 0)
        player.close()
        let pcm = try PCM(wavFile: out)
        // From 2 s to the end, 3 s of French.
        #expect(abs(Double(pcm.frameCount) / Double(pcm.sampleRate) - 3) < 0.01, "\(pcm.frameCount) frames")
        let heard = tone(of: pcm, fromSecond: 0.05, seconds: 2.9)
        #expect(abs(heard - 660) < 2, "heard \(heard) Hz")
    }

    @Test("a sound chosen while playing keeps the item's time and plays on to the end")
    func aChoiceWhilePlayingKeepsTheTime() async throws {
        let item = AVPlayerItem(url: try TestMedia.multilingual())
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
        let jumped = NotificationCounter(AVPlayerItem.timeJumpedNotification, object: item)
        player.play()
        #expect(await waitUntil(20) { player.currentTime().seconds > 1 })
        let (audible, _) = try await groups(item.asset)
        let before = player.currentTime()
        item.select(audible.options[2], in: audible)
        #expect(await waitUntil(20) { player.state.withLockAnnotated { $0.soundStream } == audible.options[2].streamIndex })
        // Taken over where it stood: the time went on from there, not back to the start.
        #expect(player.currentTime() >= before)
        #expect(await waitUntil(20) { ended.value > 0 })
        #expect(jumped.value == 0)
        #expect(item.currentMediaSelection.selectedMediaOption(in: audible) == audible.options[2])
    }

    @Test("a sound chosen while playing follows on from the old one without a gap: the next frame, heard right after the last")
    func aChoiceWhilePlayingFollowsOnWithoutAGap() async throws {
        let item = AVPlayerItem(url: try TestMedia.multilingual())
        let path = TestMedia.folder.appendingPathComponent("switch-\(UUID().uuidString).cap").path
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0), hostClock: .hostTimeClock, hostMapping: { $0 },
                              capture: try RenderCapture(path: path))
        defer { player.close() }
        player.play()
        #expect(await waitUntil(20) { player.currentTime().seconds > 1 })
        let (audible, _) = try await groups(item.asset)
        let serial = player.engine.status.serial
        item.select(audible.options[1], in: audible)
        #expect(await waitUntil(20) { player.engine.status.serial > serial && player.engine.status.phase == .playing })
        #expect(await waitUntil(5) { player.currentTime().seconds > 3 })
        player.pause()
        let periods = try RenderCaptureLog(path: path).periods
        let old = try #require(periods.last { $0.serial == serial })
        let new = try #require(periods.first { $0.serial > serial })
        // Heard from the instant the old sound's last period ends, from the frame after it.
        let oldEnd = old.host + Int64(old.frames) * 1_000_000_000 / Int64(old.sampleRate)
        #expect(abs(new.host - oldEnd) < 100_000, "the new sound began \(Double(new.host - oldEnd) / 1e6) ms after the old one ended")
        #expect(abs(new.position - (old.position + Double(old.frames))) <= 1, "from frame \(new.position), the old ended at \(old.position + Double(old.frames))")
        #expect(player.state.withLockAnnotated { $0.soundStream } == audible.options[1].streamIndex)
    }

    /// After a gapless join the render thread counts its frames on from the first item's: a
    /// sound chosen then must follow on from where the item itself stands, not from the
    /// item's time plus the length of the item before.
    @Test("a sound chosen after a gapless join follows on from where the item stands")
    func aChoiceAfterAGaplessJoinFollowsOnInTheItemsTime() async throws {
        let first = AVPlayerItem(url: try TestMedia.tone(.flac, seconds: 2, rate: 48_000))
        let item = AVPlayerItem(url: try TestMedia.multilingual(seconds: 8))
        let player = AVQueuePlayer(items: [first, item], output: .null(driftPPM: 0))
        defer { player.close() }
        player.play()
        #expect(await waitUntil(30) { player.currentItem === item && player.currentTime().seconds > 0.5 })
        let (audible, _) = try await groups(item.asset)
        let serial = player.engine.status.serial
        let before = player.currentTime().seconds
        item.select(audible.options[1], in: audible)
        #expect(await waitUntil(20) { player.engine.status.serial > serial && player.engine.status.phase == .playing })
        let after = player.currentTime().seconds
        // A choice takes well under a second here; the item before lasted two.
        #expect(after >= before && after < before + 1, "at \(after) s after the choice, \(before) s before it")
        #expect(player.currentItem === item)
    }

    /// The pictures shown while `seconds` pass, one refresh every 10 ms (on this thread, as a
    /// display's own thread refreshes, not on the tasks' shared pool, which a loaded run
    /// starved to a refresh every quarter second).
    func picturesShown(by layer: AVPlayerLayer, for seconds: Double) -> [VideoFrameInfo] {
        var shown: [VideoFrameInfo] = []
        let end = HostTime.now() + .nanoseconds(Int64(seconds * 1e9))
        while HostTime.now() < end {
            if let picture = layer.picture(forRefreshAt: HostTime.now() + .milliseconds(2)) { shown.append(picture.info) }
            usleep(10_000)
        }
        return shown
    }

    /// A new sound track is read from where the item stands while its pictures are shown:
    /// the pictures' reader reads on, rather than being made afresh and decoding again from
    /// the keyframe before, which held the picture still meanwhile (for up to a group of
    /// pictures' decoding).
    @Test("a choice of sound while pictures are shown leaves the pictures going")
    func aChoiceWhilePicturesAreShownKeepsThePictures() async throws {
        let item = AVPlayerItem(url: try TestMedia.multilingual(seconds: 20, video: true))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let layer = AVPlayerLayer(player: player)
        player.play()
        // Refreshed from the start, as a display is (pictures nobody takes hold the reader up).
        _ = picturesShown(by: layer, for: 1.5)
        let before = try #require(picturesShown(by: layer, for: 0.5).last)
        let (audible, _) = try await groups(item.asset)
        item.select(audible.options[1], in: audible)
        var after: [VideoFrameInfo] = []
        for _ in 0..<100 where after.count < 10 {
            after += picturesShown(by: layer, for: 0.1).filter { $0.serial > before.serial }
        }
        let first = try #require(after.first)
        // The same reader's pictures, numbered on from before, and none from behind.
        #expect(first.number > before.number, "picture \(first.number) after the choice, \(before.number) before")
        #expect(first.itemNanoseconds >= before.itemNanoseconds)
        #expect(after.count >= 10)
        #expect(player.state.withLockAnnotated { $0.soundStream } == audible.options[1].streamIndex)
    }

    @Test("a player's criteria choose each item's sound and subtitles by language, and an explicit choice wins")
    func criteriaChooseByLanguage() async throws {
        let url = try TestMedia.multilingual()
        // The criteria are the player's before it is given the item, as an app sets them up.
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("chorus-selection-\(getpid())-criteria.wav")
        defer { try? FileManager.default.removeItem(at: out) }
        let criteriaPlayer = AVPlayer(playerItem: nil, output: .wav(path: out.path))
        criteriaPlayer.setMediaSelectionCriteria(AVPlayerMediaSelectionCriteria(preferredLanguages: ["de", "fr"], preferredMediaCharacteristics: nil),
                                                 forMediaCharacteristic: .audible)
        criteriaPlayer.setMediaSelectionCriteria(AVPlayerMediaSelectionCriteria(preferredLanguages: ["fr"], preferredMediaCharacteristics: nil),
                                                 forMediaCharacteristic: .legible)
        #expect(criteriaPlayer.mediaSelectionCriteria(forMediaCharacteristic: .legible)?.preferredLanguages == ["fr"])
        let chosenItem = AVPlayerItem(url: url)
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: chosenItem)
        criteriaPlayer.replaceCurrentItem(with: chosenItem)
        criteriaPlayer.play()
        #expect(await waitUntil(60) { ended.value > 0 })
        criteriaPlayer.close()
        let pcm = try PCM(wavFile: out)
        #expect(abs(tone(of: pcm, fromSecond: 1, seconds: 3) - 880) < 2)

        let item = AVPlayerItem(url: url)
        let (audible, legible) = try await groups(item.asset)
        item.select(audible.options[0], in: audible)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        player.setMediaSelectionCriteria(AVPlayerMediaSelectionCriteria(preferredLanguages: ["fr"], preferredMediaCharacteristics: nil),
                                         forMediaCharacteristic: .audible)
        player.setMediaSelectionCriteria(AVPlayerMediaSelectionCriteria(preferredLanguages: ["fr"], preferredMediaCharacteristics: nil),
                                         forMediaCharacteristic: .legible)
        #expect(await waitUntil(20) { item.status == .readyToPlay })
        let selection = item.currentMediaSelection
        #expect(selection.selectedMediaOption(in: audible) == audible.options[0])
        #expect(selection.selectedMediaOption(in: legible) == legible.options[1])
        #expect(!selection.mediaSelectionCriteriaCanBeAppliedAutomatically(to: audible))
        #expect(player.state.withLockAnnotated { $0.soundStream } == audible.options[0].streamIndex)
    }

    @Test("choices that cannot be made are ignored: nil sound, an option of another asset, a group of another asset")
    func impossibleChoicesAreIgnored() async throws {
        let item = AVPlayerItem(url: try TestMedia.multilingual())
        let (audible, legible) = try await groups(item.asset)
        let other = AVURLAsset(url: try TestMedia.multilingual(seconds: 3))
        let (otherAudible, _) = try await groups(other)
        let changed = NotificationCounter(AVPlayerItem.mediaSelectionDidChangeNotification, object: item)
        item.select(nil, in: audible)
        item.select(otherAudible.options[1], in: audible)
        item.select(otherAudible.options[1], in: otherAudible)
        item.select(legible.options[0], in: audible)
        #expect(changed.value == 0)
        #expect(item.currentMediaSelection.selectedMediaOption(in: audible) == audible.options[0])
        // Subtitles can be turned off, and choosing what is chosen changes nothing.
        item.select(legible.options[0], in: legible)
        item.select(legible.options[0], in: legible)
        item.select(nil, in: legible)
        #expect(changed.value == 2)
        #expect(item.currentMediaSelection.selectedMediaOption(in: legible) == nil)
    }

    /// Gathers what a legible output's delegate hears.
    final class LegibleLog: AVPlayerItemLegibleOutputPushDelegate, @unchecked Sendable {
        let lock = NSLock()
        var deliveries: [(time: CMTime, lines: [String])] = []
        var flushes = 0
        func legibleOutput(_ output: AVPlayerItemLegibleOutput, didOutputAttributedStrings strings: [NSAttributedString],
                           nativeSampleBuffers nativeSamples: [Any], forItemTime itemTime: CMTime) {
            lock.withLock { deliveries.append((itemTime, strings.map(\.string))) }
        }
        func outputSequenceWasFlushed(_ output: AVPlayerItemOutput) { lock.withLock { flushes += 1 } }
        var all: [(time: CMTime, lines: [String])] { lock.withLock { deliveries } }
    }

    /// Plays `item` to its end with a legible output added, and returns what the output was
    /// told, with the player (closed by the caller).
    func playToTheEnd(_ item: AVPlayerItem) async -> (log: LegibleLog, player: AVPlayer) {
        let output = AVPlayerItemLegibleOutput()
        let log = LegibleLog()
        output.setDelegate(log, queue: DispatchQueue(label: "legible"))
        item.add(output)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
        player.play()
        #expect(await waitUntil(20) { ended.value > 0 })
        return (log, player)
    }

    @Test("a legible output hears each subtitle line of the chosen track at its time, and an empty list when it ends")
    func legibleOutputDeliversTheChosenLines() async throws {
        let item = AVPlayerItem(url: try TestMedia.multilingual())
        let (_, legible) = try await groups(item.asset)
        item.select(legible.options[0], in: legible)
        let (log, player) = await playToTheEnd(item)
        defer { player.close() }
        let shown = log.all.filter { !$0.lines.isEmpty }
        #expect(shown.map(\.lines) == TestMedia.englishCues.map { [$0.text] })
        for (delivery, cue) in zip(shown, TestMedia.englishCues) {
            #expect(abs(delivery.time.seconds - cue.start) < 0.001, "\(cue.text) at \(delivery.time.seconds)")
        }
        // Each line is cleared before the next shows, at its end.
        let all = log.all
        let cleared = all.indices.filter { all[$0].lines.isEmpty && $0 > 0 && !all[$0 - 1].lines.isEmpty }.map { all[$0].time.seconds }
        #expect(cleared.count == TestMedia.englishCues.count)
        for (time, cue) in zip(cleared, TestMedia.englishCues) {
            #expect(abs(time - cue.end) < 0.001, "\(cue.text) cleared at \(time)")
        }
        #expect(player.currentSubtitleLines().isEmpty)
    }

    @Test("an HLS master playlist's WebVTT subtitle renditions are legible options, named, with their language and roles")
    func hlsSubtitleRenditionsAreOptions() async throws {
        let (master, _) = try TestMedia.hlsWithSubtitles(seconds: 4)
        let asset = AVURLAsset(url: master)
        let legible = try #require(try await asset.loadMediaSelectionGroup(for: .legible))
        #expect(legible.options.map(\.displayName) == ["English", "Français"])
        #expect(legible.options.map(\.extendedLanguageTag) == ["en", "fr"])
        #expect(legible.options.allSatisfy { $0.isPlayable })
        #expect(legible.defaultOption == legible.options.first)
        #expect(legible.options[1].hasMediaCharacteristic(.containsOnlyForcedSubtitles))
        // One sound: nothing to choose, so no audible group (as for a playlist without
        // audio renditions on Apple's players).
        #expect(try await asset.loadMediaSelectionGroup(for: .audible) == nil)
        // The renditions are subtitle tracks of the asset, numbered past FFmpeg's streams.
        let subtitles = try await asset.loadTracks(withMediaType: .subtitle)
        #expect(subtitles.count == 2)
    }

    @Test("a chosen HLS subtitle rendition, served over HTTP, shows each line at its time")
    func hlsSubtitleRenditionLinesArriveOnTime() async throws {
        let (master, files) = try TestMedia.hlsWithSubtitles(seconds: 4)
        let server = try MediaHTTPServer(address: "127.0.0.1", port: 0)
        defer { server.stop() }
        for name in files { _ = server.publish(master.deletingLastPathComponent().appendingPathComponent(name), id: "renditions") }
        let path = server.publish(master, id: "renditions")
        let item = AVPlayerItem(url: try #require(URL(string: "http://127.0.0.1:\(server.port)\(path)")))
        let legible = try #require(try await item.asset.loadMediaSelectionGroup(for: .legible))
        item.select(legible.options[0], in: legible)
        let (log, player) = await playToTheEnd(item)
        defer { player.close() }
        let expected = try #require(TestMedia.renditionCues["en"])
        let shown = log.all.filter { !$0.lines.isEmpty }
        #expect(shown.map(\.lines) == expected.map { [$0.text] })
        for (delivery, cue) in zip(shown, expected) {
            #expect(abs(delivery.time.seconds - cue.start) < 0.001, "\(cue.text) at \(delivery.time.seconds)")
        }
    }

    @Test("a subtitle rendition that points nowhere is an option that shows nothing, says why, and the item plays on")
    func aMissingRenditionShowsNothing() async throws {
        let (master, _) = try TestMedia.hlsWithSubtitles(seconds: 2)
        let broken = master.deletingLastPathComponent().appendingPathComponent("broken.m3u8")
        let text = try String(contentsOf: master, encoding: .utf8).replacingOccurrences(of: "URI=\"en.m3u8\"", with: "URI=\"nowhere.m3u8\"")
        try text.write(to: broken, atomically: true, encoding: .utf8)
        let item = AVPlayerItem(url: broken)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
        #expect(await waitUntil(20) { item.status == .readyToPlay })
        let legible = try #require(item.asset.mediaSelectionGroup(forMediaCharacteristic: .legible))
        item.select(legible.options[0], in: legible)
        player.play()
        #expect(await waitUntil(20) { ended.value > 0 })
        #expect(item.subtitleCues.cues(stream: HLSRenditions.firstStreamIndex).isEmpty)
        #expect(item.subtitleCues.failure(stream: HLSRenditions.firstStreamIndex) != nil)
        // The other rendition, chosen now, is read and shows.
        item.select(legible.options[1], in: legible)
        #expect(await waitUntil(10) { item.subtitleCues.cues(stream: HLSRenditions.firstStreamIndex + 1).map(\.text) == ["Bonjour."] })
    }

    @Test("only the chosen HLS subtitle renditions are fetched: another is read once it is chosen")
    func onlyChosenRenditionsAreRead() async throws {
        let (master, _) = try TestMedia.hlsWithSubtitles(seconds: 2)
        let item = AVPlayerItem(url: master)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
        #expect(await waitUntil(20) { item.status == .readyToPlay })
        player.play()
        #expect(await waitUntil(20) { ended.value > 0 })
        // English is the default and was read; French, not chosen, was never fetched. (Read
        // whatever was chosen, as before, both were: one request stream per language.)
        let english = HLSRenditions.firstStreamIndex, french = HLSRenditions.firstStreamIndex + 1
        #expect(item.subtitleCues.cues(stream: english).count == TestMedia.renditionCues["en"]?.count)
        #expect(item.subtitleCues.cues(stream: french).isEmpty)
        let legible = try #require(item.asset.mediaSelectionGroup(forMediaCharacteristic: .legible))
        item.select(legible.options[1], in: legible)
        #expect(await waitUntil(10) { item.subtitleCues.cues(stream: french).map(\.text) == ["Bonjour."] })
    }

    @Test("ASS subtitles arrive as plain text, their styling tags removed and their breaks kept")
    func assLinesArrivePlain() async throws {
        let item = AVPlayerItem(url: try TestMedia.multilingual())
        let (_, legible) = try await groups(item.asset)
        item.select(legible.options[1], in: legible)
        let player = AVPlayer(playerItem: item, output: .wav(path: "/dev/null"))
        defer { player.close() }
        let ended = NotificationCounter(AVPlayerItem.didPlayToEndTimeNotification, object: item)
        player.play()
        #expect(await waitUntil(20) { ended.value > 0 })
        let cues = item.subtitleCues.cues(stream: legible.options[1].streamIndex)
        #expect(cues.map(\.text) == ["Bonsoir, mes amis.", "Deux lignes,\nla seconde ici."])
        #expect(cues.map(\.start.seconds) == [1, 3])
        #expect(cues.map(\.end.seconds) == [2, 4])
    }

    @Test("a cue store keeps lines in order, once each, and tells what shows when")
    func cueStore() {
        let cues = SubtitleCues()
        func seconds(_ n: Int64) -> CMTime { CMTime(value: n, timescale: 1) }
        let second = seconds(1)
        cues.add(SubtitleCue(start: seconds(3), end: seconds(4), text: "c"), stream: 2)
        cues.add(SubtitleCue(start: second, end: seconds(2), text: "a"), stream: 2)
        cues.add(SubtitleCue(start: second, end: seconds(2), text: "a"), stream: 2)
        cues.add(SubtitleCue(start: seconds(5), end: .invalid, text: "open"), stream: 2)
        cues.add(SubtitleCue(start: seconds(6), end: .invalid, text: "next"), stream: 2)
        #expect(cues.cues(stream: 2).map(\.text) == ["a", "c", "open", "next"])
        #expect(cues.cues(stream: 2, at: CMTime(value: 3, timescale: 2)).map(\.text) == ["a"])
        #expect(cues.cues(stream: 2, at: seconds(2)).isEmpty)
        #expect(cues.cues(stream: 2, at: CMTime(value: 11, timescale: 2)).map(\.text) == ["open"])
        #expect(cues.cues(stream: 2, at: CMTime(value: 13, timescale: 2)).map(\.text) == ["next"])
        #expect(cues.cues(stream: 2, at: seconds(20)).isEmpty)
        #expect(cues.nextChange(stream: 2, after: .zero) == second)
        #expect(cues.nextChange(stream: 2, after: CMTime(value: 3, timescale: 2)) == seconds(2))
        #expect(cues.cues(stream: 7, at: second).isEmpty)
    }

    @Test("ASS event text becomes plain text", arguments: [
        ("0,0,Default,,0,0,0,,{\\i1}Hello{\\i0} there", "Hello there"),
        ("0,0,Default,,0,0,0,,One\\NTwo", "One\nTwo"),
        ("0,0,Default,,0,0,0,,a\\hb, with commas, kept", "a b, with commas, kept"),
        ("0,0,Default,,0,0,0,,{\\pos(10,10)}", ""),
    ])
    func assText(line: String, plain: String) {
        #expect(SubtitleCues.plainText(ofASSLine: line) == plain)
    }

    @Test("container language codes become BCP 47 tags", arguments: [
        ("eng", "en"), ("fre", "fr"), ("fra", "fr"), ("ger", "de"), ("chi", "zh"), ("pt-BR", "pt-BR"), ("und", nil), ("", nil),
    ] as [(String, String?)])
    func languageTags(code: String, tag: String?) {
        #expect(AVMediaSelectionOption.languageTag(code) == tag)
    }
}
