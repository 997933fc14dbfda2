/// Reads big-endian fields from untrusted bytes; every read is bounds-checked and throws
/// a `DecodeError` instead of trapping.
struct ByteReader {
    private let bytes: [UInt8]
    private(set) var offset: Int
    let end: Int

    init(_ bytes: [UInt8], from start: Int = 0, to end: Int? = nil) {
        self.bytes = bytes
        offset = start
        self.end = min(end ?? bytes.count, bytes.count)
    }

    var remaining: Int { max(0, end - offset) }

    mutating func read<T: FixedWidthInteger>(_: T.Type, field: String) throws(DecodeError) -> T {
        let size = MemoryLayout<T>.size
        guard remaining >= size else { throw .truncated(field: field) }
        var value: T = 0
        for index in offset..<(offset + size) {
            value = (value << 8) | T(truncatingIfNeeded: bytes[index])
        }
        offset += size
        return value
    }

    mutating func readBytes(_ count: Int, field: String) throws(DecodeError) -> [UInt8] {
        guard count >= 0, remaining >= count else { throw .lengthPastEnd(field: field) }
        let slice = Array(bytes[offset..<(offset + count)])
        offset += count
        return slice
    }

    mutating func readString(lengthBytes: Int, field: String) throws(DecodeError) -> String {
        let length = lengthBytes == 1
            ? Int(try read(UInt8.self, field: field))
            : Int(try read(UInt16.self, field: field))
        let raw = try readBytes(length, field: field)
        guard let string = String(validating: raw, as: UTF8.self) else { throw .invalidUTF8(field: field) }
        return string
    }
}
