import MediaClock
import MutexAnnotations
import Synchronization
internal import CFFmpeg

/// One timed text of a subtitle track, in item time.
public struct SubtitleCue: Sendable, Equatable {
    /// When the text appears.
    public var start: CMTime
    /// When it goes; `.invalid` when the track did not say (it then stays until the next
    /// cue, for `unterminatedCueLimit` at most).
    public var end: CMTime
    /// The text, plain: styling tags are removed, and lines are separated by "\n".
    public var text: String

    public init(start: CMTime, end: CMTime, text: String) {
        self.start = start
        self.end = end
        self.text = text
    }
}

/// The cues of an item's text subtitle tracks, collected as its demuxer reads them (a few
/// seconds ahead of the playhead) and kept for the item's life: a seek back finds what was
/// read before, and a track chosen late shows at once what has been read of it.
public final class SubtitleCues: Sendable {
    /// How long a cue whose track gave no end stays up at most, in seconds: longer than any
    /// line is read for, short enough that a stray line does not stay for the rest of a
    /// scene.
    public static let unterminatedCueLimit = 8.0

    /// By FFmpeg stream index, each sorted by start.
    private let byStream = Mutex<[Int: [SubtitleCue]]>([:])
    /// Why a stream read on its own (an HLS subtitle rendition) gave up, by stream index.
    private let failures = Mutex<[Int: MediaError]>([:])
    /// The streams asked for (chosen to be shown, now or before). A stream read on its own
    /// (an HLS subtitle rendition: a playlist and its segments over the network) is read
    /// only once asked for, and then on to its end, so that a track chosen again shows what
    /// was read of it.
    private let asked = Mutex<Set<Int>>([])

    public init() {}

    /// Adds `cue` of stream `stream`; a cue read again (after a seek back) is not doubled.
    public func add(_ cue: SubtitleCue, stream: Int) {
        byStream.withLockAnnotated { all in
            var cues = all[stream] ?? []
            let index = cues.partitioningIndex { $0.start > cue.start }
            var probe = index - 1
            while probe >= 0, cues[probe].start == cue.start {
                if cues[probe].text == cue.text { return }
                probe -= 1
            }
            cues.insert(cue, at: index)
            all[stream] = cues
        }
    }

    /// Told (on the reading thread) when a stream read on its own gives up; the item's
    /// owner logs it.
    private let failureHandler = Mutex<(@Sendable (Int, MediaError) -> Void)?>(nil)

    /// Sets what is told when a stream read on its own gives up: its stream index and why.
    public func onFailure(_ handler: @escaping @Sendable (Int, MediaError) -> Void) {
        failureHandler.withLockAnnotated { $0 = handler }
    }

    /// Notes that stream `stream` can be read no further, and why.
    func noteFailure(_ error: MediaError, stream: Int) {
        failures.withLockAnnotated { $0[stream] = error }
        failureHandler.withLockAnnotated { $0 }?(stream, error)
    }

    /// Why stream `stream` stopped being read before its end, if it did (only a stream read
    /// on its own, an HLS subtitle rendition, can stop apart from its item).
    public func failure(stream: Int) -> MediaError? {
        failures.withLockAnnotated { $0[stream] }
    }

    /// Asks for `stream`'s cues (nil: none): the owner calls it whenever the track to show
    /// may have changed.
    public func ask(for stream: Int?) {
        guard let stream else { return }
        asked.withLockAnnotated { _ = $0.insert(stream) }
    }

    /// Whether `stream` has been asked for.
    func isAsked(_ stream: Int) -> Bool {
        asked.withLockAnnotated { $0.contains(stream) }
    }

    /// Every cue of `stream` read so far, by start.
    public func cues(stream: Int) -> [SubtitleCue] {
        byStream.withLockAnnotated { $0[stream] ?? [] }
    }

