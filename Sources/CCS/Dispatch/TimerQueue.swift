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
