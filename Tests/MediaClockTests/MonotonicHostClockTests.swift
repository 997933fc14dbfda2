import Testing
import ChorusTestSupport
import MediaClock

@Suite("MonotonicHostClock", .ownThread)
struct MonotonicHostClockTests {
    @Test func readingsNeverGoBackwards() {
        let clock = MonotonicHostClock()
        var previous = clock.now()
        for _ in 0..<1_000 {
            let next = clock.now()
            #expect(next >= previous)
            previous = next
        }
    }
}
