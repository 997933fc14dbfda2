import Foundation
import Testing
import ChorusTestSupport
import MediaPipeline

/// `chorus lead` and `chorus follow` as separate processes over real UDP and HTTP on
/// loopback, each node on a simulated clock of its own and a drifting null device; what they
/// play is compared through their render captures.
@Suite(.serialized) struct GroupCommandTests {
    /// A running node and its log.
    final class Node: @unchecked Sendable {
        let process = Process()
        let input = Pipe()
        let log: URL
        init(_ arguments: [String], name: String, environment: [String: String] = [:]) throws {
            log = TestMedia.folder.appendingPathComponent("\(name).log")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            // Spawned directly, as a shell runs `LD_PRELOAD=... FAKETIME=... chorus follow ...`:
            // with libfaketime preloaded so, /proc/self/cmdline reads back empty, and chorus
            // must take its arguments from the vector the C library hands it.
            // A node on a simulated clock runs the same command line as chorus-sim, which
            // takes the clock's options; every other runs chorus itself.
            let simulated = arguments.contains { $0.hasPrefix("--clock-offset") || $0.hasPrefix("--clock-skew") }
            process.executableURL = simulated ? TestEnvironment.chorusSimExecutable : TestEnvironment.chorusExecutable
            process.arguments = arguments
            if !environment.isEmpty {
                process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            }
            process.standardInput = input
            process.standardOutput = FileHandle.nullDevice
            process.standardError = try FileHandle(forWritingTo: log)
            try process.run()
        }
        func send(_ command: String) { input.fileHandleForWriting.write(Data((command + "\n").utf8)) }
        func stop() { Run.stop(process) }
        /// Ends the process as a crash or a power cut would: no chance to say goodbye.
        func vanish() {
            guard process.isRunning else { return }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        /// Sends `SIGTERM`, as a service manager stopping it does, and waits for the exit.
        func terminate() {
            guard process.isRunning else { return }
            process.terminate()
            process.waitUntilExit()
        }
        var output: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        /// User and system CPU time the process has used, from /proc; nil once it has exited.
        var cpuSeconds: Double? {
            guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return nil }
            // Fields after the command name start at field 3 (state); utime and stime are
            // fields 14 and 15, in clock ticks.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
            return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
        }
    }

    /// A free UDP port pair (the leader uses port and port + 1 for HTTP).
    static func freePort() -> UInt16 { UInt16.random(in: 20_000...40_000) & ~1 }

    func capture(_ name: String) -> String { TestMedia.folder.appendingPathComponent("\(name).cap").path }

    /// A leader on the null device playing `media` on `port`, captured as `name`, given time
    /// to start.
    func startLeader(_ name: String, port: UInt16, media: URL) throws -> Node {
        let leader = try Node(["lead", "--listen", "127.0.0.1:\(port)", "--output", "null", "--quiet", "--commands",
                               "--capture", capture(name), media.path], name: name)
        usleep(300_000)
        return leader
    }

    @Test func followersOnSkewedClocksPlayTheSameSampleAtTheSameTime() throws {
        let media = try TestMedia.tone(.flac, seconds: 30, rate: 48_000, channels: 2)
        let port = Self.freePort()
        let leader = try startLeader("lead", port: port, media: media)
        defer { leader.stop() }
        let clockLog = TestMedia.folder.appendingPathComponent("fast.clock.csv").path
        let fast = try Node(["follow", "127.0.0.1:\(port)", "--name", "fast", "--output", "null:drift=90",
                             "--clock-offset=4.2", "--clock-skew=180", "--capture", capture("fast"),
                             "--clock-log", clockLog], name: "fast")
        defer { fast.stop() }
        let slow = try Node(["follow", "127.0.0.1:\(port)", "--name", "slow", "--output", "null:drift=-70",
                             "--clock-offset=-9", "--clock-skew=-150", "--capture", capture("slow")], name: "slow")
        defer { slow.stop() }
        usleep(7_000_000)
        fast.stop()
        slow.stop()
        leader.stop()
        let reference = try RenderCaptureLog(path: capture("lead"))
        for name in ["fast", "slow"] {
            let offsets = try RenderCaptureLog(path: capture(name)).offsets(against: reference, skip: 48_000 * 3)
            #expect(offsets.count > 100, "\(name): \(offsets.count) comparable positions")
            let worst = offsets.map(abs).max() ?? 1
            // In sync: every compared sample within a millisecond of the leader's (the
            // benchmark measures how far within).
            #expect(worst < 1e-3, "\(name) worst offset \(worst * 1e6) µs")
        }
        try checkClockLog(clockLog, offsetSeconds: 4.2, skewPPM: 180)
    }

