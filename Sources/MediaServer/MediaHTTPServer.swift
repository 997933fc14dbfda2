import Foundation
import Synchronization
import MutexAnnotations

/// A small HTTP/1.1 server for the files a group leader plays, so that followers on other
/// machines can open them with FFmpeg.
///
/// It serves only the files it is given, each under `/items/<id>/<name>`, with `GET` and
/// `HEAD`, byte ranges (`Range: bytes=a-b`, `a-`, `-n`; 206 with `Content-Range`, 416 when
/// unsatisfiable) and keep-alive. Anything else is 404 or 405; a malformed request is 400
/// and the connection is closed. Each connection has its own thread, bounded in number,
/// every socket read has a timeout and every request header a deadline, so a stalled or
/// trickling client cannot hold the server.
public final class MediaHTTPServer: Sendable {
    /// Connections served at once; more wait in the listen queue. Sixty-four is far above a
    /// household's rooms and small enough for a modest machine's threads.
    public static let maximumConnections = 64
    /// How long one read or write may wait: an idle keep-alive connection, or a stalled
    /// transfer, is closed after this.
    public static let readTimeout: Duration = .seconds(15)
    /// The longest request header accepted, in bytes.
    public static let maximumHeaderBytes = 16 * 1024
    /// How long a request header may take once its first bytes have come: a real client
    /// sends it at once, while one that trickles a byte now and then (each read well inside
    /// `readTimeout`) would otherwise hold a connection for days, and sixty-four of
    /// them every connection. It may overrun by one read timeout.
    public static let defaultHeaderTimeout: Duration = .seconds(10)
    /// Bytes read from the file and written to the socket per step.
    static let chunkBytes = 256 * 1024

    private let listener: Int32
    /// Connections accepted and served since the server started (each follower's reading of
    /// an item opens one, and one more for each seek FFmpeg makes across the file).
    public var connectionsAccepted: Int { accepted.load(ordering: .relaxed) }

