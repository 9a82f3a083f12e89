import CLibXML2
import Glibc

/// libxml2's global state, set up once before the first parser context (libxml2 asks threaded
/// programs to call `xmlInitParser` before parsing; Swift runs this initializer exactly once).
private let libxml2Initialized: Bool = {
    xmlInitParser()
    return true
}()

/// Turns the bytes of one XMPP stream into `XMLStreamEvent`s: libxml2's push parser with SAX2
/// callbacks, depth counting (depth 0 = `<stream:stream>`, depth 1 = a stanza), and hard limits.
///
/// Bytes may come in any chunking: a stanza split anywhere (inside a UTF-8 sequence, an entity, a tag),
/// several stanzas in one chunk, whitespace keepalives between stanzas (RFC 6120 §4.6.1, ignored).
/// Elements are matched by (namespace URI, local name), never by prefix (ccs-protocol.md §1).
///
/// Restricted XML (RFC 6120 §11.1) is enforced: no DTD, no entity other than the five predefined ones
/// and character references, no comments, no processing instructions (an XML declaration before the
/// stream header is fine), UTF-8 only (§11.6). Whitespace and UTF-8 byte-order marks before a stream's
/// XML declaration or header are skipped on every stream, restarted ones included (`StreamPrologue`):
/// the bytes a peer writes after `<success/>` and before its new header never reach the new document. libxml2 runs with `XML_PARSE_NOENT | XML_PARSE_NONET`,
/// never `XML_PARSE_HUGE` or `XML_PARSE_DTDLOAD`; DTDs and entities are refused in SAX callbacks.
///
/// Memory is bounded by `XMLStreamLimits`: the parser hands libxml2 at most 64 KiB at a time and checks
/// after each piece that the open stanza, or whatever libxml2 is holding unparsed, is within
/// `maxStanzaBytes`; so a huge attribute, text node or comment fails after roughly
/// `maxStanzaBytes + 64 KiB` bytes, not at the end of the construct.
///
/// Not thread-safe: use it from one thread (or one actor / event loop) at a time. Not `Sendable`.
public final class XMLStreamParser {
    public let limits: XMLStreamLimits

    /// How many bytes `feed` passes to one `xmlParseChunk` call; bounds what libxml2 buffers between
    /// two limit checks.
    static let sliceBytes = 64 * 1024

    // The state the SAX callbacks touch on every event is marked `@exclusivity(unchecked)`: a runtime
    // exclusivity check per access cost about 1,200 instructions per stanza. Its accesses never overlap:
    // the parser is used from one thread, each callback's accesses end before the next callback or the
    // handler runs (libxml2 calls back only inside `xmlParseChunk`, with no access open), and a `feed`
    // from inside the handler is refused by the `isFeeding` precondition (which keeps its check).

    // libxml2 state; `nil` until the first feed after init/reset.
    @exclusivity(unchecked) private var context: xmlParserCtxtPtr?

    // Feeding state.
    @exclusivity(unchecked) private var handler: ((XMLStreamEvent) -> Void)?
    private var isFeeding = false
    @exclusivity(unchecked) private var failure: XMLStreamError?
    @exclusivity(unchecked) private var restartRequested = false
    /// Absolute input offset (in the current stream) just past the last event delivered.
    @exclusivity(unchecked) private var lastEventEnd = 0

    // Stream state.
    @exclusivity(unchecked) private var streamOpen = false
    private var streamEnded = false
    /// Open elements at depth ≥ 1; `stack[0]` is the stanza being built.
    @exclusivity(unchecked) private var stack: [XMLElement] = []

    // Byte accounting: absolute offsets in the current stream's input.
    /// Bytes handed to libxml2 since the context was created.
    @exclusivity(unchecked) private var fedBytes = 0
    /// Where the current (or next) stanza starts: just past the last stream-level construct.
    @exclusivity(unchecked) private var stanzaStart = 0
    /// Decoded character data in the open stanza (a lower bound of its raw size: every resolved
    /// character is at most as long as its source).
    @exclusivity(unchecked) private var stanzaTextBytes = 0

    /// Namespace URIs and element names by libxml2 pointer: libxml2 interns them in its dictionary, so the
    /// same text comes back at the same address and the String need not be rebuilt for every element.
    @exclusivity(unchecked) private var namespaceCache = InternedStrings()
    @exclusivity(unchecked) private var nameCache = InternedStrings()
    /// Checks the bytes are UTF-8 before libxml2 sees them (RFC 6120 §11.6).
    private var utf8 = UTF8Validator()
    /// Skips whitespace and byte-order marks before each stream's first `<`.
    private var prologue = StreamPrologue()
    /// Counts each start tag's attributes in the bytes before libxml2 parses the tag.
    private var attributeCounter: AttributeCounter

