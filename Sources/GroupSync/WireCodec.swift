import MediaClock

/// Encodes `GroupMessage`s to datagrams and decodes datagrams back, with an optional
/// HMAC tag (see protocol.md for the layout).
///
/// Decoding is total: any byte sequence either yields a message or throws a `DecodeError`.
/// It checks structure only; whether to accept a message (group, tag, replay) is
/// `MessageGate`'s decision, using `Decoded.isTagged` and `Decoded.isAuthentic`.
public struct WireCodec: Sendable {
    /// The first four bytes of every datagram: "CHRS".
    public static let magic: [UInt8] = Array("CHRS".utf8)
    /// The protocol version this codec speaks: 3, whose State carries the item's chosen
    /// sound and subtitle streams, the item that follows it without a gap, and where a live
    /// item's times jumped.
    public static let version: UInt8 = 3
    /// Flags bit 0: a 32-byte HMAC-SHA256 tag follows the body.
    public static let taggedFlag: UInt8 = 0x01
    /// Longest follower name (one-byte length prefix).
    public static let maximumNameBytes = Int(UInt8.max)
    /// Longest URL string (two-byte length prefix).
    public static let maximumURLBytes = Int(UInt16.max)
    /// Largest datagram this codec produces or accepts; also the receive buffer size.
    public static let maximumDatagramBytes = 65_535

    /// State flags bit 0: the item ended.
    static let stateEndedFlag: UInt8 = 0x01
    /// State flags bit 1: stopped or no item.
    static let stateStoppedFlag: UInt8 = 0x02
    /// State flags bit 2: the item follows the previous one without a gap.
    static let stateJoinsPreviousFlag: UInt8 = 0x04

    /// Tags outgoing messages and verifies incoming ones; `nil` for an unkeyed group.
    public let authenticator: MessageAuthenticator?

    /// A codec; with an authenticator every encoded message is tagged.
    public init(authenticator: MessageAuthenticator? = nil) {
        self.authenticator = authenticator
    }

    /// A decoded datagram and what its tag said.
    public struct Decoded: Sendable, Equatable {
        /// The message.
        public var message: GroupMessage
        /// The datagram carried a tag (flags bit 0).
        public var isTagged: Bool
        /// It carried a tag and this codec's key verified it.
        public var isAuthentic: Bool
    }

    /// The datagram for `message`, tagged when this codec has a key.
    public func encode(_ message: GroupMessage) throws(EncodeError) -> [UInt8] {
        let groupBytes = Array(message.group.utf8)
        guard !groupBytes.isEmpty, groupBytes.count <= GroupMessage.maximumGroupNameBytes else {
            throw .invalidGroupName(byteCount: groupBytes.count)
        }
        let body = try Self.encodeBody(message.payload)
        guard body.count <= Int(UInt16.max) else { throw .bodyTooLong(byteCount: body.count) }

        var writer = ByteWriter(capacity: 32 + groupBytes.count + body.count + MessageAuthenticator.tagLength)
        writer.write(Self.magic)
        writer.write(Self.version)
        writer.write(message.type.rawValue)
        writer.write(authenticator == nil ? UInt8(0) : Self.taggedFlag)
        writer.write(UInt8(0))
        writer.write(message.senderID)
        writer.write(message.sequence)
        writer.writeShortString(groupBytes)
        writer.write(UInt16(body.count))
        writer.write(body)
        if let authenticator {
            writer.write(authenticator.tag(for: writer.bytes))
        }
        return writer.bytes
    }

