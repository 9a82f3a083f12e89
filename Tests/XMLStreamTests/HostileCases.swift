import XMLStream

// The hostile batch, shared by HostileInputTests and by scripts/valgrind-hostile-xml (which compiles this
// file and TestSupport.swift into a plain synchronous program to run under valgrind): so no Testing here.

/// One malformed or hostile input and the error it must end in.
struct HostileCase: Sendable {
    var name: String
    var bytes: [UInt8]
    var kind: XMLStreamError.Kind
    var condition: String
    /// Stanzas that must still be delivered before the error.
    var stanzasBefore = 0

    init(_ name: String, _ bytes: [UInt8], _ kind: XMLStreamError.Kind, stanzasBefore: Int = 0) {
        self.name = name
        self.bytes = bytes
        self.kind = kind
        self.condition = XMLStreamError.defaultCondition(for: kind)
        self.stanzasBefore = stanzasBefore
    }

    init(_ name: String, _ text: String, _ kind: XMLStreamError.Kind, stanzasBefore: Int = 0) {
        self.init(name, Array(text.utf8), kind, stanzasBefore: stanzasBefore)
    }

    /// `serverHeader` + `before` + raw bytes + `after`.
    init(_ name: String, inStream before: String, _ raw: [UInt8], _ after: String, _ kind: XMLStreamError.Kind) {
        self.init(name, Array((serverHeader + before).utf8) + raw + Array(after.utf8), kind)
    }
}

let declaration = "<?xml version='1.0'?>"

let billionLaughs = """
    <?xml version="1.0"?>
    <!DOCTYPE lolz [
     <!ENTITY lol "lol">
     <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
     <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
     <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
     <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
     <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
     <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
     <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
     <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
    ]>
    <stream:stream xmlns:stream='http://etherx.jabber.org/streams'><message>&lol9;</message>
    """