    /// The stanza shape handed over as its payload text by `feed(_:payload:_:)`; nil: every stanza is built.
    public let payloadShape: XMLPayloadShape?
    /// The shape's texts, NUL-terminated, compared with what libxml2 reports.
    private let shapeName: [UInt8], shapeChildName: [UInt8], shapeChildNamespace: [UInt8], shapeRefusedAttribute: [UInt8]
    /// The interned texts libxml2 reported last for the shape's name, child name and child namespace: the
    /// same address is the same text within one context, so a match is usually one pointer comparison.
    @exclusivity(unchecked) private var matchedName: UnsafePointer<xmlChar>?
    @exclusivity(unchecked) private var matchedChildName: UnsafePointer<xmlChar>?
    @exclusivity(unchecked) private var matchedChildNamespace: UnsafePointer<xmlChar>?
    /// The owner's payload handler during `feed(_:payload:_:)`, by address: read through the pointer, calling
    /// it copies (retains) nothing per stanza. Valid only during that call (`withUnsafePointer` there).
    @exclusivity(unchecked) private var payloadHandler: UnsafePointer<(UnsafeRawBufferPointer) -> Bool>?
    /// The open stanza while it has the payload shape (then `stack` is empty).
    @exclusivity(unchecked) private var pending = PendingPayload()

    /// - Parameter payloadShape: stanzas of this shape may be handed over as their payload text
    ///   (`feed(_:payload:_:)`); nil (the default) builds every stanza.
    public init(limits: XMLStreamLimits = XMLStreamLimits(), payloadShape: XMLPayloadShape? = nil) {
        self.limits = limits
        self.payloadShape = payloadShape
        attributeCounter = AttributeCounter(maxAttributes: limits.maxAttributes)
        shapeName = Array((payloadShape?.name ?? "").utf8) + [0]
        shapeChildName = Array((payloadShape?.childName ?? "").utf8) + [0]
        shapeChildNamespace = Array((payloadShape?.childNamespace ?? "").utf8) + [0]
        shapeRefusedAttribute = Array((payloadShape?.refusedAttribute ?? "").utf8) + [0]
    }

    deinit {
        if let context { Self.free(context) }
    }

    /// Frees a context and the document libxml2 may have hung on it: xmlFreeParserCtxt leaves
    /// `myDoc` to the caller, and libxml2 makes one in SAX mode when it meets an entity declaration.
    private static func free(_ ctxt: xmlParserCtxtPtr) {
        if let doc = ctxt.pointee.myDoc {
            ctxt.pointee.myDoc = nil
            xmlFreeDoc(doc)
        }
        xmlFreeParserCtxt(ctxt)
    }

    // MARK: - Public API

    /// Feeds the next bytes of the stream, in any chunking, and calls `handler` synchronously, in order,
    /// for each event completed by these bytes.
    ///
    /// - Throws: `XMLStreamError` when the input breaks XML, restricted XML (RFC 6120 §11.1) or
    ///   `limits`. Events completed before the offending byte have been delivered. After a throw the
    ///   parser refuses further input, throwing the same error again, until `reset()`.
    /// - Precondition: not called from inside `handler` (call `reset()` there instead).
    public func feed(_ bytes: UnsafeRawBufferPointer, _ handler: (XMLStreamEvent) -> Void) throws(XMLStreamError) {
        precondition(!isFeeding, "XMLStreamParser.feed called from inside its own event handler")
        if let failure { throw failure }
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        let error = withoutActuallyEscaping(handler) { handler -> XMLStreamError? in
            self.handler = handler
            isFeeding = true
            defer {
                self.handler = nil
                isFeeding = false
            }
            return parse(base.assumingMemoryBound(to: CChar.self), count: bytes.count)
        }
        if let error { throw error }
    }

    /// Feeds the next bytes of the stream as `feed(_:_:)` does, and hands each stanza of `payloadShape` to
    /// `payload` as the child's text (its character data joined, entities resolved, CDATA included, not
    /// trimmed; valid only during the call) instead of building it. `payload` returns whether it took the
    /// stanza: when it returns false, the stanza comes to `handler` as `.stanza`, the element `feed(_:_:)`
    /// would have built. Limits, errors and event order are those of `feed(_:_:)`; a stanza that turns out
    /// to have another shape is built from what was read of it and goes on as any other.
    ///
    /// - Throws: as `feed(_:_:)`.
    /// - Precondition: not called from inside `handler` or `payload`.
    public func feed(
        _ bytes: UnsafeRawBufferPointer, payload: (UnsafeRawBufferPointer) -> Bool, _ handler: (XMLStreamEvent) -> Void
    ) throws(XMLStreamError) {
        precondition(!isFeeding, "XMLStreamParser.feed called from inside its own event handler")
        let error = withoutActuallyEscaping(payload) { payload -> XMLStreamError? in
            withUnsafePointer(to: payload) { payload -> XMLStreamError? in
                payloadHandler = payloadShape == nil ? nil : payload
                defer { payloadHandler = nil }
                do throws(XMLStreamError) { try feed(bytes, handler) } catch { return error }
                return nil
            }
        }
        if let error { throw error }
    }

