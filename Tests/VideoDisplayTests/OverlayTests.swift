internal import CSDL2
import Testing
import ChorusTestSupport
@testable import VideoDisplay

@Suite(.ownThread) struct OverlayTextTests {
    private func line(_ build: (inout OverlayText) -> Void) -> String {
        var text = OverlayText()
        build(&text)
        return text.string
    }

    @Test func times() {
        #expect(line { $0.appendTime(seconds: 0) } == "0:00")
        #expect(line { $0.appendTime(seconds: 65.9) } == "1:05")
        #expect(line { $0.appendTime(seconds: 3600 + 2 * 60 + 3) } == "1:02:03")
        #expect(line { $0.appendTime(seconds: -5) } == "0:00")
        #expect(line { $0.appendTime(seconds: .nan) } == "0:00")
        #expect(line { $0.appendTime(seconds: 1e12) } == "99:59:59")
    }

    @Test func rates() {
        #expect(line { $0.appendRate(1) } == "1x")
        #expect(line { $0.appendRate(1.5) } == "1.5x")
        #expect(line { $0.appendRate(0.25) } == "0.25x")
        #expect(line { $0.appendRate(2.0) } == "2x")
        #expect(line { $0.appendRate(1.05) } == "1.05x")
    }

    @Test func lineStopsAtCapacity() {
        let s = line { text in
            for _ in 0..<100 { text.append(UInt8(ascii: "9")) }
        }
        #expect(s.count == OverlayText.capacity)
    }

    @Test func everyGlyphTheOverlayWritesExists() {
        for character in "0123456789:.-x/dropped" {
            #expect(BitmapFont.glyph(character.asciiValue!) != 0, "glyph \(character)")
        }
        #expect(BitmapFont.glyph(UInt8(ascii: " ")) == 0)
        // '1' : top row 00100.
        #expect(BitmapFont.row(BitmapFont.glyph(UInt8(ascii: "1")), 0) == 0b00100)
        #expect(BitmapFont.row(BitmapFont.glyph(UInt8(ascii: "1")), 6) == 0b01110)
    }
}

@Suite(.ownThread) struct OverlayLayoutTests {
    @Test func controlsSitAlongTheBottom() {
        let layout = OverlayLayout(drawableWidth: 1280, drawableHeight: 720)
        #expect(layout.scale == 1)
        #expect(layout.panel == PixelRect(x: 0, y: 660, width: 1280, height: 60))
        #expect(layout.track == PixelRect(x: 12, y: 672, width: 1256, height: 6))
        #expect(layout.button == PixelRect(x: 12, y: 688, width: 22, height: 22))
    }

    @Test func hits() {
        let layout = OverlayLayout(drawableWidth: 1280, drawableHeight: 720)
        #expect(layout.hit(x: 12, y: 675) == .scrub(fraction: 0))
        #expect(layout.hit(x: 1267, y: 666) == .scrub(fraction: 1))
        guard case .scrub(let middle) = layout.hit(x: 12 + 1255 / 2, y: 680) else {
            Issue.record("expected a scrub hit")
            return
        }
        #expect(abs(middle - 0.5) < 0.001)
        #expect(layout.hit(x: 20, y: 700) == .playPause)
        #expect(layout.hit(x: 600, y: 700) == .panel)
        #expect(layout.hit(x: 600, y: 300) == .outside)
        // Drags past the ends clamp.
        #expect(layout.fraction(atX: -50) == 0)
        #expect(layout.fraction(atX: 5000) == 1)
    }

    @Test func tallDrawablesScaleByWholeSteps() {
        let layout = OverlayLayout(drawableWidth: 3840, drawableHeight: 2160)
        #expect(layout.scale == 3)
        #expect(layout.panel.height == 180)
        #expect(layout.fontPixel == 6)
    }
}

@Suite(.ownThread) struct KeyTranslationTests {
    private func key(_ code: SDL_KeyCode, shift: Bool = false, isRepeat: Bool = false) -> KeyTranslation.Result {
        KeyTranslation.translate(
            keycode: Int(code.rawValue), modifiers: shift ? Int(KMOD_LSHIFT.rawValue) : 0, isRepeat: isRepeat)
    }

    @Test func namedKeys() {
        #expect(key(SDLK_SPACE).event == .key(.space))
        #expect(key(SDLK_SPACE).swallowsText)
        #expect(key(SDLK_q).event == .key(.q))
        #expect(key(SDLK_ESCAPE).event == .key(.escape))
        #expect(!key(SDLK_ESCAPE).swallowsText)
        #expect(key(SDLK_LEFT).event == .key(.left))
        #expect(key(SDLK_PERIOD).event == .key(.period))
        #expect(key(SDLK_COMMA).event == .key(.comma))
        #expect(key(SDLK_LEFTBRACKET).event == .key(.leftBracket))
        #expect(key(SDLK_RIGHTBRACKET).event == .key(.rightBracket))
        #expect(key(SDLK_m).event == .key(.m))
        #expect(key(SDLK_7).event == .key(.digit(7)))
        #expect(key(SDLK_KP_0).event == .key(.digit(0)))
        #expect(key(SDLK_KP_9).event == .key(.digit(9)))
    }

    @Test func fTogglesFullscreen() {
        #expect(key(SDLK_f).event == .toggleFullscreen)
    }

    @Test func shiftedKeysAreLeftToTheTextEvent() {
        #expect(key(SDLK_q, shift: true) == .init(event: nil, swallowsText: false))
        #expect(key(SDLK_PERIOD, shift: true) == .init(event: nil, swallowsText: false))
        #expect(key(SDLK_RIGHT, shift: true).event == .key(.right))
    }

    @Test func autoRepeatOnlyForStepKeys() {
        #expect(key(SDLK_RIGHT, isRepeat: true).event == .key(.right))
        #expect(key(SDLK_PERIOD, isRepeat: true).event == .key(.period))
        #expect(key(SDLK_SPACE, isRepeat: true) == .init(event: nil, swallowsText: true))
        #expect(key(SDLK_f, isRepeat: true).event == nil)
    }

    @Test func unknownKeysFallThroughToText() {
        #expect(key(SDLK_a) == .init(event: nil, swallowsText: false))
        #expect(key(SDLK_F5) == .init(event: nil, swallowsText: false))
    }
}
