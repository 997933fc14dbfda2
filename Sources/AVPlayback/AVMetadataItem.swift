import Foundation
import MediaPipeline

/// A key of metadata, within its key space (`AVMetadataKey`).
public struct AVMetadataKey: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// The work's title.
    public static let commonKeyTitle = AVMetadataKey("title")
    /// The performer or author.
    public static let commonKeyArtist = AVMetadataKey("artist")
    /// The album the work is part of.
    public static let commonKeyAlbumName = AVMetadataKey("albumName")
    /// When the work was made.
    public static let commonKeyCreationDate = AVMetadataKey("creationDate")
    /// The cover picture.
    public static let commonKeyArtwork = AVMetadataKey("artwork")
    /// The work's kind: its genre, for music.
    public static let commonKeyType = AVMetadataKey("type")
    /// The work's maker: its composer, for music.
    public static let commonKeyCreator = AVMetadataKey("creator")
    /// A description of the work.
    public static let commonKeyDescription = AVMetadataKey("description")
    /// Its publisher.
    public static let commonKeyPublisher = AVMetadataKey("publisher")
    /// Its copyright statement.
    public static let commonKeyCopyrights = AVMetadataKey("copyrights")
    /// The software that made the file.
    public static let commonKeySoftware = AVMetadataKey("software")
    /// The language of its content.
    public static let commonKeyLanguage = AVMetadataKey("language")
}

/// A family of metadata keys, one per format (`AVMetadataKeySpace`).
public struct AVMetadataKeySpace: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// The keys common to every format (`AVMetadataKey.commonKeyTitle`, ...).
    public static let common = AVMetadataKeySpace("comn")
    /// FFmpeg's generic tag names ("title", "album_artist", "track", ...), which it reads every
    /// container's tags under, and "artwork" for the container's pictures, which FFmpeg reads
    /// as streams rather than tags (a Chorus addition: Apple's key spaces are the formats' own,
    /// ID3, iTunes, QuickTime, whose keys FFmpeg does not keep).
    public static let ffmpeg = AVMetadataKeySpace("ffmpeg")
    /// ID3 frames, as a stream's timed metadata carries them (`TIT2`, `TPE1`, `TXXX`...).
    public static let id3 = AVMetadataKeySpace("org.id3")
    /// A SHOUTcast or Icecast station's in-stream metadata (`StreamTitle`, `StreamUrl`).
    public static let icy = AVMetadataKeySpace("icy")
}

/// A key space and key together, as a string `keySpace/key` (`AVMetadataIdentifier`).
public struct AVMetadataIdentifier: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// The identifier of `key` in `keySpace`, as Apple spells it (`common/title`).
    init(keySpace: AVMetadataKeySpace, key: String) {
        let space = keySpace == .common ? "common" : keySpace == .id3 ? "id3" : keySpace.rawValue
        self.init("\(space)/\(key)")
    }

    /// The common title.
    public static let commonIdentifierTitle = AVMetadataIdentifier("common/title")
    /// The common artist.
    public static let commonIdentifierArtist = AVMetadataIdentifier("common/artist")
    /// The common album name.
    public static let commonIdentifierAlbumName = AVMetadataIdentifier("common/albumName")
    /// The common creation date.
    public static let commonIdentifierCreationDate = AVMetadataIdentifier("common/creationDate")
    /// The common artwork.
    public static let commonIdentifierArtwork = AVMetadataIdentifier("common/artwork")
    /// The common type (genre).
    public static let commonIdentifierType = AVMetadataIdentifier("common/type")
    /// The common creator (composer).
    public static let commonIdentifierCreator = AVMetadataIdentifier("common/creator")
    /// The common description.
    public static let commonIdentifierDescription = AVMetadataIdentifier("common/description")
    /// The common publisher.
    public static let commonIdentifierPublisher = AVMetadataIdentifier("common/publisher")
    /// The common copyright statement.
    public static let commonIdentifierCopyrights = AVMetadataIdentifier("common/copyrights")
    /// The common software.
    public static let commonIdentifierSoftware = AVMetadataIdentifier("common/software")
    /// The common language.
    public static let commonIdentifierLanguage = AVMetadataIdentifier("common/language")
    /// ID3's title (`TIT2`).
    public static let id3MetadataTitleDescription = AVMetadataIdentifier("id3/TIT2")
    /// ID3's lead performer (`TPE1`).
    public static let id3MetadataLeadPerformer = AVMetadataIdentifier("id3/TPE1")
    /// ID3's album title (`TALB`).
    public static let id3MetadataAlbumTitle = AVMetadataIdentifier("id3/TALB")
    /// ID3's user-defined text (`TXXX`); the frame's description is the item's
    /// `extraAttributes[.info]`.
    public static let id3MetadataUserText = AVMetadataIdentifier("id3/TXXX")
    /// A station's current title (ICY `StreamTitle`, usually "Artist - Song").
    public static let icyMetadataStreamTitle = AVMetadataIdentifier("icy/StreamTitle")
    /// A station's link for what plays (ICY `StreamUrl`).
    public static let icyMetadataStreamURL = AVMetadataIdentifier("icy/StreamUrl")
}

