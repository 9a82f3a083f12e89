#!/usr/bin/env python3
"""Writes the fuzz seed corpora (Tests/Fuzz/Corpus/<target>/) from the captured emulator traffic
(Tests/Fuzz/Captures, made by capture.py), the downstream corpus (Tests/Corpus/downstream.jsonl) and
hostile XML cases. Seeds are named seed-*; inputs the fuzzer found (crash-*, regress-*) are left alone.

Usage: Tests/Fuzz/make_seeds.py   (from anywhere; paths are relative to this file)

Input layouts (see the targets in Tests/Fuzz/FuzzTargets):
  xml-stream          flags byte, (flags & 7) chunk-size bytes, then the stream
  inbound-stanza      flags byte, then the gcm text
  intake              the line
  stream-negotiation  flags byte, then the server's bytes
"""
import glob, html, json, os, re

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(HERE, "Corpus")
HEADER = b"<stream:stream from='gcm.googleapis.com' id='4F2A9C' version='1.0' xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>"
DECL = b"<?xml version='1.0'?>"
KEY = b"FuzzServerKeyQuokkaPangolinWombat"  # StreamNegotiationTarget.serverKey

HOSTILE = [
    ("dtd", DECL + b"<!DOCTYPE stream:stream>" + HEADER),
    ("xxe", DECL + b'<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>' + HEADER + b"<message>&e;</message>"),
    ("laughs", b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "x"><!ENTITY b "&a;&a;&a;">]>' + HEADER + b"<message>&b;</message>"),
    ("undefined-entity", HEADER + b"<message><body>a &foo; b</body></message>"),
    ("entity-attribute", HEADER + b"<message id='&foo;'/><message id='a&amp;b&#x1F600;'/>"),
    ("stream-level-entity", HEADER + b"&amp;"),
    ("entity-no-semicolon", HEADER + b"<message>&amp</message><a>;</a>"),
    ("mismatched", HEADER + b"<a/><message><body></message>"),
    ("prefix-mismatch", HEADER + b"<x:a xmlns:x='urn:a' xmlns:y='urn:a'></y:a>"),
    ("duplicate-attribute", HEADER + b"<message id='1' id='2'/>"),
    ("cdata", HEADER + b"<message><body><![CDATA[a<b>&c]]>d</body></message><![CDATA[x]]>"),
    ("after-end", HEADER + b"<a/></stream:stream><message/>"),
    ("namespaces", HEADER + b"<m:message xmlns:m='jabber:client' xmlns:q='urn:q' q:attr='1' xml:lang='en'><q:x/><y xmlns=''/></m:message>"),
    ("bad-utf8", HEADER + b"<message><body>a\xff\xc3\x28\xed\xa0\x80</body></message>"),
    ("nul", HEADER + b"<message id='a\x00'/>"),
    ("fffe", HEADER + b"<message><body>\xef\xbf\xbe</body></message>"),
    ("charrefs", HEADER + b"<message><body>&#0;&#x1;&#xD800;&#x110000;&#x10FFFF;&#13;</body></message>"),
    ("latin1", b"<?xml version='1.0' encoding='ISO-8859-1'?>" + HEADER),
    ("utf16", b"\xff\xfe" + b"".join(bytes([c, 0]) for c in DECL + HEADER)),
    ("pi-comment", HEADER + b"<?evil data?><!-- c --><message><!-- c --></message>"),
    ("stream-text", HEADER + b"<a/>hello<b/>"),
    ("deep", HEADER + b"<a>" * 40),
    ("whitespace-bom", b"\n \xef\xbb\xbf" + DECL + b"\n" + HEADER + b" \n\t<a/> "),
    ("crlf", HEADER + b"<message a='x\r\ny\tz'>l1\r\nl2\rl3</message>"),
    ("restart", HEADER + b"<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'/>\n\xef\xbb\xbf" + DECL + HEADER + b"<a/>"),
]


def write(target, name, data):
    directory = os.path.join(CORPUS, target)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "seed-" + name), "wb") as f:
        f.write(data)


