internal import CSDL2
import Foundation
import Synchronization

/// Subtitle text ready to draw: white glyphs with a black outline on a clear ground, made
/// off the display thread (`SubtitleRasterizer`) so the display only copies it.
public struct SubtitleBitmap: Sendable {
    /// Names the content: the display uploads a bitmap again only when this changes.
    public let identity: Int
    /// Size in window pixels: drawn as is, centred at the foot of the picture.
    public let width: Int
    public let height: Int
    /// Rows of `width` pixels, top first, each pixel 4 bytes as SDL's ARGB8888 (a native
    /// 32-bit word 0xAARRGGBB), alpha not premultiplied.
    public let pixels: [UInt8]

    public init(identity: Int, width: Int, height: Int, pixels: [UInt8]) {
        self.identity = identity
        self.width = width
        self.height = height
        self.pixels = pixels
    }
}

/// Lays subtitle lines out in a TrueType font with SDL_ttf: centred, wrapped to a width,
/// outlined so they read over any picture. Thread-safe; meant for a housekeeping thread.
public final class SubtitleRasterizer: Sendable {
    /// Where the font is looked for, first found wins: DejaVu Sans, which Debian installs
    /// with its desktop and which covers Latin, Greek and Cyrillic. `CHORUS_SUBTITLE_FONT`
    /// names another.
    public static let fontSearchPaths = [
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/TTF/DejaVuSans.ttf",
        "/usr/share/fonts/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    ]
    /// The outline's width as a share of the font's pixel size: a twelfth keeps white text
    /// legible on white pictures without thickening it.
    static let outlineShare = 1.0 / 12

    /// The font file in use.
    public let fontPath: String
    /// Fonts opened so far, by pixel size (a window that is resized asks for another).
    private let fonts = Mutex<[Int: OpaquePointer]>([:])

    /// Opens SDL_ttf with the first font found; nil (with the reason in `failure`) when
    /// there is none or SDL_ttf cannot start.
    public init?(fontPath wanted: String? = nil, failure: ((String) -> Void)? = nil) {
        let candidates = [wanted, ProcessInfo.processInfo.environment["CHORUS_SUBTITLE_FONT"]].compactMap { $0 } + Self.fontSearchPaths
        guard let path = candidates.first(where: { FileManager.default.isReadableFile(atPath: $0) }) else {
            failure?("no subtitle font found (looked for \(Self.fontSearchPaths.joined(separator: ", ")); set CHORUS_SUBTITLE_FONT)")
            return nil
        }
        guard Self.startTTF() else {
            failure?("SDL_ttf cannot start: \(String(cString: SDL_GetError()))")
            return nil
        }
        fontPath = path
    }

    deinit {
        let opened = fonts.withLock { fonts in defer { fonts = [:] }; return Array(fonts.values) }
        for font in opened { TTF_CloseFont(font) }
    }

    /// `lines` as a bitmap `fontPixels` high per line, wrapped at `maxWidth` pixels; nil
    /// for no text or when the font cannot draw it.
    public func bitmap(lines: [String], fontPixels: Int, maxWidth: Int, identity: Int) -> SubtitleBitmap? {
        let text = lines.joined(separator: "\n")
        guard !text.isEmpty, fontPixels > 0, maxWidth > 0 else { return nil }
        return fonts.withLock { fonts -> SubtitleBitmap? in
            let font: OpaquePointer
            if let open = fonts[fontPixels] {
                font = open
            } else {
                guard let opened = TTF_OpenFont(fontPath, Int32(fontPixels)) else { return nil }
                TTF_SetFontWrappedAlign(opened, Int32(TTF_WRAPPED_ALIGN_CENTER))
                fonts[fontPixels] = opened
                font = opened
            }
            let outline = max(1, Int((Double(fontPixels) * Self.outlineShare).rounded()))
            let wrap = UInt32(max(1, maxWidth - 2 * outline))
            TTF_SetFontOutline(font, Int32(outline))
            let back = TTF_RenderUTF8_Blended_Wrapped(font, text, SDL_Color(r: 0, g: 0, b: 0, a: 255), wrap)
            TTF_SetFontOutline(font, 0)
            let front = TTF_RenderUTF8_Blended_Wrapped(font, text, SDL_Color(r: 255, g: 255, b: 255, a: 255), wrap)
            defer {
                SDL_FreeSurface(back)
                SDL_FreeSurface(front)
            }
            guard let back, let front else { return nil }
            // The glyphs over their outline, in one surface of the format the display takes.
            guard let canvas = SDL_ConvertSurfaceFormat(back, SDL_PIXELFORMAT_ARGB8888.rawValue, 0) else { return nil }
            defer { SDL_FreeSurface(canvas) }
            SDL_SetSurfaceBlendMode(front, SDL_BLENDMODE_BLEND)
            var place = SDL_Rect(x: Int32(outline), y: Int32(outline), w: front.pointee.w, h: front.pointee.h)
            guard SDL_UpperBlit(front, nil, canvas, &place) == 0 else { return nil }
            let width = Int(canvas.pointee.w)
            let height = Int(canvas.pointee.h)
            let pitch = Int(canvas.pointee.pitch)
            guard width > 0, height > 0, let base = canvas.pointee.pixels else { return nil }
            SDL_LockSurface(canvas)
            defer { SDL_UnlockSurface(canvas) }
            var pixels = [UInt8](repeating: 0, count: width * height * 4)
            pixels.withUnsafeMutableBytes { target in
                guard let destination = target.baseAddress else { return }
                for row in 0..<height {
                    memcpy(destination.advanced(by: row * width * 4), base.advanced(by: row * pitch), width * 4)
                }
            }
            return SubtitleBitmap(identity: identity, width: width, height: height, pixels: pixels)
        }
    }

    /// SDL_ttf is started once for the process and kept: it holds only FreeType's library.
    private static let ttfStarted = Mutex<Bool?>(nil)

    private static func startTTF() -> Bool {
        ttfStarted.withLock { started in
            if let started { return started }
            let ok = TTF_Init() == 0
            started = ok
            return ok
        }
    }
}
