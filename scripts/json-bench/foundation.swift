// Foundation alone, as ccsd parsed JSON before the front door: JSONSerialization, then the conversion to
// JSONValue (Sources/JSONReference/FoundationJSONValue.swift). Built by ./run with JSONValue's own files and
// this stand-in front door, which gives every text to Foundation.
import Foundation

enum JSONFrontDoor {
    static func parse(_ bytes: UnsafeRawBufferPointer) throws(JSONValue.ParseError) -> JSONValue {
        do {
            return FoundationJSONValue.value(try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]))
        } catch {
            throw JSONValue.ParseError(message: "not valid JSON")
        }
    }
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
