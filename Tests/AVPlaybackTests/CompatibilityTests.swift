import Foundation
import Testing
import ChorusTestSupport
import MutexAnnotations
import Synchronization
import AVPlayback

// Code as an app ported from Apple's platforms writes it: CoreMedia's overlay has no `*` for
// CMTime, so apps declare their own, which must not be ambiguous with anything of the library.
private extension CMTime {
    static func * (lhs: CMTime, rhs: Int32) -> CMTime {
        CMTimeMultiply(lhs, multiplier: rhs)
    }
}

/// A one-second tone of `kind` tagged with `tags` by ffmpeg's `-metadata`, in the tests' media
/// folder under a name of its own.
private func taggedTone(_ kind: TestMedia.Kind, tags: KeyValuePairs<String, String>) throws -> URL {
    let url = TestMedia.folder.appendingPathComponent("tagged-\(UUID().uuidString).\(kind.fileExtension)")
    let metadata = tags.flatMap { ["-metadata", "\($0.key)=\($0.value)"] }
    let result = try Run.command("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=1"]
                                 + kind.codecArguments + metadata + [url.path])
    guard result.status == 0 else { throw TestMediaError.ffmpegFailed(url.lastPathComponent, result.standardError) }
    return url
}

/// Collects values handed to an observation's handler, from whatever thread it runs on.
private final class Recorder<Value: Sendable>: Sendable {
    private let stored = Mutex<[Value]>([])
    func append(_ value: Value) { stored.withLockAnnotated { $0.append(value) } }
    var values: [Value] { stored.withLockAnnotated { $0 } }
}

@Suite(.ownThread) struct CompatibilityTests {
    // MARK: - Source compatibility

    @Test("An app's own CMTime * Int32 operator is used without ambiguity")
    func appMultiplyOperator() {
        let t = CMTime(value: 3, timescale: 2)
        let doubled = t * 2
        #expect(doubled == CMTime(value: 3, timescale: 1))
        #expect(doubled.timescale == 2)
    }

    @Test("Dispatch's unit constants and kCFAllocatorDefault compile beside Foundation")
    func platformConstants() {
        let deadline = DispatchTime.now() + .nanoseconds(Int(NSEC_PER_MSEC))
        #expect(deadline > DispatchTime.now() - .seconds(1))
        let seconds = Double(NSEC_PER_SEC) / Double(NSEC_PER_USEC * USEC_PER_SEC)
        #expect(seconds == 1)
        var timebase: CMTimebase?
        #expect(CMTimebaseCreateWithSourceClock(allocator: kCFAllocatorDefault, sourceClock: CMClockGetHostTimeClock(), timebaseOut: &timebase) == noErr)
        #expect(timebase != nil)
        let time = CMTime(value: Int64(NSEC_PER_SEC), timescale: Int32(NSEC_PER_SEC))
        #expect(CMTimeMakeFromDictionary(CMTimeCopyAsDictionary(time, allocator: kCFAllocatorDefault)) == CMTime(value: 1, timescale: 1))
    }

    @Test("Async seeks and prerolls can be awaited without using their result")
    func discardableAsyncResults() async {
        let player = AVPlayer(playerItem: nil, output: .null(driftPPM: 0))
        defer { player.close() }
        await player.seek(to: .zero)
        await player.seek(to: .zero, toleranceBefore: .zero, toleranceAfter: .zero)
        await player.preroll(atRate: 1)
        #expect(player.currentItem == nil)
    }

    // MARK: - CGRect.applying

