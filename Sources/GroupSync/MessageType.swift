/// The message type byte of the header.
public enum MessageType: UInt8, Sendable, CaseIterable {
    /// Follower to leader: join and keepalive.
    case hello = 1
    /// Leader to follower: answer to Hello.
    case welcome = 2
    /// Follower to leader: clock probe.
    case clockRequest = 3
    /// Leader to follower: clock probe answer.
    case clockReply = 4
    /// Leader to followers: playback state and anchor.
    case state = 5
    /// Either way: leaving.
    case goodbye = 6
}
