import Foundation
import GroupSync
import MediaClock
import MutexAnnotations
import Synchronization

/// `--clock-log`: every clock exchange a follower completes and the estimate it gave, one
/// CSV row each, for measuring the estimator on a real path (`chorus-bench sync` compares
/// the estimates with the truth it knows from the nodes' simulated clocks).
///
/// Columns: the exchange's four timestamps (t1 and t4 on this node's clock, t2 and t3 on
/// the leader's, ns); the estimate's leader time at t4 (ns); its published offset
/// deviation (ns); its rate and rate deviation (ppm); the floor spread it learned (ns).
/// Written on the follower's control queue, buffered, never from the audio thread; closed
/// by the thread that ends the node, after which rows still arriving are dropped.
final class ClockLog: Sendable {
    static let header = "t1,t2,t3,t4,estimate_at_t4,uncertainty,rate_ppm,rate_uncertainty_ppm,floor_spread\n"
    /// The open file; nil once closed. A datagram queued before the socket closed can still
    /// bring a row while the node closes the log.
    private let file: Mutex<UnsafeMutablePointer<FILE>?>

    init(path: String) throws {
        guard let file = fopen(path, "w") else { throw ClockLogError(path: path, reason: String(cString: strerror(errno))) }
        fputs(Self.header, file)
        self.file = Mutex(file)
    }

    func write(_ sample: ClockSample, _ estimate: ClockEstimate) {
        let line = [String(sample.t1.nanoseconds), String(sample.t2.nanoseconds), String(sample.t3.nanoseconds),
                    String(sample.t4.nanoseconds), String(estimate.leaderTime(atHost: sample.t4).nanoseconds),
                    String(estimate.uncertainty.nanosecondsClamped), String(estimate.ratePPM),
                    String(estimate.rateUncertaintyPPM), String(estimate.floorSpread.nanosecondsClamped)]
            .joined(separator: ",")
        file.withLockAnnotated { file in
            if let file { fputs(line + "\n", file) }
        }
    }

    func close() {
        file.withLockAnnotated { file in
            if let open = file { fclose(open) }
            file = nil
        }
    }
}

/// A clock log that could not be created, with the system's reason.
struct ClockLogError: Error, CustomStringConvertible {
    var path: String
    var reason: String
    var description: String { "\(path): \(reason)" }
}
