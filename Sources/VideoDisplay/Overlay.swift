// The overlay's pure parts: font, text formatting and layout. None of them
// touch SDL, so they are unit-tested directly; the drawing lives with the
// render loop.

/// A 5x7 bitmap font with just the glyphs the overlay needs. There is no font
/// library on the target systems, and a fixed table draws in a handful of
/// filled rectangles per glyph.
enum BitmapFont {
    /// Glyph width, in font pixels.
    static let glyphWidth = 5
    /// Glyph height, in font pixels.
    static let glyphHeight = 7
    /// Horizontal step from one glyph to the next, in font pixels (one blank
    /// column keeps digits apart at the smallest scale).
    static let advance = 6

    /// The glyph's rows, top first, each in the low 5 bits with the leftmost
    /// pixel in bit 4; row `r` sits at bits `(6 - r) * 5`. A switch of
    /// literals rather than a table so lookups never touch the heap.
    static func glyph(_ ascii: UInt8) -> UInt64 {
        switch ascii {
        case UInt8(ascii: "0"): return rows(0b01110, 0b10001, 0b10011, 0b10101, 0b11001, 0b10001, 0b01110)
        case UInt8(ascii: "1"): return rows(0b00100, 0b01100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110)
        case UInt8(ascii: "2"): return rows(0b01110, 0b10001, 0b00001, 0b00010, 0b00100, 0b01000, 0b11111)
        case UInt8(ascii: "3"): return rows(0b11111, 0b00010, 0b00100, 0b00010, 0b00001, 0b10001, 0b01110)
        case UInt8(ascii: "4"): return rows(0b00010, 0b00110, 0b01010, 0b10010, 0b11111, 0b00010, 0b00010)
        case UInt8(ascii: "5"): return rows(0b11111, 0b10000, 0b11110, 0b00001, 0b00001, 0b10001, 0b01110)
        case UInt8(ascii: "6"): return rows(0b00110, 0b01000, 0b10000, 0b11110, 0b10001, 0b10001, 0b01110)
        case UInt8(ascii: "7"): return rows(0b11111, 0b00001, 0b00010, 0b00100, 0b01000, 0b01000, 0b01000)
        case UInt8(ascii: "8"): return rows(0b01110, 0b10001, 0b10001, 0b01110, 0b10001, 0b10001, 0b01110)
        case UInt8(ascii: "9"): return rows(0b01110, 0b10001, 0b10001, 0b01111, 0b00001, 0b00010, 0b01100)
        case UInt8(ascii: ":"): return rows(0b00000, 0b01100, 0b01100, 0b00000, 0b01100, 0b01100, 0b00000)
        case UInt8(ascii: "."): return rows(0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b01100, 0b01100)
        case UInt8(ascii: "-"): return rows(0b00000, 0b00000, 0b00000, 0b11111, 0b00000, 0b00000, 0b00000)
        case UInt8(ascii: "x"): return rows(0b00000, 0b00000, 0b10001, 0b01010, 0b00100, 0b01010, 0b10001)
        case UInt8(ascii: "/"): return rows(0b00000, 0b00001, 0b00010, 0b00100, 0b01000, 0b10000, 0b00000)
        case UInt8(ascii: "d"): return rows(0b00001, 0b00001, 0b01101, 0b10011, 0b10001, 0b10011, 0b01101)
        case UInt8(ascii: "r"): return rows(0b00000, 0b00000, 0b10110, 0b11001, 0b10000, 0b10000, 0b10000)
        case UInt8(ascii: "o"): return rows(0b00000, 0b00000, 0b01110, 0b10001, 0b10001, 0b10001, 0b01110)
        case UInt8(ascii: "p"): return rows(0b00000, 0b00000, 0b11110, 0b10001, 0b11110, 0b10000, 0b10000)
        case UInt8(ascii: "e"): return rows(0b00000, 0b00000, 0b01110, 0b10001, 0b11111, 0b10000, 0b01110)
        default: return 0  // space, and anything unknown, draws nothing
        }
    }

    /// One row of a glyph, leftmost pixel in bit 4.
    static func row(_ glyph: UInt64, _ r: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: glyph >> UInt64((glyphHeight - 1 - r) * glyphWidth)) & 0b11111
    }

    private static func rows(
        _ r0: UInt64, _ r1: UInt64, _ r2: UInt64, _ r3: UInt64, _ r4: UInt64, _ r5: UInt64, _ r6: UInt64
    ) -> UInt64 {
        (r0 << 30) | (r1 << 25) | (r2 << 20) | (r3 << 15) | (r4 << 10) | (r5 << 5) | r6
    }
}

/// A short ASCII line built in inline storage, so the overlay can format its
/// text every refresh without allocating (Strings would).
struct OverlayText {
    /// Inline storage; 48 characters fit the longest line the overlay
    /// builds, "dropped 9999999  999.99x  -99:59:59".
    typealias Storage = InlineArray<48, UInt8>
    /// Longest line, in characters.
    static let capacity = Storage.count

    private(set) var bytes = Storage(repeating: 0)
    private(set) var count = 0

    mutating func clear() { count = 0 }

    mutating func append(_ ascii: UInt8) {
        guard count < Self.capacity else { return }
        bytes[count] = ascii
        count += 1
    }

    mutating func append(_ literal: StaticString) {
        literal.withUTF8Buffer { buffer in
            for byte in buffer { append(byte) }
        }
    }

    /// A non-negative integer, zero-padded to `minimumDigits`.
    mutating func append(_ value: Int, minimumDigits: Int = 1) {
        var digits = InlineArray<20, UInt8>(repeating: 0)
        var n = max(0, value)
        var used = 0
        repeat {
            digits[used] = UInt8(ascii: "0") + UInt8(n % 10)
            n /= 10
            used += 1
        } while n > 0 && used < 20
        for _ in used..<max(used, minimumDigits) { append(UInt8(ascii: "0")) }
        while used > 0 {
            used -= 1
            append(digits[used])
        }
    }

