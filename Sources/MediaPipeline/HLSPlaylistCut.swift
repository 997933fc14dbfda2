import Foundation

/// An on-demand HLS media playlist cut to start at one of its segments: what an item spliced
/// from several encodings is opened with again to be read from a later segment.
///
/// Why: FFmpeg's HLS demuxer starts an on-demand playlist at its first segment, and seeks in
/// it by the playlist's durations and then by the packets' own times, skipping every packet
/// stamped before the target. Past a splice whose times go back (an advertisement, an
/// encoder restarted at zero) every later packet is stamped before the target, so such a
/// seek would read on to the end. A playlist that starts at the segment holding the target
/// is read from there, with nothing skipped; the item's timeline places what it reads
/// (`TimestampContinuity.prepareSeek(to:placedAt:anchor:)`).
///
/// The cut keeps what the kept segments need: the header (its media sequence moved on by
/// the segments left out, so that an AES-128 key without an IV decrypts as before, and its
/// discontinuity sequence by the splices left out), the key and initialisation section in
/// force at the first kept segment, and an explicit offset for its byte range.
/// Its reading of a media playlist (header, segments, trailer) also serves a live window's
/// readings (`HLSMediaPlaylist`). A pure value type.
struct HLSPlaylistCut {
    /// One segment's lines: the tags that apply to it, then its URI.
    struct Segment {
        var lines: [String]
        /// Its `EXTINF` duration (s).
        var duration: Double
        /// Whether an `EXT-X-DISCONTINUITY` comes before it.
        var discontinuous: Bool
    }

    /// The lines before the first segment's.
    private(set) var header: [String] = []
    private(set) var segments: [Segment] = []
    /// The lines after the last segment's URI (`EXT-X-ENDLIST`).
    private(set) var trailer: [String] = []
    /// Whether the text is a master playlist (it lists variants, not segments).
    private(set) var isMaster = false

    /// Tags that belong to the segment after them rather than to the playlist.
    static let segmentTags: Set<String> = [
        "#EXTINF", "#EXT-X-BYTERANGE", "#EXT-X-DISCONTINUITY", "#EXT-X-PROGRAM-DATE-TIME", "#EXT-X-KEY",
        "#EXT-X-MAP", "#EXT-X-GAP", "#EXT-X-BITRATE", "#EXT-X-DATERANGE",
    ]
    /// Segment tags that stay in force for the segments after theirs, until replaced.
    static let lastingTags: Set<String> = ["#EXT-X-KEY", "#EXT-X-MAP", "#EXT-X-BITRATE"]
    /// Tags of the playlist as a whole, kept in the header wherever they stand.
    static let playlistTags: Set<String> = [
        "#EXTM3U", "#EXT-X-VERSION", "#EXT-X-TARGETDURATION", "#EXT-X-MEDIA-SEQUENCE", "#EXT-X-DISCONTINUITY-SEQUENCE",
        "#EXT-X-PLAYLIST-TYPE", "#EXT-X-INDEPENDENT-SEGMENTS", "#EXT-X-START", "#EXT-X-I-FRAMES-ONLY", "#EXT-X-ALLOW-CACHE",
        "#EXT-X-SERVER-CONTROL", "#EXT-X-PART-INF", "#EXT-X-DEFINE",
    ]
    /// The largest sequence number, byte count or offset taken from a playlist: far beyond
    /// any real one (a petabyte), and far enough from `Int.max` that sums of them cannot
    /// overflow. A larger one is a damaged or hostile playlist's, and is left as written.
    static let largestNumber = 1 << 50

