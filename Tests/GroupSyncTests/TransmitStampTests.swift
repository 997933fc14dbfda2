import Testing
import ChorusTestSupport
import GroupSync
import MediaClock

/// When a clock exchange's stamps are taken: t1 when the request really left (the kernel's
/// transmit stamp) and t3 just before the reply is sent, so that neither side's work on a
/// message counts as path delay.
@Suite("Transmit stamps", .ownThread)
struct TransmitStampTests {
    static var key: GroupKey { GroupKey(bytes: Array(repeating: UInt8(3), count: 32)) }

    /// One exchange between fresh cores, keyed: the follower's request is read at `start`
    /// and, when `stampAfter` is given, reported as having left that much later; the leader
    /// receives it 50 µs after `start`, decides at 60 µs and is restamped at 80 µs; the
    /// reply arrives at 130 µs. Returns the sample the follower took.
    static func exchange(stampAfter: Duration?) throws -> ClockSample? {
        let authenticator = MessageAuthenticator(key: key)
        var leader = try LeaderCore(group: "house", baseURL: "http://10.0.0.1:8080/", authenticator: authenticator, senderID: 111)
        var follower = try FollowerCore(group: "house", leader: SimulatedSession.leaderEndpoint, followerName: "kitchen",
                                        authenticator: authenticator, senderID: 222)
        let start = HostTime(nanoseconds: 10_000_000_000)
        let sent = follower.handle(.start, at: start)
        guard let request = sent.compactMap({ action -> (OutgoingDatagram, UInt32)? in
            guard case let .send(datagram) = action, case let .clockRequest(body) = datagram.message.payload else { return nil }
            return (datagram, body.requestID)
        }).first else { return nil }
        if let stampAfter { _ = follower.handle(.transmitted(requestID: request.1, at: start + stampAfter), at: start + stampAfter) }
        let replies = leader.handle(.received(request.0.bytes, from: SimulatedSession.followerEndpoint,
                                              receivedAt: start + .microseconds(50)), at: start + .microseconds(60))
        for case let .send(datagram) in replies {
            guard case .clockReply = datagram.message.payload else { continue }
            let restamped = leader.restamped(datagram, t3: start + .microseconds(80))
            _ = follower.handle(.received(restamped.bytes, from: SimulatedSession.leaderEndpoint,
                                          receivedAt: start + .microseconds(130)), at: start + .microseconds(131))
        }
        return follower.lastSample
    }

    @Test func aTransmitStampBecomesT1AndTheRestampedReplyCarriesTheLaterT3() throws {
        let sample = try #require(try Self.exchange(stampAfter: .microseconds(7)))
        let start: Int64 = 10_000_000_000
        #expect(sample.t1.nanoseconds == start + 7_000)
        #expect(sample.t2.nanoseconds == start + 50_000)
        // Restamped and signed again: the follower's gate took it, with the later t3.
        #expect(sample.t3.nanoseconds == start + 80_000)
        #expect(sample.t4.nanoseconds == start + 130_000)
    }

    @Test(arguments: [Duration.microseconds(-1), .milliseconds(2)])
    func aStampThatCannotBeTheRequestsIsIgnored(stampAfter: Duration) throws {
        // Before the request's own clock read, or later than any send takes: another
        // datagram's. The clock read stands.
        let sample = try #require(try Self.exchange(stampAfter: stampAfter))
        #expect(sample.t1.nanoseconds == 10_000_000_000)
    }

    @Test func withoutAStampTheClockReadIsT1() throws {
        let sample = try #require(try Self.exchange(stampAfter: nil))
        #expect(sample.t1.nanoseconds == 10_000_000_000)
    }

    @Test func onlyClockRepliesAreRestampedAndNeverBeforeTheRequestArrived() throws {
        var leader = try LeaderCore(group: "house", baseURL: "http://10.0.0.1:8080/", senderID: 111)
        _ = leader.handle(.stateChanged(FollowerCoreTests.playing(at: LeaderTime(nanoseconds: 5))), at: HostTime(nanoseconds: 1))
        var follower = try FollowerCore(group: "house", leader: SimulatedSession.leaderEndpoint, followerName: "kitchen", senderID: 222)
        var replies = 0, others = 0
        for case let .send(datagram) in follower.handle(.start, at: HostTime(nanoseconds: 1_000_000)) {
            let answers = leader.handle(.received(datagram.bytes, from: SimulatedSession.followerEndpoint,
                                                  receivedAt: HostTime(nanoseconds: 2_000_000)), at: HostTime(nanoseconds: 2_000_100))
            for case let .send(answer) in answers {
                if case .clockReply = answer.message.payload {
                    replies += 1
                    // A t3 before t2 would describe an impossible exchange: unchanged.
                    #expect(leader.restamped(answer, t3: HostTime(nanoseconds: 1_999_999)) == answer)
                } else {
                    others += 1
                    #expect(leader.restamped(answer, t3: HostTime(nanoseconds: 3_000_000)) == answer)
                }
            }
        }
        // The Hello brought a Welcome and the State; the request, its reply.
        #expect(replies == 1 && others == 2)
    }
}
