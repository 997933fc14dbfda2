import Testing
import ChorusTestSupport
@testable import VideoDisplay

@Suite(.ownThread) struct VideoGeometryTests {
    private func place(
        _ content: ContentGeometry, _ gravity: VideoGravity, _ width: Int, _ height: Int
    ) throws -> VideoGeometry {
        try VideoGeometry(content: content, gravity: gravity, drawableWidth: width, drawableHeight: height)
    }

    @Test func aspectFitLetterboxesAWidePictureInASquare() throws {
        let g = try place(ContentGeometry(width: 1920, height: 1080), .resizeAspect, 800, 800)
        #expect(g.presentationSize == DisplaySize(width: 1920, height: 1080))
        #expect(g.sourceRect == DisplayRect(x: 0, y: 0, width: 1920, height: 1080))
        #expect(g.videoRect == DisplayRect(x: 0, y: 175, width: 800, height: 450))
        #expect(g.drawRect == g.videoRect)
        #expect(g.rotationDegrees == 0)
    }

    @Test func aspectFitPillarboxesANarrowPicture() throws {
        let g = try place(ContentGeometry(width: 640, height: 480), .resizeAspect, 1280, 720)
        #expect(g.videoRect == DisplayRect(x: 160, y: 0, width: 960, height: 720))
    }

    @Test func aspectFitOfTheSameShapeFillsExactly() throws {
        let g = try place(ContentGeometry(width: 1920, height: 1080), .resizeAspect, 1280, 720)
        #expect(g.videoRect == DisplayRect(x: 0, y: 0, width: 1280, height: 720))
    }

    @Test func aspectFillOverflowsAndCentres() throws {
        let g = try place(ContentGeometry(width: 1920, height: 1080), .resizeAspectFill, 800, 800)
        // 1920 * 800/1080 = 1422.2 -> 1422; (800 - 1422) / 2 = -311.
        #expect(g.videoRect == DisplayRect(x: -311, y: 0, width: 1422, height: 800))
        #expect(g.sourceRect == DisplayRect(x: 0, y: 0, width: 1920, height: 1080))
    }

    @Test func resizeStretchesToTheDrawable() throws {
        let g = try place(ContentGeometry(width: 1920, height: 1080), .resize, 800, 800)
        #expect(g.videoRect == DisplayRect(x: 0, y: 0, width: 800, height: 800))
    }

    @Test func anamorphicFourThreeWidensTheWidth() throws {
        let content = try ContentGeometry(
            width: 1440, height: 1080, sampleAspectNumerator: 4, sampleAspectDenominator: 3)
        let g = try place(content, .resizeAspect, 1280, 720)
        #expect(g.presentationSize == DisplaySize(width: 1920, height: 1080))
        #expect(g.sourceRect == DisplayRect(x: 0, y: 0, width: 1440, height: 1080))
        #expect(g.videoRect == DisplayRect(x: 0, y: 0, width: 1280, height: 720))
    }

    @Test func sampleAspectRatioIsReducedAndInvalidMeansSquare() throws {
        let pal = try ContentGeometry(
            width: 720, height: 576, sampleAspectNumerator: 64, sampleAspectDenominator: 60)
        #expect(pal.sampleAspectNumerator == 16 && pal.sampleAspectDenominator == 15)
        #expect(try place(pal, .resizeAspect, 768, 576).presentationSize == DisplaySize(width: 768, height: 576))
        for (n, d) in [(0, 1), (1, 0), (-4, 3), (0, 0), (1000, 1)] {
            let c = try ContentGeometry(
                width: 720, height: 576, sampleAspectNumerator: n, sampleAspectDenominator: d)
            #expect(c.sampleAspectNumerator == 1 && c.sampleAspectDenominator == 1, "SAR \(n):\(d)")
        }
    }

    @Test func quarterTurnsSwapTheSides() throws {
        for degrees in [90, 270] {
            let g = try place(ContentGeometry(width: 1920, height: 1080, rotationDegrees: degrees), .resizeAspect, 1280, 720)
            #expect(g.presentationSize == DisplaySize(width: 1080, height: 1920))
            // 1080x1920 at 720/1920 = 0.375 -> 405x720, centred at x = 437.
            #expect(g.videoRect == DisplayRect(x: 437, y: 0, width: 405, height: 720))
            // SDL rotates the unrotated rectangle around its centre (639.5, 360).
            #expect(g.drawRect == DisplayRect(x: 279.5, y: 157.5, width: 720, height: 405))
            #expect(g.rotationDegrees == degrees)
        }
    }

    @Test func halfTurnKeepsTheSides() throws {
        let g = try place(ContentGeometry(width: 1920, height: 1080, rotationDegrees: 180), .resizeAspect, 1280, 720)
        #expect(g.presentationSize == DisplaySize(width: 1920, height: 1080))
        #expect(g.drawRect == DisplayRect(x: 0, y: 0, width: 1280, height: 720))
        #expect(g.rotationDegrees == 180)
    }

    @Test func rotationAppliesAfterSampleAspectRatio() throws {
        let content = try ContentGeometry(
            width: 1440, height: 1080, sampleAspectNumerator: 4, sampleAspectDenominator: 3, rotationDegrees: 90)
        let g = try place(content, .resizeAspect, 1080, 1920)
        #expect(g.presentationSize == DisplaySize(width: 1080, height: 1920))
        #expect(g.videoRect == DisplayRect(x: 0, y: 0, width: 1080, height: 1920))
    }

