import Foundation
import MediaClock
import Testing
import ChorusTestSupport
internal import CFFmpeg
@testable import MediaPipeline

/// Takes entries from `queue` until `stop` says so or `timeout` passes.
private func drain(_ queue: PacketQueue, timeout: Duration = .seconds(20),
                   until stop: (PacketQueueEntry) -> Bool) -> [PacketQueueEntry] {
    var taken: [PacketQueueEntry] = []
    let deadline = HostTime.now() + timeout
    while HostTime.now() < deadline {
        guard let entry = queue.take() else {
            queue.consumerSignal.wait(timeout: .milliseconds(20))
            continue
        }
        taken.append(entry)
        if stop(entry) { break }
    }
    return taken
}

private func isEnd(_ entry: PacketQueueEntry) -> Bool {
    if case .end = entry { return true }
    return false
}

private func packets(_ entries: [PacketQueueEntry]) -> [OwnedPacket] {
    entries.compactMap { if case .packet(let packet) = $0 { return packet } else { return nil } }
}

/// An item's packet times (stream seconds) as one demuxer reads them to the end: the
/// pictures' and the sound's (with each sound packet's duration), and with `seekingTo`, the
/// pictures' after each of those seeks in turn, once the whole was read.
private struct SplicedRead {
    var pictures: [Double] = []
    var sound: [(time: Double, duration: Double)] = []
    var afterSeeks: [[Double]] = []

    /// Reads `url` through (unless `readThrough` is false), then seeks to each of `seeks`
    /// and reads on to the end.
    init(_ url: URL, seekingTo seeks: [Int64] = [], readThrough: Bool = true) throws {
        let source = try MediaSource(url: url.path)
        let demuxer = ItemDemuxer(source: source, sound: true, pictures: true)
        let soundQueue = try #require(demuxer.soundQueue)
        let pictureQueue = try #require(demuxer.pictureQueue)
        demuxer.start()
        defer { demuxer.stop() }
        func base(_ queue: PacketQueue) throws -> Double {
            let stream = try #require(source.formatContext.pointee.streams[Int(queue.streamIndex)])
            return Double(stream.pointee.time_base.num) / Double(stream.pointee.time_base.den)
        }
        let soundBase = try base(soundQueue), pictureBase = try base(pictureQueue)
        var soundEntries: [PacketQueueEntry] = [], pictureEntries: [PacketQueueEntry] = []
        let deadline = HostTime.now() + .seconds(20)
        while readThrough, !(soundEntries.last.map(isEnd) ?? false && pictureEntries.last.map(isEnd) ?? false) && HostTime.now() < deadline {
            if let entry = soundQueue.take() { soundEntries.append(entry) }
            if let entry = pictureQueue.take() { pictureEntries.append(entry) }
            if soundQueue.packetCount == 0 && pictureQueue.packetCount == 0 { soundQueue.consumerSignal.wait(timeout: .milliseconds(5)) }
        }
        pictures = packets(pictureEntries).map { Double($0.pointer.pointee.dts) * pictureBase }
        sound = packets(soundEntries).map { (Double($0.pointer.pointee.dts) * soundBase, Double($0.pointer.pointee.duration) * soundBase) }
        for (serial, seek) in seeks.enumerated() {
            demuxer.seek(toItemNanoseconds: seek, serial: serial + 1)
            var entries: [PacketQueueEntry] = []
            let seekDeadline = HostTime.now() + .seconds(20)
            while !(entries.last.map(isEnd) ?? false) && HostTime.now() < seekDeadline {
                _ = soundQueue.take()
                if let entry = pictureQueue.take() { entries.append(entry) } else { soundQueue.consumerSignal.wait(timeout: .milliseconds(5)) }
            }
            let flushed = entries.drop { if case .flush(let marked) = $0 { return marked != serial + 1 } else { return true } }
            afterSeeks.append(packets(Array(flushed)).map { Double($0.pointer.pointee.dts) * pictureBase })
        }
    }
}

