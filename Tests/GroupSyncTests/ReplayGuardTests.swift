import Testing
import ChorusTestSupport
import GroupSync

@Suite("ReplayGuard", .ownThread)
struct ReplayGuardTests {
    @Test func acceptsEachSequenceOnceInAnyOrderWithinTheWindow() {
        var replay = ReplayGuard()
        do { let accepted = replay.accept(sender: 1, sequence: 1); #expect(accepted) }
        do { let accepted = replay.accept(sender: 1, sequence: 5); #expect(accepted) }
        // A duplicate of the highest, and of the first: refused.
        do { let accepted = replay.accept(sender: 1, sequence: 5); #expect(!accepted) }
        do { let accepted = replay.accept(sender: 1, sequence: 1); #expect(!accepted) }
        // Overtaken in the network: accepted once, then refused as a replay.
        do { let accepted = replay.accept(sender: 1, sequence: 3); #expect(accepted) }
        do { let accepted = replay.accept(sender: 1, sequence: 3); #expect(!accepted) }
        do { let accepted = replay.accept(sender: 1, sequence: 4); #expect(accepted) }
        // Another sender has a window of its own.
        do { let accepted = replay.accept(sender: 2, sequence: 1); #expect(accepted) }
        do { let accepted = replay.accept(sender: 2, sequence: 3); #expect(accepted) }
    }

    @Test func remembersAcrossWordsAndRefusesWhatFallsOutOfTheWindow() {
        var replay = ReplayGuard()
        let window = UInt64(ReplayGuard.windowSize)
        // Every other sequence from 2000 to 2200, so the seen bits straddle several words
        // as the window moves.
        for sequence in stride(from: UInt64(2000), through: 2200, by: 2) {
            let accepted = replay.accept(sender: 7, sequence: sequence)
            #expect(accepted)
        }
        for sequence in stride(from: UInt64(2000), through: 2200, by: 2) {
            let again = replay.accept(sender: 7, sequence: sequence)
            #expect(!again, "sequence \(sequence) replayed")
        }
        for sequence in stride(from: UInt64(2001), through: 2199, by: 2) {
            let late = replay.accept(sender: 7, sequence: sequence)
            #expect(late, "sequence \(sequence) arrived late but once")
        }
        // Jump ahead by 70 (more than a word): the old marks move with the window.
        do { let accepted = replay.accept(sender: 7, sequence: 2270); #expect(accepted) }
        do { let accepted = replay.accept(sender: 7, sequence: 2199); #expect(!accepted) }
        do { let accepted = replay.accept(sender: 7, sequence: 2269); #expect(accepted) }
        // Older than the window: refused even though never seen.
        do { let accepted = replay.accept(sender: 7, sequence: 2270 - window); #expect(!accepted) }
        do { let accepted = replay.accept(sender: 7, sequence: 2271 - window); #expect(accepted) }
        // A jump past the whole window forgets every mark, and the old ones are too old.
        do { let accepted = replay.accept(sender: 7, sequence: 2270 + 2 * window); #expect(accepted) }
        do { let accepted = replay.accept(sender: 7, sequence: 2270); #expect(!accepted) }
        do { let accepted = replay.accept(sender: 7, sequence: 2269 + 2 * window); #expect(accepted) }
    }

    @Test func isBoundedAndEvictsTheLeastRecentlyHeard() {
        var replay = ReplayGuard(capacity: 3)
        do { let accepted = replay.accept(sender: 1, sequence: 10); #expect(accepted) }
        do { let accepted = replay.accept(sender: 2, sequence: 10); #expect(accepted) }
        do { let accepted = replay.accept(sender: 3, sequence: 10); #expect(accepted) }
        do { let accepted = replay.accept(sender: 1, sequence: 11); #expect(accepted) } // 1 is now the most recent
        do { let accepted = replay.accept(sender: 4, sequence: 1); #expect(accepted) }  // evicts 2
        #expect(replay.count == 3)
        do { let accepted = replay.accept(sender: 1, sequence: 11); #expect(!accepted) }
        do { let accepted = replay.accept(sender: 3, sequence: 10); #expect(!accepted) }
        do { let accepted = replay.accept(sender: 2, sequence: 1); #expect(accepted) }  // forgotten, so accepted afresh
    }
}
