import Testing

@Test func placeholderCCSTests() { #expect(Bool(true)) }
