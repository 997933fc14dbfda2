import Foundation
import Testing
import ChorusTestSupport
@testable import MediaClock
import Synchronization
import MutexAnnotations

/// Kernel stamps converted to host time by their age, and the timer that keeps its ticks
/// on the host clock.
@Suite(.ownThread) struct KernelClockTests {
    @Test func aKernelStampBecomesTheHostTimeItsAgeAgo() throws {
        // A read of the kernel's clock at 5_000_000 ns, made between host times 1_000_000
        // and 1_000_400: the read stands at their midpoint, and the stamp its age before it.
        let before = HostTime(nanoseconds: 1_000_000), after = HostTime(nanoseconds: 1_000_400)
        func converted(_ stamp: Int128) -> HostTime? {
            KernelClock.hostTime(ofStamp: stamp, kernelNow: 5_000_000, readBetween: before, and: after,
                                 maximumAge: .milliseconds(4), slack: .microseconds(10))
        }
        #expect(converted(2_000_000) == HostTime(nanoseconds: 1_000_200 - 3_000_000))
        #expect(converted(5_000_000) == HostTime(nanoseconds: 1_000_200))
        // A stamp a little ahead of the read (within the slack) is taken as now, never later
        // than the second host read.
        #expect(converted(5_000_005) == HostTime(nanoseconds: 1_000_200))
        // Beyond the slack the clock was stepped; beyond the maximum age it is too old.
        #expect(converted(5_010_001) == nil)
        #expect(converted(999_999) == nil)
        #expect(converted(1_000_000) == HostTime(nanoseconds: 1_000_200 - 4_000_000))
    }

    @Test func theKernelsOwnClockConvertsToAnEarlierHostTime() throws {
        let stamp = try #require(KernelClock.nanoseconds(CLOCK_MONOTONIC))
        usleep(3_000)
        let converted = try #require(KernelClock.hostTime(ofStamp: stamp, on: CLOCK_MONOTONIC, maximumAge: .seconds(1)))
        let now = HostTime.now()
        // The stamp is at least the sleep old, whatever the scheduler did around the reads:
        // the conversion's own read came after the sleep, and its error is at most half the
        // bracket around that read, which ended before `now`.
        #expect(now - converted >= .milliseconds(3))
    }

    @Test func implausibleStampsAreRefused() throws {
        let now = try #require(KernelClock.nanoseconds(CLOCK_REALTIME))
        // From the future (the clock was stepped back), or older than allowed.
        #expect(KernelClock.hostTime(ofStamp: now + 50_000_000, on: CLOCK_REALTIME, maximumAge: .seconds(1)) == nil)
        #expect(KernelClock.hostTime(ofStamp: now - 2_000_000_000, on: CLOCK_REALTIME, maximumAge: .seconds(1)) == nil)
        #expect(KernelClock.hostTime(ofStamp: now, on: CLOCK_REALTIME, maximumAge: .seconds(1)) != nil)
    }
}

@Suite(.ownThread) struct RepeatingTimerTests {
    final class Counter: @unchecked Sendable {
        let lock = NSLock()
        var ticks: [HostTime] = []
        func tick() { lock.withLock { ticks.append(.now()) } }
        var count: Int { lock.withLock { ticks.count } }
    }

    @Test func ticksEveryIntervalUntilCancelled() {
        let counter = Counter()
        let queue = DispatchQueue(label: "timer-test")
        let timer = RepeatingTimer(label: "test", interval: .milliseconds(20), queue: queue) { counter.tick() }
        usleep(500_000)
        timer.cancel()
        queue.sync {}
        let ticks = counter.count
        // About 25 ticks in half a second; a loaded machine may merge a few.
        #expect(ticks >= 15 && ticks <= 27, "\(ticks) ticks")
        usleep(100_000)
        queue.sync {}
        #expect(counter.count == ticks, "no tick after cancel")
    }