/// One piece of an asset's metadata: a key in a key space, and its value (`AVMetadataItem`).
///
/// Made from the tags FFmpeg reads from the container, which are text: `stringValue` is the
/// tag's text, and `numberValue` and `dateValue` are that text read as a number or a date where
/// it is one. `AVAsset.metadata` holds one item per tag, in the `.ffmpeg` key space;
/// `AVAsset.commonMetadata` those tags that have a common key, in the `.common` key space.
///
/// Cover art (an MP3's ID3 `APIC` frames, an M4A's `covr` atom, FLAC's and Ogg's `PICTURE`
/// blocks, a Matroska file's picture attachments) follows the tags in both, one item per
/// picture with `commonKey` `.commonKeyArtwork` (`common/artwork` and `ffmpeg/artwork`):
/// `dataValue` and `value` are the picture's bytes as the file holds them, `dataType` says
/// whether they are a JPEG or a PNG, and `stringValue` is nil. A picture larger than
/// `MediaSource.maximumPictureBytes` (16 MiB) is left out.
public final class AVMetadataItem: Sendable, CustomStringConvertible {
    /// The key space and key as one (`common/title`).
    public let identifier: AVMetadataIdentifier?
    /// The family the key belongs to.
    public let keySpace: AVMetadataKeySpace?
    /// The key within `keySpace`, a `String`. Typed `Sendable` where Apple's is an object
    /// (`NSCopying & NSObjectProtocol`): on Linux such an object does not cast to `String`, and
    /// `item.key as? String` is how Apple's code reads it.
    public var key: (any Sendable)? { keyName }
    /// The key as text.
    let keyName: String
    /// The common key the item stands for, when it has one.
    public let commonKey: AVMetadataKey?
    /// The kind of value the item holds, one of CoreMedia's `kCMMetadataBaseDataType_`
    /// names: for a picture, `kCMMetadataBaseDataType_JPEG` or `kCMMetadataBaseDataType_PNG`
    /// (`kCMMetadataBaseDataType_RawData` for any other kind of picture); nil for a tag's text,
    /// as FFmpeg does not say how the container typed it (Apple's reports none for ID3's text
    /// frames either).
    public let dataType: String?
    /// What the item holds: a tag's text, or a picture's bytes.
    private let content: Content
    /// A picture's caption and type (or an ID3 `TXXX` frame's description as the caption),
    /// for `extraAttributes`.
    private let pictureCaption: String?, pictureType: String?
    /// For timed metadata, where in the item it holds: its time and duration.
    private let timing: (time: CMTime, duration: CMTime)?
    /// The media the item was read from: what `load(_:)` hands its properties.
    private let info: MediaInfo

    /// An item's value, as read from the container.
    private enum Content: Sendable {
        case text(String)
        case picture(Data)
    }

    init(tag: MetadataTag, keySpace: AVMetadataKeySpace, key: String, info: MediaInfo) {
        self.keySpace = keySpace
        keyName = key
        identifier = AVMetadataIdentifier(keySpace: keySpace, key: key)
        commonKey = Self.commonKeys[tag.key.lowercased()]
        content = .text(tag.value)
        dataType = nil
        pictureCaption = nil
        pictureType = nil
        timing = nil
        self.info = info
    }

