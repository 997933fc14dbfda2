import Foundation
import Testing
import ChorusTestSupport
import MediaClock
@testable import MediaPipeline

/// Speed changes with the pitch kept, on simulated devices. A followed timeline (a group's):
/// every room takes the pitch stage in at the change with no gap and nothing skipped, and
/// hears the same content through it at the same host time, whatever its periods. Plain
/// play: a new rate goes on from the content heard, with no gap.
@Suite(.ownThread) struct FollowedPitchTests {
    static let sampleRate = 48_000
    let format = AudioFormat(sampleRate: FollowedPitchTests.sampleRate, channels: 1)
    /// The content fed: a 440 Hz tone at 0.5, then from `burstsFrom` loud (0.5) for the
    /// first `burstFrames` of every `burstEvery` frames and quiet (0.02) otherwise, so that
    /// where each burst is heard can be found (its energy's centre) through a stage that
    /// keeps the pitch.
    static let toneHertz = 440.0
    static let burstsFrom: Int64 = 120_000
    static let burstEvery: Int64 = 12_000
    static let burstFrames: Int64 = 960
    static func content(_ frame: Int64) -> Float {
        let loud = frame < burstsFrom || frame % burstEvery < burstFrames
        return Float((loud ? 0.5 : 0.02) * sin(2 * Double.pi * toneHertz * Double(frame) / Double(sampleRate)))
    }

    /// How far apart rooms may hear a burst through the stage. Each engine decides from what
    /// it is given, and rooms give it the same content a fraction of a frame apart (their
    /// resamplers' phases). The time-domain engine takes the nearest of equally good
    /// continuations, so such rooms choose alike (measured 7 µs apart; taking the best alone,
    /// they chose continuations a period apart, up to 21 ms); Rubber Band's finer engine
    /// moves bursts by a few ms alike in every room (measured up to 200 µs apart).
    static let roomSpread = 0.5e-3
    /// How far from its place on the timeline a burst may be heard: the time-domain engine's
    /// search radius (15 ms; measured 4.8 ms), or the spectral engine's analysis window
    /// (2,048 frames, 43 ms; measured 3.9 ms).
    static func offTimeline(_ pitch: PitchMode) -> Double { pitch == .spectral ? 2_048.0 / Double(sampleRate) : 15e-3 }

    /// A room: a device whose periods start `phase` after the first room's, following
    /// `timeline` with `pitch`.
    func room(phase: Duration, timeline: RenderTimeline, pitch: PitchMode) throws -> SimulatedRendering {
        let device = SimulatedDevice(start: SimulatedDevice.origin + phase)
        // The player's read-ahead: taking the stage in reads its delay's worth ahead at the
        // new speed (0.54 s of the item for `.spectral` at 2×).
        let rendering = try SimulatedRendering(device: device, format: format, feeding: 1, capacity: PlaybackEngine.readAhead)
        rendering.feedValue = Self.content
        rendering.renderer.update {
            $0.mode = .follow(serial: 1, timeline: timeline)
            $0.pitch = pitch
        }
        return rendering
    }

    /// What a device heard, as plain arrays: each frame's host time in nanoseconds from
    /// `origin`, and its value (the analysis runs over hundreds of thousands of frames).
    struct Heard {
        var times: [Int64] = []
        var values: [Float] = []

        init(_ device: SimulatedDevice, origin: HostTime) {
            for frame in device.heardFrames {
                times.append(frame.host.nanoseconds - origin.nanoseconds)
                values.append(frame.value)
            }
        }

        /// The indices of the frames heard from `start` until `end` (nanoseconds from the origin).
        func range(_ start: Int64, _ end: Int64) -> Range<Int> {
            func first(atOrAfter time: Int64) -> Int {
                var low = 0, high = times.count
                while low < high {
                    let middle = (low + high) / 2
                    if times[middle] < time { low = middle + 1 } else { high = middle }
                }
                return low
            }
            let lower = first(atOrAfter: start)
            return lower..<max(lower, first(atOrAfter: end))
        }

