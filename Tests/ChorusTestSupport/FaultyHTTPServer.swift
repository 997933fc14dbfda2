import Foundation
import MutexAnnotations
import Synchronization

/// A small HTTP/1.1 server on the loopback address that serves one file and misbehaves as
/// told, for tests of streams that a network interrupts: it can hold a response still for a
/// while, cut a connection part-way, or go away for good. Byte ranges (`Range: bytes=N-`)
/// are honoured, so a client can reconnect where it was cut.
public final class FaultyHTTPServer: Sendable {
    /// What goes wrong, once, when a response reaches byte `offset` of the file.
    public enum Fault: Sendable {
        /// Sends nothing for `seconds`, then goes on.
        case stall(atByte: Int, seconds: Double)
        /// Closes that connection; later ones are served.
        case drop(atByte: Int)
        /// Closes that connection and refuses every later one.
        case die(atByte: Int)
    }

    /// The port it listens on.
    public let port: UInt16
    /// The URL of the file it serves.
    public var url: URL { URL(string: "http://127.0.0.1:\(port)/\(name)")! }
    /// How many connections it has taken.
    public var connections: Int { counters.withLockAnnotated { $0.connections } }
    /// The connection (counted from 1) and its first byte, where the fault came, once it has.
    public var faultedOn: (connection: Int, firstByte: Int)? { counters.withLockAnnotated { $0.faultedOn } }

    private let file: Data
    private let name: String
    private let fault: Fault?
    private let listener: Int32
    private let counters = Mutex<(connections: Int, faulted: Bool, dead: Bool, faultedOn: (connection: Int, firstByte: Int)?)>((0, false, false, nil))

    /// Serves `file` (its bytes read now) under its own name, with `fault`.
    public init(serving file: URL, fault: Fault?) throws {
        self.file = try Data(contentsOf: file)
        name = file.lastPathComponent
        self.fault = fault
        (listener, port) = try LoopbackSocket.listen(name: "server")
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "test.http"
        thread.start()
    }

    /// Stops listening.
    public func stop() {
        counters.withLockAnnotated { $0.dead = true }
        LoopbackSocket.closeListener(listener)
    }

    private func acceptLoop() {
        while let client = LoopbackSocket.nextClient(of: listener, stopped: { counters.withLockAnnotated { $0.dead } }) {
            let number = counters.withLockAnnotated { counters -> Int in
                counters.connections += 1
                return counters.connections
            }
            if counters.withLockAnnotated({ $0.dead }) {
                close(client)
                continue
            }
            let thread = Thread { [self] in serve(client, number: number) }
            thread.name = "test.http.conn"
            thread.start()
        }
    }

    private func serve(_ client: Int32, number: Int) {
        defer { close(client) }
        // A small send buffer keeps the server's offset near what the client has read, so a
        // fault at a byte comes when the client reads there (a connection the client opened
        // only to probe, and no longer reads, does not run on to it in the kernel's buffers).
        var sendBuffer: Int32 = 16_384
        setsockopt(client, SOL_SOCKET, SO_SNDBUF, &sendBuffer, socklen_t(MemoryLayout<Int32>.size))
        guard let text = LoopbackSocket.readRequestHead(client) else { return }
        let start = LoopbackSocket.rangeStart(in: text, size: file.count)
        let isHead = text.hasPrefix("HEAD")
        guard LoopbackSocket.sendAll(client, LoopbackSocket.fileResponseHead(size: file.count, from: start)) else { return }
        if isHead { return }
        var offset = start
        let chunk = 16_384
        while offset < file.count {
            // A fault comes at its byte of the file on a connection that has itself sent
            // that far: one opened further on (a probe's look at the end) does not meet it.
            if let fault, !counters.withLockAnnotated({ $0.faulted }) {
                let sentHere = offset - start
                func reached(_ byte: Int) -> Bool {
                    guard offset >= byte, sentHere >= byte - start, start <= byte else { return false }
                    counters.withLockAnnotated { $0.faulted = true; $0.faultedOn = (number, start) }
                    return true
                }
                switch fault {
                case .stall(let at, let seconds) where reached(at):
                    usleep(UInt32(seconds * 1_000_000))
                case .drop(let at) where reached(at):
                    return
                case .die(let at) where reached(at):
                    counters.withLockAnnotated { $0.dead = true }
                    shutdown(listener, Int32(SHUT_RDWR))
                    return
                default:
                    break
                }
            }
            let end = min(offset + chunk, file.count)
            guard LoopbackSocket.sendAll(client, file.subdata(in: offset..<end)) else { return }
            offset = end
        }
    }
}
