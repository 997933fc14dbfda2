import ArgumentParser
import AVPlayback

/// How speeds other than 1 sound: `--pitch`, set on every item a command plays.
struct PitchOption: ParsableArguments {
    @Option(name: .long, help: "At speeds other than 1: time-domain (keeps the pitch, light, 65 ms of delay; the default), spectral (keeps the pitch, for music, about a fifth of a core, 0.26 s) or varispeed (the pitch follows the speed).")
    var pitch: Choice = .timeDomain

    /// The items' `audioTimePitchAlgorithm`.
    var algorithm: AVAudioTimePitchAlgorithm { pitch.algorithm }

    enum Choice: String, ExpressibleByArgument, CaseIterable {
        case timeDomain = "time-domain"
        case spectral
        case varispeed

        var algorithm: AVAudioTimePitchAlgorithm {
            switch self {
            case .timeDomain: .timeDomain
            case .spectral: .spectral
            case .varispeed: .varispeed
            }
        }
    }
}
