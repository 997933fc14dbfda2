import Foundation
import MutexAnnotations
import Synchronization
import MediaClock

/// Real media files for tests, encoded by the `ffmpeg` command on first use and kept for the
/// rest of the run in one temporary folder.
public enum TestMedia {
    /// A kind of file the tests play.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        public let name: String
        public let fileExtension: String
        public let codecArguments: [String]
        public var description: String { name }

        public static let wav = Kind(name: "wav", fileExtension: "wav", codecArguments: ["-c:a", "pcm_s16le"])
        public static let mp3 = Kind(name: "mp3", fileExtension: "mp3", codecArguments: ["-c:a", "libmp3lame", "-b:a", "128k"])
        public static let aac = Kind(name: "aac", fileExtension: "m4a", codecArguments: ["-c:a", "aac", "-b:a", "128k"])
        public static let flac = Kind(name: "flac", fileExtension: "flac", codecArguments: ["-c:a", "flac"])
        public static let opus = Kind(name: "opus", fileExtension: "opus", codecArguments: ["-c:a", "libopus", "-b:a", "96k"])
        public static let vorbis = Kind(name: "vorbis", fileExtension: "ogg", codecArguments: ["-c:a", "libvorbis", "-q:a", "4"])

        public static let all: [Kind] = [.wav, .mp3, .aac, .flac, .opus, .vorbis]
    }

    /// The folder every generated file goes in, made once per test process and removed
    /// when the process exits (every suite of the process shares its media).
    public static let folder: URL = {
        let url = folder(of: getpid())
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: TestMedia.folder(of: getpid())) }
        return url
    }()

    /// The media folder of the test process `process`.
    private static func folder(of process: pid_t) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("chorus-tests-\(process)")
    }

    /// One lock for each file or folder made: tests wanting the same one wait for a single
    /// making of it, and different ones are made side by side.
    private static let lockOfPath = Mutex<[String: NSLock]>([:])

    /// Runs `body` holding the lock of `path`.
    private static func making<T>(_ path: URL, _ body: () throws -> T) throws -> T {
        let lock = lockOfPath.withLockAnnotated { locks in
            if let existing = locks[path.path] { return existing }
            let made = NSLock()
            locks[path.path] = made
            return made
        }
        return try lock.withLock(body)
    }

    /// A tone file: `seconds` long, `rate` Hz, `channels` channels, each channel a different
    /// frequency so a channel swap would show.
    public static func tone(_ kind: Kind, seconds: Double = 2, rate: Int = 44_100, channels: Int = 2) throws -> URL {
        let name = "tone-\(kind.name)-\(rate)-\(channels)-\(seconds).\(kind.fileExtension)"
        let frequencies = (0..<channels).map { 220 * ($0 + 2) }
        let expression = frequencies.map { "0.4*sin(2*PI*\($0)*t)" }.joined(separator: "|")
        let layout = Self.layoutName(channels)
        return try make(name) { url in
            ["-f", "lavfi", "-i", "aevalsrc=\(expression):s=\(rate):d=\(seconds):c=\(layout)"]
                + kind.codecArguments + [url.path]
        }
    }

    /// Bursts of a 440 Hz tone (both channels), `burst` seconds long every `period` seconds
    /// from 0, silence between, for `seconds` at `rate`: onsets to time a render by.
    public static func bursts(seconds: Double, period: Double, burst: Double, rate: Int = 44_100) throws -> URL {
        let name = "bursts-\(rate)-\(seconds)-\(period)-\(burst).wav"
        let expression = "0.4*sin(2*PI*440*t)*lt(mod(t\\,\(period))\\,\(burst))"
        return try make(name) { url in
            ["-f", "lavfi", "-i", "aevalsrc=\(expression)|\(expression):s=\(rate):d=\(seconds):c=stereo", "-c:a", "pcm_s16le", url.path]
        }
    }

    /// A radio station's broadcast: a stereo tone (left 440 Hz, right 660 Hz, 48 kHz) as MP3
    /// at a constant 128 kbit/s, `seconds` long, without the header and tag a file has
    /// (no Xing frame, no ID3), so that any byte of it may be where a listener joins and its
    /// end may run on into its start (`StationServer`).
    public static func station(seconds: Double) throws -> URL {
        let name = "station-\(seconds).mp3"
        return try make(name) { url in
            ["-f", "lavfi", "-i", "aevalsrc=0.4*sin(2*PI*440*t)|0.4*sin(2*PI*660*t):s=48000:d=\(seconds):c=stereo",
             "-c:a", "libmp3lame", "-b:a", "128k", "-write_xing", "0", "-id3v2_version", "0", url.path]
        }
    }

    /// An HLS presentation of a stereo tone (left 440 Hz, right 660 Hz, 48 kHz, AAC in MPEG-TS):
    /// `seconds` long in segments of `segmentSeconds`, in a folder of its own with an on-demand
    /// playlist, `index.m3u8`. Returns the folder and the segments' names in order.
    public static func hls(seconds: Double, segmentSeconds: Int = 1) throws -> (folder: URL, segments: [String]) {
        let directory = folder.appendingPathComponent("hls-\(seconds)-\(segmentSeconds)")
        try making(directory) {
            let playlist = directory.appendingPathComponent("index.m3u8")
            if FileManager.default.fileExists(atPath: playlist.path) { return }
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let expression = [440, 660].map { "0.4*sin(2*PI*\($0)*t)" }.joined(separator: "|")
            let result = try Run.command("ffmpeg", ["-v", "error", "-y", "-f", "lavfi",
                                                    "-i", "aevalsrc=\(expression):s=48000:d=\(seconds):c=stereo",
                                                    "-c:a", "aac", "-b:a", "128k", "-f", "hls", "-hls_time", "\(segmentSeconds)",
                                                    "-hls_playlist_type", "vod",
                                                    "-hls_segment_filename", directory.appendingPathComponent("segment%03d.ts").path,
                                                    playlist.path])
            guard result.status == 0 else { throw TestMediaError.ffmpegFailed("hls", result.standardError) }
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".ts") }.sorted()
        return (directory, names)
    }

    /// The declared bandwidths of `hlsSoundVariants`' two variants, bits per second: each a
    /// little above what its sound takes.
    public static let variantBandwidths = (high: 400_000, low: 64_000)

    /// A tone of `seconds` as an HLS master playlist, `master.m3u8`, of two variants of
    /// sound alone in one-second segments: `high/index.m3u8` (AAC at 320 kbit/s), listed
    /// first, and `low/index.m3u8` (AAC at 48 kbit/s), declared at `variantBandwidths`.
    /// Returns the folder a server publishes.
    public static func hlsSoundVariants(seconds: Double) throws -> URL {
        let directory = folder.appendingPathComponent("hls-sound-variants-\(seconds)")
        try making(directory) {
            let master = directory.appendingPathComponent("master.m3u8")
            if FileManager.default.fileExists(atPath: master.path) { return }
            let expression = [440, 660].map { "0.4*sin(2*PI*\($0)*t)" }.joined(separator: "|")
            for (name, rate) in [("high", "320k"), ("low", "48k")] {
                let variant = directory.appendingPathComponent(name)
                try FileManager.default.createDirectory(at: variant, withIntermediateDirectories: true)
                let result = try Run.command("ffmpeg", ["-v", "error", "-y", "-f", "lavfi",
                                                        "-i", "aevalsrc=\(expression):s=48000:d=\(seconds):c=stereo",
                                                        "-c:a", "aac", "-b:a", rate, "-f", "hls", "-hls_time", "1",
                                                        "-hls_playlist_type", "vod",
                                                        "-hls_segment_filename", variant.appendingPathComponent("segment%03d.ts").path,
                                                        variant.appendingPathComponent("index.m3u8").path])
                guard result.status == 0 else { throw TestMediaError.ffmpegFailed("hls variants", result.standardError) }
            }
            try """
                #EXTM3U
                #EXT-X-STREAM-INF:BANDWIDTH=\(variantBandwidths.high),CODECS="mp4a.40.2"
                high/index.m3u8
                #EXT-X-STREAM-INF:BANDWIDTH=\(variantBandwidths.low),CODECS="mp4a.40.2"
                low/index.m3u8

                """.write(to: master, atomically: true, encoding: .utf8)
        }
        return directory
    }

    /// The English and French subtitle renditions of `hlsWithSubtitles`, in item seconds.
    public static let renditionCues: [String: [(start: Double, end: Double, text: String)]] = [
        "en": [(1.0, 2.0, "Hello from the rendition."), (3.0, 3.5, "Last line.")],
        "fr": [(1.0, 2.0, "Bonjour.")],
    ]

    /// `hls(seconds:)`'s tone as an HLS master playlist, `master.m3u8`, beside its media
    /// playlist, with two WebVTT subtitle renditions (`renditionCues`): English ("English",
    /// the default) and French ("Français", forced), each a media playlist of one segment
    /// whose local time 0 is the tone's first MPEG-TS timestamp. Returns the folder and every
    /// file a server must publish with the master playlist.
    public static func hlsWithSubtitles(seconds: Double) throws -> (master: URL, files: [String]) {
        let tone = try hls(seconds: seconds)
        let directory = tone.folder
        let master = directory.appendingPathComponent("master.m3u8")
        try making(master) {
            if FileManager.default.fileExists(atPath: master.path) { return }
            for (language, cues) in renditionCues {
                var vtt = "WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:126000,LOCAL:00:00:00.000\n"
                func stamp(_ seconds: Double) -> String {
                    let milliseconds = Int((seconds * 1000).rounded())
                    return String(format: "00:00:%02d.%03d", milliseconds / 1000, milliseconds % 1000)
                }
                for cue in cues { vtt += "\n\(stamp(cue.start)) --> \(stamp(cue.end))\n\(cue.text)\n" }
                try vtt.write(to: directory.appendingPathComponent("\(language).vtt"), atomically: true, encoding: .utf8)
                let playlist = "#EXTM3U\n#EXT-X-TARGETDURATION:\(Int(seconds.rounded(.up)))\n#EXT-X-VERSION:3\n#EXT-X-MEDIA-SEQUENCE:0\n"
                    + "#EXT-X-PLAYLIST-TYPE:VOD\n#EXTINF:\(seconds),\n\(language).vtt\n#EXT-X-ENDLIST\n"
                try playlist.write(to: directory.appendingPathComponent("\(language).m3u8"), atomically: true, encoding: .utf8)
            }
            let text = """
            #EXTM3U
            #EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="English",DEFAULT=YES,AUTOSELECT=YES,LANGUAGE="en",URI="en.m3u8"
            #EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="Français",DEFAULT=NO,AUTOSELECT=YES,FORCED=YES,LANGUAGE="fr",URI="fr.m3u8"
            #EXT-X-STREAM-INF:BANDWIDTH=140000,CODECS="mp4a.40.2",SUBTITLES="subs"
            index.m3u8

            """
            try text.write(to: master, atomically: true, encoding: .utf8)
        }
        return (master, tone.segments + ["index.m3u8", "en.m3u8", "en.vtt", "fr.m3u8", "fr.vtt"])
    }

    /// The pictures of `hlsVariants`' variants, in the master playlist's order: each smaller
    /// and of fewer bits per second than the one before, so that a choice shows in either.
    public static let variantSizes: [(width: Int, height: Int)] = [(640, 360), (320, 180), (160, 90)]
    /// `hlsVariants`' pictures a second.
    public static let variantFramesPerSecond = 25

    /// An HLS master playlist, `master.m3u8`, of three on-demand variants of one H.264 test
    /// picture with an AAC tone muxed into each (MPEG-TS, 1 s segments), `seconds` long:
    /// `variantSizes` at about 1.5 Mbit/s, 400 and 100 kbit/s of video, listed largest
    /// first as FFmpeg's HLS muxer writes them. Their `BANDWIDTH`s are measured by the
    /// muxer, so a test reads them from the opened master (`MediaInfo.variants`). With
    /// `languages`, the variants carry no sound of their own but share two audio renditions
    /// (`#EXT-X-MEDIA`), English (the default, 440 Hz) and French (660 Hz).
    public static func hlsVariants(seconds: Double = 4, languages: Bool = false) throws -> URL {
        let directory = folder.appendingPathComponent("hls-variants-\(seconds)\(languages ? "-languages" : "")")
        let master = directory.appendingPathComponent("master.m3u8")
        try making(directory) {
            if FileManager.default.fileExists(atPath: master.path) { return }
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let sizes = variantSizes.map { "\($0.width)x\($0.height)" }
            let videoRates = ["1500k", "400k", "100k"]
            var arguments = ["-v", "error", "-y",
                             "-f", "lavfi", "-i", "testsrc2=s=\(sizes[0]):r=\(variantFramesPerSecond):d=\(seconds)",
                             "-f", "lavfi", "-i", "sine=f=440:sample_rate=48000:d=\(seconds)",
                             "-f", "lavfi", "-i", "sine=f=660:sample_rate=48000:d=\(seconds)"]
            let variants = videoRates.indices
            if languages {
                arguments += variants.flatMap { _ in ["-map", "0:v"] } + ["-map", "1:a", "-map", "2:a"]
            } else {
                arguments += variants.flatMap { _ in ["-map", "0:v", "-map", "1:a"] }
            }
            arguments += ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-g", "25"]
            for variant in variants { arguments += ["-b:v:\(variant)", videoRates[variant], "-s:v:\(variant)", sizes[variant]] }
            arguments += ["-c:a", "aac", "-b:a", "64k", "-ac", "2"]
            let map: String
            if languages {
                map = "a:0,agroup:sound,language:en,default:yes a:1,agroup:sound,language:fr "
                    + variants.map { "v:\($0),agroup:sound" }.joined(separator: " ")
            } else {
                map = variants.map { "v:\($0),a:\($0)" }.joined(separator: " ")
            }
            arguments += ["-f", "hls", "-hls_time", "1", "-hls_playlist_type", "vod", "-var_stream_map", map,
                          "-master_pl_name", "master.m3u8",
                          "-hls_segment_filename", directory.appendingPathComponent("stream%v_%03d.ts").path,
                          directory.appendingPathComponent("stream%v.m3u8").path]
            let result = try Run.command("ffmpeg", arguments)
            guard result.status == 0 else { throw TestMediaError.ffmpegFailed("hls variants", result.standardError) }
        }
        return master
    }

    /// Part of one continuous tone: `seconds` of it from `offset` seconds in, so that parts
    /// made back to back join into the tone itself (left 440 Hz, right 660 Hz, at `rate`).
    /// For checking that consecutive items are heard without a gap or an overlap.
    public static func slice(_ kind: Kind, offset: Double, seconds: Double, rate: Int = 44_100) throws -> URL {
        let name = "slice-\(kind.name)-\(rate)-\(offset)-\(seconds).\(kind.fileExtension)"
        let expression = [440, 660].map { "0.4*sin(2*PI*\($0)*(t+\(offset)))" }.joined(separator: "|")
        return try make(name) { url in
            ["-f", "lavfi", "-i", "aevalsrc=\(expression):s=\(rate):d=\(seconds):c=stereo"] + kind.codecArguments + [url.path]
        }
    }

    /// An H.264 video in MP4 with an AAC stereo track.
    public static func video(seconds: Double = 2) throws -> URL {
        try make("video-\(seconds).mp4") { url in
            ["-f", "lavfi", "-i", "testsrc=size=320x240:rate=25:duration=\(seconds)",
             "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=\(seconds)",
             "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-ac", "2", "-shortest", url.path]
        }
    }

    /// An MP4 of `seconds` of test pattern at 25 pictures a second whose sound (AAC, 440 Hz)
    /// ends `shortBy` seconds before its pictures, as a camera's or an editor's often does:
    /// the container's duration is the pictures'.
    public static func videoWithShorterSound(seconds: Double = 1, shortBy: Double = 0.1) throws -> URL {
        try make("video-\(seconds)-sound-short-by-\(shortBy).mp4") { url in
            ["-f", "lavfi", "-i", "testsrc=size=320x240:rate=25:duration=\(seconds)",
             "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=\(seconds - shortBy)",
             "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-ac", "2", url.path]
        }
    }

    /// The tones of `multilingual`'s three sound tracks, in hertz, in track order.
    public static let multilingualTones = [440.0, 660.0, 880.0]

    /// The lines of `multilingual`'s English subtitles: (start, end, text) in seconds.
    public static let englishCues: [(start: Double, end: Double, text: String)] = [
        (0.5, 1.5, "Good evening."), (2.0, 3.0, "Two lines,\nthe second here."), (3.5, 4.5, "The last line."),
    ]

    /// A Matroska file of `seconds` with three FLAC sound tracks and two subtitle tracks, as a
    /// film with its dubs and commentary would have:
    /// - sound 1, English ("eng", titled "English", default), a 440 Hz tone;
    /// - sound 2, French ("fre", the bibliographic code Matroska uses, untitled), 660 Hz;
    /// - sound 3, German ("deu", titled "Commentary", a commentary), 880 Hz;
    /// - subtitles 1, English SubRip (`englishCues`);
    /// - subtitles 2, French ASS with styling tags, marked forced;
    /// - with `video`, first a black 320×240 H.264 picture at 25 frames a second.
    public static func multilingual(seconds: Double = 5, video: Bool = false) throws -> URL {
        let english = englishCues.enumerated().map { index, cue in
            "\(index + 1)\n\(srtTime(cue.start)) --> \(srtTime(cue.end))\n\(cue.text)\n"
        }.joined(separator: "\n")
        let french = """
            [Script Info]
            ScriptType: v4.00+

            [V4+ Styles]
            Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, Encoding
            Style: Default,Arial,20,&H00FFFFFF,&H000000FF,&H00000000,&H00000000,0,0,0,0,100,100,0,0,1,2,0,2,10,10,10,1

            [Events]
            Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text
            Dialogue: 0,0:00:01.00,0:00:02.00,Default,,0,0,0,,{\\i1}Bonsoir{\\i0}, mes amis.
            Dialogue: 0,0:00:03.00,0:00:04.00,Default,,0,0,0,,Deux lignes,\\Nla seconde ici.

            """
        // Written whole under a new name, so a test making the file meanwhile never reads half.
        let englishFile = folder.appendingPathComponent("multilingual-en.srt")
        let frenchFile = folder.appendingPathComponent("multilingual-fr.ass")
        try Data(english.utf8).write(to: englishFile, options: .atomic)
        try Data(french.utf8).write(to: frenchFile, options: .atomic)
        let tones = multilingualTones.map { "sine=frequency=\(Int($0)):sample_rate=48000:duration=\(seconds)" }
        let picture = video ? ["-f", "lavfi", "-i", "color=c=black:size=320x240:rate=25:duration=\(seconds)"] : []
        let inputs = video ? 6 : 5
        return try make("multilingual-\(seconds)\(video ? "-video" : "").mkv") { url in
            picture + tones.flatMap { ["-f", "lavfi", "-i", $0] }
                + ["-i", englishFile.path, "-i", frenchFile.path]
                + (0..<inputs).flatMap { ["-map", "\($0)"] }
                + (video ? ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-g", "25"] : [])
                + ["-c:a", "flac", "-ac", "2", "-c:s:0", "srt", "-c:s:1", "ass",
                   "-metadata:s:a:0", "language=eng", "-metadata:s:a:0", "title=English",
                   "-metadata:s:a:1", "language=fre",
                   "-metadata:s:a:2", "language=deu", "-metadata:s:a:2", "title=Commentary",
                   "-disposition:a:0", "default", "-disposition:a:1", "0", "-disposition:a:2", "comment",
                   "-metadata:s:s:0", "language=eng", "-metadata:s:s:1", "language=fre",
                   "-disposition:s:0", "0", "-disposition:s:1", "forced",
                   url.path]
        }
    }

    /// `seconds` as SubRip writes a time: "00:00:01,500".
    static func srtTime(_ seconds: Double) -> String {
        let milliseconds = Int((seconds * 1000).rounded())
        let (h, m, s, ms) = (milliseconds / 3_600_000, milliseconds / 60_000 % 60, milliseconds / 1000 % 60, milliseconds % 1000)
        return String(format: "%02d:%02d:%02d,%03d", h, m, s, ms)
    }

    /// Blocks across a frame-identity picture, one bit of the frame's number each.
    public static let identityBits = 16

    /// A video whose every picture shows its own number: the picture is cut into
    /// `identityBits` columns, column *i* white (luma 235) when bit *i* of the frame number is
    /// set and black (16) otherwise, losslessly coded so the pattern reads back exactly.
    /// `rotate` tags the stream with a display rotation (clockwise degrees, ffmpeg's
    /// `rotate` metadata); `withSound` adds a stereo AAC tone of the same length;
    /// `keyframeInterval` puts a keyframe every so many pictures (x264's own choice when nil:
    /// one every ten seconds, so a short video is one group of pictures).
    public static func identityVideo(seconds: Double = 2, rate: Int = 25, width: Int = 320, height: Int = 240,
                                     pixelFormat: String = "yuv420p", rotate: Int? = nil, withSound: Bool = false,
                                     keyframeInterval: Int? = nil) throws -> URL {
        if let rotate {
            // The muxer writes a rotation given with a stream copy, not one given while
            // encoding, so the tag goes on in a second pass.
            let plain = try identityVideo(seconds: seconds, rate: rate, width: width, height: height,
                                          pixelFormat: pixelFormat, withSound: withSound, keyframeInterval: keyframeInterval)
            return try make("rotated-\(rotate)-\(plain.lastPathComponent)") { url in
                ["-i", plain.path, "-c", "copy", "-metadata:s:v", "rotate=\(rotate)", url.path]
            }
        }
        let groups = keyframeInterval.map { "-g\($0)" } ?? ""
        let name = "identity-\(seconds)-\(rate)-\(width)x\(height)-\(pixelFormat)-\(withSound)\(groups).mp4"
        let pattern = "nullsrc=size=\(width)x\(height):rate=\(rate):duration=\(seconds),"
            + "geq=lum='if(bitand(N\\,pow(2\\,floor(X*\(identityBits)/W)))\\,235\\,16)':cb=128:cr=128"
        return try make(name) { url in
            var arguments = ["-f", "lavfi", "-i", pattern]
            if withSound { arguments += ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=\(seconds)"] }
            arguments += ["-c:v", "libx264", "-preset", "ultrafast", "-qp", "0", "-pix_fmt", pixelFormat]
            // A keyframe exactly every `keyframeInterval` pictures, and nowhere else.
            if let keyframeInterval { arguments += ["-g", "\(keyframeInterval)", "-keyint_min", "\(keyframeInterval)", "-sc_threshold", "0"] }
            if withSound { arguments += ["-c:a", "aac", "-ac", "2"] }
            return arguments + [url.path]
        }
    }

    /// An HLS presentation spliced from two encodings, as an advertisement or an encoder's
    /// restart splices a live stream: `identityVideo`'s numbered pictures (25 a second, 320×240)
    /// with a 440 Hz tone, `seconds` in all, in MPEG-TS segments of a second. The halves' times
    /// start at `offsets` seconds (plus the muxer's own 1.4 s), with an `EXT-X-DISCONTINUITY`
    /// between them in the on-demand playlist `index.m3u8`; the picture numbers run on across
    /// the splice. Returns the folder and the segments' names in playing order.
    public static func splicedHLS(seconds: Int = 4, offsets: (Int, Int)) throws -> (folder: URL, segments: [String]) {
        let directory = folder.appendingPathComponent("spliced-hls-\(seconds)-\(offsets.0)-\(offsets.1)")
        let playlist = directory.appendingPathComponent("index.m3u8")
        let half = seconds / 2
        let parts = [(name: "a", firstPicture: 0, offset: offsets.0), (name: "b", firstPicture: half * 25, offset: offsets.1)]
        try making(directory) {
            if FileManager.default.fileExists(atPath: playlist.path) { return }
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            var text = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:1\n#EXT-X-PLAYLIST-TYPE:VOD\n"
            for (index, part) in parts.enumerated() {
                let pattern = "nullsrc=size=320x240:rate=25:duration=\(half),"
                    + "geq=lum='if(bitand(N+\(part.firstPicture)\\,pow(2\\,floor(X*\(identityBits)/W)))\\,235\\,16)':cb=128:cr=128"
                let partList = directory.appendingPathComponent("\(part.name).m3u8")
                let result = try Run.command("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", pattern,
                                                        "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=\(half)",
                                                        "-c:v", "libx264", "-preset", "ultrafast", "-qp", "0", "-g", "25",
                                                        "-pix_fmt", "yuv420p", "-c:a", "aac", "-ac", "2",
                                                        "-output_ts_offset", "\(part.offset)",
                                                        "-f", "hls", "-hls_time", "1", "-hls_playlist_type", "vod",
                                                        "-hls_segment_filename", directory.appendingPathComponent("\(part.name)%03d.ts").path,
                                                        partList.path])
                guard result.status == 0 else { throw TestMediaError.ffmpegFailed("spliced HLS", result.standardError) }
                if index > 0 { text += "#EXT-X-DISCONTINUITY\n" }
                let lines = try String(contentsOf: partList, encoding: .utf8).split(separator: "\n")
                for (line, next) in zip(lines, lines.dropFirst()) where line.hasPrefix("#EXTINF") { text += "\(line)\n\(next)\n" }
            }
            text += "#EXT-X-ENDLIST\n"
            try text.write(to: playlist, atomically: true, encoding: .utf8)
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".ts") }.sorted()
        return (directory, names)
    }

    /// AAC frames (1,024 samples at 48 kHz) in each packed-audio segment of
    /// `packedAudioHLS`: 1.002667 s.
    public static let packedAudioSegmentFrames = 47
    /// Where `packedAudioHLS` stamps its first segment, on the 90 kHz MPEG-TS clock: 10 s.
    public static let packedAudioFirstStamp: Int64 = 900_000

    /// An on-demand HLS playlist of packed audio, as radio stations serve it: a 440 Hz tone
    /// as raw AAC (ADTS) segments of `packedAudioSegmentFrames` frames, each led by an ID3
    /// tag holding its first sample's time (Apple's `transportStreamTimestamp` private
    /// frame, from `packedAudioFirstStamp`) and the title then playing: `titles[k]` from
    /// segment `k` on. Returns the playlist.
    public static func packedAudioHLS(segments: Int, titles: [Int: String]) throws -> URL {
        let key = titles.sorted { $0.key < $1.key }.map { "\($0.key)\($0.value)" }.joined().utf8.reduce(5381) { ($0 &* 33) &+ Int($1) }
        let directory = folder.appendingPathComponent("packed-audio-\(segments)-\(key)")
        let playlist = directory.appendingPathComponent("index.m3u8")
        try making(directory) {
            if FileManager.default.fileExists(atPath: playlist.path) { return }
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let frameSamples = 1_024, rate = 48_000
            let seconds = Double(segments * packedAudioSegmentFrames * frameSamples) / Double(rate) + 0.5
            let adts = directory.appendingPathComponent("tone.adts")
            let result = try Run.command("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=\(seconds)",
                                                    "-c:a", "aac", "-ac", "2", "-f", "adts", adts.path])
            guard result.status == 0 else { throw TestMediaError.ffmpegFailed("packed audio", result.standardError) }
            // The ADTS frames, each as long as its header says.
            let bytes = [UInt8](try Data(contentsOf: adts))
            var frames: [ArraySlice<UInt8>] = []
            var position = 0
            while position + 7 <= bytes.count, bytes[position] == 0xFF, bytes[position + 1] & 0xF0 == 0xF0 {
                let length = Int(bytes[position + 3] & 0x03) << 11 | Int(bytes[position + 4]) << 3 | Int(bytes[position + 5]) >> 5
                guard length >= 7, position + length <= bytes.count else { break }
                frames.append(bytes[position..<(position + length)])
                position += length
            }
            try FileManager.default.removeItem(at: adts)
            guard frames.count >= segments * packedAudioSegmentFrames else { throw TestMediaError.ffmpegFailed("packed audio", "\(frames.count) frames") }
            let duration = Double(packedAudioSegmentFrames * frameSamples) / Double(rate)
            var text = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-PLAYLIST-TYPE:VOD\n"
            var title = titles[0] ?? ""
            for segment in 0..<segments {
                title = titles[segment] ?? title
                let stamp = packedAudioFirstStamp + Int64(segment * packedAudioSegmentFrames * frameSamples) * 90_000 / Int64(rate)
                var tag = id3Frame("PRIV", Array("com.apple.streaming.transportStreamTimestamp".utf8) + [0]
                                   + (0..<8).map { UInt8(truncatingIfNeeded: stamp >> (56 - 8 * $0)) })
                if !title.isEmpty { tag += id3Frame("TIT2", [3] + Array(title.utf8)) }
                let audio = frames[(segment * packedAudioSegmentFrames)..<((segment + 1) * packedAudioSegmentFrames)].flatMap { $0 }
                let name = String(format: "segment%03d.aac", segment)
                try Data(Array("ID3".utf8) + [4, 0, 0] + syncsafe(tag.count) + tag + audio).write(to: directory.appendingPathComponent(name))
                text += "#EXTINF:\(String(format: "%.6f", duration)),\n\(name)\n"
            }
            try (text + "#EXT-X-ENDLIST\n").write(to: playlist, atomically: true, encoding: .utf8)
        }
        return playlist
    }

    /// An ID3v2.4 frame: its name, size, no flags, and `body`.
    private static func id3Frame(_ name: String, _ body: [UInt8]) -> [UInt8] {
        Array(name.utf8) + syncsafe(body.count) + [0, 0] + body
    }

    /// `value` as ID3's four 7-bit bytes.
    private static func syncsafe(_ value: Int) -> [UInt8] {
        [UInt8(value >> 21 & 0x7F), UInt8(value >> 14 & 0x7F), UInt8(value >> 7 & 0x7F), UInt8(value & 0x7F)]
    }

    /// A video with sound whose keyframes come every `keyframeInterval` pictures (x264's own
    /// default puts one in ten seconds), for the paths that depend on where keyframes fall.
    public static func keyframedVideo(seconds: Double = 4, rate: Int = 25, keyframeInterval: Int = 25) throws -> URL {
        try make("keyframed-\(seconds)-\(rate)-\(keyframeInterval).mp4") { url in
            ["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=\(rate):duration=\(seconds)",
             "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=\(seconds)",
             "-c:v", "libx264", "-preset", "ultrafast", "-g", "\(keyframeInterval)", "-keyint_min", "\(keyframeInterval)",
             "-sc_threshold", "0", "-pix_fmt", "yuv420p", "-c:a", "aac", "-ac", "2", url.path]
        }
    }

    /// The frame number an identity picture shows, read from its luma plane (`stride` bytes
    /// a row): the middle of each column, on the middle row.
    public static func identity(luma: UnsafePointer<UInt8>, stride: Int, width: Int, height: Int) -> Int {
        var number = 0
        let row = luma + (height / 2) * stride
        for bit in 0..<identityBits {
            let x = (2 * bit + 1) * width / (2 * identityBits)
            if row[x] > 128 { number |= 1 << bit }
        }
        return number
    }

    /// Audio that starts with `silence` seconds of silence, then a full-scale square click
    /// train: its first non-zero sample marks an exact item time.
    public static func clickAfterSilence(silence: Double, seconds: Double = 1, rate: Int = 48_000) throws -> URL {
        try make("click-\(silence)-\(seconds)-\(rate).wav") { url in
            ["-f", "lavfi", "-i", "aevalsrc=if(gte(t\\,\(silence))\\,0.5\\,0):s=\(rate):d=\(silence + seconds):c=stereo",
             "-c:a", "pcm_s16le", url.path]
        }
    }

    /// A copy of `source` cut to `fraction` of its bytes.
    public static func truncated(_ source: URL, fraction: Double) throws -> URL {
        let url = folder.appendingPathComponent("truncated-\(fraction)-\(source.lastPathComponent)")
        let data = try Data(contentsOf: source)
        try data.prefix(Int(Double(data.count) * fraction)).write(to: url)
        return url
    }

    /// A copy of `source` with `length` bytes from `offset` replaced by noise.
    /// The noise comes from a generator seeded with `seed`, so a failure can be replayed.
    public static func damaged(_ source: URL, at offsetFraction: Double, length: Int, seed: UInt64 = 1) throws -> URL {
        let url = folder.appendingPathComponent("damaged-\(offsetFraction)-\(length)-\(seed)-\(source.lastPathComponent)")
        var data = try Data(contentsOf: source)
        let start = Int(Double(data.count) * offsetFraction)
        var generator = SeededGenerator(seed: seed)
        for index in start..<min(data.count, start + length) { data[index] = UInt8.random(in: 0...255, using: &generator) }
        try data.write(to: url)
        return url
    }

    /// A file with `contents` and no media in it.
    public static func file(named name: String, contents: Data) throws -> URL {
        let url = folder.appendingPathComponent(name)
        try contents.write(to: url)
        return url
    }

    static func layoutName(_ channels: Int) -> String {
        switch channels {
        case 1: return "mono"
        case 2: return "stereo"
        case 3: return "2.1"
        case 4: return "quad"
        case 5: return "5.0"
        case 6: return "5.1"
        case 8: return "7.1"
        default: return "\(channels)c"
        }
    }

    private static func make(_ name: String, arguments: (URL) -> [String]) throws -> URL {
        let url = folder.appendingPathComponent(name)
        try making(url) {
            if FileManager.default.fileExists(atPath: url.path) { return }
            let partial = folder.appendingPathComponent("partial-\(UUID().uuidString)-\(name)")
            let result = try Run.command("ffmpeg", ["-v", "error", "-y"] + arguments(partial))
            guard result.status == 0 else { throw TestMediaError.ffmpegFailed(name, result.standardError) }
            try FileManager.default.moveItem(at: partial, to: url)
        }
        return url
    }
}

public enum TestMediaError: Error, CustomStringConvertible {
    case ffmpegFailed(String, String)
    case badWAV(String)
    public var description: String {
        switch self {
        case .ffmpegFailed(let name, let message): return "ffmpeg could not make \(name): \(message)"
        case .badWAV(let why): return "bad WAV: \(why)"
        }
    }
}

