import Foundation

/// Polls `condition` until it holds or `seconds` pass; returns whether it held, holding its
/// thread meanwhile: for code that cannot suspend (a test's own thread, a callback). Tests
/// await `waitUntil` instead.
@discardableResult
public func waitUntilBlocking(_ seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(2_000)
    }
    return condition()
}

/// How often the asynchronous `waitUntil` looks again (ms).
private let pollMilliseconds = 2

/// Polls `condition` until it holds or `seconds` pass; returns whether it held. For waiting on
/// what another thread does, never for asserting how long it took. It suspends between looks,
/// so a waiting test leaves its thread to the others (Swift's pool has one per core).
@discardableResult
public func waitUntil(_ seconds: Double = 10, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(pollMilliseconds))
    }
    return condition()
}