/// One demuxer per item: every stream decoded comes from the same reading of the file.
@Suite(.ownThread) struct ItemDemuxerTests {
    @Test("one demuxer feeds the sound's and the pictures' queues, each only its own stream's packets")
    func feedsBothQueues() throws {
        let source = try MediaSource(url: try TestMedia.keyframedVideo(seconds: 2).path)
        let demuxer = ItemDemuxer(source: source, sound: true, pictures: true)
        let sound = try #require(demuxer.soundQueue)
        let pictures = try #require(demuxer.pictureQueue)
        #expect(sound.streamIndex != pictures.streamIndex)
        demuxer.start()
        defer { demuxer.stop() }
        // Taking from both, as the two decoders do, so neither queue holds the demuxer up.
        var soundEntries: [PacketQueueEntry] = []
        var pictureEntries: [PacketQueueEntry] = []
        let deadline = HostTime.now() + .seconds(20)
        while !(soundEntries.last.map(isEnd) ?? false && pictureEntries.last.map(isEnd) ?? false) && HostTime.now() < deadline {
            if let entry = sound.take() { soundEntries.append(entry) }
            if let entry = pictures.take() { pictureEntries.append(entry) }
            if sound.packetCount == 0 && pictures.packetCount == 0 { sound.consumerSignal.wait(timeout: .milliseconds(5)) }
        }
        #expect(soundEntries.last.map(isEnd) == true)
        #expect(pictureEntries.last.map(isEnd) == true)
        #expect(packets(soundEntries).allSatisfy { $0.pointer.pointee.stream_index == sound.streamIndex })
        #expect(packets(pictureEntries).allSatisfy { $0.pointer.pointee.stream_index == pictures.streamIndex })
        // Two seconds at 25 pictures a second, all of them.
        #expect(packets(pictureEntries).count == 50)
        #expect(packets(soundEntries).count > 80)  // 48 kHz AAC: 1024 samples a packet
    }