    @Test("A rectangle under a transform becomes the bounding box of its moved corners")
    func rectangleApplying() {
        let rect = CGRect(x: 1, y: 2, width: 4, height: 2)
        let turned = rect.applying(CGAffineTransform(rotationAngle: .pi / 2))
        #expect(abs(turned.minX - -4) < 1e-9 && abs(turned.minY - 1) < 1e-9)
        #expect(abs(turned.width - 2) < 1e-9 && abs(turned.height - 4) < 1e-9)
        let moved = rect.applying(CGAffineTransform(translationX: 10, y: -2).concatenating(CGAffineTransform(scaleX: -1, y: 2)))
        #expect(moved == CGRect(x: -15, y: 0, width: 4, height: 4))
        let eighth = CGRect(x: 0, y: 0, width: 1, height: 1).applying(CGAffineTransform(rotationAngle: .pi / 4))
        #expect(abs(eighth.width - 2.0.squareRoot()) < 1e-9 && abs(eighth.height - 2.0.squareRoot()) < 1e-9)
        #expect(CGRect.null.applying(CGAffineTransform(translationX: 1, y: 1)).isNull)
        #expect(rect.applying(.identity) == rect)
    }

    // MARK: - AVPlayerItem settings

    @Test("An item's network and variant settings start at Apple's defaults")
    func itemSettingDefaults() throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.mp3, seconds: 1))
        #expect(item.preferredPeakBitRate == 0)
        #expect(item.preferredMaximumResolution == .zero)
        #expect(!item.canUseNetworkResourcesForLiveStreamingWhilePaused)
        #expect(!item.automaticallyPreservesTimeOffsetFromLive)
        #expect(!item.configuredTimeOffsetFromLive.isValid)
        #expect(item.audioMix == nil)
    }

    @Test("An item's network and variant settings keep what is set and tell their observers")
    func itemSettingsAreObserved() throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.mp3, seconds: 1))
        let rates = Recorder<Double>(), sizes = Recorder<CGSize>(), offsets = Recorder<CMTime>(), flags = Recorder<Bool>()
        let observations = [
            item.observe(\.preferredPeakBitRate, options: [.new]) { _, change in change.newValue.map(rates.append) },
            item.observe(\.preferredMaximumResolution, options: [.new]) { _, change in change.newValue.map(sizes.append) },
            item.observe(\.configuredTimeOffsetFromLive, options: [.new]) { _, change in change.newValue.map(offsets.append) },
            item.observe(\.canUseNetworkResourcesForLiveStreamingWhilePaused, options: [.new]) { _, change in change.newValue.map(flags.append) },
        ]
        item.preferredPeakBitRate = 2_000_000
        item.preferredMaximumResolution = CGSize(width: 1280, height: 720)
        item.configuredTimeOffsetFromLive = CMTime(value: 12, timescale: 1)
        item.canUseNetworkResourcesForLiveStreamingWhilePaused = true
        item.automaticallyPreservesTimeOffsetFromLive = true
        #expect(item.preferredPeakBitRate == 2_000_000)
        #expect(item.preferredMaximumResolution == CGSize(width: 1280, height: 720))
        #expect(item.configuredTimeOffsetFromLive == CMTime(value: 12, timescale: 1))
        #expect(item.canUseNetworkResourcesForLiveStreamingWhilePaused)
        #expect(item.automaticallyPreservesTimeOffsetFromLive)
        #expect(rates.values == [2_000_000])
        #expect(sizes.values == [CGSize(width: 1280, height: 720)])
        #expect(offsets.values == [CMTime(value: 12, timescale: 1)])
        #expect(flags.values == [true])
        observations.forEach { $0.invalidate() }
    }

    @Test("An item keeps its own copy of an audio mix, which later changes to the mix do not reach")
    func itemCopiesItsAudioMix() throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.mp3, seconds: 1))
        let parameters = AVMutableAudioMixInputParameters(track: nil)
        parameters.trackID = 2
        parameters.setVolume(0.5, at: .zero)
        let mix = AVMutableAudioMix()
        mix.inputParameters = [parameters]
        let seen = Recorder<Bool>()
        let observation = item.observe(\.audioMix, options: [.new]) { _, change in seen.append(change.newValue??.inputParameters.count == 1) }
        item.audioMix = mix
        mix.inputParameters = []
        parameters.setVolume(0.1, at: .zero)
        let kept = try #require(item.audioMix)
        #expect(!(kept is AVMutableAudioMix))
        #expect(kept.inputParameters.count == 1)
        #expect(kept.inputParameters.first?.trackID == 2)
        var volume: Float = 0
        #expect(kept.inputParameters.first?.getVolumeRamp(for: CMTime(value: 1, timescale: 1), startVolume: &volume, endVolume: nil, timeRange: nil) == true)
        #expect(volume == 0.5)
        #expect(seen.values == [true])
        item.audioMix = nil
        #expect(item.audioMix == nil)
        observation.invalidate()
    }

    // MARK: - Audio mixes

    @Test("Input parameters take their track's ID, or none without a track")
    func inputParametersTrack() async throws {
        let asset = AVURLAsset(url: try TestMedia.tone(.aac, seconds: 1))
        let track = try #require(try await asset.load(.tracks).first)
        #expect(AVMutableAudioMixInputParameters(track: track).trackID == track.trackID)
        #expect(AVMutableAudioMixInputParameters(track: nil).trackID == kCMPersistentTrackID_Invalid)
    }

    @Test("Volume is 1 before any setting, held after a set volume, and linear through a ramp")
    func volumeRamps() {
        let parameters = AVMutableAudioMixInputParameters()
        let second = { (seconds: Int64) in CMTime(value: seconds, timescale: 1) }
        parameters.setVolumeRamp(fromStartVolume: 1, toEndVolume: 0, timeRange: CMTimeRange(start: second(2), duration: second(4)))
        parameters.setVolume(0.25, at: second(10))
        #expect(parameters.volume(at: second(1)) == 1)
        #expect(parameters.volume(at: second(3)) == 0.75)
        #expect(parameters.volume(at: second(8)) == 0)
        #expect(parameters.volume(at: second(20)) == 0.25)

        var start: Float = -1, end: Float = -1
        var range = CMTimeRange.invalid
        #expect(!parameters.getVolumeRamp(for: second(1), startVolume: &start, endVolume: &end, timeRange: &range))
        #expect(parameters.getVolumeRamp(for: second(3), startVolume: &start, endVolume: &end, timeRange: &range))
        #expect(start == 1 && end == 0 && range == CMTimeRange(start: second(2), duration: second(4)))
        #expect(parameters.getVolumeRamp(for: second(7), startVolume: &start, endVolume: &end, timeRange: &range))
        #expect(start == 0 && end == 0 && range == CMTimeRange(start: second(6), end: second(10)))
        #expect(parameters.getVolumeRamp(for: second(30), startVolume: &start, endVolume: &end, timeRange: &range))
        #expect(start == 0.25 && end == 0.25 && range.start == second(10) && range.end.isPositiveInfinity)

        parameters.setVolume(0.5, at: second(10))
        #expect(parameters.volume(at: second(20)) == 0.5)
    }

    @Test("A mix's copies are immutable or mutable as asked, with their own parameters")
    func mixCopies() throws {
        let parameters = AVMutableAudioMixInputParameters()
        parameters.setVolume(0.5, at: .zero)
        let mix = AVMutableAudioMix()
        mix.inputParameters = [parameters]
        let frozen = try #require(mix.copy() as? AVAudioMix)
        #expect(!(frozen is AVMutableAudioMix))
        #expect(!(frozen.inputParameters.first is AVMutableAudioMixInputParameters))
        let editable = try #require(frozen.mutableCopy() as? AVMutableAudioMix)
        let editableParameters = try #require(editable.inputParameters.first as? AVMutableAudioMixInputParameters)
        editableParameters.setVolume(0.1, at: .zero)
        #expect(frozen.inputParameters.first?.volume(at: .zero) == 0.5)
        #expect(editableParameters.volume(at: .zero) == Float(0.1))
    }

    // MARK: - AVPlayer and AVPlayerItem additions

    @Test("preventsDisplaySleepDuringVideoPlayback defaults to true, is kept per player and observed")
    func displaySleepSetting() {
        let first = AVPlayer(playerItem: nil, output: .null(driftPPM: 0))
        let second = AVPlayer(playerItem: nil, output: .null(driftPPM: 0))
        defer { first.close(); second.close() }
        #expect(first.preventsDisplaySleepDuringVideoPlayback)
        let seen = Recorder<Bool>()
        let observation = first.observe(\.preventsDisplaySleepDuringVideoPlayback, options: [.new]) { _, change in change.newValue.map(seen.append) }
        first.preventsDisplaySleepDuringVideoPlayback = false
        #expect(!first.preventsDisplaySleepDuringVideoPlayback)
        #expect(second.preventsDisplaySleepDuringVideoPlayback)
        #expect(seen.values == [false])
        first.preventsDisplaySleepDuringVideoPlayback = true
        #expect(first.preventsDisplaySleepDuringVideoPlayback)
        observation.invalidate()
    }

    @Test("A player made after another is gone does not inherit its display sleep setting")
    func displaySleepSettingDoesNotOutliveItsPlayer() {
        for _ in 0..<20 {
            let player = AVPlayer(playerItem: nil, output: .null(driftPPM: 0))
            #expect(player.preventsDisplaySleepDuringVideoPlayback)
            player.preventsDisplaySleepDuringVideoPlayback = false
            player.close()
        }
    }

    @Test("An item without dates or network logs says so with nil, and the log notifications have Apple's names")
    func datesAndLogs() throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.mp3, seconds: 1))
        #expect(item.currentDate() == nil)
        #expect(item.accessLog() == nil)
        #expect(item.errorLog() == nil)
        #expect(AVPlayerItem.newAccessLogEntryNotification.rawValue == "AVPlayerItemNewAccessLogEntryNotification")
        #expect(AVPlayerItem.newErrorLogEntryNotification.rawValue == "AVPlayerItemNewErrorLogEntryNotification")
        #expect(NSNotification.Name.AVPlayerItemNewAccessLogEntry == AVPlayerItem.newAccessLogEntryNotification)
        #expect(NSNotification.Name.AVPlayerItemNewErrorLogEntry == AVPlayerItem.newErrorLogEntryNotification)
    }

    // MARK: - Metadata

    @Test("A file's tags (an MP3's ID3 frames, an M4A's iTunes atoms) load as common metadata", arguments: [TestMedia.Kind.mp3, .aac])
    func commonMetadata(kind: TestMedia.Kind) async throws {
        let url = try taggedTone(kind, tags: ["title": "Étude № 5", "artist": "The Testers", "album": "Signals", "date": "2024", "genre": "Jazz", "track": "3/12"])
        let asset = AVURLAsset(url: url)
        let common = try await asset.load(.commonMetadata)
        let title = try #require(AVMetadataItem.metadataItems(from: common, filteredByIdentifier: .commonIdentifierTitle).first)
        #expect(title.stringValue == "Étude № 5")
        #expect(title.commonKey == .commonKeyTitle)
        #expect(title.keySpace == .common)
        #expect(title.value as? String == "Étude № 5")
        let loaded: String? = try await title.load(.stringValue)
        #expect(loaded == "Étude № 5")
        #expect(common.first { $0.commonKey == .commonKeyArtist }?.stringValue == "The Testers")
        #expect(common.first { $0.commonKey == .commonKeyAlbumName }?.stringValue == "Signals")
        #expect(common.first { $0.commonKey == .commonKeyType }?.stringValue == "Jazz")
        let date = try #require(common.first { $0.commonKey == .commonKeyCreationDate })
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = try #require(TimeZone(identifier: "UTC"))
        let loadedDate: Date? = try await date.load(.dateValue)
        let when = try #require(loadedDate)
        #expect(utc.component(.year, from: when) == 2024)
        #expect(date.numberValue == 2024)
        #expect(AVMetadataItem.metadataItems(from: common, withKey: AVMetadataKey.commonKeyArtist, keySpace: .common).count == 1)
        #expect(asset.commonMetadata.count == common.count)
    }

    @Test("An asset's whole-file properties: its creation date and lyrics from its tags, the values a file always has, the keys of the older API", arguments: [TestMedia.Kind.mp3, .aac])
    func assetProperties(kind: TestMedia.Kind) async throws {
        let url = try taggedTone(kind, tags: ["title": "Song", "date": "2021", "lyrics": "la la la"])
        let asset = AVURLAsset(url: url)
        let (creation, lyrics, hint, transform) = try await asset.load(.creationDate, .lyrics, .overallDurationHint, .preferredTransform)
        #expect(creation?.numberValue == 2021)
        #expect(creation?.commonKey == .commonKeyCreationDate)
        #expect(lyrics == "la la la")
        #expect(hint == asset.duration && hint.isNumeric)
        #expect(transform == .identity)
        #expect(asset.creationDate?.numberValue == 2021 && asset.lyrics == "la la la")
        #expect(asset.isReadable && asset.providesPreciseDurationAndTiming)
        #expect(asset.preferredRate == 1 && asset.preferredVolume == 1)
        #expect(!asset.isExportable && !asset.isComposable)
        let (exportable, composable) = try await asset.load(.isExportable, .isComposable)
        #expect(!exportable && !composable)
        // The older API knows each of them as a key.
        for key in ["creationDate", "lyrics", "exportable", "composable", "preferredTransform", "overallDurationHint"] {
            var error: NSError?
            #expect(asset.statusOfValue(forKey: key, error: &error) == .loaded, "\(key): \(error.map { "\($0)" } ?? "")")
        }
        // A file with no such tags has none.
        let plain = AVURLAsset(url: try TestMedia.tone(.wav, seconds: 1))
        #expect(plain.creationDate == nil && plain.lyrics == nil)
        // Media that cannot be opened is not readable, and has no duration to hint at.
        let missing = AVURLAsset(url: URL(fileURLWithPath: "/nonexistent/missing.mp3"))
        #expect(!missing.isReadable && !missing.overallDurationHint.isValid)
    }

    @Test("An item keeps the asset keys it was made with")
    func automaticallyLoadedAssetKeys() throws {
        let asset = AVURLAsset(url: try TestMedia.tone(.wav, seconds: 1))
        // As Apple's header has it: the plain initializer loads the duration.
        #expect(AVPlayerItem(asset: asset).automaticallyLoadedAssetKeys == ["duration"])
        #expect(AVPlayerItem(asset: asset, automaticallyLoadedAssetKeys: nil).automaticallyLoadedAssetKeys.isEmpty)
        #expect(AVPlayerItem(asset: asset, automaticallyLoadedAssetKeys: ["playable", "duration"]).automaticallyLoadedAssetKeys
                == ["playable", "duration"])
        #expect(AVPlayerItem(asset: asset, automaticallyLoadedAssetKeys: [.isPlayable, .duration]).automaticallyLoadedAssetKeys
                == ["playable", "duration"])
    }

    @Test("All of a file's tags load as metadata under FFmpeg's names")
    func allMetadata() async throws {
        let url = try taggedTone(.mp3, tags: ["title": "Signal", "track": "3/12", "album_artist": "Various"])
        let asset = AVURLAsset(url: url)
        let metadata = try await asset.load(.metadata)
        let track = try #require(AVMetadataItem.metadataItems(from: metadata, withKey: "track", keySpace: .ffmpeg).first)
        #expect(track.stringValue == "3/12")
        #expect(track.numberValue == nil)
        #expect(track.commonKey == nil)
        #expect(track.identifier == AVMetadataIdentifier("ffmpeg/track"))
        #expect(metadata.contains { $0.key as? String == "album_artist" && $0.stringValue == "Various" })
        #expect(metadata.contains { $0.commonKey == .commonKeyTitle && $0.keySpace == .ffmpeg })
        var error: NSError?
        #expect(asset.statusOfValue(forKey: "commonMetadata", error: &error) == .loaded)
    }

    @Test("A file that names no work has no title, artist or album, only the software that wrote it")
    func untaggedFile() async throws {
        let asset = AVURLAsset(url: try TestMedia.tone(.wav, seconds: 1))
        let common = try await asset.load(.commonMetadata)
        #expect(common.allSatisfy { $0.commonKey == .commonKeySoftware })
        #expect(common.first?.stringValue?.hasPrefix("Lavf") ?? true)
    }
}
