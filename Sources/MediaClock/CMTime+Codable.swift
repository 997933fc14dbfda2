/// Codable as its four raw fields, so encoded times round-trip bit for bit.
extension CMTime: Codable {
    private enum CodingKeys: String, CodingKey {
        case value, timescale, flags, epoch
    }

    /// Decodes the raw fields; a numeric time with a non-positive timescale is rejected
    /// as corrupt rather than decoded into a time that every operation treats as invalid.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let decoded = CMTime(
            value: try container.decode(CMTimeValue.self, forKey: .value),
            timescale: try container.decode(CMTimeScale.self, forKey: .timescale),
            flags: CMTimeFlags(rawValue: try container.decode(UInt32.self, forKey: .flags)),
            epoch: try container.decode(CMTimeEpoch.self, forKey: .epoch))
        let claimsNumeric = decoded.flags.contains(.valid) && decoded.flags.isDisjoint(with: .impliedValueFlagsMask)
        if claimsNumeric && decoded.timescale <= 0 {
            throw DecodingError.dataCorruptedError(
                forKey: .timescale, in: container, debugDescription: "numeric CMTime needs a positive timescale")
        }
        self = decoded
    }

    /// Encodes the raw fields.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(value, forKey: .value)
        try container.encode(timescale, forKey: .timescale)
        try container.encode(flags.rawValue, forKey: .flags)
        try container.encode(epoch, forKey: .epoch)
    }
}
