/// What a playback rate other than 1 does to the pitch (the engine's side of
/// `AVAudioTimePitchAlgorithm`).
public enum PitchMode: Sendable, Equatable, Hashable {
    /// The pitch follows the rate, as a tape's does: the resampler alone, bit-exact at 1.
    case varispeed
    /// The pitch is kept by Rubber Band's faster engine: cheap (about 7 % of a core at
    /// 48 kHz stereo), clean on speech and most music.
    case timeDomain
    /// The pitch is kept by Rubber Band's finer engine: the better sound on music, at three
    /// to six times the cost.
    case spectral
}
