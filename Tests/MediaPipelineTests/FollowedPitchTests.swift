import Foundation
import Testing
import MediaClock
@testable import MediaPipeline

/// A followed timeline (a group's) whose speed changes with the pitch kept, on simulated
/// devices: every room takes the pitch stage in at the same instant, and hears the same
/// content through it at the same host time, whatever its periods.
@Suite struct FollowedPitchTests {
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
    /// continuations, so such rooms choose alike (measured 3 µs apart; taking the best alone,
    /// they chose continuations a period apart, up to 21 ms); Rubber Band's finer engine
    /// moves bursts by a few ms alike in every room (measured 83 µs apart).
    static let roomSpread = 0.5e-3
    /// How far from its place on the timeline a burst may be heard: the time-domain engine's
    /// search radius (15 ms; measured 5.2 ms), or the spectral engine's analysis window
    /// (2,048 frames, 43 ms; measured 3.8 ms).
    static func offTimeline(_ pitch: PitchMode) -> Double { pitch == .spectral ? 2_048.0 / Double(sampleRate) : 15e-3 }

    /// A room: a device whose periods start `phase` after the first room's, following
    /// `timeline` with `pitch`.
    func room(phase: Duration, timeline: RenderTimeline, pitch: PitchMode) throws -> SimulatedRendering {
        let device = SimulatedDevice(start: SimulatedDevice.origin + phase)
        let rendering = try SimulatedRendering(device: device, format: format, feeding: 1)
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
                times.append((frame.host - origin).nanosecondsClamped)
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

    @Test("rooms with other periods take the stage in at a speed change together, and hear each burst at the same instant",
          arguments: [PitchMode.timeDomain, .spectral])
    func roomsTakeTheStageInTogether(pitch: PitchMode) throws {
        let initial = RenderTimeline(frame: 0, host: SimulatedDevice.origin + .milliseconds(100), rate: 1)
        // The second room's periods start 3 ms (144 frames) later, the third's 7.1 ms: the
        // change falls at another place in each room's period.
        let phases: [Duration] = [.zero, .milliseconds(3), .microseconds(7_100)]
        let rooms = try phases.map { try room(phase: $0, timeline: initial, pitch: pitch) }
        for room in rooms { room.run(until: SimulatedDevice.origin + .seconds(1)) }
        // Twice the speed from an instant inside a period of every room.
        let change = SimulatedDevice.origin + .milliseconds(1_200) + .microseconds(4_321)
        let doubled = RenderTimeline(frame: Int64(initial.due(at: change, sampleRate: Self.sampleRate).rounded()), host: change,
                                     rate: 2, rateBefore: 1)
        for room in rooms { room.renderer.update { $0.mode = .follow(serial: 1, timeline: doubled) } }
        let end = change + .milliseconds(2_600)
        for room in rooms { room.run(until: end) }
        let latency = try #require(PitchKeeper(mode: pitch, sampleRate: Self.sampleRate, channels: 1, maximumFrames: 480)).latencyFrames
        // In nanoseconds from the change, as the heard frames are.
        let stage = format.duration(ofFrames: Int64(latency)).nanosecondsClamped
        // A phase vocoder spreads a sound's start over its analysis window, so the content
        // placed at the gap's end is heard rising up to this much before it.
        let window = format.duration(ofFrames: 2_048).nanosecondsClamped
        let frame = format.duration(ofFrames: 1).nanosecondsClamped
        let millisecond: Int64 = 1_000_000
        let heards = rooms.map { Heard($0.device, origin: change) }
        for (index, room) in rooms.enumerated() {
            let status = room.renderer.currentStatus
            #expect(status.hardResyncs == 0, "room \(index)")
            #expect(status.serial == 1 && status.phase == .playing, "room \(index)")
            #expect(abs(status.timelineError.nanosecondsClamped) < 30_000, "room \(index): \(status.timelineError)")
            // Sound up to the change, silence for the stage's delay, then sound again, at its
            // own pitch though the item runs twice as fast.
            let before = heards[index].values(-100 * millisecond, -frame)
            #expect((before.map(abs).max() ?? 0) > 0.01, "room \(index) before the change")
            let gap = heards[index].values(frame, stage - window)
            #expect(gap.count > latency - 2_100 && (gap.map(abs).max() ?? 1) < 1e-4, "room \(index): \(gap.map(abs).max() ?? 1) in the gap")
            let after = heards[index].values(stage + 100 * millisecond, stage + 600 * millisecond)
            #expect(abs(Self.frequency(after) - Self.toneHertz) < 10, "room \(index): \(Self.frequency(after)) Hz after")
        }
        // Every burst from the first after the gap: each room hears it centred where the
        // timeline puts it, and all rooms together.
        // (The first is left out: the window around it would reach back into the tone.)
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
