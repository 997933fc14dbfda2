import Foundation
import MutexAnnotations
import Synchronization

/// A small HTTP/1.1 server on the loopback address that serves a folder's files no faster
/// than a rate that can be changed while it runs, as a slow or congested link would bring
/// them: for tests of a player that moves between an HLS playlist's variants by what its
/// network brings. The rate is the link's, shared by every response under way (one
/// connection a request), as one link's capacity is; each socket's send buffer is kept
/// small, so the pace is what the client reads.
public final class ThrottledHTTPServer: Sendable {
    /// The port it listens on.
    public let port: UInt16
    private let folder: URL
    private let listener: Int32
    private let state = Mutex<(bytesPerSecond: Int, requests: [String], heads: [String], stopped: Bool, linkFreeAt: Date,
                               redirects: [String: String])>((0, [], [], false, .distantPast, [:]))

    /// The pieces a response is sent in, bytes: small, so the pace is smooth at a few kB/s.
    static let pieceBytes = 1_024

    /// Serves the files under `folder` at `bytesPerSecond` (0: as fast as it can).
    public init(serving folder: URL, bytesPerSecond: Int) throws {
        self.folder = folder
        (listener, port) = try LoopbackSocket.listen(name: "throttled server")
        state.withLockAnnotated { $0.bytesPerSecond = bytesPerSecond }
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "test.http.throttled"
        thread.start()
    }

    /// The URL of `name` under the folder.
    public func url(_ name: String) -> String { "http://127.0.0.1:\(port)/\(name)" }

    /// A server of `file`'s folder at `bytesPerSecond`, and the URL of `file` on it.
    public static func serving(_ file: URL, bytesPerSecond: Int) throws -> (server: ThrottledHTTPServer, url: URL) {
        let server = try ThrottledHTTPServer(serving: file.deletingLastPathComponent(), bytesPerSecond: bytesPerSecond)
        guard let url = URL(string: server.url(file.lastPathComponent)) else {
            server.stop()
            throw CocoaError(.fileReadInvalidFileName)
        }
        return (server, url)
    }

    /// The rate responses are sent at from now on, bytes a second (0: as fast as it can).
    public var bytesPerSecond: Int {
        get { state.withLockAnnotated { $0.bytesPerSecond } }
        set { state.withLockAnnotated { $0.bytesPerSecond = newValue } }
    }

    /// Sends a request for `path` (under the folder) to `location` with a 302, as a
    /// content network sends a player from the address it was given to where a stream is.
    public func redirect(_ path: String, to location: String) {
        state.withLockAnnotated { $0.redirects[path] = location }
    }

    /// The paths asked for so far, in order.
    public var requests: [String] { state.withLockAnnotated { $0.requests } }

    /// The requests' heads so far (request line and header fields), in order.
    public var requestHeads: [String] { state.withLockAnnotated { $0.heads } }

    /// Stops listening.
    public func stop() {
        state.withLockAnnotated { $0.stopped = true }
        LoopbackSocket.closeListener(listener)
    }

    private func acceptLoop() {
        while let client = LoopbackSocket.nextClient(of: listener, stopped: { state.withLockAnnotated { $0.stopped } }) {
            let thread = Thread { [self] in serve(client) }
            thread.name = "test.http.throttled.conn"
            thread.start()
        }
    }

    private func serve(_ client: Int32) {
        defer { close(client) }
        var sendBuffer: Int32 = 4_096
        setsockopt(client, SOL_SOCKET, SO_SNDBUF, &sendBuffer, socklen_t(MemoryLayout<Int32>.size))
        guard let text = LoopbackSocket.readRequestHead(client) else { return }
        let line = text.prefix { $0 != "\r" }.split(separator: " ")
        guard line.count >= 2 else { return }
        let path = String(line[1].drop { $0 == "/" }.prefix { $0 != "?" })
        let redirect = state.withLockAnnotated { state -> String? in
            state.requests.append(path)
            state.heads.append(text)
            return state.redirects[path]
        }
        if let redirect {
            _ = LoopbackSocket.sendAll(client, Data("HTTP/1.1 302 Found\r\nLocation: \(redirect)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
            return
        }
        guard !path.contains(".."), let file = try? Data(contentsOf: folder.appendingPathComponent(path)) else {
            _ = LoopbackSocket.sendAll(client, Data("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
            return
        }
        let start = LoopbackSocket.rangeStart(in: text, size: file.count)
        guard LoopbackSocket.sendAll(client, LoopbackSocket.fileResponseHead(size: file.count, from: start)) else { return }
        if text.hasPrefix("HEAD") { return }
        var offset = start
        while offset < file.count {
            let end = min(offset + Self.pieceBytes, file.count)
            // The piece takes the link for its length at the rate: it goes once the link is
            // free of the pieces booked before it, by this response or another.
            let due = state.withLockAnnotated { state -> Date in
                guard state.bytesPerSecond > 0 else { return .distantPast }
                let now = Date()
                let from = max(state.linkFreeAt, now)
                state.linkFreeAt = from.addingTimeInterval(Double(end - offset) / Double(state.bytesPerSecond))
                return from
            }
            var wait = due.timeIntervalSinceNow
            while wait > 0 {
                usleep(UInt32(min(wait, 1) * 1_000_000))
                wait = due.timeIntervalSinceNow
            }
            guard LoopbackSocket.sendAll(client, file.subdata(in: offset..<end)) else { return }
            offset = end
        }
    }
}