        /// The values heard from `start` until `end`.
        func values(_ start: Int64, _ end: Int64) -> ArraySlice<Float> { values[range(start, end)] }

        /// Where the energy heard within `window` of `around` is centred, in nanoseconds from
        /// `around`.
        func centre(around: Int64, window: Int64) -> Double {
            var weighted = 0.0, total = 0.0
            for index in range(around - window, around + window) {
                let energy = Double(values[index]) * Double(values[index])
                weighted += energy * Double(times[index] - around)
                total += energy
            }
            return total > 0 ? weighted / total : .infinity
        }
    }

    /// The frequency of a stretch from its zero crossings (a pure tone's).
    static func frequency(_ values: ArraySlice<Float>) -> Double {
        var crossings = 0
        for index in values.indices.dropFirst() where (values[index - 1] < 0) != (values[index] < 0) { crossings += 1 }
        return Double(crossings) / 2 / (Double(values.count) / Double(sampleRate))
    }

    /// The loudest value in each 5 ms of `values` (frames at `sampleRate`), the least of them.
    static func quietest(_ values: ArraySlice<Float>) -> Float {
        let window = sampleRate / 200
        var quietest: Float = 1
        var start = values.startIndex
        while start + window <= values.endIndex {
            quietest = min(quietest, values[start..<(start + window)].map(abs).max() ?? 0)
            start += window
        }
        return quietest
    }

    @Test("plain play takes the stage in at a new rate with no gap, and goes on from the content heard",
          arguments: [PitchMode.timeDomain, .spectral])
    func plainPlayTakesTheStageInWithoutAGap(pitch: PitchMode) throws {
        let device = SimulatedDevice(start: SimulatedDevice.origin)
        let rendering = try SimulatedRendering(device: device, format: format, feeding: 1, capacity: PlaybackEngine.readAhead)
        rendering.feedValue = { Float(0.5 * sin(2 * Double.pi * Self.toneHertz * Double($0) / Double(Self.sampleRate))) }
        rendering.renderer.update {
            $0.mode = .play(serial: 1, frame: 0, hostTime: nil)
            $0.pitch = pitch
        }
        rendering.run(until: SimulatedDevice.origin + .seconds(1))
        let before = rendering.renderer.currentStatus
        #expect(before.phase == .playing)
        let change = device.now
        rendering.renderer.update { $0.rate = 2 }
        rendering.run(until: change + .seconds(1))
        let status = rendering.renderer.currentStatus
        #expect(status.phase == .playing && status.stalls == 0)
        let heard = Heard(device, origin: change)
        let millisecond: Int64 = 1_000_000
        // Sound all through the change (taken in with a lead-in of its delay, the stage left
        // 65 ms, 0.26 s for `.spectral`, silent), and the tone at its own pitch after it.
        let around = heard.values(-100 * millisecond, 600 * millisecond)
        #expect(Self.quietest(around) > 0.45, "a 5 ms stretch around the change peaked at \(Self.quietest(around))")
        let after = heard.values(100 * millisecond, 600 * millisecond)
        #expect(abs(Self.frequency(after) - Self.toneHertz) < 10, "\(Self.frequency(after)) Hz after")
        // The item goes on from where it was heard: by the renderer's reports, the item
        // frames heard at the change and a second later lie as far apart as the time heard
        // at each speed says (the device's queue, written at 1, plays out first). Had the
        // stage's delay been skipped (3,123 or 12,288 frames), they would lie that much
        // further apart.
        func position(_ report: RenderStatus, at host: HostTime) -> Double {
            report.anchorPosition + Double((host - report.anchorHost).nanosecondsClamped) / 1e9 * report.anchorRate
                * Double(Self.sampleRate)
        }
        func seconds(_ duration: Duration) -> Double { Double(duration.nanosecondsClamped) / 1e9 }
        #expect(status.anchorRate == 2 && status.rateBefore == 1)
        let expected = seconds(status.rateSince - change) + 2 * seconds(device.now - status.rateSince)
        let moved = (position(status, at: device.now) - position(before, at: change)) / Double(Self.sampleRate)
        #expect(abs(moved - expected) < 0.005, "the item moved \(moved) s where \(expected) s was heard")
    }