    /// The `--clock-log` of a follower whose clock runs `offsetSeconds` ahead and `skewPPM`
    /// fast of its leader's (the leader on the machine's clock): one row per exchange, whose
    /// timestamps and estimates describe that clock.
    func checkClockLog(_ path: String, offsetSeconds: Double, skewPPM: Double) throws {
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        #expect(lines.first == "t1,t2,t3,t4,estimate_at_t4,uncertainty,rate_ppm,rate_uncertainty_ppm,floor_spread")
        let rows = lines.dropFirst().map { $0.split(separator: ",").compactMap { Double($0) } }
        // Seven seconds at ten or more exchanges a second.
        #expect(rows.count > 70, "\(rows.count) exchanges logged")
        let last = try #require(rows.last)
        try #require(last.count == 9, "\(lines.last ?? "")")
        // The follower's stamps (t1, t4) run the offset ahead of the leader's (t2, t3).
        #expect(abs((last[0] - last[1]) / 1e9 - offsetSeconds) < 0.01)
        #expect(last[0] <= last[3] && last[1] <= last[2])
        // The estimate of the leader's time at t4 lies between its reply and the round trip.
        #expect(last[4] >= last[2] && last[4] <= last[2] + (last[3] - last[0]))
        // The leader's clock runs slow of this one by the skew.
        #expect(abs(last[6] + skewPPM) < 5, "rate \(last[6]) ppm")
        #expect(last[5] > 0 && last[5] < 100_000, "uncertainty \(last[5]) ns")
    }

    @Test(.enabled(if: TestEnvironment.hasFakeTime), arguments: ["+6.5 x1.0003", "-7.5 x0.9997"])
    func aFollowerOnAClockMovedByAnOutsideToolPlaysInSync(fakeTime: String) throws {
        // libfaketime moves every clock the follower reads, CLOCK_MONOTONIC included, seconds
        // ahead or behind and 300 ppm fast or slow, while the kernel (its socket stamps, its
        // timers, its futex timeouts) keeps the real time: the follower must still poll,
        // convert its receive stamps, wait for the times it means, and play with the leader.
        // Captures are written on the kernel's clock, so they compare.
        let media = try TestMedia.tone(.flac, seconds: 30, rate: 48_000, channels: 2)
        let port = Self.freePort()
        let name = "faked\(fakeTime.hasPrefix("-") ? "-behind" : "-ahead")"
        let leader = try startLeader("lead-\(name)", port: port, media: media)
        defer { leader.stop() }
        let follower = try Node(["follow", "127.0.0.1:\(port)", "--name", name, "--output", "null:drift=40", "--stats",
                                 "--capture", capture(name)], name: name,
                                environment: ["LD_PRELOAD": TestEnvironment.fakeTimeLibrary, "FAKETIME": fakeTime])
        defer { follower.stop() }
        let startCPU = follower.cpuSeconds
        usleep(7_000_000)
        let usedCPU = follower.cpuSeconds.flatMap { end in startCPU.map { end - $0 } }
        follower.stop()
        leader.stop()
        let reference = try RenderCaptureLog(path: capture("lead-\(name)"))
        let offsets = try RenderCaptureLog(path: capture(name)).offsets(against: reference, skip: 48_000 * 3)
        #expect(offsets.count > 100, "\(offsets.count) comparable positions; log: \(follower.output.suffix(600))")
        let worst = offsets.map(abs).max() ?? 1
        #expect(worst < 1e-3, "worst offset \(worst * 1e6) µs; log: \(follower.output.suffix(600))")
        // No thread spins: a wait given a deadline the kernel reads in its own time returns
        // at once when the moved clock is behind, and its thread then loops on a core. Such
        // a follower took 2 to 3 cores; one that waits as it means takes a few per cent.
        let used = try #require(usedCPU, "the follower's CPU time could not be read")
        #expect(used < 7 * 0.5, "the follower used \(used) s of CPU in 7 s")
    }

