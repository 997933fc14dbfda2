import Testing
import ChorusTestSupport
import GroupSync
import MediaClock

/// What a node says in its log about datagrams it dropped.
@Suite(.ownThread) struct DropReportTests {
    static let member = UDPEndpoint(parsing: "10.0.0.5:7701")!
    static let stranger = UDPEndpoint(parsing: "10.0.0.9:40000")!

    static func counts(forged: Int = 0, replayed: Int = 0, wrongGroup: Int = 0, malformed: Int = 0) -> DropCounters {
        var counts = DropCounters()
        counts.forged = forged
        counts.replayed = replayed
        counts.wrongGroup = wrongGroup
        counts.malformed = malformed
        return counts
    }

    @Test func aWrongKeyAndAnotherGroupAreSaidPerSender() {
        var report = DropReport()
        report.note(from: Self.member, dropped: Self.counts(forged: 1))
        report.note(from: Self.member, dropped: Self.counts(forged: 1))
        report.note(from: Self.stranger, dropped: Self.counts(wrongGroup: 1))
        #expect(!report.isEmpty)
        let lines = report.take()
        #expect(lines.count == 2)
        #expect(lines[0].contains("2 datagrams that failed authentication") && lines[0].contains("10.0.0.5:7701"), "\(lines)")
        #expect(lines[1].contains("1 datagram for another group") && lines[1].contains("10.0.0.9:40000"), "\(lines)")
        // Said once: the next report starts afresh.
        #expect(report.isEmpty)
        #expect(report.take().isEmpty)
    }

    /// The first drops are said at once, later ones at most every `interval`, and what is
    /// left when the node stops.
    @Test func reportsComeAtOnceThenAtMostEveryInterval() {
        var report = DropReport()
        let start = HostTime(nanoseconds: 1_000_000_000)
        report.note(from: Self.member, dropped: Self.counts(forged: 1))
        #expect(report.due(now: start).count == 1)
        report.note(from: Self.member, dropped: Self.counts(forged: 1))
        #expect(report.due(now: start + .seconds(1)).isEmpty)
        #expect(report.due(now: start + DropReport.interval).count == 1)
        report.note(from: Self.member, dropped: Self.counts(forged: 1))
        #expect(report.due(now: start + DropReport.interval + .seconds(1)).isEmpty)
        #expect(report.due(now: start + DropReport.interval + .seconds(1), finally: true).count == 1)
    }

    @Test func replaysAreCountedButNotReported() {
        var report = DropReport()
        report.note(from: Self.member, dropped: Self.counts(replayed: 5))
        #expect(report.isEmpty)
    }

    @Test func aFloodFromManySendersStaysBounded() {
        var report = DropReport()
        for port in 0..<1_000 {
            report.note(from: UDPEndpoint(parsing: "10.0.1.1:\(20_000 + port)")!, dropped: Self.counts(malformed: 1))
        }
        let lines = report.take()
        #expect(lines.count == DropReport.maximumSenders + 1)
        #expect(lines.last?.contains("992 datagrams that were malformed from other senders") == true, "\(lines.last ?? "")")
    }

    @Test func theBreakdownNamesEachReason() {
        #expect(Self.counts().breakdown == "none")
        #expect(Self.counts(forged: 3, replayed: 5).breakdown == "forged 3, replayed 5")
    }
}
