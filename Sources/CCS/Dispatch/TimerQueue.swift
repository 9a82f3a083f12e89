/// A min-heap of timers keyed by due time (seconds on the dispatcher's clock).
struct TimerQueue<Payload: Sendable>: Sendable {
    private var heap: [(due: Double, seq: UInt64, payload: Payload)] = []
    private var sequence: UInt64 = 0

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }
    var nextDue: Double? { heap.first?.due }

    mutating func schedule(at due: Double, _ payload: Payload) {
        sequence &+= 1
        heap.append((due, sequence, payload))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard less(child, parent) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the earliest payload due at or before `now`.
    mutating func popDue(now: Double) -> Payload? {
        guard let first = heap.first, first.due <= now else { return nil }
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            siftDown(from: 0)
        }
        return first.payload
    }

    /// Drops every timer whose payload fails `keep`, then restores heap order. O(n).
    mutating func compact(keeping keep: (Payload) -> Bool) {
        heap.removeAll { !keep($0.payload) }
        guard heap.count > 1 else { return }
        for start in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(from: start) }
    }

    private mutating func siftDown(from index: Int) {
        var parent = index
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count, less(left, smallest) { smallest = left }
            if right < heap.count, less(right, smallest) { smallest = right }
            if smallest == parent { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }

    private func less(_ a: Int, _ b: Int) -> Bool {
        heap[a].due < heap[b].due || (heap[a].due == heap[b].due && heap[a].seq < heap[b].seq)
    }
}

/// A FIFO of message_ids with O(1) amortized push and pop.
struct IDQueue: Sendable {
    private var items: [String] = []
    private var head = 0

    var isEmpty: Bool { head == items.count }
    var count: Int { items.count - head }

    mutating func push(_ id: String) { items.append(id) }

    mutating func pop() -> String? {
        guard head < items.count else { return nil }
        let id = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 4096 && head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
        return id
    }
}

/// SplitMix64: a small seeded generator, so tests can fix the jitter.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