    @Test func pauseAndSeekReachFollowers() throws {
        let media = try TestMedia.tone(.mp3, seconds: 30, rate: 44_100, channels: 2)
        let port = Self.freePort()
        let leader = try Node(["lead", "--listen", "127.0.0.1:\(port)", "--output", "null", "--quiet", "--commands",
                               "--capture", capture("lead2"), media.path], name: "lead2")
        defer { leader.stop() }
        usleep(300_000)
        let follower = try Node(["follow", "127.0.0.1:\(port)", "--output", "null", "--capture", capture("follower2")], name: "follower2")
        defer { follower.stop() }
        usleep(2_500_000)
        leader.send("pause")
        usleep(1_000_000)
        leader.send("seek 20")
        usleep(500_000)
        leader.send("play")
        usleep(3_000_000)
        follower.stop()
        leader.stop()
        let mine = try RenderCaptureLog(path: capture("follower2")), theirs = try RenderCaptureLog(path: capture("lead2"))
        // After the seek both play from 20 s, together. (A capture's first period starts
        // before its first content frame when content begins partway through it, so the
        // second period is the first that is all content.)
        let run = mine.lastRun
        #expect(run.count > 2)
        let firstFull = run.dropFirst().first?.position ?? 0
        #expect(firstFull >= 20 * 44_100 && firstFull < 20 * 44_100 + 2 * 441)
        let offsets = mine.offsets(against: theirs, skip: 44_100)
        #expect(!offsets.isEmpty)
        #expect((offsets.map(abs).max() ?? 1) < 1e-3)
    }

    @Test func rateChangesAndTheNextItemReachFollowers() throws {
        let first = try TestMedia.tone(.flac, seconds: 30, rate: 48_000, channels: 2)
        let second = try TestMedia.tone(.wav, seconds: 20, rate: 48_000, channels: 2)
        let port = Self.freePort()
        let leader = try Node(["lead", "--listen", "127.0.0.1:\(port)", "--output", "null", "--quiet", "--commands",
                               "--clock-skew=40", "--capture", capture("lead-rate"), first.path, second.path], name: "lead-rate")
        defer { leader.stop() }
        usleep(300_000)
        let follower = try Node(["follow", "127.0.0.1:\(port)", "--output", "null:drift=-60", "--clock-offset=-2.5",
                                 "--clock-skew=-150", "--capture", capture("follower-rate")], name: "follower-rate")
        defer { follower.stop() }
        usleep(2_500_000)
        leader.send("rate 1.5")
        usleep(2_500_000)
        leader.send("rate 0.75")
        usleep(2_500_000)
        let beforeNext = try RenderCaptureLog(path: capture("follower-rate"))
        leader.send("next")
        usleep(3_000_000)
        follower.stop()
        leader.stop()

        // Both speed changes were made on the running item, without starting it afresh: one
        // run from before the first change to after the second, played in step with the leader.
        let mine = beforeNext, theirs = try RenderCaptureLog(path: capture("lead-rate"))
        let run = mine.lastRun
        #expect(run.count > 600, "\(run.count) periods in the follower's run")
        // (A period that changed speed partway is captured as its two parts, so positions
        // interpolated between rows are never read across two speeds.)
        let offsets = mine.offsets(against: theirs.run(at: run.last?.host ?? 0), skip: 48_000)
        #expect(offsets.count > 500)
        #expect((offsets.map(abs).max() ?? 1) < 100e-6, "max \((offsets.map(abs).max() ?? 1) * 1e6) µs")
        // The item's pace in the follower's last second at each speed (item seconds per
        // second heard).
        func pace(endingAt host: Int64) -> Double {
            let inside = run.filter { $0.host > host - 1_000_000_000 && $0.host <= host }
            guard let a = inside.first, let b = inside.last, b.host > a.host else { return 0 }
            return (b.position - a.position) / 48_000 / (Double(b.host - a.host) / 1e9)
        }
        let last = run.last?.host ?? 0
        #expect(abs(pace(endingAt: last) - 0.75) < 0.01, "\(pace(endingAt: last))")
        #expect(abs(pace(endingAt: last - 2_500_000_000) - 1.5) < 0.01, "\(pace(endingAt: last - 2_500_000_000))")

        // `next` moved every room to the second item, from its start, together.
        let after = try RenderCaptureLog(path: capture("follower-rate"))
        let moved = after.lastRun
        #expect(moved.first?.serial != run.first?.serial)
        #expect((moved.dropFirst().first?.position ?? -1) >= 0 && (moved.dropFirst().first?.position ?? .infinity) < 48_000)
        let together = after.offsets(against: theirs, skip: 4_800)
        #expect(!together.isEmpty)
        #expect((together.map(abs).max() ?? 1) < 100e-6)
    }

