/// A min-heap of timers by due time; timers due at the same time come out in the order they were scheduled.
///
/// Shared by the dispatcher's timers (`Due` = seconds on its clock, `Double`) and the epoll event loop's
/// (`Due` = `CLOCK_MONOTONIC` nanoseconds, `UInt64`). Inlinable, so each user gets it specialized.
public struct TimerHeap<Due: Comparable, Payload> {
    @usableFromInline var heap: [(due: Due, seq: UInt64, payload: Payload)] = []
    @usableFromInline var sequence: UInt64 = 0

    @inlinable public init() {}

    @inlinable public var isEmpty: Bool { heap.isEmpty }
    @inlinable public var count: Int { heap.count }
    /// The earliest due time, if any.
    @inlinable public var nextDue: Due? { heap.first?.due }

    /// Adds `payload`, due at `due`.
    @inlinable public mutating func schedule(at due: Due, _ payload: Payload) {
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
    @inlinable public mutating func popDue(now: Due) -> Payload? {
        guard let first = heap.first, first.due <= now else { return nil }
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            siftDown(from: 0)
        }
        return first.payload
    }

    /// Drops every timer whose payload fails `keep`, then restores heap order. O(n).
    @inlinable public mutating func compact(keeping keep: (Payload) -> Bool) {
        heap.removeAll { !keep($0.payload) }
        guard heap.count > 1 else { return }
        for start in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(from: start) }
    }

    @inlinable mutating func siftDown(from index: Int) {
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

    @inlinable func less(_ a: Int, _ b: Int) -> Bool {
        heap[a].due < heap[b].due || (heap[a].due == heap[b].due && heap[a].seq < heap[b].seq)
    }
}

extension TimerHeap: Sendable where Due: Sendable, Payload: Sendable {}