    /// Decodes a datagram; throws the first structural problem found.
    public func decode(_ bytes: [UInt8]) throws(DecodeError) -> Decoded {
        var reader = ByteReader(bytes)
        let magic = try reader.readBytes(Self.magic.count, field: "magic")
        guard magic == Self.magic else { throw .badMagic }
        let version = try reader.read(UInt8.self, field: "version")
        guard version == Self.version else { throw .unsupportedVersion(version) }
        let typeByte = try reader.read(UInt8.self, field: "type")
        guard let type = MessageType(rawValue: typeByte) else { throw .unknownType(typeByte) }
        let flags = try reader.read(UInt8.self, field: "flags")
        _ = try reader.read(UInt8.self, field: "reserved")
        let senderID = try reader.read(UInt64.self, field: "sender ID")
        let sequence = try reader.read(UInt64.self, field: "sequence")
        let groupLength = Int(try reader.read(UInt8.self, field: "group name length"))
        guard groupLength <= GroupMessage.maximumGroupNameBytes else { throw .groupNameTooLong(groupLength) }
        let groupBytes = try reader.readBytes(groupLength, field: "group name")
        guard let group = String(validating: groupBytes, as: UTF8.self) else { throw .invalidUTF8(field: "group name") }
        let bodyLength = Int(try reader.read(UInt16.self, field: "body length"))
        guard reader.remaining >= bodyLength else { throw .lengthPastEnd(field: "body") }
        let bodyStart = reader.offset
        let bodyEnd = bodyStart + bodyLength
        var body = ByteReader(bytes, from: bodyStart, to: bodyEnd)
        let payload = try Self.decodeBody(type, from: &body)
        guard body.remaining == 0 else { throw .bodyLengthMismatch }

        let isTagged = flags & Self.taggedFlag != 0
        var isAuthentic = false
        var tail = ByteReader(bytes, from: bodyEnd)
        if isTagged {
            let tag = try tail.readBytes(MessageAuthenticator.tagLength, field: "HMAC tag")
            if let authenticator {
                isAuthentic = authenticator.isValid(tag: tag, for: bytes[0..<bodyEnd])
            }
        }
        guard tail.remaining == 0 else { throw .trailingBytes }
        let message = GroupMessage(senderID: senderID, sequence: sequence, group: group, payload: payload)
        return Decoded(message: message, isTagged: isTagged, isAuthentic: isAuthentic)
    }

    // MARK: Bodies

    private static func encodeBody(_ payload: GroupMessage.Payload) throws(EncodeError) -> [UInt8] {
        var writer = ByteWriter()
        switch payload {
        case let .hello(hello):
            let name = Array(hello.followerName.utf8)
            guard name.count <= maximumNameBytes else { throw .stringTooLong(field: "follower name", byteCount: name.count) }
            writer.writeShortString(name)
            writer.write(hello.latencyOffsetMicroseconds)
        case let .welcome(welcome):
            let url = Array(welcome.baseURL.utf8)
            guard url.count <= maximumURLBytes else { throw .stringTooLong(field: "base URL", byteCount: url.count) }
            writer.write(welcome.leaderID)
            writer.write(welcome.statePeriodMilliseconds)
            writer.writeLongString(url)
        case let .clockRequest(request):
            writer.write(request.requestID)
            writer.write(request.t1)
        case let .clockReply(reply):
            writer.write(reply.requestID)
            writer.write(reply.t1)
            writer.write(reply.t2)
            writer.write(reply.t3)
        case let .state(state):
            let url = Array(state.itemURL.utf8)
            guard url.count <= maximumURLBytes else { throw .stringTooLong(field: "item URL", byteCount: url.count) }
            writer.write(state.sequence)
            writer.write(state.itemIndex)
            writer.writeLongString(url)
            writeTime(state.itemDuration, allowUnknown: true, to: &writer)
            writer.write(state.rate.isFinite ? state.rate.bitPattern : Double(0).bitPattern)
            writeTime(state.anchorItemTime, allowUnknown: false, to: &writer)
            writer.write(state.anchorLeaderTime.nanoseconds)
            var flags: UInt8 = 0
            if state.ended { flags |= stateEndedFlag }
            if state.stopped { flags |= stateStoppedFlag }
            if state.joinsPrevious { flags |= stateJoinsPreviousFlag }
            writer.write(flags)
            writer.write(Self.wireStream(state.audioStream))
            writer.write(Self.wireStream(state.subtitleStream))
            let next = Array(state.nextItemURL.utf8)
            guard next.count <= maximumURLBytes else { throw .stringTooLong(field: "next item URL", byteCount: next.count) }
            writer.writeLongString(next)
            // The property may have been set since the state was made.
            let splices = GroupState.rising(state.splices)
            writer.write(UInt8(splices.count))
            for splice in splices {
                writer.write(splice.startNanoseconds)
                writer.write(splice.shiftNanoseconds)
            }
        case .goodbye:
            break
        }
        return writer.bytes
    }

    /// Numeric times go out as (value, timescale); a non-numeric duration as (0, 0), and a
    /// non-numeric anchor as zero, since an anchor must be a number.
    private static func writeTime(_ time: CMTime, allowUnknown: Bool, to writer: inout ByteWriter) {
        if time.isNumeric {
            writer.write(time.value)
            writer.write(time.timescale)
        } else {
            writer.write(Int64(0))
            writer.write(allowUnknown ? Int32(0) : Int32(1))
        }
    }

