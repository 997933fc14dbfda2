/// How the picture fills the window, named after AVFoundation's
/// `AVLayerVideoGravity` so that people who know that API need no new words.
public enum VideoGravity: Sendable, Equatable, CaseIterable {
    /// Stretch the picture to cover the whole drawable, ignoring its aspect ratio.
    case resize
    /// Keep the aspect ratio and fit the picture inside the drawable
    /// (letterbox or pillarbox bars in black).
    case resizeAspect
    /// Keep the aspect ratio and cover the whole drawable; whatever overflows
    /// is clipped by the drawable's edges.
    case resizeAspectFill
}

/// A rectangle in pixels, with its origin at the top-left corner.
public struct DisplayRect: Sendable, Equatable, CustomStringConvertible {
    /// Left edge, in pixels (may be negative when the picture overflows).
    public var x: Double
    /// Top edge, in pixels (may be negative when the picture overflows).
    public var y: Double
    /// Width, in pixels.
    public var width: Double
    /// Height, in pixels.
    public var height: Double

    /// A rectangle from its top-left corner and size, in pixels.
    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// The empty rectangle at the origin.
    public static let zero = DisplayRect(x: 0, y: 0, width: 0, height: 0)

    /// `x,y WxH`, for logs and test failures.
    public var description: String { "\(x),\(y) \(width)x\(height)" }
}

/// A size in pixels.
public struct DisplaySize: Sendable, Equatable, CustomStringConvertible {
    /// Width, in pixels.
    public var width: Double
    /// Height, in pixels.
    public var height: Double

    /// A size from its width and height, in pixels.
    public init(width: Double, height: Double) {
        self.width = width
        self.height = height
    }

    /// `WxH`, for logs and test failures.
    public var description: String { "\(width)x\(height)" }
}

/// A crop rectangle in source (coded) pixels, in the order of ffmpeg's crop
/// filter: `W:H:X:Y`.
public struct CropRect: Sendable, Equatable, CustomStringConvertible {
    /// Width of the kept area, in source pixels.
    public var width: Int
    /// Height of the kept area, in source pixels.
    public var height: Int
    /// Left edge of the kept area, in source pixels.
    public var x: Int
    /// Top edge of the kept area, in source pixels.
    public var y: Int

    /// A crop rectangle; it is checked against the frame by `ContentGeometry`.
    public init(width: Int, height: Int, x: Int = 0, y: Int = 0) {
        self.width = width
        self.height = height
        self.x = x
        self.y = y
    }

    /// Parses `W:H:X:Y`, or `W:H` for a crop anchored at the top-left corner.
    public init(parsing text: String) throws(VideoWindowError) {
        let fields = text.split(separator: ":", omittingEmptySubsequences: false)
        guard fields.count == 2 || fields.count == 4 else {
            throw .badCrop(reason: "\"\(text)\" is not W:H:X:Y")
        }
        var numbers: [Int] = []
        for field in fields {
            guard let number = Int(field) else {
                throw .badCrop(reason: "\"\(field)\" in \"\(text)\" is not a whole number")
            }
            numbers.append(number)
        }
        self.init(
            width: numbers[0], height: numbers[1],
            x: numbers.count == 4 ? numbers[2] : 0,
            y: numbers.count == 4 ? numbers[3] : 0)
    }

    /// `W:H:X:Y`.
    public var description: String { "\(width):\(height):\(x):\(y)" }
}

/// What is known about an item's pictures when it is loaded: coded size,
/// sample aspect ratio, rotation and crop. Validated once on creation, so a
/// window handed one never has to fail later.
public struct ContentGeometry: Sendable, Equatable {
    /// Coded width of the frames, in pixels.
    public let width: Int
    /// Coded height of the frames, in pixels.
    public let height: Int
    /// Sample (pixel) aspect ratio numerator, reduced; 1 when unknown.
    public let sampleAspectNumerator: Int
    /// Sample (pixel) aspect ratio denominator, reduced; 1 when unknown.
    public let sampleAspectDenominator: Int
    /// Clockwise rotation to apply for display: 0, 90, 180 or 270.
    public let rotationDegrees: Int
    /// The part of the coded frame to show; nil shows all of it.
    public let crop: CropRect?

