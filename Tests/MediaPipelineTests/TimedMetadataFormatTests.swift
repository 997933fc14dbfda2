import Foundation
import Testing
import ChorusTestSupport
@testable import MediaPipeline
import MediaClock

/// Reading ID3 tags and ICY blocks, which come from the network and are trusted in nothing.
@Suite(.ownThread) struct TimedMetadataFormatTests {
    /// An ID3v2 tag of `version` holding `frames` (each an id and its body).
    func tag(version: UInt8, _ frames: [(String, [UInt8])], padding: Int = 0) -> [UInt8] {
        func size(_ value: Int, syncsafe: Bool) -> [UInt8] {
            syncsafe ? [UInt8(value >> 21 & 0x7F), UInt8(value >> 14 & 0x7F), UInt8(value >> 7 & 0x7F), UInt8(value & 0x7F)]
                : [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
        }
        var body: [UInt8] = []
        for (id, content) in frames { body += Array(id.utf8) + size(content.count, syncsafe: version == 4) + [0, 0] + content }
        body += [UInt8](repeating: 0, count: padding)
        return Array("ID3".utf8) + [version, 0, 0] + size(body.count, syncsafe: true) + body
    }

    @Test func id3TextFramesAreReadInEachEncoding() {
        let utf16: [UInt8] = [1, 0xFF, 0xFE] + Array("Ünder".utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }) + [0, 0]
        let frames = TimedMetadataFormat.id3TextFrames(tag(version: 3, [
            ("TIT2", [0] + Array("Caf\u{E9}".unicodeScalars.map { UInt8($0.value) })),
            ("TPE1", utf16),
            ("APIC", [0, 1, 2, 3]),
            ("TXXX", [3] + Array("station".utf8) + [0] + Array("Chorus FM".utf8)),
        ], padding: 12))
        #expect(frames == [
            TimedMetadataEntry(keySpace: .id3, key: "TIT2", value: "Café"),
            TimedMetadataEntry(keySpace: .id3, key: "TPE1", value: "Ünder"),
            TimedMetadataEntry(keySpace: .id3, key: "TXXX", info: "station", value: "Chorus FM"),
        ])
        let made = TimedMetadataFormat.id3Tag(title: "Now – Playing")
        #expect(TimedMetadataFormat.id3TextFrames(made) == [TimedMetadataEntry(keySpace: .id3, key: "TIT2", value: "Now – Playing")])
        // Big-endian UTF-16 (v2.4's encoding 2), and v2.4's list of values: the first is taken.
        let bigEndian: [UInt8] = [2] + Array("Zw".utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] })
        let listed: [UInt8] = [3] + Array("One".utf8) + [0] + Array("Two".utf8)
        #expect(TimedMetadataFormat.id3TextFrames(tag(version: 4, [("TALB", bigEndian), ("TPE2", listed)]))
                == [TimedMetadataEntry(keySpace: .id3, key: "TALB", value: "Zw"), TimedMetadataEntry(keySpace: .id3, key: "TPE2", value: "One")])
    }

    @Test func aTimedPacketThatLostItsFirstFiveBytesIsReadAsTheTagItWas() {
        let made = TimedMetadataFormat.id3Tag(title: "Song")
        let expected = [TimedMetadataEntry(keySpace: .id3, key: "TIT2", value: "Song")]
        #expect(TimedMetadataFormat.id3TextFrames(inTimedPacket: made) == expected)
        #expect(TimedMetadataFormat.id3TextFrames(inTimedPacket: Array(made.dropFirst(5))) == expected)
        // A v2.3 tag whose frame is 200 bytes (its size is not syncsafe), cut so.
        let long = String(repeating: "x", count: 199)
        let v3 = tag(version: 3, [("TIT2", [0] + Array(long.utf8))])
        #expect(TimedMetadataFormat.id3TextFrames(inTimedPacket: Array(v3.dropFirst(5))).map(\.value) == [long])
        // Anything else is not taken for a cut tag.
        #expect(TimedMetadataFormat.id3TextFrames(inTimedPacket: Array(made.dropFirst(4))).isEmpty)
        #expect(TimedMetadataFormat.id3TextFrames(inTimedPacket: [0, 0, 0, 0, 0]).isEmpty)
    }

    @Test func damagedId3TagsGiveWhatIsWholeOrNothing() {
        let whole = tag(version: 4, [("TIT2", [3] + Array("Title".utf8)), ("TPE1", [3] + Array("Artist".utf8))])
        // Cut inside the second frame: the first is kept.
        #expect(TimedMetadataFormat.id3TextFrames(Array(whole.prefix(whole.count - 3))).map(\.value) == ["Title"])
        // Not a tag, an unknown version, a size that is not syncsafe, a frame that claims
        // more than the tag holds, an unknown text encoding, bad UTF-8, a UTF-16 text
        // without its byte order mark.
        #expect(TimedMetadataFormat.id3TextFrames(Array("ID2".utf8) + whole.dropFirst(3)).isEmpty)
        var version = whole; version[3] = 5
        #expect(TimedMetadataFormat.id3TextFrames(version).isEmpty)
        var size = whole; size[6] = 0x80
        #expect(TimedMetadataFormat.id3TextFrames(size).isEmpty)
        var frameSize = whole; frameSize[17] = 0x7F
        #expect(TimedMetadataFormat.id3TextFrames(frameSize).isEmpty)
        #expect(TimedMetadataFormat.id3TextFrames(tag(version: 4, [("TIT2", [7, 65])])).isEmpty)
        #expect(TimedMetadataFormat.id3TextFrames(tag(version: 4, [("TIT2", [3, 0xC3, 0x28])])).isEmpty)
        #expect(TimedMetadataFormat.id3TextFrames(tag(version: 3, [("TIT2", [1, 65, 0])])).isEmpty)
        #expect(TimedMetadataFormat.id3TextFrames([]).isEmpty)
    }

    @Test func randomBytesNeverCrashTheReaders() {
        var generator = SeededGenerator(seed: 0x1D3)
        print("seed 0x1D3")
        for _ in 0..<2_000 {
            var bytes = tag(version: UInt8.random(in: 3...4, using: &generator), [("TIT2", [3] + Array("x".utf8))])
            for _ in 0..<Int.random(in: 1...8, using: &generator) {
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                bytes[index] = UInt8.random(in: 0...255, using: &generator)
            }
            bytes += (0..<Int.random(in: 0...40, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = TimedMetadataFormat.id3TextFrames(bytes)
            _ = TimedMetadataFormat.icyFields(TimedMetadataFormat.icyText(bytes))
        }
    }

    @Test func icyBlocksKeepTitlesWhole() {
        #expect(TimedMetadataFormat.icyFields("StreamTitle='Rock 'n' Roll - The Band';StreamUrl='http://example.com/x';")
                == [TimedMetadataEntry(keySpace: .icy, key: "StreamTitle", value: "Rock 'n' Roll - The Band"),
                    TimedMetadataEntry(keySpace: .icy, key: "StreamUrl", value: "http://example.com/x")])
        #expect(TimedMetadataFormat.icyFields("StreamTitle='';").map(\.value) == [""])
        #expect(TimedMetadataFormat.icyFields("StreamTitle='Unterminated").map(\.value) == ["Unterminated"])
        #expect(TimedMetadataFormat.icyFields("garbage without fields").isEmpty)
        // Padding is dropped; Latin-1 from an older station is read as such.
        #expect(TimedMetadataFormat.icyText(Array("StreamTitle='Caf".utf8) + [0xE9] + Array("';".utf8) + [0, 0, 0]) == "StreamTitle='Café';")
    }

    @Test func theLogKeepsOneGroupPerChangeAndFindsTheOneInEffect() {
        let log = TimedMetadataLog()
        func group(_ seconds: Double, _ title: String) -> TimedMetadataGroup {
            TimedMetadataGroup(time: CMTime(seconds: seconds, preferredTimescale: 1000), entries: [TimedMetadataEntry(keySpace: .icy, key: "StreamTitle", value: title)])
        }
        log.add(group(1, "A"))
        log.add(group(3, "A"))      // repeated unchanged: the first still holds
        log.add(group(5, "B"))
        log.add(group(1, "A"))      // read again after a seek back
        #expect(log.all.map(\.time.seconds) == [1, 5])
        #expect(log.group(at: CMTime(seconds: 0.5, preferredTimescale: 1000)) == nil)
        let inEffect = log.group(at: CMTime(seconds: 4, preferredTimescale: 1000))
        #expect(inEffect?.group.entries.first?.value == "A")
        #expect(inEffect?.until == CMTime(seconds: 5, preferredTimescale: 1000))
        #expect(log.groups(after: CMTime(seconds: 1, preferredTimescale: 1000), through: CMTime(seconds: 5, preferredTimescale: 1000)).map(\.time.seconds) == [5])
    }

    @Test("a packed-audio segment's tag gives the time it stamps (33 bits of the 90 kHz clock), and a tag without the stamp, or with a short one, none")
    func transportStreamTimestamps() {
        let owner = Array("com.apple.streaming.transportStreamTimestamp".utf8) + [0]
        func stamped(_ bytes: [UInt8]) -> [UInt8] {
            tag(version: 4, [("TIT2", [3] + Array("News".utf8)), ("PRIV", owner + bytes)])
        }
        #expect(TimedMetadataFormat.transportStreamTimestamp(inTag: stamped([0, 0, 0, 0, 0, 0x0D, 0xBB, 0xA0])) == 900_000)
        // Bits above the 33rd are not the clock's.
        #expect(TimedMetadataFormat.transportStreamTimestamp(inTag: stamped([0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 1])) == 4_294_967_297)
        #expect(TimedMetadataFormat.transportStreamTimestamp(inTag: stamped([0, 0, 0, 1])) == nil)
        #expect(TimedMetadataFormat.transportStreamTimestamp(inTag: tag(version: 4, [("PRIV", Array("other.owner".utf8) + [0] + [UInt8](repeating: 1, count: 8))])) == nil)
        #expect(TimedMetadataFormat.transportStreamTimestamp(inTag: tag(version: 4, [("TIT2", [3, 0x41])])) == nil)
        #expect(TimedMetadataFormat.transportStreamTimestamp(inTag: Array("ID3".utf8)) == nil)
        // The title beside the stamp is read as before.
        #expect(TimedMetadataFormat.id3TextFrames(stamped([0, 0, 0, 0, 0, 0, 0, 1])) == [TimedMetadataEntry(keySpace: .id3, key: "TIT2", value: "News")])
    }
}