    @Test func theFirstTickComesAfterTheDelayAsked() {
        let counter = Counter()
        let queue = DispatchQueue(label: "timer-test-delay")
        let start = HostTime.now()
        let timer = RepeatingTimer(label: "test", interval: .seconds(10), delay: .milliseconds(30), queue: queue) { counter.tick() }
        defer { timer.cancel() }
        usleep(300_000)
        let first = queue.sync { counter.lock.withLock { counter.ticks.first } }
        guard let first else { Issue.record("no tick"); return }
        #expect(first - start >= .milliseconds(30))
        #expect(counter.count == 1)
    }
}

@Suite(.ownThread) struct DeadlineTimerTests {
    @Test func firesOnceAfterItsDeadlineAndANewDeadlineReplacesTheOld() {
        let counter = RepeatingTimerTests.Counter()
        let queue = DispatchQueue(label: "deadline-test")
        let timer = DeadlineTimer(label: "test", queue: queue) { counter.tick() }
        defer { timer.cancel() }
        let start = HostTime.now()
        timer.schedule(after: .milliseconds(200))
        // Moved sooner before it fired: only the new deadline fires.
        timer.schedule(after: .milliseconds(30))
        usleep(400_000)
        let ticks = queue.sync { counter.lock.withLock { counter.ticks } }
        #expect(ticks.count == 1, "\(ticks.count) firings")
        if let first = ticks.first { #expect(first - start >= .milliseconds(30)) }
        // A deadline already passed fires at once, and again only once.
        timer.schedule(after: .zero)
        usleep(100_000)
        #expect(queue.sync { counter.count } == 2)
    }

    @Test func aCancelledTimerNeverFires() {
        let counter = RepeatingTimerTests.Counter()
        let queue = DispatchQueue(label: "deadline-test-cancel")
        let timer = DeadlineTimer(label: "test", queue: queue) { counter.tick() }
        timer.schedule(after: .milliseconds(30))
        timer.cancel()
        usleep(150_000)
        #expect(queue.sync { counter.count } == 0)
    }
}

@Suite(.ownThread) struct WakeupPrecisionTests {
    @Test func theKernelTakesAPreciseTimerSlackForTheCallingThreadOnly() {
        let outcome = Mutex<(took: Bool, own: Duration?, other: Duration?)>((false, nil, nil))
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            let took = WakeupPrecision.requestForCurrentThread()
            outcome.withLockAnnotated { $0.took = took; $0.own = WakeupPrecision.currentThreadSlack }
            done.signal()
        }
        thread.start()
        done.wait()
        let other = WakeupPrecision.currentThreadSlack
        let (took, own, _) = outcome.withLockAnnotated { $0 }
        #expect(took)
        #expect(own == WakeupPrecision.preciseSlack)
        // Another thread keeps its own (the default 50 µs unless something set it).
        #expect(other != nil && other != WakeupPrecision.preciseSlack)
    }
}

@Suite(.ownThread) struct WakeSignalTests {
    @Test func aSignalGivenBeforeTheWaitIsTakenAtOnceAndOnlyOnce() {
        let signal = WakeSignal()
        signal.signal()
        signal.signal()
        // Signals do not count: two before the wait wake it once.
        #expect(signal.wait(timeout: .seconds(5)))
        #expect(!signal.wait(timeout: .milliseconds(1)))
    }

    @Test func anUnsignalledWaitLastsItsTimeout() {
        let signal = WakeSignal()
        let start = HostTime.now()
        #expect(!signal.wait(timeout: .milliseconds(20)))
        #expect(HostTime.now() - start >= .milliseconds(19))
        // A timeout of zero or less is a poll.
        #expect(!signal.wait(timeout: .zero))
        #expect(!signal.wait(timeout: .milliseconds(-5)))
    }

    final class Flag: Sendable {
        let value = Atomic<Bool>(false)
        var isSet: Bool { value.load(ordering: .acquiring) }
    }

    @Test func anotherThreadsSignalWakesAWaitWithoutATimeout() {
        let signal = WakeSignal()
        let woke = Flag()
        let thread = Thread {
            signal.wait()
            woke.value.store(true, ordering: .releasing)
        }
        thread.start()
        usleep(20_000)
        #expect(!woke.isSet)
        signal.signal()
        for _ in 0..<500 where !woke.isSet { usleep(2_000) }
        #expect(woke.isSet)
    }
}
