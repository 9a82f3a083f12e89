// Also compiled alone into scripts/json-bench's Foundation measurement, with JSONValue's own files.
#if canImport(CCS)
import CCS
#endif
import Foundation

/// Foundation's JSON objects as ccsd read them into `JSONValue`s before the JSON front door.
public enum FoundationJSONValue {
    /// Converts a Foundation JSON object (from `JSONSerialization`) to a `JSONValue`.
    public static func value(_ value: Any) -> JSONValue {
        if let string = value as? String { return .string(string) }
        if let dictionary = value as? [String: Any] { return .object(dictionary.mapValues { Self.value($0) }) }
        if let array = value as? [Any] { return .array(array.map { Self.value($0) }) }
        guard let number = value as? NSNumber else { return .null }
        // On Linux, booleans arrive as NSNumber with objCType "c"; integers as "i"/"l"/"q".
        let type = number.objCType.pointee
        if type == 0x63 || type == 0x42 { return .bool(number.boolValue) }  // "c", "B"
        if type == 0x64 || type == 0x66 {  // "d", "f"
            guard let decimal = number as? NSDecimalNumber else { return .double(number.doubleValue) }
            // More digits than a Double holds (Foundation reports "d"): keep the exact decimal text.
            let text = decimal.description
            if let integer = Int64(text) { return .int(integer) }
            return JSONValue.isNumberText(text) ? .number(text) : .double(decimal.doubleValue)
        }
        if type == 0x51 || type == 0x4C || type == 0x49 || type == 0x53 || type == 0x43 {
            // Unsigned ("Q", "L", "I", "S", "C"): above Int64.max it would wrap to a negative Int64.
            let value = number.uint64Value
            return value <= UInt64(Int64.max) ? .int(Int64(value)) : .number(String(value))
        }
        return .int(number.int64Value)
    }
}
