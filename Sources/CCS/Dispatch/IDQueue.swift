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
