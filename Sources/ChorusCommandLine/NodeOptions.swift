import ArgumentParser
import AVPlayback
import Foundation
import ChorusSession
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

    @OptionGroup var pitch: PitchOption

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

    /// This node's host clock: the machine's own, or the one the program running the
    /// command line gave (`ChorusCommandLine.main(nodeClock:)`: a simulated clock, for tests
    /// and benchmarks that run several nodes on one machine). A simulated clock is announced
    /// on standard error, so that a measurement can compare what the node believes with the
    /// truth.
    func nodeClock() -> NodeClock {
        let clock = ChorusCommandLine.makeNodeClock()
        if let description = clock.mappingDescription { log.notice("simulated clock: \(description)") }
        return clock
    }

    /// Everything a session of this node needs from these options.
    func configuration() throws -> NodeConfiguration {
        NodeConfiguration(group: group, authenticator: try authenticator(), output: try outputSpec(),
                          capturePath: capture, clock: nodeClock(), pitchAlgorithm: pitch.algorithm)
    }
}