    /// The playlist in `text`.
    init(parsing text: String) {
        var pending: [String] = []
        var inSegments = false
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty { continue }
            if line.hasPrefix("#EXT-X-STREAM-INF") { isMaster = true }
            if line.hasPrefix("#") {
                let tag = Self.tag(of: line)
                if Self.playlistTags.contains(tag) || !inSegments && !Self.segmentTags.contains(tag) {
                    header.append(line)
                } else {
                    inSegments = true
                    pending.append(line)
                }
                continue
            }
            if isMaster {
                header.append(line)
                continue
            }
            // A URI closes its segment.
            inSegments = true
            pending.append(line)
            let duration = pending.first { $0.hasPrefix("#EXTINF:") }
                .flatMap { Double($0.dropFirst("#EXTINF:".count).prefix { $0 != "," }.trimmingCharacters(in: .whitespaces)) }
            segments.append(Segment(lines: pending, duration: duration.map { $0.isFinite && $0 > 0 ? $0 : 0 } ?? 0,
                                    discontinuous: pending.contains { Self.tag(of: $0) == "#EXT-X-DISCONTINUITY" }))
            pending = []
        }
        trailer = pending
    }

    /// The value of the header's `tag` (what follows its colon), if the header has it.
    func headerValue(of tag: String) -> String? {
        header.first { Self.tag(of: $0) == tag }.map { $0.dropFirst(tag.count + 1).trimmingCharacters(in: .whitespaces) }
    }

    /// A tag's name: the line up to its colon.
    static func tag(of line: String) -> String {
        String(line.prefix { $0 != ":" })
    }

    /// The first segment preceded by a splice (`EXT-X-DISCONTINUITY`), if any.
    var firstDiscontinuity: Int? { segments.indices.first { $0 > 0 && segments[$0].discontinuous } }

    /// The index of the segment that holds `seconds` of the playlist's time (the last when
    /// it lies past the end), and where that segment begins (s).
    func segment(holding seconds: Double) -> (index: Int, start: Double) {
        var start = 0.0
        for (index, segment) in segments.enumerated() {
            if seconds < start + segment.duration || index == segments.count - 1 { return (index, start) }
            start += segment.duration
        }
        return (0, 0)
    }

    /// The playlist's text, starting at the segment that holds `seconds`; unchanged but for
    /// `location` when that is the first segment, or the text is a master playlist. With
    /// `location` (where the text came from, after a redirect), every relative URI is made
    /// absolute against it, since the demuxer resolves them against the URL it asked for.
    func text(from seconds: Double, location: URL? = nil) -> String {
        let first = segments.isEmpty ? 0 : segment(holding: seconds).index
        var header = header
        var kept = Array(segments[first...])
        if first > 0 {
            let dropped = segments[..<first]
            // The lasting tags in force at the first kept segment, unless it sets its own.
            var lasting: [String: String] = [:]
            for line in dropped.flatMap(\.lines) where Self.lastingTags.contains(Self.tag(of: line)) { lasting[Self.tag(of: line)] = line }
            let own = Set(kept[0].lines.map(Self.tag(of:)))
            let carried = Self.lastingTags.sorted().compactMap { own.contains($0) ? nil : lasting[$0] }
            var lines = kept[0].lines.filter { Self.tag(of: $0) != "#EXT-X-DISCONTINUITY" }
            lines.insert(contentsOf: carried, at: 0)
            if let range = Self.byteRangeOffset(of: first, in: segments),
               let index = lines.firstIndex(where: { Self.tag(of: $0) == "#EXT-X-BYTERANGE" }) {
                lines[index] = "#EXT-X-BYTERANGE:\(range.length)@\(range.offset)"
            }
            kept[0].lines = lines
            // Splices left out (the first kept segment's own among them) count in the
            // discontinuity sequence, and segments left out in the media sequence.
            let splices = segments[1...first].filter(\.discontinuous).count
            Self.advance("#EXT-X-MEDIA-SEQUENCE", by: first, in: &header)
            if splices > 0 { Self.advance("#EXT-X-DISCONTINUITY-SEQUENCE", by: splices, in: &header) }
        }
        var lines = header + kept.flatMap(\.lines) + trailer
        if let location { lines = lines.map { Self.absolute($0, against: location) } }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Adds `count` to the header's `tag` (a whole number), adding the tag after the first
    /// line when the header has none (its value is then 0).
    private static func advance(_ tag: String, by count: Int, in header: inout [String]) {
        if let index = header.firstIndex(where: { Self.tag(of: $0) == tag }) {
            let value = Int(header[index].dropFirst(tag.count + 1).trimmingCharacters(in: .whitespaces)) ?? 0
            guard (0...largestNumber).contains(value) else { return }
            header[index] = "\(tag):\(value + count)"
        } else {
            header.insert("\(tag):\(count)", at: min(1, header.count))
        }
    }

    /// Segment `index`'s byte range, its offset made explicit (a range without one starts
    /// where the segment before it ended); nil when it has none.
    static func byteRangeOffset(of index: Int, in segments: [Segment]) -> (length: Int, offset: Int)? {
        var end = 0
        var found: (length: Int, offset: Int)?
        for segment in segments[...index] {
            found = nil
            guard let line = segment.lines.first(where: { tag(of: $0) == "#EXT-X-BYTERANGE" }) else { end = 0; continue }
            let parts = line.dropFirst("#EXT-X-BYTERANGE:".count).split(separator: "@")
            guard let length = parts.first.flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }),
                  (0...largestNumber).contains(length) else { end = 0; continue }
            let offset = parts.count > 1 ? Int(parts[1].trimmingCharacters(in: .whitespaces)) ?? end : end
            guard (0...largestNumber).contains(offset) else { end = 0; continue }
            found = (length, offset)
            end = offset + length
        }
        return found
    }

    /// `line` with its URI (a URI line, or a tag's `URI="…"` attribute) made absolute against
    /// `base`.
    static func absolute(_ line: String, against base: URL) -> String {
        func resolve(_ reference: String) -> String {
            URL(string: reference, relativeTo: base)?.absoluteString ?? reference
        }
        guard line.hasPrefix("#") else { return resolve(line) }
        guard let start = line.range(of: "URI=\""), let end = line[start.upperBound...].firstIndex(of: "\"") else { return line }
        return line.replacingCharacters(in: start.upperBound..<end, with: resolve(String(line[start.upperBound..<end])))
    }

    /// `text` as a `data:` URL, which FFmpeg opens as a file of those bytes.
    static func dataURL(_ text: String) -> String {
        "data:application/vnd.apple.mpegurl;base64," + Data(text.utf8).base64EncodedString()
    }
}
