import ChorusSimulation
import Testing
import ChorusTestSupport
import MediaClock

/// Independent statement of the documented formula, with floor division.
private func expectedSkew(_ t: Int64, base: Int64, offsetNanoseconds: Int64, ppm: Int64) -> Int64 {
    let elapsed = Int128(t) - Int128(base)
    let product = elapsed * (1_000_000 + Int128(ppm))
    var quotient = product / 1_000_000
    if product % 1_000_000 != 0 && product < 0 { quotient -= 1 }
    return Int64(Int128(base) + Int128(offsetNanoseconds) + quotient)
}

@Suite("SkewedHostClock", .ownThread)
struct SkewedHostClockTests {
    @Test func offsetOnlyShiftsReadings() {
        let base = SimulatedHostClock(start: HostTime(nanoseconds: 1_000))
        let skewed = SkewedHostClock(wrapping: base, offset: .milliseconds(-250))
        #expect(skewed.now().nanoseconds == 1_000 - 250_000_000)
        base.advance(by: .seconds(3))
        #expect(skewed.now() - base.now() == .milliseconds(-250))
    }

    @Test func skewIsExactInParts() {
        let base = SimulatedHostClock()
        let fast = SkewedHostClock(wrapping: base, skewPPM: 100)
        base.advance(by: .seconds(1))
        #expect(fast.now().nanoseconds == 1_000_100_000)
        let slow = SkewedHostClock(wrapping: base, skewPPM: -1)
        // 1 ns * 0.999999 floors to 0.
        #expect(slow.map(HostTime(nanoseconds: 1)).nanoseconds == 0)
        #expect(slow.map(HostTime(nanoseconds: -1)).nanoseconds == -1)
        let pivoted = SkewedHostClock(wrapping: base, offset: .seconds(1), skewPPM: 1_000_000, base: HostTime(nanoseconds: 10))
        #expect(pivoted.map(HostTime(nanoseconds: 10)).nanoseconds == 1_000_000_010)
        #expect(pivoted.map(HostTime(nanoseconds: 20)).nanoseconds == 1_000_000_030)
    }

    @Test func matchesTheFormulaForRandomInputs() {
        var rng = SplitMix64(seed: 30)
        for _ in 0..<2_000 {
            let baseTime = Int64.random(in: -(1 << 50)...(1 << 50), using: &rng)
            let offset = Int64.random(in: -(1 << 40)...(1 << 40), using: &rng)
            let ppm = Int64.random(in: -999_999...1_000_000, using: &rng)
            let clock = SkewedHostClock(
                wrapping: MonotonicHostClock(), offset: .nanoseconds(offset), skewPPM: ppm,
                base: HostTime(nanoseconds: baseTime))
            let t1 = Int64.random(in: -(1 << 55)...(1 << 55), using: &rng)
            let t2 = t1 + Int64.random(in: 0...(1 << 30), using: &rng)
            let mapped1 = clock.map(HostTime(nanoseconds: t1))
            #expect(mapped1.nanoseconds == expectedSkew(t1, base: baseTime, offsetNanoseconds: offset, ppm: ppm))
            #expect(clock.map(HostTime(nanoseconds: t2)) >= mapped1)
        }
    }

    @Test func impossibleSkewIsClamped() {
        let clock = SkewedHostClock(wrapping: SimulatedHostClock(), skewPPM: -5_000_000)
        #expect(clock.skewPPM == -999_999)
        #expect(clock.map(HostTime(nanoseconds: 1_000_000)).nanoseconds == 1)
    }
}
