import Foundation
import MediaPipeline

/// A quality of media that a choice is made by: heard, read, seen, and what a track is for.
public struct AVMediaCharacteristic: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// Media that is heard: the choice among an item's sound tracks (languages,
    /// commentaries).
    public static let audible = AVMediaCharacteristic(rawValue: "public.audible")
    /// Media that is read: the choice among an item's subtitles.
    public static let legible = AVMediaCharacteristic(rawValue: "public.legible")
    /// Media that is seen.
    public static let visual = AVMediaCharacteristic(rawValue: "public.visual")
    /// Media made of frames: video.
    public static let frameBased = AVMediaCharacteristic(rawValue: "public.frame-based")
    /// Subtitles only for what the picture's own language does not carry.
    public static let containsOnlyForcedSubtitles = AVMediaCharacteristic(rawValue: "public.subtitles.forced-only")
    /// Subtitles that also describe music and sounds, for the deaf and hard of hearing.
    public static let describesMusicAndSoundForAccessibility = AVMediaCharacteristic(rawValue: "public.accessibility.describes-music-and-sound")
    /// Subtitles that transcribe the dialogue, for the deaf and hard of hearing.
    public static let transcribesSpokenDialogForAccessibility = AVMediaCharacteristic(rawValue: "public.accessibility.transcribes-spoken-dialog")
    /// Sound that describes the picture, for the blind.
    public static let describesVideoForAccessibility = AVMediaCharacteristic(rawValue: "public.accessibility.describes-video")
    /// The programme itself, not an extra.
    public static let isMainProgramContent = AVMediaCharacteristic(rawValue: "public.main-program-content")
    /// An extra: a commentary.
    public static let isAuxiliaryContent = AVMediaCharacteristic(rawValue: "public.auxiliary-content")
    /// The programme in its original language.
    public static let isOriginalContent = AVMediaCharacteristic(rawValue: "public.original-content")
    /// A dubbed translation.
    public static let dubbedTranslation = AVMediaCharacteristic(rawValue: "public.translation.dubbed")
}

/// One choice in a media selection group: a sound track in a language, a subtitle track.
///
/// Options are values: two made from the same track of the same media (the same URL) are
/// equal, however and by whichever asset they were loaded.
public final class AVMediaSelectionOption: Hashable, Sendable, CustomStringConvertible {
    /// The kind of media: `.audio` or `.subtitle`.
    public let mediaType: AVMediaType
    /// Whether this player can render the option: a sound track with a decoder here, or a
    /// text subtitle track (picture subtitles are not shown).
    public let isPlayable: Bool
    /// The option's language as a BCP 47 tag ("fr"), when its track has a language.
    public let extendedLanguageTag: String?
    /// The track behind the option.
    let track: TrackInfo
    /// The media the option is of: its asset's location.
    private let media: String
    private let characteristics: Set<AVMediaCharacteristic>

    init(track: TrackInfo, asset: AVAsset, isPlayable: Bool) {
        self.track = track
        media = asset.location
        self.isPlayable = isPlayable
        mediaType = track.kind == .audio ? .audio : .subtitle
        extendedLanguageTag = Self.languageTag(track.language)
        characteristics = AVMediaCharacteristic.of(track)
    }

    /// Whether the option has `characteristic`.
    public func hasMediaCharacteristic(_ characteristic: AVMediaCharacteristic) -> Bool {
        characteristics.contains(characteristic)
    }

    /// The option's language, when its track has one.
    public var locale: Locale? { extendedLanguageTag.map { Locale(identifier: $0) } }

    /// A name to show for the option: the track's own title, else its language's name in the
    /// current locale, else a numbered name.
    public var displayName: String { displayName(with: .current) }

    /// `displayName` in `locale`'s language.
    public func displayName(with locale: Locale) -> String {
        if let title = track.title, !title.isEmpty { return title }
        if let tag = extendedLanguageTag, let name = locale.localizedString(forLanguageCode: tag) { return name }
        return mediaType == .audio ? "Sound \(track.trackID)" : "Subtitles \(track.trackID)"
    }

