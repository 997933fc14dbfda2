import Synchronization
internal import CThreadSanitizer

/// `Synchronization.Mutex`, with its hand-offs shown to ThreadSanitizer.
///
/// On Linux a `Mutex` is a priority-inheriting futex. Uncontended, it is one atomic
/// exchange inlined into the caller, which ThreadSanitizer sees; contended, the kernel hands
/// the lock from one thread to the next (`FUTEX_LOCK_PI`, `FUTEX_UNLOCK_PI`, and the spin
/// before them, in the uninstrumented standard library), which it does not. Every access
/// made under a contended lock was then reported as a race, and a real race could not be
/// told from those. These methods are `withLock` and `withLockIfAvailable` that also tell
/// ThreadSanitizer, at the mutex's address, that the lock was taken (after taking it) and
/// is being let go (before letting it go). Outside a `-sanitize=thread` build that costs a
/// test of a null pointer, twice.
///
/// Use these for every `Mutex` in Chorus, so that `make test-tsan` reports only real races.
extension Mutex where Value: ~Copyable {
    /// `withLock(_:)`, seen by ThreadSanitizer.
    @inlinable
    public borrowing func withLockAnnotated<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        try withLock { (value: inout sending Value) throws(E) -> sending Result in
            let address = withUnsafePointer(to: self) { UnsafeRawPointer($0) }
            mutexAcquired(address)
            defer { mutexReleasing(address) }
            return try body(&value)
        }
    }

    /// `withLockIfAvailable(_:)`, seen by ThreadSanitizer: nil, without waiting, when
    /// another thread holds the lock. Allocates nothing and never blocks, so a real-time
    /// thread may call it.
    @inlinable
    public borrowing func withLockIfAvailableAnnotated<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result? {
        try withLockIfAvailable { (value: inout sending Value) throws(E) -> sending Result in
            let address = withUnsafePointer(to: self) { UnsafeRawPointer($0) }
            mutexAcquired(address)
            defer { mutexReleasing(address) }
            return try body(&value)
        }
    }
}

/// Tells ThreadSanitizer the lock at `address` was taken.
@usableFromInline
func mutexAcquired(_ address: UnsafeRawPointer) {
    chorus_tsan_acquire(address)
}

/// Tells ThreadSanitizer the lock at `address` is about to be let go.
@usableFromInline
func mutexReleasing(_ address: UnsafeRawPointer) {
    chorus_tsan_release(address)
}
