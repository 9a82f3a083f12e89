extension JSONValue {
    /// The value of a JSON number text (RFC 8259 §6) as ccsd keeps it, never another value:
    /// - an integer (no fraction, no exponent) that Int64 holds is `.int` (`-0` is 0);
    /// - any other integer is `.number`, its text as written (`18446744073709551617`);
    /// - any other number is `.double` when the Double nearest to it is exactly the value written, as the
    ///   Double's shortest text tells (`1.0`, `0.1`, `1E2`, `2.50e1`, `-0.0`), else `.number` as written
    ///   (`3.14159265358979323846`, `1e-400`, `4.9e-324`): a Double would change its digits.
    ///
    /// nil when `text` is not a JSON number, or is beyond a 64-bit float (`1e400`, `-2e308`).
    public init?(numberText text: String) {
        guard JSONValue.isNumberText(text) else { return nil }
        if !text.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }) {
            self = Int64(text).map(JSONValue.int) ?? .number(text)
            return
        }
        guard let double = Double(text), double.isFinite else { return nil }
        self = DecimalDigits(text) == DecimalDigits(double.description) ? .double(double) : .number(text)
    }

    /// The integer a JSON number text (RFC 8259 §6) denotes exactly, when it is one that Int64 holds; nil for a
    /// fraction, an integer out of range, or a text that is not a JSON number. Decimal arithmetic on the
    /// digits (no Double), so `1e-400` is not 0 and `9223372036854775808` does not wrap.
    public static func exactInteger(ofNumberText text: String) -> Int64? {
        guard isNumberText(text), let decimal = DecimalDigits(text) else { return nil }
        guard !decimal.digits.isEmpty else { return 0 }
        guard decimal.exponent >= 0, decimal.digits.count + decimal.exponent <= 19 else { return nil }
        var magnitude: UInt64 = 0
        for digit in decimal.digits + [UInt8](repeating: 0, count: decimal.exponent) {
            let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(digit))
            guard !overflow1, !overflow2 else { return nil }
            magnitude = sum
        }
        if decimal.negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { return nil }
            return magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)
        }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }
}

/// A decimal number's value as sign, significant digits and exponent, so that two texts of one value compare
/// equal: `-0.0250e2` and `-2.5` are both (negative, [2, 5], -1), meaning -25 × 10^-1. Reads JSON numbers and
/// Swift's shortest texts of a Double (`1e-05`, `1e+16`, `100.0`).
struct DecimalDigits: Equatable {
    var negative: Bool
    /// The significant digits (0–9), no leading or trailing zeros; empty for zero.
    var digits: [UInt8]
    /// The power of ten the digits are multiplied by (0 for zero); capped at ±1,000,000, beyond any Double.
    var exponent: Int

    /// nil when `text` is not `-? digits (. digits)? ([eE] [+-]? digits)?`.
    init?(_ text: String) {
        let bytes = Array(text.utf8)
        var index = 0
        negative = bytes.first == UInt8(ascii: "-")
        if negative { index += 1 }
        var digits: [UInt8] = []
        var exponent = 0
        var fraction = false
        var sawDigit = false
        while index < bytes.count, bytes[index] != UInt8(ascii: "e"), bytes[index] != UInt8(ascii: "E") {
            let byte = bytes[index]
            if byte == UInt8(ascii: "."), !fraction {
                fraction = true
            } else if byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                digits.append(byte - UInt8(ascii: "0"))
                sawDigit = true
                if fraction { exponent -= 1 }
            } else {
                return nil
            }
            index += 1
        }
        guard sawDigit else { return nil }
        if index < bytes.count {  // the exponent, capped: no Double needs more than a few hundred
            index += 1
            var sign = 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") {
                if bytes[index] == UInt8(ascii: "-") { sign = -1 }
                index += 1
            }
            guard index < bytes.count else { return nil }
            var value = 0
            while index < bytes.count {
                guard bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") else { return nil }
                value = min(value * 10 + Int(bytes[index] - UInt8(ascii: "0")), 1_000_000)
                index += 1
            }
            exponent += sign * value
        }
        digits.removeFirst(digits.firstIndex { $0 != 0 } ?? digits.count)  // one move, not one per zero
        if digits.isEmpty {
            exponent = 0
        } else {
            let trailing = digits.count - 1 - digits.lastIndex { $0 != 0 }!
            digits.removeLast(trailing)
            exponent += trailing
        }
        self.digits = digits
        self.exponent = exponent
    }
}