    /// The item for `entry` of a stream's timed metadata, holding from `time` for `duration`
    /// (`.invalid` while the next is not known).
    init(timed entry: TimedMetadataEntry, time: CMTime, duration: CMTime, info: MediaInfo) {
        let space: AVMetadataKeySpace = entry.keySpace == .id3 ? .id3 : .icy
        keySpace = space
        keyName = entry.key
        identifier = AVMetadataIdentifier(keySpace: space, key: entry.key)
        commonKey = Self.timedCommonKeys[entry.key]
        content = .text(entry.value)
        dataType = nil
        pictureCaption = entry.info
        pictureType = nil
        timing = (time, duration)
        self.info = info
    }

    /// The items of `group`, which holds until `until` (unknown: nil), read from media `info`.
    static func items(of group: TimedMetadataGroup, until: CMTime?, info: MediaInfo) -> [AVMetadataItem] {
        let duration = until.map { $0 - group.time } ?? .invalid
        return group.entries.map { AVMetadataItem(timed: $0, time: group.time, duration: duration, info: info) }
    }

    /// The timed metadata keys that have a common key: ID3's title, performer and album, and
    /// a station's title.
    static let timedCommonKeys: [String: AVMetadataKey] = [
        "TIT2": .commonKeyTitle, "TPE1": .commonKeyArtist, "TALB": .commonKeyAlbumName, "StreamTitle": .commonKeyTitle,
    ]

    /// The item for `picture`, under the common artwork key, in `keySpace`.
    init(picture: AttachedPicture, keySpace: AVMetadataKeySpace, info: MediaInfo) {
        self.keySpace = keySpace
        keyName = AVMetadataKey.commonKeyArtwork.rawValue
        identifier = AVMetadataIdentifier(keySpace: keySpace, key: keyName)
        commonKey = .commonKeyArtwork
        content = .picture(picture.data)
        dataType = Self.dataType(ofPicture: picture.data)
        pictureCaption = picture.caption
        pictureType = picture.pictureType
        timing = nil
        self.info = info
    }

    /// What the container says of the item beyond its value: for a picture, its caption
    /// under `.info` (an ID3 `APIC` frame's or a FLAC `PICTURE` block's description, as
    /// Apple gives it) and what it shows under `.pictureType` ("Cover (front)"); nil when
    /// there is nothing (a tag's text, an M4A's cover).
    public var extraAttributes: [AVMetadataExtraAttributeKey: Any]? {
        var attributes: [AVMetadataExtraAttributeKey: Any] = [:]
        if let pictureCaption { attributes[.info] = pictureCaption }
        if let pictureType { attributes[.pictureType] = pictureType }
        return attributes.isEmpty ? nil : attributes
    }

    /// The value: the tag's text as a `String`, or the picture's bytes as `Data`; typed
    /// `Sendable` where Apple's is an object, as `key` is, so that `item.value as? String`
    /// and `item.value as? Data` read it here too.
    public var value: (any Sendable)? {
        switch content {
        case .text(let text): return text
        case .picture(let data): return data
        }
    }

    /// The tag's text; nil for a picture.
    public var stringValue: String? { text }

    /// The text read as a number, when it is one whole ("2024", "0.5"); nil otherwise ("3/12"),
    /// and for a picture.
    public var numberValue: NSNumber? {
        guard let trimmed = text?.trimmingCharacters(in: .whitespaces) else { return nil }
        if let whole = Int64(trimmed) { return NSNumber(value: whole) }
        if let real = Double(trimmed), real.isFinite { return NSNumber(value: real) }
        return nil
    }

    /// The text read as a date, when it is an ISO 8601 date or date and time, or a year
    /// ("2024", "2024-05-01", "2024-05-01T12:30:00Z", as FFmpeg writes `creation_time`); nil
    /// otherwise, and for a picture. A date without a zone is taken as UTC.
    public var dateValue: Date? { text.flatMap { Self.date(from: $0.trimmingCharacters(in: .whitespaces)) } }

    /// A picture's bytes, encoded as the file holds them (see `dataType`); nil for a tag's
    /// text, as for Apple's text items.
    public var dataValue: Data? {
        if case .picture(let data) = content { return data }
        return nil
    }

    /// The tag's text, when the item is a tag.
    private var text: String? {
        if case .text(let text) = content { return text }
        return nil
    }

    /// The item's time in its asset: where timed metadata takes effect; invalid for the
    /// asset's own metadata, which applies to the whole of it.
    public var time: CMTime { timing?.time ?? .invalid }
    /// How long timed metadata holds (invalid until the next is known); invalid for the
    /// asset's own metadata.
    public var duration: CMTime { timing?.duration ?? .invalid }