    /// `M:SS`, or `H:MM:SS` from one hour on; non-finite or negative is 0.
    mutating func appendTime(seconds: Double) {
        let total = seconds.isFinite ? Int(min(max(seconds, 0), Self.maximumSeconds)) : 0
        let hours = total / 3600
        let minutes = total / 60 % 60
        if hours > 0 {
            append(hours)
            append(UInt8(ascii: ":"))
            append(minutes, minimumDigits: 2)
        } else {
            append(minutes)
        }
        append(UInt8(ascii: ":"))
        append(total % 60, minimumDigits: 2)
    }

    /// `1x`, `1.5x`, `0.25x`: at most two decimals, trailing zeros dropped.
    mutating func appendRate(_ rate: Double) {
        let hundredths = rate.isFinite ? Int((min(max(rate, 0), Self.maximumRate) * 100).rounded()) : 0
        append(hundredths / 100)
        let fraction = hundredths % 100
        if fraction != 0 {
            append(UInt8(ascii: "."))
            if fraction % 10 == 0 {
                append(fraction / 10)
            } else {
                append(fraction, minimumDigits: 2)
            }
        }
        append(UInt8(ascii: "x"))
    }

    /// Longest time shown, in seconds (99:59:59): keeps absurd positions from
    /// overflowing the line.
    static let maximumSeconds: Double = 99 * 3600 + 59 * 60 + 59
    /// Largest rate shown: players top out at 16x (mpv's --speed limit is 100,
    /// but three digits suffice for the line).
    static let maximumRate: Double = 999

    /// The text as a String, for tests.
    var string: String {
        var s = ""
        for i in 0..<count { s.unicodeScalars.append(Unicode.Scalar(bytes[i])) }
        return s
    }
}

/// An integer rectangle in drawable pixels.
struct PixelRect: Equatable {
    var x: Int
    var y: Int
    var width: Int
    var height: Int

    func contains(x px: Int, y py: Int) -> Bool {
        px >= x && px < x + width && py >= y && py < y + height
    }
}

/// Where the overlay's parts go in a drawable, and what a point hits.
struct OverlayLayout: Equatable {
    /// The drawable height, in pixels, at which the overlay is drawn at
    /// scale 1; taller drawables get whole multiples so the font stays crisp.
    static let referenceHeight = 720
    /// Height of the control band at the bottom, in pixels at scale 1.
    static let panelHeight = 60
    /// Space between the band's edges and its contents, in pixels at scale 1.
    static let margin = 12
    /// Distance from the band's top to the scrub track, in pixels at scale 1.
    static let trackTop = 12
    /// Thickness of the scrub track, in pixels at scale 1.
    static let trackHeight = 6
    /// Extra height above and below the track that still grabs it, in pixels
    /// at scale 1: a 6 px target is too thin to hit reliably.
    static let trackSlop = 8
    /// Side of the play/pause button, in pixels at scale 1.
    static let buttonSize = 22
    /// Distance from the band's top to the button and text row, in pixels at scale 1.
    static let rowTop = 28
    /// Screen pixels per font pixel at scale 1 (a 10x14 glyph).
    static let fontPixel = 2
    /// Gap between the button and the elapsed time, in pixels at scale 1.
    static let textGap = 12

    let scale: Int
    let panel: PixelRect
    let track: PixelRect
    let trackHitArea: PixelRect
    let button: PixelRect
    let fontPixel: Int
    let textTop: Int
    let leftTextX: Int
    let rightTextEnd: Int

    init(drawableWidth: Int, drawableHeight: Int) {
        let s = max(1, drawableHeight / Self.referenceHeight)
        scale = s
        let panelHeight = Self.panelHeight * s
        panel = PixelRect(x: 0, y: drawableHeight - panelHeight, width: drawableWidth, height: panelHeight)
        let margin = Self.margin * s
        track = PixelRect(
            x: margin, y: panel.y + Self.trackTop * s,
            width: max(1, drawableWidth - 2 * margin), height: Self.trackHeight * s)
        trackHitArea = PixelRect(
            x: track.x, y: track.y - Self.trackSlop * s,
            width: track.width, height: track.height + 2 * Self.trackSlop * s)
        button = PixelRect(
            x: margin, y: panel.y + Self.rowTop * s,
            width: Self.buttonSize * s, height: Self.buttonSize * s)
        fontPixel = Self.fontPixel * s
        textTop = button.y + (button.height - BitmapFont.glyphHeight * fontPixel) / 2
        leftTextX = button.x + button.width + Self.textGap * s
        rightTextEnd = drawableWidth - margin
    }

    /// What a click at a drawable pixel lands on.
    enum Hit: Equatable {
        case scrub(fraction: Double)
        case playPause
        case panel
        case outside
    }

    func hit(x: Int, y: Int) -> Hit {
        if trackHitArea.contains(x: x, y: y) { return .scrub(fraction: fraction(atX: x)) }
        if button.contains(x: x, y: y) { return .playPause }
        if panel.contains(x: x, y: y) { return .panel }
        return .outside
    }

    /// The scrub position under a drawable x, clamped so drags past either
    /// end still seek to the start or the end.
    func fraction(atX x: Int) -> Double {
        guard track.width > 1 else { return 0 }
        return min(max(Double(x - track.x) / Double(track.width - 1), 0), 1)
    }

    /// Width of a line of text, in drawable pixels.
    func textWidth(characters: Int) -> Int {
        characters > 0 ? (characters * BitmapFont.advance - 1) * fontPixel : 0
    }
}
