/// A stanza shape the stream parser can hand over as its payload text alone, without building an
/// `XMLElement`: `<name …><childName xmlns="childNamespace" …>TEXT</childName></name>` at depth 1, whose one
/// child element has no children of its own (ccs-protocol.md §2: every CCS payload is the text of one `gcm`
/// element in `google:mobile:data` inside a `<message>`).
///
/// It is only a shortcut (see `XMLStreamParser.feed(_:payload:_:)`): a stanza of any other shape (a second
/// child, a grandchild, a child in another namespace, no child, a `refusedAttribute` on the stanza), and one
/// whose payload the owner declines, comes as the usual `.stanza` event, built from the same callbacks and
/// equal to what the parser builds without a shape.
public struct XMLPayloadShape: Sendable, Equatable {
    /// The stanza's local name (any namespace), e.g. `message`.
    public var name: String
    /// The child's local name, e.g. `gcm`.
    public var childName: String
    /// The child's namespace URI, e.g. `google:mobile:data`.
    public var childNamespace: String
    /// An unprefixed attribute of the stanza that sends it down the general path whatever its value (a
    /// `<message type="error">` is a stanza error, RFC 6120 §8.3, read from the whole element).
    public var refusedAttribute: String

    public init(name: String, childName: String, childNamespace: String, refusedAttribute: String) {
        self.name = name
        self.childName = childName
        self.childNamespace = childNamespace
        self.refusedAttribute = refusedAttribute
    }

    /// A CCS payload: `<message><gcm xmlns="google:mobile:data">JSON</gcm></message>`, any prefix, no `type`.
    public static let ccs = XMLPayloadShape(name: "message", childName: "gcm", childNamespace: XMLNamespace.gcm, refusedAttribute: "type")
}

/// What the parser holds of an open stanza that still has the payload shape (`XMLStreamParser`): the texts
/// libxml2 interns (names and namespace URIs, valid as long as the parser context) and the rest as bytes, so
/// that the `XMLElement`s can be built exactly as the general path would have built them if the stanza turns
/// out to have another shape.
struct PendingPayload: ~Copyable {
    /// 0: no payload stanza open; 1: inside the stanza; 2: inside its child.
    var depth = 0
    /// The child has been closed (a second child element sends the stanza down the general path).
    var childClosed = false
    var stanzaNamespace: UnsafePointer<UInt8>?
    var stanzaAttributes: [XMLAttribute] = []
    /// Character data directly inside the stanza (whitespace between elements, usually none).
    var stanzaText: [UInt8] = []
    var childNamespace: UnsafePointer<UInt8>?
    var childAttributes: [XMLAttribute] = []
    /// The child's character data, pieces joined: the payload.
    var text = ByteAccumulator()

    /// Forgets the stanza, keeping the buffers' storage for the next one.
    mutating func clear() {
        depth = 0
        childClosed = false
        stanzaNamespace = nil
        childNamespace = nil
        if !stanzaAttributes.isEmpty { stanzaAttributes.removeAll() }
        if !childAttributes.isEmpty { childAttributes.removeAll() }
        if !stanzaText.isEmpty { stanzaText.removeAll(keepingCapacity: true) }
        text.removeAll()
    }
}

/// Bytes appended piece by piece into storage of its own, kept (and reused) until it is dropped: the
/// payload text of every stanza goes through one. Unlike an `[UInt8]` held by the parser, reading it hands
/// out its storage with no reference counted on the way (no retain and release around each read, no
/// uniqueness check on each append), and emptying it is one store.
struct ByteAccumulator: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>?
    private(set) var count = 0
    private var capacity = 0

    init() {}

    deinit { base?.deallocate() }

    var isEmpty: Bool { count == 0 }

    /// The bytes so far; valid until the next append, `removeAll` or the accumulator's end.
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    mutating func append(_ piece: UnsafeBufferPointer<UInt8>) {
        guard let source = piece.baseAddress, piece.count > 0 else { return }
        if count + piece.count > capacity { grow(to: count + piece.count) }
        (base! + count).update(from: source, count: piece.count)
        count += piece.count
    }

    /// Empties it, keeping the storage.
    mutating func removeAll() { count = 0 }

    private mutating func grow(to needed: Int) {
        let newCapacity = max(needed, capacity * 2, 256)
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        if let base {
            newBase.initialize(from: base, count: count)
            base.deallocate()
        }
        base = newBase
        capacity = newCapacity
    }
}
