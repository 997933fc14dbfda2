import Foundation
import MediaPipeline
import MutexAnnotations
import Synchronization

/// CoreVideo's four-character codes for pixel formats.
public typealias OSType = UInt32
/// CoreFoundation's seconds, as `CACurrentMediaTime()` returns them.
public typealias CFTimeInterval = Double

/// The host clock now, in seconds (CLOCK_MONOTONIC, the clock host times are on), as Core
/// Animation's `CACurrentMediaTime()`: what `itemTime(forHostTime:)` takes.
public func CACurrentMediaTime() -> CFTimeInterval {
    Double(HostTime.now().nanoseconds) / 1e9
}

/// CoreVideo's status code; `kCVReturnSuccess` is 0.
public typealias CVReturn = Int32
/// The status of a call that succeeded.
public let kCVReturnSuccess: CVReturn = 0
/// I420 ('y420'): Y, then U and V planes at half width and height.
public let kCVPixelFormatType_420YpCbCr8Planar: OSType = 0x7934_3230
/// NV12 ('420v'): Y, then interleaved CbCr at half width and height, video range.
public let kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange: OSType = 0x3432_3076
/// Packed BGRA ('BGRA'), 8 bits a component.
public let kCVPixelFormatType_32BGRA: OSType = 0x4247_5241
/// The key of `pixelBufferAttributes` that names the wanted pixel format(s).
public let kCVPixelBufferPixelFormatTypeKey = "PixelFormatType"

/// A decoded picture an application can draw from: CoreVideo's pixel buffer, with its
/// planes in memory of its own. Read it through the `CVPixelBufferGet…` functions, as on
/// Apple's platforms.
public final class CVPixelBuffer: Sendable {
    let picture: PictureCopy
    /// The buffer's pixel format, one of the `kCVPixelFormatType_…` codes.
    public let pixelFormatType: OSType

    init(picture: PictureCopy) {
        self.picture = picture
        switch picture.layout {
        case .yuv420p: pixelFormatType = kCVPixelFormatType_420YpCbCr8Planar
        case .nv12: pixelFormatType = kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
        case .bgra: pixelFormatType = kCVPixelFormatType_32BGRA
        }
    }
}

/// Apple's lock flags; the buffers are immutable here, so locking is a formality.
public struct CVPixelBufferLockFlags: OptionSet, Sendable {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public static let readOnly = CVPixelBufferLockFlags(rawValue: 1)
}

/// Locks the buffer's memory for reading (always succeeds: the buffer never changes).
public func CVPixelBufferLockBaseAddress(_ buffer: CVPixelBuffer, _ flags: CVPixelBufferLockFlags) -> CVReturn { kCVReturnSuccess }
/// Undoes `CVPixelBufferLockBaseAddress`.
public func CVPixelBufferUnlockBaseAddress(_ buffer: CVPixelBuffer, _ flags: CVPixelBufferLockFlags) -> CVReturn { kCVReturnSuccess }
/// The picture's width in pixels.
public func CVPixelBufferGetWidth(_ buffer: CVPixelBuffer) -> Int { buffer.picture.width }
/// The picture's height in pixels.
public func CVPixelBufferGetHeight(_ buffer: CVPixelBuffer) -> Int { buffer.picture.height }
/// The buffer's `kCVPixelFormatType_…` code.
public func CVPixelBufferGetPixelFormatType(_ buffer: CVPixelBuffer) -> OSType { buffer.pixelFormatType }
/// Whether the buffer has planes (I420, NV12) rather than packed pixels (BGRA).
public func CVPixelBufferIsPlanar(_ buffer: CVPixelBuffer) -> Bool { buffer.picture.layout.planeCount > 1 }
/// Planes of a planar buffer; 0 for a packed one, as on Apple's platforms.
public func CVPixelBufferGetPlaneCount(_ buffer: CVPixelBuffer) -> Int {
    buffer.picture.layout.planeCount > 1 ? buffer.picture.layout.planeCount : 0
}
/// The first byte of a packed buffer (of the first plane of a planar one).
public func CVPixelBufferGetBaseAddress(_ buffer: CVPixelBuffer) -> UnsafeMutableRawPointer? { buffer.picture.baseAddress(ofPlane: 0) }
/// Bytes from one row to the next of a packed buffer (of the first plane of a planar one).
public func CVPixelBufferGetBytesPerRow(_ buffer: CVPixelBuffer) -> Int { buffer.picture.bytesPerRow.first ?? 0 }
/// The first byte of plane `plane`; nil past the last plane.
public func CVPixelBufferGetBaseAddressOfPlane(_ buffer: CVPixelBuffer, _ plane: Int) -> UnsafeMutableRawPointer? {
    buffer.picture.baseAddress(ofPlane: plane)
}
/// Bytes from one row of plane `plane` to the next; 0 past the last plane.
public func CVPixelBufferGetBytesPerRowOfPlane(_ buffer: CVPixelBuffer, _ plane: Int) -> Int {
    buffer.picture.bytesPerRow.indices.contains(plane) ? buffer.picture.bytesPerRow[plane] : 0
}
/// Rows of plane `plane`; 0 past the last plane.
public func CVPixelBufferGetHeightOfPlane(_ buffer: CVPixelBuffer, _ plane: Int) -> Int {
    buffer.picture.rows.indices.contains(plane) ? buffer.picture.rows[plane] : 0
}
/// Samples a row of plane `plane` holds (a chroma plane is half the picture's width); 0 past the last plane.
public func CVPixelBufferGetWidthOfPlane(_ buffer: CVPixelBuffer, _ plane: Int) -> Int {
    guard buffer.picture.bytesPerRow.indices.contains(plane) else { return 0 }
    switch buffer.picture.layout {
    case .bgra: return buffer.picture.width
    case .yuv420p: return plane == 0 ? buffer.picture.width : (buffer.picture.width + 1) / 2
    case .nv12: return plane == 0 ? buffer.picture.width : (buffer.picture.width + 1) / 2
    }
}

