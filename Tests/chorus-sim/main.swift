import ChorusCommandLine
import ChorusSession
import ChorusSimulation
import Foundation

// `chorus-sim`: the `chorus` command line with every group node on a simulated clock, for
// tests, benchmarks and the demo that run several nodes on one machine as if on several.
// It takes `--clock-offset SECONDS` and `--clock-skew PPM` (or `--name=value`) anywhere
// among chorus's own arguments; the rest go to chorus unchanged.

/// The farthest a simulated clock may be set off (seconds), and skewed (ppm): a typo is
/// refused rather than run as a clock nothing could follow.
let largestOffset = 1e6
let largestSkew: Int64 = 10_000

var offset = 0.0
var skew: Int64 = 0
var passed: [String] = []
var arguments = ChorusCommandLine.programArguments() ?? Array(CommandLine.arguments.dropFirst())
var index = 0

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("chorus-sim: \(message)\n".utf8))
    exit(64)
}

while index < arguments.count {
    let argument = arguments[index]
    let parts = argument.split(separator: "=", maxSplits: 1).map(String.init)
    guard let name = parts.first, name == "--clock-offset" || name == "--clock-skew" else {
        passed.append(argument)
        index += 1
        continue
    }
    let value: String
    if parts.count == 2 {
        value = parts[1]
        index += 1
    } else if index + 1 < arguments.count {
        value = arguments[index + 1]
        index += 2
    } else {
        fail("\(name) needs a value")
    }
    if name == "--clock-offset" {
        guard let seconds = Double(value), seconds.isFinite, abs(seconds) < largestOffset else { fail("--clock-offset must be a number of seconds") }
        offset = seconds
    } else {
        guard let ppm = Int64(value), ppm.magnitude <= largestSkew else { fail("--clock-skew must be within ±\(largestSkew) ppm") }
        skew = ppm
    }
}

let simulated = offset != 0 || skew != 0
let pivotOffset = Duration.nanoseconds(Int64((offset * 1e9).rounded())), pivotSkew = skew
ChorusCommandLine.main(arguments: passed) {
    simulated ? NodeClock.simulated(offset: pivotOffset, skewPPM: pivotSkew) : NodeClock()
}
