import Foundation
import Testing
import ChorusTestSupport
import Synchronization
import MediaClock
import MutexAnnotations
@testable import MediaPipeline

/// The reopener on made-up streams whose opening and closing the test holds, fails or lets
/// go, on real threads: what the render thread's calls return while a device hangs, and
/// which streams end up closed. Waits poll with a deadline far beyond what they take.
@Suite(.ownThread) struct StreamReopenerTests {
    /// The longest a wait for the reopener's threads lasts before the test fails.
    static let patience: Duration = .seconds(20)

    /// A stream by number; the device behind it is the test's `Device`.
    struct FakeStream: Sendable, Equatable { let number: Int }

    /// Opens numbered streams and records what happens to them; an open or a close can be
    /// made to fail or to hang until the test lets it go.
    final class Device: Sendable {
        struct State {
            var nextNumber = 1
            var failuresToCome = 0
            var openAttempts: [HostTime] = []
            var closeStarted: [Int] = []
            var closeFinished: [Int] = []
        }
        let state = Mutex(State())
        /// What happened so far.
        var snapshot: State { state.withLockAnnotated { $0 } }
        /// Held shut while the test wants opens (or closes) to hang.
        let openGate = DispatchSemaphore(value: 0)
        let closeGate = DispatchSemaphore(value: 0)
        let opensHang: Bool
        let closesHang: Bool

        init(opensHang: Bool = false, closesHang: Bool = false, failures: Int = 0) {
            self.opensHang = opensHang
            self.closesHang = closesHang
            state.withLockAnnotated { $0.failuresToCome = failures }
        }

        struct Refused: Error {}

        func open() throws -> FakeStream {
            let fails = state.withLockAnnotated { state -> Bool in
                state.openAttempts.append(.now())
                guard state.failuresToCome > 0 else { return false }
                state.failuresToCome -= 1
                return true
            }
            if fails { throw Refused() }
            if opensHang { openGate.wait() }
            return state.withLockAnnotated { state in
                defer { state.nextNumber += 1 }
                return FakeStream(number: state.nextNumber)
            }
        }

        func close(_ stream: FakeStream) {
            state.withLockAnnotated { $0.closeStarted.append(stream.number) }
            if closesHang { closeGate.wait() }
            state.withLockAnnotated { $0.closeFinished.append(stream.number) }
        }

        func reopener(retryInterval: Duration = .milliseconds(1)) -> StreamReopener<FakeStream> {
            StreamReopener(label: "test.reopen", retryInterval: retryInterval,
                           open: { try self.open() }, close: { self.close($0) })
        }
    }

    /// Polls `condition` until it holds or `patience` passes.
    func eventually(_ condition: () -> Bool) -> Bool {
        let deadline = HostTime.now() + Self.patience
        while !condition() {
            if HostTime.now() > deadline { return false }
            usleep(1_000)
        }
        return true
    }

    /// Calls `takeReady` as a render thread would, once a period, until a stream comes;
    /// returns it and the longest any one call took.
    /// Hands `stream` over as the render thread does: its call only try-locks, so when the
    /// reopener's thread holds the lock for a moment (starting up, on a slow or sanitized
    /// run) the call takes nothing, and the render thread tries again next period.
    func retireWhenFree(_ reopener: StreamReopener<FakeStream>, _ stream: FakeStream) -> Bool {
        eventually { reopener.retire(stream) }
    }

    func takeWhenReady(_ reopener: StreamReopener<FakeStream>) -> (stream: FakeStream?, longestCall: Duration) {
        let deadline = HostTime.now() + Self.patience
        var longest = Duration.zero
        while HostTime.now() < deadline {
            let before = HostTime.now()
            let taken = reopener.takeReady()
            longest = max(longest, HostTime.now() - before)
            if let taken { return (taken, longest) }
            usleep(1_000)
        }
        return (nil, longest)
    }

    @Test func aCloseThatHangsDoesNotHoldBackTheFreshStream() {
        let device = Device(closesHang: true)
        let reopener = device.reopener()
        defer {
            reopener.shutDown()
            for _ in 0..<4 { device.closeGate.signal() }
        }
        #expect(retireWhenFree(reopener, FakeStream(number: 100)))
        let (fresh, _) = takeWhenReady(reopener)
        #expect(fresh == FakeStream(number: 1))
        // The dead stream's close began and has not returned, and did not need to.
        #expect(eventually { device.snapshot.closeStarted == [100] })
        #expect(device.snapshot.closeFinished.isEmpty)
        // A second stall while the first close still hangs is replaced all the same.
        #expect(retireWhenFree(reopener, fresh ?? FakeStream(number: 0)))
        #expect(takeWhenReady(reopener).stream == FakeStream(number: 2))
        #expect(eventually { device.snapshot.closeStarted.sorted() == [1, 100] })
    }

    @Test func theRenderThreadsCallsReturnWhileAnOpenHangs() {
        let device = Device(opensHang: true)
        let reopener = device.reopener()
        defer { reopener.shutDown() }
        #expect(retireWhenFree(reopener, FakeStream(number: 100)))
        #expect(eventually { device.snapshot.openAttempts.count == 1 })
        // The open hangs: the render thread's look for the new stream finds none, at once.
        for _ in 0..<50 {
            let before = HostTime.now()
            #expect(reopener.takeReady() == nil)
            #expect(HostTime.now() - before < .milliseconds(100), "a render thread's call waited")
        }
        device.openGate.signal()
        #expect(takeWhenReady(reopener).stream == FakeStream(number: 1))
        #expect(eventually { device.snapshot.closeFinished == [100] })
    }

    @Test func aFailedOpenIsTriedAgainAfterTheRetryInterval() {
        let device = Device(failures: 3)
        let interval = Duration.milliseconds(20)
        let reopener = device.reopener(retryInterval: interval)
        defer { reopener.shutDown() }
        #expect(retireWhenFree(reopener, FakeStream(number: 100)))
        #expect(takeWhenReady(reopener).stream == FakeStream(number: 1))
        #expect(reopener.failedOpens == 3)
        let attempts = device.snapshot.openAttempts
        #expect(attempts.count == 4)
        // Never sooner than the interval: a device that refuses is not hammered.
        for (earlier, later) in zip(attempts, attempts.dropFirst()) {
            #expect(later - earlier >= interval)
        }
    }

    @Test func shuttingDownWhileAnOpenHangsReturnsAndClosesTheLateStream() {
        let device = Device(opensHang: true)
        let reopener = device.reopener()
        #expect(retireWhenFree(reopener, FakeStream(number: 100)))
        #expect(eventually { device.snapshot.openAttempts.count == 1 })
        let before = HostTime.now()
        reopener.shutDown(closing: FakeStream(number: 200))
        #expect(HostTime.now() - before < .milliseconds(500), "shutting down waited for the open")
        // The open comes back after the shutdown: that stream is closed, never handed out.
        device.openGate.signal()
        #expect(eventually { device.snapshot.closeFinished.sorted() == [1, 100, 200] })
        #expect(reopener.takeReady() == nil)
        #expect(!reopener.retire(FakeStream(number: 300)), "a shut-down reopener takes no stream")
    }

    @Test func aReadyStreamNobodyTookIsClosedAtShutdown() {
        let device = Device()
        let reopener = device.reopener()
        #expect(retireWhenFree(reopener, FakeStream(number: 100)))
        #expect(eventually { reopener.openedStreams == 1 })
        reopener.shutDown()
        #expect(eventually { device.snapshot.closeFinished.sorted() == [1, 100] })
    }
}