    /// A value that `AVMediaSelectionGroup.mediaSelectionOption(withPropertyList:)` turns back
    /// into this option, to keep a choice (in settings, or sent to another player).
    public func propertyList() -> Any {
        ["trackID": Int(track.trackID), "mediaType": mediaType.rawValue] as [String: Any]
    }

    /// The option of `group` that goes with this one; none are linked here.
    public func associatedMediaSelectionOption(in group: AVMediaSelectionGroup) -> AVMediaSelectionOption? { nil }

    /// FFmpeg's stream index of the option's track.
    public var streamIndex: Int { track.streamIndex }

    public var description: String {
        "\(mediaType.rawValue) option \(track.trackID) \(extendedLanguageTag ?? "und") \"\(displayName)\""
    }

    public static func == (lhs: AVMediaSelectionOption, rhs: AVMediaSelectionOption) -> Bool {
        lhs.media == rhs.media && lhs.track.streamIndex == rhs.track.streamIndex && lhs.track.trackID == rhs.track.trackID
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(media)
        hasher.combine(track.streamIndex)
    }

    /// ISO 639-2 codes in their bibliographic form (which Matroska uses), with the
    /// terminology form the locale library knows.
    private static let bibliographicCodes: [String: String] = [
        "alb": "sqi", "arm": "hye", "baq": "eus", "bur": "mya", "chi": "zho", "cze": "ces", "dut": "nld",
        "fre": "fra", "geo": "kat", "ger": "deu", "gre": "ell", "ice": "isl", "mac": "mkd", "mao": "mri",
        "may": "msa", "per": "fas", "rum": "ron", "slo": "slk", "tib": "bod", "wel": "cym",
    ]

    /// A container's language code ("fre", "fra", "en-US") as a BCP 47 tag ("fr", "en-US");
    /// nil for none and for "und".
    static func languageTag(_ code: String?) -> String? {
        guard let code = code?.trimmingCharacters(in: .whitespaces), !code.isEmpty else { return nil }
        let lower = code.lowercased()
        if ["und", "mis", "mul", "zxx"].contains(lower) { return nil }
        let terminology = bibliographicCodes[lower] ?? code
        let language = Locale.Language(identifier: terminology)
        guard let base = language.languageCode?.identifier, !base.isEmpty else { return code }
        var tag = base
        if let region = language.region?.identifier, !region.isEmpty { tag += "-\(region)" }
        return tag
    }
}

/// The options among which one (or, where allowed, none) is chosen: an item's sound tracks,
/// or its subtitles.
///
/// An asset has an `.audible` group when it has two or more sound tracks, and a `.legible`
/// group when it has subtitles. Groups are values, equal when made from the same media for
/// the same characteristic.
public final class AVMediaSelectionGroup: Hashable, Sendable, CustomStringConvertible {
    /// The choices, in container order.
    public let options: [AVMediaSelectionOption]
    /// What is chosen when nobody chooses: the sound FFmpeg picks; for subtitles, a track
    /// its container marks as default, or none.
    public let defaultOption: AVMediaSelectionOption?
    /// Whether choosing nothing is allowed: yes for subtitles (none shown), no for sound.
    public let allowsEmptySelection: Bool
    /// The characteristic the group chooses by.
    let characteristic: AVMediaCharacteristic
    /// The media the group is of: its asset's location.
    let media: String

