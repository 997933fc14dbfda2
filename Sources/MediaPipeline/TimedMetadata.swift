import Foundation
import MediaClock
import MutexAnnotations
import Synchronization

/// One value of timed metadata: a key in its key space, as the stream carried it.
public struct TimedMetadataEntry: Sendable, Hashable {
    /// The format the key belongs to.
    public enum KeySpace: String, Sendable, Hashable {
        /// An ID3 frame, carried in an HLS or MPEG-TS stream's timed metadata track
        /// (`TIT2`, `TPE1`, `TXXX`...).
        case id3
        /// A SHOUTcast/Icecast station's in-stream metadata (`StreamTitle`, `StreamUrl`).
        case icy
    }

    public var keySpace: KeySpace
    /// The frame's or field's name: "TIT2", "StreamTitle".
    public var key: String
    /// For an ID3 `TXXX` (user text) frame, its description; nil otherwise.
    public var info: String?
    /// The text.
    public var value: String

    public init(keySpace: KeySpace, key: String, info: String? = nil, value: String) {
        self.keySpace = keySpace
        self.key = key
        self.info = info
        self.value = value
    }
}

/// What a stream said at one point of its timeline: the entries that took effect at `time`.
public struct TimedMetadataGroup: Sendable, Hashable {
    /// Item time from which the entries hold.
    public var time: CMTime
    public var entries: [TimedMetadataEntry]

    public init(time: CMTime, entries: [TimedMetadataEntry]) {
        self.time = time
        self.entries = entries
    }
}

/// The timed metadata of an item, collected as its demuxer reads it (a few seconds ahead of
/// the playhead) and kept for the item's life, like its subtitles: a seek back finds what
/// was read before.
public final class TimedMetadataLog: Sendable {
    /// The most groups kept, the oldest going first. Only changes are kept, so a station's
    /// titles (a few an hour) never reach it; it bounds a stream whose tags change with every
    /// segment, to its latest day or so at 2 s segments.
    public static let capacity = 50_000

    /// Sorted by time; at most one group per time.
    private let groups = Mutex<[TimedMetadataGroup]>([])

    public init() {}

    /// Adds `group`. One read again (after a seek back), or repeated unchanged at a later
    /// time (a stream that sends its tags with every segment), is not added: the group in
    /// effect at a time is the same either way.
    public func add(_ group: TimedMetadataGroup) {
        guard group.time.isNumeric, !group.entries.isEmpty else { return }
        groups.withLockAnnotated { all in
            let index = all.partitioningIndex { $0.time > group.time }
            if index > 0, all[index - 1].entries == group.entries { return }
            if index > 0, all[index - 1].time == group.time { all[index - 1] = group; return }
            all.insert(group, at: index)
            if all.count > Self.capacity { all.removeFirst(all.count - Self.capacity) }
        }
    }

    /// Every group read so far, by time.
    public var all: [TimedMetadataGroup] { groups.withLockAnnotated { $0 } }

    /// The group in effect at `time` (the latest at or before it), and the time the next
    /// one takes over (nil when none is known yet).
    public func group(at time: CMTime) -> (group: TimedMetadataGroup, until: CMTime?)? {
        guard time.isNumeric else { return nil }
        return groups.withLockAnnotated { all in
            let after = all.partitioningIndex { $0.time > time }
            guard after > 0 else { return nil }
            return (all[after - 1], after < all.count ? all[after].time : nil)
        }
    }

    /// The groups whose times lie in `(from, through]`, by time.
    public func groups(after from: CMTime, through: CMTime) -> [TimedMetadataGroup] {
        guard from.isNumeric, through.isNumeric, through > from else { return [] }
        return groups.withLockAnnotated { all in
            let first = all.partitioningIndex { $0.time > from }
            let end = all.partitioningIndex { $0.time > through }
            return first < end ? Array(all[first..<end]) : []
        }
    }
}

