import Foundation
import Testing
@testable import MediaPipeline

/// The dates a playlist gives its segments (`EXT-X-PROGRAM-DATE-TIME`), read and placed on
/// an item's timeline.
@Suite struct HLSProgramDatesTests {
    /// 2026-11-28T09:00:00Z, in seconds since 1970.
    static let nine = Date(timeIntervalSince1970: 1_795_856_400)

    @Test("a date is read in each form ISO 8601 gives a time zone, to any fraction of a second")
    func datesAreRead() {
        let nine = Self.nine
        #expect(HLSProgramDates.parseDate("2026-11-28T09:00:00Z") == nine)
        #expect(HLSProgramDates.parseDate("2026-11-28T09:00:00.250Z") == nine.addingTimeInterval(0.25))
        #expect(HLSProgramDates.parseDate(" 2026-11-28T10:00:00.5+01:00 ") == nine.addingTimeInterval(0.5))
        #expect(HLSProgramDates.parseDate("2026-11-28T04:30:00-0430") == nine)
        let fine = HLSProgramDates.parseDate("2026-11-28T09:00:00.123456789Z")
        #expect(abs((fine?.timeIntervalSince(nine) ?? 0) - 0.123456789) < 1e-6)
        // The proleptic Gregorian calendar: leap days where it has them, a leap second as the
        // next minute's first, and early years counted as ISO 8601 counts them.
        #expect(HLSProgramDates.parseDate("2024-02-29T00:00:00Z") == Date(timeIntervalSince1970: 1_709_164_800))
        #expect(HLSProgramDates.parseDate("2000-02-29T00:00:00Z") == Date(timeIntervalSince1970: 951_782_400))
        #expect(HLSProgramDates.parseDate("2016-12-31T23:59:60Z") == HLSProgramDates.parseDate("2017-01-01T00:00:00Z"))
        #expect(HLSProgramDates.parseDate("1969-12-31T23:59:59Z") == Date(timeIntervalSince1970: -1))
        #expect(HLSProgramDates.parseDate("0001-01-01T00:00:00Z") == Date(timeIntervalSince1970: -62_135_596_800))
        // No time zone, an impossible day or hour, a fraction without digits, trailing text,
        // nothing at all: not dates.
        for bad in ["2026-11-28T09:00:00", "2026-02-30T09:00:00Z", "2023-02-29T09:00:00Z", "1900-02-29T09:00:00Z",
                    "2026-04-31T09:00:00Z", "2026-11-28T24:00:00Z", "2026-11-28T09:00:00.Z",
                    "2026-11-28T09:00:00Zjunk", "2026-13-01T09:00:00Z", "", "yesterday", "2026-11-28 09:00"] {
            #expect(HLSProgramDates.parseDate(bad) == nil, "\(bad)")
        }
    }

    @Test("segments without a date of their own are dated from the one before them, or back from the first dated one")
    func undatedSegmentsAreCarriedOn() throws {
        let text = """
            #EXTM3U
            #EXT-X-TARGETDURATION:4
            #EXTINF:4.0,
            a.ts
            #EXTINF:2.0,
            b.ts
            #EXT-X-PROGRAM-DATE-TIME:2026-11-28T09:00:00Z
            #EXTINF:4.0,
            c.ts
            #EXTINF:4.0,
            d.ts
            #EXT-X-DISCONTINUITY
            #EXT-X-PROGRAM-DATE-TIME:2026-11-28T12:00:00Z
            #EXTINF:3.0,
            e.ts
            #EXT-X-ENDLIST
            """
        let playlist = try #require(HLSMediaPlaylist(parsing: text))
        let nine = Self.nine
        #expect(playlist.dates == [nine - 6, nine - 2, nine, nine + 4, nine + 3 * 3600])
        let dates = try #require(HLSProgramDates(durations: playlist.durations, dates: playlist.dates, firstStart: 0))
        // c begins at 6 s of the item.
        #expect(dates.date(atItemSeconds: 6) == nine)
        #expect(dates.date(atItemSeconds: 7.5) == nine + 1.5)
        #expect(dates.date(atItemSeconds: 0) == nine - 6)
        // Past the splice the playlist's own date holds, not the one carried on.
        #expect(dates.date(atItemSeconds: 15) == nine + 3 * 3600 + 1)
        #expect(dates.itemSeconds(at: nine + 1.5) == 7.5)
        #expect(dates.itemSeconds(at: nine + 3 * 3600 + 2) == 16)
        // Between the two stretches, and outside the playlist: no such date.
        #expect(dates.itemSeconds(at: nine + 3600) == nil)
        #expect(dates.itemSeconds(at: nine - 7) == nil)
        #expect(dates.itemSeconds(at: nine + 3 * 3600 + 3) == nil)
    }

    @Test("durations too large to add up date nothing, and trap nothing")
    func hostileDurationsDateNothing() throws {
        let text = """
            #EXTM3U
            #EXT-X-PROGRAM-DATE-TIME:2026-11-28T09:00:00Z
            #EXTINF:4,
            a.ts
            #EXTINF:1e308,
            b.ts
            #EXTINF:1e308,
            c.ts
            #EXTINF:4,
            d.ts
            """
        let playlist = try #require(HLSMediaPlaylist(parsing: text))
        let dates = try #require(HLSProgramDates(durations: playlist.durations, dates: playlist.dates, firstStart: 0))
        #expect(dates.itemSeconds(at: Self.nine.addingTimeInterval(1)) == 1)
        #expect(dates.date(atItemSeconds: 1) == Self.nine.addingTimeInterval(1))
        // d would begin past the sum a double can hold, at infinity: it is not dated.
        #expect(dates.spans.count == 3)
        #expect(dates.spans.allSatisfy { $0.start.isFinite && $0.date.timeIntervalSinceReferenceDate.isFinite })
        #expect(dates.date(atItemSeconds: .infinity) == nil)
    }

    @Test("a live reading places its dates where its segments begin on the item's timeline")
    func liveReadingsAreDated() throws {
        let text = """
            #EXTM3U
            #EXT-X-TARGETDURATION:2
            #EXT-X-MEDIA-SEQUENCE:40
            #EXT-X-PROGRAM-DATE-TIME:2026-11-28T09:00:00Z
            #EXTINF:2.0,
            s40.ts
            #EXTINF:2.0,
            s41.ts
            """
        let playlist = try #require(HLSMediaPlaylist(parsing: text))
        let reading = HLSLiveWindow.Reading(playlist: playlist, firstStart: 1_000)
        let dates = try #require(reading.programDates)
        #expect(dates.date(atItemSeconds: 1_003) == Self.nine + 3)
        #expect(dates.itemSeconds(at: Self.nine + 1) == 1_001)
        // A playlist without dates has none.
        let plain = try #require(HLSMediaPlaylist(parsing: text.replacingOccurrences(of: "#EXT-X-PROGRAM-DATE-TIME:2026-11-28T09:00:00Z\n", with: "")))
        #expect(HLSLiveWindow.Reading(playlist: plain, firstStart: 0).programDates == nil)
    }
}

