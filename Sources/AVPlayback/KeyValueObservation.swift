import Foundation
import MutexAnnotations
import Synchronization

/// Which values a key-value observation delivers, as in Apple's Foundation.
///
/// Linux has no Objective-C runtime and so no key-value observing; Chorus objects offer the
/// same Swift surface (`observe(_:options:changeHandler:)` returning an
/// `NSKeyValueObservation`) over their own change registry, so code written against Apple's
/// players compiles unchanged.
public struct NSKeyValueObservingOptions: OptionSet, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// Deliver the new value.
    public static let new = NSKeyValueObservingOptions(rawValue: 1 << 0)
    /// Deliver the old value.
    public static let old = NSKeyValueObservingOptions(rawValue: 1 << 1)
    /// Call the handler once at once, with the current value, before any change.
    public static let initial = NSKeyValueObservingOptions(rawValue: 1 << 2)
    /// Also call the handler before each change (with `isPrior` set).
    public static let prior = NSKeyValueObservingOptions(rawValue: 1 << 3)
}

/// One change of an observed property.
public struct NSKeyValueObservedChange<Value> {
    /// The kind of change; Chorus properties only ever change by setting.
    public enum Kind: UInt, Sendable { case setting = 1, insertion, removal, replacement }
    public let kind: Kind
    /// The value after the change, when `.new` was asked for.
    public let newValue: Value?
    /// The value before the change, when `.old` was asked for.
    public let oldValue: Value?
    /// Whether this call comes before the change (only with `.prior`).
    public let isPrior: Bool
}

/// A live observation. Observation stops when it is invalidated or released.
public final class NSKeyValueObservation: Sendable {
    /// Removes the handler from its registry; nil once done.
    private let cancel: Mutex<(@Sendable () -> Void)?>

    init(cancel: @escaping @Sendable () -> Void) { self.cancel = Mutex(cancel) }

    /// Stops the observation: no call of its handler is decided after this returns. It does
    /// not wait for a call already under way, which may be waiting on the caller.
    public func invalidate() {
        let action = cancel.withLockAnnotated { current -> (@Sendable () -> Void)? in
            defer { current = nil }
            return current
        }
        action?()
    }

    deinit { invalidate() }
}

/// Observations compare and hash by identity, as Apple's (objects) do, so that a program
/// can keep them in a set.
extension NSKeyValueObservation: Hashable {
    public static func == (lhs: NSKeyValueObservation, rhs: NSKeyValueObservation) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// The change registry behind `observe(_:options:changeHandler:)`.
///
/// Each observation keeps the value it last delivered. A change the object announces for a
/// key path (`notify`, `changed`, or a setter's `set`) is delivered at once, on the thread that
/// made it, to that key path's observers alone, as Apple's key-value observing delivers a
/// set. Every other observed key path is re-read soon after on the registry's own queue
/// (`rereadQueue`: a player's event queue), and so is everything at every `poke` (the
/// player's monitor pokes its registry and its item's every tick): those whose value moved
/// are delivered there. So a chained key path (`\.currentItem?.status`), a property that is
/// derived rather than set (`loadedTimeRanges`, the buffering flags), and a key path written
/// on a subclass (`\AVQueuePlayer.rate`) all notify, and setting a property never runs the
/// handlers of others on the setter's thread.
///
/// A setter stores its value inside `set(_:_:)`, and the re-read leaves that key path to it
/// while it runs, and any value it read before the setter delivered: so the setter's thread
/// delivers the change before the setter returns, and a re-read never hands on a value the
/// setter has already replaced (which the next re-read would then undo).
///
/// No lock is held while a handler runs, so a handler may wait on another thread (a
/// `DispatchQueue.main.sync`) while that thread sets a property or invalidates an
/// observation. Which change a handler is given is decided under the registry's lock, so
/// every change is delivered once, in order for each observation's thread.
// @unchecked: `entries`, `nextID`, `rereadPending`, `announcements`, `setting` and each
// entry's `last`, `announced` and `removed` are read and written only under `lock`. They are not in a Mutex because an entry's reading and
// comparing closures, and the values it keeps, are not Sendable (they hold the observed
// values as `Any`), and must be called after the lock is released.
public final class ObservationRegistry: @unchecked Sendable {
    private final class Entry {
        let keyPath: AnyKeyPath
        /// The observed value now; nil once the object is gone.
        let read: () -> Any?
        let equal: (Any, Any) -> Bool
        let handler: (_ old: Any, _ new: Any, _ prior: Bool) -> Void
        /// What was last delivered (or read when the observation began).
        var last: Any?
        /// Set by `remove`: no delivery is decided for the entry after it.
        var removed = false
        /// The count of `announcements` when a change of this key path was last decided on
        /// its setter's (or announcer's) thread: a re-read begun before then may have read
        /// the value that change replaced, and leaves the entry alone.
        var announced = 0

