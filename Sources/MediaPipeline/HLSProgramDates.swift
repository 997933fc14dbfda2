import Foundation
internal import CFFmpeg

/// The dates an HLS playlist gives its segments (`EXT-X-PROGRAM-DATE-TIME`), placed on an
/// item's timeline: what `AVPlayerItem.currentDate()` tells and `seek(to: Date)` finds.
///
/// Why: a broadcast's playlist says when each segment was on air, so that a player can
/// show the time of day of what it plays, and go back to "9 o'clock" in a long live window.
/// FFmpeg's HLS demuxer reads the tag and drops it, so the playlist is read here.
///
/// A segment without a tag of its own is dated from the segment before it (its date plus
/// its duration), as the HLS specification has clients do; segments before the first tag
/// are dated back from it the same way. A pure value type.
public struct HLSProgramDates: Sendable, Equatable {
    /// One dated segment: where it begins on the item's timeline (s), its date then, and
    /// how long it lasts (s).
    struct Span: Sendable, Equatable {
        var start: Double
        var date: Date
        var duration: Double
    }

    /// The dated segments, in the playlist's order.
    private(set) var spans: [Span]

    /// The dates of a playlist whose segments last `durations` (s) and are dated `dates`
    /// (`segmentDates(of:)`), its first segment beginning at `firstStart` (s of the item);
    /// nil when no segment is dated.
    init?(durations: [Double], dates: [Date?], firstStart: Double) {
        var spans: [Span] = []
        var start = firstStart
        for (duration, date) in zip(durations, dates) {
            // A damaged playlist's durations (finite, yet summing past a double's range)
            // date nothing.
            if let date, date.timeIntervalSinceReferenceDate.isFinite, start.isFinite, duration.isFinite {
                spans.append(Span(start: start, date: date, duration: duration))
            }
            start += duration
        }
        guard !spans.isEmpty else { return nil }
        self.spans = spans
    }

    /// The date at `seconds` of the item: the segment holding it, dated, plus how far into
    /// it `seconds` lies. Before the first segment or after the last, the nearest one's
    /// date carried on (a live item's time runs a little past the playlist last read).
    public func date(atItemSeconds seconds: Double) -> Date? {
        guard seconds.isFinite else { return nil }
        let span = spans.last { $0.start <= seconds } ?? spans[0]
        return span.date.addingTimeInterval(seconds - span.start)
    }

    /// Where on the item's timeline (s) the playlist puts `date`: in the first segment
    /// whose dates hold it; nil when no segment's do.
    public func itemSeconds(at date: Date) -> Double? {
        for span in spans {
            let into = date.timeIntervalSince(span.date)
            if into >= 0 && into < span.duration { return span.start + into }
        }
        return nil
    }

    /// Each segment's date: its own tag's, else carried on from the segment before it (or
    /// back from the one after it, before the first tag); all nil when the playlist has none.
    static func segmentDates(of segments: [HLSPlaylistCut.Segment]) -> [Date?] {
        var dates = segments.map { segment in
            segment.lines.lazy.filter { HLSPlaylistCut.tag(of: $0) == "#EXT-X-PROGRAM-DATE-TIME" }.first
                .flatMap { parseDate(String($0.dropFirst("#EXT-X-PROGRAM-DATE-TIME:".count))) }
        }
        guard let firstDated = dates.firstIndex(where: { $0 != nil }) else { return dates }
        for index in stride(from: firstDated - 1, through: 0, by: -1) {
            dates[index] = dates[index + 1]?.addingTimeInterval(-segments[index].duration)
        }
        for index in segments.indices.dropFirst() where dates[index] == nil {
            dates[index] = dates[index - 1]?.addingTimeInterval(segments[index - 1].duration)
        }
        return dates
    }

