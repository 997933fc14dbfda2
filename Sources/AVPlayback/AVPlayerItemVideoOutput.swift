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
/// NV12 ('420f'): as '420v', in full range (luma 0 to 255).
public let kCVPixelFormatType_420YpCbCr8BiPlanarFullRange: OSType = 0x3432_3066
/// Packed BGRA ('BGRA'), 8 bits a component.
public let kCVPixelFormatType_32BGRA: OSType = 0x4247_5241
/// Packed ARGB (32), 8 bits a component.
public let kCVPixelFormatType_32ARGB: OSType = 0x0000_0020
/// The key of `pixelBufferAttributes` that names the wanted pixel format(s).
public let kCVPixelBufferPixelFormatTypeKey = "PixelFormatType"
/// The key of `pixelBufferAttributes` that names the width the pictures are scaled to (with
/// `kCVPixelBufferHeightKey`).
public let kCVPixelBufferWidthKey = "Width"
/// The key of `pixelBufferAttributes` that names the height the pictures are scaled to.
public let kCVPixelBufferHeightKey = "Height"
/// Accepted and ignored: Linux has no IOSurface; every buffer is in the process's memory.
public let kCVPixelBufferIOSurfacePropertiesKey = "IOSurfaceProperties"
/// Accepted and ignored: no Metal on Linux; the planes are plain memory any API can upload.
public let kCVPixelBufferMetalCompatibilityKey = "MetalCompatibility"
/// Accepted and ignored: the planes are plain memory OpenGL can upload.
public let kCVPixelBufferOpenGLCompatibilityKey = "OpenGLCompatibility"
/// Accepted and ignored: rows are packed (each plane's bytes per row is its width's bytes).
public let kCVPixelBufferBytesPerRowAlignmentKey = "BytesPerRowAlignment"

/// CoreVideo's image buffer; every one here is a pixel buffer.
public typealias CVImageBuffer = CVPixelBuffer

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
        case .nv12FullRange: pixelFormatType = kCVPixelFormatType_420YpCbCr8BiPlanarFullRange
        case .bgra: pixelFormatType = kCVPixelFormatType_32BGRA
        case .argb: pixelFormatType = kCVPixelFormatType_32ARGB
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
/// Bytes the buffer's planes hold together.
public func CVPixelBufferGetDataSize(_ buffer: CVPixelBuffer) -> Int { buffer.picture.byteCount }
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
    case .bgra, .argb: return buffer.picture.width
    case .yuv420p, .nv12, .nv12FullRange: return plane == 0 ? buffer.picture.width : (buffer.picture.width + 1) / 2
    }
}

/// The base of an item's outputs, as Apple's `AVPlayerItemOutput`.
open class AVPlayerItemOutput: @unchecked Sendable {
    // @unchecked only because the class is open; its state is in `attachment`, a Mutex.
    struct Attachment {
        weak var item: AVPlayerItem?
        var suppressesPlayerRendering = false
    }
    let attachment = Mutex(Attachment())

    init() {}

    /// Whether the player's own rendering of what this output receives is left to the
    /// application: a video output's pictures are then not shown by the player's layers
    /// (their windows show black), a legible output's subtitles not drawn over them. False
    /// by default, as on Apple's platforms.
    public var suppressesPlayerRendering: Bool {
        get { attachment.withLockAnnotated { $0.suppressesPlayerRendering } }
        set {
            let item = attachment.withLockAnnotated { attachment in
                attachment.suppressesPlayerRendering = newValue
                return attachment.item
            }
            item?.outputsChanged()
        }
    }

    /// The item time the item's timeline reaches at `hostTimeInSeconds` (CLOCK_MONOTONIC
    /// seconds, the clock `CACurrentMediaTime()` reads on Apple's platforms); invalid while the
    /// output is not added to an item that plays.
    public func itemTime(forHostTime hostTimeInSeconds: CFTimeInterval) -> CMTime {
        guard let player = attachment.withLockAnnotated({ $0.item })?.player else { return .invalid }
        return player.itemTime(forHostTime: CMTime(seconds: hostTimeInSeconds, preferredTimescale: 1_000_000_000))
    }

    /// The item time the item's timeline reaches at host time `machAbsoluteTime`, in this
    /// platform's host units: nanoseconds of CLOCK_MONOTONIC, the clock `HostTime` reads (as
    /// Mach ticks are nanoseconds on Intel Macs). Invalid while the output is not added to an
    /// item that plays.
    public func itemTime(forMachAbsoluteTime machAbsoluteTime: Int64) -> CMTime {
        guard let player = attachment.withLockAnnotated({ $0.item })?.player else { return .invalid }
        return player.itemTime(forHostTime: CMTime(value: machAbsoluteTime, timescale: HostTime.nanosecondTimescale))
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
/// added. The pictures come in the format and size `pixelBufferAttributes` asks for
/// (`kCVPixelBufferPixelFormatTypeKey`: I420, NV12 in video or full range, BGRA or ARGB;
/// I420 when it says nothing).
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

    /// The size the pictures are scaled to, when the attributes name one.
    let size: (width: Int, height: Int)?

    /// An output delivering pictures with `pixelBufferAttributes` (nil: I420 at the
    /// picture's own size).
    ///
    /// Read: `kCVPixelBufferPixelFormatTypeKey` (one code or several, the first this output
    /// makes taken: I420 'y420', NV12 '420v' and '420f', BGRA, ARGB; I420 when none is one
    /// of them), and `kCVPixelBufferWidthKey` with `kCVPixelBufferHeightKey` (both, or
    /// neither: the pictures are scaled to that size). The other attributes (IOSurface,
    /// Metal, OpenGL) are accepted and ignored: every buffer is plain memory.
    public init(pixelBufferAttributes: [String: Any]? = nil) {
        let attributes = pixelBufferAttributes ?? [:]
        var wanted: [OSType] = []
        switch attributes[kCVPixelBufferPixelFormatTypeKey] {
        case let single as OSType: wanted = [single]
        case let several as [OSType]: wanted = several
        case let number as Int: wanted = [OSType(truncatingIfNeeded: number)]
        case let numbers as [Int]: wanted = numbers.map { OSType(truncatingIfNeeded: $0) }
        case let number as NSNumber: wanted = [number.uint32Value]
        case let numbers as [NSNumber]: wanted = numbers.map(\.uint32Value)
        default: break
        }
        let layouts: [OSType: PictureLayout] = [
            kCVPixelFormatType_420YpCbCr8Planar: .yuv420p,
            kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange: .nv12,
            kCVPixelFormatType_420YpCbCr8BiPlanarFullRange: .nv12FullRange,
            kCVPixelFormatType_32BGRA: .bgra,
            kCVPixelFormatType_32ARGB: .argb,
        ]
        layout = wanted.lazy.compactMap { layouts[$0] }.first ?? .yuv420p
        func side(_ key: String) -> Int? {
            switch attributes[key] {
            case let value as Int: return value
            case let value as NSNumber: return value.intValue
            case let value as Double where value.isFinite && abs(value) < 1e9: return Int(value)
            case let value as CGFloat where value.isFinite && abs(value) < 1e9: return Int(value)
            default: return nil
            }
        }
        if let width = side(kCVPixelBufferWidthKey), let height = side(kCVPixelBufferHeightKey), width > 0, height > 0 {
            size = (width, height)
        } else {
            size = nil
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
        guard let planes, let copy = PictureCopy(planes, layout: layout, size: size) else { return nil }
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
