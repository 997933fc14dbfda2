import CKernelClock
import Foundation
import MediaClock
import Synchronization
import MutexAnnotations
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A bound UDP socket with a receive loop on its own thread: the thin I/O adapter around
/// `LeaderCore` and `FollowerCore`.
///
/// Receive times are the kernel's `SO_TIMESTAMPNS` stamps (taken when the packet reached
/// the socket, so they exclude this process's scheduling delay), converted from the
/// kernel's CLOCK_REALTIME to host time by their age (`KernelClock`); without a stamp, the
/// host clock right after `recvmsg`. `sendStamped` also asks the kernel when a datagram
/// left: its software transmit stamp, taken as the driver takes the datagram.
///
/// Thread-safety: `send` may be called from any thread; the handler runs on the socket's
/// receive thread, one datagram at a time. `close` stops the loop and waits for it.
public final class UDPSocket: Sendable {
    /// A received datagram.
    public struct Datagram: Sendable {
        /// The payload.
        public var bytes: [UInt8]
        /// Who sent it.
        public var source: UDPEndpoint
        /// When it arrived, on this host's monotonic clock.
        public var receivedAt: HostTime
        /// `receivedAt` came from the kernel's timestamp.
        public var isKernelTimestamp: Bool
    }

    /// A system call failed.
    public struct SocketError: Error, Sendable, CustomStringConvertible {
        /// What was being done.
        public var operation: String
        /// `errno`.
        public var code: Int32
        /// "bind: Address already in use".
        public var description: String { "\(operation): \(String(cString: strerror(code)))" }
    }

    /// Poll timeout of the receive loop: bounds how long `close` can wait if the wake
    /// pipe write were lost, without busy-waiting.
    static let pollTimeoutMilliseconds: Int32 = 200
    /// Ancillary buffer for one timestamp control message, with room to spare.
    static let controlBufferBytes = 256
    /// A kernel stamp further than this from "now" is treated as bogus (clock stepped
    /// during the conversion) and replaced by the monotonic read after `recvmsg`.
    static let maximumTimestampAge: Duration = .seconds(1)

    private let descriptor: Int32
    /// Whether the socket reports transmit stamps (`sendStamped` returns nil otherwise).
    private let reportsTransmitStamps: Bool
    /// Held while the error queue is read: `sendStamped` takes its own datagram's stamp
    /// straight after sending it, and the receive loop drains whatever is left (a stamp
    /// that came late), since an entry left in the queue would keep `poll` waking. It holds
    /// the descriptor the queue is read through: a mutex of nothing (`Void`) made each
    /// access to its empty value an access at the address of the field after it, which
    /// ThreadSanitizer reported as a race with every read of that field.
    private let errorQueue: Mutex<Int32>
    private let wakePipe: (read: Int32, write: Int32)
    private let state = Mutex<(closed: Bool, started: Bool, loopThread: pthread_t?)>((false, false, nil))
    private let finishedSignal = DispatchSemaphore(value: 0)
    /// The bound address (with the actual port when bound to port 0).
    public let localEndpoint: UDPEndpoint