    @Test func cropSamplesOnlyTheKeptArea() throws {
        let content = try ContentGeometry(
            width: 1920, height: 1080, crop: CropRect(width: 960, height: 1080, x: 480, y: 0))
        let g = try place(content, .resizeAspect, 1280, 720)
        #expect(g.presentationSize == DisplaySize(width: 960, height: 1080))
        #expect(g.sourceRect == DisplayRect(x: 480, y: 0, width: 960, height: 1080))
        // 960x1080 at 720/1080 -> 640x720, centred at x = 320.
        #expect(g.videoRect == DisplayRect(x: 320, y: 0, width: 640, height: 720))
    }

    @Test func fullFrameCropIsNoCrop() throws {
        let content = try ContentGeometry(width: 640, height: 480, crop: CropRect(width: 640, height: 480))
        #expect(content.crop == nil)
    }

    @Test func cropParsesFfmpegOrder() throws {
        #expect(try CropRect(parsing: "960:1080:480:0") == CropRect(width: 960, height: 1080, x: 480, y: 0))
        #expect(try CropRect(parsing: "100:50") == CropRect(width: 100, height: 50))
        for bad in ["", "1:2:3", "a:b:c:d", "1:2:3:4:5"] {
            #expect(throws: VideoWindowError.self) { try CropRect(parsing: bad) }
        }
    }

    @Test func oddRotationsAreRefused() {
        for degrees in [45, -90, 360, 1] {
            #expect(throws: VideoWindowError.badRotation(degrees: degrees)) {
                try ContentGeometry(width: 1920, height: 1080, rotationDegrees: degrees)
            }
        }
    }

    @Test func cropOutsideTheFrameIsRefused() {
        let outside = [
            CropRect(width: 1000, height: 1080, x: 1000, y: 0),  // runs off the right
            CropRect(width: 100, height: 100, x: -1, y: 0),
            CropRect(width: 100, height: 1081, x: 0, y: 0),
            CropRect(width: 0, height: 100, x: 0, y: 0),
        ]
        for crop in outside {
            #expect(throws: VideoWindowError.self) {
                try ContentGeometry(width: 1920, height: 1080, crop: crop)
            }
        }
        do {
            _ = try ContentGeometry(width: 1920, height: 1080, crop: outside[0])
            Issue.record("expected a throw")
        } catch {
            guard case .badCrop = error else { Issue.record("wrong error \(error)"); return }
            #expect(error.description.contains("does not lie inside the 1920x1080 frame"))
        }
    }

    @Test func absurdSizesAreRefused() throws {
        #expect(throws: VideoWindowError.absurdSize(what: "frame size", width: 0, height: 1080)) {
            try ContentGeometry(width: 0, height: 1080)
        }
        #expect(throws: VideoWindowError.absurdSize(what: "frame size", width: 100_000, height: 1080)) {
            try ContentGeometry(width: 100_000, height: 1080)
        }
        #expect(throws: VideoWindowError.absurdSize(what: "frame size", width: 640, height: -1)) {
            try ContentGeometry(width: 640, height: -1)
        }
        #expect(throws: Never.self) { try ContentGeometry(width: 16_384, height: 16_384) }
        let content = try ContentGeometry(width: 640, height: 480)
        #expect(throws: VideoWindowError.absurdSize(what: "drawable size", width: 0, height: 0)) {
            try VideoGeometry(content: content, gravity: .resizeAspect, drawableWidth: 0, drawableHeight: 0)
        }
        #expect(throws: VideoWindowError.absurdSize(what: "drawable size", width: 100_000, height: 720)) {
            try VideoGeometry(content: content, gravity: .resizeAspect, drawableWidth: 100_000, drawableHeight: 720)
        }
    }

    @Test func errorsReadClearly() {
        #expect(VideoWindowError.badRotation(degrees: 45).description
            == "bad rotation 45°: only 0, 90, 180 and 270 are supported")
        #expect(VideoWindowError.absurdSize(what: "frame size", width: 0, height: 1).description
            == "absurd frame size 0x1: each side must be 1...16384 pixels")
        #expect(VideoWindowError.noDisplay(reason: "x11 not available").description
            == "no display available for the video window: x11 not available")
    }

    @Test func anotherCodedSizeKeepsAspectAndRotationButDropsTheCrop() throws {
        let content = try ContentGeometry(
            width: 1440, height: 1080, sampleAspectNumerator: 4, sampleAspectDenominator: 3,
            rotationDegrees: 90, crop: CropRect(width: 1000, height: 1000))
        let adapted = try #require(content.adapted(toWidth: 720, height: 540))
        #expect(adapted.sampleAspectNumerator == 4 && adapted.sampleAspectDenominator == 3)
        #expect(adapted.rotationDegrees == 90)
        #expect(adapted.crop == nil)
        #expect(content.adapted(toWidth: 1440, height: 1080) == content)
    }

    @Test func refreshGridKeepsItsPhaseWhenLate() {
        let interval: Int64 = 16_000_000
        // On time: the next slot.
        #expect(RenderLoop.gridInstant(after: 100, interval: interval, now: 150) == 100 + interval)
        // 2.5 intervals late: skip to the first slot after now, on the same grid.
        let late = RenderLoop.gridInstant(after: 0, interval: interval, now: 40_000_000)
        #expect(late == 48_000_000)
    }
}