        init(keyPath: AnyKeyPath, read: @escaping () -> Any?, equal: @escaping (Any, Any) -> Bool,
             handler: @escaping (Any, Any, Bool) -> Void) {
            self.keyPath = keyPath
            self.read = read
            self.equal = equal
            self.handler = handler
        }
    }
    private let lock = NSLock()
    private var entries: [Int: Entry] = [:]
    private var nextID = 0
    private var rereadPending = false
    private var queue: DispatchQueue
    /// How many changes have been decided on the thread that made them (`set`, `changed`,
    /// `notify`): a clock for telling a re-read what it may have read stale.
    private var announcements = 0
    /// Key paths whose setter is storing its value now (`set`), each with how many setters
    /// are: the re-read leaves them to their setters.
    private var setting: [AnyKeyPath: Int] = [:]

    /// A registry whose re-reading after a change runs on `rereadQueue` (its own serial queue
    /// when nil).
    public init(rereadQueue: DispatchQueue? = nil) {
        queue = rereadQueue ?? DispatchQueue(label: "chorus.observation")
    }

    /// Where the other key paths are re-read after a change (a player's event queue, so that
    /// what its monitor notices and what a change moves arrive on one thread).
    var rereadQueue: DispatchQueue {
        get { lock.withLock { queue } }
        set { lock.withLock { queue = newValue } }
    }

    func add(_ keyPath: AnyKeyPath, read: @escaping () -> Any?, equal: @escaping (Any, Any) -> Bool,
             handler: @escaping (_ old: Any, _ new: Any, _ prior: Bool) -> Void) -> Int {
        let entry = Entry(keyPath: keyPath, read: read, equal: equal, handler: handler)
        // Read outside the registry's lock: reading takes the object's own.
        let first = read()
        return lock.withLock {
            entry.last = first
            nextID += 1
            entries[nextID] = entry
            return nextID
        }
    }

    /// Ends an observation: no delivery to it is decided after this returns. It does not wait
    /// for a handler already running (which may be waiting on the caller).
    func remove(_ id: Int) {
        lock.withLock {
            entries[id]?.removed = true
            entries.removeValue(forKey: id)
        }
    }

    /// Tells observers of `keyPath` that it changed from `old` to `new` (on this thread), and
    /// has the rest re-read.
    func notify(_ keyPath: AnyKeyPath, old: Any, new: Any) {
        deliver(only: keyPath, announced: new)
        scheduleReread()
    }

    /// Tells observers of `keyPath`, which has just changed, its new value (read again, on
    /// this thread), and has the rest re-read. For a change noticed rather than made here;
    /// a setter uses `set`.
    func changed(_ keyPath: AnyKeyPath) {
        deliver(only: keyPath, announced: nil)
        scheduleReread()
    }

    /// Runs a setter's `store`, which sets the property at `keyPath`, then tells that key
    /// path's observers its new value on this thread, before returning, as Apple's key-value
    /// observing delivers a set; then has the rest re-read. A re-read running meanwhile on
    /// the registry's queue leaves `keyPath` to this thread.
    @discardableResult
    func set<Result>(_ keyPath: AnyKeyPath, _ store: () -> Result) -> Result {
        willSet(keyPath)
        let result = store()
        deliver(only: keyPath, announced: nil)
        endSetting(keyPath)
        return result
    }

    /// The caller is about to change the property at `keyPath` (under its own lock, say),
    /// and will tell its observers with `didSet(_:old:new:)`: until then a re-read leaves
    /// that key path to it. Every call must be followed by one `didSet`.
    func willSet(_ keyPath: AnyKeyPath) {
        lock.withLock { setting[keyPath, default: 0] += 1 }
    }

