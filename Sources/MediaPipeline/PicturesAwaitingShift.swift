internal import CFFmpeg

/// Pictures that met a jump before the sound did, held back with the shift (ns) they were
/// given until the sound sets their epoch's (`TimestampContinuity.isProvisional`): what the
/// demuxer and the relay both do, each with its own way of passing a picture on.
struct PicturesAwaitingShift {
    /// The most pictures held back: the sound of the same moment comes within a few packets
    /// in any interleaved input, and a stream whose sound never jumps with its pictures must
    /// not starve the pictures (16 are two thirds of a second at 25 a second).
    static let most = 16

    private var held: [(packet: OwnedPacket, shift: Int64)] = []

    var isEmpty: Bool { held.isEmpty }

    /// The stream of the pictures held, if any are.
    var stream: Int32? { held.first?.packet.pointer.pointee.stream_index }

    /// Takes `packet` (of `stream`, given `shift`) when its stream's shift is a guess and
    /// there is room: true when it was taken. With no room the guess stands
    /// (`TimestampContinuity.acceptGuess`), and the picture goes on.
    mutating func hold(_ packet: UnsafeMutablePointer<AVPacket>, stream: Int32, shift: Int64,
                       continuity: inout TimestampContinuity) -> Bool {
        guard continuity.isProvisional(stream) else { return false }
        if held.count < Self.most, let owned = OwnedPacket(movingFrom: packet) {
            held.append((owned, shift))
            return true
        }
        continuity.acceptGuess()
        return false
    }

    /// The pictures held, in order, each with the shift it was given, once `stream`'s shift
    /// is no longer a guess; none while it still is.
    mutating func release(stream: Int32, continuity: TimestampContinuity) -> [(packet: OwnedPacket, shift: Int64)] {
        guard !held.isEmpty, !continuity.isProvisional(stream) else { return [] }
        defer { held.removeAll() }
        return held
    }

    /// Drops what is held (a seek).
    mutating func removeAll() { held.removeAll() }
}
