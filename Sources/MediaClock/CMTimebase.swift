import Foundation
import Synchronization
import MutexAnnotations

/// A controllable time line driven by a source clock or by another timebase
/// (`CMTimebase`): `time = anchorTime + (sourceTime - anchorSourceTime) * rate`.
///
/// A new timebase reads time 0 at rate 0. Changing the rate re-anchors at the current
/// time, so time stays continuous; `setTime`, `setAnchorTime` and
/// `setRateAndAnchorTime` jump it. Times are exact rationals computed with `CMTime`
/// integer arithmetic (typically in the source's nanosecond timescale or the
/// anchor's); rates are `Float64` as in CoreMedia and are used at their exact binary
/// value.
///
/// Notifications (`timeJumpedNotification`, `effectiveRateChangedNotification`) are
/// posted synchronously on the calling thread, after the change is visible and with no
/// lock held, to the `NotificationCenter` given at initialization. A timebase driven by
/// another posts them too when that one's rate changes or its time jumps, as its own
/// effective rate and time then do (unless its own rate is 0, which holds it where it is),
/// and so on down the chain.
///
/// Thread-safety: all members may be called from any thread. The anchor and rate are
/// guarded by a mutex that is never held while calling into the source, so chains of
/// timebases cannot deadlock.
public final class CMTimebase: Sendable {
    /// Posted (object: the timebase) when the time line is re-anchored by `setTime`,
    /// `setAnchorTime` or `setRateAndAnchorTime`.
    public static let timeJumpedNotification = Notification.Name("CMTimebaseNotification_TimeJumped")
    /// Posted (object: the timebase) when `setRate` or `setRateAndAnchorTime` changes the rate.
    public static let effectiveRateChangedNotification = Notification.Name("CMTimebaseNotification_EffectiveRateChanged")
    /// `timeJumpedNotification` by the name Apple's Swift overlay gives it.
    public static let timeJumped = timeJumpedNotification
    /// `effectiveRateChangedNotification` by the name Apple's Swift overlay gives it.
    public static let effectiveRateChanged = effectiveRateChangedNotification

    /// What drives the timebase.
    private enum Source {
        case clock(CMClock)
        case timebase(CMTimebase)
    }

    /// The affine map from source time to timebase time.
    private struct State {
        var rate: Float64
        var anchorTime: CMTime
        var anchorSourceTime: CMTime
    }

    private let source: Source
    private let notificationCenter: NotificationCenter
    private let state: Mutex<State>
    /// The timebases driven by this one, told of its jumps and rate changes.
    private let dependents = Mutex<[WeakTimebase]>([])

    private struct WeakTimebase {
        weak var timebase: CMTimebase?
    }

    /// A timebase driven by `sourceClock`, reading 0 at rate 0.
    public convenience init(sourceClock: CMClock) {
        self.init(sourceClock: sourceClock, notificationCenter: .default)
    }

    /// A timebase driven by `sourceClock` that posts its notifications to `notificationCenter`.
    public init(sourceClock: CMClock, notificationCenter: NotificationCenter) {
        source = .clock(sourceClock)
        self.notificationCenter = notificationCenter
        state = Mutex(State(rate: 0, anchorTime: .zero, anchorSourceTime: sourceClock.time))
    }

    /// CoreMedia-style creation (`CMTimebase(allocator:sourceClock:)`); the allocator is
    /// ignored. Never throws in this implementation; the signature matches Apple's.
    public convenience init(allocator: Any? = nil, sourceClock: CMClock) throws(CMTimebaseError) {
        self.init(sourceClock: sourceClock, notificationCenter: .default)
    }

    /// CoreMedia-style creation (`CMTimebase(allocator:sourceTimebase:)`); the allocator is
    /// ignored. Never throws in this implementation; the signature matches Apple's.
    public convenience init(allocator: Any? = nil, sourceTimebase: CMTimebase) throws(CMTimebaseError) {
        self.init(sourceTimebase: sourceTimebase, notificationCenter: .default)
    }

    /// A timebase driven by another timebase, reading 0 at rate 0. Its effective rate
    /// is its own rate times the source's effective rate.
    public convenience init(sourceTimebase: CMTimebase) {
        self.init(sourceTimebase: sourceTimebase, notificationCenter: .default)
    }

