/// `CMTimeCompare` ordering, exposed as `Comparable`/`Hashable`.
extension CMTime: Comparable, Hashable {
    /// -1, 0 or 1 as `lhs` is less than, equal to or greater than `rhs` (`CMTimeCompare`).
    ///
    /// Order: `-infinity < numeric < indefinite < +infinity < invalid`; all invalid times
    /// are equal. Numeric times compare by epoch first (later epochs are greater), then by
    /// exact rational value using 128-bit cross multiplication, never `Double`.
    public static func compare(_ lhs: CMTime, _ rhs: CMTime) -> Int32 {
        let left = lhs.kind
        let right = rhs.kind
        if left != right { return left < right ? -1 : 1 }
        guard left == .numeric else { return 0 }
        if lhs.epoch != rhs.epoch { return lhs.epoch < rhs.epoch ? -1 : 1 }
        let leftCross = Int128(lhs.value) * Int128(rhs.timescale)
        let rightCross = Int128(rhs.value) * Int128(lhs.timescale)
        if leftCross == rightCross { return 0 }
        return leftCross < rightCross ? -1 : 1
    }

    /// Equal per `CMTimeCompare` (so 1/2 == 2/4; `hasBeenRounded` is ignored).
    public static func == (lhs: CMTime, rhs: CMTime) -> Bool {
        compare(lhs, rhs) == 0
    }

    /// Ordered per `CMTimeCompare`.
    public static func < (lhs: CMTime, rhs: CMTime) -> Bool {
        compare(lhs, rhs) < 0
    }

    /// Hashes the reduced fraction so that times equal across timescales hash alike.
    public func hash(into hasher: inout Hasher) {
        let kind = self.kind
        hasher.combine(kind.rawValue)
        guard kind == .numeric else { return }
        let divisor = ExactArithmetic.gcd(value.magnitude, UInt64(timescale))
        hasher.combine(value / Int64(divisor))
        hasher.combine(Int64(timescale) / Int64(divisor))
        hasher.combine(epoch)
    }
}
