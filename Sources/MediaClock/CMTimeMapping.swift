/// A mapping of a segment of a source timeline onto a target timeline, as in an edit
/// list (`CMTimeMapping`). An empty edit has an invalid `source.start`.
///
/// A value type; safe to share between threads.
public struct CMTimeMapping: Sendable, Hashable, Codable {
    /// The range of the source media.
    public var source: CMTimeRange
    /// Where that range plays on the target timeline; a different duration means the
    /// source plays scaled.
    public var target: CMTimeRange

    /// A mapping from `source` onto `target`.
    public init(source: CMTimeRange, target: CMTimeRange) {
        self.source = source
        self.target = target
    }

    /// The all-zero mapping, as a C struct starts: both ranges invalid.
    public init() {
        self.init(source: CMTimeRange(), target: CMTimeRange())
    }

    /// The invalid mapping (both ranges invalid).
    public static let invalid = CMTimeMapping(source: .invalid, target: .invalid)

    /// Whether the mapping is an empty edit: no source media, a valid target range.
    public var isEmpty: Bool {
        !source.start.isNumeric && target.isValid
    }

    /// Whether the mapping is usable: a valid target and a valid (or empty-edit) source.
    public var isValid: Bool {
        target.isValid && (source.isValid || isEmpty)
    }
}

/// See `CMTimeMapping.init(source:target:)`.
public func CMTimeMappingMake(source: CMTimeRange, target: CMTimeRange) -> CMTimeMapping {
    CMTimeMapping(source: source, target: target)
}

/// An empty edit occupying `target` (`CMTimeMappingMakeEmpty`).
public func CMTimeMappingMakeEmpty(target: CMTimeRange) -> CMTimeMapping {
    CMTimeMapping(source: CMTimeRange(start: .invalid, duration: target.duration), target: target)
}

/// The invalid mapping (`kCMTimeMappingInvalid`).
public let kCMTimeMappingInvalid = CMTimeMapping.invalid

/// Whether `mapping`'s target range is valid (`CMTIMEMAPPING_IS_VALID`, which, as
/// CoreMedia's macro, looks at the target alone; `CMTimeMapping.isValid` also asks for a
/// valid or empty-edit source).
public func CMTIMEMAPPING_IS_VALID(_ mapping: CMTimeMapping) -> Bool { mapping.target.isValid }

/// Whether `mapping` is an empty edit (`CMTIMEMAPPING_IS_EMPTY`): see `CMTimeMapping.isEmpty`.
public func CMTIMEMAPPING_IS_EMPTY(_ mapping: CMTimeMapping) -> Bool { mapping.isEmpty }
