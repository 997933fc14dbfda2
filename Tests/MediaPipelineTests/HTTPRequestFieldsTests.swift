import Testing
import ChorusTestSupport
internal import CFFmpeg
@testable import MediaPipeline

@Suite("HTTP fields an asset asks its requests to carry", .ownThread)
struct HTTPRequestFieldsTests {
    /// FFmpeg's options as `add(for:to:)` sets them, by name.
    static func options(for url: String) -> [String: String] {
        var options: OpaquePointer?
        defer { av_dict_free(&options) }
        HTTPRequestFields.add(for: url, to: &options)
        var result: [String: String] = [:]
        var entry: UnsafeMutablePointer<AVDictionaryEntry>?
        while let next = av_dict_get(options, "", entry, AV_DICT_IGNORE_SUFFIX) {
            result[String(cString: next.pointee.key)] = String(cString: next.pointee.value)
            entry = next
        }
        return result
    }

    @Test("fields are the server's while registered, the latest registration's; a line break cannot start a field of its own")
    func registeredPerServer() throws {
        let fields = HTTPRequestFields(userAgent: "Room/2", headers: ["X-Token": "abc", "X-Bad": "a\r\nInjected: yes"],
                                       cookies: ["id=7; domain=example.net; path=/", "theme=dark"])
        var registration = HTTPRequestFields.register(fields, for: "http://Example.net/radio/stream.m3u8")
        #expect(registration != nil)
        // Any URL of the same server (a variant, a segment), default port or not.
        let options = Self.options(for: "http://example.net:80/radio/low/segment1.ts")
        #expect(options["user_agent"] == "Room/2")
        #expect(options["headers"] == "Cookie: id=7; theme=dark\r\nX-Token: abc\r\n")
        // Another server, another scheme or port, a file: nothing added.
        #expect(Self.options(for: "https://example.net/radio/stream.m3u8").isEmpty)
        #expect(Self.options(for: "http://example.net:8080/x").isEmpty)
        #expect(Self.options(for: "/music/song.flac").isEmpty)
        // A later registration for the server is used while it lasts.
        var later = HTTPRequestFields.register(HTTPRequestFields(userAgent: "Later/1"), for: "http://example.net/other")
        #expect(Self.options(for: "http://example.net/x")["user_agent"] == "Later/1")
        later = nil
        #expect(Self.options(for: "http://example.net/x")["user_agent"] == "Room/2")
        registration = nil
        #expect(HTTPRequestFields.fields(for: "http://example.net/x") == nil)
        #expect(HTTPRequestFields.register(HTTPRequestFields(), for: "http://example.net/") == nil)
        withExtendedLifetime((registration, later)) {}
    }
}
