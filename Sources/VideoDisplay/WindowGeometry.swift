/// Where the window opens and how big it is, in the syntax of mpv's
/// `--geometry`: `[W[xH]][+-X+-Y]` or `X:Y`.
///
/// Examples: `1280x720`, `640x360+10+20`, `+0+0`, `-0-0` (bottom-right
/// corner), `50%x50%`, `50%` (half the screen wide, height from 16:9),
/// `+50%-10%`, `50:40` (placed at 50% across and 40% down the free space).
/// mpv's `/WS` workspace suffix is not supported.
public struct WindowGeometry: Sendable, Equatable {
    /// A length in pixels or as a percentage of the screen's usable area.
    public enum Length: Sendable, Equatable {
        /// Whole pixels.
        case pixels(Int)
        /// Percent (0...100) of the screen's usable width or height.
        case percent(Double)
    }

    /// Which screen edge a position is measured from.
    public enum Edge: Sendable, Equatable {
        /// From the left or top edge (`+` in the syntax).
        case leading
        /// From the right or bottom edge (`-` in the syntax).
        case trailing
    }

    /// A position along one axis. For percentages, 0% puts the window
    /// against the named edge and 100% against the opposite one, as in mpv.
    public struct Offset: Sendable, Equatable {
        /// The edge the distance is measured from.
        public var edge: Edge
        /// The distance between that edge and the window's matching edge.
        public var length: Length

        /// An offset from an edge.
        public init(edge: Edge, length: Length) {
            self.edge = edge
            self.length = length
        }
    }

    /// A window placement resolved against a real screen, in screen pixels.
    public struct Placement: Sendable, Equatable {
        /// Left edge; nil lets the window be centred.
        public var x: Int?
        /// Top edge; nil lets the window be centred.
        public var y: Int?
        /// Window width in pixels.
        public var width: Int
        /// Window height in pixels.
        public var height: Int

        /// A placement from its parts; nil coordinates mean centred.
        public init(x: Int?, y: Int?, width: Int, height: Int) {
            self.x = x
            self.y = y
            self.width = width
            self.height = height
        }
    }

    /// The window width; nil keeps the default.
    public var width: Length?
    /// The window height; nil derives it from the width (or keeps the default).
    public var height: Length?
    /// The horizontal position; nil centres the window.
    public var x: Offset?
    /// The vertical position; nil centres the window.
    public var y: Offset?

    /// The aspect ratio used for a width given alone (`--geometry=1280`):
    /// mpv would use the video's, which is unknown when the window opens, and
    /// 16:9 is what most video is.
    public static let defaultAspectRatio: Double = 16.0 / 9.0

    /// A geometry from its parts.
    public init(width: Length? = nil, height: Length? = nil, x: Offset? = nil, y: Offset? = nil) {
        self.width = width
        self.height = height
        self.x = x
        self.y = y
    }

    /// Parses mpv's `--geometry` syntax.
    ///
    /// - Throws: `.badGeometry` naming the input and what is wrong with it.
    public init(parsing text: String) throws(VideoWindowError) {
        var scanner = Scanner(text: text)
        func fail(_ reason: String) -> VideoWindowError {
            .badGeometry(input: text, reason: reason)
        }
        guard !scanner.atEnd else { throw fail("it is empty") }

        // `X:Y` is a form of its own: two placements, each a percentage of
        // the free space whether or not it carries a `%`.
        if text.contains(":") {
            guard let first = scanner.number(), scanner.take(":") || scanner.take("%") && scanner.take(":"),
                let second = scanner.number()
            else { throw fail("expected X:Y, e.g. 50:40") }
            _ = scanner.take("%")
            guard scanner.atEnd else { throw fail("unexpected text after X:Y") }
            guard (0...100).contains(first), (0...100).contains(second) else {
                throw fail("X:Y positions are percentages, 0...100")
            }
            self.init(
                x: Offset(edge: .leading, length: .percent(first)),
                y: Offset(edge: .leading, length: .percent(second)))
            return
        }

        var result = WindowGeometry()
        if !scanner.peekSign() {
            guard let w = try scanner.length(orThrow: fail) else {
                throw fail("expected a width, e.g. 1280x720 or +10+10")
            }
            result.width = w
            if scanner.take("x") {
                guard let h = try scanner.length(orThrow: fail) else {
                    throw fail("expected a height after 'x'")
                }
                result.height = h
            }
        }
        if scanner.peekSign() {
            let xEdge: Edge = scanner.take("+") ? .leading : (scanner.take("-") ? .trailing : .leading)
            guard let xLength = try scanner.length(orThrow: fail) else {
                throw fail("expected a number after the sign of X")
            }
            guard scanner.peekSign() else { throw fail("a position needs both X and Y, e.g. +10+20") }
            let yEdge: Edge = scanner.take("+") ? .leading : (scanner.take("-") ? .trailing : .leading)
            guard let yLength = try scanner.length(orThrow: fail) else {
                throw fail("expected a number after the sign of Y")
            }
            result.x = Offset(edge: xEdge, length: xLength)
            result.y = Offset(edge: yEdge, length: yLength)
        }
        guard scanner.atEnd else {
            throw fail("unexpected \"\(scanner.rest)\"; expected W[xH][+-X+-Y]")
        }
        for size in [result.width, result.height] {
            switch size {
            case .pixels(let n)? where n < 1 || n > VideoGeometry.maximumSide:
                throw fail("a side of \(n) pixels is outside 1...\(VideoGeometry.maximumSide)")
            case .percent(let p)? where p <= 0 || p > 100:
                throw fail("a side of \(p)% is outside (0, 100]")
            default:
                break
            }
        }
        for offset in [result.x, result.y] {
            if case .percent(let p)? = offset?.length, p > 100 {
                throw fail("a position of \(p)% is beyond 100%")
            }
        }
        self = result
    }

