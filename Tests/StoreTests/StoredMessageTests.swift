import CCS
import Testing
@testable import Store

/// `MessageStore.storedMessage(_:)` (for `GET /v1/messages/{id}`): a live message's saved progress, a final
/// one's event, nothing for an unknown or pruned one; the same in both stores.
@Suite struct StoredMessageTests {
    @Test(arguments: StoreKind.allCases)
    func liveThenFinalThenPruned(kind: StoreKind) throws {
        let directory = TemporaryDirectory()
        var configuration = StoreConfiguration()
        configuration.finalRetentionMillis = 10_000
        let store = try kind.make(in: directory, configuration: configuration)
        defer { store.close() }
        #expect(try store.storedMessage("m") == nil)
        _ = try store.commit(batch { $0.insert(insert("m", at: 1_500)) }, nowUnixMillis: 2_000)
        var progressed = message("m", acceptedAtUnixMillis: 1_500)
        progressed.attempts = 1
        progressed.sends = 2
        progressed.lastError = "SERVICE_UNAVAILABLE"
        _ = try store.commit(batch { $0.progress(progressed) }, nowUnixMillis: 2_500)
        let live = try #require(try store.storedMessage("m"))
        #expect(live.finalEvent == nil && live.finalAtUnixMillis == 0)
        #expect(live.attempts == 1 && live.sends == 2 && live.lastError == "SERVICE_UNAVAILABLE")

        _ = try store.commit(batch { $0.record(final(1, "m")) }, nowUnixMillis: 3_000)
        let done = try #require(try store.storedMessage("m"))
        #expect(done.finalEvent == finalLine("m"))
        #expect(done.finalAtUnixMillis == 3_000)
        #expect(done.sends == 2)

        // Past the final retention, a later commit prunes it.
        _ = try store.commit(batch { $0.insert(insert("other", at: 20_000)) }, nowUnixMillis: 20_000)
        #expect(try store.storedMessage("m") == nil)
    }
}
