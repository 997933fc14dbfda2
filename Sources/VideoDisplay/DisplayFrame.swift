/// The memory layouts of decoded pictures the window can show.
public enum DisplayPixelFormat: Sendable, Equatable {
    /// Planar 4:2:0 (I420): a Y plane, then a U plane and a V plane at half
    /// width and half height.
    case yuv420p
    /// Semi-planar 4:2:0: a Y plane, then one plane of interleaved U,V pairs
    /// at half height.
    case nv12
}

/// How a picture's YUV values map to colour.
public enum DisplayColorMatrix: Sendable, Equatable {
    /// Standard definition, limited range (BT.601).
    case bt601
    /// High definition, limited range (BT.709).
    case bt709
    /// Full range BT.601, as JPEG and many cameras write it.
    case fullRange601
}

/// One decoded picture, as pointers into planes its producer owns.
///
/// `@unchecked Sendable` because the raw pointers are not Sendable, yet a
/// frame only ever points at planes that its producer keeps alive and
/// unchanged until the window has released them (see `VideoFrameSource`):
/// the window reads them on its own thread within one refresh and never
/// writes them, so handing a frame across threads cannot race.
///
/// Plain tuples rather than arrays so that building a frame per refresh does
/// not allocate.
public struct DisplayFrame: @unchecked Sendable {
    /// How the planes are laid out.
    public var format: DisplayPixelFormat
    /// Coded width, in pixels.
    public var width: Int
    /// Coded height, in pixels.
    public var height: Int
    /// Y, U, V planes for `.yuv420p`; Y, UV and nil for `.nv12`.
    public var planes: (UnsafePointer<UInt8>?, UnsafePointer<UInt8>?, UnsafePointer<UInt8>?)
    /// Bytes from one row to the next in each plane (0 for an unused plane).
    public var strides: (Int, Int, Int)
    /// The producer's number for this frame, handed back in
    /// `VideoFrameSource.presented`; opaque to the window.
    public var identity: Int64
    /// How its YUV values become colour.
    public var colorMatrix: DisplayColorMatrix

    /// A frame over planes the caller keeps alive until the window releases it.
    public init(
        format: DisplayPixelFormat, width: Int, height: Int,
        planes: (UnsafePointer<UInt8>?, UnsafePointer<UInt8>?, UnsafePointer<UInt8>?),
        strides: (Int, Int, Int), identity: Int64, colorMatrix: DisplayColorMatrix = .bt601
    ) {
        self.colorMatrix = colorMatrix
        self.format = format
        self.width = width
        self.height = height
        self.planes = planes
        self.strides = strides
        self.identity = identity
    }

    /// Whether the window can upload this frame: sane size, the planes its
    /// format needs, and strides wide enough for a row. A frame failing this
    /// is skipped rather than handed to SDL, which would read out of bounds.
    var isUploadable: Bool {
        guard VideoGeometry.isSane(width), VideoGeometry.isSane(height) else { return false }
        let chromaWidth = (width + 1) / 2
        let maxStride = Int(Int32.max)
        switch format {
        case .yuv420p:
            return planes.0 != nil && planes.1 != nil && planes.2 != nil
                && strides.0 >= width && strides.1 >= chromaWidth && strides.2 >= chromaWidth
                && strides.0 <= maxStride && strides.1 <= maxStride && strides.2 <= maxStride
        case .nv12:
            return planes.0 != nil && planes.1 != nil
                && strides.0 >= width && strides.1 >= 2 * chromaWidth
                && strides.0 <= maxStride && strides.1 <= maxStride
        }
    }
}
