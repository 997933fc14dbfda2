import Testing
import ChorusTestSupport
@testable import MediaPipeline

/// The closing up of a spliced input's jumps, stepped packet by packet (ns throughout).
@Suite(.ownThread) struct TimestampContinuityTests {
    static let sound: Int32 = 1
    static let pictures: Int32 = 0
    static let subtitles: Int32 = 2
    static let second: Int64 = 1_000_000_000
    /// An AAC frame at 48 kHz, and a picture at 25 a second.
    static let soundFrame: Int64 = 21_333_333
    static let picture: Int64 = 40_000_000

    @Test("times that run on are left as they are, gaps and overlaps under the limit too")
    func continuousTimesKeepTheirPlace() {
        var continuity = TimestampContinuity(leadingStream: Self.sound)
        var time: Int64 = 0
        for index in 0..<200 {
            #expect(continuity.shift(stream: Self.sound, at: time, duration: Self.soundFrame) == 0)
            #expect(continuity.shift(stream: Self.pictures, at: time, duration: Self.picture) == 0)
            // A gap of half a second now and then, and an overlap of a tenth.
            time += Self.soundFrame + (index % 50 == 49 ? Self.second / 2 : 0) - (index % 70 == 69 ? Self.second / 10 : 0)
        }
        #expect(continuity.epochs.count == 1)
    }

    @Test("a jump the sound meets first is closed up by the sound, and the pictures join its epoch")
    func theSoundSetsTheShift() {
        var continuity = TimestampContinuity(leadingStream: Self.sound)
        _ = continuity.shift(stream: Self.sound, at: 50 * Self.second, duration: Self.soundFrame)
        _ = continuity.shift(stream: Self.pictures, at: 50 * Self.second + 5_000_000, duration: Self.picture)
        // Back to 1 s: the sound's next packet is put where its last ended.
        let soundShift = continuity.shift(stream: Self.sound, at: Self.second, duration: Self.soundFrame)
        #expect(soundShift == 50 * Self.second + Self.soundFrame - Self.second)
        #expect(continuity.epochs.last == .init(start: 50 * Self.second + Self.soundFrame, shift: soundShift))
        // The picture beside it takes the same shift, though it lands 18.7 ms after its own
        // last picture ended, not at its end.
        #expect(continuity.shift(stream: Self.pictures, at: Self.second + 5_000_000, duration: Self.picture) == soundShift)
        #expect(!continuity.isProvisional(Self.pictures))
        #expect(continuity.sparseShift == soundShift)
    }

    /// Sound and pictures at 10 s, then the pictures alone jumped to 100 s: the continuity,
    /// and the shift the pictures guessed.
    static func picturesJumpedFirst() -> (TimestampContinuity, guess: Int64) {
        var continuity = TimestampContinuity(leadingStream: sound)
        _ = continuity.shift(stream: sound, at: 10 * second, duration: soundFrame)
        _ = continuity.shift(stream: pictures, at: 10 * second, duration: picture)
        let guess = continuity.shift(stream: pictures, at: 100 * second, duration: picture)
        return (continuity, guess)
    }

    @Test("a jump the pictures meet first is a guess, held as provisional until the sound corrects it")
    func thePicturesGuessAndTheSoundCorrects() {
        var (continuity, guess) = Self.picturesJumpedFirst()
        // Their guess runs on from their own end.
        #expect(guess == 10 * Self.second + Self.picture - 100 * Self.second)
        #expect(continuity.isProvisional(Self.pictures))
        #expect(continuity.shift(stream: Self.pictures, at: 100 * Self.second + Self.picture, duration: Self.picture) == guess)
        // A sound packet from before the jump changes nothing.
        #expect(continuity.shift(stream: Self.sound, at: 10 * Self.second + Self.soundFrame, duration: Self.soundFrame) == 0)
        #expect(continuity.isProvisional(Self.pictures))
        // The sound's first packet after the jump, 21.3 ms before the first picture there.
        let exact = continuity.shift(stream: Self.sound, at: 100 * Self.second - Self.soundFrame, duration: Self.soundFrame)
        #expect(exact == 10 * Self.second + 2 * Self.soundFrame - (100 * Self.second - Self.soundFrame))
        #expect(!continuity.isProvisional(Self.pictures))
        #expect(continuity.shift(of: Self.pictures) == exact)
        // The pictures run on from where the correction put them.
        #expect(continuity.shift(stream: Self.pictures, at: 100 * Self.second + 2 * Self.picture, duration: Self.picture) == exact)
        #expect(continuity.epochs.count == 2)
        #expect(continuity.epochs.last?.provisional == false)
    }

