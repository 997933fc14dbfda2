import Foundation

/// The sockets the tests' own servers share: a listener on the loopback address, and a
/// send that writes all of its bytes.
enum LoopbackSocket {
    /// A TCP socket listening on 127.0.0.1 at a free port; `name` says whose, in an error.
    static func listen(name: String) throws -> (socket: Int32, port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestMediaError.ffmpegFailed(name, "no socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glibc.listen(fd, 16) == 0 else {
            close(fd)
            throw TestMediaError.ffmpegFailed(name, "cannot listen")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, UInt16(bigEndian: actual.sin_port))
    }

    /// Sends all of `data` to `client`; false when the connection fails first.
    static func sendAll(_ client: Int32, _ data: Data) -> Bool {
        data.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return true }
            var sent = 0
            while sent < raw.count {
                let count = send(client, base + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
                if count <= 0 { return false }
                sent += count
            }
            return true
        }
    }

    /// Reads a request's head from `client`, up to its blank line, giving up after
    /// `timeoutSeconds` without a byte; nil when the client closed or went quiet first.
    static func readRequestHead(_ client: Int32, timeoutSeconds: Int = 10) -> String? {
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var request = Data()
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while !request.contains(Data("\r\n\r\n".utf8)) {
            let count = recv(client, &buffer, buffer.count, 0)
            if count <= 0 { return nil }
            request.append(contentsOf: buffer[0..<count])
        }
        return String(decoding: request, as: UTF8.self)
    }

    /// The head of a response serving a file of `size` bytes from byte `start` (the one
    /// `rangeStart(in:size:)` asked for): a whole file, or a range of it, the connection
    /// closed after it.
    static func fileResponseHead(size: Int, from start: Int) -> Data {
        var head = start > 0 ? "HTTP/1.1 206 Partial Content\r\n" : "HTTP/1.1 200 OK\r\n"
        head += "Content-Type: application/octet-stream\r\nAccept-Ranges: bytes\r\nConnection: close\r\n"
        head += "Content-Length: \(size - start)\r\n"
        if start > 0 { head += "Content-Range: bytes \(start)-\(size - 1)/\(size)\r\n" }
        return Data((head + "\r\n").utf8)
    }

    /// The byte `request` asks to start at (`Range: bytes=N-`), at most `size`; 0 without one.
    static func rangeStart(in request: String, size: Int) -> Int {
        guard let range = request.range(of: "Range: bytes=", options: .caseInsensitive) else { return 0 }
        return min(Int(request[range.upperBound...].prefix { $0.isNumber }) ?? 0, size)
    }

    /// The next connection `listener` takes; nil once it is closed (`stopped` then says so)
    /// or fails for good.
    static func nextClient(of listener: Int32, stopped: () -> Bool) -> Int32? {
        while true {
            let client = accept(listener, nil, nil)
            if client >= 0 { return client }
            let error = errno
            if stopped() || error != EINTR { return nil }
        }
    }

    /// Stops `listener` taking connections: shut down, so that a thread in `accept` returns,
    /// and closed.
    static func closeListener(_ listener: Int32) {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }
}