    public var description: String {
        switch content {
        case .text(let text): return "AVMetadataItem(\(identifier?.rawValue ?? "?") = \"\(text)\")"
        case .picture(let data): return "AVMetadataItem(\(identifier?.rawValue ?? "?") = \(data.count) bytes, \(dataType ?? "?"))"
        }
    }

    /// The items of `metadataItems` with `identifier`, in their order.
    public static func metadataItems(from metadataItems: [AVMetadataItem], filteredByIdentifier identifier: AVMetadataIdentifier) -> [AVMetadataItem] {
        metadataItems.filter { $0.identifier == identifier }
    }

    /// The items of `metadataItems` with `key` (a `String` or an `AVMetadataKey`; nil for any)
    /// in `keySpace` (nil for any).
    public static func metadataItems(from metadataItems: [AVMetadataItem], withKey key: Any?, keySpace: AVMetadataKeySpace?) -> [AVMetadataItem] {
        let wanted: String?
        switch key {
        case let name as String: wanted = name
        case let name as AVMetadataKey: wanted = name.rawValue
        case let name as NSString: wanted = String(describing: name)
        default: wanted = nil
        }
        return metadataItems.filter { item in
            (keySpace == nil || item.keySpace == keySpace) && (key == nil || item.keyName == wanted)
        }
    }

    /// The items of `metadataItems` in the first of `preferredLanguages` they are in; every
    /// item here is without a language, so all of them, in order.
    public static func metadataItems(from metadataItems: [AVMetadataItem], filteredAndSortedAccordingToPreferredLanguages preferredLanguages: [String]) -> [AVMetadataItem] {
        metadataItems
    }

    /// Loads the given properties, as `try await item.load(.stringValue)`. An item comes from a
    /// loaded asset, so its values are already there.
    public func load<each Value>(_ properties: repeat AVAsyncProperty<AVMetadataItem, each Value>) async throws -> (repeat each Value) {
        (repeat (each properties).extract(self, info))
    }

    /// FFmpeg's tag names that have a common key. Genre is the common "type", composer the
    /// "creator", as Apple maps ID3's and iTunes's tags; `creation_time` (what FFmpeg writes
    /// into MP4 and QuickTime files) is the creation date too.
    static let commonKeys: [String: AVMetadataKey] = [
        "title": .commonKeyTitle, "artist": .commonKeyArtist, "album": .commonKeyAlbumName,
        "date": .commonKeyCreationDate, "creation_time": .commonKeyCreationDate, "genre": .commonKeyType,
        "composer": .commonKeyCreator, "description": .commonKeyDescription, "publisher": .commonKeyPublisher,
        "copyright": .commonKeyCopyrights, "encoder": .commonKeySoftware, "language": .commonKeyLanguage,
    ]

    /// The items for `info`'s tags, then for its pictures: all of them in the `.ffmpeg` key
    /// space.
    static func metadata(of info: MediaInfo) -> [AVMetadataItem] {
        info.metadata.map { AVMetadataItem(tag: $0, keySpace: .ffmpeg, key: $0.key, info: info) }
            + info.pictures.map { AVMetadataItem(picture: $0, keySpace: .ffmpeg, info: info) }
    }

    /// The items for `info`'s tags that have a common key, in the `.common` key space; the
    /// first of two tags with the same common key (`date` and `creation_time`) only. Then
    /// one for each of its pictures: a file may hold several (a front and a back cover), and
    /// each is artwork.
    static func commonMetadata(of info: MediaInfo) -> [AVMetadataItem] {
        var seen = Set<AVMetadataKey>()
        let tags = info.metadata.compactMap { tag -> AVMetadataItem? in
            guard let common = commonKeys[tag.key.lowercased()], seen.insert(common).inserted else { return nil }
            return AVMetadataItem(tag: tag, keySpace: .common, key: common.rawValue, info: info)
        }
        return tags + info.pictures.map { AVMetadataItem(picture: $0, keySpace: .common, info: info) }
    }