    /// Tells the observers of `keyPath`, announced by `willSet`, its value now (read again,
    /// on this thread: another change may have come since), and has the rest re-read.
    func didSet(_ keyPath: AnyKeyPath) {
        deliver(only: keyPath, announced: nil)
        endSetting(keyPath)
    }

    private func endSetting(_ keyPath: AnyKeyPath) {
        lock.withLock {
            let left = (setting[keyPath] ?? 1) - 1
            setting[keyPath] = left > 0 ? left : nil
        }
        scheduleReread()
    }

    /// Re-reads every observed key path and delivers those whose value moved, on this thread.
    public func poke() {
        lock.withLock { rereadPending = false }
        deliver(only: nil, announced: nil)
    }

    /// Re-reads everything on the registry's queue, once however many changes ask meanwhile.
    private func scheduleReread() {
        let queue: DispatchQueue? = lock.withLock {
            guard !rereadPending, !entries.isEmpty else { return nil }
            rereadPending = true
            return self.queue
        }
        queue?.async { [weak self] in self?.poke() }
    }

    private func deliver(only keyPath: AnyKeyPath?, announced: Any?) {
        let (current, begun) = lock.withLock { (entries.sorted { $0.key < $1.key }.map(\.value), announcements) }
        for entry in current {
            if let keyPath, entry.keyPath != keyPath { continue }
            let value: Any
            if let announced {
                value = announced
            } else {
                // Read outside the lock: reading takes the object's own.
                guard let read = entry.read() else { continue }
                value = read
            }
            let old: Any? = lock.withLock {
                if keyPath != nil {
                    announcements += 1
                    entry.announced = announcements
                } else if setting[entry.keyPath] != nil || entry.announced > begun {
                    // A setter delivers this key path itself, or has since this re-read began.
                    return nil
                }
                guard !entry.removed, let last = entry.last else {
                    if !entry.removed { entry.last = value }
                    return nil
                }
                if entry.equal(last, value) { return nil }
                entry.last = value
                return last
            }
            guard let old else { continue }
            entry.handler(old, value, true)
            entry.handler(old, value, false)
        }
    }

    var isEmpty: Bool { lock.withLock { entries.isEmpty } }
}

/// Whether two observed values are the same: by `==` where the type has it, by identity for
/// objects, element by element for arrays and optionals, and otherwise by their
/// descriptions (so a value that cannot be compared is not reported as changing at every look).
func observedValuesEqual(_ a: Any, _ b: Any) -> Bool {
    if let a = a as? any Equatable { return a.isEqual(toAny: b) }
    let left = Mirror(reflecting: a), right = Mirror(reflecting: b)
    if left.displayStyle == .optional, right.displayStyle == .optional {
        switch (left.children.first, right.children.first) {
        case (nil, nil): return true
        case let (x?, y?): return observedValuesEqual(x.value, y.value)
        default: return false
        }
    }
    if type(of: a) is AnyObject.Type, type(of: b) is AnyObject.Type {
        return (a as AnyObject) === (b as AnyObject)
    }
    if left.displayStyle == .collection, right.displayStyle == .collection {
        let x = Array(left.children), y = Array(right.children)
        return x.count == y.count && zip(x, y).allSatisfy { observedValuesEqual($0.value, $1.value) }
    }
    return String(reflecting: a) == String(reflecting: b)
}

extension Equatable {
    fileprivate func isEqual(toAny other: Any) -> Bool {
        guard let other = other as? Self else { return false }
        return self == other
    }
}

/// An object whose properties can be observed the way Apple's key-value observing allows.
public protocol AVKeyValueObservable: AnyObject {
    /// The registry the object reports its changes to.
    var observationRegistry: ObservationRegistry { get }
}

extension AVKeyValueObservable {
    /// Observes `keyPath`, as Apple's `NSObject.observe(_:options:changeHandler:)` does: any
    /// key path of the object, chained and optional ones included. The handler is `@Sendable`,
    /// as Apple's is: it runs on whichever thread makes or notices the change.
    ///
    /// With `.initial` the handler is called once before this returns; with `.prior`, it is
    /// also called just before each change is delivered, with `isPrior` set and the old value.
    /// Later calls come on the thread that sets the property, or, for a change noticed rather
    /// than set (a chained key path, a derived property), on the object's queue (a player's
    /// event queue, within a monitor tick of 10 ms).
    @preconcurrency
    public func observe<Value>(
        _ keyPath: KeyPath<Self, Value>,
        options: NSKeyValueObservingOptions = [],
        changeHandler: @escaping @Sendable (Self, NSKeyValueObservedChange<Value>) -> Void
    ) -> NSKeyValueObservation {
        let registry = observationRegistry
        let id = registry.add(keyPath, read: { [weak self] in ObservationRead.withoutWaiting { self.map { $0[keyPath: keyPath] as Any } } },
                              equal: observedValuesEqual) { [weak self] old, new, prior in
            guard let self, let oldValue = old as? Value, let newValue = new as? Value else { return }
            if prior {
                guard options.contains(.prior) else { return }
                changeHandler(self, NSKeyValueObservedChange(
                    kind: .setting, newValue: nil, oldValue: options.contains(.old) ? oldValue : nil, isPrior: true))
                return
            }
            changeHandler(self, NSKeyValueObservedChange(
                kind: .setting,
                newValue: options.contains(.new) ? newValue : nil,
                oldValue: options.contains(.old) ? oldValue : nil,
                isPrior: false))
        }
        if options.contains(.initial) {
            let current = ObservationRead.withoutWaiting { self[keyPath: keyPath] }
            changeHandler(self, NSKeyValueObservedChange(
                kind: .setting, newValue: options.contains(.new) ? current : nil, oldValue: nil, isPrior: false))
        }
        return NSKeyValueObservation { [weak registry] in registry?.remove(id) }
    }

