import Foundation
import Testing
import ChorusTestSupport
@testable import MediaServer
@testable import MediaPipeline

@Suite(.ownThread) struct MediaHTTPServerTests {
    /// Sends `request` to the server on loopback and returns the whole response.
    func exchange(_ port: UInt16, _ request: String) throws -> (head: String, body: Data) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr)
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(connected == 0)
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let bytes = Array(request.utf8)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            data.append(contentsOf: chunk[0..<n])
        }
        guard let split = data.range(of: Data("\r\n\r\n".utf8)) else { return (String(decoding: data, as: UTF8.self), Data()) }
        return (String(decoding: data[..<split.lowerBound], as: UTF8.self), data[split.upperBound...])
    }

    /// A client that trickles its request header a byte at a time, each well inside the
    /// per-read timeout, is cut off once the header's own time is up.
    @Test func aTrickledHeaderIsCutOff() throws {
        let server = try MediaHTTPServer(address: "127.0.0.1", port: 0, headerTimeout: .milliseconds(500))
        defer { server.stop() }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = server.port.bigEndian
        inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr)
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(connected == 0)
        var closedAfter: Int?
        for (index, byte) in Array("GET /0 HTTP/1.1\r\nHost: x\r\n".utf8).enumerated() {
            var value = byte
            if send(fd, &value, 1, Int32(MSG_NOSIGNAL)) != 1 { closedAfter = index; break }
            usleep(150_000)
            var probe: UInt8 = 0
            if recv(fd, &probe, 1, Int32(MSG_DONTWAIT)) == 0 { closedAfter = index; break }
        }
        // 150 ms a byte: the 500 ms budget is spent by the fourth or fifth byte.
        let cut = try #require(closedAfter, "the server kept the trickling connection open")
        #expect(cut <= 8, "cut off after \(cut) bytes")
    }

    func served() throws -> (MediaHTTPServer, String, Data) {
        let server = try MediaHTTPServer(address: "127.0.0.1", port: 0)
        let file = try TestMedia.tone(.mp3, seconds: 2)
        let path = server.publish(file, id: "0")
        return (server, path, try Data(contentsOf: file))
    }

    @Test func servesWholeFilesAndRanges() throws {
        let (server, path, contents) = try served()
        defer { server.stop() }
        let whole = try exchange(server.port, "GET \(path) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(whole.head.hasPrefix("HTTP/1.1 200"))
        #expect(whole.body == contents)
        let range = try exchange(server.port, "GET \(path) HTTP/1.1\r\nRange: bytes=100-199\r\nConnection: close\r\n\r\n")
        #expect(range.head.hasPrefix("HTTP/1.1 206"))
        #expect(range.head.contains("Content-Range: bytes 100-199/\(contents.count)"))
        #expect(range.body == contents[100..<200])
        let tail = try exchange(server.port, "GET \(path) HTTP/1.1\r\nRange: bytes=-10\r\nConnection: close\r\n\r\n")
        #expect(tail.body == contents.suffix(10))
        let head = try exchange(server.port, "HEAD \(path) HTTP/1.1\r\nConnection: close\r\n\r\n")
        #expect(head.head.contains("Content-Length: \(contents.count)"))
        #expect(head.body.isEmpty)
    }

    @Test func refusesWhatItDoesNotServe() throws {
        let (server, path, contents) = try served()
        defer { server.stop() }
        #expect(try exchange(server.port, "GET /etc/passwd HTTP/1.1\r\nConnection: close\r\n\r\n").head.hasPrefix("HTTP/1.1 404"))
        #expect(try exchange(server.port, "GET /items/0/../../etc/passwd HTTP/1.1\r\nConnection: close\r\n\r\n").head.hasPrefix("HTTP/1.1 404"))
        #expect(try exchange(server.port, "DELETE \(path) HTTP/1.1\r\nConnection: close\r\n\r\n").head.hasPrefix("HTTP/1.1 405"))
        #expect(try exchange(server.port, "GET \(path) HTTP/1.1\r\nRange: bytes=\(contents.count)-\r\nConnection: close\r\n\r\n").head.hasPrefix("HTTP/1.1 416"))
        #expect(try exchange(server.port, "NONSENSE\r\n\r\n").head.hasPrefix("HTTP/1.1 400"))
    }

    @Test func ffmpegPlaysWhatItServes() throws {
        let (server, path, _) = try served()
        defer { server.stop() }
        let url = "http://127.0.0.1:\(server.port)\(path)"
        let info = try MediaSource(url: url).info
        #expect(abs(info.duration.seconds - 2) < 0.1)
        #expect(info.isSeekable)
        #expect(info.preferredAudioTrack?.codec == "mp3")
    }

    @Test("a published HLS playlist brings its folder: FFmpeg plays it through the server, and nothing outside the folder is served")
    func aPlaylistsFolderIsServed() throws {
        let hls = try TestMedia.hls(seconds: 4)
        let server = try MediaHTTPServer(address: "127.0.0.1", port: 0)
        defer { server.stop() }
        let path = server.publishFolder(of: hls.folder.appendingPathComponent("index.m3u8"), id: "7")
        #expect(path == "/items/7/index.m3u8")
        let info = try MediaSource(url: "http://127.0.0.1:\(server.port)\(path)").info
        #expect(abs(info.duration.seconds - 4) < 0.1)
        #expect(info.preferredAudioTrack != nil)
        let segment = try exchange(server.port, "GET /items/7/\(hls.segments[0]) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(segment.head.hasPrefix("HTTP/1.1 200"))
        // Out of the folder, hidden files, the folder itself, and files that are not there.
        for escape in ["/items/7/../hls-4.0-1/index.m3u8", "/items/7/%2E%2E/x", "/items/7/.hidden", "/items/7/", "/items/7/missing.ts",
                       "/items/7/a//b"] {
            let response = try exchange(server.port, "GET \(escape) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            #expect(response.head.hasPrefix("HTTP/1.1 404"), "\(escape): \(response.head)")
        }
    }

    @Test func rangeParsing() {
        #expect(MediaHTTPServer.parseRange("bytes=0-0", size: 10)! == (0, 0))
        #expect(MediaHTTPServer.parseRange("bytes=5-", size: 10)! == (5, 9))
        #expect(MediaHTTPServer.parseRange("bytes=5-100", size: 10)! == (5, 9))
        #expect(MediaHTTPServer.parseRange("bytes=-3", size: 10)! == (7, 9))
        #expect(MediaHTTPServer.parseRange("bytes=10-", size: 10) == nil)
        #expect(MediaHTTPServer.parseRange("bytes=3-2", size: 10) == nil)
        #expect(MediaHTTPServer.parseRange("bytes=0-1,4-5", size: 10) == nil)
        #expect(MediaHTTPServer.parseRange("items=0-1", size: 10) == nil)
    }
}
