import Testing
import ChorusTestSupport
@testable import MediaPipeline

@Suite("HTTP fields an asset asks its requests to carry", .ownThread)
struct HTTPRequestFieldsTests {
    @Test("fields are an asset URL's while registered, the latest registration's; another URL of the server has none")
    func registeredPerAsset() throws {
        let location = "http://example.net/radio/stream.m3u8"
        var registration = HTTPRequestFields.register(HTTPRequestFields(userAgent: "Room/2"), for: location)
        #expect(registration != nil)
        #expect(HTTPRequestFields.fields(for: location)?.userAgent == "Room/2")
        // Another asset of the same server has its own fields, or none.
        #expect(HTTPRequestFields.fields(for: "http://example.net/radio/other.m3u8") == nil)
        // A later registration of the same URL is used while it lasts.
        var later = HTTPRequestFields.register(HTTPRequestFields(userAgent: "Later/1"), for: location)
        #expect(HTTPRequestFields.fields(for: location)?.userAgent == "Later/1")
        later = nil
        #expect(HTTPRequestFields.fields(for: location)?.userAgent == "Room/2")
        registration = nil
        #expect(HTTPRequestFields.fields(for: location) == nil)
        // Nothing to register, or a URL that is not HTTP's.
        #expect(HTTPRequestFields.register(HTTPRequestFields(), for: location) == nil)
        #expect(HTTPRequestFields.register(HTTPRequestFields(userAgent: "x"), for: "/music/song.flac") == nil)
        withExtendedLifetime((registration, later)) {}
    }

    @Test("the cookies' pairs go as one Cookie field; a line break or a bad name cannot start a field of its own")
    func headerLinesCannotBeInjected() {
        let fields = HTTPRequestFields(userAgent: "Room/2", headers: ["X-Token": "abc", "X-Bad": "a\r\nInjected: yes", "Bad Name": "x",
                                                                      "Colon:Name": "y", "": "z"],
                                       cookies: ["id=7; domain=example.net; path=/", "theme=dark"])
        #expect(fields.ffmpegUserAgent == "Room/2")
        #expect(fields.ffmpegHeaders == "Cookie: id=7; theme=dark\r\nX-Token: abc\r\n")
        // A user agent that would break its line is not sent.
        #expect(HTTPRequestFields(userAgent: "Room/2\r\nInjected: yes").ffmpegUserAgent == nil)
        #expect(HTTPRequestFields(userAgent: "Room\n2").ffmpegUserAgent == nil)
        #expect(HTTPRequestFields(headers: ["X-A": "b\u{0}c"]).ffmpegHeaders == nil)
    }
}