    init?(characteristic: AVMediaCharacteristic, info: MediaInfo, asset: AVAsset) {
        let kind: MediaKind
        switch characteristic {
        case .audible: kind = .audio
        case .legible: kind = .subtitle
        default: return nil
        }
        let tracks = info.tracks.filter { $0.kind == kind }
        guard kind == .audio ? tracks.count >= 2 : !tracks.isEmpty else { return nil }
        let options = tracks.map { track in
            AVMediaSelectionOption(track: track, asset: asset,
                                   isPlayable: kind == .audio ? MediaInfo.hasDecoder(for: track) : MediaInfo.isTextSubtitle(track))
        }
        self.options = options
        self.characteristic = characteristic
        media = asset.location
        if kind == .audio {
            allowsEmptySelection = false
            defaultOption = options.first { $0.track.streamIndex == info.preferredAudioTrack?.streamIndex } ?? options.first { $0.isPlayable }
        } else {
            allowsEmptySelection = true
            defaultOption = options.first { $0.isPlayable && $0.track.roles.contains(.default) }
        }
    }

    /// The option `plist` (from `AVMediaSelectionOption.propertyList()`) stands for, if it is
    /// one of this group's.
    public func mediaSelectionOption(withPropertyList plist: Any) -> AVMediaSelectionOption? {
        guard let values = plist as? [String: Any], let trackID = values["trackID"] as? Int else { return nil }
        return options.first { Int($0.track.trackID) == trackID }
    }

    /// The options of `options` this player can render.
    public static func playableMediaSelectionOptions(from options: [AVMediaSelectionOption]) -> [AVMediaSelectionOption] {
        options.filter(\.isPlayable)
    }

    /// The options of `options` in one of `preferredLanguages` (BCP 47 tags, as in
    /// `Locale.preferredLanguages`), in the order of the languages; others are left out.
    public static func mediaSelectionOptions(from options: [AVMediaSelectionOption],
                                             filteredAndSortedAccordingToPreferredLanguages preferredLanguages: [String]) -> [AVMediaSelectionOption] {
        var chosen: [AVMediaSelectionOption] = []
        for language in preferredLanguages {
            for option in options where !chosen.contains(option) && Self.matches(option, language: language) {
                chosen.append(option)
            }
        }
        return chosen
    }

    /// The options of `options` in `locale`'s language.
    public static func mediaSelectionOptions(from options: [AVMediaSelectionOption], with locale: Locale) -> [AVMediaSelectionOption] {
        guard let language = locale.language.languageCode?.identifier else { return [] }
        return options.filter { matches($0, language: language) }
    }

    /// The options of `options` that have every one of `characteristics`.
    public static func mediaSelectionOptions(from options: [AVMediaSelectionOption],
                                             withMediaCharacteristics characteristics: [AVMediaCharacteristic]) -> [AVMediaSelectionOption] {
        options.filter { option in characteristics.allSatisfy(option.hasMediaCharacteristic) }
    }

    /// The options of `options` that have none of `characteristics`.
    public static func mediaSelectionOptions(from options: [AVMediaSelectionOption],
                                             withoutMediaCharacteristics characteristics: [AVMediaCharacteristic]) -> [AVMediaSelectionOption] {
        options.filter { option in !characteristics.contains(where: option.hasMediaCharacteristic) }
    }

    /// Whether `option`'s language is `language`, compared by base language ("fr-CA" is "fr").
    static func matches(_ option: AVMediaSelectionOption, language: String) -> Bool {
        guard let tag = option.extendedLanguageTag,
              let wanted = AVMediaSelectionOption.languageTag(language) else { return false }
        if tag.lowercased() == wanted.lowercased() { return true }
        let base = { (tag: String) in tag.split(separator: "-").first.map(String.init)?.lowercased() ?? tag.lowercased() }
        return base(tag) == base(wanted)
    }

    public var description: String {
        "\(characteristic.rawValue) group of \(options.count): \(options.map(\.displayName).joined(separator: ", "))"
    }

    public static func == (lhs: AVMediaSelectionGroup, rhs: AVMediaSelectionGroup) -> Bool {
        lhs.media == rhs.media && lhs.characteristic == rhs.characteristic && lhs.options == rhs.options
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(media)
        hasher.combine(characteristic)
    }
}

