internal import CFFmpeg

/// Pixel layouts a picture can be copied out in, for applications that draw it themselves.
public enum PictureLayout: Sendable, Equatable {
    /// I420: Y, then U and V at half width and height.
    case yuv420p
    /// NV12: Y, then interleaved U and V at half width and height, in video range (luma
    /// 16 to 235), as decoders give it.
    case nv12
    /// NV12 in full range (luma 0 to 255), as JPEG and most image code take it.
    case nv12FullRange
    /// Packed 8-bit blue, green, red, alpha: what most drawing libraries take.
    case bgra
    /// Packed 8-bit alpha, red, green, blue.
    case argb

    /// Planes of a picture in this layout.
    public var planeCount: Int {
        switch self {
        case .yuv420p: return 3
        case .nv12, .nv12FullRange: return 2
        case .bgra, .argb: return 1
        }
    }
}

/// A decoded picture copied into memory of its own, in the layout an application asked
/// for: it stays valid for as long as the application keeps it, unlike the queue's.
///
/// Immutable once made.
public final class PictureCopy: @unchecked Sendable {
    // @unchecked: the planes are written once, in `init`, and only read afterwards.
    /// How the copy's pixels are laid out.
    public let layout: PictureLayout
    /// The picture's size in pixels.
    public let width: Int
    public let height: Int
    /// The item time the picture is due at.
    public let itemNanoseconds: Int64
    private let storage: UnsafeMutableRawPointer
    private let offsets: [Int]
    /// Bytes per row of each plane.
    public let bytesPerRow: [Int]
    /// Rows of each plane.
    public let rows: [Int]

    /// Copies `planes` into `layout`, scaled to `size` (width, height) when one is given and
    /// differs from the picture's; nil when the conversion cannot be made.
    public init?(_ planes: VideoPlanes, layout: PictureLayout, size: (width: Int, height: Int)? = nil) {
        let info = planes.info
        if let size, size.width > 0, size.height > 0, size.width <= Self.largestSide, size.height <= Self.largestSide {
            width = size.width
            height = size.height
        } else {
            width = info.width
            height = info.height
        }
        itemNanoseconds = info.itemNanoseconds
        self.layout = layout
        let chromaWidth = (width + 1) / 2, chromaHeight = (height + 1) / 2
        switch layout {
        case .yuv420p:
            bytesPerRow = [width, chromaWidth, chromaWidth]
            rows = [height, chromaHeight, chromaHeight]
        case .nv12, .nv12FullRange:
            bytesPerRow = [width, chromaWidth * 2]
            rows = [height, chromaHeight]
        case .bgra, .argb:
            bytesPerRow = [width * 4]
            rows = [height]
        }
        var running = 0
        var made: [Int] = []
        for (stride, count) in zip(bytesPerRow, rows) {
            made.append(running)
            running += stride * count
        }
        offsets = made
        storage = .allocate(byteCount: max(1, running), alignment: 64)
        guard Self.fill(storage, offsets: offsets, strides: bytesPerRow, from: planes, to: layout, width: width, height: height) else {
            storage.deallocate()
            return nil
        }
    }

    deinit { storage.deallocate() }

    /// The widest or tallest picture a copy is scaled to (pixels): 16K, past any screen. A
    /// size beyond it is taken as a mistake and the picture keeps its own; within it a copy
    /// is at most 1 GiB (16K square in BGRA).
    static let largestSide = 16_384

    /// Bytes the copy's planes hold.
    public var byteCount: Int { zip(bytesPerRow, rows).reduce(0) { $0 + $1.0 * $1.1 } }

    /// The first byte of plane `index`.
    public func baseAddress(ofPlane index: Int) -> UnsafeMutableRawPointer? {
        guard offsets.indices.contains(index) else { return nil }
        return storage + offsets[index]
    }

    private static func pixelFormat(_ format: VideoPixelFormat) -> AVPixelFormat {
        format == .nv12 ? AV_PIX_FMT_NV12 : AV_PIX_FMT_YUV420P
    }

    private static func pixelFormat(_ layout: PictureLayout) -> AVPixelFormat {
        switch layout {
        case .yuv420p: return AV_PIX_FMT_YUV420P
        case .nv12, .nv12FullRange: return AV_PIX_FMT_NV12
        case .bgra: return AV_PIX_FMT_BGRA
        case .argb: return AV_PIX_FMT_ARGB
        }
    }

    private static func fill(_ storage: UnsafeMutableRawPointer, offsets: [Int], strides: [Int], from planes: VideoPlanes,
                             to layout: PictureLayout, width targetWidth: Int, height targetHeight: Int) -> Bool {
        let info = planes.info
        let width = Int32(info.width), height = Int32(info.height)
        // The picture's matrix and range as its decoder names them (`VideoColorMatrix`:
        // BT.709, or else BT.601; full range is taken as BT.601's, as JPEG's is), so that
        // colours and levels come out as they were made: most video is in video range (luma
        // 16 to 235); `.nv12FullRange` spreads the levels over the full 0 to 255.
        let sourceRange: Int32 = info.colorMatrix == .fullRange601 ? 1 : 0
        let targetRange: Int32
        switch layout {
        case .nv12FullRange: targetRange = 1
        case .nv12: targetRange = 0  // CoreVideo's '420v' is video range by name
        case .yuv420p, .bgra, .argb: targetRange = sourceRange  // as made ('y420' names no range; RGB has none)
        }
        guard let scaler = chorus_sws_ranged_context(width, height, pixelFormat(info.format), Int32(targetWidth), Int32(targetHeight),
                                                     pixelFormat(layout), Int32(SWS_BILINEAR), sourceRange, targetRange,
                                                     info.colorMatrix == .bt709 ? SWS_CS_ITU709 : SWS_CS_ITU601) else { return false }
        defer { sws_freeContext(scaler) }
        var source: [UnsafePointer<UInt8>?] = [planes.plane0, planes.plane1, planes.plane2, nil]
        var sourceStrides: [Int32] = [Int32(planes.stride0), Int32(planes.stride1), Int32(planes.stride2), 0]
        var target: [UnsafeMutablePointer<UInt8>?] = [nil, nil, nil, nil]
        var targetStrides: [Int32] = [0, 0, 0, 0]
        for index in offsets.indices {
            target[index] = (storage + offsets[index]).assumingMemoryBound(to: UInt8.self)
            targetStrides[index] = Int32(strides[index])
        }
        let status = sws_scale(scaler, &source, &sourceStrides, 0, height, &target, &targetStrides)
        return status > 0
    }
}