    /// Inside the `payload` handler of `feed(_:payload:_:)`: true when the stanza handed over is in namespace
    /// `uri` (the URI libxml2 resolved for it, its prefix whatever it is); false for another one or none.
    public func payloadStanzaNamespace(is uri: String) -> Bool {
        guard let namespace = pending.stanzaNamespace else { return false }
        return uri.withCString { strcmp(UnsafeRawPointer(namespace).assumingMemoryBound(to: CChar.self), $0) == 0 }
    }

    /// Feeds bytes; see `feed(_:_:)` for the unsafe buffer.
    public func feed(_ bytes: [UInt8], _ handler: (XMLStreamEvent) -> Void) throws(XMLStreamError) {
        let error = bytes.withUnsafeBytes { buffer -> XMLStreamError? in
            do throws(XMLStreamError) { try feed(buffer, handler) } catch { return error }
            return nil
        }
        if let error { throw error }
    }

    /// Feeds the UTF-8 bytes of `string`; a convenience for tests and tools.
    public func feed(_ string: String, _ handler: (XMLStreamEvent) -> Void) throws(XMLStreamError) {
        var string = string
        let error = string.withUTF8 { buffer -> XMLStreamError? in
            do throws(XMLStreamError) { try feed(UnsafeRawBufferPointer(buffer), handler) } catch { return error }
            return nil
        }
        if let error { throw error }
    }

    /// Starts a new stream on the same connection (RFC 6120 §4.3.3, the restart after SASL success):
    /// frees the libxml2 context (a fresh one is made on the next feed) and forgets any error.
    ///
    /// Called from inside a `feed` handler, it takes effect right after the current event: no further
    /// event of the old stream is delivered, and the bytes of this `feed` call after that event are
    /// parsed as the start of the new stream.
    public func reset() {
        if isFeeding {
            guard !restartRequested else { return }
            restartRequested = true
            context?.pointee.disableSAX = 1
            return
        }
        discardContext()
    }

    // MARK: - Feeding

    private func parse(_ base: UnsafePointer<CChar>, count total: Int) -> XMLStreamError? {
        var offset = 0
        while offset < total {
            if !prologue.isFinished {
                // Whitespace and byte-order marks before the stream's first `<` never reach libxml2.
                switch prologue.scan(UnsafeRawBufferPointer(start: base + offset, count: total - offset)) {
                case .skippedAll:
                    return nil
                case .content(let start, let replay):
                    offset += start
                    if replay > 0 {
                        // The start of a byte-order mark held from an earlier chunk was not one: parse it
                        // first (it cannot complete an event, so no restart can happen inside).
                        let error = StreamPrologue.byteOrderMark.withUnsafeBufferPointer { mark in
                            mark.withMemoryRebound(to: CChar.self) { parse($0.baseAddress!, count: replay) }
                        }
                        if let error { return error }
                    }
                    continue
                }
            }
            let ctxt = context ?? makeContext()
            var count = min(Self.sliceBytes, total - offset)
            // libxml2 gets only the valid UTF-8 prefix; the events before a bad byte are still delivered.
            let invalidOffset = utf8.firstInvalidOffset(in: UnsafeRawBufferPointer(start: base + offset, count: count))
            if let invalidOffset { count = invalidOffset }
            // Nor the attribute past the limit: libxml2 would buffer the whole tag before counting.
            let excessOffset = attributeCounter.scan(UnsafeRawBufferPointer(start: base + offset, count: count))
            if let excessOffset { count = excessOffset }
            let sliceStart = fedBytes
            var rc: Int32 = 0
            if count > 0 {
                fedBytes += count
                rc = xmlParseChunk(ctxt, base + offset, Int32(count), 0)
            }
            if restartRequested {
                // The rest of this piece, after the event whose handler asked for the restart,
                // belongs to the new stream.
                let resume = min(max(lastEventEnd - sliceStart, 0), count)
                discardContext()
                offset += resume
                continue
            }
            if failure == nil, rc != 0, ctxt.pointee.wellFormed == 0 {
                fail(.notWellFormed, "libxml2 stopped with error \(rc)")
            }
            if failure == nil { checkBuffered(ctxt) }
            if failure == nil, excessOffset != nil {
                fail(.tooManyAttributes, "a start tag has more attributes than the limit of \(limits.maxAttributes)")
            }
            if failure == nil, invalidOffset != nil {
                let byte = UInt8(bitPattern: base[offset + count])
                let hex = "0x" + String(byte, radix: 16, uppercase: true)
                if fedBytes == 0, byte == 0xFE || byte == 0xFF {
                    fail(.unsupportedEncoding, "UTF-16 or UTF-32 byte order mark (\(hex)); only UTF-8 is allowed (RFC 6120 §11.6)")
                } else {
                    fail(.invalidCharacter, "invalid UTF-8: byte \(hex) at offset \(fedBytes) of the stream")
                }
            }
            if let failure {
                // Halt outside the callbacks: libxml2 frees its input buffer in xmlStopParser, which
                // some of its code paths cannot take in the middle of a callback.
                xmlStopParser(ctxt)
                return failure
            }
            offset += count
        }
        return nil
    }

