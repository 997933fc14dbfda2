import Testing
import ChorusTestSupport
import MediaClock

private func seconds(_ value: Int64, _ timescale: Int32 = 1) -> CMTime {
    CMTime(value: value, timescale: timescale)
}

@Suite("CMTimeRange", .ownThread)
struct CMTimeRangeTests {
    @Test func basicProperties() {
        let range = CMTimeRange(start: seconds(2), duration: seconds(3))
        #expect(range.end == seconds(5))
        #expect(range.isValid && !range.isEmpty)
        #expect(CMTimeRange.zero.isEmpty)
        #expect(!CMTimeRange.invalid.isValid)
        #expect(CMTimeRange(start: seconds(2), end: seconds(7)).duration == seconds(5))
        #expect(!CMTimeRange(start: seconds(7), end: seconds(2)).isValid)
        #expect(!CMTimeRange(start: seconds(0), duration: CMTime(value: 1, timescale: 1, flags: .valid, epoch: 1)).isValid)
        #expect(CMTimeRange(start: seconds(0), duration: .positiveInfinity).isValid)
    }

    @Test func containmentIsHalfOpen() {
        let range = CMTimeRangeMake(start: seconds(2), duration: seconds(3))
        #expect(CMTimeRangeContainsTime(range, time: seconds(2)))
        #expect(range.containsTime(CMTime(value: 4_999, timescale: 1000)))
        #expect(!range.containsTime(seconds(5)))
        #expect(!range.containsTime(seconds(1)))
        #expect(!range.containsTime(.invalid))
        #expect(!CMTimeRange.invalid.containsTime(seconds(0)))
        #expect(range.containsTimeRange(CMTimeRange(start: seconds(3), end: seconds(5))))
        #expect(!range.containsTimeRange(CMTimeRange(start: seconds(3), end: seconds(6))))
        #expect(CMTimeRangeGetEnd(range) == seconds(5))
    }

    @Test func intersectionAndUnion() {
        let a = CMTimeRange(start: seconds(0), end: seconds(10))
        let b = CMTimeRange(start: seconds(5), end: seconds(15))
        #expect(CMTimeRangeGetIntersection(a, otherRange: b) == CMTimeRange(start: seconds(5), end: seconds(10)))
        #expect(CMTimeRangeGetUnion(a, otherRange: b) == CMTimeRange(start: seconds(0), end: seconds(15)))
        let disjoint = CMTimeRange(start: seconds(20), end: seconds(30))
        #expect(a.intersection(disjoint).isEmpty)
        #expect(a.union(disjoint) == CMTimeRange(start: seconds(0), end: seconds(30)))
        #expect(!a.intersection(.invalid).isValid)
        #expect(!a.union(.invalid).isValid)
    }

    @Test func intersectionIsContainedInBothForRandomRanges() {
        var rng = SplitMix64(seed: 40)
        for _ in 0..<1_000 {
            func range() -> CMTimeRange {
                CMTimeRange(start: CMTime(value: Sample.value(&rng), timescale: Sample.timescale(&rng)),
                            duration: CMTime(value: Int64.random(in: 0...(1 << 40), using: &rng), timescale: Sample.timescale(&rng)))
            }
            let (a, b) = (range(), range())
            let both = a.intersection(b)
            let either = a.union(b)
            guard !both.start.hasBeenRounded, !both.end.hasBeenRounded, !either.end.hasBeenRounded else { continue }
            if !both.isEmpty {
                #expect(a.containsTimeRange(both) && b.containsTimeRange(both))
            }
            #expect(either.containsTimeRange(a) && either.containsTimeRange(b))
        }
    }
}
