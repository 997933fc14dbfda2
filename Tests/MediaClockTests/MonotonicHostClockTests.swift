import Testing
import MediaClock

@Suite("MonotonicHostClock")
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