    /// After each piece: nothing libxml2 holds may exceed the stanza limit.
    private func checkBuffered(_ ctxt: xmlParserCtxtPtr) {
        let max = limits.maxStanzaBytes
        if isStanzaOpen {
            // Every byte fed since the stanza's `<` belongs to it (libxml2 has not seen its end tag).
            let size = fedBytes - stanzaStart
            if size > max {
                fail(.stanzaTooLarge, "stanza <\(openStanzaName)> exceeds \(max) bytes (at least \(size) so far)")
            }
        } else {
            let pending = fedBytes - Int(xmlByteConsumed(ctxt))
            if pending > max {
                fail(.stanzaTooLarge, "\(pending) bytes of an unfinished construct at stream level exceed \(max) bytes")
            }
        }
    }

    private func makeContext() -> xmlParserCtxtPtr {
        _ = libxml2Initialized
        var sax = Self.makeSAXHandler()
        let owner = Unmanaged.passUnretained(self).toOpaque()
        guard let ctxt = xmlCreatePushParserCtxt(&sax, owner, nil, 0, nil) else {
            fatalError("libxml2 could not allocate a push parser context (out of memory)")
        }
        // NOENT is safe because DTDs (the only source of entities besides the predefined ones) are
        // refused; it makes `a&amp;b` in an attribute come out as `a&b`.
        _ = xmlCtxtUseOptions(ctxt, Int32(XML_PARSE_NOENT.rawValue | XML_PARSE_NONET.rawValue))
        context = ctxt
        return ctxt
    }

    private func discardContext() {
        if let context { Self.free(context) }
        context = nil
        failure = nil
        restartRequested = false
        lastEventEnd = 0
        streamOpen = false
        streamEnded = false
        stack.removeAll()
        pending.clear()
        matchedName = nil
        matchedChildName = nil
        matchedChildNamespace = nil
        fedBytes = 0
        stanzaStart = 0
        stanzaTextBytes = 0
        namespaceCache = InternedStrings()
        nameCache = InternedStrings()
        utf8 = UTF8Validator()
        prologue = StreamPrologue()
        attributeCounter.reset()
    }

    // MARK: - Called from the SAX callbacks

    /// False once an error or a restart stopped this stream: later callbacks are ignored.
    private var isActive: Bool { failure == nil && !restartRequested }

    /// Absolute offset of libxml2's read position in the current stream. Read a few times per stanza: for
    /// input without an encoding converter (the stream is UTF-8) it is `xmlByteConsumed`'s own sum, taken here
    /// without the call; otherwise (and without an input) `xmlByteConsumed` itself.
    private var consumed: Int {
        guard let ctxt = context else { return 0 }
        if let input = ctxt.pointee.input, input.pointee.buf?.pointee.encoder == nil,
           let cur = input.pointee.cur, let base = input.pointee.base {
            return Int(input.pointee.consumed) + (cur - base)
        }
        return Int(xmlByteConsumed(ctxt))
    }

    /// Records the first error and turns the SAX callbacks off; `parse` halts libxml2 afterwards.
    fileprivate func fail(_ kind: XMLStreamError.Kind, _ message: String) {
        guard isActive else { return }
        failure = XMLStreamError(kind, message: message + position)
        context?.pointee.disableSAX = 1
    }

    /// `xmlStopParser` from inside a callback; only where libxml2 checks for it right after the call.
    fileprivate func haltNow() {
        if let context { xmlStopParser(context) }
    }

    private var position: String {
        guard let input = context?.pointee.input else { return "" }
        return " (line \(input.pointee.line), column \(input.pointee.col))"
    }

    /// Whether a stanza is open (built on `stack`, or pending with the payload shape).
    private var isStanzaOpen: Bool { !stack.isEmpty || pending.depth > 0 }

    /// The local name of the open stanza.
    private var openStanzaName: String { stack.first?.name ?? payloadShape?.name ?? "" }

    private func emit(_ event: XMLStreamEvent, endingAt end: Int) {
        lastEventEnd = end
        handler?(event)
    }

