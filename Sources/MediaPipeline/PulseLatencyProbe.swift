import Foundation
import MediaClock
import Synchronization
import MutexAnnotations
internal import CPulse

/// Reads a PulseAudio server's own latency figures for the stream ALSA's `pulse` plugin
/// plays for this process, and turns them into timing points: at host time T, Q frames of
/// the stream stood before frame N of what was written.
///
/// Through the plugin, ALSA's delay is `pa_stream_get_latency` with interpolated timing:
/// libpulse extrapolates the stream's position between timing updates that come every
/// 1.5 s once a stream is older than a few seconds, through a smoother that fits a line to
/// the last 5 s of updates. A stream's first updates are taken while the server is still
/// starting it, so that fit starts off by up to milliseconds (11 ms has been measured) and
/// takes ten seconds or more to forget them; later updates move it by hundreds of µs at a
/// time. Following such reports, a follower plays milliseconds from where the sink really
/// plays it, measured at the sink's monitor.
///
/// The server knows exactly: asked for a sink input's latency, it reads, in the sink's own
/// thread, how much of the stream is queued and how far ahead the sink renders. So this
/// probe asks, on a connection of its own, every `interval`: the queued time plus the
/// sink's latency, from the moment of the answer, is how much plays before the next frame to
/// be written. That is audio time, counted by the sink's clock: it is left in frames for the
/// caller to turn into host time at the rate it learns. The moment of the answer is only
/// known to lie between asking and hearing back, and where it lies depends on why the round
/// trip was long: measured against the sink's line, answers within 100 µs scatter by 3 µs,
/// those of 200 to 300 µs by 23 µs and those past 300 µs by 58 µs, each band with a bias of
/// its own, so a load that slows the server moved a follower by tens of µs for seconds. Only
/// the quickest answers are used (`RoundTripGate`), taking the midpoint of their round trip.
/// Because the plugin writes on a connection of its own, a question asked right
/// after a write may overtake it at the server; questions are held back `writeSettling`
/// after a write, and answers are dropped when a write began or ended while one was out.
///
/// The stream is this process's only playing sink input (matched by process id); with none
/// or several (two outputs in one process), no points are made and ALSA's own reports stand.
/// Once found, it is asked about by its index alone: in an answer listing every sink
/// input, the server reads each one's latency in turn, so a stream's place in the list
/// (its age among the server's streams) would move the moment its figures describe away
/// from the round trip's midpoint, by tens of µs, differently for every stream.
// @unchecked: the question in flight (`mainloop`, `context`, the candidates and the index
// found) is touched only by libpulse's mainloop thread once `init` has started it; what
// other threads read is `latest` (a Mutex) and atomics.
final class PulseLatencyProbe: @unchecked Sendable {
    /// One answer: at host time `host`, `queuedFrames` of the stream (in the sink's frames:
    /// the server counts its latency in audio, not in host time) stood before the frame
    /// with index `frames` (counted from the first written).
    struct Point: Sendable {
        var frames: Int64
        var host: HostTime
        var queuedFrames: Double
        /// When the answer came.
        var answeredAt: HostTime
    }

    /// How often the server is asked: forty times a second, so that the quickest quarter of
    /// the answers (`RoundTripGate`) still gives a point every few periods. Each question is
    /// one sink input's figures, a few µs of the server's time.
    static let interval: Duration = .milliseconds(25)
    /// How often the server is asked while the stream is new: a start waits until the
    /// device's rate is known (`AudioRenderer.startingRateError`), which takes as many
    /// points as it takes, so they come two and a half times as fast at first.
    static let startingInterval: Duration = .milliseconds(10)
    /// How often the server is asked while nothing needs the timing every period (plain
    /// play, `TimingPrecision.relaxed`): ten times a second keeps the stream timed by the
    /// server's figures (a point lives `ALSAOutput.probePointLifetime`) and its rate
    /// learned, so a schedule that comes later starts on settled timing, at a quarter of
    /// the questions.
    static let relaxedInterval: Duration = .milliseconds(100)
    /// How long after the stream is found the probe asks at `startingInterval`: long enough
    /// for a start and the acquiring loop after it.
    static let startingTime: Duration = .seconds(3)
    /// How long after a write to wait before asking, so the written data reaches the server
    /// before the question does.
    static let writeSettling: Duration = .milliseconds(2)
    /// How long to wait for the server to accept the connection.
    static let connectTimeout: Duration = .seconds(2)
    /// How long to wait for an answer before giving the question up.
    static let answerTimeout: Duration = .milliseconds(500)
    /// Step (µs) of the polls for the connection and for an answer: short against the
    /// interval, and the answer's time is stamped when it arrives, not when a poll sees it.
    static let pollMicroseconds: UInt32 = 500