    @Test("a seek leaves its marker in each queue, followed by packets from the keyframe before the target")
    func seekLeavesAMarker() throws {
        let source = try MediaSource(url: try TestMedia.keyframedVideo(seconds: 4).path)
        let demuxer = ItemDemuxer(source: source, sound: true, pictures: true)
        let sound = try #require(demuxer.soundQueue)
        let pictures = try #require(demuxer.pictureQueue)
        demuxer.start()
        defer { demuxer.stop() }
        let deadline = HostTime.now() + .seconds(20)
        while pictures.packetCount <= 10 && HostTime.now() < deadline { usleep(2_000) }
        demuxer.seek(toItemNanoseconds: 2_500_000_000, serial: 7)
        // What was read before the demuxer moved may still come first (the seek is the
        // demuxer thread's to make); then the marker, then the new position.
        let toMarker = drain(pictures) { entry in
            if case .flush(7) = entry { return true }
            return false
        }
        guard case .flush(7) = try #require(toMarker.last) else {
            Issue.record("no marker of the seek in the pictures' queue")
            return
        }
        let afterMarker = drain(pictures) { entry in
            if case .packet = entry { return true }
            return false
        }
        let first = try #require(packets(afterMarker).first)
        // Keyframes every second: the one at 2 s is the last at or before 2.5 s.
        #expect(first.pointer.pointee.flags & AV_PKT_FLAG_KEY != 0)
        let timeBase = source.formatContext.pointee.streams[Int(pictures.streamIndex)]!.pointee.time_base
        let seconds = Double(first.pointer.pointee.pts) * Double(timeBase.num) / Double(timeBase.den)
        #expect(abs(seconds - 2.0) < 0.05, "first picture packet after the seek at \(seconds) s")
        let soundToMarker = drain(sound) { entry in
            if case .flush(7) = entry { return true }
            return false
        }
        guard case .flush(7) = try #require(soundToMarker.last) else {
            Issue.record("no marker of the seek in the sound's queue")
            return
        }
    }

    @Test("pictures nobody takes give way to the sound: dropped up to a keyframe, and counted")
    func picturesGiveWayToTheSound() throws {
        let source = try MediaSource(url: try TestMedia.keyframedVideo(seconds: 8, keyframeInterval: 25).path)
        let demuxer = ItemDemuxer(source: source, sound: true, pictures: true)
        let sound = try #require(demuxer.soundQueue)
        let pictures = try #require(demuxer.pictureQueue)
        demuxer.start()
        defer { demuxer.stop() }
        // Only the sound is taken, as when a display stops taking pictures: the sound must
        // still get to the end.
        let soundEntries = drain(sound, until: isEnd)
        #expect(soundEntries.last.map(isEnd) == true)
        let pictureEntries = drain(pictures, until: isEnd)
        var skipped = 0
        var afterSkip: OwnedPacket?
        var sawSkip = false
        for entry in pictureEntries {
            switch entry {
            case .skipped(let count):
                skipped += count
                sawSkip = true
            case .packet(let packet) where sawSkip && afterSkip == nil:
                afterSkip = packet
            default:
                break
            }
        }
        // The queue holds 4 s of an 8 s item: the rest up to a keyframe was dropped.
        #expect(skipped > 0)
        #expect(packets(pictureEntries).count + skipped <= 200)
        // Decoding starts again at a keyframe.
        let resumed = try #require(afterSkip)
        #expect(resumed.pointer.pointee.flags & AV_PKT_FLAG_KEY != 0)
    }

    @Test("a stream not asked for is not queued, and stopping the pictures leaves the sound reading")
    func stoppingThePicturesKeepsTheSound() throws {
        let source = try MediaSource(url: try TestMedia.keyframedVideo(seconds: 2).path)
        let soundOnly = ItemDemuxer(source: source, sound: true, pictures: false)
        #expect(soundOnly.pictureQueue == nil)
        let other = try MediaSource(url: try TestMedia.keyframedVideo(seconds: 2).path)
        let demuxer = ItemDemuxer(source: other, sound: true, pictures: true)
        let sound = try #require(demuxer.soundQueue)
        let pictures = try #require(demuxer.pictureQueue)
        demuxer.stopReadingPictures()
        demuxer.start()
        defer { demuxer.stop() }
        #expect(drain(sound, until: isEnd).last.map(isEnd) == true)
        #expect(pictures.packetCount == 0)
    }
}

/// The queue between a demuxer and a decoder.
@Suite(.ownThread) struct PacketQueueTests {
    /// A packet of `duration` ticks of a 1/1000 time base, with `size` bytes.
    private func packet(duration: Int64, size: Int32 = 100) throws -> OwnedPacket {
        let blank = try #require(av_packet_alloc())
        defer { var p: UnsafeMutablePointer<AVPacket>? = blank; av_packet_free(&p) }
        #expect(av_new_packet(blank, size) == 0)
        blank.pointee.duration = duration
        return try #require(OwnedPacket(movingFrom: blank))
    }

    @Test("full by the duration it holds; a flush empties it and leaves its marker; entries come out in order")
    func limitsFlushAndOrder() throws {
        let queue = PacketQueue(streamIndex: 0, timeBase: AVRational(num: 1, den: 1000),
                                limits: .init(nanoseconds: 1_000_000_000, bytes: 1 << 20, count: 100), producerSignal: WakeSignal())
        for _ in 0..<9 { queue.push(.packet(try packet(duration: 100))) }
        #expect(!queue.isFull)
        queue.push(.packet(try packet(duration: 100)))
        #expect(queue.isFull)
        _ = queue.take()
        #expect(!queue.isFull)
        queue.flush(serial: 3)
        #expect(queue.packetCount == 0)
        queue.push(.end)
        guard case .flush(3) = queue.take() else {
            Issue.record("no marker first after a flush")
            return
        }
        guard case .end = queue.take() else {
            Issue.record("the end did not follow the marker")
            return
        }
        #expect(queue.take() == nil)
    }

