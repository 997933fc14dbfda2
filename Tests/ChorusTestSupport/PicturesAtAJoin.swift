/// What a display had on screen after one refresh.
public struct ShownPicture: Sendable {
    /// When the refresh was made visible (real CLOCK_MONOTONIC nanoseconds).
    public var host: Int64
    /// The picture's item (the engine's number) and item time; nil before the first picture.
    public var item: Int?
    public var itemNanoseconds: Int64?

    public init(host: Int64, item: Int?, itemNanoseconds: Int64?) {
        self.host = host
        self.item = item
        self.itemNanoseconds = itemNanoseconds
    }
}

/// The pictures a display showed around a gapless join, held against when the join was
/// heard: before it, only the first item's; from it on, the next item's picture due.
public enum PicturesAtAJoin {
    /// How far a refresh may be from a picture's time and show its neighbour, in
    /// nanoseconds: the timeline the pictures follow and a capture of the sound are both the
    /// render thread's reports of when each frame is heard, but read at different moments.
    public static let allowanceNanoseconds = 1_000_000.0

    /// Every refresh of `shown` that breaks the rule, described, and how many were held to
    /// it, for a join heard at `joinHost` (real nanoseconds) into an item whose pictures come
    /// every `frameNanoseconds` from item time zero, checked up to `window` nanoseconds after.
    public static func problems(_ shown: [ShownPicture], joinHost: Double, frameNanoseconds: Double,
                                window: Double = 500e6) -> (checked: Int, problems: [String]) {
        guard let firstItem = shown.lazy.compactMap(\.item).first else { return (0, ["no picture shown"]) }
        let allowance = allowanceNanoseconds
        var checked = 0
        var problems: [String] = []
        for refresh in shown {
            let sinceJoin = Double(refresh.host) - joinHost
            if sinceJoin < -allowance {
                if let item = refresh.item, item != firstItem {
                    problems.append("item \(item)'s picture at \(refresh.itemNanoseconds ?? -1) ns shown \(-sinceJoin / 1e6) ms before the join")
                }
            } else if sinceJoin > allowance && sinceJoin < window {
                checked += 1
                // The picture whose time has come, or a neighbour within the allowance.
                let due = sinceJoin / frameNanoseconds
                let expected = Int64(due.rounded(.down))
                let intoFrame = (due - due.rounded(.down)) * frameNanoseconds
                let shownFrame = refresh.itemNanoseconds.map { Int64((Double($0) / frameNanoseconds).rounded()) }
                let frameOK = shownFrame == expected || (intoFrame < allowance && shownFrame == expected - 1)
                    || (frameNanoseconds - intoFrame < allowance && shownFrame == expected + 1)
                if refresh.item == nil || refresh.item == firstItem || !frameOK {
                    problems.append("\(sinceJoin / 1e6) ms after the join: item \(refresh.item ?? -1) picture \(shownFrame ?? -1) on screen, the next item's picture \(expected) due")
                }
            }
        }
        return (checked, problems)
    }
}
