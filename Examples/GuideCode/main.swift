// The code of Apple's "Playback" guide (AV Foundation Programming Guide), section by
// section, compiled against Chorus's AVPlayback and run against real media. Each section
// prints "ok" when it did what the guide says, or "FAIL" with what happened instead; the
// exit status is the number of failures.
//
//   guide-code --audio FILE [--video FILE] [--stream URL] [--bad URL]
//
// The sound goes to ALSA's default device, as `AVPlayer(playerItem:)` sends it. README.md
// in this folder lists every line that differs from the guide's code on Apple's platforms.

import AVPlayback
import Foundation

func value(of flag: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: flag), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

func url(_ text: String) -> URL? {
    text.contains("://") ? URL(string: text) : URL(fileURLWithPath: text)
}

guard let audio = value(of: "--audio").flatMap(url) else {
    FileHandle.standardError.write(Data("usage: guide-code --audio FILE [--video FILE] [--stream URL] [--bad URL]\n".utf8))
    exit(2)
}
let media = GuideMedia(audio: audio, video: value(of: "--video").flatMap(url), stream: value(of: "--stream").flatMap(url),
                       bad: value(of: "--bad").flatMap(url) ?? URL(fileURLWithPath: "/nonexistent/guide-code.mp4"))

/// Keeps each section's objects alive while it runs, as an app's controllers would be.
var alive: [AnyObject] = []

/// A section run on the main actor.
func section(_ name: String, timeout: Double = 30,
             _ body: @escaping @MainActor (Outcome) -> Void) -> (name: String, timeout: Double, start: @Sendable (Outcome) -> Void) {
    (name, timeout, { outcome in MainActor.assumeIsolated { body(outcome) } })
}

var sections = [
    section("Playing Assets: a file-based asset's item becomes ready to play") { outcome in
        let section = FileBasedAssetSection()
        alive.append(section)
        section.load(media.audio, outcome: outcome)
    },
]
if let stream = media.stream {
    sections += [
        section("HTTP live streams: an item made from the URL becomes ready, with its duration") { outcome in
            let section = LiveStreamSection()
            alive.append(section)
            section.prepare(stream, outcome: outcome)
        },
        section("HTTP live streams: a player made from the URL becomes ready, with an item for the stream") { outcome in
            let section = PlayerFromURLSection()
            alive.append(section)
            section.start(stream, outcome: outcome)
        },
    ]
}
sections += [
    section("A URL of unknown kind: the asset route plays a file") { outcome in
        let section = UnknownURLSection()
        alive.append(section)
        section.open(media.audio, expectPlayable: true, outcome: outcome)
    },
    section("A URL of unknown kind: one that cannot play fails with an error") { outcome in
        let section = UnknownURLSection()
        alive.append(section)
        section.open(media.bad, expectPlayable: false, outcome: outcome)
    },
    section("Changing the Playback Rate: 0.5, 2, the reverse rates the item offers, and 0") { outcome in
        let section = PlayingAnItemSection(item: AVPlayerItem(url: media.audio))
        alive.append(section)
        section.changeRates(outcome: outcome)
    },
    section("Seeking: five seconds in, by seekToTime and exactly") { outcome in
        let section = PlayingAnItemSection(item: AVPlayerItem(url: media.audio))
        alive.append(section)
        section.seekFiveSecondsIn(outcome: outcome)
    },
    section("Seeking: play at the end does nothing; seeking to zero from the end notification replays") { outcome in
        let section = ReplayAtEndSection(url: media.audio)
        alive.append(section)
        section.start(outcome: outcome)
    },
    section("Playing Multiple Items: a queue player advances, inserts after canInsert, removes") { outcome in
        let section = QueueSection()
        alive.append(section)
        section.start(urls: [media.audio, media.audio, media.audio], outcome: outcome)
    },
    section("Responding to a Change in Status: media that cannot play fails, with an error") { outcome in
        let section = StatusChangeSection()
        alive.append(section)
        section.start(media.bad, outcome: outcome)
    },
    section("Monitoring Playback: status, loadedTimeRanges, the rate's drop at the end, readyForDisplay") { outcome in
        let section = MonitoringSection()
        alive.append(section)
        section.start(media.video ?? media.audio, hasPictures: media.video != nil, outcome: outcome)
    },
    section("Tracking Time: boundaries at a third and two thirds, then the end notification") { outcome in
        let section = TrackingTimeSection()
        alive.append(section)
        section.start(media.audio, outcome: outcome)
    },
    section("Putting It All Together: the button follows the item's status, play, and back to zero at the end") { outcome in
        let controller = PlayerViewController()
        alive.append(controller)
        var events: [String] = []
        controller.onEvent = { event in
            events.append(event)
            switch event {
            case "button enabled" where events.filter({ $0 == "button enabled" }).count == 1:
                // The harness: begin a second before the end, then press play.
                if let duration = controller.playerItem?.duration, duration.isNumeric {
                    controller.player?.seek(to: CMTimeSubtract(duration, CMTimeMake(value: 1, timescale: 1)),
                                            toleranceBefore: .zero, toleranceAfter: .zero)
                }
                controller.play(nil)
            case "reached the end":
                let time = controller.player?.currentTime() ?? .invalid
                say("     events: \(events.joined(separator: ", ")); the time after the end: \(time.seconds) s")
                controller.playerView.close()
                if events.first == "button disabled", CMTimeCompare(time, .zero) == 0 { outcome.pass() } else {
                    outcome.fail("events \(events), time \(time.seconds) s")
                }
            case "tracks not loaded": outcome.fail("the tracks did not load")
            default: break
            }
        }
        controller.viewDidLoad()
        controller.loadAssetFromFile(media.video ?? media.audio)
    },
]

let allSections = sections
Thread.detachNewThread {
    let failures = run(allSections)
    say(failures == 0 ? "all \(allSections.count) sections did what the guide says" : "\(failures) of \(allSections.count) sections failed")
    exit(Int32(min(failures, 100)))
}
// The main run loop serves the main queue, where the guide's code sends its work.
RunLoop.main.run()