    fileprivate func startElement(
        localname: UnsafePointer<xmlChar>?, uri: UnsafePointer<xmlChar>?,
        attributeCount: Int, attributes: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?
    ) {
        guard isActive, let localname else { return }
        if pending.depth > 0 {
            if takePendingChild(localname: localname, uri: uri, attributeCount: attributeCount, attributes: attributes) { return }
            materializePending()
        } else if payloadHandler != nil, streamOpen, stack.isEmpty,
                  beginsPayload(localname: localname, attributeCount: attributeCount, attributes: attributes) {
            pending.depth = 1
            pending.stanzaNamespace = uri
            if attributeCount > 0 { pending.stanzaAttributes = makeAttributes(attributeCount, attributes) }
            stanzaTextBytes = 0
            return
        }
        let name = nameCache.string(at: localname)
        let namespace = uri.map(namespaceString)
        let attrs = attributeCount > 0 ? makeAttributes(attributeCount, attributes) : []

        guard streamOpen else {
            openStream(name: name, namespace: namespace, attributes: attrs)
            return
        }
        let depth = stack.count + 1
        if depth > limits.maxDepth {
            fail(.tooDeep, "<\(name)> at depth \(depth) is nested deeper than \(limits.maxDepth)")
            return
        }
        if stack.isEmpty {
            stanzaTextBytes = 0
        } else if consumed - stanzaStart > limits.maxStanzaBytes {
            fail(.stanzaTooLarge, "stanza <\(stack[0].name)> exceeds \(limits.maxStanzaBytes) bytes")
            return
        }
        stack.append(XMLElement(name: name, namespace: namespace, attributes: attrs))
    }

    /// The attributes of a start tag as `XMLAttribute`s, in document order.
    private func makeAttributes(
        _ attributeCount: Int, _ attributes: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?
    ) -> [XMLAttribute] {
        guard let attributes else { return [] }
        var attrs: [XMLAttribute] = []
        attrs.reserveCapacity(attributeCount)
        // Five pointers per attribute: local name, prefix, URI, value start, value end.
        for index in 0..<attributeCount {
            let fields = attributes + index * 5
            guard let attributeName = fields[0], let start = fields[3], let end = fields[4] else { continue }
            let value = String(decoding: UnsafeBufferPointer(start: start, count: end - start), as: UTF8.self)
            attrs.append(XMLAttribute(
                name: String(cString: attributeName), namespace: fields[2].map(namespaceString), value: value))
        }
        return attrs
    }

    // MARK: - The payload shape

    /// True when a stanza's start tag has the payload shape's name and no refused attribute.
    private func beginsPayload(
        localname: UnsafePointer<xmlChar>, attributeCount: Int, attributes: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?
    ) -> Bool {
        guard Self.matches(localname, shapeName, &matchedName) else { return false }
        if attributeCount > 0, let attributes {
            for index in 0..<attributeCount {
                let fields = attributes + index * 5
                // `XMLElement.attribute(_:)` with no namespace: the unprefixed attribute of that name.
                if fields[2] == nil, let name = fields[0], Self.matches(name, shapeRefusedAttribute, nil) { return false }
            }
        }
        return true
    }

    /// Takes a start tag inside a pending payload stanza when the shape still holds: the first child, with
    /// the shape's name and namespace, allowed at depth 2 and within the stanza bound. False otherwise (the
    /// caller builds what is pending and goes on as the general path).
    private func takePendingChild(
        localname: UnsafePointer<xmlChar>, uri: UnsafePointer<xmlChar>?,
        attributeCount: Int, attributes: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?
    ) -> Bool {
        guard pending.depth == 1, !pending.childClosed, limits.maxDepth >= 2, let uri,
              Self.matches(localname, shapeChildName, &matchedChildName),
              Self.matches(uri, shapeChildNamespace, &matchedChildNamespace),
              consumed - stanzaStart <= limits.maxStanzaBytes else { return false }
        pending.depth = 2
        pending.childNamespace = uri
        if attributeCount > 0 { pending.childAttributes = makeAttributes(attributeCount, attributes) }
        return true
    }