let hostileCases: [HostileCase] = [
    // DTDs and entities (RFC 6120 §11.1).
    HostileCase("DTD before the header", declaration + "<!DOCTYPE stream:stream>" + serverHeader, .dtdForbidden),
    HostileCase("XXE", declaration + #"<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>"# + serverHeader + "<message>&e;</message>", .dtdForbidden),
    HostileCase("XXE parameter entity", #"<!DOCTYPE x [<!ENTITY % p SYSTEM "http://127.0.0.1:1/x.dtd"> %p;]>"# + serverHeader, .dtdForbidden),
    HostileCase("external DTD", #"<!DOCTYPE stream SYSTEM "http://127.0.0.1:1/x.dtd">"# + serverHeader, .dtdForbidden),
    HostileCase("billion laughs", billionLaughs, .dtdForbidden),
    HostileCase("DTD inside the stream", serverHeader + "<!DOCTYPE x>", .notWellFormed),
    HostileCase("undefined entity in text", serverHeader + "<message><body>a &foo; b</body></message>", .entityForbidden),
    HostileCase("undefined entity in attribute", serverHeader + "<message id='&foo;'/>", .entityForbidden),
    HostileCase("entity reference at stream level", serverHeader + "&amp;", .unexpectedText),
    HostileCase("undefined entity at stream level", serverHeader + "&foo;<a/>", .entityForbidden),
    // libxml2's push parser waits for the `;` (or, below, the `>`) before it looks: the error comes with it.
    HostileCase("entity without semicolon", serverHeader + "<message>&amp</message><a>;</a>", .notWellFormed),
    // Broken markup.
    HostileCase("mismatched end tag", serverHeader + "<a/><message><body></message>", .notWellFormed, stanzasBefore: 1),
    HostileCase("wrong end tag", serverHeader + "<a></b>", .notWellFormed),
    HostileCase("end tag with another prefix", serverHeader + "<x:a xmlns:x='urn:a' xmlns:y='urn:a'></y:a>", .notWellFormed),
    HostileCase("unclosed start tag", serverHeader + "<message <body>", .notWellFormed),
    HostileCase("stream closed with a stanza open", serverHeader + "<message><body>x</stream:stream>", .notWellFormed),
    HostileCase("duplicate attribute", serverHeader + "<message id='1' id='2'/>", .notWellFormed),
    HostileCase("< in attribute value", serverHeader + "<message id='a<b'/><a/>", .notWellFormed),
    HostileCase("]]> in text", serverHeader + "<message>a]]>b</message>", .notWellFormed),
    HostileCase("unquoted attribute", serverHeader + "<message id=1/>", .notWellFormed),
    HostileCase("garbage before the header", "hello" + serverHeader, .notWellFormed),
    HostileCase("garbage after stream end", serverHeader + "<a/></stream:stream><message/>", .notWellFormed, stanzasBefore: 1),
    HostileCase("text after stream end", serverHeader + "</stream:stream>garbage", .notWellFormed),
    // Namespaces.
    HostileCase("unbound element prefix", serverHeader + "<foo:bar/>", .notWellFormed),
    HostileCase("unbound attribute prefix", serverHeader + "<message foo:x='1'/>", .notWellFormed),
    HostileCase("unbound stream prefix", "<stream:stream xmlns='jabber:client'>", .notWellFormed),
    HostileCase("root not stream", "<foo xmlns='jabber:client'>", .notWellFormed),
    HostileCase("stream without the stream namespace", "<stream xmlns='jabber:client'>", .invalidNamespace),
    HostileCase("stream in a wrong namespace", "<stream:stream xmlns:stream='urn:wrong' xmlns='jabber:client'>", .invalidNamespace),
    // Characters and encodings (XML 1.0 §2.2, RFC 6120 §11.6).
    HostileCase("invalid UTF-8 byte in text", inStream: "<message><body>a", [0xFF], "b</body></message>", .invalidCharacter),
    HostileCase("invalid UTF-8 sequence in text", inStream: "<message><body>", [0xC3, 0x28], "</body></message>", .invalidCharacter),
    HostileCase("overlong UTF-8", inStream: "<message><body>", [0xC0, 0xAF], "</body></message>", .invalidCharacter),
    HostileCase("UTF-8 encoded surrogate", inStream: "<message><body>", [0xED, 0xA0, 0x80], "</body></message>", .invalidCharacter),
    HostileCase("truncated UTF-8 sequence", inStream: "<message><body>", [0xE2, 0x82], "</body></message>", .invalidCharacter),
    HostileCase("invalid UTF-8 in attribute", inStream: "<message id='", [0xFE], "'/>", .invalidCharacter),
    HostileCase("invalid UTF-8 in element name", inStream: "<mess", [0xFF], "age/>", .invalidCharacter),
    HostileCase("invalid UTF-8 in CDATA", inStream: "<message><![CDATA[", [0xFF, 0xFE], "]]></message>", .invalidCharacter),
    HostileCase("NUL byte in text", inStream: "<message><body>a", [0x00], "b</body></message>", .invalidCharacter),
    HostileCase("NUL byte in attribute", inStream: "<message id='a", [0x00], "'/>", .invalidCharacter),
    HostileCase("C0 control in text", inStream: "<message><body>a", [0x01], "b</body></message>", .invalidCharacter),
    HostileCase("U+FFFE in text", inStream: "<message><body>", [0xEF, 0xBF, 0xBE], "</body></message>", .invalidCharacter),
    HostileCase("character reference to NUL", serverHeader + "<message><body>&#0;</body></message>", .invalidCharacter),
    HostileCase("character reference to a control", serverHeader + "<message><body>&#x1;</body></message>", .invalidCharacter),
    HostileCase("character reference to a surrogate", serverHeader + "<message><body>&#xD800;</body></message>", .invalidCharacter),
    HostileCase("character reference beyond Unicode", serverHeader + "<message><body>&#x110000;</body></message>", .invalidCharacter),
    HostileCase("declared ISO-8859-1", "<?xml version='1.0' encoding='ISO-8859-1'?>" + serverHeader, .unsupportedEncoding),
    HostileCase("declared UTF-16 without BOM", "<?xml version='1.0' encoding='UTF-16'?>" + serverHeader, .unsupportedEncoding),
    HostileCase("UTF-16 with BOM", [0xFF, 0xFE] + (declaration + serverHeader).utf8.flatMap { [$0, 0] }, .unsupportedEncoding),
    // Restricted XML (RFC 6120 §11.1) and stream-level text.
    HostileCase("processing instruction after the header", serverHeader + "<?evil data?>", .restrictedXML),
    HostileCase("processing instruction in a stanza", serverHeader + "<message><?evil data?></message>", .restrictedXML),
    HostileCase("processing instruction before the header", declaration + "<?evil data?>" + serverHeader, .restrictedXML),
    HostileCase("comment after the header", serverHeader + "<!-- hello -->", .restrictedXML),
    HostileCase("comment in a stanza", serverHeader + "<message><!-- hello --></message>", .restrictedXML),
    HostileCase("comment before the header", "<!-- hello -->" + serverHeader, .restrictedXML),
    HostileCase("text at stream level", serverHeader + "<a/>hello<b/>", .unexpectedText, stanzasBefore: 1),
    HostileCase("CDATA at stream level", serverHeader + "<![CDATA[x]]>", .unexpectedText),
    // Size and depth (RFC 6120 §13.12).
    HostileCase("huge attribute", serverHeader + "<message id='" + String(repeating: "a", count: 1_100_000) + "'/>", .stanzaTooLarge),
    HostileCase("huge text", serverHeader + "<message>" + String(repeating: "a", count: 1_100_000) + "</message>", .stanzaTooLarge),
    // libxml2's own 50,000-byte name limit comes first.
    HostileCase("huge element name", serverHeader + "<" + String(repeating: "n", count: 60_000) + "/>", .notWellFormed),
    HostileCase("huge element name over the stanza limit", serverHeader + "<" + String(repeating: "n", count: 1_100_000), .stanzaTooLarge),
    HostileCase("deeply nested", serverHeader + String(repeating: "<a>", count: 100_000), .tooDeep),
    HostileCase("deeply nested prefixed", serverHeader + String(repeating: "<x:a xmlns:x='urn:x'>", count: 5_000), .tooDeep),
]