    /// The cues of `stream` showing at `time`, by start.
    public func cues(stream: Int, at time: CMTime) -> [SubtitleCue] {
        guard time.isNumeric else { return [] }
        return byStream.withLockAnnotated { all -> [SubtitleCue] in
            guard let cues = all[stream] else { return [] }
            let after = cues.partitioningIndex { $0.start > time }
            var showing: [SubtitleCue] = []
            for index in 0..<after where Self.end(of: index, in: cues) > time { showing.append(cues[index]) }
            return showing
        }
    }

    /// The next time after `time` at which what `stream` shows changes, among the cues read
    /// so far; nil when none is known.
    public func nextChange(stream: Int, after time: CMTime) -> CMTime? {
        guard time.isNumeric else { return nil }
        return byStream.withLockAnnotated { all -> CMTime? in
            guard let cues = all[stream] else { return nil }
            var next: CMTime?
            for index in cues.indices {
                let start = cues[index].start
                if start > time { next = min(next ?? start, start); break }
                let end = Self.end(of: index, in: cues)
                if end > time { next = min(next ?? end, end) }
            }
            return next
        }
    }

    /// Where cue `index` ends: its own end, or the next later cue's start, within the limit.
    private static func end(of index: Int, in cues: [SubtitleCue]) -> CMTime {
        let cue = cues[index]
        if cue.end.isNumeric { return cue.end }
        let limit = cue.start + CMTime(seconds: unterminatedCueLimit, preferredTimescale: 1000)
        let next = cues[(index + 1)...].first { $0.start > cue.start }?.start
        return next.map { min($0, limit) } ?? limit
    }

    // MARK: - Text

    /// The plain text of one decoded line in FFmpeg's ASS form: "ReadOrder, Layer, Style,
    /// Name, MarginL, MarginR, MarginV, Effect, Text", the text keeping its override blocks
    /// (`{\i1}`) and its escapes (`\N` a hard break, `\n` a soft one, `\h` a hard space).
    static func plainText(ofASSLine line: String) -> String {
        var fields = 0
        var textStart = line.startIndex
        for index in line.indices where line[index] == "," {
            fields += 1
            if fields == assFieldsBeforeText {
                textStart = line.index(after: index)
                break
            }
        }
        if fields < assFieldsBeforeText { textStart = line.startIndex }
        var plain = ""
        var inOverride = false
        var escape = false
        for character in line[textStart...] {
            if inOverride {
                if character == "}" { inOverride = false }
                continue
            }
            if escape {
                escape = false
                switch character {
                case "N", "n": plain.append("\n")
                case "h": plain.append(" ")
                default: plain.append("\\"); plain.append(character)
                }
                continue
            }
            switch character {
            case "{": inOverride = true
            case "\\": escape = true
            default: plain.append(character)
            }
        }
        if escape { plain.append("\\") }
        return plain.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .joined(separator: "\n")
            .trimmingCharacters(in: .newlines)
    }

    /// The fields of an ASS event line before its text.
    static let assFieldsBeforeText = 8
}

extension Substring {
    fileprivate func trimmingCharacters(in set: Set<Character>) -> Substring {
        var trimmed = self
        while let first = trimmed.first, set.contains(first) { trimmed = trimmed.dropFirst() }
        while let last = trimmed.last, set.contains(last) { trimmed = trimmed.dropLast() }
        return trimmed
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: Set<Character>) -> String {
        String(Substring(self).trimmingCharacters(in: set))
    }
}

extension Set where Element == Character {
    fileprivate static let whitespaces: Set<Character> = [" ", "\t"]
    fileprivate static let newlines: Set<Character> = ["\n", "\r"]
}

