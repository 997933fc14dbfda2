import Foundation
import Testing
@testable import MediaPipeline

/// An on-demand HLS media playlist cut to start at a later segment: what stays in force at
/// the first kept segment, and what moves on.
@Suite struct HLSPlaylistCutTests {
    static let spliced = """
        #EXTM3U
        #EXT-X-VERSION:4
        #EXT-X-TARGETDURATION:4
        #EXT-X-MEDIA-SEQUENCE:10
        #EXT-X-PLAYLIST-TYPE:VOD
        #EXT-X-KEY:METHOD=AES-128,URI="keys/one.bin"
        #EXT-X-MAP:URI="init.mp4"
        #EXTINF:4.0,
        #EXT-X-BYTERANGE:1000@0
        main.mp4
        #EXTINF:4.0,
        #EXT-X-BYTERANGE:1500
        main.mp4
        #EXT-X-DISCONTINUITY
        #EXT-X-KEY:METHOD=NONE
        #EXTINF:3.5,
        ad/0.ts
        #EXTINF:3.5,
        ad/1.ts
        #EXT-X-DISCONTINUITY
        #EXT-X-KEY:METHOD=AES-128,URI="keys/two.bin"
        #EXTINF:4.0,
        #EXT-X-BYTERANGE:2000@2500
        main.mp4
        #EXTINF:4.0,
        #EXT-X-BYTERANGE:1800
        main.mp4
        #EXT-X-ENDLIST
        """

    @Test("the segments, their durations and splices are read; the first splice and the segment holding a time are found")
    func readsTheSegments() {
        let playlist = HLSPlaylistCut(parsing: Self.spliced)
        #expect(playlist.segments.map(\.duration) == [4, 4, 3.5, 3.5, 4, 4])
        #expect(playlist.segments.map(\.discontinuous) == [false, false, true, false, true, false])
        #expect(playlist.firstDiscontinuity == 2)
        #expect(playlist.segment(holding: 0).index == 0)
        #expect(playlist.segment(holding: 8).index == 2 && playlist.segment(holding: 8).start == 8)
        #expect(playlist.segment(holding: 14.9).index == 3)
        #expect(playlist.segment(holding: 15).index == 4 && playlist.segment(holding: 15).start == 15)
        // Past the end: the last.
        #expect(playlist.segment(holding: 1_000).index == 5)
        #expect(playlist.trailer == ["#EXT-X-ENDLIST"])
        #expect(!playlist.isMaster)
    }

