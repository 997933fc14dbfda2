import Crypto
import Testing
import GroupSync

@Suite("MessageAuthenticator")
struct MessageAuthenticatorTests {
    @Test func tagIsHMACSHA256OverTheBytes() {
        let key = SymmetricKey(data: Array("0123456789abcdef".utf8))
        let authenticator = MessageAuthenticator(key: key)
        let data: [UInt8] = Array("message".utf8)
        let expected = Array(HMAC<SHA256>.authenticationCode(for: data, using: key))
        #expect(authenticator.tag(for: data) == expected)
        #expect(authenticator.tag(for: data).count == MessageAuthenticator.tagLength)
        #expect(authenticator.isValid(tag: expected, for: data))
        var wrong = expected
        wrong[31] ^= 1
        #expect(!authenticator.isValid(tag: wrong, for: data))
        #expect(!authenticator.isValid(tag: Array(expected.prefix(16)), for: data))
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
