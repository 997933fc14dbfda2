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
    /// How the items the node plays sound at speeds other than 1 (each item's
    /// `audioTimePitchAlgorithm`). Each room's own choice: rooms that choose alike sound alike.
    public var pitchAlgorithm: AVAudioTimePitchAlgorithm

    /// The output a node plays on unless told otherwise: the machine's default sound device.
    public static let defaultOutput = OutputSpec.alsa(device: "default")

    public init(group: String = "chorus", authenticator: MessageAuthenticator? = nil, output: OutputSpec = NodeConfiguration.defaultOutput,
                capturePath: String? = nil, clock: NodeClock = NodeClock(), pitchAlgorithm: AVAudioTimePitchAlgorithm = .timeDomain) {
        self.group = group
        self.authenticator = authenticator
        self.output = output
        self.capturePath = capturePath
        self.clock = clock
        self.pitchAlgorithm = pitchAlgorithm
    }

    /// The capture, when asked for.
    func makeCapture() throws(SessionError) -> RenderCapture? {
        guard let capturePath else { return nil }
        do { return try RenderCapture(path: capturePath) } catch { throw SessionError(error.description) }
    }

    /// A player for this node, timed on its clock and recording to its capture.
    /// A queue player, so that an item can follow the one before it without a gap.
    func makePlayer() throws(SessionError) -> AVQueuePlayer {
        let player = AVQueuePlayer(playerItem: nil, output: output, hostClock: clock.cmClock,
                                   hostMapping: clock.mapping, capture: try makeCapture())
        player.automaticallyWaitsToMinimizeStalling = false
        return player
    }
}

/// A node's host clock and the mapping from the machine's real clock onto it: the machine's
/// own, or, for tests and benchmarks that run several nodes on one machine as if on several,
/// a simulated one (the package's `ChorusSimulation`).
public struct NodeClock: Sendable {
    let clock: any HostClock
    let cmClock: CMClock
    private let map: @Sendable (HostTime) -> HostTime
    /// How the clock maps the machine's; nil for the machine's own.
    public let mappingDescription: String?

    /// The machine's own clock.
    public init() {
        self.init(clock: MonotonicHostClock(), mapping: { $0 }, description: nil)
    }

    /// A clock that reads `clock`, onto which `mapping` carries a real CLOCK_MONOTONIC time
    /// (as devices and sockets report), described as `description` in a node's log so that
    /// a measurement can compare what the node believes with the truth.
    package init(clock: any HostClock, mapping: @escaping @Sendable (HostTime) -> HostTime, description: String?) {
        self.clock = clock
        cmClock = CMClock(hostClock: clock)
        map = mapping
        mappingDescription = description
    }

    /// Whether this is another clock than the machine's.
    public var isSimulated: Bool { mappingDescription != nil }

    /// Now, on this node's clock.
    public func now() -> HostTime { clock.now() }

    /// A real CLOCK_MONOTONIC time (as devices and sockets report) on this node's clock.
    var mapping: @Sendable (HostTime) -> HostTime { map }
}