    /// The values of `keyPath` as an async sequence: the current value first, then each
    /// new value. The observation lasts until the consumer stops (its task is cancelled, or
    /// it drops the stream); the stream does not end by itself.
    public func values<Value: Sendable>(of keyPath: KeyPath<Self, Value>) -> AsyncStream<Value> {
        AsyncStream { continuation in
            let observation = observe(keyPath, options: [.initial, .new]) { _, change in
                if let value = change.newValue { continuation.yield(value) }
            }
            let box = ObservationBox(observation)
            continuation.onTermination = { _ in box.observation.invalidate() }
        }
    }
}

extension AVKeyValueObservable {
    /// The changes of `keyPath` as an async sequence, each as an `observe(_:options:)`
    /// handler would be given it: with `.initial`, the current value first; with `.prior`, a
    /// change before each change (`isPrior`, its `oldValue` when `.old` is asked for); with
    /// `.new` and `.old`, the values after and before. The observation lasts until the
    /// consumer stops (its task is cancelled, or it drops the stream); the stream does not
    /// end by itself.
    public func changes<Value: Sendable>(of keyPath: KeyPath<Self, Value>,
                                         options: NSKeyValueObservingOptions = [.new]) -> AsyncStream<NSKeyValueObservedChange<Value>> {
        AsyncStream { continuation in
            let observation = observe(keyPath, options: options) { _, change in continuation.yield(change) }
            let box = ObservationBox(observation)
            continuation.onTermination = { _ in box.observation.invalidate() }
        }
    }
}

extension NSKeyValueObservedChange: Sendable where Value: Sendable {}

/// Keeps an observation alive for as long as an async stream needs it.
private final class ObservationBox: Sendable {
    let observation: NSKeyValueObservation
    init(_ observation: NSKeyValueObservation) { self.observation = observation }
}

/// Whether the current thread reads a property for an observation. An asset's older
/// synchronous accessors (`duration`, `tracks`, `isPlayable`) load the asset and wait when
/// called directly, as Apple's do; read for an observation they give what is loaded so far
/// instead, so that observing never blocks (a player's event queue reads chained key paths
/// every tick), and the loaded values arrive as changes.
enum ObservationRead {
    @TaskLocal static var isObserving = false

    /// Runs `read` as an observation's read.
    static func withoutWaiting<Value>(_ read: () -> Value) -> Value {
        $isObserving.withValue(true) { read() }
    }
}
