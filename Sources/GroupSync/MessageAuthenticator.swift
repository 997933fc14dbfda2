import Crypto

/// Tags and verifies datagrams with HMAC-SHA256 under the group's shared key.
///
/// The tag covers every byte of the datagram before it (header and body), so a changed
/// group name, sequence or field invalidates it. Verification compares in constant time.
public struct MessageAuthenticator: Sendable {
    /// HMAC-SHA256 tag length in bytes.
    public static let tagLength = 32

    // Kept as bytes because `SymmetricKey` is not `Sendable`; a key is rebuilt per use.
    private let keyBytes: [UInt8]

    /// An authenticator for `key` (see `KeyFile` for loading one).
    public init(key: SymmetricKey) {
        keyBytes = key.withUnsafeBytes { Array($0) }
    }

    /// The 32-byte tag of `bytes`.
    public func tag<Bytes: Collection<UInt8>>(for bytes: Bytes) -> [UInt8] {
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: keyBytes))
        hmac.update(data: Array(bytes))
        return Array(hmac.finalize())
    }

    /// Whether `tag` is the tag of `bytes`, compared in constant time.
    public func isValid<Bytes: Collection<UInt8>>(tag: [UInt8], for bytes: Bytes) -> Bool {
        Self.constantTimeEqual(self.tag(for: bytes), tag)
    }

    /// Compares two byte arrays in time that depends only on their lengths, never on where
    /// they differ, so that an attacker cannot learn a valid tag byte by byte from timing.
    public static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in lhs.indices {
            difference |= lhs[index] ^ rhs[index]
        }
        return difference == 0
    }
}
