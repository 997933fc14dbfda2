import Foundation
import MediaPipeline

/// An error in `AVFoundationErrorDomain`, as Apple's players hand them over: an item's or a
/// player's `error`, a failed load, the failed-to-play notification. An app reads it as it
/// does on Apple's platforms: `error as? AVError` and its `code`, `catch
/// AVError.fileFormatNotRecognized`, or `error as NSError` with its domain and code. The
/// library's own typed error (`AVPlaybackError`, naming the input and the reason) is under
/// `NSUnderlyingErrorKey`, and its description is the error's `localizedDescription`.
///
/// Errors about reaching the media rather than reading it come, as Apple's do, as `URLError`s
/// (a missing file: `.fileDoesNotExist`; an unreachable server; an unsupported URL) and a
/// cancelled load as `CocoaError(.userCancelled)`; see `AVPlaybackError.avFoundationError`.
// @unchecked: `errorUserInfo` holds only immutable values (strings and Sendable errors), set
// at creation.
public struct AVError: CustomNSError, Hashable, CustomStringConvertible, @unchecked Sendable {
    /// Apple's codes (`AVError.h`), those a player can meet.
    public enum Code: Int, Sendable, Hashable {
        case unknown = -11800
        case outOfMemory = -11801
        case mediaDiscontinuity = -11812
        case mediaServicesWereReset = -11819
        case exportFailed = -11820
        case decodeFailed = -11821
        case invalidSourceMedia = -11822
        case fileAlreadyExists = -11823
        case fileFormatNotRecognized = -11828
        case fileFailedToParse = -11829
        case contentIsProtected = -11831
        case noImageAtTime = -11832
        case decoderNotFound = -11833
        case encoderNotFound = -11834
        case contentIsNotAuthorized = -11835
        case applicationIsNotAuthorized = -11836
        case operationNotSupportedForAsset = -11838
        case decoderTemporarilyUnavailable = -11839
        case operationInterrupted = -11847
        case incompatibleAsset = -11848
        case failedToLoadMediaData = -11849
        case serverIncorrectlyConfigured = -11850
        case failedToParse = -11853
        case undecodableMediaData = -11855
        case operationNotAllowed = -11862
        case contentIsUnavailable = -11863
        case formatUnsupported = -11864
        case contentNotUpdated = -11866
        case noLongerPlayable = -11867
        case noCompatibleAlternatesForExternalDisplay = -11868
        case noSourceTrack = -11869
        case externalPlaybackNotSupportedForAsset = -11870
        case operationCancelled = -11878
    }

    public static var errorDomain: String { AVFoundationErrorDomain }

    /// What went wrong, by Apple's codes.
    public let code: Code
    public let errorUserInfo: [String: Any]

    /// An error with `code`, and `userInfo` as an `NSError` would carry it
    /// (`NSLocalizedDescriptionKey`, `NSUnderlyingErrorKey`).
    public init(_ code: Code, userInfo: [String: Any] = [:]) {
        self.code = code
        errorUserInfo = userInfo
    }

    public var errorCode: Int { code.rawValue }

    /// The error's user info, as Apple's bridged error gives it (`errorUserInfo`).
    public var userInfo: [String: Any] { errorUserInfo }

    /// The error's description: the underlying error's, which names the input and the reason.
    public var localizedDescription: String {
        errorUserInfo[NSLocalizedDescriptionKey] as? String ?? "The operation could not be completed (\(Self.errorDomain) \(code.rawValue))"
    }

    public var description: String { localizedDescription }

    public static func == (lhs: AVError, rhs: AVError) -> Bool {
        lhs.code == rhs.code && lhs.localizedDescription == rhs.localizedDescription
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(localizedDescription)
    }