    @Test("rooms with other periods take the stage in at a speed change together, and hear each burst at the same instant",
          arguments: [PitchMode.timeDomain, .spectral])
    func roomsTakeTheStageInTogether(pitch: PitchMode) throws {
        let initial = RenderTimeline(frame: 0, host: SimulatedDevice.origin + .milliseconds(100), rate: 1)
        // The second room's periods start 3 ms (144 frames) later, the others at fractions
        // of a frame from the first's: the change falls at another place in each room's
        // period, and their streams start at another fraction of a frame. (With the change
        // read wholly at one rate in the frame it fell in, rooms at 0.55 to 0.9 of a frame
        // from the first heard the bursts of the next second a pitch period, 3.6 ms, apart.)
        let phases: [Duration] = [.zero, .milliseconds(3), .microseconds(7_100), .microseconds(2_139),
                                  .microseconds(2_852), .microseconds(4_991)]
        let rooms = try phases.map { try room(phase: $0, timeline: initial, pitch: pitch) }
        for room in rooms { room.run(until: SimulatedDevice.origin + .seconds(1)) }
        // Twice the speed from an instant inside a period of every room.
        let change = SimulatedDevice.origin + .milliseconds(1_200) + .microseconds(4_321)
        let doubled = RenderTimeline(frame: Int64(initial.due(at: change, sampleRate: Self.sampleRate).rounded()), host: change,
                                     rate: 2, rateBefore: 1)
        for room in rooms { room.renderer.update { $0.mode = .follow(serial: 1, timeline: doubled) } }
        let end = change + .milliseconds(2_600)
        for room in rooms { room.run(until: end) }
        let millisecond: Int64 = 1_000_000
        let heards = rooms.map { Heard($0.device, origin: change) }
        for (index, room) in rooms.enumerated() {
            let status = room.renderer.currentStatus
            #expect(status.hardResyncs == 0, "room \(index)")
            #expect(status.serial == 1 && status.phase == .playing, "room \(index)")
            #expect(abs(status.timelineError.nanosecondsClamped) < 30_000, "room \(index): \(status.timelineError)")
            // Sound all through the change, with no stretch of 5 ms below a tenth of the
            // tone, and at its own pitch though the item runs twice as fast. Taken in at the
            // change with a lead-in of its delay, the stage left 65 ms (0.26 s for
            // `.spectral`) silent here, and that content was skipped.
            let quietest = Self.quietest(heards[index].values(-100 * millisecond, 600 * millisecond))
            #expect(quietest > 0.05, "room \(index): a 5 ms stretch around the change peaked at \(quietest)")
            let after = heards[index].values(100 * millisecond, 600 * millisecond)
            #expect(abs(Self.frequency(after) - Self.toneHertz) < 10, "room \(index): \(Self.frequency(after)) Hz after")
        }
        // Every burst from the first: each room hears it centred where the timeline puts
        // it, and all rooms together. (The first is left out: the window around it would
        // reach back into the tone.)
        var burst = Self.burstsFrom / Self.burstEvery + 2
        var checked = 0
        var spread = 0.0, offTimeline = 0.0
        while true {
            let centreFrame = Double(burst * Self.burstEvery + Self.burstFrames / 2)
            let due = Int64((centreFrame - Double(doubled.frame)) / 2 / Double(Self.sampleRate) * 1e9)
            guard due < (end - change).nanosecondsClamped - 150 * millisecond else { break }
            let centres = heards.map { $0.centre(around: due, window: 50 * millisecond) }
            spread = max(spread, (centres.max() ?? 0) - (centres.min() ?? 0))
            offTimeline = max(offTimeline, centres.map(abs).max() ?? .infinity)
            checked += 1
            burst += 1
        }
        #expect(checked > 10)
        #expect(spread < Self.roomSpread * 1e9, "rooms heard a burst up to \(spread / 1e3) µs apart")
        #expect(offTimeline < Self.offTimeline(pitch) * 1e9, "a burst heard up to \(offTimeline / 1e6) ms from where the timeline puts it")
    }
}
