import Testing
import ChorusTestSupport
import GroupSync

@Suite("MessageAuthenticator", .ownThread)
struct MessageAuthenticatorTests {
    /// The bytes `hex` spells.
    static func bytes(_ hex: String) -> [UInt8] {
        var result: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            result.append(UInt8(hex[index..<next], radix: 16) ?? 0)
            index = next
        }
        return result
    }

    /// RFC 4231's test cases 1 and 2 for HMAC-SHA-256, and an empty message.
    @Test(arguments: [
        ("0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", Array("Hi There".utf8),
         "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        ("4a656665", Array("what do ya want for nothing?".utf8),
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        ("30313233343536373839616263646566", [],
         "496dc93fa2d26eae500ec0bc37a122706b88f8963cebf0899d0245fae313e241"),
    ])
    func tagIsHMACSHA256OverTheBytes(key: String, data: [UInt8], tag: String) {
        let authenticator = MessageAuthenticator(key: GroupKey(bytes: Self.bytes(key)))
        let expected = Self.bytes(tag)
        #expect(authenticator.tag(for: data) == expected)
        #expect(authenticator.tag(for: data).count == MessageAuthenticator.tagLength)
        #expect(authenticator.isValid(tag: expected, for: data))
        var wrong = expected
        wrong[31] ^= 1
        #expect(!authenticator.isValid(tag: wrong, for: data))
        #expect(!authenticator.isValid(tag: Array(expected.prefix(16)), for: data))
        #expect(!authenticator.isValid(tag: [], for: data))
    }

    @Test func constantTimeEqualityComparesEveryByte() {
        let base = Array(repeating: UInt8(0xAB), count: 32)
        #expect(MessageAuthenticator.constantTimeEqual(base, base))
        #expect(MessageAuthenticator.constantTimeEqual([], []))
        for index in base.indices {
            var other = base
            other[index] ^= 0x10
            #expect(!MessageAuthenticator.constantTimeEqual(base, other))
        }
        #expect(!MessageAuthenticator.constantTimeEqual(base, Array(base.prefix(31))))
    }
}
