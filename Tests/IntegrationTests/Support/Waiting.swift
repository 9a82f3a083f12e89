import Foundation
import TLS
import Testing

/// Polls `condition` on the loop every 10 ms until it holds or `seconds` pass; records an issue on timeout.
@discardableResult
func waitUntil(_ what: String, on loop: EventLoop, seconds: Double = 15,
               sourceLocation: SourceLocation = #_sourceLocation, _ condition: @escaping () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        let done = loop.submitAndWait { condition() }
        if done { return true }
        try? await Task.sleep(nanoseconds: 10_000_000)
    }
    Issue.record("timed out after \(seconds) s waiting for \(what)", sourceLocation: sourceLocation)
    return false
}

/// A unique temporary directory for one test.
func makeTemporaryDirectory(_ name: String) -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("ccsd-\(name)-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}
