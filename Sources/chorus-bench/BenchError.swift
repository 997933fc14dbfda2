/// A benchmark that could not run, with the reason to print as is.
struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
