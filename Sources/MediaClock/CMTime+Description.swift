/// Human-readable rendering modelled on `CMTimeCopyDescription`.
extension CMTime: CustomStringConvertible, CustomDebugStringConvertible {
    /// `{value/timescale = seconds}` for numeric times, with `~` marking a rounded value
    /// and the epoch appended when non-zero; `{INVALID}`, `{INDEFINITE}`, `{+INFINITY}`
    /// and `{-INFINITY}` otherwise.
    public var description: String {
        switch kind {
        case .invalid: return "{INVALID}"
        case .indefinite: return "{INDEFINITE}"
        case .positiveInfinity: return "{+INFINITY}"
        case .negativeInfinity: return "{-INFINITY}"
        case .numeric:
            let rounded = hasBeenRounded ? "~" : ""
            let epochPart = epoch == 0 ? "" : ", epoch \(epoch)"
            return "{\(rounded)\(value)/\(timescale) = \(seconds)\(epochPart)}"
        }
    }

    /// The description plus raw flags, for diagnosing unusual field combinations.
    public var debugDescription: String {
        "CMTime(value: \(value), timescale: \(timescale), flags: 0x\(String(flags.rawValue, radix: 16)), epoch: \(epoch)) \(description)"
    }
}
