// Runs the guide's sections one after another, each against real media, and says what
// each did. The sections themselves are in the other files of this folder, written as the
// guide writes them; this file is only the harness that feeds them media and checks them.

import AVPlayback
import Foundation

/// One section's outcome, reported once.
final class Outcome: @unchecked Sendable {
    // Safe: the lock guards the one mutable field.
    private let lock = NSLock()
    private var result: String??
    private let done = DispatchSemaphore(value: 0)

    /// The section did what the guide says.
    func pass() { finish(nil) }
    /// The section did not; `reason` says how.
    func fail(_ reason: String) { finish(reason) }

    private func finish(_ reason: String?) {
        let first = lock.withLock { () -> Bool in
            guard result == nil else { return false }
            result = .some(reason)
            return true
        }
        if first { done.signal() }
    }

    /// Waits for the outcome: nil when passed, the reason otherwise.
    func wait(seconds: Double) -> String? {
        if done.wait(timeout: .now() + seconds) == .timedOut { return "no outcome within \(Int(seconds)) s" }
        return lock.withLock { result ?? nil }
    }
}

/// The media the sections play.
struct GuideMedia: Sendable {
    /// A file of sound at least six seconds long (the guide seeks five seconds in).
    var audio: URL
    /// A file with pictures, for "Putting It All Together".
    var video: URL?
    /// An HLS playlist or other stream URL, for the stream sections.
    var stream: URL?
    /// A URL that cannot be played, for the failure routes.
    var bad: URL
}

/// Prints a line at once, whichever thread calls.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Runs `sections` in order on the calling thread (not the main one, which serves the main
/// queue), each given `timeout` seconds, and returns how many failed.
func run(_ sections: [(name: String, timeout: Double, start: @Sendable (Outcome) -> Void)]) -> Int {
    var failures = 0
    for section in sections {
        let outcome = Outcome()
        DispatchQueue.main.async { section.start(outcome) }
        if let reason = outcome.wait(seconds: section.timeout) {
            say("FAIL \(section.name): \(reason)")
            failures += 1
        } else {
            say("ok   \(section.name)")
        }
    }
    return failures
}
