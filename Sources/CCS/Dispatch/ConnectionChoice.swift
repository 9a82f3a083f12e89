/// Which ready connection takes the next message: the one with the most free window, ties to the lowest id
/// (`Dispatcher.bestConnection()`), found in O(log n) rather than by a scan of every session per message
/// sent, which cost 1,000 dictionary steps a message with 1,000 connections.
///
/// A max-heap of (free window, connection id) entries. The dispatcher notes a connection each time its free
/// window grows or it becomes ready (`note`), and after each send; an entry that no longer matches its
/// session (a send, drain, close or newer note since) is dropped when it comes to the top (lazy deletion).
/// So the top valid entry is the best connection, provided every change that raises a session's free window or
/// makes it ready is noted. Debug builds check each answer against the scan.
struct ConnectionChoice: Sendable {
    struct Entry: Sendable, Equatable {
        var free: Int
        var id: Int
        /// Heap order: more free window first, then the lower id.
        func precedes(_ other: Entry) -> Bool { free > other.free || (free == other.free && id < other.id) }
    }

    private(set) var heap: [Entry] = []

    /// Notes connection `id` with `free` slots in its window (call after each change that can raise it).
    /// When `id` is the top entry (the connection just chosen, on one connection nearly always), that entry
    /// takes the new value in place instead of a new one being added above a stale one: the next choice
    /// then finds its answer at the top without first dropping the stale entry.
    mutating func note(_ id: Int, free: Int) {
        if let top = heap.first, top.id == id {
            heap[0].free = free
            if free < top.free { siftDown(0) }  // more free keeps it on top
            return
        }
        heap.append(Entry(free: free, id: id))
        siftUp(heap.count - 1)
    }

    /// Connection `id` can take nothing now (its window is full, say): its entry at the top, certainly
    /// stale, goes at once rather than after a check against its session. Entries further down stay for
    /// lazy deletion.
    mutating func noteCannotSend(_ id: Int) {
        if let top = heap.first, top.id == id { removeTop() }
    }

    /// The best entry for which `isCurrent` holds, dropping the stale ones above it; nil when none is left.
    mutating func best(_ isCurrent: (Entry) -> Bool) -> Int? {
        while let top = heap.first {
            if isCurrent(top) { return top.id }
            removeTop()
        }
        return nil
    }

    /// Starts again from `entries` (the current state), once stale entries outnumber the live ones.
    mutating func rebuild(_ entries: [Entry]) {
        heap = []
        heap.reserveCapacity(entries.count)
        for entry in entries { note(entry.id, free: entry.free) }
    }

    private mutating func removeTop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        siftDown(0)
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < heap.count else { return }
            var first = left
            if left + 1 < heap.count, heap[left + 1].precedes(heap[left]) { first = left + 1 }
            guard heap[first].precedes(heap[parent]) else { return }
            heap.swapAt(first, parent)
            parent = first
        }
    }
}
