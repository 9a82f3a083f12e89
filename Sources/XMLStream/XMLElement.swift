/// An XML element as the stream parser yields it: one complete stanza, or the stream header.
///
/// Names are matched by (namespace URI, local name), never by prefix (ccs-protocol.md §1):
/// `<data:gcm xmlns:data="google:mobile:data">` and `<gcm xmlns="google:mobile:data">` are equal here.
/// `text` is the joined character data directly inside this element (CDATA included, entities
/// resolved); text inside children belongs to the children.
public struct XMLElement: Sendable, Equatable {
    /// The local name, without any prefix.
    public var name: String
    /// The namespace URI, or `nil` when the element is in no namespace.
    public var namespace: String?
    /// Attributes in document order.
    public var attributes: [XMLAttribute]
    /// Child elements in document order.
    public var children: [XMLElement]
    /// Joined character data of this element (not of its children).
    public var text: String

    public init(
        name: String, namespace: String? = nil, attributes: [XMLAttribute] = [],
        children: [XMLElement] = [], text: String = ""
    ) {
        self.name = name
        self.namespace = namespace
        self.attributes = attributes
        self.children = children
        self.text = text
    }

    /// True when this element has the given local name and namespace URI.
    @inlinable
    public func `is`(_ name: String, _ namespace: String?) -> Bool {
        self.name == name && self.namespace == namespace
    }

    /// The value of the attribute with this local name and namespace URI (`nil` namespace means
    /// an unprefixed attribute, as XML Namespaces §6.3 puts unprefixed attributes in no namespace).
    public func attribute(_ name: String, namespace: String? = nil) -> String? {
        for attribute in attributes where attribute.name == name && attribute.namespace == namespace {
            return attribute.value
        }
        return nil
    }

    /// The first child with this local name and namespace URI.
    public func child(_ name: String, namespace: String?) -> XMLElement? {
        for child in children where child.name == name && child.namespace == namespace {
            return child
        }
        return nil
    }

    /// Every child with this local name and namespace URI.
    public func children(_ name: String, namespace: String?) -> [XMLElement] {
        children.filter { $0.name == name && $0.namespace == namespace }
    }
}

/// One attribute of an `XMLElement`. `namespace` is `nil` for unprefixed attributes; `xml:lang`
/// has the namespace `http://www.w3.org/XML/1998/namespace`.
public struct XMLAttribute: Sendable, Equatable {
    public var name: String
    public var namespace: String?
    public var value: String

    public init(name: String, namespace: String? = nil, value: String) {
        self.name = name
        self.namespace = namespace
        self.value = value
    }
}

/// Well-known namespace URIs (RFC 6120 and ccs-protocol.md §1–2).
public enum XMLNamespace {
    public static let stream = "http://etherx.jabber.org/streams"
    public static let client = "jabber:client"
    public static let sasl = "urn:ietf:params:xml:ns:xmpp-sasl"
    public static let bind = "urn:ietf:params:xml:ns:xmpp-bind"
    public static let session = "urn:ietf:params:xml:ns:xmpp-session"
    public static let stanzas = "urn:ietf:params:xml:ns:xmpp-stanzas"
    public static let streams = "urn:ietf:params:xml:ns:xmpp-streams"
    public static let ping = "urn:xmpp:ping"
    public static let gcm = "google:mobile:data"
    public static let xml = "http://www.w3.org/XML/1998/namespace"
}
