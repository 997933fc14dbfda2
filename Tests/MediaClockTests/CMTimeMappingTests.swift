import Testing
import ChorusTestSupport
import MediaClock

@Suite("CMTimeMapping", .ownThread)
struct CMTimeMappingTests {
    @Test func mappingsAndEmptyEdits() {
        let source = CMTimeRange(start: CMTime(value: 10, timescale: 1), duration: CMTime(value: 5, timescale: 1))
        let target = CMTimeRange(start: .zero, duration: CMTime(value: 10, timescale: 1))
        let mapping = CMTimeMappingMake(source: source, target: target)
        #expect(mapping.source == source && mapping.target == target)
        #expect(mapping.isValid && !mapping.isEmpty)
        let empty = CMTimeMappingMakeEmpty(target: target)
        #expect(empty.isEmpty && empty.isValid)
        #expect(!CMTimeMapping.invalid.isValid)
        #expect(CMTIMEMAPPING_IS_VALID(mapping) && !CMTIMEMAPPING_IS_EMPTY(mapping))
        #expect(CMTIMEMAPPING_IS_EMPTY(empty))
        #expect(!CMTIMEMAPPING_IS_VALID(kCMTimeMappingInvalid))
    }

    @Test("a range and a mapping made with no arguments are all zero, and so invalid, as C structs start")
    func zeroInitialized() {
        let range = CMTimeRange()
        #expect(range.start == CMTime() && range.duration == CMTime())
        #expect(!range.isValid && !CMTIMERANGE_IS_VALID(range))
        let mapping = CMTimeMapping()
        #expect(mapping.source == CMTimeRange() && mapping.target == CMTimeRange())
        #expect(!CMTIMEMAPPING_IS_VALID(mapping))
    }
}
