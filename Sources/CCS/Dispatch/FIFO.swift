/// A first-in, first-out queue with O(1) amortized `append` and `popFirst`: an array read from a moving
/// head, compacted once the consumed prefix is large and more than half the storage. The one queue type of
/// the dispatcher (message_ids waiting to be sent, records waiting for their commit), the upstream
/// deduplicator and the in-memory store.
public struct FIFO<Element> {
    private var items: [Element] = []
    private var head = 0

    public init() {}

    public var isEmpty: Bool { head == items.count }
    public var count: Int { items.count - head }
    /// The oldest element, not removed.
    public var first: Element? { head < items.count ? items[head] : nil }

    public mutating func append(_ element: Element) { items.append(element) }

    /// Removes and returns the oldest element.
    public mutating func popFirst() -> Element? {
        guard head < items.count else { return nil }
        let element = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 1024 && head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
        return element
    }
}

extension FIFO: Sendable where Element: Sendable {}
