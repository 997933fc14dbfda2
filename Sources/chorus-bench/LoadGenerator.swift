import ArgumentParser
import Foundation

/// `chorus-bench load`: keeps the machine busy until killed, the way a compile or another
/// program would while a group plays: busy threads on every core asked for, and a thread
/// that allocates, touches and frees large buffers (page faults, the allocator's locks,
/// memory bandwidth). Run beside a benchmark (`chorus-bench sync --load`) to measure sync
/// under load.
struct LoadGenerator: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load",
        abstract: "Busy-loop threads and a large-buffer allocator, until killed (load for `sync --load`).")

    /// Bytes between touches of a buffer: one page, so every page is faulted in.
    static let pageBytes = 4096

    @Option(name: .long, help: "Busy-loop threads.")
    var busy = 2

    @Option(name: .customLong("churn-mb"), help: "Size of the buffers allocated, touched and freed in a loop (0: none).")
    var churnMegabytes = 50

    func validate() throws {
        guard busy >= 0, busy <= 64 else { throw ValidationError("--busy must be 0 to 64") }
        guard churnMegabytes >= 0, churnMegabytes <= 4096 else { throw ValidationError("--churn-mb must be 0 to 4096") }
    }

    func run() throws {
        for index in 0..<busy {
            let thread = Thread {
                var x: UInt64 = 0x9E37_79B9_7F4A_7C15
                while true {
                    // A xorshift step the optimizer cannot drop: the loop never ends.
                    x ^= x << 13
                    x ^= x >> 7
                    x ^= x << 17
                    if x == 0 { print(x) }
                }
            }
            thread.name = "load.busy.\(index)"
            thread.start()
        }
        let bytes = churnMegabytes * 1024 * 1024
        while bytes > 0 {
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: Self.pageBytes)
            for offset in stride(from: 0, to: bytes, by: Self.pageBytes) {
                buffer.storeBytes(of: UInt8(truncatingIfNeeded: offset >> 12), toByteOffset: offset, as: UInt8.self)
            }
            buffer.deallocate()
        }
        while true { sleep(3600) }
    }
}
