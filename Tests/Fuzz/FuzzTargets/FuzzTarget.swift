/// The coverage-guided fuzz targets: each turns one input (any bytes) into calls on a parser or state
/// machine and checks invariants that hold for every input.
///
/// `run(_:)` is the whole target: the libFuzzer entry point (`ccsd-fuzz`, built by `scripts/fuzz`) calls it
/// and aborts on a violation, and the unit tests call it on every file of the seed corpus
/// (`Tests/Fuzz/Corpus/<name>/`), so a crash found once stays a regression test.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// Any bytes as a server stream, fed whole and in the chunk sizes the input chooses (`XMLStreamTarget`).
    case xmlStream = "xml-stream"
    /// A `<message>` tree around a `gcm` payload the input chooses, through `InboundMessage.parse` (`InboundStanzaTarget`).
    case inboundStanza = "inbound-stanza"
    /// One intake line through validation and v1 translation, and the accepted message's wire round trip (`IntakeTarget`).
    case intake
    /// The client's stream negotiation driven by the server elements the input decodes to (`StreamNegotiationTarget`).
    case streamNegotiation = "stream-negotiation"

    /// Runs the target on one input.
    /// - Returns: the invariants the input broke, in words (empty when all hold). A crash inside the code
    ///   under test is not caught: it ends the process, which is what the fuzzer reports.
    public func run(_ input: [UInt8]) -> [String] {
        switch self {
        case .xmlStream: XMLStreamTarget.run(input)
        case .inboundStanza: InboundStanzaTarget.run(input)
        case .intake: IntakeTarget.run(input)
        case .streamNegotiation: StreamNegotiationTarget.run(input)
        }
    }
}
