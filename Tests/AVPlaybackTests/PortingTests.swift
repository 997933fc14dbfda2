import Foundation
import Testing
import ChorusTestSupport
@testable import AVPlayback
import MediaClock
import MediaPipeline
import Synchronization

/// Code as it is written for Apple's playback classes, compiled and run unchanged.
@Suite(.ownThread) struct PortingTests {
    @Test("an asset's tracks load by media type, and a track's properties load as an asset's do")
    func assetsAndTracksLoadAsOnApplePlatforms() async throws {
        let asset = AVAsset(url: try TestMedia.identityVideo(seconds: 1, rate: 25, rotate: 90, withSound: true))
        #expect(!asset.hasProtectedContent)
        let videos = try await asset.loadTracks(withMediaType: .video)
        let audios = try await asset.loadTracks(withMediaType: .audio)
        #expect(videos.count == 1)
        #expect(audios.count == 1)
        let video = try #require(videos.first)
        let (size, transform, rate) = try await video.load(.naturalSize, .preferredTransform, .nominalFrameRate)
        #expect(size == CGSize(width: 320, height: 240))
        #expect(transform == video.preferredTransform)
        #expect(rate == 25)
        let (kind, playable) = try await audios[0].load(.mediaType, .isPlayable)
        #expect(kind == .audio)
        #expect(playable)
        let byID = try await asset.loadTrack(withTrackID: video.trackID)
        #expect(byID?.trackID == video.trackID)
        // By characteristic, as by media type.
        #expect(try await asset.loadTracks(withMediaCharacteristic: .visual) == videos)
        #expect(asset.tracks(withMediaCharacteristic: .audible) == audios)
        #expect(video.hasMediaCharacteristic(.frameBased) && !video.hasMediaCharacteristic(.audible))
        #expect(audios[0].hasMediaCharacteristic(.isMainProgramContent))
        #expect(try await asset.loadTracks(withMediaCharacteristic: .legible).isEmpty)
    }

