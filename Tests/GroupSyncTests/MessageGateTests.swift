import Testing
import ChorusTestSupport
import GroupSync

@Suite("MessageGate", .ownThread)
struct MessageGateTests {
    static var key: GroupKey { GroupKey(bytes: Array(0..<32).map { UInt8($0) }) }
    static var keyed: WireCodec { WireCodec(authenticator: MessageAuthenticator(key: key)) }

    static func bytes(_ codec: WireCodec, sequence: UInt64, sender: UInt64 = 5, group: String = "home") throws -> [UInt8] {
        try codec.encode(GroupMessage(senderID: sender, sequence: sequence, group: group,
                                      payload: .clockRequest(.init(requestID: 1, t1: 2))))
    }

    @Test func keyedGateAcceptsValidAndCountsEveryAttack() throws {
        var gate = MessageGate(group: "home", codec: Self.keyed)
        do { let admitted = gate.admit(try Self.bytes(Self.keyed, sequence: 1)) != nil; #expect(admitted) }
        // Unkeyed (no tag): forged.
        do { let admitted = gate.admit(try Self.bytes(WireCodec(), sequence: 2)) == nil; #expect(admitted) }
        // Wrong key: forged.
        let other = WireCodec(authenticator: MessageAuthenticator(key: GroupKey(bytes: Array(repeating: UInt8(0x5A), count: 32))))
        do { let admitted = gate.admit(try Self.bytes(other, sequence: 3)) == nil; #expect(admitted) }
        #expect(gate.counters.forged == 2)
        // Another group: wrongGroup.
        do { let admitted = gate.admit(try Self.bytes(Self.keyed, sequence: 4, group: "office")) == nil; #expect(admitted) }
        #expect(gate.counters.wrongGroup == 1)
        // Replay of sequence 1, and an older one: replayed.
        do { let admitted = gate.admit(try Self.bytes(Self.keyed, sequence: 1)) == nil; #expect(admitted) }
        #expect(gate.counters.replayed == 1)
        do { let admitted = gate.admit(try Self.bytes(Self.keyed, sequence: 5)) != nil; #expect(admitted) }
        do { let admitted = gate.admit(try Self.bytes(Self.keyed, sequence: 5)) == nil; #expect(admitted) }
        #expect(gate.counters.replayed == 2)
        // Another version, and garbage.
        var future = try Self.bytes(Self.keyed, sequence: 6)
        future[4] = WireCodec.version &+ 1
        do { let admitted = gate.admit(future) == nil; #expect(admitted) }
        do { let admitted = gate.admit([1, 2, 3]) == nil; #expect(admitted) }
        #expect(gate.counters.wrongVersion == 1)
        #expect(gate.counters.malformed == 1)
        #expect(gate.counters.total == 7)
    }

    @Test func flippingAnyByteOfAKeyedMessageIsRejected() throws {
        let valid = try Self.bytes(Self.keyed, sequence: 10)
        for index in valid.indices {
            for bit in [UInt8(0x01), 0x80] {
                var gate = MessageGate(group: "home", codec: Self.keyed)
                var altered = valid
                altered[index] ^= bit
                do { let admitted = gate.admit(altered) == nil; #expect(admitted, "byte \(index) bit \(bit)") }
                #expect(gate.counters.total == 1)
            }
        }
        var gate = MessageGate(group: "home", codec: Self.keyed)
        do { let admitted = gate.admit(valid) != nil; #expect(admitted) }
    }

    @Test func forgedMessagesDoNotMoveTheHighWaterMark() throws {
        var gate = MessageGate(group: "home", codec: Self.keyed)
        // Far enough ahead that, had it moved the window, sequence 2 would be out of it.
        var forged = try Self.bytes(Self.keyed, sequence: 1_000_000)
        forged[forged.count - 1] ^= 1
        do { let admitted = gate.admit(forged) == nil; #expect(admitted) }
        do { let admitted = gate.admit(try Self.bytes(Self.keyed, sequence: 2)) != nil; #expect(admitted) }
    }

    @Test func unkeyedGateDropsTaggedMessagesAsForged() throws {
        var gate = MessageGate(group: "home", codec: WireCodec())
        do { let admitted = gate.admit(try Self.bytes(Self.keyed, sequence: 1)) == nil; #expect(admitted) }
        #expect(gate.counters.forged == 1)
        do { let admitted = gate.admit(try Self.bytes(WireCodec(), sequence: 1)) != nil; #expect(admitted) }
    }

    @Test func sendersHaveIndependentSequences() throws {
        var gate = MessageGate(group: "home", codec: WireCodec())
        do { let admitted = gate.admit(try Self.bytes(WireCodec(), sequence: 9, sender: 1)) != nil; #expect(admitted) }
        do { let admitted = gate.admit(try Self.bytes(WireCodec(), sequence: 1, sender: 2)) != nil; #expect(admitted) }
        // Sender 2's low sequence did not disturb sender 1's window: its repeat is refused.
        do { let admitted = gate.admit(try Self.bytes(WireCodec(), sequence: 9, sender: 1)) == nil; #expect(admitted) }
    }
}
