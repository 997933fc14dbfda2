import Foundation

/// A plain-text table with a title, the command that reproduces it, and notes, printed in
/// aligned columns so it reads in a terminal and in a CI log alike.
struct Table {
    /// How columns are separated: two spaces keep neighbouring numbers apart.
    static let columnGap = "  "

    var title: String
    var command: String
    var header: [String]
    var rows: [[String]] = []
    var notes: [String] = []

    init(title: String, command: String, header: [String]) {
        self.title = title
        self.command = command
        self.header = header
    }

    mutating func add(_ row: [String]) { rows.append(row) }

    /// The table as lines; text columns align left, numeric columns right.
    func render() -> String {
        let all = [header] + rows
        let count = all.map(\.count).max() ?? 0
        var widths = [Int](repeating: 0, count: count)
        for row in all { for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) } }
        let numeric = (0..<count).map { column in
            rows.allSatisfy { row in column >= row.count || Self.looksNumeric(row[column]) }
        }
        func line(_ row: [String]) -> String {
            row.enumerated().map { index, cell in
                let pad = String(repeating: " ", count: widths[index] - cell.count)
                return numeric[index] ? pad + cell : cell + pad
            }.joined(separator: Self.columnGap).replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
        }
        var out = ["== \(title) ==", "reproduce: \(command)", line(header),
                   line(widths.map { String(repeating: "-", count: $0) })]
        out += rows.map(line)
        out += notes.map { "note: \($0)" }
        return out.joined(separator: "\n") + "\n"
    }

    func print() {
        Swift.print(render())
        // nil flushes every stream; benchmarks interleave with children writing to the same log.
        fflush(nil)
    }

    private static func looksNumeric(_ cell: String) -> Bool {
        guard let first = cell.first else { return true }
        return first.isNumber || first == "-" || first == "+" || first == "."
    }
}

/// Number formatting for tables.
enum Format {
    /// `value` with `digits` decimals, or "n/a" when it is not finite.
    static func fixed(_ value: Double, _ digits: Int) -> String {
        value.isFinite ? String(format: "%.\(digits)f", value) : "n/a"
    }

    /// A ratio such as "0.93x".
    /// `fixed`, or "-" for nil.
    static func optional(_ value: Double?, _ digits: Int) -> String {
        value.map { fixed($0, digits) } ?? "-"
    }

    static func ratio(_ numerator: Double, _ denominator: Double) -> String {
        guard denominator > 0, numerator.isFinite else { return "n/a" }
        return String(format: "%.2fx", numerator / denominator)
    }
}

/// Appends one machine-readable line per headline figure to the file `bench.sh` reads to
/// print its summary: `benchmark <TAB> figure <TAB> value <TAB> aim`.
struct SummaryFile {
    let path: String?

    func record(_ benchmark: String, _ figure: String, _ value: String, aim: String = "") {
        guard let path else { return }
        let line = [benchmark, figure, value, aim].joined(separator: "\t") + "\n"
        if let handle = FileHandle(forWritingAtPath: path) {
            handle.seekToEndOfFile()
            handle.write(Data(line.utf8))
            handle.closeFile()
        } else {
            _ = FileManager.default.createFile(atPath: path, contents: Data(line.utf8))
        }
    }
}