    /// True when the NUL-terminated `text` equals `expected` (NUL-terminated); `last` remembers the
    /// address of the last match (libxml2 interns names and URIs: the same address has the same text).
    private static func matches(
        _ text: UnsafePointer<xmlChar>, _ expected: [UInt8], _ last: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?
    ) -> Bool {
        if let last, last.pointee == text { return true }
        let equal = expected.withUnsafeBufferPointer { strcmp(UnsafeRawPointer(text).assumingMemoryBound(to: CChar.self),
                                                              UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self)) == 0 }
        if equal, let last { last.pointee = text }
        return equal
    }

    /// Builds the pending stanza (and its child, if it has one) as the general path would have built it so
    /// far, onto `stack`, and forgets it as pending.
    private func materializePending() {
        let stanza = makePendingStanza(includingClosedChild: true)
        if pending.depth == 2 {
            stack = [stanza, makePendingChild()]
        } else {
            stack = [stanza]
        }
        pending.clear()
    }

    /// The pending stanza's element; with its child when the child is closed and `includingClosedChild`.
    private func makePendingStanza(includingClosedChild: Bool) -> XMLElement {
        var stanza = XMLElement(
            name: payloadShape?.name ?? "", namespace: pending.stanzaNamespace.map(namespaceString),
            attributes: pending.stanzaAttributes, text: Self.text(pending.stanzaText))
        if includingClosedChild, pending.childClosed { stanza.children = [makePendingChild()] }
        return stanza
    }

    private func makePendingChild() -> XMLElement {
        XMLElement(
            name: payloadShape?.childName ?? "", namespace: pending.childNamespace.map(namespaceString),
            attributes: pending.childAttributes, text: Self.text(pending.text.bytes))
    }

    /// Character data as the general path joins it (libxml2 reports whole characters in each piece).
    private static func text(_ bytes: [UInt8]) -> String {
        bytes.isEmpty ? "" : String(decoding: bytes, as: UTF8.self)
    }

    private static func text(_ bytes: UnsafeRawBufferPointer) -> String {
        bytes.isEmpty ? "" : String(decoding: bytes, as: UTF8.self)
    }

    /// At a stanza's end tag, once libxml2 has consumed it: the stanza's exact size on the wire against
    /// `maxStanzaBytes`. Returns where the stanza ends (the next one starts there), or nil after failing the
    /// stream with `.stanzaTooLarge` naming the stanza (`name`).
    /// (`name` nil: `openStanzaName`, looked up only for the error, with no closure made per stanza.)
    private func endOfStanza(_ name: String?) -> Int? {
        let end = consumed
        let size = end - stanzaStart
        if size > limits.maxStanzaBytes {
            fail(.stanzaTooLarge, "stanza <\(name ?? openStanzaName)> is \(size) bytes, more than \(limits.maxStanzaBytes)")
            return nil
        }
        stanzaStart = end
        return end
    }

    /// The end tag of a pending payload stanza: its payload to the owner, or the element as a `.stanza`.
    private func endPendingStanza() {
        guard let end = endOfStanza(nil) else { return }
        if pending.childClosed, let payloadHandler {
            lastEventEnd = end
            // The text's storage is the parser's own and no callback of this feed runs during the handler.
            let taken = payloadHandler.pointee(pending.text.bytes)
            if taken {
                pending.clear()
                return
            }
        }
        let element = makePendingStanza(includingClosedChild: true)
        pending.clear()
        emit(.stanza(element), endingAt: end)
    }

    private func openStream(name: String, namespace: String?, attributes: [XMLAttribute]) {
        if streamEnded {
            fail(.notWellFormed, "element <\(name)> after the end of the stream")
            return
        }
        guard name == "stream", namespace == XMLNamespace.stream else {
            let found = "<\(name)> in namespace \(namespace.map { "'\($0)'" } ?? "none")"
            if name == "stream" {
                fail(.invalidNamespace, "stream element \(found), expected '\(XMLNamespace.stream)'")
            } else {
                fail(.notWellFormed, "root element \(found) is not <stream> in '\(XMLNamespace.stream)'")
            }
            return
        }
        if let problem = encodingProblem() {
            fail(.unsupportedEncoding, problem)
            return
        }
        // libxml2 reports a start tag before consuming its `>` or `/>`.
        var end = consumed
        var headerBytes = 0
        if let input = context?.pointee.input?.pointee, let cur = input.cur {
            let closing = cur[0] == UInt8(ascii: "/") ? 2 : 1
            end += closing
            // The header bounded like any stream-level construct, whatever the chunking: its `<` is the last
            // one before `cur` (an attribute value cannot hold a raw `<`), and the whole tag is in the buffer.
            if let base = input.base {
                var start = cur
                while start > base, start[0] != UInt8(ascii: "<") { start -= 1 }
                headerBytes = cur - start + closing
            }
        }
        if headerBytes > limits.maxStanzaBytes {
            fail(.stanzaTooLarge, "the stream header is \(headerBytes) bytes, more than \(limits.maxStanzaBytes)")
            return
        }
        streamOpen = true
        stanzaStart = end
        emit(.streamStart(XMLElement(name: name, namespace: namespace, attributes: attributes)), endingAt: end)
    }

    /// RFC 6120 §11.6: UTF-8 only. libxml2 installs a decoder for a declared or detected other encoding.
    private func encodingProblem() -> String? {
        guard let ctxt = context else { return nil }
        if let encoder = ctxt.pointee.input?.pointee.buf?.pointee.encoder {
            let name = encoder.pointee.name.map { String(cString: $0) } ?? "an unknown encoding"
            return "the stream is in \(name); only UTF-8 is allowed"
        }
        if let declared = ctxt.pointee.encoding {
            let name = String(cString: declared)
            let lower = name.lowercased()
            if lower != "utf-8", lower != "utf8" {
                return "the stream declares encoding '\(name)'; only UTF-8 is allowed"
            }
        }
        return nil
    }

    fileprivate func endElement() {
        guard isActive else { return }
        if pending.depth == 2 {
            pending.depth = 1
            pending.childClosed = true
            return
        }
        if pending.depth == 1 {
            endPendingStanza()
            return
        }
        guard !stack.isEmpty else {
            guard streamOpen else { return }
            streamOpen = false
            streamEnded = true
            emit(.streamEnd, endingAt: consumed)
            return
        }
        let element = stack.removeLast()
        if stack.isEmpty {
            guard let end = endOfStanza(element.name) else { return }
            emit(.stanza(element), endingAt: end)
        } else {
            stack[stack.count - 1].children.append(element)
        }
    }

    fileprivate func characters(_ chars: UnsafePointer<xmlChar>?, _ length: Int32) {
        guard isActive, let chars, length > 0 else { return }
        let buffer = UnsafeBufferPointer(start: chars, count: Int(length))
        guard isStanzaOpen else {
            // Stream level: only whitespace keepalives (RFC 6120 §4.6.1).
            for byte in buffer where !XMLWhitespace.contains(byte) {
                fail(.unexpectedText, "character data between stanzas")
                return
            }
            // libxml2 reports whitespace before consuming it.
            stanzaStart = max(stanzaStart, min(consumed + buffer.count, fedBytes))
            return
        }
        stanzaTextBytes += buffer.count
        let size = max(consumed - stanzaStart, stanzaTextBytes)
        if size > limits.maxStanzaBytes {
            fail(.stanzaTooLarge, "stanza <\(openStanzaName)> exceeds \(limits.maxStanzaBytes) bytes")
            return
        }
        if pending.depth == 2 {
            pending.text.append(buffer)
            return
        }
        if pending.depth == 1 {
            pending.stanzaText.append(contentsOf: buffer)
            return
        }
        let piece = String(decoding: buffer, as: UTF8.self)
        let top = stack.count - 1
        if stack[top].text.isEmpty {
            stack[top].text = piece
        } else {
            stack[top].text.append(piece)
        }
    }

    fileprivate func libxml2Error(_ error: UnsafePointer<xmlError>) {
        let error = error.pointee
        // Warnings (e.g. "xmlns: URI … is not absolute") are not errors of the stream.
        guard error.level.rawValue >= XML_ERR_ERROR.rawValue, isActive else { return }
        let kind: XMLStreamError.Kind
        switch xmlParserErrors(rawValue: UInt32(bitPattern: error.code)) {
        case XML_ERR_INVALID_CHAR, XML_ERR_INVALID_CHARREF, XML_ERR_INVALID_DEC_CHARREF,
            XML_ERR_INVALID_HEX_CHARREF:
            kind = .invalidCharacter
        case XML_ERR_UNKNOWN_ENCODING, XML_ERR_UNSUPPORTED_ENCODING, XML_ERR_INVALID_ENCODING:
            // XML_ERR_INVALID_ENCODING: a declaration that does not match the bytes ("labelled UTF-16").
            kind = .unsupportedEncoding
        case XML_ERR_UNDECLARED_ENTITY, XML_WAR_UNDECLARED_ENTITY, XML_ERR_ENTITY_IS_EXTERNAL,
            XML_ERR_ENTITY_IS_PARAMETER, XML_ERR_ENTITY_LOOP, XML_ERR_ENTITY_PROCESSING:
            kind = .entityForbidden
        default:
            kind = .notWellFormed
        }
        var text = error.message.map { String(cString: $0) } ?? "libxml2 error \(error.code)"
        while text.last?.isNewline == true { text.removeLast() }
        let message = "libxml2: \(text) (line \(error.line), column \(error.int2))"
        failure = XMLStreamError(kind, message: message)
        context?.pointee.disableSAX = 1
    }

    private func namespaceString(_ uri: UnsafePointer<xmlChar>) -> String {
        namespaceCache.string(at: uri)
    }
}

