/// What a playback rate other than 1 does to the pitch (the engine's side of
/// `AVAudioTimePitchAlgorithm`).
public enum PitchMode: Sendable, Equatable, Hashable {
    /// The pitch follows the rate, as a tape's does: the resampler alone, bit-exact at 1.
    case varispeed
    /// The pitch is kept by overlapping grains of the waveform (`OverlapAddShifter`): cheap,
    /// a 65 ms delay, exact on speech and single tones; a chord's partials can drift by a
    /// fraction of a percent at slow speeds.
    case timeDomain
    /// The pitch is kept by Rubber Band's finer engine, a phase vocoder: the better sound on
    /// music, at many times the cost and a 256 ms delay.
    case spectral
}