    @Test("a decoder's gate drops what came before its seek's marker, and passes what follows")
    func seekMarkerGate() throws {
        var gate = SeekMarkerGate()
        #expect(gate.admit(.end) != nil)
        gate.awaitMarker(ofSerial: 4)
        #expect(gate.admit(.packet(try packet(duration: 1))) == nil)
        #expect(gate.admit(.flush(serial: 3)) == nil)
        #expect(gate.admit(.end) == nil)
        #expect(gate.admit(.flush(serial: 4)) == nil)
        #expect(gate.admit(.end) != nil)
    }

    /// Jumps back (an encoder restarting at zero) and forward (an advertisement cut in).
    @Test("a spliced HLS stream's times run on across its discontinuity: the sound without a gap, the pictures at their own distance from it", arguments: [(50, 0), (0, 50)])
    func splicedTimesRunOn(offsets: (Int, Int)) throws {
        let hls = try TestMedia.splicedHLS(seconds: 4, offsets: offsets)
        // Each half read on its own (no jump in either), and the whole.
        let first = try SplicedRead(hls.folder.appendingPathComponent("a.m3u8"))
        let second = try SplicedRead(hls.folder.appendingPathComponent("b.m3u8"))
        let whole = try SplicedRead(hls.folder.appendingPathComponent("index.m3u8"))
        // The second half's sound is heard straight after the first's, so its times take the
        // shift that puts its first packet where the first half's sound ended; its pictures
        // take the same shift, keeping their distance from their sound.
        let firstSoundEnd = try #require(first.sound.last.map { $0.time + $0.duration })
        let shift = firstSoundEnd - (try #require(second.sound.first?.time))
        let expectedPictures = first.pictures + second.pictures.map { $0 + shift }
        let expectedSound = first.sound.map(\.time) + second.sound.map { $0.time + shift }
        // Within a tick of the 90 kHz clock, to which the shift is rounded.
        let tick = 1.0 / 90_000
        #expect(whole.pictures.count == 100)
        #expect(whole.pictures.count == expectedPictures.count)
        #expect(zip(whole.pictures, expectedPictures).allSatisfy { abs($0 - $1) <= tick },
                "first off: \(zip(whole.pictures, expectedPictures).first { abs($0 - $1) > tick }.map { "\($0)" } ?? "none")")
        #expect(whole.sound.count == expectedSound.count)
        #expect(zip(whole.sound.map(\.time), expectedSound).allSatisfy { abs($0 - $1) <= tick })
        // So the sound runs on with no gap: each packet one AAC frame after the last.
        let soundSteps = zip(whole.sound, whole.sound.dropFirst()).map { $1.time - $0.time }
        #expect(soundSteps.allSatisfy { abs($0 - 1024.0 / 48_000) <= tick })
    }

    /// A jump forward (an advertisement cut in) and back (an encoder restarted at zero).
    /// FFmpeg's HLS demuxer seeks by the playlist's durations and then skips packets by
    /// their own times, so past a jump back it skipped every packet: the input is opened
    /// again at the segment holding the target instead.
    @Test("a seek past a splice reads on in the item's run-on times", arguments: [(0, 50), (50, 0)])
    func seekPastASplice(offsets: (Int, Int)) throws {
        let hls = try TestMedia.splicedHLS(seconds: 4, offsets: offsets)
        // Read to the end (past the splice), then back before it, then past it again: each
        // seek's pictures take the times of the stretch it lands in.
        let read = try SplicedRead(hls.folder.appendingPathComponent("index.m3u8"), seekingTo: [1_000_000_000, 3_000_000_000])
        let playedThrough = read.pictures
        #expect(playedThrough.count == 100)
        for (afterSeek, target) in zip(read.afterSeeks, [25, 75]) {
            let first = try #require(afterSeek.first)
            // From the keyframe at or before the target (the decoders skip the rest), at the
            // times the same pictures had when played through.
            #expect(first <= playedThrough[target] + 1e-6 && first >= playedThrough[target - 25] - 1e-6, "from \(first) s")
            #expect(afterSeek.count >= 100 - target)
            #expect(afterSeek == Array(playedThrough.suffix(afterSeek.count)))
        }
    }

