import Testing
import ChorusTestSupport
@testable import VideoDisplay

@Suite(.ownThread) struct WindowGeometryTests {
    typealias G = WindowGeometry

    @Test func sizeOnly() throws {
        #expect(try G(parsing: "1280x720") == G(width: .pixels(1280), height: .pixels(720)))
        #expect(try G(parsing: "640") == G(width: .pixels(640)))
    }

    @Test func sizeAndPosition() throws {
        #expect(
            try G(parsing: "640x360+10+20")
                == G(
                    width: .pixels(640), height: .pixels(360),
                    x: .init(edge: .leading, length: .pixels(10)),
                    y: .init(edge: .leading, length: .pixels(20))))
    }

    @Test func positionOnlyAndTrailingEdges() throws {
        #expect(
            try G(parsing: "+0+0")
                == G(x: .init(edge: .leading, length: .pixels(0)), y: .init(edge: .leading, length: .pixels(0))))
        #expect(
            try G(parsing: "-0-10")
                == G(x: .init(edge: .trailing, length: .pixels(0)), y: .init(edge: .trailing, length: .pixels(10))))
    }

    @Test func percentages() throws {
        #expect(try G(parsing: "50%x50%") == G(width: .percent(50), height: .percent(50)))
        #expect(try G(parsing: "50%") == G(width: .percent(50)))
        #expect(
            try G(parsing: "+50%-10%")
                == G(x: .init(edge: .leading, length: .percent(50)), y: .init(edge: .trailing, length: .percent(10))))
        #expect(
            try G(parsing: "50:40")
                == G(x: .init(edge: .leading, length: .percent(50)), y: .init(edge: .leading, length: .percent(40))))
    }

    @Test(arguments: [
        "", "abc", "x720", "1280x", "1280y720", "+10", "10+10", "1280x720+10", "0x0", "100000x10",
        "1280x720+a+b", "50%x200%", "12.5x10", "1280x720 ", "50:", "150:10", "+10+10+10",
    ])
    func malformedInputIsRefused(input: String) {
        #expect(throws: VideoWindowError.self) { try G(parsing: input) }
    }

    @Test func errorsNameTheInput() {
        do {
            _ = try G(parsing: "1280y720")
            Issue.record("expected a throw")
        } catch {
            #expect(error.description.hasPrefix("bad window geometry \"1280y720\": "))
        }
    }

    @Test func resolvesAgainstAScreen() throws {
        let screen = DisplayRect(x: 0, y: 0, width: 1920, height: 1080)
        #expect(
            try G(parsing: "640x360+10+20").resolved(in: screen, defaultWidth: 960, defaultHeight: 540)
                == .init(x: 10, y: 20, width: 640, height: 360))
        #expect(
            try G(parsing: "-0-0").resolved(in: screen, defaultWidth: 960, defaultHeight: 540)
                == .init(x: 960, y: 540, width: 960, height: 540))
        #expect(
            try G(parsing: "50%x50%").resolved(in: screen, defaultWidth: 10, defaultHeight: 10)
                == .init(x: nil, y: nil, width: 960, height: 540))
        // A width alone takes a 16:9 height.
        #expect(
            try G(parsing: "1280").resolved(in: screen, defaultWidth: 10, defaultHeight: 10)
                == .init(x: nil, y: nil, width: 1280, height: 720))
        // 50% of the free space (1920 - 960) across, 100% down.
        #expect(
            try G(parsing: "50:100").resolved(in: screen, defaultWidth: 960, defaultHeight: 540)
                == .init(x: 480, y: 540, width: 960, height: 540))
        let offset = DisplayRect(x: 100, y: 50, width: 1000, height: 500)
        #expect(
            G().resolved(in: offset, defaultWidth: 960, defaultHeight: 540)
                == .init(x: nil, y: nil, width: 960, height: 540))
        #expect(
            try G(parsing: "200x100-10+0").resolved(in: offset, defaultWidth: 1, defaultHeight: 1)
                == .init(x: 890, y: 50, width: 200, height: 100))
    }
}