    /// Frames written to the device so far, and the host time of the last write, kept by
    /// the output's render thread.
    final class WriteCounter: Sendable {
        let frames = Atomic<Int64>(0)
        let lastWriteNanoseconds = Atomic<Int64>(0)
        /// Bumped as a write begins and again as it ends: odd while one is under way. The
        /// frame count moves only when a write returns, but its data may reach the server
        /// before that, so an answer is used only if no write began or ended around it.
        let writes = Atomic<Int64>(0)

        /// Wraps one write to the device (render thread).
        func write(_ body: () -> Int) -> Int {
            writes.add(1, ordering: .acquiringAndReleasing)
            let done = body()
            frames.add(Int64(done), ordering: .releasing)
            lastWriteNanoseconds.store(HostTime.now().nanoseconds, ordering: .releasing)
            writes.add(1, ordering: .acquiringAndReleasing)
            return done
        }
    }

    private let counter: WriteCounter
    /// The server to ask; nil for libpulse's choice, as the plugin's.
    private let server: String?
    /// The stream's rate: the server's microseconds of latency are this many frames a second.
    private let sampleRate: Int
    private let processID = String(getpid())
    private let latest = Mutex<Point?>(nil)
    private let running = Atomic<Bool>(true)
    private let relaxed = Atomic<Bool>(false)

    /// Whether the stream's timing is needed only now and then (`relaxedInterval`). Any
    /// thread; never blocks.
    var isRelaxed: Bool {
        get { relaxed.load(ordering: .relaxed) }
        set { relaxed.store(newValue, ordering: .relaxed) }
    }
    private let finished = DispatchSemaphore(value: 0)

    // Mainloop-thread state of the question in flight.
    private var mainloop: OpaquePointer?
    private var context: OpaquePointer?
    private var answeredAt: HostTime?
    private var candidates: [(index: UInt32, bufferMicroseconds: UInt64, sinkMicroseconds: UInt64)] = []
    private var listed = false
    /// The stream's sink input, once a list has found it; nil to list again.
    private var streamIndex: UInt32?
    /// Which answers are quick enough to use.
    private var gate = RoundTripGate()
    /// When the stream was first found.
    private var foundAt: HostTime?
    /// Which answers are believed: one that disagrees with the last is held until the next
    /// says which of the two is right.
    private var confirmation: JumpConfirmation
    /// Confirmed moves of the stream's timeline: the server played a stretch of silence
    /// (its own underrun, which ALSA's plugin does not report) or dropped what was queued.
    private let moves = Atomic<Int>(0)
    /// The frame from which the stream was last started afresh (a flush or an underrun the
    /// output recovered): points about earlier frames describe a stream since dropped, and a
    /// new stream's first point is no move of the old one's timeline.
    private let restartFrame = Atomic<Int64>(0)

    /// How far (in time) a new point may disagree with the last before it must be
    /// confirmed by the next: a write the pulse plugin had not yet sent when the question
    /// reached the server (its thread held off on a loaded machine, past `writeSettling`)
    /// is left out of the server's queued figure while the frame count includes it, and
    /// the point then says every frame plays a whole write (10 ms) early. Such an answer
    /// came once in some thousands under a loaded test run, and moved the stream's reports
    /// by 10 ms for as long as it was the newest. 3 ms is far above the quick answers'
    /// scatter (tens of µs) and the sink's drift between two points, far below a write.
    static let jumpLimit: Duration = .milliseconds(3)

    /// Starts asking the server that ALSA's pulse plugin would use (`server`, or when nil
    /// `PULSE_SERVER`, else the default) on a thread of its own.
    init(counter: WriteCounter, sampleRate: Int, server: String? = nil) {
        self.counter = counter
        self.sampleRate = sampleRate
        self.server = server
        confirmation = JumpConfirmation(sampleRate: sampleRate)
        let thread = Thread { [self] in
            run()
            finished.signal()
        }
        thread.name = "chorus.pulse-probe"
        thread.start()
    }

