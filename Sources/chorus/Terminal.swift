import Foundation

/// The terminal as `chorus play` uses it: raw key input and a status line on stderr.
final class Terminal: @unchecked Sendable {
    enum Key { case space, left, right, quit, slower, faster, normalSpeed, next, previous }

    private var saved = termios()
    private var raw = false
    private let lock = NSLock()

    /// Puts standard input in raw mode and calls `onKey` for each key on a reader thread.
    func enterRawMode(onKey: @escaping @Sendable (Key) -> Void) {
        guard tcgetattr(STDIN_FILENO, &saved) == 0 else { return }
        var settings = saved
        settings.c_lflag &= ~tcflag_t(ICANON | ECHO)
        withUnsafeMutableBytes(of: &settings.c_cc) { bytes in
            bytes[Int(VMIN)] = 1
            bytes[Int(VTIME)] = 0
        }
        guard tcsetattr(STDIN_FILENO, TCSANOW, &settings) == 0 else { return }
        raw = true
        let thread = Thread {
            var escape: [UInt8] = []
            var byte: UInt8 = 0
            while read(STDIN_FILENO, &byte, 1) == 1 {
                if !escape.isEmpty || byte == 0x1b {
                    escape.append(byte)
                    if escape.count == 3 {
                        if escape == [0x1b, 0x5b, 0x44] { onKey(.left) }
                        if escape == [0x1b, 0x5b, 0x43] { onKey(.right) }
                        escape = []
                    }
                    continue
                }
                switch byte {
                case 0x20: onKey(.space)
                case UInt8(ascii: "q"), UInt8(ascii: "Q"): onKey(.quit)
                case UInt8(ascii: "["): onKey(.slower)
                case UInt8(ascii: "]"): onKey(.faster)
                // Backspace, as the terminal sends it (DEL) or as ^H.
                case 0x7f, 0x08: onKey(.normalSpeed)
                case UInt8(ascii: "n"), UInt8(ascii: ">"): onKey(.next)
                case UInt8(ascii: "p"), UInt8(ascii: "<"): onKey(.previous)
                default: break
                }
            }
        }
        thread.name = "chorus.keys"
        thread.start()
    }

    /// Restores the terminal's settings.
    func restore() {
        lock.withLock {
            guard raw else { return }
            var settings = saved
            tcsetattr(STDIN_FILENO, TCSANOW, &settings)
            raw = false
        }
    }

    /// Replaces the status line.
    func draw(_ line: String) {
        FileHandle.standardError.write(Data("\r\u{1b}[K\(line)".utf8))
    }

    /// Erases the status line.
    func clearLine() {
        FileHandle.standardError.write(Data("\r\u{1b}[K".utf8))
    }
}
