/// LeakSanitizer's built-in suppressions for this executable, read only when it is built with
/// `--sanitize=address` (the runtime looks this symbol up; otherwise nothing calls it). Child processes
/// started by the tests get no environment, so the suppressions travel in the binary.
/// docs/sanitizers.md gives each report and why it is not a leak:
/// - `formWeakReference`: a Swift weak reference's side table is reachable only through the referenced
///   object's reference-count word, which holds the pointer shifted, so LeakSanitizer cannot see it while
///   the object is alive at exit.
@_cdecl("__lsan_default_suppressions")
public func lsanDefaultSuppressions() -> UnsafePointer<CChar> {
    UnsafeRawPointer(("leak:formWeakReference\nleak:libXCTest.so\n" as StaticString).utf8Start)
        .assumingMemoryBound(to: CChar.self)
}

/// AddressSanitizer's built-in options, read only under `--sanitize=address`: no leak check at exit of this
/// process. The tests start it with an empty environment, where LeakSanitizer finds no symbolizer and so
/// cannot match the suppressions above by function name; the daemon's code is leak-checked in the test
/// process instead, which runs it in-process (`DaemonRun`) with symbols.
@_cdecl("__asan_default_options")
public func asanDefaultOptions() -> UnsafePointer<CChar> {
    UnsafeRawPointer(("detect_leaks=0" as StaticString).utf8Start).assumingMemoryBound(to: CChar.self)
}
