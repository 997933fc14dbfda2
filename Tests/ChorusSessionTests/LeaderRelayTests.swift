@testable import ChorusSession
import ChorusTestSupport
import Foundation
import GroupSync
import MutexAnnotations
import Synchronization
import Testing

/// The live streams a leader relays to its group, kept apart from every other leader's.
@Suite(.ownThread) struct LeaderRelayTests {
    /// Two leaders in one process (a program leading two groups, or a test run) each relay a
    /// station into a folder of its own: one stopping removes its own relay's files and
    /// leaves the other's playing. (With one folder per process, the first to stop took the
    /// other's segments with it, and its rooms could not play.)
    @Test func aLeaderStoppingLeavesAnotherLeadersRelayAlone() throws {
        let station = try StationServer(broadcasting: try TestMedia.station(seconds: 30), seconds: 30, titles: [(0, "Chorus")])
        defer { station.stop() }
        let loopback = try #require(UDPEndpoint(parsing: "127.0.0.1:0"))
        func leader() throws -> LeaderNode {
            try LeaderNode(configuration: NodeConfiguration(output: .null(driftPPM: 0)), listen: loopback, httpPort: 0,
                           reportMembership: false) { _, _ in }
        }
        let first = try leader(), second = try leader()
        var firstStopped = false
        defer {
            if !firstStopped { first.stop() }
            second.stop()
        }
        // Both relays gather their first seconds of the station at once (each waits for the
        // station's pace).
        let leaders = [first, second]
        let relayed = Mutex<[Int: URL]>([:])
        DispatchQueue.concurrentPerform(iterations: leaders.count) { index in
            let playlist = leaders[index].playable(station.url, index: 0)
            relayed.withLockAnnotated { $0[index] = playlist }
        }
        let firstRelay = try #require(relayed.withLockAnnotated { $0[0] })
        let secondRelay = try #require(relayed.withLockAnnotated { $0[1] })
        #expect(firstRelay.isFileURL && secondRelay.isFileURL, "relayed: \(firstRelay), \(secondRelay)")
        #expect(firstRelay.deletingLastPathComponent() != secondRelay.deletingLastPathComponent())
        first.stop()
        firstStopped = true
        #expect(!FileManager.default.fileExists(atPath: firstRelay.path))
        #expect(FileManager.default.fileExists(atPath: secondRelay.path))
    }
}