/// Strings for the NUL-terminated texts libxml2 interns (names, namespace URIs), remembered by address. A
/// stream uses a handful of them: a short list searched in order (no hashing), the oldest entry replaced
/// when it is full. Hits are verified byte by byte, so a reused address never gives a stale text.
struct InternedStrings {
    private var entries: [(pointer: UnsafeRawPointer, string: String)] = []
    private var next = 0
    private static let size = 8

    mutating func string(at text: UnsafePointer<xmlChar>) -> String {
        let key = UnsafeRawPointer(text)
        let bytes = UnsafeBufferPointer(start: text, count: Int(xmlStrlen(text)))
        for entry in entries where entry.pointer == key && Self.hasBytes(entry.string, bytes) {
            return entry.string
        }
        let string = String(decoding: bytes, as: UTF8.self)
        if entries.count < Self.size {
            entries.append((key, string))
        } else {
            entries[next] = (key, string)
            next = (next + 1) % Self.size
        }
        return string
    }

    /// True when `string`'s UTF-8 is `bytes`, compared as buffers (not by iterating the `String`).
    private static func hasBytes(_ string: String, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let equal = string.utf8.withContiguousStorageIfAvailable { utf8 in
            utf8.count == bytes.count && (bytes.isEmpty || memcmp(utf8.baseAddress!, bytes.baseAddress!, bytes.count) == 0)
        }
        return equal ?? false
    }
}

