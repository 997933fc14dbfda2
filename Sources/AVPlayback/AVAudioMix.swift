import Foundation
import MutexAnnotations
import Synchronization

/// The track identifier that names no track (`kCMPersistentTrackID_Invalid`).
public let kCMPersistentTrackID_Invalid: CMPersistentTrackID = 0

/// How an item's audio tracks are mixed: one set of input parameters per track, each with
/// its volume over time (`AVAudioMix`).
///
/// Handed to an item through `AVPlayerItem.audioMix`, which keeps a copy and plays its
/// sound at the volumes the mix gives its track, times the player's `volume`.
///
/// Immutable; `AVMutableAudioMix` is the one to build. `copy()` gives an immutable copy and
/// `mutableCopy()` a mutable one, as Foundation's copying does on Apple's platforms.
// @unchecked only because the class has a mutable subclass (a non-final class cannot be
// checked): its one field is a Mutex.
open class AVAudioMix: NSCopying, NSMutableCopying, @unchecked Sendable {
    /// The parameters, behind a lock because the mutable subclass changes them from any thread.
    let parameters: Mutex<[AVAudioMixInputParameters]>

    /// An empty mix.
    public init() { parameters = Mutex([]) }

    /// A mix of `inputParameters`, as they are.
    init(inputParameters: [AVAudioMixInputParameters]) { parameters = Mutex(inputParameters) }

    /// The parameters of each track the mix changes; a track not listed plays as it is.
    open var inputParameters: [AVAudioMixInputParameters] { parameters.withLockAnnotated { $0 } }

    /// An immutable mix with copies of these parameters.
    open func copy(with zone: NSZone?) -> Any {
        AVAudioMix(inputParameters: inputParameters.map(\.immutableCopy))
    }

    /// A mutable mix with mutable copies of these parameters.
    open func mutableCopy(with zone: NSZone?) -> Any {
        AVMutableAudioMix(inputParameters: inputParameters.map(\.mutableParametersCopy))
    }

    /// An immutable copy (`NSObject.copy()` on Apple's platforms).
    public func copy() -> Any { copy(with: nil) }

    /// A mutable copy (`NSObject.mutableCopy()` on Apple's platforms).
    public func mutableCopy() -> Any { mutableCopy(with: nil) }
}

/// An audio mix whose parameters can be set (`AVMutableAudioMix`).
// @unchecked restates its superclass's: it adds no field.
open class AVMutableAudioMix: AVAudioMix, @unchecked Sendable {
    /// The parameters of each track the mix changes.
    override open var inputParameters: [AVAudioMixInputParameters] {
        get { parameters.withLockAnnotated { $0 } }
        set { parameters.withLockAnnotated { $0 = newValue } }
    }
}

/// One track's part in an audio mix: which track, and its volume over time
/// (`AVAudioMixInputParameters`).
///
/// The volume is 1 before the first time a volume is set; from a time set with
/// `setVolume(_:at:)` it holds that volume; through a ramp it moves linearly from the ramp's
/// start volume to its end volume, and holds the end volume after it, until the next setting.
/// A setting made at the same start time as an earlier one replaces it.
// @unchecked only because the class has a mutable subclass (a non-final class cannot be
// checked): its one field is a Mutex.
open class AVAudioMixInputParameters: NSCopying, NSMutableCopying, @unchecked Sendable {
    /// One volume setting: a ramp over `timeRange`, or (zero duration, equal volumes) a
    /// volume from `timeRange.start` on.
    struct VolumeSetting: Sendable, Equatable {
        var timeRange: CMTimeRange
        var startVolume: Float
        var endVolume: Float
    }

    struct Settings: Sendable {
        var trackID = kCMPersistentTrackID_Invalid
        var audioTimePitchAlgorithm: AVAudioTimePitchAlgorithm?
        /// In order of their start times; no two start at the same time.
        var volumes: [VolumeSetting] = []
    }

    let settings: Mutex<Settings>

    /// Parameters for no track, with no volume set.
    public init() { settings = Mutex(Settings()) }

    init(settings: Settings) { self.settings = Mutex(settings) }

    /// The track the parameters apply to; `kCMPersistentTrackID_Invalid` for none.
    open var trackID: CMPersistentTrackID { settings.withLockAnnotated { $0.trackID } }

    /// How the track's pitch behaves at rates other than 1; nil for the item's own
    /// `audioTimePitchAlgorithm`.
    open var audioTimePitchAlgorithm: AVAudioTimePitchAlgorithm? { settings.withLockAnnotated { $0.audioTimePitchAlgorithm } }

