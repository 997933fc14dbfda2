import ChorusTestSupport
import Foundation
import MediaServer
import Testing
@testable import MediaPipeline

/// A station over plain HTTP relayed as a live HLS stream (the leader's relay): what it
/// relays, what it leaves alone, and how it ends.
@Suite struct LiveRelayTests {
    static func folder() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("chorus-relay-tests-\(getpid())", isDirectory: true)
    }

    @Test func aStationIsRelayedAsALiveHLSStreamFromOneConnection() throws {
        let station = try StationServer(broadcasting: try TestMedia.station(seconds: 20), seconds: 20)
        defer { station.stop() }
        let relay = try #require(LiveRelay.start(url: station.url.absoluteString, in: Self.folder()))
        defer { relay.stop() }
        #expect(relay.waitUntilReady(timeout: .seconds(20)))
        #expect(relay.secondsRelayed >= LiveRelay.readySeconds)

        let text = try String(contentsOf: relay.playlist, encoding: .utf8)
        let playlist = try #require(HLSMediaPlaylist(parsing: text))
        #expect(!playlist.ended, "a station that goes on is a live playlist")
        #expect(playlist.durations.count >= HLSLiveWindow.defaultStartFromEnd, "\(text)")
        #expect(playlist.durations.allSatisfy { abs($0 - Double(LiveRelay.segmentSeconds)) < 0.1 }, "\(playlist.durations)")

        // Played, it is a live HLS stream of the station's sound; the station was asked once.
        let source = try MediaSource(url: relay.playlist.path)
        #expect(source.info.isLiveHLS)
        #expect(source.info.preferredAudioTrack?.codec == "mp3")
        #expect(source.info.preferredAudioTrack?.sampleRate == 48_000)
        #expect(station.connections == 1)

        relay.stop()
        #expect(!FileManager.default.fileExists(atPath: relay.folder.path), "the relay's folder is removed")
        #expect(relay.failure == nil, "a relay that was stopped did not fail")
    }

    @Test func aFileOrAPlaylistIsNotRelayed() throws {
        let server = try MediaHTTPServer(address: "127.0.0.1", port: 0)
        defer { server.stop() }
        let file = server.publish(try TestMedia.tone(.mp3, seconds: 2), id: "file")
        #expect(LiveRelay.start(url: "http://127.0.0.1:\(server.port)\(file)", in: Self.folder()) == nil)
        let hls = try TestMedia.hls(seconds: 3)
        let playlist = server.publishFolder(of: hls.folder.appendingPathComponent("index.m3u8"), id: "hls")
        #expect(LiveRelay.start(url: "http://127.0.0.1:\(server.port)\(playlist)", in: Self.folder()) == nil)
        // A local file is never a network stream, whatever it holds.
        #expect(LiveRelay.start(url: try TestMedia.station(seconds: 20).path, in: Self.folder()) == nil)
        // Nothing there: no relay, and the item's own opening says why.
        #expect(LiveRelay.start(url: "http://127.0.0.1:1/station.mp3", in: Self.folder()) == nil)
    }

    /// The station's connection drops: the relay connects again and goes on, the rooms
    /// hearing a jump in the station, not an end.
    @Test func aDroppedConnectionIsMadeAgain() throws {
        let station = try StationServer(broadcasting: try TestMedia.station(seconds: 20), seconds: 20, dropAfter: 5)
        defer { station.stop() }
        let relay = try #require(LiveRelay.start(url: station.url.absoluteString, in: Self.folder()))
        defer { relay.stop() }
        #expect(relay.waitUntilReady(timeout: .seconds(20)))
        #expect(waitUntil(30) { relay.secondsRelayed > 9 || relay.failure != nil })
        #expect(relay.failure == nil, "\(String(describing: relay.failure))")
        #expect(station.connections >= 2, "the relay's, and the relay's again")
        let text = try String(contentsOf: relay.playlist, encoding: .utf8)
        #expect(HLSMediaPlaylist(parsing: text)?.ended == false, "\(text)")
    }

    /// The station goes off the air: the relay says so and closes its playlist, so players
    /// reach its end instead of waiting for more.
    @Test func aStationGoingOffTheAirEndsThePlaylist() throws {
        let station = try StationServer(broadcasting: try TestMedia.station(seconds: 20), seconds: 20)
        let relay = try #require(LiveRelay.start(url: station.url.absoluteString, in: Self.folder()))
        defer { relay.stop() }
        #expect(relay.waitUntilReady(timeout: .seconds(20)))
        station.stop()
        // The relay's read fails at the server's close, or after its read timeout at most.
        #expect(waitUntil(20) { relay.failure != nil })
        let text = try String(contentsOf: relay.playlist, encoding: .utf8)
        #expect(HLSMediaPlaylist(parsing: text)?.ended == true, "\(text)")
    }
}