    /// Sample aspect ratios further from 1:1 than this factor are treated as
    /// unknown (1:1): real content stays within 4:1 (e.g. 2.37:1 anamorphic
    /// scope is 4:3 SAR at most), so anything this skewed is a broken header.
    public static let maximumSampleAspectSkew: Double = 100

    /// Validates and stores an item's picture description.
    ///
    /// - Parameters:
    ///   - width: coded frame width in pixels, 1...`VideoGeometry.maximumSide`.
    ///   - height: coded frame height in pixels, 1...`VideoGeometry.maximumSide`.
    ///   - sampleAspectNumerator: SAR numerator; 0 or negative means 1:1.
    ///   - sampleAspectDenominator: SAR denominator; 0 or negative means 1:1.
    ///   - rotationDegrees: clockwise display rotation: 0, 90, 180 or 270.
    ///   - crop: the part of the frame to show, inside the frame.
    public init(
        width: Int, height: Int,
        sampleAspectNumerator: Int = 1, sampleAspectDenominator: Int = 1,
        rotationDegrees: Int = 0, crop: CropRect? = nil
    ) throws(VideoWindowError) {
        guard VideoGeometry.isSane(width), VideoGeometry.isSane(height) else {
            throw .absurdSize(what: "frame size", width: width, height: height)
        }
        guard rotationDegrees >= 0, rotationDegrees < 360, rotationDegrees % 90 == 0 else {
            throw .badRotation(degrees: rotationDegrees)
        }
        if let crop {
            guard crop.width > 0, crop.height > 0 else {
                throw .badCrop(reason: "crop \(crop) is empty")
            }
            guard crop.x >= 0, crop.y >= 0,
                crop.x + crop.width <= width, crop.y + crop.height <= height
            else {
                throw .badCrop(reason: "crop \(crop) does not lie inside the \(width)x\(height) frame")
            }
        }
        self.width = width
        self.height = height
        self.rotationDegrees = rotationDegrees
        // A full-frame crop is the same picture as no crop; folding it keeps
        // equality meaningful.
        if let crop, crop == CropRect(width: width, height: height) {
            self.crop = nil
        } else {
            self.crop = crop
        }
        let sar = Self.reduced(sampleAspectNumerator, sampleAspectDenominator)
        self.sampleAspectNumerator = sar.numerator
        self.sampleAspectDenominator = sar.denominator
    }

    /// The same description for frames of another coded size (a stream that
    /// changed resolution mid-way): SAR and rotation carry over, a crop does
    /// not, because it was expressed in the old frame's pixels.
    func adapted(toWidth newWidth: Int, height newHeight: Int) -> ContentGeometry? {
        if newWidth == width && newHeight == height { return self }
        return try? ContentGeometry(
            width: newWidth, height: newHeight,
            sampleAspectNumerator: sampleAspectNumerator,
            sampleAspectDenominator: sampleAspectDenominator,
            rotationDegrees: rotationDegrees)
    }

    private static func reduced(_ numerator: Int, _ denominator: Int) -> (numerator: Int, denominator: Int) {
        guard numerator > 0, denominator > 0 else { return (1, 1) }
        let ratio = Double(numerator) / Double(denominator)
        guard ratio <= maximumSampleAspectSkew, ratio >= 1 / maximumSampleAspectSkew else {
            return (1, 1)
        }
        var a = numerator
        var b = denominator
        while b != 0 { (a, b) = (b, a % b) }
        return (numerator / a, denominator / a)
    }
}

