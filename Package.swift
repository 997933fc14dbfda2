// swift-tools-version:6.0
import PackageDescription

/// The clock estimator's simulations (thousands of simulated followers' exchanges) are the
/// test suite's heaviest computing, several times slower unoptimised: its module and its
/// tests are optimised even in a debug build. Testing still sees internal names
/// (`-enable-testing` stays on), and the module has no `assert` the optimiser would drop.
let optimizedInTests: [SwiftSetting] = [.unsafeFlags(["-O"], .when(configuration: .debug))]

let package = Package(
    name: "Chorus",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "AVPlayback", targets: ["AVPlayback"]),
        .library(name: "MediaClock", targets: ["MediaClock"]),
        .executable(name: "chorus", targets: ["chorus"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
    ],
    targets: [
        // C libraries, found by pkg-config where its flags suit SwiftPM; each module map also
        // carries `static inline` shims for the macros Swift cannot import. Only MediaPipeline
        // imports FFmpeg, ALSA and PulseAudio (and chorus-bench, ALSA, to record a capture
        // device); MediaClock wraps CKernelClock, and GroupSync's UDP adapter asks for
        // transmit stamps through it.
        .systemLibrary(
            name: "CFFmpeg",
            pkgConfig: "libavformat libavcodec libavutil libswresample libswscale",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavutil-dev", "libswresample-dev", "libswscale-dev"])]
        ),
        .systemLibrary(name: "CALSA", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        // (No pkg-config for libpulse: its flags carry -pthread, which SwiftPM refuses.)
        .systemLibrary(name: "CPulse", providers: [.apt(["libpulse-dev"])]),
        // Rubber Band, for rates that keep their pitch with `.spectral` (see PitchKeeper).
        .systemLibrary(name: "CRubberBand", pkgConfig: "rubberband", providers: [.apt(["librubberband-dev"])]),
        // The clock_gettime system call itself, bypassing the C library (see KernelClock), and
        // the kernel's per-datagram transmit stamps (see UDPSocket).
        .systemLibrary(name: "CKernelClock"),
        // SDL2, for the video window (X11, Wayland, or a console's KMS/DRM).
        .systemLibrary(name: "CSDL2", pkgConfig: "sdl2", providers: [.apt(["libsdl2-dev"])]),
        // OpenSSL's libcrypto, for the group's HMAC-SHA256 (see MessageAuthenticator).
        .systemLibrary(name: "COpenSSL", providers: [.apt(["libssl-dev"])]),
        // ThreadSanitizer's annotations, weakly linked: present only in a -sanitize=thread build.
        .systemLibrary(name: "CThreadSanitizer"),

        // Synchronization.Mutex with its hand-offs shown to ThreadSanitizer (see
        // Mutex+ThreadSanitizer.swift): every module that shares state through a Mutex uses it.
        .target(name: "MutexAnnotations", dependencies: ["CThreadSanitizer"]),

        // Pure time core: CMTime, CMTimeRange, CMClock, CMTimebase, HostTime, and a timer
        // that keeps time on the host clock. No I/O.
        .target(name: "MediaClock", dependencies: ["CKernelClock", "MutexAnnotations"]),

        // Demux -> decode -> convert -> bounded rings -> timed outputs (ALSA, null, wav).
        .target(name: "MediaPipeline", dependencies: ["MediaClock", "MutexAnnotations", "CFFmpeg", "CALSA", "CPulse", "CRubberBand"]),

        // The video window: one thread that owns SDL, shows pictures at refreshes, draws
        // the on-screen controls and reports input. Knows nothing of the player.
        .target(name: "VideoDisplay", dependencies: ["CSDL2", "MediaClock"]),

        // The public AVFoundation-style playback API. Never imports a C module.
        // Its warnings go through swift-log; the application chooses the handler and level.
        .target(
            name: "AVPlayback",
            dependencies: ["MediaClock", "MediaPipeline", "VideoDisplay", "MutexAnnotations", .product(name: "Logging", package: "swift-log")]
        ),

        // Group sync: wire codec with HMAC, clock estimator, leader and follower state machines
        // (pure, no I/O), and thin UDP adapters. Knows nothing of FFmpeg or ALSA.
        .target(
            name: "GroupSync",
            dependencies: ["MediaClock", "CKernelClock", "MutexAnnotations", "COpenSSL"],
            swiftSettings: optimizedInTests
        ),

        // The HTTP/1.1 range server a leader uses to hand its items to followers.
        .target(name: "MediaServer", dependencies: ["MutexAnnotations"]),

        // The argument vector as the C library hands it to the program (see its header).
        .target(name: "CProcessArguments"),

        // Sessions: local play, a group's leader and a follower, driven by commands and
        // reporting through an AsyncStream of events. What the command line, and any other
        // front end (a JSON API, a remote), drives.
        .target(
            name: "ChorusSession",
            dependencies: ["AVPlayback", "MediaClock", "MediaPipeline", "GroupSync", "MediaServer", "MutexAnnotations", .product(name: "Logging", package: "swift-log")]
        ),

        // The command line: arguments into sessions, keys and script commands into session
        // commands, events into log lines and the status line.
        .target(
            name: "ChorusCommandLine",
            dependencies: [
                "ChorusSession", "AVPlayback", "MediaClock", "GroupSync", "CProcessArguments", "MutexAnnotations",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        .executableTarget(name: "chorus", dependencies: ["ChorusCommandLine"]),

        // The command line with every group node on a simulated clock (--clock-offset,
        // --clock-skew), for tests, benchmarks and the demo; not a product.
        .executableTarget(name: "chorus-sim", dependencies: ["ChorusCommandLine", "ChorusSession", "ChorusSimulation"],
                          path: "Tests/chorus-sim"),

        // The walkthrough's simple player, written against AVPlayback as an app would be:
        // `make example-player FILE=...`.
        .executableTarget(name: "example-player", dependencies: ["AVPlayback", "MediaPipeline"], path: "Examples/SimplePlayer"),
        // The code of Apple's playback guide, section by section, run against real media.
        .executableTarget(name: "guide-code", dependencies: ["AVPlayback"], path: "Examples/GuideCode",
                          exclude: ["README.md"]),

        // Benchmarks: figures and ratios against ffmpeg, ffplay and others, run side by side.
        .executableTarget(
            name: "chorus-bench",
            dependencies: [
                "AVPlayback", "MediaPipeline", "MediaClock", "MediaServer", "CALSA", "GroupSync", "MutexAnnotations", "ChorusSimulation",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        // Simulations for tests and benchmarks that the product never uses: a host clock
        // that moves only when told to, and a relay that delays, drops, reorders and
        // duplicates datagrams.
        .target(name: "ChorusSimulation", dependencies: ["MediaClock", "GroupSync", "ChorusSession", "MutexAnnotations"], path: "Tests/ChorusSimulation"),

        // Counts a thread's heap allocations in the test process (the render path's must be none).
        .target(name: "CAllocationCounter", path: "Tests/CAllocationCounter"),

        // Generated test media (real FFmpeg encodes, damage from a seeded generator), WAV
        // reading, FFmpeg reference decodes.
        .target(name: "ChorusTestSupport", dependencies: ["MediaClock", "MutexAnnotations", "CThreadSanitizer"], path: "Tests/ChorusTestSupport"),
        .testTarget(name: "VideoDisplayTests", dependencies: ["VideoDisplay", "CSDL2", "AVPlayback", "MediaPipeline", "ChorusTestSupport", "MutexAnnotations"]),
        .testTarget(name: "MediaClockTests", dependencies: ["MediaClock", "MutexAnnotations", "ChorusSimulation", "ChorusTestSupport"]),
        .testTarget(name: "GroupSyncTests", dependencies: ["GroupSync", "MediaClock", "MutexAnnotations", "ChorusSimulation", "ChorusTestSupport"], exclude: ["Fixtures"],
                    swiftSettings: optimizedInTests),
        .testTarget(name: "MediaServerTests", dependencies: ["MediaServer", "MediaPipeline", "ChorusTestSupport"]),
        .testTarget(name: "MediaPipelineTests", dependencies: ["MediaPipeline", "MediaClock", "MediaServer", "ChorusTestSupport", "ChorusSimulation", "CAllocationCounter"]),
        .testTarget(name: "AVPlaybackTests", dependencies: ["AVPlayback", "MediaClock", "MediaPipeline", "MediaServer", "ChorusSimulation", "MutexAnnotations", "ChorusTestSupport", "CAllocationCounter"]),
        .testTarget(name: "ChorusCLITests", dependencies: ["chorus", "chorus-sim", "example-player", "guide-code", "MediaPipeline", "MediaServer",
                                                          "ChorusTestSupport"]),
        .testTarget(name: "ChorusSessionTests", dependencies: ["ChorusSession", "AVPlayback", "GroupSync", "MediaServer", "MutexAnnotations", "ChorusTestSupport", "ChorusSimulation"]),
    ],
    swiftLanguageModes: [.v6]
)
