import Foundation
import Testing
import ChorusTestSupport
@testable import MediaClock

@Suite("CoreMedia compatibility", .ownThread)
struct CoreMediaCompatibilityTests {
    // MARK: Showing

    @Test("CMTimeShow prints a time as CoreMedia does, seconds to three places")
    func showsTimes() {
        #expect(showText(CMTime(value: 1, timescale: 2)) == "{1/2 = 0.500}")
        #expect(showText(CMTime(value: -7, timescale: 3)) == "{-7/3 = -2.333}")
        #expect(showText(CMTime(value: 1, timescale: 3, flags: [.valid, .hasBeenRounded], epoch: 0)) == "{~1/3 = 0.333}")
        #expect(showText(CMTime(value: 1, timescale: 1, flags: .valid, epoch: 2)) == "{1/1 = 1.000, epoch 2}")
        #expect(showText(CMTime.invalid) == "{INVALID}")
        #expect(showText(CMTime.indefinite) == "{INDEFINITE}")
        #expect(showText(CMTime.positiveInfinity) == "{+INFINITY}")
        #expect(showText(CMTime.negativeInfinity) == "{-INFINITY}")
        CMTimeShow(CMTime(value: 1, timescale: 2))
    }

    @Test("CMTimeRangeShow prints the start and the duration as CMTimeShow does")
    func showsRanges() {
        let range = CMTimeRange(start: .zero, duration: CMTime(value: 3, timescale: 2))
        #expect(showText(range) == "{{0/1 = 0.000}, {3/2 = 1.500}}")
        CMTimeRangeShow(range)
    }

    // MARK: Clamping

    @Test("CMTimeClampToRange keeps a time inside and moves one outside to the nearer end")
    func clamps() {
        let range = CMTimeRange(start: CMTime(value: 1, timescale: 1), duration: CMTime(value: 2, timescale: 1))
        #expect(CMTimeClampToRange(CMTime(value: 3, timescale: 2), range: range) == CMTime(value: 3, timescale: 2))
        #expect(CMTimeClampToRange(.zero, range: range) == CMTime(value: 1, timescale: 1))
        #expect(CMTimeClampToRange(.negativeInfinity, range: range) == CMTime(value: 1, timescale: 1))
        #expect(CMTimeClampToRange(CMTime(value: 10, timescale: 1), range: range) == CMTime(value: 3, timescale: 1))
        #expect(CMTimeClampToRange(.positiveInfinity, range: range) == CMTime(value: 3, timescale: 1))
        #expect(CMTimeClampToRange(CMTime(value: 3, timescale: 1), range: range) == CMTime(value: 3, timescale: 1))
    }

    @Test("CMTimeClampToRange gives invalid for an invalid time, an invalid range or an empty one")
    func clampRefuses() {
        let range = CMTimeRange(start: .zero, duration: CMTime(value: 1, timescale: 1))
        #expect(!CMTimeClampToRange(.invalid, range: range).isValid)
        #expect(!CMTimeClampToRange(.zero, range: .invalid).isValid)
        #expect(!CMTimeClampToRange(.zero, range: CMTimeRange(start: CMTime(value: 1, timescale: 1), duration: .zero)).isValid)
    }

    // MARK: Dictionaries

    @Test("A time's dictionary has CoreMedia's four keys and numbers")
    func timeDictionaryKeys() throws {
        let time = CMTime(value: 1001, timescale: 30000, flags: [.valid, .hasBeenRounded], epoch: 4)
        let dictionary = try #require(CMTimeCopyAsDictionary(time, allocator: kCFAllocatorDefault) as? [String: Any])
        #expect(Set(dictionary.keys) == ["value", "timescale", "flags", "epoch"])
        #expect(dictionary["value"] as? Int64 == 1001)
        #expect(dictionary["timescale"] as? Int32 == 30000)
        #expect(dictionary["flags"] as? UInt32 == 3)
        #expect(dictionary["epoch"] as? Int64 == 4)
    }

