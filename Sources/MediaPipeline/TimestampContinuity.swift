import MediaClock

/// Keeps an input's timestamps continuous across the jumps of a stream spliced from
/// several: an HLS playlist's `EXT-X-DISCONTINUITY` (an advertisement, an encoder that
/// restarted), an MPEG-TS broadcast whose clock was reset, the 33-bit wrap of MPEG-TS times.
/// A pure value type, in nanoseconds of the streams' own time.
///
/// Why: the sound is laid out by counting its samples from the first one's time, so it
/// plays on through a jump as if nothing happened, while pictures, subtitles and timed
/// metadata are placed by their own times. Without this, the pictures after a jump are due
/// seconds or hours away from the sound beside them (a still picture, or a burst of late
/// ones dropped), and a title arrives at the wrong moment. Each jump is closed up instead:
/// what follows it is shifted to start where its stream left off, so the item's timeline
/// runs on as the sound does.
///
/// One shift serves every stream between two jumps (an *epoch*), so that what the source
/// put together (a picture and its sound) stays together after the jump. The sound's
/// stream, when there is one, sets the epoch's shift exactly, since the sound after the
/// jump is heard right after the sound before it: a picture stream that meets the jump
/// first opens the epoch with its own guess, which stays *provisional* (`isProvisional`)
/// until the sound arrives and corrects it. (In a spliced HLS test stream the guess was
/// 27 ms off: the second encoding's sound starts with its encoder's priming, and the first
/// one's ran on past its last picture.) `ItemDemuxer` holds such pictures back meanwhile.
/// A stream whose packets still come from before the jump (a demuxer hands out the last
/// picture of a segment only when the next one's first arrives) keeps its own shift until
/// it meets the jump itself.
///
/// Sparse streams (subtitles, timed metadata) may be silent for minutes, so a gap in them
/// says nothing: they take the newest epoch's shift and never open one.
struct TimestampContinuity {
    /// How far a packet's time may lie from where its stream left off before it counts as a
    /// jump (ns): a second, beyond any gap or overlap an encoder leaves between segments
    /// (tens of ms) and any decoding-order reach of a picture stream, and short of any
    /// splice worth closing up (an encoder restarting at zero, a clock reset, a wrap).
    static let jumpLimitNanoseconds: Int64 = 1_000_000_000
    /// The most epochs remembered for seeking back: a broadcast spliced every few minutes
    /// fills this in days, while a forged stream that jumps at every packet cannot grow the
    /// record without bound. The oldest after the first are let go; a seek into one lands
    /// by the epoch before it.
    static let maximumEpochs = 1024

    /// A stretch of the input between two jumps: the splice that opened it (its first item
    /// time and the shift its packets take), and whether that shift is still a guess.
    struct Epoch: Equatable {
        var splice: TimelineSplice
        /// Whether the shift is a guess that the sound has yet to correct.
        var provisional = false

        init(start: Int64, shift: Int64, provisional: Bool = false) {
            splice = TimelineSplice(startNanoseconds: start, shiftNanoseconds: shift)
            self.provisional = provisional
        }

        init(_ splice: TimelineSplice) { self.splice = splice }

        /// The first item time (ns, after shifting).
        var start: Int64 { splice.startNanoseconds }
        /// What the stretch's packets take (ns).
        var shift: Int64 { splice.shiftNanoseconds }
    }

    /// The sound's stream, which sets each epoch's shift exactly, if the item has sound.
    let leadingStream: Int32?
    /// Every epoch seen since the item opened, in order; the first has no shift.
    private(set) var epochs: [Epoch] = [Epoch(start: .min, shift: 0)]
    /// The epoch packets are taken into when their stream has no history (after a start or
    /// a seek), and sparse streams always.
    private var current = 0
    /// Per stream: the shift it takes now, and where its next packet is expected (ns,
    /// shifted).
    private var streams: [Int32: (shift: Int64, expected: Int64?)] = [:]
    /// Where the last seek asked to go (ns, shifted), until a watched stream's first packet
    /// after it chooses its epoch.
    private var seekTarget: Int64?
    /// Where the last seek's input was opened (ns, shifted: an HLS segment placed by its
    /// playlist), when it was, and the unshifted time that goes there (nil: the first
    /// packet's): the first packet takes an epoch that puts that time there, or opens one.
    private var seekPlacement: (placed: Int64, anchor: Int64?)?