/// What is chosen in each of an asset's groups: an item's `currentMediaSelection`, or an
/// asset's `preferredMediaSelection`. A snapshot: later choices make a new one.
public final class AVMediaSelection: Sendable {
    /// The asset the selection is of.
    public weak let asset: AVAsset?
    /// The chosen stream per characteristic; a characteristic present with nil chose nothing.
    let choices: [AVMediaCharacteristic: Int?]
    /// The stream played per characteristic where nothing was chosen and it is not the
    /// group's default: an item's sound within its variant limit, which may be another
    /// variant's than the one FFmpeg chose at the open.
    let played: [AVMediaCharacteristic: Int]

    init(asset: AVAsset?, choices: [AVMediaCharacteristic: Int?], played: [AVMediaCharacteristic: Int] = [:]) {
        self.asset = asset
        self.choices = choices
        self.played = played
    }

    /// The option chosen in `group`; nil when none is (subtitles off). With no choice made,
    /// the option that plays: the group's default, or for an item held to some of an HLS
    /// playlist's variants, the sound of the variant it plays.
    public func selectedMediaOption(in group: AVMediaSelectionGroup) -> AVMediaSelectionOption? {
        let chosen: Int?
        if let choice = choices[group.characteristic] {
            chosen = choice
        } else if let played = played[group.characteristic], group.options.contains(where: { $0.streamIndex == played }) {
            chosen = played
        } else {
            chosen = group.defaultOption?.streamIndex
        }
        guard let chosen else { return nil }
        return group.options.first { $0.streamIndex == chosen }
    }

    /// Whether the player's selection criteria decide `group`: here, whether no option has
    /// been chosen in it explicitly.
    public func mediaSelectionCriteriaCanBeAppliedAutomatically(to group: AVMediaSelectionGroup) -> Bool {
        choices[group.characteristic] == nil
    }
}

/// A player's standing preferences for a characteristic's choice, applied to each item that
/// has no explicit choice (`AVPlayer.setMediaSelectionCriteria(_:forMediaCharacteristic:)`).
public final class AVPlayerMediaSelectionCriteria: Sendable {
    /// Languages in order of preference, as BCP 47 tags.
    public let preferredLanguages: [String]?
    /// Characteristics an option should have, in order of preference.
    public let preferredMediaCharacteristics: [AVMediaCharacteristic]?

    public init(preferredLanguages: [String]?, preferredMediaCharacteristics: [AVMediaCharacteristic]?) {
        self.preferredLanguages = preferredLanguages
        self.preferredMediaCharacteristics = preferredMediaCharacteristics
    }

    /// The option these criteria choose in `group`: the first playable option in the most
    /// preferred language that has it, with the most preferred characteristics among those;
    /// nil when no option is in any preferred language (and languages were given).
    func choose(in group: AVMediaSelectionGroup) -> AVMediaSelectionOption? {
        var candidates = AVMediaSelectionGroup.playableMediaSelectionOptions(from: group.options)
        if let languages = preferredLanguages, !languages.isEmpty {
            candidates = AVMediaSelectionGroup.mediaSelectionOptions(from: candidates, filteredAndSortedAccordingToPreferredLanguages: languages)
            guard let firstLanguage = candidates.first?.extendedLanguageTag else { return nil }
            candidates = candidates.filter { $0.extendedLanguageTag == firstLanguage }
        }
        for characteristic in preferredMediaCharacteristics ?? [] {
            let having = candidates.filter { $0.hasMediaCharacteristic(characteristic) }
            if !having.isEmpty { candidates = having }
        }
        return candidates.first
    }
}

extension AVAsset {
    /// The characteristics the asset has a selection group for (`.audible`, `.legible`),
    /// loading the asset first if need be (blocking, as `duration`).
    public var availableMediaCharacteristicsWithMediaSelectionOptions: [AVMediaCharacteristic] {
        guard let info = infoLoadingSynchronously() else { return [] }
        return mediaSelectionCharacteristics(info)
    }

