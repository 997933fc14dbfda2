/// CoreMedia's status code type: 0 (`noErr`) for success, negative for errors.
public typealias OSStatus = Int32

/// Error thrown by `CMTimebase`'s throwing API, carrying CoreMedia's status code so the
/// C-style wrappers can return it unchanged.
public struct CMTimebaseError: Error, Sendable, Hashable {
    /// The CoreMedia status code.
    public let status: OSStatus

    /// Wraps a CoreMedia status code.
    public init(status: OSStatus) {
        self.status = status
    }

    /// A required argument was missing (`kCMTimebaseError_MissingRequiredParameter`).
    public static let missingRequiredParameter = CMTimebaseError(status: kCMTimebaseError_MissingRequiredParameter)
    /// An argument was out of range, e.g. a non-numeric time or non-finite rate
    /// (`kCMTimebaseError_InvalidParameter`).
    public static let invalidParameter = CMTimebaseError(status: kCMTimebaseError_InvalidParameter)
}

/// Success.
public let noErr: OSStatus = 0
/// CoreMedia's code for a missing required argument.
public let kCMTimebaseError_MissingRequiredParameter: OSStatus = -12748
/// CoreMedia's code for an invalid argument.
public let kCMTimebaseError_InvalidParameter: OSStatus = -12749