/// Readers of the two in-band metadata formats streams carry. Both take untrusted bytes
/// and give nil or nothing for what they cannot read.
public enum TimedMetadataFormat {
    /// The longest ID3 tag read, in bytes: a timed tag holds a few text frames (a cover
    /// picture would be the large exception, and is not read).
    static let longestTag = 1 << 20

    /// The text frames of an ID3v2.3 or v2.4 tag (`T???` frames, and `TXXX` with its
    /// description), in the tag's order; empty when `bytes` is not such a tag, or for what
    /// of it is damaged. Other frames (pictures, comments, private data) are skipped.
    public static func id3TextFrames(_ bytes: [UInt8]) -> [TimedMetadataEntry] {
        var entries: [TimedMetadataEntry] = []
        forEachFrame(of: bytes) { name, body in
            guard name.hasPrefix("T"), let encoding = body.first else { return }
            let content = Array(body.dropFirst())
            if name == "TXXX" {
                let (description, rest) = splitAtTerminator(content, encoding: encoding)
                guard let value = text(rest, encoding: encoding) else { return }
                entries.append(TimedMetadataEntry(keySpace: .id3, key: name, info: text(description, encoding: encoding) ?? "", value: value))
            } else if let value = text(content, encoding: encoding) {
                entries.append(TimedMetadataEntry(keySpace: .id3, key: name, value: value))
            }
        }
        return entries
    }

    /// The owner of the private frame that stamps a packed-audio HLS segment: its body
    /// holds the segment's first sample's time on the 90 kHz MPEG-TS clock.
    static let timestampOwner = Array("com.apple.streaming.transportStreamTimestamp".utf8) + [0]

    /// The time an ID3 tag at the start of a packed-audio HLS segment (AAC, MP3 or AC-3
    /// with no container) stamps its first sample with, in ticks of the 90 kHz MPEG-TS
    /// clock (33 bits); nil when the tag has no such stamp.
    public static func transportStreamTimestamp(inTag bytes: [UInt8]) -> Int64? {
        var stamp: Int64?
        forEachFrame(of: bytes) { name, body in
            guard stamp == nil, name == "PRIV", body.count >= timestampOwner.count + 8,
                  body.prefix(timestampOwner.count).elementsEqual(timestampOwner) else { return }
            let value = body.dropFirst(timestampOwner.count).prefix(8).reduce(Int64(0)) { $0 << 8 | Int64($1) }
            stamp = value & (1 << 33 - 1)
        }
        return stamp
    }

