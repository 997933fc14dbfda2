import Foundation
import Testing
import ChorusTestSupport
@testable import MediaPipeline

/// Pictures in a render capture: against their sound, and one screen against another.
@Suite(.ownThread) struct CapturePictureTests {
    /// Sound at 48 kHz heard from host time 1 s on, in 10 ms periods, for `seconds`.
    private func periods(seconds: Int, serial: Int = 1, startHost: Int64 = 1_000_000_000) -> [RenderCaptureLog.Period] {
        (0..<(seconds * 100)).map { index in
            RenderCaptureLog.Period(host: startHost + Int64(index) * 10_000_000, position: Double(index * 480), frames: 480,
                                    sampleRate: 48_000, serial: serial)
        }
    }

    @Test("a picture presented when its sound is heard is 0 ms off; one a refresh later, a refresh late")
    func pictureAgainstSound() {
        // Picture n is due at item time n × 40 ms, heard at host 1 s + that.
        let onTime = (0..<25).map { n in
            RenderCaptureLog.Picture(host: 1_000_000_000 + Int64(n) * 40_000_000, itemNanoseconds: Int64(n) * 40_000_000, number: Int64(n), serial: 1)
        }
        let late = onTime.map { RenderCaptureLog.Picture(host: $0.host + 16_666_667, itemNanoseconds: $0.itemNanoseconds, number: $0.number, serial: 1) }
        let exact = RenderCaptureLog(periods: periods(seconds: 2), pictures: onTime).pictureToSound(skip: 0)
        #expect(exact.count == 24)  // the last picture's time is past the last period's start
        #expect(exact.allSatisfy { abs($0) < 1e-9 })
        let shifted = RenderCaptureLog(periods: periods(seconds: 2), pictures: late).pictureToSound(skip: 0)
        #expect(shifted.allSatisfy { abs($0 - 0.016_666_667) < 1e-9 })
        // Pictures of another serial (another item, or before a seek) are not compared.
        let stale = onTime.map { RenderCaptureLog.Picture(host: $0.host, itemNanoseconds: $0.itemNanoseconds, number: $0.number, serial: 0) }
        #expect(RenderCaptureLog(periods: periods(seconds: 2), pictures: stale).pictureToSound(skip: 0).isEmpty)
    }

    @Test("two screens compared picture by picture, and the share shown at the same refresh")
    func screenAgainstScreen() {
        let first = (0..<100).map { n in
            RenderCaptureLog.Picture(host: Int64(n) * 33_333_333, itemNanoseconds: Int64(n) * 33_333_333, number: Int64(n), serial: 1)
        }
        // The second screen shows the same pictures, one in ten a refresh late, and misses
        // the first five (it joined later).
        let second = first.dropFirst(5).map { picture in
            RenderCaptureLog.Picture(host: picture.host + (picture.number % 10 == 0 ? 16_666_667 : 1_000_000),
                                     itemNanoseconds: picture.itemNanoseconds, number: picture.number + 1_000, serial: 7)
        }
        let a = RenderCaptureLog(periods: [], pictures: first), b = RenderCaptureLog(periods: [], pictures: second)
        let offsets = b.pictureOffsets(against: a, skip: 0)
        #expect(offsets.count == 95)
        #expect(offsets.filter { abs($0 - 0.001) < 1e-9 }.count == 86)
        let share = b.samePictureShare(against: a, skip: 0, tolerance: 8_333_333)
        // Of the first screen's 100 pictures the second showed 86 at the same refresh (95 less
        // the 9 late ones: 10, 20 ... 90).
        #expect(share == 0.86)
        // From after the join on, 90 pictures of which 81 at the same refresh.
        #expect(b.samePictureShare(against: a, skip: 10 * 33_333_333, tolerance: 8_333_333) == 81.0 / 90.0)
    }

    @Test("picture rows are read back from a capture file beside the sound's, and bad rows are skipped")
    func readBack() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pictures-\(getpid()).cap").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let text = """
        1000 0.0000 480 48000 1 1000 1.000000
        V 1005 0 0 1
        V 1006 40000000 1 1
        V bad row here
        V 1007 80000000
        2000 480.0000 480 48000 1 2000 1.000000

        """
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let log = try RenderCaptureLog(path: path)
        #expect(log.periods.count == 2)
        #expect(log.pictures == [RenderCaptureLog.Picture(host: 1005, itemNanoseconds: 0, number: 0, serial: 1),
                                 RenderCaptureLog.Picture(host: 1006, itemNanoseconds: 40_000_000, number: 1, serial: 1)])
    }
}
