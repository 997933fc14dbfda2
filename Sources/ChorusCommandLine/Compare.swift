import ArgumentParser
import AVPlayback
import Foundation

/// `chorus compare REFERENCE CAPTURE...`: how closely group members played together.
struct Compare: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Compare render captures (--capture) of group members sample by sample.",
        discussion: """
            For every item position the captures share (after the first --skip seconds), the \
            difference in when it was heard. Captures from processes on one machine share its \
            clock, so this is the truth of how far apart they played.
            """)

    @Argument(help: "The reference capture (usually the leader's), then the others.")
    var captures: [String]

    @Option(name: .long, help: "Seconds of shared content to skip at the start (the followers' convergence).")
    var skip: Double = 2

    func validate() throws {
        guard captures.count >= 2 else { throw ValidationError("give a reference capture and at least one other") }
        guard skip >= 0, skip.isFinite else { throw ValidationError("--skip must be a non-negative number of seconds") }
    }

    func run() throws {
        let reference = try load(captures[0])
        guard let rate = reference.lastRun.first?.sampleRate else { throw ValidationError("\(captures[0]): no rendered periods") }
        print("against \(captures[0]):")
        print("capture                          positions   median µs    p99 µs    max µs   mean µs")
        for path in captures.dropFirst() {
            let offsets = try load(path).offsets(against: reference, skip: skip * Double(rate))
            let name = URL(fileURLWithPath: path).lastPathComponent.padding(toLength: 32, withPad: " ", startingAt: 0)
            guard let agreement = RenderCaptureLog.Agreement(offsets: offsets) else {
                print("\(name) no shared positions")
                continue
            }
            print(String(format: "%@ %9d %11.1f %9.1f %9.1f %+9.1f", name, agreement.count, agreement.median * 1e6,
                         agreement.p99 * 1e6, agreement.maximum * 1e6, agreement.mean * 1e6))
        }
        try comparePictures()
    }

    /// Half a 60 Hz refresh, in nanoseconds: two screens showing a picture within this of
    /// each other show it at the same refresh.
    static let sameRefreshTolerance: Int64 = 8_333_333

    /// The pictures: each capture's picture against its own sound, and every screen's
    /// pictures against the first screen's.
    private func comparePictures() throws {
        let logs = try captures.map { ($0, try load($0)) }.filter { !$0.1.pictures.isEmpty }
        guard let (referencePath, reference) = logs.first else { return }
        let skipNanoseconds = Int64(skip * 1e9)
        print("pictures against their own sound (positive: picture late):")
        print("capture                           pictures   median ms    p99 ms    max ms   mean ms")
        for (path, log) in logs {
            let name = URL(fileURLWithPath: path).lastPathComponent.padding(toLength: 32, withPad: " ", startingAt: 0)
            guard let agreement = RenderCaptureLog.Agreement(offsets: log.pictureToSound(skip: skipNanoseconds)) else {
                print("\(name) no pictures with sound to compare")
                continue
            }
            print(String(format: "%@ %9d %11.2f %9.2f %9.2f %+9.2f", name, agreement.count, agreement.median * 1e3,
                         agreement.p99 * 1e3, agreement.maximum * 1e3, agreement.mean * 1e3))
        }
        guard logs.count >= 2 else { return }
        print("pictures against \(referencePath):")
        print("capture                           pictures   median ms    p99 ms    max ms  same refresh")
        for (path, log) in logs.dropFirst() {
            let name = URL(fileURLWithPath: path).lastPathComponent.padding(toLength: 32, withPad: " ", startingAt: 0)
            guard let agreement = RenderCaptureLog.Agreement(offsets: log.pictureOffsets(against: reference, skip: skipNanoseconds)),
                  let share = log.samePictureShare(against: reference, skip: skipNanoseconds, tolerance: Self.sameRefreshTolerance) else {
                print("\(name) no shared pictures")
                continue
            }
            print(String(format: "%@ %9d %11.2f %9.2f %9.2f %12.2f %%", name, agreement.count, agreement.median * 1e3,
                         agreement.p99 * 1e3, agreement.maximum * 1e3, share * 100))
        }
    }

    private func load(_ path: String) throws -> RenderCaptureLog {
        do { return try RenderCaptureLog(path: path) } catch { throw ValidationError("\(path): \(error.localizedDescription)") }
    }
}