    private static func decodeBody(_ type: MessageType, from reader: inout ByteReader) throws(DecodeError) -> GroupMessage.Payload {
        switch type {
        case .hello:
            let name = try reader.readString(lengthBytes: 1, field: "follower name")
            let latency = try reader.read(Int32.self, field: "latency offset")
            return .hello(.init(followerName: name, latencyOffsetMicroseconds: latency))
        case .welcome:
            let leaderID = try reader.read(UInt64.self, field: "leader ID")
            let period = try reader.read(UInt32.self, field: "state period")
            let url = try reader.readString(lengthBytes: 2, field: "base URL")
            return .welcome(.init(leaderID: leaderID, statePeriodMilliseconds: period, baseURL: url))
        case .clockRequest:
            let id = try reader.read(UInt32.self, field: "request ID")
            let t1 = try reader.read(Int64.self, field: "t1")
            return .clockRequest(.init(requestID: id, t1: t1))
        case .clockReply:
            let id = try reader.read(UInt32.self, field: "request ID")
            let t1 = try reader.read(Int64.self, field: "t1")
            let t2 = try reader.read(Int64.self, field: "t2")
            let t3 = try reader.read(Int64.self, field: "t3")
            return .clockReply(.init(requestID: id, t1: t1, t2: t2, t3: t3))
        case .state:
            let sequence = try reader.read(UInt64.self, field: "state sequence")
            let index = try reader.read(UInt32.self, field: "item index")
            let url = try reader.readString(lengthBytes: 2, field: "item URL")
            let duration = try readTime(from: &reader, field: "item duration", allowUnknown: true)
            let rate = Double(bitPattern: try reader.read(UInt64.self, field: "rate"))
            guard rate.isFinite else { throw .nonFiniteRate }
            let anchorItem = try readTime(from: &reader, field: "anchor item time", allowUnknown: false)
            let anchorLeader = try reader.read(Int64.self, field: "anchor leader time")
            let flags = try reader.read(UInt8.self, field: "state flags")
            let audio = try readStream(from: &reader, field: "audio stream")
            let subtitles = try readStream(from: &reader, field: "subtitle stream")
            let next = try reader.readString(lengthBytes: 2, field: "next item URL")
            let spliceCount = Int(try reader.read(UInt8.self, field: "splice count"))
            guard spliceCount <= GroupState.maximumSplices else { throw .invalidSplices }
            var splices: [TimelineSplice] = []
            for _ in 0..<spliceCount {
                let start = try reader.read(Int64.self, field: "splice start")
                let shift = try reader.read(Int64.self, field: "splice shift")
                if let last = splices.last, start <= last.startNanoseconds { throw .invalidSplices }
                splices.append(TimelineSplice(startNanoseconds: start, shiftNanoseconds: shift))
            }
            return .state(GroupState(
                sequence: sequence, itemIndex: index, itemURL: url, itemDuration: duration, rate: rate,
                anchorItemTime: anchorItem, anchorLeaderTime: LeaderTime(nanoseconds: anchorLeader),
                ended: flags & stateEndedFlag != 0, stopped: flags & stateStoppedFlag != 0,
                audioStream: audio, subtitleStream: subtitles, nextItemURL: next,
                joinsPrevious: flags & stateJoinsPreviousFlag != 0, splices: splices
            ))
        case .goodbye:
            return .goodbye
        }
    }

    /// A chosen stream as the wire carries it: its index, or `noSelection`.
    private static func wireStream(_ stream: Int32?) -> Int32 {
        guard let stream, stream >= 0 else { return GroupState.noSelection }
        return stream
    }

    /// A stream index from the wire: `noSelection` is none; any other negative is malformed.
    private static func readStream(from reader: inout ByteReader, field: String) throws(DecodeError) -> Int32? {
        let value = try reader.read(Int32.self, field: field)
        if value == GroupState.noSelection { return nil }
        guard value >= 0 else { throw .invalidStreamIndex(field: field) }
        return value
    }

    private static func readTime(from reader: inout ByteReader, field: String, allowUnknown: Bool) throws(DecodeError) -> CMTime {
        let value = try reader.read(Int64.self, field: field)
        let timescale = try reader.read(Int32.self, field: field)
        if timescale == 0 && allowUnknown { return .indefinite }
        guard timescale > 0 else { throw .invalidTimescale(field: field) }
        return CMTime(value: value, timescale: timescale)
    }
}
