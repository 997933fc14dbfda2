import ArgumentParser
import AVPlayback
import Foundation
import ChorusSession
import GroupSync

/// `chorus follow ADDR:PORT`: joins a group and plays in step with its leader.
struct Follow: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Join a group and play in step with its leader until interrupted.")

    @Argument(help: "The leader's ADDR:PORT.")
    var leader: String

    @Option(name: .long, help: "Extra delay of this room's sound path after the output device, in milliseconds; played that much earlier.")
    var latencyOffset: Double = 0

    @Option(name: .long, help: "This follower's name, as the leader logs it.")
    var name: String = ProcessInfo.processInfo.hostName

    @Option(name: .long, help: "Linear volume from 0 to 1.")
    var volume: Float = 1

    @Flag(name: .long, help: "Print a line a second: clock offset, rate, round trip, output error, corrections.")
    var stats = false

    @Option(name: .long, help: "Record every clock exchange and the estimate it gave to this file (CSV, for measurements).")
    var clockLog: String?

    @OptionGroup var node: NodeOptions

    @OptionGroup var videoOptions: VideoOptions

    @OptionGroup var logging: LogOptions

    func validate() throws {
        guard UDPEndpoint(parsing: leader) != nil else { throw ValidationError("the leader must be ADDR:PORT") }
        guard latencyOffset.isFinite, abs(latencyOffset) <= 2_000 else { throw ValidationError("--latency-offset must be within ±2000 ms") }
        guard volume >= 0, volume <= 1 else { throw ValidationError("--volume must be between 0 and 1") }
    }

    func run() throws {
        logging.apply()
        guard let endpoint = UDPEndpoint(parsing: leader) else { throw ValidationError("the leader must be ADDR:PORT") }
        let session: FollowerSession
        do {
            session = try FollowerSession(configuration: try node.configuration(), leader: endpoint, name: name,
                                          latencyOffset: .nanoseconds(Int64(latencyOffset * 1e6)), volume: volume,
                                          statisticsInterval: stats ? .seconds(1) : nil, clockLogPath: clockLog)
        } catch let error as SessionError {
            throw ValidationError(error.description)
        }
        let screen = Screen(session: session, options: videoOptions, defaultMode: .none, title: name)
        try screen.start()
        let shell = SessionShell(session: session, interactive: false, screen: screen)
        shell.start()
        session.run()
        shell.finish()
    }
}
