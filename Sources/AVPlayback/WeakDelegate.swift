/// An app's delegate, held weakly by an object that tells it things on the queue the app gave
/// with it (a video or legible output).
///
/// Apple's delegate protocols are not `Sendable`: an app's delegate keeps state of its own,
/// which it touches on the queue it chose. The delegate is only ever called there, so the app
/// answers for what it touches, as on Apple's platforms.
// @unchecked: the box is read and written under its owner's lock, and the delegate it holds
// is called only on the app's queue (see above).
struct WeakDelegate<Delegate>: @unchecked Sendable {
    private weak var object: AnyObject?

    init() {}

    init(_ delegate: Delegate?) {
        object = delegate.map { $0 as AnyObject }
    }

    /// The delegate, while the app keeps it.
    var value: Delegate? { object as? Delegate }
}
