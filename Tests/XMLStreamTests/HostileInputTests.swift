import Testing
import XMLStream

extension HostileCase: CustomTestStringConvertible {
    var testDescription: String { name }
}

@Suite("Hostile input")
struct HostileInputTests {
    @Test("Hostile input ends in a typed error, fed whole", arguments: hostileCases)
    func whole(_ hostile: HostileCase) {
        check(hostile, chunkSize: nil)
    }

    @Test("Hostile input ends in a typed error, fed byte by byte", arguments: hostileCases.filter { $0.bytes.count < 5000 })
    func byteByByte(_ hostile: HostileCase) {
        check(hostile, chunkSize: 1)
    }

    @Test("Hostile input ends in a typed error, fed in 3-byte pieces", arguments: hostileCases.filter { $0.bytes.count < 5000 })
    func threeBytes(_ hostile: HostileCase) {
        check(hostile, chunkSize: 3)
    }

    private func check(_ hostile: HostileCase, chunkSize: Int?) {
        let result = feed(hostile.bytes, chunkSize: chunkSize)
        guard let error = result.error else {
            Issue.record("no error; events: \(result.events)")
            return
        }
        #expect(error.kind == hostile.kind, "\(error)")
        #expect(error.streamErrorCondition == hostile.condition)
        #expect(!error.message.isEmpty)
        #expect(result.stanzas.count == hostile.stanzasBefore)
    }

    @Test func afterAnErrorEveryFeedThrowsTheSameErrorUntilReset() throws {
        let parser = XMLStreamParser()
        var events: [XMLStreamEvent] = []
        let first = #expect(throws: XMLStreamError.self) {
            try parser.feed(serverHeader + "<a></b>") { events.append($0) }
        }
        #expect(events.count == 1, "the header before the error was delivered")
        let second = #expect(throws: XMLStreamError.self) {
            try parser.feed("<message/>") { events.append($0) }
        }
        #expect(first == second)
        #expect(events.count == 1, "nothing is parsed after an error")
        #expect(throws: XMLStreamError.self) { try parser.feed([UInt8]()) { _ in } }

        parser.reset()
        events.removeAll()
        try parser.feed(serverHeader + "<message/>") { events.append($0) }
        #expect(events.count == 2)
    }

    @Test func errorMessageCarriesLibxml2TextAndPosition() {
        let result = feed(serverHeader + "\n<a>\n</b>")
        let message = result.error?.message ?? ""
        #expect(message.contains("libxml2"))
        #expect(message.contains("line 2") || message.contains("line 3"), "\(message)")
        #expect(result.error?.description.contains("not-well-formed") == true)
    }

    @Test func externalEntityIsNeverRead() {
        // Even if the DTD were processed, NONET and the refusing resolver keep the file out of the text.
        let result = feed(declaration + #"<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/hostname">]>"# + serverHeader + "<message>&e;</message>")
        #expect(result.stanzas.isEmpty)
        #expect(result.events.isEmpty)
    }

    @Test func parserIsReusableAfterManyHostileInputs() throws {
        let parser = XMLStreamParser()
        for hostile in hostileCases where hostile.bytes.count < 5000 {
            _ = feed(hostile.bytes, to: parser)
            parser.reset()
        }
        var events: [XMLStreamEvent] = []
        try parser.feed(serverHeader + "<message><body>ok</body></message>") { events.append($0) }
        #expect(events.count == 2)
    }
}
