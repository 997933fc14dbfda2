import Foundation

/// Polls `condition` until it holds or `seconds` pass; returns whether it held. For waiting on
/// what another thread does, never for asserting how long it took.
@discardableResult
public func waitUntil(_ seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(2_000)
    }
    return condition()
}
