import Testing

@Test func placeholderXMPPTests() { #expect(Bool(true)) }
