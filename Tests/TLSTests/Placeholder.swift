import Testing

@Test func placeholderTLSTests() { #expect(Bool(true)) }
