import Foundation
import Testing
import ChorusTestSupport

/// The walkthrough's simple player (`Examples/SimplePlayer`), run as a user runs it.
@Suite(.ownThread) struct ExamplePlayerTests {
    @Test("the simple player loads, plays to the end and reports through observers, its time labels on the main thread")
    func playsToTheEnd() throws {
        let file = try TestMedia.tone(.wav, seconds: 1.5, rate: 48_000)
        let result = try Run.command(TestEnvironment.examplePlayerExecutable.path, [file.path, "--output", "null"], timeout: 30)
        #expect(result.status == 0, "\(result.standardError)")
        let lines = result.output.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("status readyToPlay") })
        #expect(lines.contains("duration 1.50 s"))
        #expect(lines.contains("rate 1.0"))
        let labels = lines.filter { $0.hasPrefix("time ") }
        #expect(!labels.isEmpty)
        #expect(labels.allSatisfy { $0.hasSuffix("(main thread: true)") }, "\(labels)")
        #expect(lines.last == "ended")
    }

    @Test("a missing file is a clear error, not a hang")
    func missingFile() throws {
        let result = try Run.command(TestEnvironment.examplePlayerExecutable.path, ["/nonexistent/none.wav", "--output", "null"],
                                     timeout: 30)
        #expect(result.status == 1)
        #expect(result.output.contains("can't use this asset"))
    }
}