    /// The output started a new stream at written frame `frame` (a flush, or an underrun it
    /// recovered). Any thread; never blocks.
    func streamRestarted(atFrame frame: Int64) {
        restartFrame.store(frame, ordering: .relaxed)
    }

    /// How often the stream's timeline was seen to move (see `JumpConfirmation`). Any
    /// thread; never blocks.
    var timelineMoves: Int { moves.load(ordering: .relaxed) }

    /// The newest point. Never blocks: nil when the probe is busy publishing one (the
    /// caller keeps the last it read) or has none yet; once made, points are only replaced.
    var point: Point? { latest.withLockIfAvailableAnnotated { $0 } ?? nil }

    /// Stops asking and disconnects; waits for the probe's thread.
    func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        finished.wait()
    }

    deinit { stop() }

    // MARK: - The probe's thread

    private func run() {
        guard connect() else {
            disconnect()
            return
        }
        var wasRelaxed = false
        while running.load(ordering: .acquiring) {
            let relaxed = isRelaxed
            if wasRelaxed && !relaxed && foundAt != nil {
                // Timing is needed every period again (a schedule is coming): ask as at a
                // start, so the points a start waits for come as quickly.
                foundAt = HostTime.now()
            }
            wasRelaxed = relaxed
            let starting = foundAt.map { HostTime.now() - $0 < Self.startingTime } ?? true
            sleep(relaxed ? Self.relaxedInterval : starting ? Self.startingInterval : Self.interval)
            let lastWrite = HostTime(nanoseconds: counter.lastWriteNanoseconds.load(ordering: .acquiring))
            let sinceWrite = HostTime.now() - lastWrite
            if sinceWrite < Self.writeSettling { sleep(Self.writeSettling - sinceWrite) }
            ask()
        }
        disconnect()
    }

    private func connect() -> Bool {
        guard let loop = pa_threaded_mainloop_new() else { return false }
        mainloop = loop
        guard let api = pa_threaded_mainloop_get_api(loop),
              let ctx = pa_context_new(api, "chorus latency probe") else { return false }
        context = ctx
        guard pa_context_connect(ctx, server, PA_CONTEXT_NOAUTOSPAWN, nil) >= 0,
              pa_threaded_mainloop_start(loop) >= 0 else { return false }
        let deadline = HostTime.now() + Self.connectTimeout
        while HostTime.now() < deadline && running.load(ordering: .acquiring) {
            pa_threaded_mainloop_lock(loop)
            let state = pa_context_get_state(ctx)
            pa_threaded_mainloop_unlock(loop)
            if state == PA_CONTEXT_READY { return true }
            if state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED { return false }
            // Polled, not waited on, so that a server that never answers cannot hold the
            // thread (and the output's close) past the deadline.
            usleep(Self.pollMicroseconds)
        }
        return false
    }

    private func disconnect() {
        if let loop = mainloop { pa_threaded_mainloop_stop(loop) }
        if let ctx = context {
            pa_context_disconnect(ctx)
            pa_context_unref(ctx)
        }
        context = nil
        if let loop = mainloop { pa_threaded_mainloop_free(loop) }
        mainloop = nil
    }

    /// Asks for every sink input once and makes a point of the answer when it is usable.
    private func ask() {
        guard let loop = mainloop, let ctx = context else { return }
        pa_threaded_mainloop_lock(loop)
        guard pa_context_get_state(ctx) == PA_CONTEXT_READY else {
            pa_threaded_mainloop_unlock(loop)
            running.store(false, ordering: .releasing)
            return
        }
        let writesBefore = counter.writes.load(ordering: .acquiring)
        guard writesBefore % 2 == 0 else {
            // A write is under way: ask next time.
            pa_threaded_mainloop_unlock(loop)
            return
        }
        candidates.removeAll(keepingCapacity: true)
        answeredAt = nil
        listed = false
        let framesBefore = counter.frames.load(ordering: .acquiring)
        let askedAt = HostTime.now()
        let me = Unmanaged.passUnretained(self).toOpaque()
        let callback: pa_sink_input_info_cb_t = { _, info, eol, userdata in
            guard let userdata else { return }
            let probe = Unmanaged<PulseLatencyProbe>.fromOpaque(userdata).takeUnretainedValue()
            probe.receive(info, end: eol != 0)
        }
        let byIndex = streamIndex
        let operation = byIndex.map { pa_context_get_sink_input_info(ctx, $0, callback, me) }
            ?? pa_context_get_sink_input_info_list(ctx, callback, me)
        pa_threaded_mainloop_unlock(loop)
        if let operation {
            // Polled with a deadline: a server that stops answering gives up the question,
            // never the thread. The answer's time is stamped on arrival, not here.
            let deadline = askedAt + Self.answerTimeout
            while true {
                pa_threaded_mainloop_lock(loop)
                let state = pa_operation_get_state(operation)
                let done = listed || state != PA_OPERATION_RUNNING
                if done || HostTime.now() > deadline {
                    if !done { pa_operation_cancel(operation) }
                    pa_operation_unref(operation)
                    pa_threaded_mainloop_unlock(loop)
                    break
                }
                pa_threaded_mainloop_unlock(loop)
                usleep(Self.pollMicroseconds)
            }
        }
        let writesAfter = counter.writes.load(ordering: .acquiring)
        guard listed, candidates.count == 1 else {
            // Gone (a reopened stream has a new index), corked, or not one of ours: list
            // again next time.
            if listed { streamIndex = nil }
            return
        }
        if byIndex == nil {
            // Found: from now on asked about alone. This answer listed every stream, so its
            // moment is not the midpoint's; it is not used.
            streamIndex = candidates[0].index
            if foundAt == nil { foundAt = HostTime.now() }
            return
        }
        guard let answeredAt else { return }
        let roundTrip = answeredAt - askedAt
        // Every round trip counts toward what is quick now, even one a write overlapped.
        guard gate.admits(roundTrip, at: answeredAt, usable: writesAfter == writesBefore) else { return }
        let answer = candidates[0]
        let midpoint = askedAt + roundTrip / 2
        let latencyMicroseconds = Double(answer.bufferMicroseconds) + Double(answer.sinkMicroseconds)
        let point = Point(frames: framesBefore, host: midpoint, queuedFrames: latencyMicroseconds * Double(sampleRate) / 1e6,
                          answeredAt: answeredAt)
        if let last = confirmation.published, last.frames < restartFrame.load(ordering: .relaxed) {
            confirmation.reset()
        }
        switch confirmation.admit(point) {
        case .hold:
            return
        case .publish:
            break
        case .publishMoved:
            moves.add(1, ordering: .relaxed)
        }
        latest.withLockAnnotated { $0 = point }
    }

    /// On the mainloop's thread: one sink input of the answer, or its end.
    private func receive(_ info: UnsafePointer<pa_sink_input_info>?, end: Bool) {
        if answeredAt == nil { answeredAt = HostTime.now() }
        if end {
            listed = true
            return
        }
        guard let info = info?.pointee, info.corked == 0,
              let pid = pa_proplist_gets(info.proplist, PA_PROP_APPLICATION_PROCESS_ID),
              String(cString: pid) == processID else { return }
        candidates.append((info.index, info.buffer_usec, info.sink_usec))
    }
}