    @Test func nextOnTheLastItemKeepsItPlaying() throws {
        let first = try TestMedia.tone(.wav, seconds: 20, rate: 48_000, channels: 1)
        let port = Self.freePort()
        let leader = try startLeader("lead-next", port: port, media: first)
        defer { leader.stop() }
        usleep(1_500_000)
        leader.send("next")
        usleep(1_500_000)
        // One item only: `next` has nowhere to go, and the group plays on.
        #expect(leader.process.isRunning)
        let run = try RenderCaptureLog(path: capture("lead-next")).lastRun
        #expect((run.last?.position ?? 0) > 2 * 48_000, "\(run.last?.position ?? 0)")
    }

    @Test func aFollowerJoiningMidItemStartsInSync() throws {
        let media = try TestMedia.tone(.aac, seconds: 30, rate: 48_000, channels: 2)
        let port = Self.freePort()
        let leader = try Node(["lead", "--listen", "127.0.0.1:\(port)", "--output", "null", "--quiet",
                               "--capture", capture("lead3"), media.path], name: "lead3")
        defer { leader.stop() }
        usleep(4_000_000)
        let late = try Node(["follow", "127.0.0.1:\(port)", "--output", "null:drift=40", "--clock-offset=1.5",
                             "--capture", capture("late")], name: "late")
        defer { late.stop() }
        usleep(4_000_000)
        late.stop()
        leader.stop()
        let mine = try RenderCaptureLog(path: capture("late"))
        // It started about 4 s into the item, not at the top.
        #expect((mine.lastRun.first?.position ?? 0) > 3 * 48_000)
        let offsets = mine.offsets(against: try RenderCaptureLog(path: capture("lead3")), skip: 48_000)
        #expect(!offsets.isEmpty)
        #expect((offsets.map(abs).max() ?? 1) < 1e-3)
    }

