import Foundation
import MutexAnnotations
import Synchronization

/// The terminal as `chorus play` uses it: raw key input and a status line on stderr.
final class Terminal: Sendable {
    enum Key { case space, left, right, quit, slower, faster, normalSpeed, backwards, next, previous, cycleAudio, cycleSubtitles }

    /// The settings raw mode replaced, while it is on. A session restores them from
    /// whichever thread ends it (a key, a signal, the end of the list), so the change of
    /// mode and its record are made together under this lock.
    private let saved = Mutex<termios?>(nil)

    /// Puts standard input in raw mode and calls `onKey` for each key on a reader thread.
    func enterRawMode(onKey: @escaping @Sendable (Key) -> Void) {
        var original = termios()
        guard tcgetattr(STDIN_FILENO, &original) == 0 else { return }
        var settings = original
        settings.c_lflag &= ~tcflag_t(ICANON | ECHO)
        withUnsafeMutableBytes(of: &settings.c_cc) { bytes in
            bytes[Int(VMIN)] = 1
            bytes[Int(VTIME)] = 0
        }
        let entered = saved.withLockAnnotated { saved -> Bool in
            guard saved == nil, tcsetattr(STDIN_FILENO, TCSANOW, &settings) == 0 else { return false }
            saved = original
            return true
        }
        guard entered else { return }
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
                case UInt8(ascii: "r"): onKey(.backwards)
                case UInt8(ascii: "n"), UInt8(ascii: ">"): onKey(.next)
                case UInt8(ascii: "p"), UInt8(ascii: "<"): onKey(.previous)
                // As mpv's keys: # the next sound track, j the next subtitles.
                case UInt8(ascii: "a"), UInt8(ascii: "#"): onKey(.cycleAudio)
                case UInt8(ascii: "s"), UInt8(ascii: "j"): onKey(.cycleSubtitles)
                default: break
                }
            }
        }
        thread.name = "chorus.keys"
        thread.start()
    }

    /// Restores the terminal's settings.
    func restore() {
        saved.withLockAnnotated { saved in
            guard var settings = saved else { return }
            tcsetattr(STDIN_FILENO, TCSANOW, &settings)
            saved = nil
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
