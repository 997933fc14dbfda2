import Testing
import ChorusTestSupport
import GroupSync

@Suite("UDPEndpoint", .ownThread)
struct UDPEndpointTests {
    @Test func parsesIPv4AndBracketedIPv6() throws {
        let v4 = try #require(UDPEndpoint(parsing: "192.0.2.7:5004"))
        #expect(v4.address == .ipv4(192, 0, 2, 7) && v4.port == 5004)
        #expect(v4.description == "192.0.2.7:5004")
        let v6 = try #require(UDPEndpoint(parsing: "[2001:db8::1]:65535"))
        #expect(v6.isIPv6 && v6.port == 65535)
        #expect(v6.description == "[2001:db8::1]:65535")
        #expect(UDPEndpoint(parsing: "[::1%1]:9")?.description == "[::1%1]:9")
        #expect(UDPEndpoint(parsing: "[::]:0")?.port == 0)
    }

    @Test(arguments: ["", "1.2.3.4", "1.2.3.4:", "1.2.3.4:65536", "1.2.3.4:-1", "::1:80", "[::1]80", "[::1:80",
                      "host.example:80", "999.1.1.1:1", "[1.2.3.4]:5", "1.2.3.4:８０", "[::1]:"])
    func rejectsInvalidText(text: String) {
        #expect(UDPEndpoint(parsing: text) == nil)
    }
}
