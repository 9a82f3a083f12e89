/// Writes bytes forward from a pointer into memory the caller sized beforehand: event texts written straight
/// into a string's storage (`DispatcherEvent.plainJSONObject`) and events-file lines (`writeEventLine`).
/// Unchecked: the caller computed the room.
struct ByteCursor {
    private(set) var at: UnsafeMutablePointer<UInt8>

    init(_ start: UnsafeMutablePointer<UInt8>) { at = start }

    mutating func put(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress else { return }
        at.update(from: source, count: bytes.count)
        at += bytes.count
    }

    mutating func put(_ text: StaticString) {
        put(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    mutating func put(_ byte: UInt8) {
        at.pointee = byte
        at += 1
    }

    /// Writes `value` in decimal, as `String(value)` does.
    mutating func put(decimal value: Int64) {
        if value < 0 { put(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits = 1
        while magnitude >= 10 {
            magnitude /= 10
            digits += 1
        }
        magnitude = value.magnitude
        for index in stride(from: digits - 1, through: 0, by: -1) {
            at[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
            magnitude /= 10
        }
        at += digits
    }
}