/// Sleeps the probe's thread for `duration` (never negative).
private func sleep(_ duration: Duration) {
    let (seconds, attoseconds) = duration.components
    let microseconds = max(0, seconds * 1_000_000 + attoseconds / 1_000_000_000_000)
    usleep(UInt32(clamping: microseconds))
}

/// Decides which of the probe's answers are quick enough to use: those within the quickest
/// `admittedQuantile` of the last `historyLength` round trips, and never one slower than
/// `maximumRoundTrip`. Quickness is judged against recent answers rather than a fixed bound,
/// since what a server manages depends on the machine and its load; and when the load rises,
/// an answer is used after `longestGap` without one however it compares, because a stream
/// left without points falls back to the plugin's timing.
struct RoundTripGate {
    /// The longest time without a used answer: well inside the 500 ms after which the
    /// output stops trusting the last point (`ALSAOutput.probePointLifetime`); a history
    /// of quick answers takes 0.8 s to age out after the server slows.
    static let longestGap: Duration = .milliseconds(200)
    /// Answers slower than this are never used: the moment they describe is uncertain by
    /// half of it. A local server answers in 50 to 300 µs on a loaded two-core machine.
    static let maximumRoundTrip: Duration = .microseconds(600)
    /// Round trips remembered: 32 answers, 0.8 s at the probe's steady rate (0.32 s while a
    /// stream is new), so the bound follows a change of load within a second.
    static let historyLength = 32
    /// The share of answers used: the quickest quarter scattered by 6 µs about the sink's
    /// line where all of them scattered by 20.
    static let admittedQuantile = 0.25
    /// Until this many round trips are known, every one under the maximum is used: the
    /// stream's first points must come within a few periods, so that a start is not held up.
    static let minimumHistory = 8

