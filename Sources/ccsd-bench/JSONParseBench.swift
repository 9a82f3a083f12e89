import CCS
import Foundation
import JSONReference
import XMLStream

/// `ccsd-bench json-parse intake|inbound FILE COUNT [--foundation-only]`: parses every line of FILE COUNT
/// times, as intake lines (`DownstreamIntake.parse`) or as the `gcm` text of inbound stanzas
/// (`InboundMessage.parse`), through the JSON front door or through Foundation alone, and exits. For
/// instruction counts under `valgrind --tool=callgrind` (run with COUNT 0 and COUNT n; the difference over
/// n × lines is the cost per parse; see docs/performance.md). Prints a checksum so nothing is optimized away.
enum JSONParseBench {
    static func run(_ arguments: [String]) -> Never {
        guard arguments.count >= 3, let count = Int(arguments[2]),
              let text = try? String(contentsOfFile: arguments[1], encoding: .utf8) else {
            FileHandle.standardError.write(Data("usage: ccsd-bench json-parse intake|inbound FILE COUNT [--foundation-only]\n".utf8))
            exit(2)
        }
        let lines = text.split(separator: "\n").map(String.init)
        let foundationOnly = arguments.dropFirst(3).contains("--foundation-only")
        let parse = { arguments[0] == "intake" ? intake(lines, count) : inbound(lines, count) }
        let checksum = foundationOnly ? FoundationJSON.withReference(parse) : parse()
        print(checksum)
        exit(0)
    }

    static func intake(_ lines: [String], _ count: Int) -> Int {
        let data = lines.map { Data($0.utf8) }
        let now = Date()
        var checksum = 0
        for _ in 0..<count {
            for line in data {
                if case .success = DownstreamIntake.parse(line: line, now: now) { checksum &+= 1 }
            }
        }
        return checksum
    }

    static func inbound(_ lines: [String], _ count: Int) -> Int {
        let stanzas = lines.map {
            XMLElement(name: "message", namespace: XMLNamespace.client, attributes: [],
                       children: [XMLElement(name: "gcm", namespace: XMLNamespace.gcm, text: $0)])
        }
        var checksum = 0
        for _ in 0..<count {
            for stanza in stanzas {
                if (try? InboundMessage.parse(stanza: stanza)) != nil { checksum &+= 1 }
            }
        }
        return checksum
    }
}
