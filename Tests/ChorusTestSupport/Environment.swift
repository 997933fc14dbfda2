import Foundation

/// What the test run has around it.
public enum TestEnvironment {
    /// Whether a PulseAudio server is reachable, so ALSA's `default` and `pulse` devices
    /// are real clocked devices. `make test` starts a private one and sets CHORUS_PULSE.
    public static var hasPulse: Bool {
        guard ProcessInfo.processInfo.environment["PULSE_SERVER"] != nil else { return false }
        return (try? Run.command("pactl", ["info"], timeout: 5).status) == 0
    }

    /// libfaketime's thread-safe build, as Debian's `faketime` package installs it: runs a
    /// process on a clock moved by an outside tool.
    public static let fakeTimeLibrary = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"
    public static var hasFakeTime: Bool { FileManager.default.fileExists(atPath: fakeTimeLibrary) }

    /// The `chorus` executable built next to the test bundle.
    public static var chorusExecutable: URL { builtExecutable("chorus") }

    /// `chorus-sim`: the same command line with `--clock-offset` and `--clock-skew`, which
    /// put a group node on a simulated clock.
    public static var chorusSimExecutable: URL { builtExecutable("chorus-sim") }

    /// `example-player`: the walkthrough's simple player, written against the library.
    public static var examplePlayerExecutable: URL { builtExecutable("example-player") }

    /// `guide-code`: the code of Apple's playback guide, section by section.
    public static var guideCodeExecutable: URL { builtExecutable("guide-code") }

    /// An executable of this package, built beside the tests.
    static func builtExecutable(_ name: String) -> URL {
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidates = [here.appendingPathComponent(name),
                          here.deletingLastPathComponent().appendingPathComponent(name)]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]
    }
}
