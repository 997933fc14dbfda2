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

    /// Stops the observation; no handler call begins after this returns.
    public func invalidate() {
        let action = cancel.withLockAnnotated { current -> (@Sendable () -> Void)? in
            defer { current = nil }
            return current
        }
        action?()
    }

    deinit { invalidate() }
}

/// The change registry behind `observe(_:options:changeHandler:)`.
///
/// Handlers run synchronously on the thread that made the change; for players and items
/// that is the player's event queue. A handler may read the object but must not block.
// @unchecked: `entries` and `nextID` are read and written only under `lock`. They are not in
// a Mutex because the handlers are plain closures (Apple's observe(_:options:changeHandler:)
// takes one that need not be Sendable), which cannot be handed out of a Mutex to be called
// after it is released; `delivery` orders their calls against removal instead.
public final class ObservationRegistry: @unchecked Sendable {
    private struct Entry {
        let keyPath: AnyKeyPath
        let handler: (_ old: Any, _ new: Any, _ prior: Bool) -> Void
    }
    private let lock = NSLock()
    private var entries: [Int: Entry] = [:]
    private var nextID = 0
    /// Guards handler calls against a concurrent `invalidate`: removal takes this lock too.
    private let delivery = NSRecursiveLock()

    public init() {}

    func add(_ keyPath: AnyKeyPath, handler: @escaping (_ old: Any, _ new: Any, _ prior: Bool) -> Void) -> Int {
        lock.withLock {
            nextID += 1
            entries[nextID] = Entry(keyPath: keyPath, handler: handler)
            return nextID
        }
    }

    func remove(_ id: Int) {
        delivery.withLock {
            _ = lock.withLock { entries.removeValue(forKey: id) }
        }
    }

    /// Tells observers of `keyPath` that it changed from `old` to `new`.
    func notify(_ keyPath: AnyKeyPath, old: Any, new: Any) {
        delivery.withLock {
            let matching = lock.withLock { entries.sorted { $0.key < $1.key }.filter { $0.value.keyPath == keyPath } }
            for (id, entry) in matching where lock.withLock({ entries[id] != nil }) {
                entry.handler(old, new, false)
            }
        }
    }

    var isEmpty: Bool { lock.withLock { entries.isEmpty } }
}

/// An object whose properties can be observed the way Apple's key-value observing allows.
public protocol AVKeyValueObservable: AnyObject {
    /// The registry the object reports its changes to.
    var observationRegistry: ObservationRegistry { get }
}

extension AVKeyValueObservable {
    /// Observes `keyPath`, as Apple's `NSObject.observe(_:options:changeHandler:)` does.
    ///
    /// With `.initial` the handler is called once before this returns. Later calls come on
    /// the thread that changes the property (a player's event queue).
    public func observe<Value>(
        _ keyPath: KeyPath<Self, Value>,
        options: NSKeyValueObservingOptions = [],
        changeHandler: @escaping (Self, NSKeyValueObservedChange<Value>) -> Void
    ) -> NSKeyValueObservation {
        let registry = observationRegistry
        let id = registry.add(keyPath) { [weak self] old, new, prior in
            guard let self, let oldValue = old as? Value, let newValue = new as? Value else { return }
            changeHandler(self, NSKeyValueObservedChange(
                kind: .setting,
                newValue: options.contains(.new) ? newValue : nil,
                oldValue: options.contains(.old) ? oldValue : nil,
                isPrior: prior))
        }
        if options.contains(.initial) {
            let current = self[keyPath: keyPath]
            changeHandler(self, NSKeyValueObservedChange(
                kind: .setting, newValue: options.contains(.new) ? current : nil, oldValue: nil, isPrior: false))
        }
        return NSKeyValueObservation { [weak registry] in registry?.remove(id) }
    }

    /// The values of `keyPath` as an async sequence: the current value first, then each
    /// new value. The stream ends when the object is released or the consumer stops.
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

/// Keeps an observation alive for as long as an async stream needs it.
private final class ObservationBox: Sendable {
    let observation: NSKeyValueObservation
    init(_ observation: NSKeyValueObservation) { self.observation = observation }
}
