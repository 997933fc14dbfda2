import Testing
import ChorusTestSupport
import GroupSync
import MediaClock

@Suite("WireCodec", .ownThread)
struct WireCodecTests {
    static let state = GroupState(
        sequence: 42, itemIndex: 3, itemURL: "http://192.0.2.1:8080/items/3/song é.flac",
        itemDuration: CMTime(value: 12_345_678, timescale: 48_000), rate: 1,
        anchorItemTime: CMTime(value: 96_000, timescale: 48_000), anchorLeaderTime: LeaderTime(nanoseconds: -123_456_789),
        ended: false, stopped: false, audioStream: 2, subtitleStream: 5, nextItemURL: "/items/4/next é.flac",
        joinsPrevious: true,
        splices: [TimelineSplice(startNanoseconds: 63_427_000_000, shiftNanoseconds: -50_000_000_000),
                  TimelineSplice(startNanoseconds: .max - 1, shiftNanoseconds: .min)]
    )

    static let payloads: [GroupMessage.Payload] = [
        .hello(.init(followerName: "Kitchen 🍳", latencyOffsetMicroseconds: -2_500)),
        .welcome(.init(leaderID: 0xDEAD_BEEF_0000_0001, statePeriodMilliseconds: 250, baseURL: "http://[2001:db8::1]:8080/")),
        .clockRequest(.init(requestID: 7, t1: 1_000_000_123)),
        .clockReply(.init(requestID: 7, t1: 1_000_000_123, t2: .max, t3: .min)),
        .state(state),
        .state(GroupState(sequence: 1, itemIndex: 0, itemURL: "", itemDuration: .indefinite, rate: 0,
                          anchorItemTime: .zero, anchorLeaderTime: LeaderTime(nanoseconds: 0), ended: true, stopped: true)),
        .goodbye,
    ]

    static func message(_ payload: GroupMessage.Payload, sequence: UInt64 = 1, group: String = "living room") -> GroupMessage {
        GroupMessage(senderID: 0x0102_0304_0506_0708, sequence: sequence, group: group, payload: payload)
    }

    static var keyed: WireCodec { WireCodec(authenticator: MessageAuthenticator(key: GroupKey(bytes: Array(repeating: UInt8(7), count: 32)))) }

    @Test(arguments: payloads)
    func roundTripsUnkeyedAndKeyed(payload: GroupMessage.Payload) throws {
        for codec in [WireCodec(), Self.keyed] {
            let message = Self.message(payload)
            let bytes = try codec.encode(message)
            let decoded = try codec.decode(bytes)
            #expect(decoded.message == message)
            #expect(decoded.isTagged == (codec.authenticator != nil))
            #expect(decoded.isAuthentic == (codec.authenticator != nil))
        }
    }

    @Test func headerLayoutIsBigEndian() throws {
        let bytes = try WireCodec().encode(Self.message(.clockRequest(.init(requestID: 0x0A0B_0C0D, t1: 0x1122_3344_5566_7788)), sequence: 9, group: "g"))
        #expect(Array(bytes[0..<4]) == Array("CHRS".utf8))
        #expect(bytes[4] == 3 && bytes[5] == 3 && bytes[6] == 0 && bytes[7] == 0)
        #expect(Array(bytes[8..<16]) == [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(Array(bytes[16..<24]) == [0, 0, 0, 0, 0, 0, 0, 9])
        #expect(bytes[24] == 1 && bytes[25] == UInt8(ascii: "g"))
        #expect(Array(bytes[26..<28]) == [0, 12])
        #expect(Array(bytes[28..<32]) == [0x0A, 0x0B, 0x0C, 0x0D])
        #expect(Array(bytes[32..<40]) == [0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88])
        #expect(bytes.count == 40)
        let tagged = try Self.keyed.encode(Self.message(.goodbye))
        #expect(tagged[6] == 1)
        #expect(tagged.count == 24 + 1 + 11 + 2 + 32)
    }

