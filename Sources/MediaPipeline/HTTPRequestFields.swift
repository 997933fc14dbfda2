import Foundation
import MutexAnnotations
import Synchronization
internal import CFFmpeg

/// What every HTTP request for an asset carries besides FFmpeg's own fields: a user agent,
/// header fields and cookies (`AVURLAsset`'s options). Some servers and stations refuse
/// FFmpeg's own user agent, or want a token in a header or a cookie.
///
/// An asset's fields are registered for its server (`register(_:for:)`) while it lives:
/// every opening of it goes by its URL (its readers', a seek's, a reverse reader's), and the
/// playlists Chorus reads itself lie beside it, so each opening looks the fields up by the
/// server it asks (`fields(for:)`). FFmpeg's HLS demuxer passes them on to the requests it
/// makes itself (variants, segments, keys).
public struct HTTPRequestFields: Sendable, Equatable {
    /// The `User-Agent` to send in place of FFmpeg's; nil for FFmpeg's.
    public var userAgent: String?
    /// Header fields to add to every request, by name.
    public var headers: [String: String]
    /// Cookies to send, each as a `Set-Cookie` value ("name=value; domain=...; path=...").
    public var cookies: [String]

    public init(userAgent: String? = nil, headers: [String: String] = [:], cookies: [String] = []) {
        self.userAgent = userAgent
        self.headers = headers
        self.cookies = cookies
    }

    /// Whether there is nothing to add.
    public var isEmpty: Bool { userAgent == nil && headers.isEmpty && cookies.isEmpty }

    /// A registration of fields for one server, withdrawn when released.
    public final class Registration: Sendable {
        let origin: String
        init(origin: String) { self.origin = origin }
        deinit { HTTPRequestFields.withdraw(self) }
    }

    /// The registrations per server ("scheme://host:port"), the latest last.
    private static let registry = Mutex<[String: [(registration: ObjectIdentifier, fields: HTTPRequestFields)]]>([:])

    /// Registers `fields` for the server of `url` until the returned registration is
    /// released; nil when there is nothing to register or `url` names no server. The latest
    /// registration for a server is the one used.
    public static func register(_ fields: HTTPRequestFields, for url: String) -> Registration? {
        guard !fields.isEmpty, let origin = origin(of: url) else { return nil }
        let registration = Registration(origin: origin)
        registry.withLockAnnotated { $0[origin, default: []].append((ObjectIdentifier(registration), fields)) }
        return registration
    }

    private static func withdraw(_ registration: Registration) {
        registry.withLockAnnotated { registry in
            registry[registration.origin]?.removeAll { $0.registration == ObjectIdentifier(registration) }
            if registry[registration.origin]?.isEmpty == true { registry[registration.origin] = nil }
        }
    }

    /// The fields registered for the server of `url`; nil when none are.
    public static func fields(for url: String) -> HTTPRequestFields? {
        guard let origin = origin(of: url) else { return nil }
        return registry.withLockAnnotated { $0[origin]?.last?.fields }
    }

    /// "scheme://host:port" of an HTTP or HTTPS URL (the port its scheme's own when it names
    /// none); nil for any other URL.
    static func origin(of url: String) -> String? {
        guard let parsed = URLComponents(string: url), let scheme = parsed.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = parsed.host?.lowercased(), !host.isEmpty else { return nil }
        return "\(scheme)://\(host):\(parsed.port ?? (scheme == "https" ? 443 : 80))"
    }

    /// Adds the fields registered for `url`'s server to FFmpeg's options for opening it (its
    /// HTTP protocol's `user_agent` and `headers`).
    static func add(for url: String, to options: inout OpaquePointer?) {
        guard let fields = fields(for: url) else { return }
        if let userAgent = fields.userAgent { av_dict_set(&options, "user_agent", userAgent, 0) }
        // FFmpeg's `headers`: each line ended by CRLF. Names and values with a line break in
        // them would start a header of their own: they are left out.
        var headers = fields.headers
        // The cookies go as one `Cookie` field of their name=value pairs: they are the
        // server's already (registered for it), and FFmpeg's own `cookies` option, matched by
        // domain and path, sent none to a server named by its address in Debian 12's build.
        let pairs = fields.cookies.compactMap { $0.split(separator: ";").first?.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        if !pairs.isEmpty { headers["Cookie"] = ([headers["Cookie"]].compactMap { $0 } + pairs).joined(separator: "; ") }
        let lines = headers.sorted { $0.key < $1.key }
            // By scalars: "\r\n" is one Character, neither "\r" nor "\n".
            .filter { !"\($0.key)\($0.value)".unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" }) }
            .map { "\($0.key): \($0.value)\r\n" }
        if !lines.isEmpty { av_dict_set(&options, "headers", lines.joined(), 0) }
    }
}
