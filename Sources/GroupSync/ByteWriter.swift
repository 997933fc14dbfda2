/// Appends big-endian fields to a byte buffer (the wire's byte order).
struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 128) {
        bytes.reserveCapacity(capacity)
    }

    mutating func write<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func write(_ raw: [UInt8]) {
        bytes.append(contentsOf: raw)
    }

    /// A UTF-8 string with a one-byte length prefix; the caller checks the length.
    mutating func writeShortString(_ utf8: [UInt8]) {
        write(UInt8(truncatingIfNeeded: utf8.count))
        write(utf8)
    }

    /// A UTF-8 string with a two-byte length prefix; the caller checks the length.
    mutating func writeLongString(_ utf8: [UInt8]) {
        write(UInt16(truncatingIfNeeded: utf8.count))
        write(utf8)
    }
}