    /// The kind of picture `data` is, by its first bytes (JPEG's start-of-image marker, PNG's
    /// signature): those are what a decoder goes by, where the label a tagger wrote (ID3's
    /// MIME type, MP4's type code, and FFmpeg's codec taken from them) can be wrong.
    static func dataType(ofPicture data: Data) -> String {
        if data.starts(with: [0xFF, 0xD8, 0xFF]) { return kCMMetadataBaseDataType_JPEG }
        if data.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return kCMMetadataBaseDataType_PNG }
        return kCMMetadataBaseDataType_RawData
    }

    /// `text` as a date: a year, a date, or a date and time in ISO 8601.
    static func date(from text: String) -> Date? {
        if text.count == 4, let year = Int(text) {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
            return calendar.date(from: DateComponents(year: year, month: 1, day: 1))
        }
        if text.contains("T") {
            // Seconds' fractions (FFmpeg writes six digits) are dropped: formatters differ in
            // how many digits they take, and metadata dates are not that precise.
            var whole = text
            if let dot = whole.firstIndex(of: ".") {
                let digitsEnd = whole[whole.index(after: dot)...].firstIndex { !$0.isNumber } ?? whole.endIndex
                whole.removeSubrange(dot..<digitsEnd)
            }
            let time = whole.split(separator: "T", maxSplits: 1).last ?? ""
            if !time.contains("Z") && !time.contains("+") && !time.contains("-") { whole += "Z" }
            return ISO8601DateFormatter().date(from: whole)
        }
        let dateOnly = ISO8601DateFormatter()
        dateOnly.formatOptions = [.withFullDate]
        return dateOnly.date(from: text)
    }
}

extension AVPartialAsyncProperty where Root == AVMetadataItem {
    /// The item's value.
    public static var value: AVAsyncProperty<AVMetadataItem, (any Sendable)?> { .track("value") { $0.value } }
    /// The item's text.
    public static var stringValue: AVAsyncProperty<AVMetadataItem, String?> { .track("stringValue") { $0.stringValue } }
    /// The item's value as a number.
    public static var numberValue: AVAsyncProperty<AVMetadataItem, NSNumber?> { .track("numberValue") { $0.numberValue } }
    /// The item's value as a date.
    public static var dateValue: AVAsyncProperty<AVMetadataItem, Date?> { .track("dateValue") { $0.dateValue } }
    /// The item's value as data.
    public static var dataValue: AVAsyncProperty<AVMetadataItem, Data?> { .track("dataValue") { $0.dataValue } }
}

extension AVAsset {
    /// The asset's metadata in the common key space (title, artist, album, creation date, ...,
    /// and its cover art), loading the asset first if need be (blocking, as `duration`); empty
    /// when it cannot be opened. New code awaits `load(.commonMetadata)`.
    public var commonMetadata: [AVMetadataItem] { infoLoadingSynchronously().map(AVMetadataItem.commonMetadata(of:)) ?? [] }

    /// All of the asset's metadata, one item per tag of its container and per picture it
    /// carries (see `AVMetadataItem`), loading the asset first if need be (blocking, as
    /// `duration`).
    public var metadata: [AVMetadataItem] { infoLoadingSynchronously().map(AVMetadataItem.metadata(of:)) ?? [] }
}

extension AVPartialAsyncProperty where Root == AVAsset {
    /// The asset's metadata in the common key space.
    public static var commonMetadata: AVAsyncProperty<AVAsset, [AVMetadataItem]> {
        AVAsyncProperty(name: "commonMetadata") { _, info in AVMetadataItem.commonMetadata(of: info) }
    }
    /// All of the asset's metadata.
    public static var metadata: AVAsyncProperty<AVAsset, [AVMetadataItem]> {
        AVAsyncProperty(name: "metadata") { _, info in AVMetadataItem.metadata(of: info) }
    }
}

/// The keys of `AVMetadataItem.extraAttributes`.
public struct AVMetadataExtraAttributeKey: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// More about the item, specific to its key: a picture's caption.
    public static let info = AVMetadataExtraAttributeKey("info")
    /// A resource to use as the item's value (no container Chorus reads gives one).
    public static let valueURI = AVMetadataExtraAttributeKey("valueURI")
    /// The base for the item's relative URIs (no container Chorus reads gives one).
    public static let baseURI = AVMetadataExtraAttributeKey("baseURI")
    /// What a picture shows, in FFmpeg's words for ID3's and FLAC's picture types ("Cover
    /// (front)"): a Chorus addition, as Apple's keys have no place for it.
    public static let pictureType = AVMetadataExtraAttributeKey("pictureType")
}