    @Test("cut at the segment holding a time: the header's sequences move on, the key and map in force are carried, the byte range made explicit")
    func cutCarriesWhatTheKeptSegmentsNeed() {
        let text = HLSPlaylistCut(parsing: Self.spliced).text(from: 20)
        let lines = text.split(separator: "\n").map(String.init)
        // Segment 5 (from 19 s): the media sequence moved on by five, two splices left out.
        #expect(lines.contains("#EXT-X-MEDIA-SEQUENCE:15"))
        #expect(lines.contains("#EXT-X-DISCONTINUITY-SEQUENCE:2"))
        #expect(!lines.contains("#EXT-X-DISCONTINUITY"))
        // The key and map in force at it, once each, before its EXTINF.
        let body = Array(lines.drop { !$0.hasPrefix("#EXT-X-KEY") && !$0.hasPrefix("#EXT-X-MAP") && !$0.hasPrefix("#EXTINF") })
        #expect(body == ["#EXT-X-KEY:METHOD=AES-128,URI=\"keys/two.bin\"", "#EXT-X-MAP:URI=\"init.mp4\"",
                         "#EXTINF:4.0,", "#EXT-X-BYTERANGE:1800@4500", "main.mp4", "#EXT-X-ENDLIST"])
        // Read again, it is the playlist's last segment alone.
        let again = HLSPlaylistCut(parsing: text)
        #expect(again.segments.count == 1)
        #expect(again.firstDiscontinuity == nil)
    }

    @Test("a cut at a splice drops the splice's own mark and counts it; a key the segment sets itself is not doubled")
    func cutAtASplice() {
        let lines = HLSPlaylistCut(parsing: Self.spliced).text(from: 8).split(separator: "\n").map(String.init)
        #expect(lines.contains("#EXT-X-MEDIA-SEQUENCE:12"))
        #expect(lines.contains("#EXT-X-DISCONTINUITY-SEQUENCE:1"))
        #expect(lines.filter { $0.hasPrefix("#EXT-X-KEY") } == ["#EXT-X-KEY:METHOD=NONE", "#EXT-X-KEY:METHOD=AES-128,URI=\"keys/two.bin\""])
        #expect(lines.filter { $0 == "#EXT-X-DISCONTINUITY" }.count == 1)
        #expect(HLSPlaylistCut(parsing: lines.joined(separator: "\n")).segments.map(\.duration) == [3.5, 3.5, 4, 4])
    }

    @Test("the first segment's time leaves the playlist as it was; a master playlist is never cut")
    func nothingToCut() {
        let whole = HLSPlaylistCut(parsing: Self.spliced).text(from: 2)
        #expect(HLSPlaylistCut(parsing: whole).segments.count == 6)
        #expect(whole.contains("#EXT-X-MEDIA-SEQUENCE:10"))
        let master = """
            #EXTM3U
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="en",URI="audio/en.m3u8"
            #EXT-X-STREAM-INF:BANDWIDTH=400000,AUDIO="a"
            high/index.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=64000,AUDIO="a"
            low/index.m3u8
            """
        let playlist = HLSPlaylistCut(parsing: master)
        #expect(playlist.isMaster && playlist.segments.isEmpty)
        #expect(playlist.text(from: 30) == master + "\n")
    }

    @Test("after a redirect every relative URI is made absolute against where the text came from; absolute ones stay")
    func urisFollowARedirect() throws {
        let base = try #require(URL(string: "https://cdn.example/vod/show/index.m3u8"))
        let text = HLSPlaylistCut(parsing: Self.spliced + "\n").text(from: 9, location: base)
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.contains("https://cdn.example/vod/show/ad/0.ts"))
        #expect(lines.contains("#EXT-X-MAP:URI=\"https://cdn.example/vod/show/init.mp4\""))
        #expect(lines.contains("#EXT-X-KEY:METHOD=AES-128,URI=\"https://cdn.example/vod/show/keys/two.bin\""))
        let absolute = HLSPlaylistCut.absolute("http://other.example/a.ts", against: base)
        #expect(absolute == "http://other.example/a.ts")
        let master = HLSPlaylistCut(parsing: "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n../low/index.m3u8\n").text(from: 0, location: base)
        #expect(master.contains("https://cdn.example/vod/low/index.m3u8"))
    }

    @Test("the data URL holds the text, as FFmpeg's data protocol reads it")
    func dataURL() throws {
        let url = HLSPlaylistCut.dataURL("#EXTM3U\n")
        #expect(url.hasPrefix("data:application/vnd.apple.mpegurl;base64,"))
        let encoded = try #require(url.split(separator: ",").last)
        #expect(Data(base64Encoded: String(encoded)).map { String(decoding: $0, as: UTF8.self) } == "#EXTM3U\n")
    }

    @Test("playlist tags after a segment tag stay the playlist's: the media sequence is moved on, not added at zero")
    func playlistTagsAfterASegmentTag() {
        let text = """
            #EXTM3U
            #EXT-X-KEY:METHOD=AES-128,URI="k.bin"
            #EXT-X-VERSION:3
            #EXT-X-MEDIA-SEQUENCE:100
            #EXT-X-TARGETDURATION:2
            #EXTINF:2,
            a.ts
            #EXTINF:2,
            b.ts
            #EXT-X-ENDLIST
            """
        let lines = HLSPlaylistCut(parsing: text).text(from: 3).split(separator: "\n").map(String.init)
        #expect(lines.filter { $0.hasPrefix("#EXT-X-MEDIA-SEQUENCE") } == ["#EXT-X-MEDIA-SEQUENCE:101"])
        #expect(lines.contains("#EXT-X-TARGETDURATION:2") && lines.contains("#EXT-X-VERSION:3"))
        #expect(lines.contains("#EXT-X-KEY:METHOD=AES-128,URI=\"k.bin\""))
        #expect(lines.suffix(3) == ["#EXTINF:2,", "b.ts", "#EXT-X-ENDLIST"])
    }

    @Test("numbers no real playlist holds neither trap nor are moved on: a sequence or a byte range at the edge of Int")
    func hostileNumbers() {
        let text = """
            #EXTM3U
            #EXT-X-MEDIA-SEQUENCE:9223372036854775807
            #EXTINF:1,
            #EXT-X-BYTERANGE:9223372036854775807@9223372036854775807
            a.ts
            #EXTINF:1,
            #EXT-X-BYTERANGE:9223372036854775807
            a.ts
            #EXTINF:1e308,
            #EXT-X-BYTERANGE:-5@-7
            a.ts
            #EXTINF:nan,
            b.ts
            """
        let playlist = HLSPlaylistCut(parsing: text)
        #expect(playlist.segments.map(\.duration) == [1, 1, 1e308, 0])
        let lines = playlist.text(from: 2.5).split(separator: "\n").map(String.init)
        #expect(lines.contains("#EXT-X-MEDIA-SEQUENCE:9223372036854775807"))
        #expect(lines.contains("#EXT-X-BYTERANGE:-5@-7"))
        #expect(HLSPlaylistCut(parsing: text).text(from: 1.5).contains("#EXT-X-BYTERANGE:9223372036854775807\n"))
    }
}