    /// Resolves this geometry against a screen's usable area.
    ///
    /// - Parameters:
    ///   - screen: the usable area of the screen, in screen pixels.
    ///   - defaultWidth: width to use when none was given, in pixels.
    ///   - defaultHeight: height to use when none was given, in pixels.
    public func resolved(
        in screen: DisplayRect, defaultWidth: Int, defaultHeight: Int
    ) -> Placement {
        func pixels(_ length: Length, of total: Double) -> Int {
            switch length {
            case .pixels(let n): return n
            case .percent(let p): return Int((total * p / 100).rounded())
            }
        }
        var w = defaultWidth
        var h = defaultHeight
        if let width {
            w = pixels(width, of: screen.width)
            h = height.map { pixels($0, of: screen.height) }
                ?? Int((Double(w) / Self.defaultAspectRatio).rounded())
        } else if let height {
            h = pixels(height, of: screen.height)
        }
        w = min(max(w, 1), VideoGeometry.maximumSide)
        h = min(max(h, 1), VideoGeometry.maximumSide)

        func position(_ offset: Offset?, origin: Double, extent: Double, size: Int) -> Int? {
            guard let offset else { return nil }
            let free = extent - Double(size)
            let distance: Double
            switch offset.length {
            case .pixels(let n): distance = Double(n)
            case .percent(let p): distance = free * p / 100
            }
            let leading = offset.edge == .leading ? distance : free - distance
            return Int((origin + leading).rounded())
        }
        return Placement(
            x: position(x, origin: screen.x, extent: screen.width, size: w),
            y: position(y, origin: screen.y, extent: screen.height, size: h),
            width: w, height: h)
    }
}

/// A cursor over the geometry string; `Substring` indices keep it
/// allocation-free and Unicode-correct.
private struct Scanner {
    let text: String
    var index: String.Index

    init(text: String) {
        self.text = text
        index = text.startIndex
    }

    var atEnd: Bool { index == text.endIndex }
    var rest: Substring { text[index...] }

    func peekSign() -> Bool {
        guard let c = text[index...].first else { return false }
        return c == "+" || c == "-"
    }

    mutating func take(_ character: Character) -> Bool {
        guard text[index...].first == character else { return false }
        index = text.index(after: index)
        return true
    }

    /// A non-negative decimal number (digits, optionally one '.').
    mutating func number() -> Double? {
        let start = index
        var sawDot = false
        while let c = text[index...].first, c.isASCII, c.isNumber || (c == "." && !sawDot) {
            if c == "." { sawDot = true }
            index = text.index(after: index)
        }
        guard index != start, let value = Double(text[start..<index]) else {
            index = start
            return nil
        }
        return value
    }

    /// A number of pixels, or a percentage when followed by `%`.
    mutating func length(
        orThrow fail: (String) -> VideoWindowError
    ) throws(VideoWindowError) -> WindowGeometry.Length? {
        let start = index
        guard let value = number() else { return nil }
        if take("%") { return .percent(value) }
        guard value == value.rounded(), value <= Double(Int32.max) else {
            throw fail("\"\(text[start..<index])\" is not a whole number of pixels")
        }
        return .pixels(Int(value))
    }
}