/// The base of an item's outputs, as Apple's `AVPlayerItemOutput`.
open class AVPlayerItemOutput: @unchecked Sendable {
    // @unchecked only because the class is open; its state is in `attachment`, a Mutex.
    struct Attachment {
        weak var item: AVPlayerItem?
    }
    let attachment = Mutex(Attachment())

    init() {}

    /// The item time the item's timeline reaches at `hostTimeInSeconds` (CLOCK_MONOTONIC
    /// seconds, the clock `CACurrentMediaTime()` reads on Apple's platforms); invalid while the
    /// output is not added to an item that plays.
    public func itemTime(forHostTime hostTimeInSeconds: CFTimeInterval) -> CMTime {
        guard let player = attachment.withLockAnnotated({ $0.item })?.player else { return .invalid }
        return player.itemTime(forHostTime: CMTime(seconds: hostTimeInSeconds, preferredTimescale: 1_000_000_000))
    }

    /// Whether an item owns this output.
    var item: AVPlayerItem? { attachment.withLockAnnotated { $0.item } }

    // MARK: - Identity, as NSObject's (a subclass may override these; `==` and hashing follow)

    /// Whether `object` is this one: identity, as NSObject's.
    open func isEqual(_ object: Any?) -> Bool { isSameObject(object, self) }
    /// A hash consistent with `isEqual(_:)`.
    open var hash: Int { ObjectIdentifier(self).hashValue }
    /// `<ClassName: address>`, as NSObject's.
    open var description: String { objectDescription(self) }
}

/// What a video output's delegate hears, on the queue given with it. Not `Sendable`, as
/// Apple's is not: an app's delegate keeps its own state, which it touches on that queue.
public protocol AVPlayerItemOutputPullDelegate: AnyObject {
    /// New pictures are about to be due (after `requestNotificationOfMediaDataChange`).
    func outputMediaDataWillChange(_ sender: AVPlayerItemOutput)
    /// Every queued picture has been taken.
    func outputSequenceWasFlushed(_ output: AVPlayerItemOutput)
}

extension AVPlayerItemOutputPullDelegate {
    public func outputMediaDataWillChange(_ sender: AVPlayerItemOutput) {}
    public func outputSequenceWasFlushed(_ output: AVPlayerItemOutput) {}
}

/// Hands an item's decoded pictures to an application that draws them itself, as Apple's
/// `AVPlayerItemVideoOutput`: typically, once per display refresh, it asks
/// `itemTime(forHostTime:)` for the refresh's item time, then `hasNewPixelBuffer(forItemTime:)`
/// and `copyPixelBuffer(forItemTime:itemTimeForDisplay:)`.
///
/// Adding the output to an item makes its player decode pictures while the output stays
/// added. The pictures come in the format `pixelBufferAttributes` asks for
/// (`kCVPixelBufferPixelFormatTypeKey`: I420, NV12 or BGRA; I420 when it says nothing).
public final class AVPlayerItemVideoOutput: AVPlayerItemOutput, @unchecked Sendable {
    // @unchecked restates its superclass's; its own state is in `pulled`, a Mutex.
    /// The layout the pictures are copied into, as the attributes asked.
    let layout: PictureLayout
    private struct Pulled {
        var lastNumber: Int64?
        var delegate = WeakDelegate<any AVPlayerItemOutputPullDelegate>()
        var delegateQueue: DispatchQueue?
    }
    private let pulled = Mutex(Pulled())

