import CCS

/// The actions of one dispatcher call, handed out in order, each moved out of the array rather than copied.
///
/// `for action in actions` copies every action (a `MessageRecord` or `RecordRequest` inside is retained, then
/// released again when the copy and the array go): measured at about 450 instructions per action, about five
/// actions per message. The array is turned around once, its actions moved bit for bit, and each is then
/// popped from its end: the array is empty when it goes, with no placeholder left for it to destroy one by
/// one (`Array.reverse()` swapped through copies: about 1,900 instructions per call).
struct DispatcherActionQueue {
    private var actions: [DispatcherAction]

    init(_ actions: consuming [DispatcherAction]) {
        self.actions = consume actions  // moved: a copy left in the parameter would make the turn-around copy it
        guard self.actions.count > 1 else { return }
        self.actions.withUnsafeMutableBufferPointer { buffer in
            var (low, high) = (buffer.baseAddress!, buffer.baseAddress! + buffer.count - 1)
            while low < high {
                let action = low.move()
                low.moveInitialize(from: high, count: 1)
                high.initialize(to: action)
                low += 1
                high -= 1
            }
        }
    }

    /// The next action, or nil after the last.
    mutating func next() -> DispatcherAction? {
        actions.popLast()
    }
}
