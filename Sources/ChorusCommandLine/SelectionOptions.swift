import ArgumentParser
import AVPlayback
import Foundation

/// Which sound track and subtitles to play, by language, for every item that has a choice.
struct SelectionOptions: ParsableArguments {
    @Option(name: .long, help: "Preferred languages for the sound, in order (e.g. fr,en); items without one play their default.")
    var audioLanguage: String?

    @Option(name: .long, help: "Subtitles: preferred languages in order (e.g. en,fr), or off. Default: a track the file marks as default, else none.")
    var subtitles: String?

    /// The languages of a comma-separated list, empty entries dropped.
    static func languages(_ list: String) -> [String] {
        list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    func validate() throws {
        if let audioLanguage, Self.languages(audioLanguage).isEmpty { throw ValidationError("--audio-language needs a language, such as fr or en") }
        if let subtitles, subtitles != "off", Self.languages(subtitles).isEmpty { throw ValidationError("--subtitles needs languages, such as en, or off") }
    }

    /// Sets `player`'s criteria: every item it opens chooses by them.
    func apply(to player: AVPlayer) {
        if let audioLanguage {
            player.setMediaSelectionCriteria(AVPlayerMediaSelectionCriteria(preferredLanguages: Self.languages(audioLanguage), preferredMediaCharacteristics: nil),
                                             forMediaCharacteristic: .audible)
        }
        if let subtitles {
            // "off": no language matches, so no subtitles show, even a track marked default.
            let languages = subtitles == "off" ? [SelectionOptions.noLanguage] : Self.languages(subtitles)
            player.setMediaSelectionCriteria(AVPlayerMediaSelectionCriteria(preferredLanguages: languages, preferredMediaCharacteristics: nil),
                                             forMediaCharacteristic: .legible)
        }
    }

    /// "No linguistic content" (ISO 639-2): a language no subtitle track is in, so criteria
    /// made of it choose none.
    static let noLanguage = "zxx"
}