    /// A timebase driven by `sourceTimebase` that posts to `notificationCenter`.
    public init(sourceTimebase: CMTimebase, notificationCenter: NotificationCenter) {
        source = .timebase(sourceTimebase)
        self.notificationCenter = notificationCenter
        state = Mutex(State(rate: 0, anchorTime: .zero, anchorSourceTime: sourceTimebase.time))
        sourceTimebase.dependents.withLockAnnotated { list in
            list.removeAll { $0.timebase == nil }
            list.append(WeakTimebase(timebase: self))
        }
    }

    /// The source clock, or `nil` when driven by a timebase.
    public var sourceClock: CMClock? {
        if case .clock(let clock) = source { return clock }
        return nil
    }

    /// The source timebase, or `nil` when driven by a clock.
    public var sourceTimebase: CMTimebase? {
        if case .timebase(let timebase) = source { return timebase }
        return nil
    }

    /// The clock at the root of the chain; its host clock defines "now".
    public var ultimateSourceClock: CMClock {
        switch source {
        case .clock(let clock): return clock
        case .timebase(let timebase): return timebase.ultimateSourceClock
        }
    }

    /// The current time (`CMTimebaseGetTime`).
    public var time: CMTime {
        time(atHostTime: ultimateSourceClock.hostClock.now())
    }

    /// The rate relative to the source: 0 stopped, 1 normal, negative reverse.
    public var rate: Float64 {
        state.withLockAnnotated { $0.rate }
    }

    /// The rate relative to the ultimate source clock: this rate times every ancestor
    /// timebase's rate.
    public var effectiveRate: Float64 {
        let own = rate
        switch source {
        case .clock: return own
        case .timebase(let timebase): return own * timebase.effectiveRate
        }
    }

    /// The time and the rate, from one reading of the anchor (`CMTimebaseGetTimeAndRate`):
    /// read apart, a rate change between the two could pair a time with the other rate.
    public var timeAndRate: (time: CMTime, rate: Float64) {
        let sourceTime = sourceTime(atHostTime: ultimateSourceClock.hostClock.now())
        let snapshot = state.withLockAnnotated { $0 }
        return (Self.map(snapshot, sourceTime: sourceTime), snapshot.rate)
    }

    /// The timebase time at host time `hostTime` under the current anchor and rate.
    public func time(atHostTime hostTime: HostTime) -> CMTime {
        let sourceTime = sourceTime(atHostTime: hostTime)
        return Self.map(state.withLockAnnotated { $0 }, sourceTime: sourceTime)
    }

    /// The host time at which the timebase reads `time` under the current anchor and
    /// rates (inverse of `time(atHostTime:)`, rounded to the nanosecond); `nil` when the
    /// effective rate is 0, `time` is not numeric, or the result is out of range.
    public func hostTime(forTime time: CMTime) -> HostTime? {
        let snapshot = state.withLockAnnotated { $0 }
        guard time.isNumeric, snapshot.rate != 0,
              let sinceAnchor = (time - snapshot.anchorTime).duration,
              let sourceElapsed = ExactArithmetic.divide(sinceAnchor.roundedNanoseconds, by: snapshot.rate)
        else { return nil }
        let elapsed = CMTime.fitting(
            sourceElapsed, times: 1, over: Int128(HostTime.nanosecondTimescale),
            preferredTimescale: HostTime.nanosecondTimescale, fallbackTimescale: HostTime.nanosecondTimescale,
            epoch: 0, alreadyRounded: false)
        let sourceTime = snapshot.anchorSourceTime + elapsed
        switch source {
        case .clock(let clock): return clock.hostTime(forClockTime: sourceTime)
        case .timebase(let timebase): return timebase.hostTime(forTime: sourceTime)
        }
    }

    /// Jumps to `time`, keeping the rate (`CMTimebaseSetTime`). Posts `timeJumpedNotification`.
    ///
    /// - Throws: `CMTimebaseError.invalidParameter` if `time` is not numeric.
    public func setTime(_ time: CMTime) throws(CMTimebaseError) {
        guard time.isNumeric else { throw CMTimebaseError.invalidParameter }
        let sourceNow = currentSourceTime()
        state.withLockAnnotated {
            $0.anchorTime = time
            $0.anchorSourceTime = sourceNow
        }
        post(jumped: true, rateChanged: false)
    }