    @Test func aKeyedGroupIgnoresForgedAndForeignMessages() throws {
        let media = try TestMedia.tone(.wav, seconds: 20, rate: 48_000, channels: 1)
        let key = try TestMedia.file(named: "group.key", contents: Data((0..<32).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }))
        let wrongKey = try TestMedia.file(named: "wrong.key", contents: Data((0..<32).map { UInt8(truncatingIfNeeded: $0 &* 53 &+ 5) }))
        let port = Self.freePort()
        let leader = try Node(["lead", "--listen", "127.0.0.1:\(port)", "--output", "null", "--quiet", "--verbose",
                               "--key-file", key.path, media.path], name: "keyed-lead")
        defer { leader.stop() }
        usleep(300_000)
        let member = try Node(["follow", "127.0.0.1:\(port)", "--name", "member", "--output", "null",
                               "--key-file", key.path, "--stats"], name: "member")
        defer { member.stop() }
        let intruder = try Node(["follow", "127.0.0.1:\(port)", "--name", "intruder", "--output", "null",
                                 "--key-file", wrongKey.path, "--stats"], name: "intruder")
        defer { intruder.stop() }
        let unkeyed = try Node(["follow", "127.0.0.1:\(port)", "--name", "unkeyed", "--output", "null", "--stats"], name: "unkeyed")
        defer { unkeyed.stop() }
        usleep(4_000_000)
        member.stop(); intruder.stop(); unkeyed.stop(); leader.stop()
        let log = leader.output
        #expect(log.contains("follower member joined"))
        #expect(!log.contains("follower intruder joined"))
        #expect(!log.contains("follower unkeyed joined"))
        #expect(member.output.contains("phase following"))
        #expect(!intruder.output.contains("phase following"))
        #expect(!unkeyed.output.contains("phase following"))
        #expect(!member.output.contains("WARNING: no --key-file"))
        #expect(unkeyed.output.contains("WARNING: no --key-file"))
    }

    /// A leader stopped as a service is (SIGTERM) says Goodbye: the room fades out at once
    /// instead of playing on in holdover for ten seconds, as it did when the signal killed
    /// the leader outright.
    @Test func aLeaderStoppedBySIGTERMSaysGoodbye() throws {
        let media = try TestMedia.tone(.wav, seconds: 30, rate: 48_000, channels: 1)
        let port = Self.freePort()
        let leader = try Node(["lead", "--listen", "127.0.0.1:\(port)", "--output", "null", "--quiet", media.path], name: "lead-term")
        defer { leader.stop() }
        usleep(300_000)
        let follower = try Node(["follow", "127.0.0.1:\(port)", "--output", "null"], name: "follower-term")
        defer { follower.stop() }
        usleep(2_000_000)
        leader.terminate()
        #expect(leader.process.terminationReason == .exit && leader.process.terminationStatus == 0)
        usleep(1_000_000)
        follower.stop()
        let log = follower.output
        #expect(log.contains("is gone: fading out"), "\(log)")
        #expect(!log.contains("holding over"), "\(log)")
    }

    /// A follower with the wrong key hears nothing from the leader, and says so rather than
    /// waiting in silence; the leader says whose datagrams it ignored and why.
    @Test func aWrongKeyIsSaidOnBothSides() throws {
        let media = try TestMedia.tone(.wav, seconds: 30, rate: 48_000, channels: 1)
        let key = try TestMedia.file(named: "said.key", contents: Data((0..<32).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ 3) }))
        let wrongKey = try TestMedia.file(named: "said-wrong.key", contents: Data((0..<32).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }))
        let port = Self.freePort()
        let leader = try Node(["lead", "--listen", "127.0.0.1:\(port)", "--output", "null", "--quiet", "--key-file", key.path, media.path],
                              name: "lead-said")
        defer { leader.stop() }
        usleep(300_000)
        let follower = try Node(["follow", "127.0.0.1:\(port)", "--output", "null", "--key-file", wrongKey.path], name: "follower-said")
        defer { follower.stop() }
        usleep(3_600_000)
        follower.stop()
        leader.stop()
        #expect(follower.output.contains("no answer from a leader at 127.0.0.1:\(port)"), "\(follower.output)")
        #expect(leader.output.contains("failed authentication"), "\(leader.output)")
    }

    @Test func aFollowerHoldsOverWhenTheLeaderGoesAndResyncsWhenItReturns() throws {
        let media = try TestMedia.tone(.flac, seconds: 60, rate: 48_000, channels: 2)
        let port = Self.freePort()
        var leader = try Node(["lead", "--listen", "127.0.0.1:\(port)", "--output", "null", "--quiet", media.path], name: "lead5")
        usleep(300_000)
        let follower = try Node(["follow", "127.0.0.1:\(port)", "--output", "null", "--stats"], name: "follower5")
        defer { follower.stop() }
        usleep(3_000_000)
        leader.vanish()
        // Quiet past the holdover limit: the follower holds over, then fades and waits.
        usleep(13_000_000)
        leader = try Node(["lead", "--listen", "127.0.0.1:\(port)", "--output", "null", "--quiet", media.path], name: "lead5b")
        defer { leader.stop() }
        usleep(4_000_000)
        follower.stop()
        leader.stop()
        let log = follower.output
        #expect(log.contains("holding over"))
        #expect(log.contains("fading out"))
        #expect(log.contains("resynchronizing") || log.contains("is back"))
        // Following again at the end.
        let lastStats = log.split(separator: "\n").last { $0.contains("phase") } ?? ""
        #expect(lastStats.contains("phase following"), "\(lastStats)")
        #expect(follower.process.terminationReason == .uncaughtSignal || follower.process.terminationStatus == 0)
    }
}
