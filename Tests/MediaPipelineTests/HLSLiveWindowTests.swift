import Testing
import ChorusTestSupport
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

    @Test("the segment the stream opened at, three from the end, begins where its first packet was stamped; each reading carries the last one's times on by the segments they share")
    func placing() throws {
        let first = HLSLiveWindow.place(try #require(Self.playlist(first: 10, durations: [2, 2, 2, 2, 2])), after: nil, openedAt: 100, startFromEnd: 3)
        #expect(first.firstStart == 96)
        #expect(first.start(ofIndex: 2) == 100)
        // Ten seconds listed, less three target durations of hold-back.
        #expect(first.seekable == 96...100)
        // Two segments later, one of them shorter.
        let moved = HLSLiveWindow.place(try #require(Self.playlist(first: 12, durations: [2, 1.5, 2, 2, 2])), after: first, openedAt: 100, startFromEnd: 3)
        #expect(moved.firstStart == 100)
        #expect(moved.end == 109.5)
        #expect(moved.seekable == 100...103.5)
        #expect(moved.segment(holding: 102.2).index == 1 && moved.segment(holding: 102.2).start == 102)
        // Out of sight of every segment known (a reading missed): target durations stand in.
        let far = HLSLiveWindow.place(try #require(Self.playlist(first: 20, durations: [2, 2])), after: moved, openedAt: 100, startFromEnd: 3)
        #expect(far.firstStart == 109.5 + 3 * 2)
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