    /// The date in an `EXT-X-PROGRAM-DATE-TIME` value: ISO 8601 with a time zone
    /// (`2026-11-28T09:00:00.250Z`, `…+01:00`, `…+0100`), fractions of a second to any
    /// length; nil for anything else.
    static func parseDate(_ text: String) -> Date? {
        let text = text.trimmingCharacters(in: .whitespaces)
        let utf8 = Array(text.utf8)
        var at = 0
        func number(_ digits: Int) -> Int? {
            guard at + digits <= utf8.count else { return nil }
            var value = 0
            for byte in utf8[at..<at + digits] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            at += digits
            return value
        }
        func expect(_ character: Character) -> Bool {
            guard at < utf8.count, let ascii = character.asciiValue, utf8[at] == ascii else { return false }
            at += 1
            return true
        }
        // (A second of 60 is a leap second: the same instant as the next minute's first.)
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
              expect("T") || expect("t"), let hour = number(2), expect(":"), let minute = number(2), expect(":"),
              let second = number(2), (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
              hour < 24, minute < 60, second <= 60
        else { return nil }
        var fraction = 0.0
        if expect(".") {
            var scale = 0.1
            let digitsStart = at
            while at < utf8.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(utf8[at]) {
                fraction += Double(utf8[at] - UInt8(ascii: "0")) * scale
                scale /= 10
                at += 1
            }
            guard at > digitsStart else { return nil }
        }
        var offsetSeconds = 0
        if expect("Z") || expect("z") {
            offsetSeconds = 0
        } else if at < utf8.count, utf8[at] == UInt8(ascii: "+") || utf8[at] == UInt8(ascii: "-") {
            let sign = utf8[at] == UInt8(ascii: "-") ? -1 : 1
            at += 1
            guard let hours = number(2) else { return nil }
            _ = expect(":")
            guard let minutes = number(2), hours < 24, minutes < 60 else { return nil }
            offsetSeconds = sign * (hours * 3600 + minutes * 60)
        } else {
            return nil
        }
        guard at == utf8.count else { return nil }
        let days = daysSince1970(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offsetSeconds
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    /// The days in `month` (1 to 12) of `year`, on the proleptic Gregorian calendar ISO 8601
    /// counts in.
    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// The days from 1970-01-01 to a date of the proleptic Gregorian calendar (negative
    /// before it), counted in whole 400-year cycles (146,097 days each) with the year taken
    /// to start in March, so that February's leap day falls at its end.
    static func daysSince1970(year: Int, month: Int, day: Int) -> Int {
        let marchYear = month > 2 ? year : year - 1
        let cycle = (marchYear >= 0 ? marchYear : marchYear - 399) / 400
        let yearOfCycle = marchYear - cycle * 400
        let monthFromMarch = (month + 9) % 12
        // Days before each month, from March: 31 30 31 30 31 31 30 31 30 31 31 (and February).
        let dayOfYear = (153 * monthFromMarch + 2) / 5 + day - 1
        let dayOfCycle = yearOfCycle * 365 + yearOfCycle / 4 - yearOfCycle / 100 + dayOfYear
        // 1970-01-01 is day 719,468 counted from 0000-03-01.
        return cycle * 146_097 + dayOfCycle - 719_468
    }

    /// What the media playlist of an on-demand HLS presentation says of it as a whole.
    package struct OnDemandReading: Sendable {
        /// Its segments' dates, its first segment at item time 0; nil when it dates none.
        package var dates: HLSProgramDates?
        /// Whether it is spliced from several (an `EXT-X-DISCONTINUITY` after its first
        /// segment): its times jump there.
        package var isSpliced: Bool
    }

    /// Reads the on-demand HLS playlist at `url` (its first variant's, for a master
    /// playlist: a presentation's variants carry the same dates and splices); nil when it
    /// cannot be read. Blocking: it fetches one or two playlists, each bounded by the reads'
    /// own timeout, and cut short once `interrupt` is set (the item they were for is gone).
    package static func readOnDemand(url: String, fields: HTTPRequestFields? = nil, interrupt: InterruptFlag = InterruptFlag()) -> OnDemandReading? {
        let text = withExtendedLifetime(interrupt) { HLSRenditions.readFirstMediaPlaylist(url, interrupt: interrupt.callback, fields: fields) }
        guard let text, !interrupt.isSet else { return nil }
        let playlist = HLSPlaylistCut(parsing: text)
        guard !playlist.isMaster else { return nil }
        return OnDemandReading(dates: HLSProgramDates(durations: playlist.segments.map(\.duration), dates: segmentDates(of: playlist.segments), firstStart: 0),
                               isSpliced: playlist.firstDiscontinuity != nil)
    }
}
