import ArgumentParser
import AVPlayback
import Foundation
import GroupSync

/// Options every group node (leader or follower) takes.
struct NodeOptions: ParsableArguments {
    @Option(name: .long, help: "The group's name; nodes of other groups are ignored.")
    var group = "chorus"

    @Option(name: .long, help: "A file holding the group's shared key (at least 16 bytes, raw or hex). Every message is then signed and checked.")
    var keyFile: String?

    @Option(name: .long, help: "alsa[:DEVICE] (default alsa:default), null[:drift=PPM], or wav:PATH.")
    var output = "alsa:default"

    @Option(name: .long, help: "Record every rendered period's presentation time to this file (for measurements).")
    var capture: String?

    @Option(name: .long, help: .hidden)
    var clockOffset: Double = 0

    @Option(name: .long, help: .hidden)
    var clockSkew: Int64 = 0

    func validate() throws {
        guard clockOffset.isFinite, abs(clockOffset) < 1e6 else { throw ValidationError("--clock-offset must be a number of seconds") }
        guard clockSkew.magnitude <= 10_000 else { throw ValidationError("--clock-skew must be within ±10000 ppm") }
    }

    /// The output, parsed.
    func outputSpec() throws -> OutputSpec {
        do { return try OutputSpec(parsing: output) } catch { throw ValidationError(error.description) }
    }

    /// The authenticator for `--key-file`, or nil (and a loud warning) without one.
    func authenticator() throws -> MessageAuthenticator? {
        guard let keyFile else {
            log.warning("WARNING: no --key-file: group messages are not authenticated; anyone on the network can control or disturb this group")
            return nil
        }
        do {
            return MessageAuthenticator(key: try KeyFile.load(path: keyFile))
        } catch {
            throw ValidationError("\(error)")
        }
    }

    /// This node's host clock: the machine's own, or (for testing on one machine) one
    /// that runs `--clock-offset` seconds off and `--clock-skew` ppm fast or slow, as
    /// another machine's would.
    func nodeClock() -> NodeClock {
        NodeClock(offset: clockOffset, skewPPM: clockSkew)
    }

    /// The capture, when asked for.
    func makeCapture() throws -> RenderCapture? {
        guard let capture else { return nil }
        do { return try RenderCapture(path: capture) } catch { throw ValidationError(error.description) }
    }
}

/// A node's host clock and the mapping from the machine's real clock onto it.
struct NodeClock: Sendable {
    let clock: SkewedHostClock
    let cmClock: CMClock

    init(offset: Double, skewPPM: Int64) {
        let real = MonotonicHostClock()
        clock = SkewedHostClock(wrapping: real, offset: .nanoseconds(Int64((offset * 1e9).rounded())),
                                skewPPM: skewPPM, base: real.now())
        cmClock = CMClock(hostClock: clock)
    }

    /// Says on standard error how a simulated clock maps the machine's, so that a
    /// measurement can compare what this node believes with the truth; silent on the
    /// machine's own clock.
    func announce() {
        guard clock.offset != .zero || clock.skewPPM != 0 else { return }
        log.notice("simulated clock: offset \(clock.offset.nanosecondsClamped) ns, skew \(clock.skewPPM) ppm, pivot \(clock.base.nanoseconds) ns of CLOCK_MONOTONIC")
    }

    /// Now, on this node's clock.
    func now() -> HostTime { clock.now() }

    /// A real CLOCK_MONOTONIC time (as devices and sockets report) on this node's clock.
    var mapping: @Sendable (HostTime) -> HostTime {
        let clock = self.clock
        return { clock.map($0) }
    }
}
