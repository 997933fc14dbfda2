import MediaClock

/// One completed clock exchange: the follower sent at `t1` and received the reply at `t4`
/// (follower host clock); the leader received at `t2` and replied at `t3` (leader clock).
public struct ClockSample: Sendable, Equatable {
    /// Follower host time when the request left.
    public var t1: HostTime
    /// Leader time when the request arrived.
    public var t2: LeaderTime
    /// Leader time when the reply left.
    public var t3: LeaderTime
    /// Follower host time when the reply arrived.
    public var t4: HostTime

    /// A sample from its four timestamps.
    public init(t1: HostTime, t2: LeaderTime, t3: LeaderTime, t4: HostTime) {
        self.t1 = t1
        self.t2 = t2
        self.t3 = t3
        self.t4 = t4
    }

    /// Time on the wire, both ways: `(t4 - t1) - (t3 - t2)`.
    public var roundTrip: Duration {
        .nanoseconds(roundTripNanoseconds.clampedToInt64)
    }

    /// Leader minus follower clock, assuming symmetric paths:
    /// `((t2 - t1) + (t3 - t4)) / 2`. Wrong by at most half the round trip.
    public var offset: Duration {
        .nanoseconds((offsetTimesTwo / 2).clampedToInt64)
    }

    /// The follower host time the offset applies to: `(t1 + t4) / 2`.
    public var midpoint: HostTime {
        HostTime(nanoseconds: ((Int128(t1.nanoseconds) + Int128(t4.nanoseconds)) / 2).clampedToInt64)
    }

    /// Whether the timestamps describe a possible exchange: time moves forward on both
    /// sides and the leader did not take longer than the whole round trip.
    public var isPlausible: Bool {
        t4 >= t1 && t3 >= t2 && roundTripNanoseconds >= 0
    }

    var roundTripNanoseconds: Int128 {
        (Int128(t4.nanoseconds) - Int128(t1.nanoseconds)) - (Int128(t3.nanoseconds) - Int128(t2.nanoseconds))
    }

    var offsetTimesTwo: Int128 {
        (Int128(t2.nanoseconds) - Int128(t1.nanoseconds)) + (Int128(t3.nanoseconds) - Int128(t4.nanoseconds))
    }
}