    /// The asset's group for `characteristic`, loading the asset first if need be (blocking,
    /// as `duration`); nil when it has none. New code awaits `loadMediaSelectionGroup(for:)`.
    public func mediaSelectionGroup(forMediaCharacteristic characteristic: AVMediaCharacteristic) -> AVMediaSelectionGroup? {
        infoLoadingSynchronously().flatMap { AVMediaSelectionGroup(characteristic: characteristic, info: $0, asset: self) }
    }

    /// Loads the asset and returns its group for `characteristic`; nil when it has none.
    public func loadMediaSelectionGroup(for characteristic: AVMediaCharacteristic) async throws -> AVMediaSelectionGroup? {
        let info = try await loadedInfo()
        return AVMediaSelectionGroup(characteristic: characteristic, info: info, asset: self)
    }

    /// The callback form of `loadMediaSelectionGroup(for:)`: `handler` runs on a background
    /// queue with the group (or nil) and the load's error, if any.
    public func loadMediaSelectionGroup(for characteristic: AVMediaCharacteristic,
                                        completionHandler handler: @escaping @Sendable (AVMediaSelectionGroup?, (any Error)?) -> Void) {
        requestInfo { [self] result in
            switch result {
            case .success(let info): handler(AVMediaSelectionGroup(characteristic: characteristic, info: info, asset: self), nil)
            case .failure(let error): handler(nil, error)
            }
        }
    }

    /// What plays when nothing is chosen: each group's default option.
    public var preferredMediaSelection: AVMediaSelection { AVMediaSelection(asset: self, choices: [:]) }

    func mediaSelectionCharacteristics(_ info: MediaInfo) -> [AVMediaCharacteristic] {
        [.audible, .legible].filter { AVMediaSelectionGroup(characteristic: $0, info: info, asset: self) != nil }
    }
}

extension AVPartialAsyncProperty where Root == AVAsset {
    /// The characteristics the asset has a selection group for.
    public static var availableMediaCharacteristicsWithMediaSelectionOptions: AVAsyncProperty<AVAsset, [AVMediaCharacteristic]> {
        AVAsyncProperty(name: "availableMediaCharacteristicsWithMediaSelectionOptions") { asset, info in
            asset.mediaSelectionCharacteristics(info)
        }
    }
    /// What plays when nothing is chosen.
    public static var preferredMediaSelection: AVAsyncProperty<AVAsset, AVMediaSelection> {
        AVAsyncProperty(name: "preferredMediaSelection") { asset, _ in asset.preferredMediaSelection }
    }
}

extension AVMediaCharacteristic {
    /// The characteristics of a container's track: its kind's (audible; visual and frame
    /// based; legible) and those its roles in the container give (a commentary is auxiliary
    /// content, a dub a translation, ...).
    static func of(_ track: TrackInfo) -> Set<AVMediaCharacteristic> {
        var characteristics: Set<AVMediaCharacteristic>
        switch track.kind {
        case .audio: characteristics = [.audible]
        case .video: characteristics = [.visual, .frameBased]
        case .subtitle: characteristics = [.legible]
        case .data, .attachment, .unknown: return []
        }
        let roles = track.roles
        if roles.contains(.comment) { characteristics.insert(.isAuxiliaryContent) } else { characteristics.insert(.isMainProgramContent) }
        if roles.contains(.original) { characteristics.insert(.isOriginalContent) }
        if roles.contains(.dub) { characteristics.insert(.dubbedTranslation) }
        if roles.contains(.forced) { characteristics.insert(.containsOnlyForcedSubtitles) }
        if roles.contains(.hearingImpaired) {
            characteristics.formUnion([.transcribesSpokenDialogForAccessibility, .describesMusicAndSoundForAccessibility])
        }
        if roles.contains(.visualImpaired) { characteristics.insert(.describesVideoForAccessibility) }
        return characteristics
    }
}
