import CCS

/// The actions of one dispatcher call, handed out in order, each moved out of the array rather than copied.
///
/// `for action in actions` copies every action (a `MessageRecord` or `RecordRequest` inside is retained, then
/// released again when the copy and the array go): measured at about 450 instructions per action, about five
/// actions per message. Each slot taken is left holding a payload-free placeholder, so the array releases
/// nothing twice when it goes.
struct DispatcherActionQueue {
    private var actions: [DispatcherAction]
    private var index = 0

    init(_ actions: consuming [DispatcherAction]) {
        self.actions = actions
    }

    /// The next action, or nil after the last.
    mutating func next() -> DispatcherAction? {
        guard index < actions.count else { return nil }
        let taken = index
        index += 1
        return actions.withUnsafeMutableBufferPointer { buffer in
            let slot = buffer.baseAddress! + taken
            let action = slot.move()
            slot.initialize(to: .close(connection: 0))
            return action
        }
    }
}
