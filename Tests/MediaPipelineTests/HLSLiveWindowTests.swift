import Foundation
import Testing
import ChorusTestSupport
import MediaServer
@testable import MediaPipeline

@Suite("A live HLS playlist placed on an item's time as it moves", .ownThread)
struct HLSLiveWindowTests {
    static func playlist(first: Int, durations: [Double], target: Int = 2, ended: Bool = false) -> HLSMediaPlaylist? {
        var text = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:\(target)\n#EXT-X-MEDIA-SEQUENCE:\(first)\n"
        for (offset, duration) in durations.enumerated() { text += "#EXTINF:\(duration),\nsegment\(first + offset).ts\n" }
        if ended { text += "#EXT-X-ENDLIST\n" }
        return HLSMediaPlaylist(parsing: text)
    }

    @Test("a media playlist's sequence, durations, target and end are read; a master playlist or an empty one is not a media playlist")
    func parsing() throws {
        let parsed = try #require(Self.playlist(first: 7, durations: [2, 1.5, 2], ended: true))
        #expect(parsed.firstSequence == 7 && parsed.endSequence == 10)
        #expect(parsed.durations == [2, 1.5, 2])
        #expect(parsed.targetDuration == 2 && parsed.ended)
        #expect(HLSMediaPlaylist(parsing: "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nlow.m3u8\n") == nil)
        #expect(HLSMediaPlaylist(parsing: "") == nil)
        #expect(HLSLiveWindow.firstVariant(in: "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nlow/index.m3u8\n", base: "http://h/live/master.m3u8")
                == "http://h/live/low/index.m3u8")
    }

    static let base = "http://h/live/index.m3u8"
    static func opening(at seconds: Double, fetched: [String] = []) -> HLSLiveWindow.Opening {
        HLSLiveWindow.Opening(seconds: seconds, fetched: fetched, startFromEnd: 3)
    }

    @Test("the segment the stream opened at, three from the end, begins where its first packet was stamped; each reading carries the last one's times on by the segments they share")
    func placing() throws {
        let first = HLSLiveWindow.place(try #require(Self.playlist(first: 10, durations: [2, 2, 2, 2, 2])), readFrom: Self.base, after: nil,
                                        opening: Self.opening(at: 100))
        #expect(first.firstStart == 96)
        #expect(first.start(ofIndex: 2) == 100)
        // Ten seconds listed, less three target durations of hold-back.
        #expect(first.seekable == 96...100)
        // Two segments later, one of them shorter.
        let moved = HLSLiveWindow.place(try #require(Self.playlist(first: 12, durations: [2, 1.5, 2, 2, 2])), readFrom: Self.base, after: first,
                                        opening: Self.opening(at: 100))
        #expect(moved.firstStart == 100)
        #expect(moved.end == 109.5)
        #expect(moved.seekable == 100...103.5)
        #expect(moved.segment(holding: 102.2).index == 1 && moved.segment(holding: 102.2).start == 102)
        // Out of sight of every segment known (a reading missed): target durations stand in.
        let far = HLSLiveWindow.place(try #require(Self.playlist(first: 20, durations: [2, 2])), readFrom: Self.base, after: moved,
                                      opening: Self.opening(at: 100))
        #expect(far.firstStart == 109.5 + 3 * 2)
    }

    @Test("the segment the stream opened at is told by the name it was fetched by, though the playlist moved on before the window first read it")
    func placingByTheSegmentFetched() throws {
        // Opened at segment 12, three from the end of 10...14; first read here once the
        // playlist had moved on by one, where segment 12 is four from the end. Counted from
        // the end, the window would stand a segment off.
        let moved = try #require(Self.playlist(first: 11, durations: [2, 2, 2, 2, 2]))
        let fetched = ["http://h/live/other.m3u8", "http://h/live/segment12.ts", "http://h/live/segment13.ts"]
        let placed = HLSLiveWindow.place(moved, readFrom: Self.base, after: nil, opening: Self.opening(at: 100, fetched: fetched))
        #expect(placed.start(ofIndex: 1) == 100)
        #expect(placed.firstStart == 98)
        // Another variant's segment of the same name, in a folder of its own, is not taken
        // for this one's; nothing fetched listed: counted from the end.
        let elsewhere = HLSLiveWindow.place(moved, readFrom: Self.base, after: nil,
                                            opening: Self.opening(at: 100, fetched: ["http://h/live/high/segment12.ts"]))
        #expect(elsewhere.start(ofIndex: 2) == 100)
        // A playlist naming its segments by absolute URLs.
        var text = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:5\n"
        for index in 5...9 { text += "#EXTINF:2,\nhttp://cdn/s\(index).ts\n" }
        let absolute = try #require(HLSMediaPlaylist(parsing: text))
        #expect(absolute.firstIndex(fetchedByOneOf: ["http://cdn/s8.ts"], base: Self.base) == 3)
    }

    @Test("a live stream opened over HTTP is placed by the segment its opening fetched, though its playlist moved on before the window first read it")
    func aMovedPlaylistIsPlacedByTheSegmentFetched() async throws {
        let hls = try TestMedia.hls(seconds: 12)
        let server = try MediaHTTPServer(address: "127.0.0.1", port: 0)
        defer { server.stop() }
        // A live playlist of five one-second segments, moved on by this test alone.
        let playlist = hls.folder.appendingPathComponent("moved-by-hand.m3u8")
        func list(from first: Int) throws {
            var text = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:\(first)\n"
            for name in hls.segments[first..<(first + 5)] { text += "#EXTINF:1.0,\n\(name)\n" }
            try text.write(to: playlist, atomically: true, encoding: .utf8)
        }
        try list(from: 0)
        for name in hls.segments { _ = server.publish(hls.folder.appendingPathComponent(name), id: "moved-by-hand") }
        let url = "http://127.0.0.1:\(server.port)\(server.publish(playlist, id: "moved-by-hand"))"
        let source = try MediaSource(url: url)
        #expect(source.info.isLiveHLS)
        // FFmpeg's demuxer opened the third of the five, three from the end.
        let opened = hls.segments[2]
        #expect(source.liveOpenings.contains { $0.hasSuffix("/" + opened) }, "fetched: \(source.liveOpenings)")
        // The playlist moves on before the window's first reading: there the opened segment
        // is the second listed, four from the end.
        try list(from: 1)
        let window = HLSLiveWindow(url: url, openedAt: source.openedAt.seconds, openings: source.liveOpenings)
        defer { window.stop() }
        #expect(await waitUntil(10) { window.current != nil })
        let reading = try #require(window.current)
        #expect(reading.playlist.firstSequence == 1)
        #expect(abs(reading.start(ofIndex: 1) - source.openedAt.seconds) < 1e-9,
                "the opened segment placed at \(reading.start(ofIndex: 1)) s, opened at \(source.openedAt.seconds) s")
    }

    @Test("a reading that ends before the last one did, without starting before it, was cut short; one that starts over was not")
    func readingsCutShort() throws {
        let last = try #require(Self.playlist(first: 10, durations: [1, 1, 1, 1, 1]))
        #expect(HLSLiveWindow.isCutShort(try #require(Self.playlist(first: 10, durations: [1, 1, 1])), after: last))
        #expect(HLSLiveWindow.isCutShort(try #require(Self.playlist(first: 11, durations: [1, 1])), after: last))
        #expect(!HLSLiveWindow.isCutShort(try #require(Self.playlist(first: 11, durations: [1, 1, 1, 1, 1])), after: last))
        #expect(!HLSLiveWindow.isCutShort(try #require(Self.playlist(first: 0, durations: [1, 1])), after: last))
    }

    @Test("a seek's segment: the one holding the time, or the listing's first or last outside it")
    func segmentHoldingATime() throws {
        let reading = HLSLiveWindow.Reading(playlist: try #require(Self.playlist(first: 0, durations: [2, 2, 2])), firstStart: 1)
        #expect(reading.segment(holding: 0).index == 0)
        #expect(reading.segment(holding: 3.5).index == 1)
        #expect(reading.segment(holding: 3).index == 1)
        #expect(reading.segment(holding: 100).index == 2)
    }
}
