import AVPlayback
import Foundation
import GroupSync
import MediaPipeline

/// Why a session could not start: a socket that cannot be bound, a file that cannot be
/// written, a group setting out of range. Its description names the cause.
public struct SessionError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// What every group node (leader or follower) is set up with.
public struct NodeConfiguration: Sendable {
    /// The group's name; nodes of other groups are ignored.
    public var group: String
    /// Signs and checks every message with the group's key; nil for an open group.
    public var authenticator: MessageAuthenticator?
    /// Where the node's own sound goes.
    public var output: OutputSpec
    /// Where every rendered period's presentation time is recorded, if anywhere.
    public var capturePath: String?
    /// The node's host clock.
    public var clock: NodeClock

    /// The output a node plays on unless told otherwise: the machine's default sound device.
    public static let defaultOutput = OutputSpec.alsa(device: "default")

    public init(group: String = "chorus", authenticator: MessageAuthenticator? = nil, output: OutputSpec = NodeConfiguration.defaultOutput,
                capturePath: String? = nil, clock: NodeClock = NodeClock()) {
        self.group = group
        self.authenticator = authenticator
        self.output = output
        self.capturePath = capturePath
        self.clock = clock
    }

    /// The capture, when asked for.
    func makeCapture() throws(SessionError) -> RenderCapture? {
        guard let capturePath else { return nil }
        do { return try RenderCapture(path: capturePath) } catch { throw SessionError(error.description) }
    }

    /// A player for this node, timed on its clock and recording to its capture.
    func makePlayer() throws(SessionError) -> AVPlayer {
        let player = AVPlayer(playerItem: nil, output: output, hostClock: clock.cmClock,
                              hostMapping: clock.mapping, capture: try makeCapture())
        player.automaticallyWaitsToMinimizeStalling = false
        return player
    }
}

/// A node's host clock and the mapping from the machine's real clock onto it: the machine's
/// own, or, for running several nodes on one machine as if on several, one that runs
/// `offset` seconds off and `skewPPM` fast or slow, as another machine's would.
public struct NodeClock: Sendable {
    let clock: SkewedHostClock
    let cmClock: CMClock

    /// The machine's own clock.
    public init() { self.init(offset: 0, skewPPM: 0) }

    /// A clock `offset` seconds off the machine's and `skewPPM` fast (negative: slow).
    public init(offset: Double, skewPPM: Int64) {
        let real = MonotonicHostClock()
        clock = SkewedHostClock(wrapping: real, offset: .nanoseconds(Int64((offset * 1e9).rounded())),
                                skewPPM: skewPPM, base: real.now())
        cmClock = CMClock(hostClock: clock)
    }

    /// Whether this is another clock than the machine's.
    public var isSimulated: Bool { clock.offset != .zero || clock.skewPPM != 0 }

    /// How the clock maps the machine's, so that a measurement can compare what the node
    /// believes with the truth.
    public var mappingDescription: String {
        "offset \(clock.offset.nanosecondsClamped) ns, skew \(clock.skewPPM) ppm, pivot \(clock.base.nanoseconds) ns of CLOCK_MONOTONIC"
    }

    /// Now, on this node's clock.
    public func now() -> HostTime { clock.now() }

    /// A real CLOCK_MONOTONIC time (as devices and sockets report) on this node's clock.
    var mapping: @Sendable (HostTime) -> HostTime {
        let clock = self.clock
        return { clock.map($0) }
    }
}
