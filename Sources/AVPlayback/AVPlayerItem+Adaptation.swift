import Foundation
import MediaPipeline
import MutexAnnotations
import Synchronization

/// What an item keeps to move between an HLS master playlist's variants by itself, behind
/// its `variantAdaptation` lock (a leaf: nothing else is locked while it is held).
struct VariantAdaptation {
    var estimate = ThroughputEstimate()
    /// Made once the item's variants and the one it plays are known; nil before, and after
    /// a change of `preferredPeakBitRate` or `preferredMaximumResolution`, which makes it
    /// again among the variants they allow.
    var choice: AdaptiveVariantChoice?
    /// The item's stalls already taken into account.
    var stallsSeen = 0
    /// When the choice last looked (s on the host clock).
    var lastLook: Double?
    /// Counts the changes of the item's limits (`forgetVariantAdaptation`): a look that
    /// worked out its variants under limits changed since does not make its choice.
    var generation = 0
}

extension AVPlayerItem {
    /// How often a playing item looks at its network to choose its variant (s): often
    /// enough that a fall is met within a segment, seldom enough to cost nothing.
    static let variantAdaptationInterval = 0.5

    /// The most bits per second the item's own choice among its variants allows, nil when
    /// it has none (not an HLS master playlist of several variants, or not yet played).
    /// Like Apple's players, an item moves between variants by what its network brings,
    /// within `preferredPeakBitRate` and `preferredMaximumResolution`.
    var adaptedVariantCap: Int? {
        variantAdaptation.withLockAnnotated { $0.choice?.chosenBandwidth }
    }

    /// Starts the item's own choice again, among the variants the new limits allow.
    func forgetVariantAdaptation() {
        variantAdaptation.withLockAnnotated { adaptation in
            adaptation.choice = nil
            adaptation.lastLook = nil
            adaptation.generation += 1
        }
    }

    /// From the player's monitor while the item is current, `now` in seconds on the host
    /// clock: takes in what the network brought and the stalls since the last look, every
    /// `variantAdaptationInterval`, and returns true when that moves the item to another
    /// variant (the player then reads it, as after a change of `preferredPeakBitRate`).
    func adaptVariant(now: Double) -> Bool {
        guard isNetworkItem, let info = loadedInfo, info.variants.count > 1 else { return false }
        let generation = variantAdaptation.withLockAnnotated { adaptation -> Int? in
            if let last = adaptation.lastLook, now - last < Self.variantAdaptationInterval { return nil }
            adaptation.lastLook = now
            return adaptation.generation
        }
        guard let generation else { return false }
        let stalls = networkLog.withLockAnnotated { $0.stalls }
        let (bytes, transfer) = networkActivity.measured
        let requested = requestedVariantLimit
        // The variants the item's limits allow (the lowest when they allow none).
        let allowed = info.variants.filter { requested.admits($0, tracks: info.tracks) }
        let ladder = (allowed.isEmpty ? [info.variants.min { $0.bandwidth < $1.bandwidth }].compactMap { $0 } : allowed).map(\.bandwidth)
        let playing = Int(indicatedBitrate)
        return variantAdaptation.withLockAnnotated { adaptation -> Bool in
            guard adaptation.generation == generation else { return false }
            // One sample a look: what the reads of the last half second brought together.
            adaptation.estimate.update(totalBytes: bytes, transferNanoseconds: transfer)
            let stalled = stalls > adaptation.stallsSeen
            adaptation.stallsSeen = stalls
            guard var choice = adaptation.choice ?? AdaptiveVariantChoice(bandwidths: ladder, playing: playing) else { return false }
            let changed = choice.update(estimate: adaptation.estimate.bitsPerSecond, stalled: stalled, now: now)
            adaptation.choice = choice
            return changed
        }
    }
}