    private var history: [Duration] = []
    private var next = 0
    private var lastAdmitted: HostTime?

    init() { history.reserveCapacity(Self.historyLength) }

    /// Notes `roundTrip`, answered at `now`, and says whether its answer is to be used;
    /// an answer that is not `usable` for other reasons only counts toward what is quick.
    mutating func admits(_ roundTrip: Duration, at now: HostTime, usable: Bool = true) -> Bool {
        let quick = judge(roundTrip)
        let overdue = roundTrip <= Self.maximumRoundTrip && lastAdmitted.map { now - $0 >= Self.longestGap } == true
        guard usable, quick || overdue else { return false }
        lastAdmitted = now
        return true
    }

    private mutating func judge(_ roundTrip: Duration) -> Bool {
        if history.count < Self.historyLength {
            history.append(roundTrip)
        } else {
            history[next] = roundTrip
        }
        next = (next + 1) % Self.historyLength
        guard roundTrip <= Self.maximumRoundTrip else { return false }
        guard history.count >= Self.minimumHistory else { return true }
        let sorted = history.sorted()
        let bound = sorted[Int(Double(sorted.count - 1) * Self.admittedQuantile)]
        return roundTrip <= bound
    }
}

/// Decides which of the probe's points are believed. A point that places the stream more
/// than `PulseLatencyProbe.jumpLimit` from the last one believed is held: alone it may be
/// an answer that overtook a write the plugin had not yet sent, which puts the stream a
/// whole write early. When the next point agrees with the held one, the stream really
/// moved (the server ran dry and played silence, which the pulse plugin does not report as
/// an underrun, or dropped what was queued): both are believed, and the move is reported,
/// so the renderer places its content afresh at once instead of reading the move as report
/// noise for the seconds its timing filter takes to follow it.
struct JumpConfirmation {
    /// What to do with a point.
    enum Verdict: Equatable {
        /// Believe it.
        case publish
        /// Believe it: the stream's timeline moved, confirmed by two points.
        case publishMoved
        /// Keep it back until the next point says whether it was right.
        case hold
    }

    let sampleRate: Int
    /// The last point believed, and a point that disagreed with it.
    private(set) var published: PulseLatencyProbe.Point?
    private var held: PulseLatencyProbe.Point?

    init(sampleRate: Int) { self.sampleRate = sampleRate }

    /// Forgets the points believed: the stream was started afresh.
    mutating func reset() {
        published = nil
        held = nil
    }

    mutating func admit(_ point: PulseLatencyProbe.Point) -> Verdict {
        var verdict = Verdict.publish
        if let last = published, disagreement(point, last) > PulseLatencyProbe.jumpLimit {
            guard let held, disagreement(point, held) <= PulseLatencyProbe.jumpLimit else {
                held = point
                return .hold
            }
            verdict = .publishMoved
        }
        held = nil
        published = point
        return verdict
    }

    /// How far apart two points place the stream: when `earlier`, carried forward to
    /// `later`'s frame and moment at the nominal rate, says that frame plays.
    func disagreement(_ later: PulseLatencyProbe.Point, _ earlier: PulseLatencyProbe.Point) -> Duration {
        let elapsedFrames = Double((later.host - earlier.host).nanosecondsClamped) * Double(sampleRate) / 1e9
        let expected = earlier.queuedFrames + Double(later.frames - earlier.frames) - elapsedFrames
        let frames = abs(later.queuedFrames - expected)
        return .nanoseconds(Int64(min(frames / Double(sampleRate), 1e6) * 1e9))
    }
}
