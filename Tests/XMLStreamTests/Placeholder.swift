import Testing

@Test func placeholderXMLStreamTests() { #expect(Bool(true)) }
