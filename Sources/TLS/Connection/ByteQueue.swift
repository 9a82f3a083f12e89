/// A FIFO of bytes: append at the back, consume from the front, compacting as it goes.
struct ByteQueue {
    private var storage: [UInt8] = []
    private var head = 0

    var count: Int { storage.count - head }
    var isEmpty: Bool { count == 0 }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        compactIfWorthIt()
        storage.append(contentsOf: bytes)
    }

    /// Appends through `body`, which appends to the raw array (e.g. `TLSEngine.takeCiphertext(appendingTo:)`).
    mutating func appendInPlace(_ body: (inout [UInt8]) -> Void) {
        compactIfWorthIt()
        body(&storage)
    }

    /// Calls `body` with the bytes at the front; it returns how many it consumed.
    mutating func consume(_ body: (UnsafeRawBufferPointer) -> Int) {
        let used = storage.withUnsafeBytes { raw in body(UnsafeRawBufferPointer(rebasing: raw[head...])) }
        precondition(used >= 0 && used <= count)
        head += used
        if head == storage.count {
            storage.removeAll(keepingCapacity: storage.capacity <= 1 << 20)
            head = 0
        }
    }

    mutating func removeAll() {
        storage = []
        head = 0
    }

    private mutating func compactIfWorthIt() {
        if head > 0 && head >= storage.count / 2 {
            storage.removeFirst(head)
            head = 0
        }
    }
}
