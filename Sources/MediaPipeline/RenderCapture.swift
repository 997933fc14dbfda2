import Foundation
import Synchronization
import MediaClock

/// A record of every frame rendered: for each period, when its first frame is heard (real
/// CLOCK_MONOTONIC time, before any simulated node clock) and which item position it holds.
/// When a tool such as libfaketime moves the process's clock, times are converted to the
/// kernel's own CLOCK_MONOTONIC (`KernelClock`), so captures still share one clock.
///
/// This is how benchmarks and tests see the truth of a group: captures from several
/// processes on one machine share the real clock, so the same item frame's presentation
/// times can be compared across them.
///
/// Real-time contract: `record` is called from the render thread; it writes into a
/// preallocated ring and never blocks (a full ring drops records and counts them). A writer
/// thread drains the ring into the file as text lines:
/// `host_ns position_frames frames sample_rate serial smoothed_ns rate` (and, for each picture
/// a display presented, `V host_ns item_ns number serial`): host_ns is the
/// device's own report, smoothed_ns the smoothed line playback was placed by (the same for a
/// device whose reports are exact), rate the item frames played per frame heard (1 at
/// normal speed, so a period's content moves on by `frames × rate`).
// @unchecked: the record buffer is raw memory shared by one producer (the render thread)
// and one consumer (the writer thread), each record owned by one side at a time through the
// release/acquire `written` and `read` counters; the file is the writer thread's.
public final class RenderCapture: @unchecked Sendable {
    struct Record {
        var hostNanoseconds: Int64
        var smoothedNanoseconds: Int64
        var position: Double
        var frames: Int32
        var sampleRate: Int32
        var serial: Int32
        var rate: Double
    }

    /// One picture a display presented.
    struct PictureRecord {
        var hostNanoseconds: Int64
        var itemNanoseconds: Int64
        var number: Int64
        var serial: Int32
    }

    /// Records held before the writer drains them: at 100 periods a second, 30 s of slack.
    static let capacity = 4096
    /// How often the writer wakes to drain the ring.
    static let drainInterval: useconds_t = 50_000

    public let path: String
    private let records: UnsafeMutablePointer<Record>
    private let written = Atomic<Int>(0)
    private let read = Atomic<Int>(0)
    private let dropped = Atomic<Int>(0)
    /// The pictures' ring, as the periods' (its one producer is the display's thread).
    private let pictures: UnsafeMutablePointer<PictureRecord>
    private let picturesWritten = Atomic<Int>(0)
    private let picturesRead = Atomic<Int>(0)
    private let running = Atomic<Bool>(true)
    private let finished = DispatchSemaphore(value: 0)
    private let file: FileHandle

    /// Opens (truncates) `path` and starts the writer thread.
    public init(path: String) throws(MediaError) {
        self.path = path
        guard FileManager.default.createFile(atPath: path, contents: nil),
              let handle = FileHandle(forWritingAtPath: path) else {
            throw .outputFailure(device: "capture:\(path)", reason: "cannot create the file")
        }
        file = handle
        records = .allocate(capacity: Self.capacity)
        pictures = .allocate(capacity: Self.capacity)
        let thread = Thread { [self] in
            while running.load(ordering: .acquiring) {
                drain()
                usleep(Self.drainInterval)
            }
            drain()
            finished.signal()
        }
        thread.name = "chorus.capture"
        thread.start()
    }

    deinit {
        records.deallocate()
        pictures.deallocate()
    }

    /// Records lost because the writer fell behind.
    public var droppedRecords: Int { dropped.load(ordering: .relaxed) }

    /// Notes that item position `position` (fractional frames) is heard at real host time
    /// `hostNanoseconds` by the device's report (`smoothedNanoseconds` by the smoothed line),
    /// for `frames` frames. Render thread only.
    func record(hostNanoseconds: Int64, smoothedNanoseconds: Int64, position: Double, frames: Int, sampleRate: Int, serial: Int,
                rate: Double) {
        let index = written.load(ordering: .relaxed)
        guard index - read.load(ordering: .acquiring) < Self.capacity else {
            dropped.add(1, ordering: .relaxed)
            return
        }
        let shift = kernelShift()
        records[index % Self.capacity] = Record(hostNanoseconds: hostNanoseconds &+ shift, smoothedNanoseconds: smoothedNanoseconds &+ shift,
                                                position: position, frames: Int32(frames), sampleRate: Int32(sampleRate),
                                                serial: Int32(truncatingIfNeeded: serial), rate: rate)
        written.store(index + 1, ordering: .releasing)
    }

    /// Notes that the picture numbered `number`, due at `itemNanoseconds` of item time, was
    /// presented at real host time `hostNanoseconds`. The display's thread only (one per
    /// process); written as a line `V host_ns item_ns number serial`.
    public func recordPicture(hostNanoseconds: Int64, itemNanoseconds: Int64, number: Int64, serial: Int) {
        let index = picturesWritten.load(ordering: .relaxed)
        guard index - picturesRead.load(ordering: .acquiring) < Self.capacity else {
            dropped.add(1, ordering: .relaxed)
            return
        }
        pictures[index % Self.capacity] = PictureRecord(hostNanoseconds: hostNanoseconds &+ kernelShift(), itemNanoseconds: itemNanoseconds,
                                                        number: number, serial: Int32(truncatingIfNeeded: serial))
        picturesWritten.store(index + 1, ordering: .releasing)
    }

    /// A process clock further than this from the kernel's (ns) is a moved clock, not the
    /// sub-microsecond gap between two reads of the same one.
    static let movedClockThreshold: Int64 = 1_000_000

    /// Kernel CLOCK_MONOTONIC minus host time now (ns): 0 unless the process's clock is moved.
    private func kernelShift() -> Int64 {
        let host = HostTime.now()
        guard let kernel = KernelClock.nanoseconds(CLOCK_MONOTONIC) else { return 0 }
        let shift = Int64(clamping: kernel - Int128(host.nanoseconds))
        return abs(shift) > Self.movedClockThreshold ? shift : 0
    }

    private func drain() {
        var text = ""
        var index = read.load(ordering: .relaxed)
        let end = written.load(ordering: .acquiring)
        while index < end {
            let r = records[index % Self.capacity]
            text += "\(r.hostNanoseconds) \(String(format: "%.4f", r.position)) \(r.frames) \(r.sampleRate) \(r.serial) \(r.smoothedNanoseconds) \(String(format: "%.6f", r.rate))\n"
            index += 1
        }
        read.store(index, ordering: .releasing)
        var picture = picturesRead.load(ordering: .relaxed)
        let picturesEnd = picturesWritten.load(ordering: .acquiring)
        while picture < picturesEnd {
            let r = pictures[picture % Self.capacity]
            text += "V \(r.hostNanoseconds) \(r.itemNanoseconds) \(r.number) \(r.serial)\n"
            picture += 1
        }
        picturesRead.store(picture, ordering: .releasing)
        if !text.isEmpty { file.write(Data(text.utf8)) }
    }

    /// Stops the writer after it has written everything recorded.
    public func close() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        finished.wait()
        try? file.close()
    }
}
