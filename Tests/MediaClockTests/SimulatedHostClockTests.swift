import ChorusSimulation
import Testing
import ChorusTestSupport
import MediaClock

@Suite("SimulatedHostClock", .ownThread)
struct SimulatedHostClockTests {
    @Test func timeMovesOnlyWhenTold() {
        let clock = SimulatedHostClock(start: HostTime(nanoseconds: 42))
        #expect(clock.now().nanoseconds == 42)
        #expect(clock.now().nanoseconds == 42)
        clock.advance(by: .milliseconds(1))
        #expect(clock.now().nanoseconds == 1_000_042)
        clock.set(HostTime(nanoseconds: 7))
        #expect(clock.now().nanoseconds == 7)
        clock.advance(by: .nanoseconds(-3))
        #expect(clock.now().nanoseconds == 4)
    }

    @Test func concurrentAdvancesAreNotLost() async {
        let clock = SimulatedHostClock()
        let tasks = 8
        let stepsPerTask = 1_000
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<tasks {
                group.addTask {
                    for _ in 0..<stepsPerTask { clock.advance(by: .nanoseconds(1)) }
                }
            }
        }
        #expect(clock.now().nanoseconds == Int64(tasks * stepsPerTask))
    }
}
