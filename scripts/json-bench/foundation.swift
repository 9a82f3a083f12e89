// Foundation alone, as ccsd parsed JSON before the front door: JSONSerialization, then JSONValue(foundation:).
// Built by ./run with Sources/CCS/JSON/JSONValue.swift and a stand-in front door that declines every text.
import Foundation

enum JSONFrontDoor {
    static let foundationOnly = true
    static func parseWithLibrary(_ bytes: UnsafeRawBufferPointer) -> JSONValue? { nil }
}

@main enum FoundationBench {
    static func main() {
        let arguments = CommandLine.arguments
        let lines = try! String(contentsOfFile: arguments[1], encoding: .utf8).split(separator: "\n").map { Data($0.utf8) }
        var sink = 0
        for _ in 0..<Int(arguments[2])! {
            for line in lines { if case .object(let object) = try! JSONValue.parse(line) { sink &+= object.count } }
        }
        print(sink)
    }
}
