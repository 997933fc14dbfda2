import Testing
import ChorusTestSupport
import MediaClock
@testable import MediaPipeline

/// Which of a sound server's timing points are believed, and when the stream is seen to
/// have moved.
@Suite(.ownThread)
struct JumpConfirmationTests {
    static let rate = 48_000
    static let origin = HostTime(nanoseconds: 5_000_000_000)

    /// A point `seconds` after the origin on a stream that has had `written` frames written
    /// and keeps 100 ms queued, moved `late` later (a server that played that much silence).
    func point(at seconds: Double, late: Duration = .zero) -> PulseLatencyProbe.Point {
        let host = Self.origin + .nanoseconds(Int64(seconds * 1e9))
        let written = Int64(seconds * Double(Self.rate)) + 4_800
        let queued = 4_800 + Double(late.nanosecondsClamped) * Double(Self.rate) / 1e9
        return PulseLatencyProbe.Point(frames: written, host: host, queuedFrames: queued, answeredAt: host)
    }

    @Test func pointsThatAgreeAreBelieved() {
        var confirmation = JumpConfirmation(sampleRate: Self.rate)
        for step in 0..<20 {
            #expect(confirmation.admit(point(at: Double(step) * 0.025)) == .publish)
        }
    }

    @Test func aLoneJumpIsHeldAndForgotten() {
        // One answer that overtook a write: 10 ms early, once.
        var confirmation = JumpConfirmation(sampleRate: Self.rate)
        #expect(confirmation.admit(point(at: 0)) == .publish)
        #expect(confirmation.admit(point(at: 0.025, late: .milliseconds(-10))) == .hold)
        #expect(confirmation.admit(point(at: 0.050)) == .publish)
        #expect(confirmation.admit(point(at: 0.075)) == .publish)
    }

    @Test func aJumpConfirmedByTheNextPointIsAMove() {
        // The server ran dry for a write: from then on everything plays 10 ms later.
        var confirmation = JumpConfirmation(sampleRate: Self.rate)
        #expect(confirmation.admit(point(at: 0)) == .publish)
        #expect(confirmation.admit(point(at: 0.025)) == .publish)
        #expect(confirmation.admit(point(at: 0.050, late: .milliseconds(10))) == .hold)
        #expect(confirmation.admit(point(at: 0.075, late: .milliseconds(10))) == .publishMoved)
        #expect(confirmation.admit(point(at: 0.100, late: .milliseconds(10))) == .publish)
    }

    @Test func smallDisagreementsAreNoise() {
        // Within the limit: a sound server's report scatter and a sink's drift.
        var confirmation = JumpConfirmation(sampleRate: Self.rate)
        #expect(confirmation.admit(point(at: 0)) == .publish)
        #expect(confirmation.admit(point(at: 0.025, late: .microseconds(900))) == .publish)
        #expect(confirmation.admit(point(at: 0.050, late: .microseconds(-500))) == .publish)
    }

    @Test func aNewStreamIsNoMove() {
        // After a flush the new stream's timeline has nothing to do with the old one's.
        var confirmation = JumpConfirmation(sampleRate: Self.rate)
        #expect(confirmation.admit(point(at: 0)) == .publish)
        confirmation.reset()
        #expect(confirmation.admit(point(at: 0.025, late: .milliseconds(40))) == .publish)
    }
}
