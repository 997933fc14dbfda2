/// A datagram a core wants sent: the encoded bytes, where to, and the message they carry
/// (for logs and tests; the adapter sends `bytes`).
public struct OutgoingDatagram: Sendable, Equatable {
    /// The encoded (and, when keyed, tagged) datagram.
    public var bytes: [UInt8]
    /// Where to send it.
    public var destination: UDPEndpoint
    /// What it says.
    public var message: GroupMessage

    /// A datagram to send.
    public init(bytes: [UInt8], destination: UDPEndpoint, message: GroupMessage) {
        self.bytes = bytes
        self.destination = destination
        self.message = message
    }
}
