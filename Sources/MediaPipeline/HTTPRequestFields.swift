import Foundation
import MutexAnnotations
import Synchronization
internal import CFFmpeg

/// What every HTTP request for an asset carries besides FFmpeg's own fields: a user agent,
/// header fields and cookies (`AVURLAsset`'s options). Some servers and stations refuse
/// FFmpeg's own user agent, or want a token in a header or a cookie.
///
/// An asset's fields are registered under its URL while it lives (`register(_:for:)`):
/// every opening of the asset goes by that URL (its readers', a seek's, a reverse reader's),
/// and looks them up by it (`fields(for:)`). The opening gives them to its fetch policy,
/// which adds them to every fetch its demuxer makes (variants, segments, keys, and the
/// playlists of a cut opening), and to the playlists Chorus reads itself for the item.
public struct HTTPRequestFields: Sendable, Equatable {
    /// The `User-Agent` to send in place of FFmpeg's; nil for FFmpeg's.
    public var userAgent: String?
    /// Header fields to add to every request, by name.
    public var headers: [String: String]
    /// Cookies to send, each as a `Set-Cookie` value ("name=value; domain=...; path=..."):
    /// their name=value pairs go in one `Cookie` field.
    public var cookies: [String]

    /// Fields to send: a user agent, header fields by name, and cookies as `Set-Cookie`
    /// values.
    public init(userAgent: String? = nil, headers: [String: String] = [:], cookies: [String] = []) {
        self.userAgent = userAgent
        self.headers = headers
        self.cookies = cookies
    }

    /// Whether there is nothing to add.
    public var isEmpty: Bool { userAgent == nil && headers.isEmpty && cookies.isEmpty }

    /// A registration of fields for one URL, withdrawn when released.
    public final class Registration: Sendable {
        let location: String
        init(location: String) { self.location = location }
        deinit { HTTPRequestFields.withdraw(self) }
    }

    /// The registrations per URL, the latest last.
    private static let registry = Mutex<[String: [(registration: ObjectIdentifier, fields: HTTPRequestFields)]]>([:])

    /// Registers `fields` for the HTTP or HTTPS URL `location` until the returned
    /// registration is released; nil when there is nothing to register or `location` is
    /// not such a URL. Of two registrations for one URL (two assets of it), the later is
    /// used while it lasts. Another URL of the same server is not covered: its asset's
    /// fields are its own.
    public static func register(_ fields: HTTPRequestFields, for location: String) -> Registration? {
        guard !fields.isEmpty, isHTTP(location) else { return nil }
        let registration = Registration(location: location)
        registry.withLockAnnotated { $0[location, default: []].append((ObjectIdentifier(registration), fields)) }
        return registration
    }

    private static func withdraw(_ registration: Registration) {
        registry.withLockAnnotated { registry in
            registry[registration.location]?.removeAll { $0.registration == ObjectIdentifier(registration) }
            if registry[registration.location]?.isEmpty == true { registry[registration.location] = nil }
        }
    }

    /// The fields registered for `location`; nil when none are.
    public static func fields(for location: String) -> HTTPRequestFields? {
        registry.withLockAnnotated { $0[location]?.last?.fields }
    }

    static func isHTTP(_ url: String) -> Bool {
        guard let scheme = URLComponents(string: url)?.scheme?.lowercased() else { return false }
        return scheme == "http" || scheme == "https"
    }

    /// Whether `text` holds a line break or a NUL, which would end a header line early and
    /// start another. By scalars: "\r\n" is one `Character`, neither "\r" nor "\n".
    static func breaksALine(_ text: String) -> Bool {
        text.unicodeScalars.contains { $0 == "\r" || $0 == "\n" || $0 == "\0" }
    }

    /// FFmpeg's `user_agent`, when one is given that cannot break a header line.
    var ffmpegUserAgent: String? { userAgent.flatMap { Self.breaksALine($0) ? nil : $0 } }

    /// FFmpeg's `headers`: each field a line ended by CRLF, the cookies' pairs as one
    /// `Cookie` field; nil when there is none. A field whose name is empty or holds a colon
    /// or white space, or whose name or value would break a line, is left out.
    var ffmpegHeaders: String? {
        var fields = headers
        // FFmpeg's own `cookies` option, matched by domain and path, sent none to a server
        // named by its address in Debian 12's build: the cookies are the asset's, for its
        // server, so they go as they are.
        let pairs = cookies.compactMap { $0.split(separator: ";").first?.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !Self.breaksALine($0) }
        if !pairs.isEmpty { fields["Cookie"] = ([fields["Cookie"]].compactMap { $0 } + pairs).joined(separator: "; ") }
        let lines = fields.sorted { $0.key < $1.key }
            .filter { name, value in
                !name.isEmpty && !name.unicodeScalars.contains { $0 == ":" || $0.properties.isWhitespace } && !Self.breaksALine(name + value)
            }
            .map { "\($0.key): \($0.value)\r\n" }
        return lines.isEmpty ? nil : lines.joined()
    }

    /// Adds the fields to FFmpeg's options for one open (its HTTP protocol's `user_agent`
    /// and `headers`).
    func add(to options: inout OpaquePointer?) {
        if let userAgent = ffmpegUserAgent { av_dict_set(&options, "user_agent", userAgent, 0) }
        if let headers = ffmpegHeaders { av_dict_set(&options, "headers", headers, 0) }
    }
}
