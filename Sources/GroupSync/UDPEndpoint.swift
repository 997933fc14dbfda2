#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A UDP address and port, IPv4 or IPv6.
///
/// Parses "192.0.2.1:5000", "[2001:db8::1]:5000" and "[fe80::1%eth0]:5000" (numeric
/// addresses only; name resolution belongs to the caller).
public struct UDPEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// The address family and bytes.
    public enum Address: Sendable, Hashable {
        /// Four bytes in network order.
        case ipv4(UInt8, UInt8, UInt8, UInt8)
        /// Sixteen bytes in network order and the interface scope (0 when none).
        case ipv6([UInt8], scopeID: UInt32)
    }

    /// The address.
    public var address: Address
    /// The port (0 asks the system for an ephemeral one when binding).
    public var port: UInt16

    /// An endpoint from its parts. IPv6 addresses must have 16 bytes; others are padded
    /// or cut to 16.
    public init(address: Address, port: UInt16) {
        if case let .ipv6(bytes, scope) = address, bytes.count != 16 {
            self.address = .ipv6(Array((bytes + [UInt8](repeating: 0, count: 16)).prefix(16)), scopeID: scope)
        } else {
            self.address = address
        }
        self.port = port
    }

    /// 127.0.0.1 on `port`.
    public static func loopbackIPv4(port: UInt16) -> UDPEndpoint {
        UDPEndpoint(address: .ipv4(127, 0, 0, 1), port: port)
    }

    /// 0.0.0.0 (every IPv4 interface) on `port`.
    public static func anyIPv4(port: UInt16) -> UDPEndpoint {
        UDPEndpoint(address: .ipv4(0, 0, 0, 0), port: port)
    }

    /// :: (every IPv6 interface, and IPv4 through mapped addresses) on `port`.
    public static func anyIPv6(port: UInt16) -> UDPEndpoint {
        UDPEndpoint(address: .ipv6([UInt8](repeating: 0, count: 16), scopeID: 0), port: port)
    }

    /// Parses "ADDR:PORT" or "[V6ADDR]:PORT"; `nil` if either part is invalid.
    public init?(parsing text: String) {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portText = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            guard !host.contains(":") else { return nil }
        }
        guard !portText.isEmpty, portText.allSatisfy(\.isASCII), let port = UInt16(portText) else { return nil }
        guard let address = Self.parseAddress(String(host)) else { return nil }
        // Brackets are for IPv6 only, as in URLs.
        guard text.hasPrefix("[") == { if case .ipv6 = address { true } else { false } }() else { return nil }
        self.init(address: address, port: port)
    }

    private static func parseAddress(_ text: String) -> Address? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            let bytes = withUnsafeBytes(of: v4.s_addr) { Array($0) }
            return .ipv4(bytes[0], bytes[1], bytes[2], bytes[3])
        }
        var name = text
        var scope: UInt32 = 0
        if let percent = text.firstIndex(of: "%") {
            name = String(text[..<percent])
            let interface = String(text[text.index(after: percent)...])
            if let numeric = UInt32(interface) {
                scope = numeric
            } else {
                scope = if_nametoindex(interface)
                guard scope != 0 else { return nil }
            }
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, name, &v6) == 1 else { return nil }
        return .ipv6(withUnsafeBytes(of: v6) { Array($0) }, scopeID: scope)
    }

    /// "a.b.c.d:port" or "[v6]:port".
    public var description: String {
        switch address {
        case let .ipv4(a, b, c, d):
            return "\(a).\(b).\(c).\(d):\(port)"
        case let .ipv6(bytes, scope):
            var raw = in6_addr()
            withUnsafeMutableBytes(of: &raw) { buffer in
                for index in 0..<min(16, bytes.count) { buffer[index] = bytes[index] }
            }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            let name = inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count)) != nil
                ? String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                : "?"
            return scope == 0 ? "[\(name)]:\(port)" : "[\(name)%\(scope)]:\(port)"
        }
    }

    /// Whether the address is IPv6.
    public var isIPv6: Bool {
        if case .ipv6 = address { return true }
        return false
    }

    /// The socket address for system calls.
    func withSocketAddress<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        switch address {
        case let .ipv4(a, b, c, d):
            var storage = sockaddr_in()
            storage.sin_family = sa_family_t(AF_INET)
            storage.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &storage.sin_addr) { buffer in
                buffer[0] = a; buffer[1] = b; buffer[2] = c; buffer[3] = d
            }
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        case let .ipv6(bytes, scope):
            var storage = sockaddr_in6()
            storage.sin6_family = sa_family_t(AF_INET6)
            storage.sin6_port = port.bigEndian
            storage.sin6_scope_id = scope
            withUnsafeMutableBytes(of: &storage.sin6_addr) { buffer in
                for index in 0..<min(16, bytes.count) { buffer[index] = bytes[index] }
            }
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
    }

    /// The endpoint in a socket address returned by the system; `nil` for other families.
    init?(storage: sockaddr_storage) {
        var copy = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            let v4 = withUnsafeBytes(of: &copy) { $0.load(as: sockaddr_in.self) }
            let bytes = withUnsafeBytes(of: v4.sin_addr) { Array($0) }
            self.init(address: .ipv4(bytes[0], bytes[1], bytes[2], bytes[3]), port: UInt16(bigEndian: v4.sin_port))
        case AF_INET6:
            let v6 = withUnsafeBytes(of: &copy) { $0.load(as: sockaddr_in6.self) }
            let bytes = withUnsafeBytes(of: v6.sin6_addr) { Array($0) }
            self.init(address: .ipv6(bytes, scopeID: v6.sin6_scope_id), port: UInt16(bigEndian: v6.sin6_port))
        default:
            return nil
        }
    }
}
