import Testing
import GroupSync

@Suite("ReplayGuard")
struct ReplayGuardTests {
    @Test func acceptsOnlyIncreasingSequencesPerSender() {
        var replay = ReplayGuard()
        do { let accepted = replay.accept(sender: 1, sequence: 1); #expect(accepted) }
        do { let accepted = replay.accept(sender: 1, sequence: 5); #expect(accepted) }
        do { let accepted = replay.accept(sender: 1, sequence: 5); #expect(!accepted) }
        do { let accepted = replay.accept(sender: 1, sequence: 3); #expect(!accepted) }
        do { let accepted = replay.accept(sender: 2, sequence: 1); #expect(accepted) }
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
