#!/usr/bin/env python3
"""Captures what ccs-emulator writes on real connections, for the fuzz seed corpora.

Usage: Tests/Fuzz/capture.py PATH/TO/ccs-emulator OUT_DIR

Starts the emulator on loopback (ephemeral ports, a throwaway CA, the control channel), plays a client
over TLS (login, bind, session, downstream messages that draw acks, nacks, device-group acks and receipts,
ACKs of upstream messages, a ping answered, a drain), and writes each connection's server-to-client bytes
to OUT_DIR/<scenario>.xml. The emulator is stopped by its PID.
"""
import base64, json, os, re, signal, socket, ssl, subprocess, sys, tempfile, time

SENDER, KEY = "123456789012", "capture-server-key"


def start(emulator, work, extra):
    ready = os.path.join(work, "ready.json")
    env = dict(os.environ, CCS_EMULATOR_SERVER_KEY=KEY)
    proc = subprocess.Popen([emulator, "--sender-id", SENDER, "--listen", "127.0.0.1:0", "--generate-ca", work,
                             "--control-port", "0", "--ready-file", ready] + extra,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        if os.path.exists(ready) and os.path.getsize(ready) > 0:
            with open(ready) as f:
                info = json.load(f)
            return proc, info["ports"][0], info["control_port"]
        time.sleep(0.05)
    proc.kill()
    raise SystemExit("emulator did not become ready")


class Client:
    def __init__(self, port, ca):
        context = ssl.create_default_context(cafile=ca)
        raw = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock = context.wrap_socket(raw, server_hostname="localhost")
        self.sock.settimeout(0.3)
        self.received = b""

    def send(self, text):
        self.sock.sendall(text.encode())

    def read(self, seconds=0.6, until=None):
        deadline = time.time() + seconds
        while time.time() < deadline:
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                if until is None:
                    continue
                data = b""
            except (ssl.SSLError, OSError):
                return
            if data == b"" and until is None:
                return
            self.received += data
            if until is not None and until in self.received:
                return

    def login(self, resource=True):
        header = "<stream:stream to='gcm.googleapis.com' version='1.0' xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>"
        self.send(header)
        self.read(3, b"</stream:features>")
        plain = base64.b64encode(b"\0" + f"{SENDER}@gcm.googleapis.com".encode() + b"\0" + KEY.encode()).decode()
        self.send(f"<auth mechanism='PLAIN' xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>{plain}</auth>")
        self.read(3, b"<success")
        self.send(header)
        mark = len(self.received)
        self.read(3, b"</stream:features>")
        bind = "<bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'>" + ("<resource>fuzz</resource>" if resource else "") + "</bind>"
        self.send(f"<iq type='set' id='bind-1'>{bind}</iq>")
        self.read(3, b"</iq>")
        self.send("<iq type='set' id='session-2'><session xmlns='urn:ietf:params:xml:ns:xmpp-session'/></iq>")
        self.read(1)

    def ack_upstream(self):
        for match in re.finditer(rb'"message_id":("(?:[^"\\]|\\.)*")', self.received):
            literal = match.group(1).decode()
            head = self.received[max(0, match.start() - 2000):match.end() + 400]
            sender = re.search(rb'"from":"([^"]*)"', self.received[match.start() - 600:match.end() + 600])
            if b"message_type&quot;" in head[-1000:] and b"receipt" not in head[-1000:]:
                continue
            to = sender.group(1).decode() if sender else "gcm.googleapis.com"
            body = '{"to":"%s","message_id":%s,"message_type":"ack"}' % (to, literal)
            body = body.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            self.send(f"<message id='ccsd-ack:x'><gcm xmlns='google:mobile:data'>{body}</gcm></message>")


def downstream(message):
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    body = body.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return f"<message id='{message.get('message_id', '')}'><gcm xmlns='google:mobile:data'>{body}</gcm></message>"


def control(port, line):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
        c.sendall((line + "\n").encode())
        c.settimeout(2)
        try:
            c.recv(65536)
        except socket.timeout:
            pass


def scenario(emulator, out, name, extra, play):
    with tempfile.TemporaryDirectory() as work:
        proc, port, control_port = start(emulator, work, extra)
        try:
            client = Client(port, os.path.join(work, "ca.pem"))
            play(client, lambda line: control(control_port, line))
            with open(os.path.join(out, name + ".xml"), "wb") as f:
                f.write(client.received)
            print(f"{name}: {len(client.received)} bytes")
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()


def traffic(client, ctl):
    client.login()
    messages = [
        {"to": "tok-A1", "message_id": "m-1", "data": {"text": "caf\u00e9 & <b>\"q\"</b> \U0001F600 \U0001F1F5\U0001F1F9"}},
        {"to": "bad-token", "message_id": "m-2", "data": {"k": "v"}},
        {"to": "unreg-token", "message_id": "m-3"},
        {"to": "group-key", "message_id": "m-4", "notification": {"title": "t"}},
        {"to": "group-unusual-key", "message_id": "m-5"},
        {"to": "canon-token", "message_id": "m-6", "delivery_receipt_requested": True},
        {"to": "/topics/news", "message_id": "m-7\U0001F600&amp;", "time_to_live": 0},
        {"condition": "'a' in topics && 'b' in topics", "message_id": "m-8"},
        {"to": "rate-token", "message_id": "m-9"},
        {"to": "flaky-token", "message_id": "m-10", "delivery_receipt_requested": True},
        {"message_id": "m-11", "data": {"k": "no target"}},
    ]
    for message in messages:
        client.send(downstream(message))
    client.send("<message id='m-12'><gcm xmlns='google:mobile:data'>not json</gcm></message>")
    client.read(1)
    ctl("upstream 3")
    ctl("ping")
    client.read(1)
    client.send("<iq type='result' id='emu-ping-1'/>")
    client.ack_upstream()
    client.read(0.5)
    ctl("drain")
    client.read(1.5)


def poison(client, ctl):
    client.login(resource=False)
    client.read(1, b"emu-ping-1")
    client.send("<iq type='result' id='emu-ping-1'/>")
    client.read(2)
    client.ack_upstream()
    client.read(0.5)


def early(client, ctl):
    client.login()
    client.read(1)
    ctl("stream-error policy-violation")
    client.read(1)


def main():
    emulator, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    scenario(emulator, out, "traffic", [], traffic)
    scenario(emulator, out, "poison-upstream", ["--poison-upstream"], poison)
    scenario(emulator, out, "early-upstream-prologue", ["--early-upstream", "2", "--stream-prologue", "newline,bom,declaration"], early)
    scenario(emulator, out, "sasl-failure", [], lambda c, ctl: (c.send("<stream:stream to='gcm.googleapis.com' version='1.0' xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>"), c.read(2, b"</stream:features>"), c.send("<auth mechanism='PLAIN' xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>AHdyb25nAHdyb25n</auth>"), c.read(2)))
    scenario(emulator, out, "end-after-login", ["--end-after-login", "stream-error:conflict", "--end-after-login-delay-ms", "50"], lambda c, ctl: (c.login(), c.read(1)))


main()
