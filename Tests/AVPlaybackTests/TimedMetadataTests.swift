import Foundation
import Testing
import ChorusTestSupport
@testable import AVPlayback
import MediaPipeline
import MediaServer

/// A stream's timed metadata (a station's titles) reaching an app as playback reaches it.
@Suite(.ownThread) struct TimedMetadataTests {
    final class MetadataLog: AVPlayerItemMetadataOutputPushDelegate, @unchecked Sendable {
        let lock = NSLock()
        var groups: [AVTimedMetadataGroup] = []
        var flushes = 0
        func metadataOutput(_ output: AVPlayerItemMetadataOutput, didOutputTimedMetadataGroups groups: [AVTimedMetadataGroup],
                            from track: AVPlayerItemTrack?) {
            lock.withLock { self.groups += groups }
        }
        func outputSequenceWasFlushed(_ output: AVPlayerItemOutput) { lock.withLock { flushes += 1 } }
        var all: [AVTimedMetadataGroup] { lock.withLock { groups } }
    }

    /// A player of `url` on a silent device, playing, and what a metadata output for every
    /// identifier added to its item hears (`player.close()` is the caller's).
    static func playListening(_ url: URL) -> (player: AVPlayer, item: AVPlayerItem, titles: MetadataLog) {
        let item = AVPlayerItem(url: url)
        let output = AVPlayerItemMetadataOutput(identifiers: nil)
        let titles = MetadataLog()
        output.setDelegate(titles, queue: DispatchQueue(label: "metadata"))
        item.add(output)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        player.play()
        return (player, item, titles)
    }

    @Test("a station's titles reach a metadata output, in order and where the station put them, and the item's timedMetadata follows")
    func stationTitlesArriveAsTheyArePlayed() async throws {
        let station = try StationServer(broadcasting: try TestMedia.station(seconds: 30), seconds: 30,
                                        titles: [(0, "Alpha – One"), (4, "Bravo's Song; Part 2")])
        defer { station.stop() }
        let item = AVPlayerItem(url: station.url)
        let everything = AVPlayerItemMetadataOutput(identifiers: nil)
        let titles = MetadataLog()
        everything.setDelegate(titles, queue: DispatchQueue(label: "metadata"))
        item.add(everything)
        // An output for other identifiers hears nothing of them.
        let id3Only = AVPlayerItemMetadataOutput(identifiers: [AVMetadataIdentifier.id3MetadataTitleDescription.rawValue])
        let other = MetadataLog()
        id3Only.setDelegate(other, queue: DispatchQueue(label: "metadata.other"))
        item.add(id3Only)
        let player = AVPlayer(playerItem: item, output: .null(driftPPM: 0))
        defer { player.close() }
        // The deprecated property is observable, as radio apps written before the output use it.
        let observed = Collected<String>()
        let observation = item.observe(\.timedMetadata, options: [.new]) { _, change in
            if let title = (change.newValue ?? nil)?.first?.stringValue { observed.append(title) }
        }
        defer { observation.invalidate() }
        player.play()
        #expect(await waitUntil(20) { titles.all.count >= 2 })
        let heard = titles.all
        #expect(heard.flatMap(\.items).map(\.stringValue) == ["Alpha – One", "Bravo's Song; Part 2"])
        #expect(await waitUntil(5) { observed.all == ["Alpha – One", "Bravo's Song; Part 2"] }, "\(observed.all)")
        for metadata in heard.flatMap(\.items) {
            #expect(metadata.identifier == .icyMetadataStreamTitle)
            #expect(metadata.keySpace == .icy)
            #expect(metadata.commonKey == .commonKeyTitle)
        }
        // The second title holds from where the station put it in the listener's stream (at
        // its first block after four seconds of the broadcast): HTTP reads stop at each
        // block, and the demuxer asks after every packet, so it is placed at the packet that
        // followed the block (32 ms early here, the packet it fell in). Early by more only
        // when the input has read ahead of the demuxer (a loaded machine: half a second
        // allowed), never late by more than a packet.
        let joined = try #require(station.joinedAt.first)
        let put = try #require(station.announced.last).second - joined
        if heard.count == 2 {
            let start = heard[1].timeRange.start.seconds
            #expect(start > put - 0.5 && start < put + 0.03, "second title at \(start) s, station put it at \(put) s")
            #expect(heard[1].items[0].time == heard[1].timeRange.start)
            // ... and it was told once playback got there, not when it was read.
            #expect(player.currentTime() >= heard[1].timeRange.start)
        }
        #expect(item.timedMetadata?.map(\.stringValue) == ["Bravo's Song; Part 2"])
        #expect(other.all.isEmpty)
        #expect(titles.flushes == 0)
    }