    /// Counts the changes to `epochs`, for a reader that copies them out.
    private(set) var revision = 0

    /// A continuity with no jumps seen; with `earlier`, the epochs an earlier opening of the
    /// same stream saw (a live stream opened again for a seek, pictures opened for a display
    /// that came later), so that this one runs on the same timeline: read from the top, its
    /// first packets take the first epoch's shift; after `prepareSeek(to:)`, the one that
    /// puts them nearest the target.
    init(leadingStream: Int32?, earlier: [Epoch]? = nil) {
        self.leadingStream = leadingStream
        if let earlier, earlier.first?.start == .min, earlier.count <= Self.maximumEpochs {
            epochs = earlier.map { Epoch($0.splice) }
        }
    }

    /// The epochs another player's `splices` describe, for `init(leadingStream:earlier:)`:
    /// the first, with no shift, and one for each splice (the newest `maximumEpochs` − 1).
    static func epochs(after splices: [TimelineSplice]) -> [Epoch] {
        [Epoch(start: .min, shift: 0)]
            + splices.suffix(maximumEpochs - 1).map { Epoch($0) }
    }

    /// The shift (ns) for a packet of `stream` that decodes at `nanoseconds` (unshifted) and
    /// lasts `duration` (ns; 0 when unknown). A jump of more than `jumpLimitNanoseconds`
    /// from where the stream left off joins the newest epoch when that closes it up, and
    /// opens an epoch of its own otherwise.
    mutating func shift(stream: Int32, at nanoseconds: Int64, duration: Int64) -> Int64 {
        if let target = seekTarget, streams[stream] == nil {
            // The first packet after a seek: the epoch whose shift puts it nearest the
            // target. An input lands before its target by up to a segment or a keyframe
            // distance, seconds, while a jump moves times by more, and the target's own time
            // alone can miss: a playlist's durations place a splice a few ms from where its
            // sound puts it.
            seekTarget = nil
            if let (placed, anchor) = seekPlacement {
                // Opened at a segment its playlist places: an epoch seen before that puts the
                // segment there keeps its exact shift (set by the sound); with none, the
                // playlist's place opens an epoch (a stretch not yet read).
                seekPlacement = nil
                let own = anchor ?? nanoseconds
                let nearest = epochs.indices.min { a, b in
                    Self.distance(own &+ epochs[a].shift, placed) < Self.distance(own &+ epochs[b].shift, placed)
                }
                if let nearest, Self.near(own &+ epochs[nearest].shift, placed) {
                    current = nearest
                } else {
                    _ = open(Epoch(start: placed, shift: placed &- own))
                }
            } else {
                current = epochs.indices.min { a, b in
                    Self.distance(nanoseconds &+ epochs[a].shift, target) < Self.distance(nanoseconds &+ epochs[b].shift, target)
                } ?? current
            }
        }
        let newest = epochs[current].shift
        var shift = streams[stream]?.shift ?? newest
        if let expected = streams[stream]?.expected, !Self.near(nanoseconds &+ shift, expected) {
            let exact = expected &- nanoseconds
            if shift != newest, Self.near(nanoseconds &+ newest, expected) {
                // Another stream met this jump first: this one joins its epoch.
                shift = newest
                if stream == leadingStream { shift = correctNewest(to: exact, start: expected) }
            } else {
                let guess = leadingStream != nil && stream != leadingStream && streams[leadingStream ?? 0] != nil
                shift = open(Epoch(start: expected, shift: exact, provisional: guess))
            }
        }
        let end = nanoseconds &+ shift &+ max(duration, 0)
        streams[stream] = (shift, end)
        return shift
    }