    @Test("Every kind of time comes back from its dictionary field for field")
    func timeDictionaryRoundTrip() {
        let times: [CMTime] = [
            .zero, .invalid, .indefinite, .positiveInfinity, .negativeInfinity,
            CMTime(value: -5, timescale: 7), CMTime(value: .max, timescale: kCMTimeMaxTimescale),
            CMTime(value: 1, timescale: 3, flags: [.valid, .hasBeenRounded], epoch: -9),
        ]
        for time in times {
            let back = CMTimeMakeFromDictionary(CMTimeCopyAsDictionary(time, allocator: nil))
            #expect(back.value == time.value && back.timescale == time.timescale && back.flags == time.flags && back.epoch == time.epoch,
                    "\(time) came back as \(back)")
        }
    }

    @Test("A Swift dictionary of plain integers reads as a time, the epoch defaulting to zero")
    func swiftDictionary() {
        let time = CMTimeMakeFromDictionary(["value": 3, "timescale": 4, "flags": 1])
        #expect(time == CMTime(value: 3, timescale: 4))
        #expect(time.epoch == 0)
    }

    @Test("A dictionary that is not a time's reads as invalid")
    func badDictionaries() {
        #expect(!CMTimeMakeFromDictionary(nil as NSDictionary?).isValid)
        #expect(!CMTimeMakeFromDictionary(["value": 3, "timescale": 4]).isValid)
        #expect(!CMTimeMakeFromDictionary(["value": 3.5, "timescale": 4, "flags": 1]).isValid)
        #expect(!CMTimeMakeFromDictionary(["value": 3, "timescale": Int64(1) << 40, "flags": 1]).isValid)
        #expect(!CMTimeMakeFromDictionary(["value": "3", "timescale": 4, "flags": 1]).isValid)
        #expect(!CMTimeMakeFromDictionary(["value": 3, "timescale": 4, "flags": 1, "epoch": "x"]).isValid)
    }

    @Test("A range comes back from its dictionary; a broken one reads as invalid")
    func rangeDictionary() throws {
        let range = CMTimeRange(start: CMTime(value: 1, timescale: 2), duration: CMTime(value: 9, timescale: 10))
        let dictionary = CMTimeRangeCopyAsDictionary(range, allocator: kCFAllocatorDefault)
        let back = CMTimeRangeMakeFromDictionary(dictionary)
        #expect(back.start.value == 1 && back.start.timescale == 2)
        #expect(back.duration.value == 9 && back.duration.timescale == 10)
        let swift = try #require(dictionary as? [String: Any])
        #expect(Set(swift.keys) == ["start", "duration"])
        #expect(CMTimeRangeMakeFromDictionary(swift) == range)
        #expect(!CMTimeRangeMakeFromDictionary(["start": ["value": 1, "timescale": 2, "flags": 1]]).isValid)
        #expect(!CMTimeRangeMakeFromDictionary(nil as NSDictionary?).isValid)
    }

    // MARK: Constants

    @Test("Dispatch's unit constants are 64-bit unsigned counts")
    func unitConstants() {
        let perSecond: UInt64 = NSEC_PER_SEC
        #expect(perSecond == 1_000_000_000)
        #expect(NSEC_PER_MSEC * 1_000 == NSEC_PER_SEC)
        #expect(NSEC_PER_USEC * USEC_PER_SEC == NSEC_PER_SEC)
        #expect(USEC_PER_SEC == 1_000_000)
    }

    @Test("kCFAllocatorDefault serves as the allocator of CoreMedia's functions")
    func defaultAllocator() throws {
        var timebase: CMTimebase?
        let status = CMTimebaseCreateWithSourceClock(allocator: kCFAllocatorDefault, sourceClock: CMClockGetHostTimeClock(), timebaseOut: &timebase)
        #expect(status == noErr)
        #expect(timebase != nil)
        #expect(kCFAllocatorDefault == nil)
    }
}