    /// Packed audio (raw AAC segments, each led by an ID3 tag with its timestamp), as
    /// radio stations serve HLS: the title in each segment's tag. FFmpeg's demuxer reads
    /// only the first tag's and reports later changes as a missing feature.
    @Test("a packed-audio HLS stream's titles, changing from segment to segment, reach a metadata output where their segments begin")
    func packedAudioTitlesArriveWhereTheirSegmentsBegin() async throws {
        let playlist = try TestMedia.packedAudioHLS(segments: 8, titles: [0: "One", 3: "Two", 6: "Three"])
        let server = try MediaHTTPServer(address: "127.0.0.1", port: 0)
        defer { server.stop() }
        let path = server.publishFolder(of: playlist, id: "packed")
        let (player, item, titles) = Self.playListening(try #require(URL(string: "http://127.0.0.1:\(server.port)\(path)")))
        defer { player.close() }
        #expect(await waitUntil(30) { titles.all.count >= 3 }, "\(titles.all.flatMap(\.items).map(\.stringValue))")
        let heard = titles.all
        #expect(heard.flatMap(\.items).map(\.stringValue) == ["One", "Two", "Three"])
        #expect(heard.flatMap(\.items).allSatisfy { $0.identifier == .id3MetadataTitleDescription })
        // Each where its segment begins: 47 AAC frames of 1,024 samples at 48 kHz a segment.
        let segment = Double(TestMedia.packedAudioSegmentFrames * 1_024) / 48_000
        let starts = heard.map(\.timeRange.start.seconds)
        let expected = [0, 3 * segment, 6 * segment]
        #expect(starts.count == 3 && zip(starts, expected).allSatisfy { abs($0 - $1) < 0.001 }, "at \(starts) s")
        #expect(item.error == nil)
    }

    @Test("a relayed station's titles are in its live playlist as ID3 tags, which a player of the playlist hears in order")
    func relayedTitlesArriveAsID3() async throws {
        let station = try StationServer(broadcasting: try TestMedia.station(seconds: 30), seconds: 30,
                                        titles: [(0, "Alpha – One"), (6, "Bravo Two")])
        defer { station.stop() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("chorus-metadata-tests-\(getpid())", isDirectory: true)
        let relay = try #require(LiveRelay.start(url: station.url.absoluteString, in: folder))
        defer { relay.stop() }
        #expect(relay.waitUntilReady(timeout: .seconds(20)))
        let (player, _, titles) = Self.playListening(relay.playlist)
        defer { player.close() }
        // The first title is heard where playback starts (it is repeated in every segment),
        // the second where it came.
        #expect(await waitUntil(20) { titles.all.count >= 2 })
        let heard = titles.all
        #expect(heard.flatMap(\.items).map(\.stringValue) == ["Alpha – One", "Bravo Two"])
        #expect(heard.flatMap(\.items).allSatisfy { $0.identifier == .id3MetadataTitleDescription && $0.commonKey == .commonKeyTitle })
        if heard.count == 2 { #expect(heard[1].timeRange.start > heard[0].timeRange.start) }
        #expect(station.connections == 1)
    }

    @Test("a metadata output hears each group as playback reaches it, the one in effect after a jump (flushed first), and backwards each group the falling time enters")
    func deliveriesFollowTheTimeline() throws {
        let info = try MediaSource(url: try TestMedia.tone(.wav, seconds: 1, rate: 48_000).path).info
        let log = TimedMetadataLog()
        for (seconds, title) in [(1.0, "A"), (3.0, "B"), (5.0, "C")] {
            log.add(TimedMetadataGroup(time: CMTime(seconds: seconds, preferredTimescale: 1_000),
                                       entries: [TimedMetadataEntry(keySpace: .icy, key: "StreamTitle", value: title)]))
        }
        let output = AVPlayerItemMetadataOutput(identifiers: nil)
        let heard = MetadataLog()
        let queue = DispatchQueue(label: "metadata")
        output.setDelegate(heard, queue: queue)
        var told = 0
        /// What the delegate was told since the last look, after a tick at `seconds`.
        func tick(_ seconds: Double, jumped: Bool = false) -> [String] {
            output.deliver(log: log, at: CMTime(seconds: seconds, preferredTimescale: 1_000), jumped: jumped, info: info)
            queue.sync {}
            let all = heard.all
            defer { told = all.count }
            return all[told...].flatMap(\.items).compactMap(\.stringValue)
        }
        #expect(tick(0.5) == [])
        #expect(tick(2) == ["A"])
        #expect(tick(2.5) == [])
        #expect(tick(6) == ["B", "C"])
        // A seek back: flushed, then the group in effect where it landed.
        #expect(tick(3.5, jumped: true) == ["B"])
        #expect(heard.flushes == 1)
        #expect(heard.all.last?.timeRange == CMTimeRange(start: CMTime(seconds: 3, preferredTimescale: 1_000),
                                                         duration: CMTime(seconds: 2, preferredTimescale: 1_000)))
        // Backwards: nothing new inside B, then A as the time falls into it.
        #expect(tick(3.1) == [])
        #expect(tick(2.9) == ["A"])
        // A group read only after playback passed its time (a reader behind the playhead)
        // is told as the one in effect, at the next tick.
        log.add(TimedMetadataGroup(time: CMTime(seconds: 2, preferredTimescale: 1_000),
                                   entries: [TimedMetadataEntry(keySpace: .icy, key: "StreamTitle", value: "A2")]))
        #expect(tick(2.8) == ["A2"])
        #expect(tick(2.7) == [])
        // Told early when asked: C a second before its time.
        output.advanceIntervalForDelegateInvocation = 1
        #expect(tick(3.5, jumped: true) == ["B"])
        #expect(tick(4.2) == ["C"])
        // No delegate, no deliveries; nothing is kept for later.
        output.setDelegate(nil, queue: nil)
        #expect(tick(0, jumped: true) == [])
    }
}