extension Array {
    /// The first index whose element satisfies `belongs`, which must hold for a suffix.
    func partitioningIndex(where belongs: (Element) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if belongs(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}

/// Decodes one text subtitle stream's packets into cues (on the demuxer's thread).
final class SubtitleDecoder {
    let streamIndex: Int
    private let context: UnsafeMutablePointer<AVCodecContext>
    private let timeBase: AVRational
    /// The item's start in the stream's time base: item time 0.
    private let startTicks: Int64

    /// A decoder for `stream` when it is a text subtitle stream with a decoder here; nil
    /// for picture subtitles (DVD, Blu-ray), which are not shown.
    init?(stream: UnsafeMutablePointer<AVStream>, index: Int, itemStart: CMTime) {
        guard let parameters = stream.pointee.codecpar,
              parameters.pointee.codec_type == AVMEDIA_TYPE_SUBTITLE,
              let descriptor = avcodec_descriptor_get(parameters.pointee.codec_id),
              descriptor.pointee.props & Int32(AV_CODEC_PROP_TEXT_SUB) != 0,
              let codec = avcodec_find_decoder(parameters.pointee.codec_id),
              let context = avcodec_alloc_context3(codec) else { return nil }
        var owned: UnsafeMutablePointer<AVCodecContext>? = context
        guard avcodec_parameters_to_context(context, parameters) >= 0 else {
            avcodec_free_context(&owned)
            return nil
        }
        context.pointee.pkt_timebase = stream.pointee.time_base
        guard avcodec_open2(context, codec, nil) >= 0 else {
            avcodec_free_context(&owned)
            return nil
        }
        self.context = context
        streamIndex = index
        timeBase = stream.pointee.time_base
        let base = timeBase
        startTicks = base.num > 0 && base.den > 0
            ? av_rescale_q(itemStart.convertScale(1_000_000, method: .roundHalfAwayFromZero).value, chorus_av_time_base_q(), base)
            : 0
    }

    deinit {
        var owned: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&owned)
    }

    /// Decodes `packet` into `cues`; a packet that does not decode is skipped.
    func decode(_ packet: UnsafeMutablePointer<AVPacket>, into cues: SubtitleCues) {
        guard packet.pointee.pts != FFmpegCall.noPTS, timeBase.num > 0, timeBase.den > 0 else { return }
        var subtitle = AVSubtitle()
        var got: Int32 = 0
        guard avcodec_decode_subtitle2(context, &subtitle, &got, packet) >= 0, got != 0 else { return }
        defer { avsubtitle_free(&subtitle) }
        var lines: [String] = []
        for index in 0..<Int(subtitle.num_rects) {
            guard let rect = subtitle.rects[index] else { continue }
            switch rect.pointee.type {
            case SUBTITLE_ASS:
                if let ass = rect.pointee.ass { lines.append(SubtitleCues.plainText(ofASSLine: String(cString: ass))) }
            case SUBTITLE_TEXT:
                if let text = rect.pointee.text { lines.append(String(cString: text)) }
            default:
                continue
            }
        }
        let text = lines.filter { !$0.isEmpty }.joined(separator: "\n")
        guard !text.isEmpty else { return }
        let ticks = packet.pointee.pts - startTicks
        let start = time(ofTicks: ticks) + CMTime(value: Int64(subtitle.start_display_time), timescale: 1000)
        guard start.isNumeric else { return }
        var end = CMTime.invalid
        if subtitle.end_display_time > subtitle.start_display_time, subtitle.end_display_time != UInt32.max {
            end = start + CMTime(value: Int64(subtitle.end_display_time - subtitle.start_display_time), timescale: 1000)
        } else if packet.pointee.duration > 0 {
            end = start + time(ofTicks: packet.pointee.duration)
        }
        cues.add(SubtitleCue(start: start, end: end, text: text), stream: streamIndex)
    }

    /// `ticks` of the stream's time base as a time, exact (the time base's denominator is
    /// the timescale); out of range, invalid.
    private func time(ofTicks ticks: Int64) -> CMTime {
        let (value, overflow) = ticks.multipliedReportingOverflow(by: Int64(timeBase.num))
        return overflow ? .invalid : CMTime(value: value, timescale: timeBase.den)
    }

    /// Forgets what a seek made stale.
    func flush() { avcodec_flush_buffers(context) }
}
