import Foundation

/// Loads the group's shared HMAC key from a file.
///
/// Format: if the file, with surrounding whitespace removed, is an even number of hex
/// digits (either case), the key is the bytes they spell; otherwise the key is the file's
/// raw bytes. Either way it must be at least `minimumKeyBytes` long. Generate one with
/// `head -c 32 /dev/urandom | xxd -p -c 64 > group.key`.
public enum KeyFile {
    /// Shortest accepted key: 128 bits, the least that HMAC-SHA256 should be keyed with.
    public static let minimumKeyBytes = 16
    /// Largest key file read: a hex key of 1024 bytes and some whitespace. A longer file is
    /// not a key (a device such as /dev/zero would be read forever).
    public static let maximumFileBytes = 4096

    /// Reads and parses the key file at `path`.
    public static func load(path: String) throws(KeyFileError) -> GroupKey {
        // Only a regular file: a FIFO or a device would block or never end.
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else {
            throw .unreadable(path: path, reason: "no such file, or it cannot be read")
        }
        guard attributes[.type] as? FileAttributeType == .typeRegular else {
            throw .unreadable(path: path, reason: "not a regular file")
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw .unreadable(path: path, reason: "it cannot be opened for reading")
        }
        defer { try? handle.close() }
        let contents: Data
        do {
            contents = try handle.read(upToCount: maximumFileBytes + 1) ?? Data()
        } catch {
            throw .unreadable(path: path, reason: "\(error.localizedDescription)")
        }
        guard contents.count <= maximumFileBytes else {
            throw .unreadable(path: path, reason: "longer than \(maximumFileBytes) bytes: not a key")
        }
        return try parse(Array(contents), path: path)
    }

    /// Parses key file contents (hex or raw, see the type's documentation); `path` is only
    /// used in errors.
    public static func parse(_ contents: [UInt8], path: String = "<key>") throws(KeyFileError) -> GroupKey {
        let keyBytes = hexDecoded(trimmed(contents)) ?? contents
        guard keyBytes.count >= minimumKeyBytes else {
            throw .tooShort(path: path, byteCount: keyBytes.count)
        }
        return GroupKey(bytes: keyBytes)
    }

    private static func trimmed(_ bytes: [UInt8]) -> ArraySlice<UInt8> {
        let whitespace: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D]
        var slice = bytes[...]
        while let first = slice.first, whitespace.contains(first) { slice = slice.dropFirst() }
        while let last = slice.last, whitespace.contains(last) { slice = slice.dropLast() }
        return slice
    }

    private static func hexDecoded(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        guard !text.isEmpty, text.count.isMultiple(of: 2) else { return nil }
        var result: [UInt8] = []
        result.reserveCapacity(text.count / 2)
        var high: UInt8?
        for character in text {
            guard let nibble = hexValue(character) else { return nil }
            if let pending = high {
                result.append(pending << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return result
    }

    private static func hexValue(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