    @Test("a seek while the pictures' guess is open lets the guess stand")
    func aSeekEndsTheGuess() {
        var (continuity, guess) = Self.picturesJumpedFirst()
        #expect(continuity.isProvisional(Self.pictures))
        // Into the new stretch: the sound comes without history and takes the guess.
        #expect(continuity.prepareSeek(to: 100 * Self.second + guess) == 100 * Self.second)
        #expect(continuity.shift(stream: Self.pictures, at: 100 * Self.second, duration: Self.picture) == guess)
        #expect(!continuity.isProvisional(Self.pictures))
        #expect(continuity.shift(stream: Self.sound, at: 100 * Self.second, duration: Self.soundFrame) == guess)
    }

    @Test("a picture from before the jump, handed out after the sound met it, keeps the shift of its own stretch")
    func aStragglerKeepsItsShift() {
        var continuity = TimestampContinuity(leadingStream: Self.sound)
        _ = continuity.shift(stream: Self.sound, at: 5 * Self.second, duration: Self.soundFrame)
        _ = continuity.shift(stream: Self.pictures, at: 5 * Self.second, duration: Self.picture)
        let shift = continuity.shift(stream: Self.sound, at: 0, duration: Self.soundFrame)
        #expect(shift != 0)
        // The last picture of the stretch before.
        #expect(continuity.shift(stream: Self.pictures, at: 5 * Self.second + Self.picture, duration: Self.picture) == 0)
        // Then the first after it.
        #expect(continuity.shift(stream: Self.pictures, at: 10_000_000, duration: Self.picture) == shift)
    }

    @Test("without sound, the pictures close up a jump themselves, and it is no guess")
    func picturesAloneAreExact() {
        var continuity = TimestampContinuity(leadingStream: nil)
        _ = continuity.shift(stream: Self.pictures, at: 3 * Self.second, duration: Self.picture)
        let shift = continuity.shift(stream: Self.pictures, at: 0, duration: Self.picture)
        #expect(shift == 3 * Self.second + Self.picture)
        #expect(!continuity.isProvisional(Self.pictures))
    }

    @Test("sparse streams follow the newest stretch and never open one, however long they are silent")
    func sparseStreamsFollow() {
        var continuity = TimestampContinuity(leadingStream: Self.sound)
        #expect(continuity.sparseShift == 0)
        _ = continuity.shift(stream: Self.sound, at: 7 * Self.second, duration: Self.soundFrame)
        let shift = continuity.shift(stream: Self.sound, at: 900 * Self.second, duration: Self.soundFrame)
        #expect(continuity.sparseShift == shift)
        #expect(continuity.epochs.count == 2)
    }

    @Test("a seek is moved into the input's own times by the stretch its target lies in, and each stretch's shift applies after it")
    func seeksMapThroughTheStretches() {
        var continuity = TimestampContinuity(leadingStream: Self.sound)
        // 0 to 2 s as it is, then a jump back to 0 (shift 2 s), then forward to 500 s.
        var time: Int64 = 0
        while time < 2 * Self.second {
            _ = continuity.shift(stream: Self.sound, at: time, duration: Self.soundFrame)
            time += Self.soundFrame
        }
        let end = time
        #expect(continuity.shift(stream: Self.sound, at: 0, duration: Self.soundFrame) == end)
        time = Self.soundFrame
        while time < 2 * Self.second {
            _ = continuity.shift(stream: Self.sound, at: time, duration: Self.soundFrame)
            time += Self.soundFrame
        }
        let secondEnd = time + end
        let third = continuity.shift(stream: Self.sound, at: 500 * Self.second, duration: Self.soundFrame)
        #expect(third == secondEnd - 500 * Self.second)
        #expect(continuity.epochs.map(\.shift) == [0, end, third])

        // A seek to 1 s is in the first stretch; to 3 s in the second; to 4.5 s in the third.
        #expect(continuity.prepareSeek(to: Self.second) == Self.second)
        #expect(continuity.shift(stream: Self.sound, at: Self.second, duration: Self.soundFrame) == 0)
        #expect(continuity.prepareSeek(to: 3 * Self.second) == 3 * Self.second - end)
        #expect(continuity.shift(stream: Self.pictures, at: 3 * Self.second - end, duration: Self.picture) == end)
        #expect(continuity.sparseShift == end)
        #expect(continuity.prepareSeek(to: 4_500_000_000) == 4_500_000_000 - third)
        #expect(continuity.shift(stream: Self.sound, at: 4_500_000_000 - third, duration: Self.soundFrame) == third)
        // Meeting the third stretch again from the second replaces its record, not adds one.
        _ = continuity.prepareSeek(to: 3 * Self.second)
        _ = continuity.shift(stream: Self.sound, at: 3 * Self.second - end, duration: Self.soundFrame)
        _ = continuity.shift(stream: Self.sound, at: 500 * Self.second, duration: Self.soundFrame)
        #expect(continuity.epochs.count == 3)
    }