    @Test func encodingRejectsOversizedFields() {
        #expect(throws: EncodeError.invalidGroupName(byteCount: 65)) {
            try WireCodec().encode(Self.message(.goodbye, group: String(repeating: "g", count: 65)))
        }
        #expect(throws: EncodeError.invalidGroupName(byteCount: 0)) { try WireCodec().encode(Self.message(.goodbye, group: "")) }
        #expect(throws: EncodeError.self) {
            try WireCodec().encode(Self.message(.hello(.init(followerName: String(repeating: "n", count: 256)))))
        }
    }

    /// Valid bytes of a State message, and a function that patches them.
    static func stateBytes() throws -> [UInt8] { try WireCodec().encode(message(.state(state))) }

    @Test func malformedDatagramsGetTheirOwnErrors() throws {
        let codec = WireCodec()
        let valid = try Self.stateBytes()
        let groupLength = Int(valid[24])
        let bodyStart = 25 + groupLength + 2
        func patched(_ offset: Int, _ value: UInt8) -> [UInt8] { var copy = valid; copy[offset] = value; return copy }
        func expectError(_ bytes: [UInt8], _ expected: DecodeError, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(throws: expected, sourceLocation: sourceLocation) { try codec.decode(bytes) }
        }
        expectError([], .truncated(field: "magic").asLengthPastEnd)
        expectError(Array(valid.prefix(3)), DecodeError.lengthPastEnd(field: "magic"))
        expectError(patched(0, UInt8(ascii: "X")), .badMagic)
        expectError(patched(4, 1), .unsupportedVersion(1))
        expectError(patched(4, 2), .unsupportedVersion(2))
        expectError(patched(4, 4), .unsupportedVersion(4))
        expectError(patched(5, 0), .unknownType(0))
        expectError(patched(5, 99), .unknownType(99))
        expectError(Array(valid.prefix(20)), .truncated(field: "sequence"))
        expectError(patched(24, 65), .groupNameTooLong(65))
        expectError(patched(25, 0xFF), .invalidUTF8(field: "group name"))
        expectError(Array(valid.prefix(bodyStart + 4)), .lengthPastEnd(field: "body"))
        // Body length one short of the fields: the last field (the last splice's shift) is cut.
        var short = valid
        short[bodyStart - 1] &-= 1
        short.removeLast()
        expectError(short, .truncated(field: "splice shift"))
        // Splices: more than eight, and starts that do not rise.
        let splicesStart = valid.count - 1 - 16 * Self.state.splices.count
        expectError(patched(splicesStart, UInt8(GroupState.maximumSplices + 1)), .invalidSplices)
        var unordered = valid
        unordered.replaceSubrange((splicesStart + 17)..<(splicesStart + 25), with: Array(unordered[(splicesStart + 1)..<(splicesStart + 9)]))
        expectError(unordered, .invalidSplices)
        // A stream index below -1 (none); the streams lie before the next item's URL.
        let nextLength = Array(Self.state.nextItemURL.utf8).count + 2
        let streamsEnd = splicesStart - nextLength
        var stream = valid
        stream.replaceSubrange((streamsEnd - 8)..<(streamsEnd - 4), with: [0xFF, 0xFF, 0xFF, 0xFE])
        expectError(stream, .invalidStreamIndex(field: "audio stream"))
        stream = valid
        stream.replaceSubrange((streamsEnd - 4)..<streamsEnd, with: [0x80, 0, 0, 0])
        expectError(stream, .invalidStreamIndex(field: "subtitle stream"))
        // Body length one past the fields, with the extra byte present.
        var long = valid
        long[bodyStart - 1] &+= 1
        long.append(0)
        expectError(long, .bodyLengthMismatch)
        expectError(valid + [0], .trailingBytes)
        // Item URL length past the end of the body.
        var url = valid
        url[bodyStart + 12] = 0xFF
        expectError(url, .lengthPastEnd(field: "item URL"))
        // Invalid UTF-8 inside the URL.
        expectError(patched(bodyStart + 14, 0xC3 ^ 0x40 | 0x80), .invalidUTF8(field: "item URL"))
        // Rate: NaN and infinity.
        let urlLength = Int(valid[bodyStart + 12]) << 8 | Int(valid[bodyStart + 13])
        let rateOffset = bodyStart + 14 + urlLength + 12
        var nan = valid
        nan.replaceSubrange(rateOffset..<(rateOffset + 8), with: withUnsafeBytes(of: Double.nan.bitPattern.bigEndian) { Array($0) })
        expectError(nan, .nonFiniteRate)
        var infinite = valid
        infinite.replaceSubrange(rateOffset..<(rateOffset + 8), with: withUnsafeBytes(of: Double.infinity.bitPattern.bigEndian) { Array($0) })
        expectError(infinite, .nonFiniteRate)
        // Negative duration timescale; zero anchor timescale.
        expectError(patched(rateOffset - 4, 0x80), .invalidTimescale(field: "item duration"))
        var anchor = valid
        anchor.replaceSubrange((rateOffset + 16)..<(rateOffset + 20), with: [0, 0, 0, 0])
        expectError(anchor, .invalidTimescale(field: "anchor item time"))
        // A tag flag with no tag.
        expectError(patched(6, 1), .lengthPastEnd(field: "HMAC tag"))
    }

    @Test func randomBytesAndMutationsNeverTrap() throws {
        var rng = SplitMix64(seed: 2024)
        let codecs = [WireCodec(), Self.keyed]
        var decodedCount = 0
        for _ in 0..<20_000 {
            let length = Int.random(in: 0..<200, using: &rng)
            var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if Bool.random(using: &rng), bytes.count >= 6 {
                bytes.replaceSubrange(0..<5, with: Array("CHRS".utf8) + [1])
            }
            for codec in codecs where (try? codec.decode(bytes)) != nil { decodedCount += 1 }
        }
        let valid = try Self.payloads.flatMap { payload in
            try codecs.map { try $0.encode(Self.message(payload)) }
        }
        var mutationsDecoded = 0
        for index in 0..<20_000 {
            var bytes = valid[index % valid.count]
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: bytes[Int.random(in: 0..<bytes.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
            case 1: bytes.removeLast(Int.random(in: 0...bytes.count, using: &rng))
            case 2: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: Int.random(in: 0...bytes.count, using: &rng))
            default:
                for _ in 0..<4 { bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng) }
            }
            for codec in codecs {
                do {
                    let decoded = try codec.decode(bytes)
                    mutationsDecoded += 1
                    // Whatever decodes re-encodes (a valid message, even if changed).
                    #expect(throws: Never.self) { _ = try WireCodec().encode(decoded.message) }
                } catch {
                    // Every failure is a typed DecodeError (the signature guarantees it).
                }
            }
        }
        #expect(decodedCount < 40_000)
        #expect(mutationsDecoded > 0)
    }
}

extension DecodeError {
    /// An empty datagram fails reading the magic, which is a length check.
    var asLengthPastEnd: DecodeError { .lengthPastEnd(field: "magic") }
}

extension GroupMessage.Payload: CustomTestStringConvertible {
    public var testDescription: String { "\(type)" }
}
