import Logging

/// Where the playback library's warnings go: a misuse of the API that Apple's classes
/// would also ignore (a reverse rate, a host-time start while the player still waits to
/// minimize stalling). The application chooses the handler and the level through
/// `LoggingSystem.bootstrap`; the real-time threads never log.
let playerLog = Logger(label: "chorus.avplayback")
