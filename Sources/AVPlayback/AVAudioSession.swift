import Foundation
import MutexAnnotations
import Synchronization

/// The application's audio session, as iOS code sets it up before it plays
/// (`try AVAudioSession.sharedInstance().setCategory(.playback)`), so that such code ports
/// unchanged.
///
/// Linux has no audio session: every process may play on the devices its user can open,
/// and nothing interrupts one player for another (a sound server mixes them). The category,
/// mode, options and activation are kept and read back as set, and change nothing of how
/// Chorus plays; the interruption and route-change notifications are never posted.
public final class AVAudioSession: Sendable {
    /// What the application's sound is for.
    public struct Category: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let ambient = Category(rawValue: "AVAudioSessionCategoryAmbient")
        public static let soloAmbient = Category(rawValue: "AVAudioSessionCategorySoloAmbient")
        public static let playback = Category(rawValue: "AVAudioSessionCategoryPlayback")
        public static let record = Category(rawValue: "AVAudioSessionCategoryRecord")
        public static let playAndRecord = Category(rawValue: "AVAudioSessionCategoryPlayAndRecord")
        public static let multiRoute = Category(rawValue: "AVAudioSessionCategoryMultiRoute")
    }

    /// What kind of sound, within a category.
    public struct Mode: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let `default` = Mode(rawValue: "AVAudioSessionModeDefault")
        public static let moviePlayback = Mode(rawValue: "AVAudioSessionModeMoviePlayback")
        public static let spokenAudio = Mode(rawValue: "AVAudioSessionModeSpokenAudio")
        public static let videoChat = Mode(rawValue: "AVAudioSessionModeVideoChat")
        public static let voiceChat = Mode(rawValue: "AVAudioSessionModeVoiceChat")
        public static let measurement = Mode(rawValue: "AVAudioSessionModeMeasurement")
    }

    /// How the session's sound mixes with others'.
    public struct CategoryOptions: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        public static let mixWithOthers = CategoryOptions(rawValue: 0x1)
        public static let duckOthers = CategoryOptions(rawValue: 0x2)
        public static let allowBluetooth = CategoryOptions(rawValue: 0x4)
        public static let defaultToSpeaker = CategoryOptions(rawValue: 0x8)
        public static let interruptSpokenAudioAndMixWithOthers = CategoryOptions(rawValue: 0x11)
        public static let allowBluetoothA2DP = CategoryOptions(rawValue: 0x20)
        public static let allowAirPlay = CategoryOptions(rawValue: 0x40)
    }

    /// What a deactivation tells other sessions.
    public struct SetActiveOptions: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        public static let notifyOthersOnDeactivation = SetActiveOptions(rawValue: 1)
    }

    /// Posted when another application's sound interrupts the session: never on Linux.
    public static let interruptionNotification = Notification.Name("AVAudioSessionInterruptionNotification")
    /// Posted when the sound's route changes (headphones in or out): never on Linux.
    public static let routeChangeNotification = Notification.Name("AVAudioSessionRouteChangeNotification")

    /// What an interruption notification says happened (`AVAudioSessionInterruptionTypeKey`).
    public enum InterruptionType: UInt, Sendable {
        case ended = 0
        case began = 1
    }

    /// What an interruption's end allows (`AVAudioSessionInterruptionOptionKey`).
    public struct InterruptionOptions: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        public static let shouldResume = InterruptionOptions(rawValue: 1)
    }

    /// Why the route changed (`AVAudioSessionRouteChangeReasonKey`).
    public enum RouteChangeReason: UInt, Sendable {
        case unknown = 0
        case newDeviceAvailable = 1
        case oldDeviceUnavailable = 2
        case categoryChange = 3
        case override = 4
        case wakeFromSleep = 6
        case noSuitableRouteForCategory = 7
        case routeConfigurationChange = 8
    }

    /// How the session's route is shared with other applications' (kept, with no effect).
    public enum RouteSharingPolicy: UInt, Sendable {
        case `default` = 0
        case longFormAudio = 1
        case independent = 2
        case longFormVideo = 3
    }

    private struct Settings {
        var category = Category.soloAmbient
        var mode = Mode.default
        var options: CategoryOptions = []
        var policy = RouteSharingPolicy.default
        var isActive = false
    }
    private let settings = Mutex(Settings())

    private static let shared = AVAudioSession()

    private init() {}

    /// The process's session.
    public static func sharedInstance() -> AVAudioSession { shared }

    /// The category last set (`.soloAmbient` until one is).
    public var category: Category { settings.withLockAnnotated { $0.category } }
    /// The mode last set.
    public var mode: Mode { settings.withLockAnnotated { $0.mode } }
    /// The options last set.
    public var categoryOptions: CategoryOptions { settings.withLockAnnotated { $0.options } }
    /// Whether the session was last made active.
    public var isActive: Bool { settings.withLockAnnotated { $0.isActive } }
    /// Whether another application is playing: unknown to a Linux process, so false.
    public var isOtherAudioPlaying: Bool { false }

    /// Sets the category; never throws here.
    public func setCategory(_ category: Category) throws {
        settings.withLockAnnotated { $0.category = category }
    }

    /// Sets the category, mode and options; never throws here.
    public func setCategory(_ category: Category, mode: Mode, options: CategoryOptions = []) throws {
        settings.withLockAnnotated { settings in
            settings.category = category
            settings.mode = mode
            settings.options = options
        }
    }

    /// Sets the category, mode, route sharing policy and options; never throws here.
    public func setCategory(_ category: Category, mode: Mode, policy: RouteSharingPolicy, options: CategoryOptions = []) throws {
        settings.withLockAnnotated { settings in
            settings.category = category
            settings.mode = mode
            settings.policy = policy
            settings.options = options
        }
    }

    /// The route sharing policy last set (`.default` until one is).
    public var routeSharingPolicy: RouteSharingPolicy { settings.withLockAnnotated { $0.policy } }

    /// Sets the category and options; never throws here.
    public func setCategory(_ category: Category, options: CategoryOptions) throws {
        settings.withLockAnnotated { settings in
            settings.category = category
            settings.options = options
        }
    }

    /// Sets the mode; never throws here.
    public func setMode(_ mode: Mode) throws {
        settings.withLockAnnotated { $0.mode = mode }
    }

    /// Makes the session active or not; never throws here.
    public func setActive(_ active: Bool, options: SetActiveOptions = []) throws {
        settings.withLockAnnotated { $0.isActive = active }
    }
}

/// The `userInfo` key of an interruption notification's `AVAudioSession.InterruptionType`.
public let AVAudioSessionInterruptionTypeKey = "AVAudioSessionInterruptionTypeKey"
/// The `userInfo` key of an interruption notification's `AVAudioSession.InterruptionOptions`.
public let AVAudioSessionInterruptionOptionKey = "AVAudioSessionInterruptionOptionKey"
/// The `userInfo` key of a route change notification's `AVAudioSession.RouteChangeReason`.
public let AVAudioSessionRouteChangeReasonKey = "AVAudioSessionRouteChangeReasonKey"
/// The `userInfo` key of the route before a route change.
public let AVAudioSessionRouteChangePreviousRouteKey = "AVAudioSessionRouteChangePreviousRouteKey"