    // Each code as a member of the error type, so that `catch AVError.fileFormatNotRecognized`
    // reads as on Apple's platforms.
    public static var unknown: Code { .unknown }
    public static var outOfMemory: Code { .outOfMemory }
    public static var mediaServicesWereReset: Code { .mediaServicesWereReset }
    public static var decodeFailed: Code { .decodeFailed }
    public static var invalidSourceMedia: Code { .invalidSourceMedia }
    public static var fileFormatNotRecognized: Code { .fileFormatNotRecognized }
    public static var fileFailedToParse: Code { .fileFailedToParse }
    public static var contentIsProtected: Code { .contentIsProtected }
    public static var decoderNotFound: Code { .decoderNotFound }
    public static var contentIsNotAuthorized: Code { .contentIsNotAuthorized }
    public static var operationNotSupportedForAsset: Code { .operationNotSupportedForAsset }
    public static var incompatibleAsset: Code { .incompatibleAsset }
    public static var failedToLoadMediaData: Code { .failedToLoadMediaData }
    public static var serverIncorrectlyConfigured: Code { .serverIncorrectlyConfigured }
    public static var failedToParse: Code { .failedToParse }
    public static var undecodableMediaData: Code { .undecodableMediaData }
    public static var operationNotAllowed: Code { .operationNotAllowed }
    public static var contentIsUnavailable: Code { .contentIsUnavailable }
    public static var formatUnsupported: Code { .formatUnsupported }
    public static var noLongerPlayable: Code { .noLongerPlayable }
    public static var noSourceTrack: Code { .noSourceTrack }
    public static var operationCancelled: Code { .operationCancelled }
}

/// Matches an error against an `AVError` code, for `catch AVError.fileFormatNotRecognized`
/// and `case AVError.noLongerPlayable` in a switch over an error.
public func ~= (code: AVError.Code, error: any Error) -> Bool {
    (error as? AVError)?.code == code
}

extension MediaPipeline.MediaError {
    /// The error as Apple's players would give it (see `AVError`): an `AVError`, a `URLError`
    /// or a `CocoaError`, whose `localizedDescription` is this error's description and whose
    /// `NSUnderlyingErrorKey` holds this error.
    public var avFoundationError: any Error {
        let info: [String: Any] = [NSLocalizedDescriptionKey: description, NSUnderlyingErrorKey: self]
        switch self {
        case .fileNotFound:
            return URLError(.fileDoesNotExist, userInfo: info)
        case .badURL:
            return URLError(.unsupportedURL, userInfo: info)
        case .networkFailure(_, let reason):
            return URLError(Self.urlErrorCode(forNetworkFailure: reason), userInfo: info)
        case .cancelled:
            return CocoaError(.userCancelled, userInfo: info)
        case .emptyFile, .corruptData:
            return AVError(.fileFailedToParse, userInfo: info)
        case .unsupportedFormat, .noPlayableTrack:
            return AVError(.fileFormatNotRecognized, userInfo: info)
        case .protectedContent:
            return AVError(.contentIsProtected, userInfo: info)
        case .outputFailure:
            return AVError(.unknown, userInfo: info)
        }
    }

    /// The `URLError` code for a network failure, by FFmpeg's reason.
    static func urlErrorCode(forNetworkFailure reason: String) -> URLError.Code {
        if reason.contains(MediaSource.untrustedCertificate) { return .serverCertificateUntrusted }
        let reason = reason.lowercased()
        if reason.contains("refused") { return .cannotConnectToHost }
        if reason.contains("timed out") || reason.contains("timeout") { return .timedOut }
        if reason.contains("404") || reason.contains("not found") { return .fileDoesNotExist }
        if reason.contains("resolve") || reason.contains("name or service") { return .cannotFindHost }
        return .networkConnectionLost
    }

    /// The error as an `NSError` (`avFoundationError` bridged), as Apple's notifications and
    /// key loading hand errors over. (Foundation on Linux does not bridge a Swift error to
    /// an `NSError` through `as?`, so an app's `as? NSError` needs one made.)
    public var nsError: NSError {
        avFoundationError as NSError
    }
}
