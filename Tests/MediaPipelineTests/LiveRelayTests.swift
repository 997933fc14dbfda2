import ChorusTestSupport
import Foundation
import MediaServer
import Testing
internal import CFFmpeg
@testable import MediaPipeline

/// A station over plain HTTP relayed as a live HLS stream (the leader's relay): what it
/// relays, what it leaves alone, and how it ends.
@Suite(.ownThread) struct LiveRelayTests {
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
    @Test func aDroppedConnectionIsMadeAgain() async throws {
        let station = try StationServer(broadcasting: try TestMedia.station(seconds: 20), seconds: 20, dropAfter: 5)
        defer { station.stop() }
        let relay = try #require(LiveRelay.start(url: station.url.absoluteString, in: Self.folder()))
        defer { relay.stop() }
        #expect(relay.waitUntilReady(timeout: .seconds(20)))
        #expect(await waitUntil(30) { relay.secondsRelayed > 9 || relay.failure != nil })
        #expect(relay.failure == nil, "\(String(describing: relay.failure))")
        #expect(station.connections >= 2, "the relay's, and the relay's again")
        let text = try String(contentsOf: relay.playlist, encoding: .utf8)
        #expect(HLSMediaPlaylist(parsing: text)?.ended == false, "\(text)")
    }

    /// The station goes off the air: the relay says so and closes its playlist, so players
    /// reach its end instead of waiting for more.
    @Test func aStationGoingOffTheAirEndsThePlaylist() async throws {
        let station = try StationServer(broadcasting: try TestMedia.station(seconds: 20), seconds: 20)
        let relay = try #require(LiveRelay.start(url: station.url.absoluteString, in: Self.folder()))
        defer { relay.stop() }
        #expect(relay.waitUntilReady(timeout: .seconds(20)))
        station.stop()
        // The relay's read fails at the server's close, or after its read timeout at most.
        #expect(await waitUntil(20) { relay.failure != nil })
        let text = try String(contentsOf: relay.playlist, encoding: .utf8)
        #expect(HLSMediaPlaylist(parsing: text)?.ended == true, "\(text)")
    }

    /// A station of sound and pictures whose times jump (an MPEG-TS broadcast spliced from
    /// two encodings 50 s apart, and starting over every 4 s): the relayed times run on, and
    /// each picture keeps its place beside its sound across every jump. (Were each stream
    /// closed up on its own, the pictures after a jump would be moved by where the pictures
    /// before it ended, 27 ms from where the sound puts them.)
    @Test func aSplicedStationsPicturesStayBesideItsSound() async throws {
        let hls = try TestMedia.splicedHLS(seconds: 4, offsets: (0, 50))
        let broadcast = Self.folder().appendingPathComponent("spliced-station.ts")
        try FileManager.default.createDirectory(at: Self.folder(), withIntermediateDirectories: true)
        try hls.segments.reduce(into: Data()) { $0.append(try Data(contentsOf: hls.folder.appendingPathComponent($1))) }
            .write(to: broadcast)
        let original = try RawPackets(broadcast.path)
        // In the broadcast: each encoding's first picture (a keyframe) and first sound packet
        // (its priming), each like no other packet of its stream, with the distance between them.
        let starts = try [0.0, 50.0].map { offset in
            let sound = try #require(original.packets.first { !$0.isPicture && $0.time >= offset })
            let picture = try #require(original.packets.first { $0.isPicture && $0.time >= offset })
            return (firstSound: sound.bytes, firstPicture: picture.bytes, pictureAfterSound: picture.time - sound.time)
        }
        for start in starts {
            #expect(original.packets.filter { $0.bytes == start.firstPicture }.count == 1)
            // The two encodings' first sound packets are alike (the same tone from its start),
            // and like no other.
            #expect(original.packets.filter { $0.bytes == start.firstSound }.count == 2)
        }

        let station = try StationServer(broadcasting: broadcast, seconds: 4, contentType: "video/mp2t")
        defer { station.stop() }
        let relay = try #require(LiveRelay.start(url: station.url.absoluteString, in: Self.folder()))
        defer { relay.stop() }
        // Past at least two jumps: the splice at 2 s and the start over at 4 s.
        #expect(await waitUntil(30) { relay.secondsRelayed > 7 || relay.failure != nil })
        #expect(relay.failure == nil, "\(String(describing: relay.failure))")
        let text = try String(contentsOf: relay.playlist, encoding: .utf8)
        let segments = text.split(separator: "\n").filter { !$0.hasPrefix("#") }
        let relayedFile = Self.folder().appendingPathComponent("spliced-relayed.ts")
        try segments.reduce(into: Data()) { $0.append(try Data(contentsOf: relay.folder.appendingPathComponent(String($1)))) }
            .write(to: relayedFile)
        let relayed = try RawPackets(relayedFile.path)

        // The relayed times run on: no jump in either stream.
        for isPicture in [false, true] {
            let times = relayed.packets.filter { $0.isPicture == isPicture }.map(\.time)
            #expect(times.count > 50)
            #expect(zip(times, times.dropFirst()).allSatisfy { $1 > $0 && $1 - $0 < 0.1 }, "pictures: \(isPicture)")
        }
        // Wherever an encoding's first picture was relayed, its first sound packet was relayed
        // at the same distance before it, to a tick of the 90 kHz clock.
        let tick = 1.0 / 90_000
        var startsSeen = 0
        for packet in relayed.packets where packet.isPicture {
            guard let start = starts.first(where: { $0.firstPicture == packet.bytes }) else { continue }
            let soundTime = packet.time - start.pictureAfterSound
            guard relayed.packets.first(where: { !$0.isPicture })?.time ?? .infinity < soundTime - 0.1 else { continue }
            startsSeen += 1
            let sound = relayed.packets.filter { !$0.isPicture }.min { abs($0.time - soundTime) < abs($1.time - soundTime) }
            #expect(sound.map { abs($0.time - soundTime) <= tick } == true, "sound at \(String(describing: sound?.time)) for \(soundTime)")
            #expect(sound?.bytes == start.firstSound, "the encoding's first sound packet is there")
        }
        #expect(startsSeen >= 1)
    }
}

/// Every packet of an input, in its order, with its raw decoding time (seconds) and a hash
/// of its bytes.
private struct RawPackets {
    struct Packet {
        var isPicture: Bool
        var time: Double
        var bytes: Int
    }
    var packets: [Packet] = []

    init(_ path: String) throws {
        let source = try MediaSource(url: path)
        let context = source.formatContext
        var packet = av_packet_alloc()
        defer { av_packet_free(&packet) }
        let current = try #require(packet)
        while source.readFrame(current) >= 0 {
            defer { av_packet_unref(current) }
            guard let stream = context.pointee.streams[Int(current.pointee.stream_index)] else { continue }
            let type = stream.pointee.codecpar.pointee.codec_type
            guard type == AVMEDIA_TYPE_VIDEO || type == AVMEDIA_TYPE_AUDIO, current.pointee.dts != FFmpegCall.noPTS else { continue }
            let base = stream.pointee.time_base
            var hasher = Hasher()
            if let data = current.pointee.data {
                hasher.combine(bytes: UnsafeRawBufferPointer(start: data, count: Int(current.pointee.size)))
            }
            packets.append(Packet(isPicture: type == AVMEDIA_TYPE_VIDEO,
                                  time: Double(current.pointee.dts) * Double(base.num) / Double(base.den),
                                  bytes: hasher.finalize()))
        }
    }
}
