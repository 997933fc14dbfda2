import ArgumentParser

/// `chorus-bench`: Chorus's figures, each printed next to a peer's run side by side
/// (ffmpeg, ffplay, or the requested time itself). Figures are printed, never asserted.
@main
struct ChorusBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chorus-bench",
        abstract: "Benchmarks Chorus against ffmpeg, ffplay, mpv and Snapcast, and measures scheduled-start accuracy, a player held on a master clock, and group sync.",
        subcommands: [ClockBenchmark.self, ClockReplay.self, DecodeBenchmark.self, FirstSoundBenchmark.self, FollowBenchmark.self, GaplessBenchmark.self, LoadGenerator.self, PlaybackBenchmark.self, ReverseBenchmark.self, SeekBenchmark.self, StartBenchmark.self, SyncBenchmark.self, VideoBenchmark.self]
    )
}