def main():
    for directory in glob.glob(os.path.join(CORPUS, "*")):
        for old in glob.glob(os.path.join(directory, "seed-*")):
            os.remove(old)
    captures = {os.path.basename(p)[:-4]: open(p, "rb").read() for p in sorted(glob.glob(os.path.join(HERE, "Captures", "*.xml")))}

    # xml-stream: the captures and the hostile cases, in several splittings, limits and restart choices.
    for name, data in list(captures.items()) + HOSTILE:
        write("xml-stream", name + "-bytewise", b"\x11\x00" + data)
        write("xml-stream", name + "-pieces", b"\x13\x06\x3f\xff" + data)
    for name, data in HOSTILE[:8]:
        write("xml-stream", name + "-small-limits", b"\x19\x02" + data)

    # inbound-stanza: every gcm payload the emulator wrote, with the tree it came in.
    count = 0
    for name, data in captures.items():
        text = data.decode("utf-8", "replace")
        for match in re.finditer(r"<message([^>]*)>(<(data:)?gcm[^>]*>)(.*?)</(?:data:)?gcm>", text, re.S):
            attributes, _, prefixed, payload = match.groups()
            flags = 0
            if 'type="error"' in attributes:
                flags |= 0x01 | 0x10
            if "id=" in attributes:
                flags |= 0x04
            if prefixed:
                flags |= 0x40
            count += 1
            write("inbound-stanza", f"{name}-{count:02}", bytes([flags]) + html.unescape(payload).encode())
    for i, payload in enumerate([
        '{"message_type":"control","control_type":"CONNECTION_DRAINING"}',
        '{"message_type":"control"}',
        '{"message_type":"nack","message_id":"m-1","error":"BAD_ACK"}',
        '{"message_type":"ack","message_id":"m-1","from":"k","success":1,"failure":0,"failed_registration_ids":[]}',
        '  {"message_id":"u\\ud83d\\ude00","from":"\\u0000tok","data":{"":""}}  ',
        '{"message_type":"receipt","message_id":"dr2:m","from":"gcm.googleapis.com","data":{"message_status":"MESSAGE_SENT_TO_DEVICE"}}',
        '{"message_type":"weird","message_id":5}',
    ]):
        write("inbound-stanza", f"crafted-{i:02}", b"\x00" + payload.encode())

    # intake: the downstream corpus lines (accepted and refused), and v1 requests.
    with open(os.path.join(ROOT, "Tests", "Corpus", "downstream.jsonl"), encoding="utf-8") as f:
        for i, line in enumerate(f):
            case = json.loads(line)
            body = case["raw"] if "raw" in case else json.dumps(case["message"], ensure_ascii=False, separators=(",", ":"))
            write("intake", f"corpus-{i:02}", body.encode())
    for i, line in enumerate([
        '{"message":{"topic":"news","notification":{"title":"Breaking News","body":"New story"},"data":{"story_id":"1"},"android":{"ttl":"3600s","priority":"high","collapse_key":"c"}}}',
        '{"message":{"token":"tok-1","apns":{"headers":{"apns-expiration":"1700000600","apns-priority":"5"},"payload":{"aps":{"content-available":1,"mutable-content":1}}}},"validate_only":true}',
        '{"message":{"condition":"\'a\' in topics || \'b\' in topics","notification":{"title":"\\ud83d\\ude00 &<>"}}}',
        '{"to":"tok","message_id":"m-\\ud800","time_to_live":1e400,"data":{"a":"\\u0001\\u2028"}}',
        '{"to":"tok","message_id":"m-1","notification":{"badge":3,"body_loc_args":["a","b"],"color":"#aabbcc"}}',
    ]):
        write("intake", f"crafted-{i:02}", line.encode())

    # stream-negotiation: whole server conversations, and hostile turns of them.
    for name, data in captures.items():
        write("stream-negotiation", name, b"\x00" + data)
        write("stream-negotiation", name + "-resource-ping", b"\x03" + data)
    features = b"<stream:features><mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><mechanism>PLAIN</mechanism></mechanisms></stream:features>"
    success = b"<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'/>"
    post = b"<stream:features><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/><session xmlns='urn:ietf:params:xml:ns:xmpp-session'/></stream:features>"
    for name, data in [
        ("sasl-failure-echo", HEADER + features + b"<failure xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><not-authorized/><text>bad key " + KEY + b"</text></failure>"),
        ("stream-error-echo", HEADER + b"<stream:error><conflict xmlns='urn:ietf:params:xml:ns:xmpp-streams'/><text xmlns='urn:ietf:params:xml:ns:xmpp-streams'>" + KEY.lower() + b"</text></stream:error>"),
        ("mechanism-echo", HEADER + b"<stream:features><mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><mechanism>" + KEY + b"</mechanism></mechanisms></stream:features>"),
        ("bind-error", HEADER + features + success + HEADER + post + b"<iq type='error' id='bind-1'><error type='cancel'><conflict xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></iq>"),
        ("session-error", HEADER + features + success + HEADER + post + b"<iq type='result' id='bind-1'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><jid>a@b/c</jid></bind></iq><iq type='error' id='session-2'><error type='cancel'><service-unavailable xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></iq>"),
        ("early-stanzas", HEADER + b"<iq type='get' id='v1'><query xmlns='jabber:iq:version'/></iq><message/><presence/><iq type='result' id='x'/>" + features + b"<iq type='get' id='p' from='s'><ping xmlns='urn:xmpp:ping'/></iq>" + success),
        ("challenge", HEADER + features + b"<challenge xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>=</challenge>"),
        ("no-namespace", b"<stream:stream xmlns:stream='http://etherx.jabber.org/streams'>" + features + success + b"<stream:stream xmlns:stream='http://etherx.jabber.org/streams'>" + post + b"<iq type='result' id='bind-1'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><jid> a@b/c </jid></bind></iq><iq type='set' id='s'/>"),
        ("stream-end", HEADER + features + b"</stream:stream>"),
    ]:
        write("stream-negotiation", name, b"\x04" + data)


main()