    @Test("seek and preroll can be awaited")
    func seekAndPrerollAwait() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 2, rate: 48_000))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        let sought = await player.seek(to: CMTime(value: 1, timescale: 1))
        #expect(sought)
        #expect(player.currentTime() == CMTime(value: 1, timescale: 1))
        let prerolled = await player.preroll(atRate: 1)
        #expect(prerolled)
        let itemSought = await item.seek(to: CMTime(value: 1, timescale: 2))
        #expect(itemSought)
    }

    @Test("boundary times given as NSValues fire as the time crosses them")
    func boundaryTimesAsValues() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1, rate: 48_000))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let fired = Atomic<Int>(0)
        let times = [NSValue(time: CMTime(value: 200, timescale: 1000)), NSValue(time: CMTime(value: 400, timescale: 1000))]
        let token = player.addBoundaryTimeObserver(forTimes: times, queue: DispatchQueue(label: "test.boundary")) {
            fired.add(1, ordering: .relaxed)
        }
        defer { player.removeTimeObserver(token) }
        player.play()
        #expect(await waitUntil(10) { fired.load(ordering: .relaxed) == 2 })
    }

    @Test("times and ranges go into NSValues and come back exactly")
    func valuesHoldTimes() {
        let time = CMTime(value: 1001, timescale: 30000)
        #expect(NSValue(time: time).timeValue == time)
        #expect(NSValue(time: .indefinite).timeValue.isIndefinite)
        let range = CMTimeRange(start: time, duration: CMTime(value: 3, timescale: 1))
        #expect(NSValue(timeRange: range).timeRangeValue == range)
        // A value that holds no time gives none.
        #expect(!NSNumber(value: 3).timeValue.isValid)
        // Described as CoreMedia describes it, the text CMTimeShow prints.
        #expect(CMTimeCopyDescription(allocator: nil, time: time) == "{1001/30000 = 0.033}")
        #expect(CMTimeCopyDescription(allocator: nil, time: .indefinite) == "{INDEFINITE}")
        let mapping = CMTimeMapping(source: range, target: CMTimeRange(start: .zero, duration: time))
        #expect(NSValue(timeMapping: mapping).timeMappingValue == mapping)
        #expect(NSValue(time: time).timeMappingValue == .invalid)
    }

    @Test("Apple's names port as they are: a synchronized layer, waiting reasons, error codes, pitch algorithms, the audio session's keys")
    func namesPort() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 1))
        let layer = AVSynchronizedLayer(playerItem: item)
        #expect(layer.playerItem === item && layer.currentTime == item.currentTime())
        layer.playerItem = nil
        #expect(layer.playerItem == nil && !layer.currentTime.isValid && layer.timebase == nil)
        #expect(AVPlayer.WaitingReason.waitingForCoordinatedPlayback.rawValue == "AVPlayerWaitingForCoordinatedPlaybackReason")
        #expect(AVPlayer.WaitingReason.interstitialEvent != .toMinimizeStalls)
        #expect(AVError.Code.noImageAtTime.rawValue == -11832 && AVError.Code.mediaDiscontinuity.rawValue == -11812)
        // The cheap pitch algorithm keeps the pitch, with the time-domain engine.
        item.audioTimePitchAlgorithm = .lowQualityZeroLatency
        #expect(item.audioTimePitchAlgorithm == .lowQualityZeroLatency && item.pitchMode == .timeDomain)
        // An item with no dates refuses a date seek, awaited as on Apple's platforms.
        #expect(await item.seek(to: Date()) == false)
        #expect(AVAudioSession.InterruptionType(rawValue: 1) == .began && AVAudioSession.InterruptionOptions.shouldResume.rawValue == 1)
        #expect(AVAudioSessionInterruptionTypeKey == "AVAudioSessionInterruptionTypeKey")
        #expect(AVAudioSession.RouteChangeReason(rawValue: 2) == .oldDeviceUnavailable)
    }

    @Test("players, items and assets compare by identity")
    func identity() throws {
        let url = try TestMedia.tone(.wav, seconds: 1)
        let a = AVPlayerItem(url: url), b = AVPlayerItem(url: url)
        #expect(a == a)
        #expect(a != b)
        #expect(Set([a, b, a]).count == 2)
        #expect(a.asset == a.asset)
        #expect(a.asset != b.asset)
        let player = AVPlayer(playerItem: nil, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(player == player)
    }

    @Test("the smaller pieces Apple's code reaches for: the external screen's gravity, captions, the host clock in seconds, a date seek")
    func smallerPieces() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 2, rate: 48_000))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        #expect(player.externalPlaybackVideoGravity == .resizeAspect)
        let gravities = Collected<AVLayerVideoGravity>()
        let observation = player.observe(\.externalPlaybackVideoGravity, options: [.new]) { _, change in change.newValue.map(gravities.append) }
        defer { observation.invalidate() }
        player.externalPlaybackVideoGravity = .resizeAspectFill
        #expect(player.externalPlaybackVideoGravity == .resizeAspectFill)
        #expect(gravities.all == [.resizeAspectFill])
        #expect(!player.isClosedCaptionDisplayEnabled)
        player.isClosedCaptionDisplayEnabled = true
        #expect(player.isClosedCaptionDisplayEnabled)
        #expect(!player.outputObscuredDueToInsufficientExternalProtection)
        // CACurrentMediaTime() is the clock host times are on: an item's time for "now" is its
        // current time.
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        let output = AVPlayerItemVideoOutput(pixelBufferAttributes: nil)
        item.add(output)
        let now = output.itemTime(forHostTime: CACurrentMediaTime())
        #expect(abs(now.seconds - player.currentTime().seconds) < 0.01)
        let before = CACurrentMediaTime()
        #expect(CACurrentMediaTime() >= before)
        // Media here carries no dates.
        let sought = await player.seek(to: Date())
        #expect(!sought)
    }

    @Test("more of what Apple's code is written with: an empty time, the timebase's notification names, an error's user info, observations in a set, tracks by completion handler, an item's awaited seek within tolerances, a layer's frame")
    func morePieces() async throws {
        #expect(!CMTime().isValid)
        #expect(CMTime() == .invalid)
        // CoreMedia's notification names, both spellings, reach the same observers.
        #expect(CMTimebase.timeJumped == CMTimebase.timeJumpedNotification)
        #expect(CMTimebase.effectiveRateChanged == CMTimebase.effectiveRateChangedNotification)
        let timebase = try CMTimebase(allocator: nil, sourceClock: CMClockGetHostTimeClock())
        let slaved = try CMTimebase(allocator: nil, sourceTimebase: timebase)
        #expect(slaved.sourceTimebase === timebase)
        let jumps = Atomic<Int>(0)
        let observer = NotificationCenter.default.addObserver(forName: NSNotification.Name(kCMTimebaseNotification_TimeJumped as String),
                                                              object: timebase, queue: nil) { _ in jumps.add(1, ordering: .relaxed) }
        defer { NotificationCenter.default.removeObserver(observer) }
        try timebase.setTime(CMTime(value: 3, timescale: 1))
        #expect(jumps.load(ordering: .relaxed) == 1)
        #expect(kCMTimebaseNotification_EffectiveRateChanged == CMTimebase.effectiveRateChanged.rawValue)

        let underlying = NSError(domain: "test", code: 7)
        let error = AVError(.fileFormatNotRecognized, userInfo: [NSUnderlyingErrorKey: underlying])
        #expect((error.userInfo[NSUnderlyingErrorKey] as? NSError)?.code == 7)

        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 2, rate: 48_000))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        var observations = Set<NSKeyValueObservation>()
        observations.insert(player.observe(\.rate) { _, _ in })
        observations.insert(player.observe(\.volume) { _, _ in })
        #expect(observations.count == 2)
        observations.removeAll()

        let tracks = await withCheckedContinuation { continuation in
            item.asset.loadTracks(withMediaType: .audio) { tracks, error in continuation.resume(returning: (tracks?.count, error == nil)) }
        }
        #expect(tracks.0 == 1 && tracks.1)
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        let sought = await item.seek(to: CMTime(value: 1, timescale: 1), toleranceBefore: .zero, toleranceAfter: .zero)
        #expect(sought)
        #expect(item.currentTime() == CMTime(value: 1, timescale: 1))

        let layer = AVPlayerLayer(player: player)
        layer.frame = CGRect(x: 10, y: 20, width: 640, height: 360)
        #expect(layer.frame == CGRect(x: 10, y: 20, width: 640, height: 360))
        #expect(layer.bounds.size == CGSize(width: 640, height: 360))
    }

    @Test("an iOS program's audio session set-up runs unchanged, and reads back as set")
    func audioSessionSetUp() throws {
        let session = AVAudioSession.sharedInstance()
        try session.setCategory(.playback, mode: .moviePlayback, options: [.allowAirPlay])
        try session.setActive(true)
        #expect(session.category == .playback)
        #expect(session.mode == .moviePlayback)
        #expect(session.categoryOptions == [.allowAirPlay])
        #expect(session.isActive)
        #expect(!session.isOtherAudioPlaying)
        try AVAudioSession.sharedInstance().setCategory(.ambient)
        #expect(session.category == .ambient && session.mode == .moviePlayback)
        try session.setActive(false, options: .notifyOthersOnDeactivation)
        #expect(!session.isActive)
        // The session is the process's one: every setting is checked here, in one test.
        try session.setCategory(.playback, mode: .moviePlayback, policy: .longFormVideo, options: [])
        #expect(session.category == .playback && session.routeSharingPolicy == .longFormVideo && session.categoryOptions.isEmpty)
    }

    @Test("a change of rate posts rateDidChangeNotification with its reason, once the player's rate is the new one")
    func rateChangesArePosted() async throws {
        let item = AVPlayerItem(url: try TestMedia.tone(.wav, seconds: 2, rate: 48_000))
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        let posted = Collected<(rate: Float, reason: AVPlayer.RateDidChangeReason?)>()
        let observer = NotificationCenter.default.addObserver(forName: AVPlayer.rateDidChangeNotification, object: player, queue: nil) { note in
            let player = note.object as? AVPlayer
            posted.append((player?.rate ?? -99, note.userInfo?[AVPlayer.rateDidChangeReasonKey] as? AVPlayer.RateDidChangeReason))
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        #expect(await waitUntil(10) { item.status == .readyToPlay })
        player.play()
        #expect(await waitUntil(10) { posted.all.count == 1 })
        player.rate = 2
        #expect(await waitUntil(10) { posted.all.count == 2 })
        player.pause()
        #expect(await waitUntil(10) { posted.all.count == 3 })
        // The same rate again changes nothing, and posts nothing: the next change's post
        // follows the last one's (posts go out in order, on one queue).
        player.pause()
        player.play()
        #expect(await waitUntil(10) { posted.all.count >= 4 })
        #expect(posted.all.map(\.rate) == [1, 2, 0, 1])
        #expect(posted.all.allSatisfy { $0.reason == .setRateCalled })
    }

    @Test("a sound track's format description says its codec by Apple's code, and gives its Core Audio description", arguments: [
        (TestMedia.Kind.wav, kAudioFormatLinearPCM, UInt32(16), UInt32(0)),
        (.aac, kAudioFormatMPEG4AAC, 0, 1_024),
        (.mp3, kAudioFormatMPEGLayer3, 0, 1_152),
        (.flac, kAudioFormatFLAC, 0, 0),
        (.opus, kAudioFormatOpus, 0, 960),
        (.vorbis, 0, 0, 0),
    ])
    func formatDescriptions(kind: TestMedia.Kind, format: AudioFormatID, bits: UInt32, framesPerPacket: UInt32) async throws {
        let asset = AVURLAsset(url: try TestMedia.tone(kind, seconds: 0.5, rate: 48_000, channels: 2))
        let track = try #require(try await asset.loadTracks(withMediaType: .audio).first)
        let descriptions = try await track.load(.formatDescriptions)
        let description = try #require(descriptions.first)
        #expect(CMFormatDescriptionGetMediaType(description) == kCMMediaType_Audio)
        #expect(CMFormatDescriptionGetMediaSubType(description) == format)
        let basic = try #require(CMAudioFormatDescriptionGetStreamBasicDescription(description)).pointee
        #expect(basic.mFormatID == format)
        #expect(basic.mSampleRate == 48_000)
        #expect(basic.mChannelsPerFrame == 2)
        #expect(basic.mBitsPerChannel == bits)
        #expect(basic.mFramesPerPacket == (format == kAudioFormatLinearPCM ? 1 : framesPerPacket))
        if format == kAudioFormatLinearPCM {
            #expect(basic.mFormatFlags == kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked)
            #expect(basic.mBytesPerFrame == 4)
        }
        // The older, untyped form holds the same.
        #expect((track.formatDescriptions.first as? CMFormatDescription) == description)
        #expect(description.mediaType == .audio)
    }

    @Test("FFmpeg's names of linear PCM become Core Audio's flags, and a container's claimed channel count cannot overflow a frame's size")
    func linearPCMFormats() {
        let planar = CMFormatDescription.soundFormat(codec: "pcm_s16le_planar")
        #expect(planar.0 == kAudioFormatLinearPCM)
        #expect(planar.1 == kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked | kAudioFormatFlagIsNonInterleaved)
        #expect(planar.2 == 16)
        let float = CMFormatDescription.soundFormat(codec: "pcm_f32be")
        #expect(float.1 == kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked | kAudioFormatFlagIsBigEndian)
        #expect(CMFormatDescription.soundFormat(codec: "pcm_s24be_planar").1 & kAudioFormatFlagIsBigEndian != 0)
        #expect(CMFormatDescription.soundFormat(codec: "pcm_u8").1 == kAudioFormatFlagIsPacked)
        // Not PCM, or not a size there is: no format.
        #expect(CMFormatDescription.soundFormat(codec: "pcm_bluray").0 == 0)
        #expect(CMFormatDescription.soundFormat(codec: "pcm_s12le").0 == 0)
        #expect(CMFormatDescription.soundFormat(codec: "vorbis").0 == 0)
        #expect(CMFormatDescription.bytesPerFrame(format: kAudioFormatLinearPCM, flags: float.1, bits: 32, channels: 6) == 24)
        #expect(CMFormatDescription.bytesPerFrame(format: kAudioFormatLinearPCM, flags: planar.1, bits: 16, channels: 6) == 2)
        #expect(CMFormatDescription.bytesPerFrame(format: kAudioFormatLinearPCM, flags: float.1, bits: 64, channels: .max) == .max)
        #expect(CMFormatDescription.bytesPerFrame(format: kAudioFormatMPEG4AAC, flags: 0, bits: 0, channels: 2) == 0)
    }

    @Test("a video track's format description gives its codec and its coded size")
    func videoFormatDescription() async throws {
        let asset = AVURLAsset(url: try TestMedia.identityVideo(seconds: 1, rate: 25, rotate: 90, withSound: true))
        let track = try #require(try await asset.loadTracks(withMediaType: .video).first)
        let description = try #require(try await track.load(.formatDescriptions).first)
        #expect(CMFormatDescriptionGetMediaType(description) == kCMMediaType_Video)
        #expect(CMFormatDescriptionGetMediaSubType(description) == kCMVideoCodecType_H264)
        #expect(description.mediaSubType == .h264)
        let size = CMVideoFormatDescriptionGetDimensions(description)
        #expect(size.width == 320 && size.height == 240)
        #expect(CMAudioFormatDescriptionGetStreamBasicDescription(description) == nil)
        #expect("\(description)" == "CMFormatDescription(vide, avc1)")
    }
}