    /// An output delivering pictures with `pixelBufferAttributes` (nil: I420). Only the
    /// pixel format is read; the other attributes are accepted and ignored.
    public init(pixelBufferAttributes: [String: Any]?) {
        var wanted: [OSType] = []
        if let single = pixelBufferAttributes?[kCVPixelBufferPixelFormatTypeKey] as? OSType { wanted = [single] }
        if let several = pixelBufferAttributes?[kCVPixelBufferPixelFormatTypeKey] as? [OSType] { wanted = several }
        if let number = pixelBufferAttributes?[kCVPixelBufferPixelFormatTypeKey] as? Int { wanted = [OSType(truncatingIfNeeded: number)] }
        switch wanted.first {
        case kCVPixelFormatType_32BGRA: layout = .bgra
        case kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange: layout = .nv12
        default: layout = .yuv420p
        }
        super.init()
    }

    /// An output delivering pictures as `outputSettings` asks (its pixel format; nil: I420).
    public convenience init(outputSettings: [String: Any]?) {
        self.init(pixelBufferAttributes: outputSettings)
    }

    /// Whether a picture other than the one last copied is due by `itemTime`.
    public func hasNewPixelBuffer(forItemTime itemTime: CMTime) -> Bool {
        guard let engine = item?.player?.engine, let queue = engine.videoQueue, itemTime.isNumeric else { return false }
        let due = itemTime.convertScale(1_000_000_000, method: .roundHalfAwayFromZero).value
        let items = Self.items(of: engine)
        if queue.peek(dueNanoseconds: due, items: items) != nil { return true }
        let last = pulled.withLockAnnotated { $0.lastNumber }
        guard let shown = queue.displayed?.info else { return false }
        return shown.number != last && queue.isDue(shown, by: due, items: items)
    }

    /// The current item's pictures alone: item times asked for are its own, so the pictures
    /// of an item queued to follow it, due from its own zero, are not due by them.
    private static func items(of engine: PlaybackEngine) -> VideoItems { VideoItems(current: engine.itemNumbers.current) }

    /// A copy of the picture due by `itemTime` (the newest one; older ones are skipped),
    /// with its own item time in `itemTimeForDisplay`; nil when there is none.
    public func copyPixelBuffer(forItemTime itemTime: CMTime, itemTimeForDisplay: UnsafeMutablePointer<CMTime>?) -> CVPixelBuffer? {
        guard let engine = item?.player?.engine, let queue = engine.videoQueue, itemTime.isNumeric else { return nil }
        let due = itemTime.convertScale(1_000_000_000, method: .roundHalfAwayFromZero).value
        let items = Self.items(of: engine)
        let planes: VideoPlanes?
        switch queue.next(dueNanoseconds: due, showFirstEarly: false, items: items) {
        case .show(let picked): planes = picked
        case .keep: planes = queue.displayed.flatMap { queue.isDue($0.info, by: due, items: items) ? $0 : nil }
        }
        guard let planes, let copy = PictureCopy(planes, layout: layout) else { return nil }
        pulled.withLockAnnotated { $0.lastNumber = planes.info.number }
        itemTimeForDisplay?.pointee = planes.info.itemTime
        return CVPixelBuffer(picture: copy)
    }

    /// Sets the object told about coming pictures, and the queue it is told on.
    public func setDelegate(_ delegate: (any AVPlayerItemOutputPullDelegate)?, queue: DispatchQueue?) {
        let held = WeakDelegate(delegate)
        pulled.withLockAnnotated { $0.delegate = held; $0.delegateQueue = queue }
    }

    /// The delegate set by `setDelegate(_:queue:)`.
    public var delegate: (any AVPlayerItemOutputPullDelegate)? { pulled.withLockAnnotated { $0.delegate }.value }
    /// The queue the delegate is told on.
    public var delegateQueue: DispatchQueue? { pulled.withLockAnnotated { $0.delegateQueue } }

    /// Tells the delegate once, when a picture is queued within `interval` seconds of the
    /// current time (at once when one already is).
    public func requestNotificationOfMediaDataChange(withAdvanceInterval interval: TimeInterval) {
        let (delegate, queue) = pulled.withLockAnnotated { ($0.delegate, $0.delegateQueue) }
        guard delegate.value != nil else { return }
        let target = queue ?? DispatchQueue.main
        let limit = Int64(max(0, interval) * 1e9)
        DispatchQueue.global().async { [weak self] in
            // Polled at the player's monitor rate for at most a few seconds: the notice is a
            // hint to start pulling, not a timing signal.
            let deadline = HostTime.now() + .seconds(5)
            while HostTime.now() < deadline {
                guard let self, let player = self.item?.player else { return }
                let now = player.currentTime()
                let nowNanoseconds = now.isNumeric ? now.convertScale(1_000_000_000, method: .roundHalfAwayFromZero).value : 0
                if let next = player.engine.videoQueue?.queuedItemNanoseconds(item: player.engine.itemNumbers.current).first,
                   next <= nowNanoseconds + limit {
                    target.async { delegate.value?.outputMediaDataWillChange(self) }
                    return
                }
                Thread.sleep(forTimeInterval: Double(AVPlayer.monitorInterval.nanosecondsClamped) / 1e9)
            }
        }
    }
}
