import Synchronization

/// A `Bool` bound per task like `@TaskLocal`, that reads as `false` for one atomic load while no task has
/// bound it anywhere in the process. Reading a `@TaskLocal` looks up the current task's bindings (about 80
/// instructions), which the per-message parsers paid on every message for a switch only tests and
/// `ccsd-bench` turn on.
///
/// `flag.withValue(true) { … }` binds it for the operation and the tasks it creates, as `TaskLocal` does;
/// while any binding is open (counted), reads go to the task-local value, so every task reads exactly what
/// `@TaskLocal` would give it. (Not a property wrapper: its storage would be a mutable static.)
package final class TaskFlag: Sendable {
    private let local = TaskLocal<Bool>(wrappedValue: false)
    /// Bindings open in the process.
    private let scopes = Atomic<Int>(0)

    /// False for every task until bound.
    package init() {}

    /// The current task's value.
    package var value: Bool {
        scopes.load(ordering: .acquiring) == 0 ? false : local.get()
    }

    /// Runs `operation` with the flag bound to `value` for the current task (as `TaskLocal.withValue`).
    package func withValue<Result, Failure: Error>(
        _ value: Bool, operation: () throws(Failure) -> Result
    ) throws(Failure) -> Result {
        scopes.add(1, ordering: .sequentiallyConsistent)
        defer { scopes.subtract(1, ordering: .sequentiallyConsistent) }
        let outcome = local.withValue(value) { Swift.Result { () throws(Failure) -> Result in try operation() } }
        return try outcome.get()
    }
}
