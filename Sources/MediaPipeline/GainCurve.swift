import Synchronization
import MutexAnnotations

/// A track's gain over its item's time, as an audio mix describes it: 1 before the first
/// setting; from each setting's start to the next setting's, a ramp from `startGain` to
/// `endGain` over the setting's own span, then `endGain` held (a setting of no span is a
/// step to its gain).
public struct GainCurve: Sendable, Equatable {
    /// One setting, in seconds of the item's time.
    public struct Setting: Sendable, Equatable {
        public var start: Double
        public var end: Double
        public var startGain: Float
        public var endGain: Float

        public init(start: Double, end: Double, startGain: Float, endGain: Float) {
            self.start = start
            self.end = end
            self.startGain = startGain
            self.endGain = endGain
        }
    }

    /// In order of their starts; no two start at the same time.
    public let settings: [Setting]

    /// A curve of `settings`, sorted by their starts (a later one of two with the same start
    /// wins); settings whose times or gains are not finite are left out.
    public init(settings: [Setting]) {
        var kept: [Setting] = []
        for setting in settings where setting.start.isFinite && !setting.end.isNaN
            && setting.startGain.isFinite && setting.endGain.isFinite {
            kept.removeAll { $0.start == setting.start }
            kept.append(setting)
        }
        self.settings = kept.sorted { $0.start < $1.start }
    }

    /// Whether the curve leaves every frame as it is.
    public var isUnity: Bool { settings.allSatisfy { $0.startGain == 1 && $0.endGain == 1 } }

    /// The gain at `seconds` of the item's time.
    public func gain(atSeconds seconds: Double) -> Float {
        guard let index = settings.lastIndex(where: { $0.start <= seconds }) else { return 1 }
        let setting = settings[index]
        let span = setting.end - setting.start
        guard span > 0, seconds < setting.end, setting.startGain != setting.endGain else { return setting.endGain }
        let progress = Float((seconds - setting.start) / span)
        return setting.startGain + (setting.endGain - setting.startGain) * min(max(progress, 0), 1)
    }

    /// Multiplies `frames` interleaved frames of `channels` channels, the first of them at
    /// item frame `firstFrame` of a stream of `sampleRate` frames a second, by the gain at
    /// each frame's time.
    public func apply(to samples: UnsafeMutablePointer<Float>, frames: Int, channels: Int, firstFrame: Int64, sampleRate: Int) {
        guard frames > 0, channels > 0, sampleRate > 0 else { return }
        let rate = Double(sampleRate)
        let first = gain(atSeconds: Double(firstFrame) / rate)
        let last = gain(atSeconds: Double(firstFrame + Int64(frames - 1)) / rate)
        if first == last && !settings.contains(where: { changesWithin($0, from: firstFrame, frames: frames, rate: rate) }) {
            // One gain over the whole block, the common case (a held volume): no per-frame work.
            guard first != 1 else { return }
            for index in 0..<(frames * channels) { samples[index] *= first }
            return
        }
        for frame in 0..<frames {
            let gain = gain(atSeconds: Double(firstFrame + Int64(frame)) / rate)
            let base = frame * channels
            for channel in 0..<channels { samples[base + channel] *= gain }
        }
    }

    /// Whether `setting` starts or ramps inside the block, so that the gain may differ
    /// between its frames even where its first and last agree.
    private func changesWithin(_ setting: Setting, from firstFrame: Int64, frames: Int, rate: Double) -> Bool {
        let start = Double(firstFrame) / rate
        let end = Double(firstFrame + Int64(frames)) / rate
        return setting.start < end && max(setting.start, setting.end) > start
    }
}

/// The gain curves of one item's tracks, by track ID, shared by everything that decodes the
/// item's sound: a reader applies its track's curve to each block it decodes, so a change
/// is heard from the sound decoded after it. Set by the item, read by its readers.
public final class ItemGain: Sendable {
    private let curves = Mutex<[Int32: GainCurve]>([:])

    public init() {}

    /// Replaces every track's curve (`[:]` for none: the tracks play as they are).
    public func set(_ newCurves: [Int32: GainCurve]) {
        let kept = newCurves.filter { !$0.value.isUnity }
        curves.withLockAnnotated { $0 = kept }
    }

    /// The curve of the track with ID `trackID`; nil when it plays as it is.
    public func curve(forTrack trackID: Int32) -> GainCurve? {
        curves.withLockAnnotated { $0[trackID] }
    }
}
