import Foundation
import Testing

/// Runs each test case on a thread of its own rather than on Swift's cooperative pool.
///
/// Many tests play real media and poll, refresh a picture or sleep in real time, as an
/// application's display or control thread would. On the pool (one thread per core) a test
/// that blocks holds a thread every other test's continuations wait for: a wait of 10 ms in
/// one test became seconds in another, and a suite that started first finished last. On a
/// thread of its own a test can block without starving anyone, and what it awaits resumes on
/// its thread at once. How many run together is the test run's parallelisation width
/// (`make test` sets it).
public struct OwnThreadTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        // A suite's scope holds no test body: only a test case's gets the thread.
        guard testCase != nil, !test.isSuite else {
            try await function()
            return
        }
        let executor = ThreadExecutor()
        defer { executor.finish() }
        let started = TestTimes.start()
        defer {
            TestTimes.record(test, testCase: testCase, started: started, seconds: Date().timeIntervalSince(started),
                             threadCPUSeconds: executor.cpuSeconds)
        }
        try await withTaskExecutorPreference(executor) {
            try await function()
        }
    }
}

/// Each test case's own running time (from when it got its thread, not from when it was
/// queued, which is what the test run's report counts from), appended to the file
/// `CHORUS_TEST_TIMES` names, a line each: seconds, a tab, when it started (seconds since the
/// first test case on a thread of its own started), a tab, the test's identifier, a tab, the
/// CPU seconds its own thread used (work done there, such as stepping a simulation, rather
/// than waiting on real time). For finding
/// where a test run's time goes, and which tests run alone at its end (docs/test-time.md);
/// nothing is written without it.
enum TestTimes {
    private static let path = ProcessInfo.processInfo.environment["CHORUS_TEST_TIMES"].flatMap { $0.isEmpty ? nil : $0 }
    private static let lock = NSLock()
    /// When the first case started: the origin of every start.
    private static let origin = Date()

    /// Now, for a case starting (the first one sets the origin).
    static func start() -> Date {
        _ = origin
        return Date()
    }

    static func record(_ test: Test, testCase: Test.Case?, started: Date, seconds: Double, threadCPUSeconds: Double) {
        guard let path else { return }
        let line = String(format: "%.3f\t%.3f", seconds, started.timeIntervalSince(origin)) + "\t\(test.id)"
            + String(format: "\t%.3f\n", threadCPUSeconds)
        lock.withLock {
            guard let handle = FileHandle(forWritingAtPath: path) ?? {
                _ = FileManager.default.createFile(atPath: path, contents: nil)
                return FileHandle(forWritingAtPath: path)
            }() else { return }
            defer { try? handle.close() }
            _ = try? handle.seekToEnd()
            try? handle.write(contentsOf: Data(line.utf8))
        }
    }
}

extension Trait where Self == OwnThreadTrait {
    /// Each test case runs on a thread of its own (`OwnThreadTrait`).
    public static var ownThread: Self { OwnThreadTrait() }
}

/// A task executor with one thread, which runs the jobs given it in order and ends once
/// `finish` is called and the jobs are done.
// @unchecked: `jobs`, `finished` and `ended` are only touched with `condition` locked; the thread is
// set once, before any job can be enqueued.
final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var finished = false
    /// The thread has returned: a job given now (a task that outlived its test) goes to the pool.
    private var ended = false
    /// The thread, once it runs (set before its first job).
    private var thread: pthread_t?

    init() {
        Thread { [self] in run() }.start()
    }

    func enqueue(_ job: UnownedJob) {
        let taken = condition.withLock {
            guard !ended else { return false }
            jobs.append(job)
            condition.signal()
            return true
        }
        if !taken { globalConcurrentExecutor.enqueue(job) }
    }

    /// No more jobs will be given: the thread ends once it has run those it holds.
    func finish() {
        condition.withLock {
            finished = true
            condition.signal()
        }
    }

    /// CPU seconds the thread has used so far (0 before it starts or after it ends).
    var cpuSeconds: Double {
        condition.withLock {
            guard let thread, !ended else { return 0 }
            var clock = clockid_t()
            var now = timespec()
            guard pthread_getcpuclockid(thread, &clock) == 0, clock_gettime(clock, &now) == 0 else { return 0 }
            return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
        }
    }

    private func run() {
        condition.withLock { thread = pthread_self() }
        while true {
            let next: UnownedJob? = condition.withLock {
                while jobs.isEmpty && !finished { condition.wait() }
                if jobs.isEmpty { ended = true }
                return jobs.isEmpty ? nil : jobs.removeFirst()
            }
            guard let next else { return }
            next.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