    /// Changes the rate, re-anchoring at the current time so that time is continuous
    /// (`CMTimebaseSetRate`). Posts `effectiveRateChangedNotification` if the rate
    /// changed, and never `timeJumpedNotification`.
    ///
    /// - Throws: `CMTimebaseError.invalidParameter` if `rate` is not finite.
    public func setRate(_ rate: Float64) throws(CMTimebaseError) {
        guard rate.isFinite else { throw CMTimebaseError.invalidParameter }
        let sourceNow = currentSourceTime()
        let changed = state.withLockAnnotated { current -> Bool in
            guard current.rate != rate else { return false }
            let now = Self.map(current, sourceTime: sourceNow)
            current = State(rate: rate, anchorTime: now, anchorSourceTime: sourceNow)
            return true
        }
        if changed { post(jumped: false, rateChanged: true) }
    }

    /// Sets rate and anchor together: at source time `referenceTime` the timebase reads
    /// `anchorTime` (`CMTimebaseSetRateAndAnchorTime`). Posts `timeJumpedNotification`,
    /// and `effectiveRateChangedNotification` if the rate changed.
    ///
    /// - Parameter referenceTime: a time of the source (clock or timebase), not of this
    ///   timebase.
    /// - Throws: `CMTimebaseError.invalidParameter` for a non-finite rate or a
    ///   non-numeric time.
    public func setRateAndAnchorTime(rate: Float64, anchorTime: CMTime, referenceTime: CMTime) throws(CMTimebaseError) {
        guard rate.isFinite, anchorTime.isNumeric, referenceTime.isNumeric else {
            throw CMTimebaseError.invalidParameter
        }
        let changed = state.withLockAnnotated { current -> Bool in
            let changed = current.rate != rate
            current = State(rate: rate, anchorTime: anchorTime, anchorSourceTime: referenceTime)
            return changed
        }
        post(jumped: true, rateChanged: changed)
    }

    /// Re-anchors without changing the rate: at source time `referenceTime` the
    /// timebase reads `time` (`CMTimebaseSetAnchorTime`). Posts `timeJumpedNotification`.
    ///
    /// - Throws: `CMTimebaseError.invalidParameter` for non-numeric times.
    public func setAnchorTime(_ time: CMTime, referenceTime: CMTime) throws(CMTimebaseError) {
        guard time.isNumeric, referenceTime.isNumeric else { throw CMTimebaseError.invalidParameter }
        state.withLockAnnotated {
            $0.anchorTime = time
            $0.anchorSourceTime = referenceTime
        }
        post(jumped: true, rateChanged: false)
    }

    /// Posts this timebase's notifications, then those of the timebases it drives whose
    /// time moves with it (a rate of 0 holds a timebase, and those it drives, where they are).
    private func post(jumped: Bool, rateChanged: Bool) {
        if jumped { notificationCenter.post(name: Self.timeJumpedNotification, object: self) }
        if rateChanged { notificationCenter.post(name: Self.effectiveRateChangedNotification, object: self) }
        let driven = dependents.withLockAnnotated { list -> [CMTimebase] in
            list.removeAll { $0.timebase == nil }
            return list.compactMap(\.timebase)
        }
        for timebase in driven where timebase.rate != 0 {
            timebase.post(jumped: jumped, rateChanged: rateChanged)
        }
    }

    /// The source's time now.
    private func currentSourceTime() -> CMTime {
        sourceTime(atHostTime: ultimateSourceClock.hostClock.now())
    }

    /// The source's time at `hostTime`.
    private func sourceTime(atHostTime hostTime: HostTime) -> CMTime {
        switch source {
        case .clock(let clock): return clock.time(atHostTime: hostTime)
        case .timebase(let timebase): return timebase.time(atHostTime: hostTime)
        }
    }

    /// Applies the affine map. At rate 0 the anchor is returned untouched, keeping its
    /// timescale; at rate 1 no multiplication (and so no timescale change) happens.
    private static func map(_ state: State, sourceTime: CMTime) -> CMTime {
        if state.rate == 0 { return state.anchorTime }
        let elapsed = sourceTime - state.anchorSourceTime
        let scaled = state.rate == 1 ? elapsed : elapsed * state.rate
        return state.anchorTime + scaled
    }
}

/// The name of `CMTimebase.timeJumpedNotification` as CoreMedia's C constant spells it;
/// Apple's code makes a name of it (`NSNotification.Name(kCMTimebaseNotification_TimeJumped
/// as String)`), which compiles here unchanged.
public let kCMTimebaseNotification_TimeJumped: String = CMTimebase.timeJumpedNotification.rawValue
/// The name of `CMTimebase.effectiveRateChangedNotification` as CoreMedia's C constant spells it.
public let kCMTimebaseNotification_EffectiveRateChanged: String = CMTimebase.effectiveRateChangedNotification.rawValue