    /// The port bound (useful when asked for port 0).
    public let port: UInt16
    private let host: String
    private let files = Mutex<[String: URL]>([:])
    /// Folders served whole, by the path prefix they are served under (ending in "/").
    private let folders = Mutex<[String: URL]>([:])
    private let connections = Atomic<Int>(0)
    private let accepted = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)
    private let headerTimeout: Duration

    /// Binds `address:port` (port 0 picks a free one) and starts accepting; a request header
    /// must arrive whole within `headerTimeout` of its first bytes.
    public init(address: String = "0.0.0.0", port: UInt16 = 0, headerTimeout: Duration = MediaHTTPServer.defaultHeaderTimeout) throws {
        self.headerTimeout = headerTimeout
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ServerError.socket(String(cString: strerror(errno))) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        guard inet_pton(AF_INET, address, &addr.sin_addr) == 1 else {
            close(fd)
            throw ServerError.badAddress(address)
        }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw ServerError.socket("cannot listen on \(address):\(port): \(reason)")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        self.port = UInt16(bigEndian: actual.sin_port)
        self.host = address
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "chorus.http"
        thread.start()
    }

    deinit { stop() }

    /// Serves `file` under a new path; returns that path (`/items/<id>/<name>`).
    public func publish(_ file: URL, id: String) -> String {
        let name = file.lastPathComponent.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? "item"
        let path = "/items/\(id)/\(name)"
        files.withLockAnnotated { $0[path] = file }
        return path
    }

    /// Serves `playlist` under a new path, as `publish` does, together with every file in
    /// its folder and below it, under the same prefix: an HLS playlist's segments and
    /// variant playlists, which it names relative to itself. Returns the playlist's path.
    public func publishFolder(of playlist: URL, id: String) -> String {
        let path = publish(playlist, id: id)
        folders.withLockAnnotated { $0["/items/\(id)/"] = playlist.deletingLastPathComponent().standardizedFileURL }
        return path
    }

    /// The file a request path names: a published file, or one inside a published folder.
    /// A path that leaves its folder (`..`), or names a hidden file, names nothing.
    func file(at path: String) -> URL? {
        if let file = files.withLockAnnotated({ $0[path] }) { return file }
        let served: (prefix: String, folder: URL)? = folders.withLockAnnotated { folders in
            folders.first { path.hasPrefix($0.key) }.map { ($0.key, $0.value) }
        }
        guard let (prefix, folder) = served, let relative = String(path.dropFirst(prefix.count)).removingPercentEncoding else { return nil }
        let parts = relative.split(separator: "/", omittingEmptySubsequences: false)
        guard !parts.isEmpty, parts.allSatisfy({ !$0.isEmpty && !$0.hasPrefix(".") && !$0.contains("\0") }) else { return nil }
        let file = parts.reduce(folder) { $0.appendingPathComponent(String($1)) }.standardizedFileURL
        guard file.path.hasPrefix(folder.path + "/") else { return nil }
        return file
    }

    /// Stops accepting; connections in progress finish their current response.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    // MARK: - Connections

    private func acceptLoop() {
        while !stopped.load(ordering: .acquiring) {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                if stopped.load(ordering: .acquiring) { return }
                usleep(10_000)
                continue
            }
            if connections.load(ordering: .relaxed) >= Self.maximumConnections {
                respond(client, status: 503, reason: "Service Unavailable", close: true)
                close(client)
                continue
            }
            connections.add(1, ordering: .relaxed)
            accepted.add(1, ordering: .relaxed)
            var timeout = timeval(tv_sec: Int(Self.readTimeout.components.seconds), tv_usec: 0)
            setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var noSignal: Int32 = 1
            setsockopt(client, SOL_SOCKET, SO_KEEPALIVE, &noSignal, socklen_t(MemoryLayout<Int32>.size))
            let thread = Thread { [self] in
                serve(client)
                close(client)
                connections.subtract(1, ordering: .relaxed)
            }
            thread.name = "chorus.http.conn"
            thread.start()
        }
    }

    private func serve(_ client: Int32) {
        var pending = [UInt8]()
        while !stopped.load(ordering: .acquiring) {
            guard let request = readRequest(client, buffer: &pending) else { return }
            switch request {
            case .malformed:
                respond(client, status: 400, reason: "Bad Request", close: true)
                return
            case .request(let method, let path, let headers):
                let keepAlive = headers["connection"]?.lowercased() != "close"
                if !handle(client, method: method, path: path, headers: headers, keepAlive: keepAlive) || !keepAlive { return }
            }
        }
    }

    enum Request {
        case request(method: String, path: String, headers: [String: String])
        case malformed
    }

    /// Reads one request header; nil when the peer closed or timed out.
    private func readRequest(_ client: Int32, buffer: inout [UInt8]) -> Request? {
        let terminator: [UInt8] = [13, 10, 13, 10]
        var chunk = [UInt8](repeating: 0, count: 4096)
        // From the header's first bytes (held over from the last request, or read now).
        var deadline: ContinuousClock.Instant? = buffer.isEmpty ? nil : .now + headerTimeout
        while true {
            if let end = buffer.firstRange(of: terminator) {
                let head = Array(buffer[..<end.lowerBound])
                buffer.removeSubrange(..<end.upperBound)
                return parse(head)
            }
            if buffer.count > Self.maximumHeaderBytes { return .malformed }
            if let deadline, ContinuousClock.now > deadline { return nil }
            let n = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return nil }
            if deadline == nil { deadline = .now + headerTimeout }
            buffer.append(contentsOf: chunk[0..<n])
        }
    }

    private func parse(_ head: [UInt8]) -> Request {
        guard let text = String(validating: head, as: UTF8.self) else { return .malformed }
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
        guard !lines.isEmpty else { return .malformed }
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count == 3, requestLine[2].hasPrefix("HTTP/1.") else { return .malformed }
        var headers: [String: String] = [:]
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { return .malformed }
            headers[line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()] =
                line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let target = String(requestLine[1])
        let path = target.split(separator: "?", maxSplits: 1).first.map(String.init) ?? target
        return .request(method: String(requestLine[0]), path: path, headers: headers)
    }

    /// Answers one request; false when the connection must close.
    private func handle(_ client: Int32, method: String, path: String, headers: [String: String], keepAlive: Bool) -> Bool {
        guard method == "GET" || method == "HEAD" else {
            respond(client, status: 405, reason: "Method Not Allowed", extra: ["Allow: GET, HEAD"], close: !keepAlive)
            return keepAlive
        }
        guard let file = file(at: path) else {
            respond(client, status: 404, reason: "Not Found", close: !keepAlive)
            return keepAlive
        }
        let fd = open(file.path, O_RDONLY)
        guard fd >= 0 else {
            respond(client, status: 404, reason: "Not Found", close: !keepAlive)
            return keepAlive
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            respond(client, status: 500, reason: "Internal Server Error", close: true)
            return false
        }
        // A folder (or a device) under a published folder is not a file to send.
        guard info.st_mode & S_IFMT == S_IFREG else {
            respond(client, status: 404, reason: "Not Found", close: !keepAlive)
            return keepAlive
        }
        let size = Int64(info.st_size)
        var start: Int64 = 0
        var end: Int64 = size - 1
        var partial = false
        if let range = headers["range"] {
            guard let parsed = Self.parseRange(range, size: size) else {
                respond(client, status: 416, reason: "Range Not Satisfiable", extra: ["Content-Range: bytes */\(size)"], close: !keepAlive)
                return keepAlive
            }
            (start, end) = parsed
            partial = true
        }
        let length = max(0, end - start + 1)
        var extra = ["Accept-Ranges: bytes", "Content-Type: \(Self.mimeType(file.pathExtension))"]
        if partial { extra.append("Content-Range: bytes \(start)-\(end)/\(size)") }
        respond(client, status: partial ? 206 : 200, reason: partial ? "Partial Content" : "OK",
                extra: extra, contentLength: length, close: !keepAlive)
        if method == "HEAD" { return keepAlive }
        var buffer = [UInt8](repeating: 0, count: Self.chunkBytes)
        var offset = start
        while offset <= end {
            let want = Int(min(Int64(buffer.count), end - offset + 1))
            let got = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, want, off_t(offset)) }
            if got <= 0 { return false }
            if !sendAll(client, buffer, count: got) { return false }
            offset += Int64(got)
        }
        return keepAlive
    }

    /// Parses a single byte range against a file of `size` bytes.
    static func parseRange(_ header: String, size: Int64) -> (Int64, Int64)? {
        guard header.hasPrefix("bytes="), size > 0 else { return nil }
        let spec = header.dropFirst(6)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
        let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        if first.isEmpty {
            guard let suffix = Int64(last), suffix > 0 else { return nil }
            return (max(0, size - suffix), size - 1)
        }
        guard let start = Int64(first), start >= 0, start < size else { return nil }
        if last.isEmpty { return (start, size - 1) }
        guard let end = Int64(last), end >= start else { return nil }
        return (start, min(end, size - 1))
    }

    static func mimeType(_ ext: String) -> String {
        switch ext.lowercased() {
        case "mp3": return "audio/mpeg"
        case "m4a", "mp4", "m4v": return "video/mp4"
        case "flac": return "audio/flac"
        case "ogg", "opus", "oga": return "audio/ogg"
        case "wav": return "audio/wav"
        case "mkv", "webm": return "video/webm"
        default: return "application/octet-stream"
        }
    }

    private func respond(_ client: Int32, status: Int, reason: String, extra: [String] = [],
                         contentLength: Int64 = 0, close: Bool) {
        var lines = ["HTTP/1.1 \(status) \(reason)", "Server: chorus", "Content-Length: \(contentLength)"]
        lines += extra
        lines.append(close ? "Connection: close" : "Connection: keep-alive")
        let text = lines.joined(separator: "\r\n") + "\r\n\r\n"
        let bytes = Array(text.utf8)
        _ = sendAll(client, bytes, count: bytes.count)
    }

    private func sendAll(_ client: Int32, _ bytes: [UInt8], count: Int) -> Bool {
        var sent = 0
        while sent < count {
            let n = bytes.withUnsafeBytes { send(client, $0.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }
}

/// Why the server could not start.
public enum ServerError: Error, CustomStringConvertible {
    case socket(String)
    case badAddress(String)
    public var description: String {
        switch self {
        case .socket(let reason): return "HTTP server: \(reason)"
        case .badAddress(let address): return "HTTP server: bad listen address \(address)"
        }
    }
}
