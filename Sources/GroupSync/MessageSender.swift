/// Stamps outgoing messages with this node's sender ID and the next sequence number, and
/// encodes them. One per core, so sequences are strictly increasing per process.
struct MessageSender: Sendable {
    let senderID: UInt64
    let group: String
    let codec: WireCodec
    private(set) var lastSequence: UInt64 = 0

    init(senderID: UInt64, group: String, codec: WireCodec) {
        self.senderID = senderID
        self.group = group
        self.codec = codec
    }

    /// The datagram for `payload` to `destination`, or the reason it cannot be encoded.
    mutating func datagram(_ payload: GroupMessage.Payload, to destination: UDPEndpoint) -> Result<OutgoingDatagram, EncodeError> {
        lastSequence += 1
        let message = GroupMessage(senderID: senderID, sequence: lastSequence, group: group, payload: payload)
        do {
            return .success(OutgoingDatagram(bytes: try codec.encode(message), destination: destination, message: message))
        } catch {
            return .failure(error)
        }
    }
}
