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
    }
}
