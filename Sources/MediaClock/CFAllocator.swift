#if !canImport(Darwin)
/// Core Foundation's memory allocator, which the `allocator:` argument of CoreMedia's
/// functions names. Linux's Foundation does not export Core Foundation, and Chorus's
/// functions take the argument only for source compatibility and ignore it, so this type
/// has no instances: its one value is `kCFAllocatorDefault`, nil, as the C constant is NULL.
public final class CFAllocator: Sendable {
    private init() {}
}

/// The default allocator (Core Foundation's `kCFAllocatorDefault`, which is NULL): what
/// code from Apple's platforms passes as the `allocator:` of `CMTimebaseCreateWithSourceClock`,
/// `CMTimeCopyAsDictionary` and the like.
public let kCFAllocatorDefault: CFAllocator? = nil
#endif