// MARK: - SAX2 callbacks

extension XMLStreamParser {
    /// The SAX2 handler: content callbacks feed the parser; everything DTD- or entity-related, comments
    /// and processing instructions fail the stream (RFC 6120 §11.1). `serror` collects libxml2's errors
    /// so nothing is printed to stderr.
    fileprivate static func makeSAXHandler() -> xmlSAXHandler {
        var sax = xmlSAXHandler()
        sax.initialized = ccsd_xml_sax2_magic()

        sax.startElementNs = { ctx, localname, _, uri, _, _, attributeCount, _, attributes in
            withOwner(ctx) {
                $0.startElement(localname: localname, uri: uri, attributeCount: Int(attributeCount), attributes: attributes)
            }
        }
        sax.endElementNs = { ctx, _, _, _ in withOwner(ctx) { $0.endElement() } }
        let characters: charactersSAXFunc = { ctx, chars, length in withOwner(ctx) { $0.characters(chars, length) } }
        sax.characters = characters
        sax.ignorableWhitespace = characters
        sax.cdataBlock = { ctx, chars, length in withOwner(ctx) { $0.characters(chars, length) } }

        sax.internalSubset = { ctx, name, _, _ in
            let parser = owner(ctx)
            parser.fail(.dtdForbidden, "DTD <!DOCTYPE \(string(name))> (RFC 6120 §11.1)")
            // Stop before libxml2 reads the subset: it would otherwise still parse entity declarations
            // into a private document "for expat compatibility". libxml2 checks for a stop right after
            // this callback, so halting here is safe (unlike in most other callbacks).
            parser.haltNow()
        }
        sax.externalSubset = { ctx, name, _, _ in
            owner(ctx).fail(.dtdForbidden, "external DTD subset for \(string(name)) (RFC 6120 §11.1)")
        }
        sax.entityDecl = { ctx, name, _, _, _, _ in
            owner(ctx).fail(.entityForbidden, "entity declaration '\(string(name))' (RFC 6120 §11.1)")
        }
        sax.getEntity = { ctx, name in
            owner(ctx).fail(.entityForbidden, "entity reference &\(string(name)); (RFC 6120 §11.1)")
            return nil
        }
        sax.getParameterEntity = { ctx, name in
            owner(ctx).fail(.entityForbidden, "parameter entity reference %\(string(name)); (RFC 6120 §11.1)")
            return nil
        }
        sax.resolveEntity = { ctx, publicID, systemID in
            owner(ctx).fail(
                .entityForbidden,
                "external entity \(string(systemID ?? publicID)) (RFC 6120 §11.1)")
            return nil
        }
        sax.reference = { ctx, name in
            owner(ctx).fail(.entityForbidden, "entity reference &\(string(name)); (RFC 6120 §11.1)")
        }
        sax.comment = { ctx, _ in
            owner(ctx).fail(.restrictedXML, "XML comment (RFC 6120 §11.1)")
        }
        sax.processingInstruction = { ctx, target, _ in
            owner(ctx).fail(.restrictedXML, "processing instruction <?\(string(target))?> (RFC 6120 §11.1)")
        }
        sax.serror = { ctx, error in
            guard let ctx, let error else { return }
            owner(ctx).libxml2Error(error)
        }
        return sax
    }
}

/// The parser behind a SAX callback's user data (`Unmanaged.passUnretained(self)`, see `makeContext`).
private func owner(_ ctx: UnsafeMutableRawPointer?) -> XMLStreamParser {
    Unmanaged<XMLStreamParser>.fromOpaque(ctx!).takeUnretainedValue()
}

/// Runs `body` on the parser behind a SAX callback's user data without retaining and releasing it around the
/// call (the content callbacks, several per stanza). Safe: libxml2 calls back only inside `xmlParseChunk`,
/// which only `parse` calls, a method of that very parser, so the parser is alive for the whole callback.
@inline(__always)
private func withOwner(_ ctx: UnsafeMutableRawPointer?, _ body: (XMLStreamParser) -> Void) {
    Unmanaged<XMLStreamParser>.fromOpaque(ctx!)._withUnsafeGuaranteedRef(body)
}

private func string(_ chars: UnsafePointer<xmlChar>?) -> String {
    guard let chars else { return "" }
    return String(cString: chars)
}