    /// Calls `body` with each frame of an ID3v2.3 or v2.4 tag that is stored plainly (not
    /// compressed, encrypted or unsynchronised), in the tag's order: its name and its bytes.
    /// Nothing for what is not such a tag, and nothing past what of it is damaged.
    private static func forEachFrame(of bytes: [UInt8], _ body: (_ name: String, _ body: ArraySlice<UInt8>) -> Void) {
        guard bytes.count >= 10, bytes[0] == 0x49, bytes[1] == 0x44, bytes[2] == 0x33 else { return }   // "ID3"
        let version = bytes[3]
        guard version == 3 || version == 4, bytes[4] != 0xFF else { return }
        let flags = bytes[5]
        guard let tagSize = syncsafe(bytes, at: 6), tagSize <= longestTag else { return }
        // Unsynchronisation of the whole tag (v2.3) is not undone; such tags are rare in
        // streams, and are skipped rather than misread.
        guard flags & 0x80 == 0 else { return }
        let end = min(bytes.count, 10 + tagSize)
        var position = 10
        if flags & 0x40 != 0 {
            // An extended header: its size counts itself in v2.4 (syncsafe), not in v2.3.
            guard position + 4 <= end else { return }
            let size = version == 4 ? syncsafe(bytes, at: position) : bigEndian(bytes, at: position).map { $0 + 4 }
            guard let size, size >= 4, position + size <= end else { return }
            position += size
        }
        while position + 10 <= end {
            // Padding: zeros to the end.
            guard bytes[position] != 0 else { break }
            let id = bytes[position..<position + 4]
            guard id.allSatisfy({ ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x30 && $0 <= 0x39) }),
                  let size = version == 4 ? syncsafe(bytes, at: position + 4) : bigEndian(bytes, at: position + 4) else { break }
            let frameFlags = bytes[position + 9]
            let start = position + 10
            guard size <= end - start else { break }
            position = start + size
            // Compressed, encrypted or unsynchronised frames (v2.4's format flags; v2.3's
            // compression and encryption) are skipped.
            let transformed = version == 4 ? frameFlags & 0x0F != 0 : frameFlags & 0xC0 != 0
            guard !transformed, size >= 1 else { continue }
            body(String(decoding: id, as: UTF8.self), bytes[start..<(start + size)])
        }
    }

    /// The text frames of the ID3 tag in one packet of an MPEG-TS timed metadata track.
    ///
    /// The MPEG-TS demuxer of Debian 12's FFmpeg (5.1) takes the first five bytes of every
    /// packet on such a track (stream type 0x15) for a metadata access unit header and drops
    /// them (later versions do so only for KLV metadata), though
    /// an ID3 track (Apple's HLS timed metadata, the relay's titles) has none: what reaches
    /// the reader is the tag without "ID3" and its version. Such a packet is recognised by
    /// its size, which is then exactly the tag's, and read as the tag it was (as v2.4, else
    /// v2.3; their frame sizes differ only in frames of 128 bytes or more).
    public static func id3TextFrames(inTimedPacket bytes: [UInt8]) -> [TimedMetadataEntry] {
        let whole = id3TextFrames(bytes)
        guard whole.isEmpty, bytes.count >= 5, Array(bytes.prefix(3)) != Array("ID3".utf8),
              syncsafe(bytes, at: 1) == bytes.count - 5 else { return whole }
        for version: UInt8 in [4, 3] {
            let restored = id3TextFrames(Array("ID3".utf8) + [version, 0] + bytes)
            if !restored.isEmpty { return restored }
        }
        return []
    }

    /// The fields of a SHOUTcast/Icecast metadata block (`StreamTitle='Artist - Song';
    /// StreamUrl='...';`), in order. A value runs to the next `';`, so that a title with an
    /// apostrophe in it is kept whole. Text that is not UTF-8 is read as Latin-1, as older
    /// stations send it.
    public static func icyFields(_ block: String) -> [TimedMetadataEntry] {
        var entries: [TimedMetadataEntry] = []
        var rest = Substring(block)
        while let equals = rest.range(of: "='") {
            let key = rest[..<equals.lowerBound].trimmingCharacters(in: .whitespacesAndNewlines.union(CharacterSet(charactersIn: ";")))
            let valueStart = equals.upperBound
            let close = rest[valueStart...].range(of: "';")
            let valueEnd = close?.lowerBound ?? (rest.hasSuffix("'") ? rest.index(before: rest.endIndex) : rest.endIndex)
            let value = String(rest[valueStart..<max(valueStart, valueEnd)])
            if !key.isEmpty, key.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) {
                entries.append(TimedMetadataEntry(keySpace: .icy, key: key, value: value))
            }
            guard let close else { break }
            rest = rest[close.upperBound...]
        }
        return entries
    }

    /// The fields of an ICY block's raw bytes (`icyFields` of `icyText`).
    public static func icyFields(ofBlock bytes: [UInt8]) -> [TimedMetadataEntry] {
        icyFields(icyText(bytes))
    }

    /// Text from the raw bytes of an ICY block: UTF-8 when it is that, else Latin-1; the
    /// block's padding (zeros) removed.
    public static func icyText(_ bytes: [UInt8]) -> String {
        let trimmed = bytes.prefix { $0 != 0 }
        return String(validating: trimmed, as: UTF8.self) ?? String(trimmed.map { Character(Unicode.Scalar($0)) })
    }

    /// An ID3 `TIT2` tag holding `title`, as the timed metadata track of an MPEG-TS stream
    /// carries it (ID3v2.4, UTF-8).
    public static func id3Tag(title: String) -> [UInt8] {
        let frameBody: [UInt8] = [3] + Array(title.utf8)
        var frame: [UInt8] = Array("TIT2".utf8) + syncsafeBytes(frameBody.count) + [0, 0]
        frame += frameBody
        return Array("ID3".utf8) + [4, 0, 0] + syncsafeBytes(frame.count) + frame
    }

    private static func syncsafe(_ bytes: [UInt8], at index: Int) -> Int? {
        guard index + 4 <= bytes.count else { return nil }
        var value = 0
        for byte in bytes[index..<index + 4] {
            guard byte & 0x80 == 0 else { return nil }
            value = value << 7 | Int(byte)
        }
        return value
    }

    private static func syncsafeBytes(_ value: Int) -> [UInt8] {
        [UInt8(value >> 21 & 0x7F), UInt8(value >> 14 & 0x7F), UInt8(value >> 7 & 0x7F), UInt8(value & 0x7F)]
    }

    private static func bigEndian(_ bytes: [UInt8], at index: Int) -> Int? {
        guard index + 4 <= bytes.count else { return nil }
        return bytes[index..<index + 4].reduce(0) { $0 << 8 | Int($1) }
    }

    /// `bytes` split at the first terminator of `encoding` (one zero, or two aligned zeros
    /// for UTF-16): what comes before it, and what after.
    private static func splitAtTerminator(_ bytes: [UInt8], encoding: UInt8) -> ([UInt8], [UInt8]) {
        if encoding == 1 || encoding == 2 {
            var index = 0
            while index + 1 < bytes.count {
                if bytes[index] == 0 && bytes[index + 1] == 0 { return (Array(bytes[..<index]), Array(bytes[(index + 2)...])) }
                index += 2
            }
            return (bytes, [])
        }
        guard let zero = bytes.firstIndex(of: 0) else { return (bytes, []) }
        return (Array(bytes[..<zero]), Array(bytes[(zero + 1)...]))
    }

    /// The text of a frame's `bytes` in ID3 `encoding` (0 Latin-1, 1 UTF-16 with a byte
    /// order mark, 2 UTF-16 big-endian, 3 UTF-8), up to its first terminator (v2.4 lists
    /// several values so; the first is taken); nil for an unknown encoding or bad text.
    private static func text(_ bytes: [UInt8], encoding: UInt8) -> String? {
        let value = splitAtTerminator(bytes, encoding: encoding).0
        switch encoding {
        case 0: return String(value.map { Character(Unicode.Scalar($0)) })
        case 3: return String(validating: value, as: UTF8.self)
        case 1, 2:
            guard value.count % 2 == 0 else { return nil }
            var units = stride(from: 0, to: value.count, by: 2).map { UInt16(value[$0]) << 8 | UInt16(value[$0 + 1]) }
            var littleEndian = false
            if encoding == 1 {
                guard let mark = units.first, mark == 0xFEFF || mark == 0xFFFE else { return nil }
                littleEndian = mark == 0xFFFE
                units.removeFirst()
            }
            if littleEndian { units = units.map { $0.byteSwapped } }
            return String(validating: units, as: UTF16.self)
        default: return nil
        }
    }
}

/// Watches an HTTP input's ICY block (for the reader of that input, on its thread): the
/// input is asked after every packet, and a block is read only when it changed. HTTP reads
/// stop at each block, so the packet just read when a new one shows is the one it came
/// with, give or take the packet.
struct ICYWatcher {
    private var lastBlock: [UInt8]?

    /// The fields of `source`'s ICY block when it changed since the last call; nil otherwise.
    mutating func newFields(of source: MediaSource) -> [TimedMetadataEntry]? {
        guard let block = source.icyMetadataBlock(), block != lastBlock else { return nil }
        lastBlock = block
        return TimedMetadataFormat.icyFields(ofBlock: block)
    }
}
