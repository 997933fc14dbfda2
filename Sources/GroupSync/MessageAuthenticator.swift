import COpenSSL

/// The group's shared key: the bytes every node tags its datagrams under. Load one with
/// `KeyFile`.
public struct GroupKey: Sendable {
    /// The key's bytes.
    public let bytes: [UInt8]
    /// The key's length in bits.
    public var bitCount: Int { bytes.count * 8 }

    /// A key of `bytes` (`KeyFile` holds it to at least `KeyFile.minimumKeyBytes`).
    public init(bytes: [UInt8]) {
        self.bytes = bytes
    }
}

/// Tags and verifies datagrams with HMAC-SHA256 under the group's shared key.
///
/// The tag covers every byte of the datagram before it (header and body), so a changed
/// group name, sequence or field invalidates it. Verification compares in constant time.
/// The HMAC is OpenSSL's libcrypto (Debian's `libssl-dev`), a vetted implementation that
/// the system's security updates keep current.
public struct MessageAuthenticator: Sendable {
    /// HMAC-SHA256 tag length in bytes.
    public static let tagLength = 32

    private let key: GroupKey

    /// An authenticator for `key` (see `KeyFile` for loading one).
    public init(key: GroupKey) {
        self.key = key
    }

    /// The 32-byte tag of `bytes`; empty if the library failed to compute it, which no
    /// receiver accepts as a tag.
    public func tag<Bytes: Collection<UInt8>>(for bytes: Bytes) -> [UInt8] {
        computedTag(for: bytes) ?? []
    }

    /// The tag of `bytes`, or nil if the library failed to compute it.
    private func computedTag<Bytes: Collection<UInt8>>(for bytes: Bytes) -> [UInt8]? {
        let data = Array(bytes)
        var tag = [UInt8](repeating: 0, count: Self.tagLength)
        let succeeded = key.bytes.withUnsafeBufferPointer { key in
            data.withUnsafeBufferPointer { data in
                tag.withUnsafeMutableBufferPointer { tag in
                    chorus_hmac_sha256(key.baseAddress, key.count, data.baseAddress, data.count, tag.baseAddress) == 1
                }
            }
        }
        return succeeded ? tag : nil
    }

    /// Whether `tag` is the tag of `bytes`, compared in constant time.
    public func isValid<Bytes: Collection<UInt8>>(tag: [UInt8], for bytes: Bytes) -> Bool {
        guard let expected = computedTag(for: bytes) else { return false }
        return Self.constantTimeEqual(expected, tag)
    }

    /// Compares two byte arrays in time that depends only on their lengths, never on where
    /// they differ, so that an attacker cannot learn a valid tag byte by byte from timing.
    public static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        guard !lhs.isEmpty else { return true }
        return lhs.withUnsafeBufferPointer { lhs in
            rhs.withUnsafeBufferPointer { rhs in
                guard let left = lhs.baseAddress, let right = rhs.baseAddress else { return false }
                return chorus_constant_time_equal(left, right, lhs.count) == 1
            }
        }
    }
}
