import ArgumentParser
import AVPlayback
import Foundation
import MediaClock

/// `chorus probe URL`: what the player sees in a piece of media, as one JSON object.
struct Probe: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print an input's duration, playability and tracks as JSON.")

    @Argument(help: "A file path or URL.")
    var url: String

    /// How long probing may take before the input is declared unreachable.
    static let timeout: Duration = .seconds(20)

    func run() throws {
        let asset = AVURLAsset(url: makeURL(url))
        let done = WakeSignal()
        asset.loadValuesAsynchronously(forKeys: ["duration", "tracks", "playable"]) { done.signal() }
        guard done.wait(timeout: Self.timeout) else {
            asset.cancelLoading()
            log.error("\(url): timed out")
            throw ExitCode(1)
        }
        var error: NSError?
        guard asset.statusOfValue(forKey: "tracks", error: &error) == .loaded else {
            log.error("\(error?.localizedDescription ?? "\(url): cannot be read")")
            throw ExitCode(1)
        }
        let report = ProbeReport(asset: asset, url: url)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(report)
        print(String(decoding: data, as: UTF8.self))
        if !report.playable && !report.tracks.contains(where: { $0.mediaType == "video" && $0.frameRate != nil }) {
            log.error("\(url): no audio or video track to play")
            throw ExitCode(1)
        }
    }
}

/// The JSON `chorus probe` prints.
struct ProbeReport: Encodable {
    struct Track: Encodable {
        var id: Int32
        var index: Int
        var mediaType: String
        var codec: String
        var sampleRate: Int?
        var channels: Int?
        var channelLayout: String?
        var width: Int?
        var height: Int?
        var frameRate: Double?
        /// Clockwise degrees the picture is turned for display.
        var rotation: Double?
        /// The shape of a coded pixel, "W:H", when not square.
        var sampleAspectRatio: String?
        var pixelFormat: String?
        /// The picture's size as displayed: scaled to square pixels and turned.
        var displayWidth: Int?
        var displayHeight: Int?
        var bitRate: Int?
        var language: String?
        var title: String?
        var start: Double?
        var duration: Double?
    }
    var url: String
    var duration: Double?
    var playable: Bool
    var tracks: [Track]

    init(asset: AVAsset, url: String) {
        self.url = url
        let duration = asset.duration
        self.duration = duration.isNumeric ? duration.seconds : nil
        playable = asset.isPlayable
        tracks = asset.tracks.map { track in
            let kind: String
            switch track.mediaType {
            case .audio: kind = "audio"
            case .video: kind = "video"
            case .subtitle, .text, .closedCaption: kind = "subtitle"
            default: kind = "data"
            }
            let isVideo = track.mediaType == .video
            let range = track.timeRange
            let shown = track.naturalSize.applying(track.preferredTransform)
            return Track(
                id: track.trackID, index: track.streamIndex, mediaType: kind, codec: track.codecName,
                sampleRate: track.sampleRate, channels: track.channelCount, channelLayout: track.channelLayoutDescription,
                width: isVideo && track.naturalSize.width > 0 ? Int((Double(track.naturalSize.width) * Double(track.sampleAspectRatio.map { $0.height } ?? 1) / Double(track.sampleAspectRatio.map { $0.width } ?? 1)).rounded()) : nil,
                height: isVideo && track.naturalSize.height > 0 ? Int(track.naturalSize.height) : nil,
                frameRate: isVideo && track.nominalFrameRate > 0 ? Double(track.nominalFrameRate) : nil,
                rotation: isVideo ? track.rotationDegrees : nil,
                sampleAspectRatio: track.sampleAspectRatio.flatMap { $0.width != $0.height ? "\($0.width):\($0.height)" : nil },
                pixelFormat: track.pixelFormat,
                displayWidth: isVideo && shown.width != 0 ? Int(abs(shown.width)) : nil,
                displayHeight: isVideo && shown.height != 0 ? Int(abs(shown.height)) : nil,
                bitRate: track.estimatedDataRate > 0 ? Int(track.estimatedDataRate) : nil,
                language: track.languageCode,
                title: track.title,
                start: range.isValid && range.start.isNumeric ? range.start.seconds : nil,
                duration: range.isValid && range.duration.isNumeric ? range.duration.seconds : nil)
        }
    }
}

/// A URL for a path or URL typed by a user.
func makeURL(_ text: String) -> URL {
    if text.contains("://"), let url = URL(string: text) { return url }
    return URL(fileURLWithPath: text)
}