    /// The volume ramp in effect at `time` (`getVolumeRamp(for:startVolume:endVolume:timeRange:)`):
    /// true, with its volumes and span, when a setting covers `time`; false before the first
    /// setting (the volume there is 1) and for an invalid time.
    ///
    /// A ramp covers its own span. A volume set with `setVolume(_:at:)`, or held after a ramp's
    /// end, is reported as a ramp whose start and end volumes are equal, spanning from where
    /// it begins to the next setting (`+infinity` after the last).
    open func getVolumeRamp(
        for time: CMTime, startVolume: UnsafeMutablePointer<Float>?, endVolume: UnsafeMutablePointer<Float>?,
        timeRange: UnsafeMutablePointer<CMTimeRange>?
    ) -> Bool {
        guard let ramp = Self.ramp(at: time, in: settings.withLockAnnotated({ $0.volumes })) else { return false }
        startVolume?.pointee = ramp.startVolume
        endVolume?.pointee = ramp.endVolume
        timeRange?.pointee = ramp.timeRange
        return true
    }

    /// The volume at `time` by these parameters: 1 before any setting (a Chorus addition, for
    /// whatever applies a mix).
    package func volume(at time: CMTime) -> Float {
        guard let ramp = Self.ramp(at: time, in: settings.withLockAnnotated({ $0.volumes })) else { return 1 }
        guard ramp.startVolume != ramp.endVolume, ramp.timeRange.duration.isNumeric, ramp.timeRange.duration > .zero else {
            return ramp.endVolume
        }
        let progress = Float((time - ramp.timeRange.start).seconds / ramp.timeRange.duration.seconds)
        return ramp.startVolume + (ramp.endVolume - ramp.startVolume) * min(max(progress, 0), 1)
    }

    /// The ramp (or held volume) covering `time` among `volumes`, ordered by start.
    private static func ramp(at time: CMTime, in volumes: [VolumeSetting]) -> VolumeSetting? {
        guard time.isValid, let index = volumes.lastIndex(where: { $0.timeRange.start <= time }) else { return nil }
        let setting = volumes[index]
        if setting.timeRange.containsTime(time) { return setting }
        let next = index + 1 < volumes.count ? volumes[index + 1].timeRange.start : .positiveInfinity
        let heldFrom = setting.timeRange.end
        return VolumeSetting(timeRange: CMTimeRange(start: heldFrom, end: next),
                             startVolume: setting.endVolume, endVolume: setting.endVolume)
    }

    /// An immutable copy with the same settings.
    open func copy(with zone: NSZone?) -> Any { immutableCopy }

    /// A mutable copy with the same settings.
    open func mutableCopy(with zone: NSZone?) -> Any { mutableParametersCopy }

    /// An immutable copy (`NSObject.copy()` on Apple's platforms).
    public func copy() -> Any { copy(with: nil) }

    /// A mutable copy (`NSObject.mutableCopy()` on Apple's platforms).
    public func mutableCopy() -> Any { mutableCopy(with: nil) }

    var immutableCopy: AVAudioMixInputParameters {
        AVAudioMixInputParameters(settings: settings.withLockAnnotated { $0 })
    }

    var mutableParametersCopy: AVMutableAudioMixInputParameters {
        AVMutableAudioMixInputParameters(settings: settings.withLockAnnotated { $0 })
    }
}

/// Input parameters that can be set (`AVMutableAudioMixInputParameters`).
// @unchecked restates its superclass's: it adds no field.
open class AVMutableAudioMixInputParameters: AVAudioMixInputParameters, @unchecked Sendable {
    /// Parameters for `track`'s ID; for no track when `track` is nil.
    public convenience init(track: AVAssetTrack?) {
        self.init()
        trackID = track?.trackID ?? kCMPersistentTrackID_Invalid
    }

    /// The track the parameters apply to.
    override open var trackID: CMPersistentTrackID {
        get { settings.withLockAnnotated { $0.trackID } }
        set { settings.withLockAnnotated { $0.trackID = newValue } }
    }

    /// How the track's pitch behaves at rates other than 1; nil for the item's own.
    override open var audioTimePitchAlgorithm: AVAudioTimePitchAlgorithm? {
        get { settings.withLockAnnotated { $0.audioTimePitchAlgorithm } }
        set { settings.withLockAnnotated { $0.audioTimePitchAlgorithm = newValue } }
    }

    /// The volume from `time` on, until the next setting. An invalid time is ignored.
    open func setVolume(_ volume: Float, at time: CMTime) {
        guard time.isValid else { return }
        record(VolumeSetting(timeRange: CMTimeRange(start: time, duration: .zero), startVolume: volume, endVolume: volume))
    }

    /// A linear change of volume from `startVolume` to `endVolume` over `timeRange`; the end
    /// volume holds after it, until the next setting. An invalid range is ignored.
    open func setVolumeRamp(fromStartVolume startVolume: Float, toEndVolume endVolume: Float, timeRange: CMTimeRange) {
        guard timeRange.isValid else { return }
        record(VolumeSetting(timeRange: timeRange, startVolume: startVolume, endVolume: endVolume))
    }

    private func record(_ setting: VolumeSetting) {
        settings.withLockAnnotated { current in
            current.volumes.removeAll { $0.timeRange.start == setting.timeRange.start }
            let index = current.volumes.firstIndex { $0.timeRange.start > setting.timeRange.start } ?? current.volumes.endIndex
            current.volumes.insert(setting, at: index)
        }
    }
}