/// Where a picture goes: a pure computation from the content's geometry, the
/// gravity and the drawable size, so it can be tested without a display.
public struct VideoGeometry: Sendable, Equatable {
    /// The largest accepted side of a frame or drawable, in pixels: twice 8K,
    /// and the texture limit of most GPUs; anything larger is a corrupt header.
    public static let maximumSide = 16_384

    /// The size the picture is meant to be seen at, in pixels: the crop,
    /// widened or narrowed by the sample aspect ratio, then rotated.
    public let presentationSize: DisplaySize
    /// The rectangle of the coded frame to sample (the crop), in source pixels.
    public let sourceRect: DisplayRect
    /// Where the picture lands in the drawable after rotation, in drawable
    /// pixels, snapped to whole pixels. Overflows the drawable for
    /// `.resizeAspectFill`.
    public let videoRect: DisplayRect
    /// The rectangle to hand a renderer that rotates around the rectangle's
    /// centre (SDL_RenderCopyEx): `videoRect` with its sides swapped for 90
    /// and 270 degrees, same centre.
    public let drawRect: DisplayRect
    /// Clockwise rotation to draw with: 0, 90, 180 or 270 degrees.
    public let rotationDegrees: Int

    /// Computes the placement of `content` in a drawable of the given size.
    ///
    /// - Throws: `.absurdSize` when the drawable is empty or larger than
    ///   `maximumSide` (a minimised window reports 0x0).
    public init(
        content: ContentGeometry, gravity: VideoGravity,
        drawableWidth: Int, drawableHeight: Int
    ) throws(VideoWindowError) {
        guard Self.isSane(drawableWidth), Self.isSane(drawableHeight) else {
            throw .absurdSize(what: "drawable size", width: drawableWidth, height: drawableHeight)
        }
        let crop = content.crop ?? CropRect(width: content.width, height: content.height)
        sourceRect = DisplayRect(
            x: Double(crop.x), y: Double(crop.y),
            width: Double(crop.width), height: Double(crop.height))
        // SAR stretches the width, as ffmpeg and mpv do (1440x1080 at 4:3 is
        // 1920x1080), so the vertical resolution is never thrown away.
        let sar = Double(content.sampleAspectNumerator) / Double(content.sampleAspectDenominator)
        let unrotated = DisplaySize(width: Double(crop.width) * sar, height: Double(crop.height))
        let quarterTurn = content.rotationDegrees == 90 || content.rotationDegrees == 270
        presentationSize =
            quarterTurn
            ? DisplaySize(width: unrotated.height, height: unrotated.width) : unrotated
        rotationDegrees = content.rotationDegrees

        let drawW = Double(drawableWidth)
        let drawH = Double(drawableHeight)
        let placed: DisplayRect
        switch gravity {
        case .resize:
            placed = DisplayRect(x: 0, y: 0, width: drawW, height: drawH)
        case .resizeAspect, .resizeAspectFill:
            let fitX = drawW / presentationSize.width
            let fitY = drawH / presentationSize.height
            let scale = gravity == .resizeAspect ? min(fitX, fitY) : max(fitX, fitY)
            // Whole-pixel sizes, centred with any odd pixel going right/down:
            // a fractional edge would show as a half-blended column.
            let width = (presentationSize.width * scale).rounded()
            let height = (presentationSize.height * scale).rounded()
            placed = DisplayRect(
                x: ((drawW - width) / 2).rounded(.down),
                y: ((drawH - height) / 2).rounded(.down),
                width: width, height: height)
        }
        videoRect = placed
        if quarterTurn {
            let centreX = placed.x + placed.width / 2
            let centreY = placed.y + placed.height / 2
            drawRect = DisplayRect(
                x: centreX - placed.height / 2, y: centreY - placed.width / 2,
                width: placed.height, height: placed.width)
        } else {
            drawRect = placed
        }
    }

    static func isSane(_ side: Int) -> Bool { side >= 1 && side <= maximumSide }
}