    @Test("an opening that continues an earlier one's timeline takes, after its seek, the stretch that puts its first packet nearest the target")
    func anOpeningContinuesTheTimeline() {
        var first = TimestampContinuity(leadingStream: Self.sound)
        _ = first.shift(stream: Self.sound, at: 55 * Self.second, duration: Self.soundFrame)
        let shift = first.shift(stream: Self.sound, at: Self.second, duration: Self.soundFrame)
        #expect(shift == 54 * Self.second + Self.soundFrame)
        // A playlist's durations put the splice 21 ms before the sound does, and the target
        // lies in those 21 ms; the new opening starts at the splice's segment.
        var again = TimestampContinuity(leadingStream: Self.sound, earlier: first.epochs)
        #expect(again.epochs == first.epochs)
        _ = again.prepareSeek(to: 55 * Self.second + 10_000_000)
        #expect(again.shift(stream: Self.sound, at: Self.second, duration: Self.soundFrame) == shift)
        // Restarted from the top instead, it reads its first stretch again.
        again.restartFromTop()
        #expect(again.shift(stream: Self.sound, at: 50 * Self.second, duration: Self.soundFrame) == 0)
        // A record that does not begin with the first stretch is not taken.
        let foreign = TimestampContinuity(leadingStream: Self.sound, earlier: [.init(start: 0, shift: 5)])
        #expect(foreign.epochs == [.init(start: .min, shift: 0)])
    }

    @Test("forged times (the extremes of Int64, a jump at every packet) neither trap nor grow the record without bound")
    func forgedTimesAreSafe() {
        var continuity = TimestampContinuity(leadingStream: Self.sound)
        for time in [Int64.max, .min, 0, .max - 1, .min + 1, -1] {
            _ = continuity.shift(stream: Self.sound, at: time, duration: .max)
            _ = continuity.shift(stream: Self.pictures, at: time, duration: -5)
        }
        for index in 0..<5_000 {
            _ = continuity.shift(stream: Self.sound, at: Int64(index % 2) * 1_000 * Self.second, duration: Self.soundFrame)
        }
        #expect(continuity.epochs.count <= TimestampContinuity.maximumEpochs)
        #expect(continuity.epochs.first?.start == .min)
        _ = continuity.prepareSeek(to: .max)
        _ = continuity.prepareSeek(to: .min)
    }

    @Test("an opening at a segment takes an epoch seen before when it puts the segment's start within a second of the playlist's place, and opens one there otherwise")
    func anOpeningAtASegmentIsPlaced() {
        var continuity = TimestampContinuity(leadingStream: Self.sound)
        // Read through: 0 to 4 s, then a jump back to 1.4 s, closed up by the sound.
        _ = continuity.shift(stream: Self.sound, at: 4 * Self.second - Self.soundFrame, duration: Self.soundFrame)
        let closed = continuity.shift(stream: Self.sound, at: 1_400_000_000, duration: Self.soundFrame)
        #expect(closed == 4 * Self.second - 1_400_000_000)
        // Opened again at the segment the playlist places at 6 s (27 ms from where the sound
        // put it), whose first picture is at 3.373 s of its own time: the epoch seen keeps
        // its exact shift, whichever packet comes first.
        _ = continuity.prepareSeek(to: 6 * Self.second, placedAt: 6 * Self.second, anchor: 3_373_000_000)
        #expect(continuity.shift(stream: Self.sound, at: 3_390_000_000, duration: Self.soundFrame) == closed)
        #expect(continuity.epochs.count == 2)
        // Past a splice not read: a new epoch puts the segment's first picture at the
        // playlist's place, though a sound packet 80 ms later came first.
        _ = continuity.prepareSeek(to: 20 * Self.second, placedAt: 20 * Self.second, anchor: 70 * Self.second)
        let placed = continuity.shift(stream: Self.sound, at: 70 * Self.second + 80_000_000, duration: Self.soundFrame)
        #expect(placed == 20 * Self.second - 70 * Self.second)
        #expect(continuity.shift(stream: Self.pictures, at: 70 * Self.second, duration: Self.picture) == placed)
        #expect(continuity.epochs.last == .init(start: 20 * Self.second, shift: placed))
        // Without an anchor, the first packet is the one placed.
        _ = continuity.prepareSeek(to: 30 * Self.second, placedAt: 30 * Self.second)
        #expect(continuity.shift(stream: Self.sound, at: 200 * Self.second, duration: Self.soundFrame) == 30 * Self.second - 200 * Self.second)
    }
}
