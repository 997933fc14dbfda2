import CThreadSanitizer
import Testing

/// Checks that hold a run to real time: two rooms within a millisecond of each other, a
/// sound that follows on within a tenth of a millisecond, a room that is playing before an
/// item ends. `make test` holds them. Under the thread sanitizer, which makes every thread
/// several times slower, missing them says nothing about the code, only about the
/// sanitizer's slowness; what that run is for, a race, is reported whether or not they hold.
public enum RealTimeChecks {
    /// Whether this process runs under the thread sanitizer.
    public static let stretched = chorus_tsan_active() != 0

    /// Runs `body`'s checks; under the sanitizer, what they record is an intermittent known
    /// issue (the code still runs there, and the sanitizer still watches it). Elsewhere an
    /// error `body` throws is thrown on.
    public static func hold(_ comment: Comment = "real time, which the thread sanitizer stretches",
                            sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) rethrows {
        try withKnownIssue(comment, isIntermittent: true, sourceLocation: sourceLocation, body, when: { stretched })
    }
}
