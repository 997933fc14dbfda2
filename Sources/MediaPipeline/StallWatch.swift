import MediaClock

/// Judges whether a device's stream has stopped taking frames: one that frees no period for
/// `limit`, once `grace` has passed since it was opened, is taken for dead.
///
/// A sound server's plugin can be left with a stream the server no longer plays (seen
/// through PulseAudio on a loaded machine, after underruns made the plugin re-create its
/// stream: the stream's sink input was gone, or empty while the plugin waited for the
/// server to ask for more), and then reports neither space nor an error. A card that stops
/// would be caught the same way. Pure: the output's render thread tells it what it saw and
/// when, so tests drive it on any clock.
struct StallWatch: Sendable, Equatable {
    /// A stream that frees no period for this long, while frames wait in it, is taken for
    /// dead: five buffers' worth, far past any scheduling delay a loaded machine has shown
    /// (tens of ms), and short enough that a room falls silent for half a second, not for good.
    static let limit: Duration = .milliseconds(500)
    /// For this long after opening, a stream that takes nothing is not judged: an idle
    /// PulseAudio sink holds a new stream's first writes for up to a second while it wakes.
    static let grace: Duration = .seconds(2)

    /// When the stream was opened.
    let openedAt: HostTime
    /// When it last had a period free (or was opened).
    private(set) var lastProgress: HostTime

    init(openedAt: HostTime) {
        self.openedAt = openedAt
        lastProgress = openedAt
    }

    /// Notes a look at the device at `now`, which found a period free or not; true when the
    /// stream is to be given up.
    mutating func isStalled(periodFree: Bool, at now: HostTime) -> Bool {
        if periodFree {
            lastProgress = now
            return false
        }
        return now - lastProgress > Self.limit && now - openedAt > Self.grace
    }
}