    /// Past a splice the demuxer has not read yet, the playlist places the segment opened:
    /// its durations put the second half's first picture 48 ms before the sound does here
    /// (the first half's sound runs 26.7 ms past its pictures, with its encoder's priming
    /// and its last frame's padding, and the second half's pictures start 21.3 ms after its
    /// sound).
    @Test("a seek past a splice not yet read lands where the playlist places it, and reads on to the end", arguments: [(0, 50), (50, 0)])
    func seekPastASpliceNotYetRead(offsets: (Int, Int)) throws {
        let hls = try TestMedia.splicedHLS(seconds: 4, offsets: offsets)
        let playedThrough = try SplicedRead(hls.folder.appendingPathComponent("index.m3u8")).pictures
        #expect(playedThrough.count == 100)
        let read = try SplicedRead(hls.folder.appendingPathComponent("index.m3u8"), seekingTo: [3_000_000_000], readThrough: false)
        let afterSeek = try #require(read.afterSeeks.first)
        // From the keyframe at or before the target (3 s: picture 75; one a second), every
        // picture to the end, each within 50 ms of its time played through.
        #expect(afterSeek.count == 25, "\(afterSeek.count) pictures after the seek")
        let expected = Array(playedThrough.suffix(afterSeek.count))
        let worst = zip(afterSeek, expected).map { abs($0 - $1) }.max() ?? .infinity
        #expect(worst < 0.05, "\(worst) s from the pictures' times played through")
    }

    @Test("packets without a duration still fill a queue, by count")
    func packetsWithoutDurationFillByCount() throws {
        let queue = PacketQueue(streamIndex: 0, timeBase: AVRational(num: 1, den: 1000),
                                limits: .init(nanoseconds: 1_000_000_000, bytes: 1 << 20, count: 5), producerSignal: WakeSignal())
        for _ in 0..<5 { queue.push(.packet(try packet(duration: 0))) }
        #expect(queue.isFull)
    }
}

/// Blocks and pictures carry the item they belong to, as the engine numbers its loads.
@Suite(.ownThread) struct ItemTagTests {
    @Test("each load's blocks, pictures and rendered frames carry that load's item number")
    func blocksAndPicturesCarryTheirItem() async throws {
        let engine = PlaybackEngine(spec: .null(driftPPM: 0))
        defer { engine.shutdown() }
        engine.decodesVideo = true
        let format = try engine.prepare(preferred: AudioFormat(sampleRate: 48_000, channels: 2))
        #expect(engine.currentItemNumber == 0)
        for expected in 1...2 {
            let serial = expected * 10
            let source = try MediaSource(url: try TestMedia.identityVideo(seconds: 1, rate: 25, withSound: true).path)
            try engine.load(source: source, serial: serial, startFrame: 0) { _ in }
            #expect(engine.currentItemNumber == expected)
            engine.render { $0.mode = .play(serial: serial, frame: 0, hostTime: nil) }
            #expect(await waitUntil(10) { engine.status.serial == serial && engine.status.phase == .playing && engine.status.item == expected },
                    "rendered item \(engine.status.item), expected \(expected)")
            let queue = try #require(engine.videoQueue)
            var picture: VideoPlanes?
            #expect(await waitUntil(10) {
                if case .show(let planes) = queue.next(dueNanoseconds: .max, showFirstEarly: true, timelineSerial: serial) { picture = planes }
                return picture != nil
            })
            #expect(picture?.info.item == expected)
            _ = format
        }
    }
}