    /// The shift for a packet of a sparse stream (subtitles, timed metadata): the newest
    /// epoch's.
    var sparseShift: Int64 { epochs[current].shift }

    /// Whether `stream`'s shift is still a guess: it opened the newest epoch, and the sound
    /// has not yet met the jump.
    func isProvisional(_ stream: Int32) -> Bool {
        epochs[current].provisional && streams[stream]?.shift == epochs[current].shift
    }

    /// The shift `stream` takes now (the newest epoch's for a stream with no history).
    func shift(of stream: Int32) -> Int64 { streams[stream]?.shift ?? epochs[current].shift }

    /// Lets the newest epoch's guess stand (the sound did not meet the jump in time).
    mutating func acceptGuess() { epochs[current].provisional = false }

    /// Prepares for a seek to the shifted time `nanoseconds`: returns the unshifted time to
    /// seek the input to, by the epoch that time lies in, and forgets where each stream left
    /// off. The first packet of the sound or the pictures after it chooses the epoch whose
    /// shift puts it nearest the target, wherever the input's own seek landed.
    ///
    /// With `placedAt` (ns, shifted), the input was opened again at a segment its playlist
    /// places there (`MediaSource.reopen(fromSeconds:)`), rather than sought, and `anchor`
    /// (ns, unshifted; nil: the first packet's time) is the segment's own time for its
    /// start: the first packet takes the epoch that puts `anchor` within
    /// `jumpLimitNanoseconds` of that place, or opens one that puts it there.
    mutating func prepareSeek(to nanoseconds: Int64, placedAt: Int64? = nil, anchor: Int64? = nil) -> Int64 {
        current = epochs.lastIndex { $0.start <= (placedAt ?? nanoseconds) } ?? 0
        streams = [:]
        seekTarget = nanoseconds
        seekPlacement = placedAt.map { ($0, anchor) }
        // A guess still open stands: the sound read after the seek has no history to
        // correct it from.
        for index in epochs.indices { epochs[index].provisional = false }
        return nanoseconds &- epochs[current].shift
    }

    /// Prepares for reading again from the input's start (an input that could not seek
    /// restarts there): its first epoch, and no stream's history.
    mutating func restartFromTop() {
        current = 0
        streams = [:]
        seekTarget = nil
        seekPlacement = nil
        for index in epochs.indices { epochs[index].provisional = false }
    }

    /// Opens `epoch` after the current one (an epoch met again after a seek back replaces
    /// the record of it and of any after it); returns its shift.
    private mutating func open(_ epoch: Epoch) -> Int64 {
        epochs.removeSubrange((current + 1)...)
        if epochs.count >= Self.maximumEpochs { epochs.remove(at: 1) }
        epochs.append(epoch)
        current = epochs.count - 1
        revision &+= 1
        return epoch.shift
    }

    /// Moves the newest epoch's shift to the sound's exact one, and every stream already
    /// in it with it.
    private mutating func correctNewest(to shift: Int64, start: Int64) -> Int64 {
        let guess = epochs[current].shift
        epochs[current] = Epoch(start: start, shift: shift)
        revision &+= 1
        for (stream, state) in streams where state.shift == guess {
            streams[stream] = (shift, state.expected.map { $0 &- guess &+ shift })
        }
        return shift
    }

    private static func distance(_ time: Int64, _ target: Int64) -> UInt64 {
        let difference = time.subtractingReportingOverflow(target)
        return difference.overflow ? .max : difference.partialValue.magnitude
    }

    private static func near(_ time: Int64, _ expected: Int64) -> Bool {
        distance(time, expected) <= UInt64(jumpLimitNanoseconds)
    }
}
