import Foundation
import Testing
import ChorusTestSupport
import GroupSync

@Suite("KeyFile", .ownThread)
struct KeyFileTests {
    @Test func hexWithWhitespaceAndRawBytesAreAccepted() throws {
        let hex = Array("  00112233445566778899AABBCCDDEEff\n".utf8)
        let key = try KeyFile.parse(hex)
        #expect(key.bytes == [0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF])
        let raw: [UInt8] = (0..<20).map { UInt8($0 * 13) }
        #expect(try KeyFile.parse(raw).bytes == raw)
    }

    @Test func shortKeysAreRejectedClearly() {
        #expect(throws: KeyFileError.tooShort(path: "k", byteCount: 15)) { try KeyFile.parse(Array("00112233445566778899aabbccddee".utf8), path: "k") }
        #expect(throws: KeyFileError.tooShort(path: "k", byteCount: 5)) { try KeyFile.parse(Array("short".utf8), path: "k") }
        #expect(throws: KeyFileError.tooShort(path: "k", byteCount: 0)) { try KeyFile.parse([], path: "k") }
        #expect(KeyFileError.tooShort(path: "k", byteCount: 5).description.contains("at least 16"))
    }

    /// A device or an oversized file is not read as a key: /dev/zero would be read forever.
    @Test func aDeviceOrAHugeFileIsNotAKey() throws {
        #expect {
            try KeyFile.load(path: "/dev/zero")
        } throws: { error in
            guard case .unreadable(_, let reason) = error as? KeyFileError else { return false }
            return reason.contains("not a regular file")
        }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("chorus-key-\(UInt64.random(in: 0...UInt64.max))").path
        try Data(repeating: 0x41, count: KeyFile.maximumFileBytes + 1).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect {
            try KeyFile.load(path: path)
        } throws: { error in
            guard case .unreadable(_, let reason) = error as? KeyFileError else { return false }
            return reason.contains("not a key")
        }
    }

    @Test func loadsFromDiskAndReportsMissingFiles() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("chorus-key-\(UInt64.random(in: 0...UInt64.max))").path
        try Data("000102030405060708090a0b0c0d0e0f".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try KeyFile.load(path: path).bitCount == 128)
        #expect {
            try KeyFile.load(path: path + ".missing")
        } throws: { error in
            guard case .unreadable = error as? KeyFileError else { return false }
            return true
        }
    }
}