    /// Opens a socket bound to `endpoint` (port 0 for an ephemeral port). An IPv6
    /// wildcard also receives IPv4 (dual stack).
    public init(bindingTo endpoint: UDPEndpoint) throws(SocketError) {
        let family = endpoint.isIPv6 ? AF_INET6 : AF_INET
        let fd = socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SocketError(operation: "socket", code: errno) }
        var one: Int32 = 1
        var zero: Int32 = 0
        _ = setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, socklen_t(MemoryLayout<Int32>.size))
        if endpoint.isIPv6 {
            _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &zero, socklen_t(MemoryLayout<Int32>.size))
        }
        let bound = endpoint.withSocketAddress { bind(fd, $0, $1) }
        guard bound == 0 else {
            let code = errno
            Glibc.close(fd)
            throw SocketError(operation: "bind \(endpoint)", code: code)
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        var pipeEnds: [Int32] = [0, 0]
        guard named == 0, let local = UDPEndpoint(storage: storage), pipe(&pipeEnds) == 0 else {
            let code = errno
            Glibc.close(fd)
            throw SocketError(operation: "getsockname/pipe", code: code)
        }
        for end in pipeEnds {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        descriptor = fd
        errorQueue = Mutex(fd)
        reportsTransmitStamps = chorus_enable_transmit_stamps(fd) == 0
        wakePipe = (pipeEnds[0], pipeEnds[1])
        localEndpoint = local
    }

    deinit {
        close()
    }

    /// Sends one datagram; returns when the kernel has taken it.
    public func send(_ bytes: [UInt8], to destination: UDPEndpoint) throws(SocketError) {
        let sent = bytes.withUnsafeBytes { buffer in
            destination.withSocketAddress { sendto(descriptor, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL), $0, $1) }
        }
        guard sent >= 0 else { throw SocketError(operation: "sendto \(destination)", code: errno) }
    }

    /// Sends one datagram and returns when it left: the kernel's software transmit stamp,
    /// on this host's monotonic clock. Nil when the kernel gave none by the time `sendmsg`
    /// returned (a driver that stamps later, or a kernel without the option); the caller
    /// then has only its own clock read from before the call.
    ///
    /// Clock requests are sent this way: a request sent after a sleep leaves through cold
    /// code, several µs slower between the clock read and the wire than a reply sent
    /// straight after receiving, and a two-way exchange reads half that as offset.
    public func sendStamped(_ bytes: [UInt8], to destination: UDPEndpoint) throws(SocketError) -> HostTime? {
        let outcome: (sent: Int, code: Int32, stamp: HostTime?) = errorQueue.withLockAnnotated { socket in
            let before = HostTime.now()
            let sent = bytes.withUnsafeBytes { buffer in
                destination.withSocketAddress { chorus_send_stamped(socket, buffer.baseAddress, buffer.count, $0, $1) }
            }
            guard sent >= 0 else { return (sent, errno, nil) }
            guard reportsTransmitStamps else { return (sent, 0, nil) }
            var stamp: HostTime?
            var realtime: Int64 = 0
            while true {
                let taken = chorus_take_transmit_stamp(socket, &realtime)
                if taken <= 0 { break }
                // An older datagram's late stamp can still be queued: only one taken after
                // this call began can be this datagram's.
                if taken == 1, let converted = Self.monotonic(fromRealtime: Int128(realtime), now: HostTime.now()),
                   converted >= before {
                    stamp = converted
                }
            }
            return (sent, 0, stamp)
        }
        guard outcome.sent >= 0 else { throw SocketError(operation: "sendmsg \(destination)", code: outcome.code) }
        return outcome.stamp
    }

    /// Empties the error queue (stamps no `sendStamped` was waiting for any more) and
    /// clears a pending socket error: either keeps `poll` reporting an error, and the loop
    /// would spin.
    private func drainErrorQueue() {
        errorQueue.withLockAnnotated { socket in
            var realtime: Int64 = 0
            while chorus_take_transmit_stamp(socket, &realtime) > 0 {}
            var pending: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            _ = getsockopt(socket, SOL_SOCKET, SO_ERROR, &pending, &length)
        }
    }

    /// Starts the receive thread, calling `handler` for every datagram until `close`.
    /// Call at most once.
    public func startReceiving(name: String = "chorus.sync.receive", _ handler: @escaping @Sendable (Datagram) -> Void) {
        let started = state.withLockAnnotated { current -> Bool in
            guard !current.closed, !current.started else { return false }
            current.started = true
            return true
        }
        guard started else { return }
        let thread = Thread { [self] in
            state.withLockAnnotated { $0.loopThread = pthread_self() }
            receiveLoop(handler)
            finishedSignal.signal()
        }
        thread.name = name
        thread.start()
    }

    /// Stops the receive loop (waking it), waits for it to end, and closes the socket.
    /// Idempotent.
    public func close() {
        let (alreadyClosed, started, loopThread) = state.withLockAnnotated { current -> (Bool, Bool, pthread_t?) in
            defer { current.closed = true }
            return (current.closed, current.started, current.loopThread)
        }
        guard !alreadyClosed else { return }
        var byte: UInt8 = 1
        _ = write(wakePipe.write, &byte, 1)
        // From the handler itself the loop ends after the handler returns; never wait on it.
        if started, loopThread.map({ pthread_equal($0, pthread_self()) == 0 }) ?? true {
            finishedSignal.wait()
        }
        Glibc.close(descriptor)
        Glibc.close(wakePipe.read)
        Glibc.close(wakePipe.write)
    }

    private func receiveLoop(_ handler: (Datagram) -> Void) {
        var buffer = [UInt8](repeating: 0, count: WireCodec.maximumDatagramBytes)
        var control = [UInt8](repeating: 0, count: Self.controlBufferBytes)
        while !state.withLockAnnotated({ $0.closed }) {
            var fds = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wakePipe.read, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, Self.pollTimeoutMilliseconds)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { continue }
            if fds[1].revents != 0 { break }
            if fds[0].revents & Int16(POLLERR) != 0 { drainErrorQueue() }
            guard fds[0].revents & Int16(POLLIN) != 0 else { continue }
            if let datagram = receiveOne(buffer: &buffer, control: &control) {
                handler(datagram)
            }
        }
    }

    private func receiveOne(buffer: inout [UInt8], control: inout [UInt8]) -> Datagram? {
        var storage = sockaddr_storage()
        let (count, controlLength): (Int, Int) = buffer.withUnsafeMutableBytes { data in
            control.withUnsafeMutableBytes { controlBytes in
                withUnsafeMutablePointer(to: &storage) { address in
                    var vector = iovec(iov_base: data.baseAddress, iov_len: data.count)
                    return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                        var header = msghdr()
                        header.msg_name = UnsafeMutableRawPointer(address)
                        header.msg_namelen = socklen_t(MemoryLayout<sockaddr_storage>.size)
                        header.msg_iov = vectorPointer
                        header.msg_iovlen = 1
                        header.msg_control = controlBytes.baseAddress
                        header.msg_controllen = controlBytes.count
                        let received = recvmsg(descriptor, &header, Int32(MSG_DONTWAIT))
                        return (received, Int(header.msg_controllen))
                    }
                }
            }
        }
        let afterReceive = HostTime.now()
        guard count >= 0, let source = UDPEndpoint(storage: storage) else { return nil }
        let stamp = Self.kernelTimestamp(control, length: controlLength)
        let receivedAt = stamp.flatMap { Self.monotonic(fromRealtime: $0, now: afterReceive) }
        return Datagram(
            bytes: Array(buffer[0..<min(count, buffer.count)]), source: source,
            receivedAt: receivedAt ?? afterReceive, isKernelTimestamp: receivedAt != nil
        )
    }

    /// Walks the control messages by hand (the CMSG macros are not importable) and
    /// returns the SCM_TIMESTAMPNS realtime stamp in nanoseconds, if present.
    static func kernelTimestamp(_ control: [UInt8], length: Int) -> Int128? {
        let alignment = MemoryLayout<Int>.size
        let headerSize = MemoryLayout<cmsghdr>.size
        let end = min(length, control.count)
        var offset = 0
        while offset + headerSize <= end {
            let header = control.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: cmsghdr.self) }
            let messageLength = Int(header.cmsg_len)
            guard messageLength >= headerSize, offset + messageLength <= end else { return nil }
            if header.cmsg_level == SOL_SOCKET, header.cmsg_type == SO_TIMESTAMPNS,
               messageLength - headerSize >= MemoryLayout<timespec>.size {
                let spec = control.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + headerSize, as: timespec.self) }
                return Int128(spec.tv_sec) * 1_000_000_000 + Int128(spec.tv_nsec)
            }
            offset += (messageLength + alignment - 1) / alignment * alignment
        }
        return nil
    }

    /// Converts a kernel CLOCK_REALTIME stamp to host time by its age on the kernel's clock
    /// (see `KernelClock`): right whether or not the process's own clock reads are moved by
    /// a tool like libfaketime, and unaffected by the realtime clock's offset from the
    /// monotonic one. Nil when the age is implausible (the realtime clock was stepped).
    static func monotonic(fromRealtime stamp: Int128, now: HostTime) -> HostTime? {
        guard let converted = KernelClock.hostTime(ofStamp: stamp, on: CLOCK_REALTIME, maximumAge: maximumTimestampAge) else {
            return nil
        }
        // `now` was read first: never report a time after it.
        return min(converted, now)
    }
}
