import Foundation
import MutexAnnotations
import Synchronization

/// An Internet radio station as Icecast serves one, on the loopback address: one broadcast
/// that runs from the moment the server starts, which each listener joins where it then
/// stands (with a little before it, as stations send at once to fill a player's buffer) and
/// then receives at the broadcast's own pace, for ever, over a response with no length.
/// Two listeners that connect a second apart hear it a second apart, and nothing in what
/// they read says so.
public final class StationServer: Sendable {
    /// Seconds of the broadcast sent at once to a new listener, before the present.
    public static let burstSeconds = 1.0
    /// How often the broadcast's bytes go out to a listener, in seconds.
    static let sendInterval = 0.05

    /// The port it listens on.
    public let port: UInt16
    /// The station's address.
    public var url: URL { URL(string: "http://127.0.0.1:\(port)/station.mp3")! }
    /// Listeners that have connected.
    public var connections: Int { state.withLockAnnotated { $0.connections } }

    /// Bytes of sound between two ICY metadata blocks, for a listener that asks for them.
    public static let icyInterval = 8_000

    /// The broadcast second at which each listener joined (the first second it was sent).
    public var joinedAt: [Double] { state.withLockAnnotated { $0.joinedAt } }
    /// The titles announced to listeners, each with the broadcast second of the sound that
    /// followed its block (a title is announced at the first block after its second).
    public var announced: [(title: String, second: Double)] { state.withLockAnnotated { $0.announced } }

    private let broadcast: Data
    private let contentType: String
    private let dropAfter: Double?
    /// The titles announced, each from a second of the broadcast, in order.
    private let titles: [(second: Double, title: String)]
    private let bytesPerSecond: Double
    private let started = ContinuousClock.now
    private let listener: Int32
    private let state = Mutex<(connections: Int, stopped: Bool, joinedAt: [Double], announced: [(title: String, second: Double)])>((0, false, [], []))

    /// Broadcasts `file` (a constant-rate stream `seconds` long) over and over, from now;
    /// each listener's connection is dropped after `dropAfter` seconds, when given (a
    /// station's network failing now and then). `titles` are announced in ICY metadata, each
    /// from its second of the broadcast, to listeners that ask for it (`Icy-MetaData: 1`).
    /// The response names `contentType`.
    public init(broadcasting file: URL, seconds: Double, dropAfter: Double? = nil,
                titles: [(second: Double, title: String)] = [], contentType: String = "audio/mpeg") throws {
        self.dropAfter = dropAfter
        self.contentType = contentType
        self.titles = titles
        broadcast = try Data(contentsOf: file)
        bytesPerSecond = Double(broadcast.count) / seconds
        (listener, port) = try LoopbackSocket.listen(name: "station")
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "test.station"
        thread.start()
    }

    /// Goes off the air: stops listening and ends every listener's response.
    public func stop() {
        state.withLockAnnotated { $0.stopped = true }
        LoopbackSocket.closeListener(listener)
    }

    /// The broadcast's byte now, counted from its start (it runs on past the file's end).
    private func present() -> Int {
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        return Int(seconds * bytesPerSecond)
    }

    private func acceptLoop() {
        while let client = LoopbackSocket.nextClient(of: listener, stopped: { state.withLockAnnotated { $0.stopped } }) {
            state.withLockAnnotated { $0.connections += 1 }
            let thread = Thread { [self] in serve(client) }
            thread.name = "test.station.listener"
            thread.start()
        }
    }

    /// An ICY metadata block announcing `title`: its length in 16-byte units, then the
    /// text padded with zeros; a lone zero when there is nothing new.
    static func icyBlock(_ title: String?) -> Data {
        guard let title else { return Data([0]) }
        var text = Array("StreamTitle='\(title)';".utf8)
        let units = (text.count + 15) / 16
        text += [UInt8](repeating: 0, count: units * 16 - text.count)
        return Data([UInt8(units)] + text)
    }

    private func serve(_ client: Int32) {
        defer { close(client) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard let text = LoopbackSocket.readRequestHead(client) else { return }
        let wantsTitles = !titles.isEmpty && text.lowercased().contains("icy-metadata: 1")
        let header = "HTTP/1.0 200 OK\r\nContent-Type: \(contentType)\r\nicy-name: Chorus test station\r\nCache-Control: no-cache\r\n"
            + (wantsTitles ? "icy-metaint: \(Self.icyInterval)\r\n" : "") + "\r\n"
        guard LoopbackSocket.sendAll(client, Data(header.utf8)) else { return }
        if text.hasPrefix("HEAD") { return }
        var next = max(0, present() - Int(Self.burstSeconds * bytesPerSecond))
        state.withLockAnnotated { $0.joinedAt.append(Double(next) / bytesPerSecond) }
        let connected = ContinuousClock.now
        var sinceBlock = 0
        var announced: String?
        while !state.withLockAnnotated({ $0.stopped }) {
            if let dropAfter, ContinuousClock.now - connected > .milliseconds(Int64(dropAfter * 1_000)) { return }
            let upTo = present()
            while next < upTo {
                let offset = next % broadcast.count
                var end = min(broadcast.count, offset + (upTo - next))
                if wantsTitles { end = min(end, offset + Self.icyInterval - sinceBlock) }
                guard LoopbackSocket.sendAll(client, broadcast.subdata(in: offset..<end)) else { return }
                next += end - offset
                sinceBlock += end - offset
                if wantsTitles && sinceBlock == Self.icyInterval {
                    sinceBlock = 0
                    let title = titles.last { $0.second <= Double(next) / bytesPerSecond }?.title
                    guard LoopbackSocket.sendAll(client, Self.icyBlock(title == announced ? nil : title)) else { return }
                    if let title, title != announced {
                        state.withLockAnnotated { $0.announced.append((title, Double(next) / bytesPerSecond)) }
                    }
                    announced = title
                }
            }
            usleep(UInt32(Self.sendInterval * 1_000_000))
        }
    }
}
