import Testing
import ChorusTestSupport
@testable import MediaPipeline

@Suite(.ownThread) struct OutputSpecTests {
    @Test func parsesEveryForm() throws {
        #expect(try OutputSpec(parsing: "alsa") == .alsa(device: "default"))
        #expect(try OutputSpec(parsing: "alsa:hw:1,0") == .alsa(device: "hw:1,0"))
        #expect(try OutputSpec(parsing: "null") == .null(driftPPM: 0))
        #expect(try OutputSpec(parsing: "null:drift=80") == .null(driftPPM: 80))
        #expect(try OutputSpec(parsing: "null:drift=-120.5") == .null(driftPPM: -120.5))
        #expect(try OutputSpec(parsing: "wav:/tmp/x.wav") == .wav(path: "/tmp/x.wav"))
    }

    @Test(arguments: ["", "pulse", "alsa:", "null:drift=", "null:drift=abc", "null:speed=2",
                      "null:drift=5000", "null:drift=nan", "wav", "wav:"])
    func rejectsMalformedSpecs(_ text: String) {
        #expect(throws: MediaError.self) { try OutputSpec(parsing: text) }
    }

    @Test func describesItselfAsParsed() throws {
        for text in ["alsa:default", "null", "wav:out.wav"] {
            #expect(try OutputSpec(parsing: text).description == text)
        }
    }
}
