#!/usr/bin/env python3
"""A stand-in for the HTTP API of `ccsd serve` (docs/api.md), for the CLI's client tests.

usage: api-stub-server.py SOCKET_PATH LOG_PATH [--tcp PORT_FILE] [--token TOKEN]

Serves HTTP/1.1 on the Unix socket SOCKET_PATH (or, with --tcp, on 127.0.0.1 at a free port written to
PORT_FILE) and appends one JSON line per request to LOG_PATH: method, path, content type, authorization and
body. Canned behaviour:
  POST /v1/messages      202; a message whose "to" is "reject-me" is rejected (field "to"); one whose
                         message_id is "done-before" is rejected as already final with an acked outcome; the
                         others are accepted (message_id given, else "srv-N")
  GET /v1/messages/ID    first "in_flight", then "final": an ID containing "nack" ends nacked
                         (DEVICE_UNREGISTERED), one containing "expire" ends expired, others acked; unknown: 404
  GET /v1/events         five events, seq 1..5, those after "after" (default: the acknowledged cursor), at most
                         "limit"
  POST /v1/events/ack    records "through"
  GET /v1/status         a fixed status
  GET /v1/busy           503 with Retry-After
  GET /v1/slow           answers after 3 seconds
With --token, every request needs "Authorization: Bearer TOKEN" (else 401).
Stopped by SIGTERM (the test stops it by its PID).
"""
import http.server
import json
import os
import signal
import socketserver
import sys
import time
import urllib.parse

# A process started by Foundation's Process inherits the blocked signal mask of the thread that started it:
# unblock SIGTERM so that the test can stop this server by its PID.
signal.pthread_sigmask(signal.SIG_SETMASK, [])
signal.signal(signal.SIGTERM, signal.SIG_DFL)

args = sys.argv[1:]
socket_path, log_path = args[0], args[1]
tcp_port_file = args[args.index("--tcp") + 1] if "--tcp" in args else None
token = args[args.index("--token") + 1] if "--token" in args else None

messages = {}  # message_id -> polls so far
acked_through = [0]
counter = [0]
# Each event as ccsd writes it (its own key order, seq and time last, numbers as written): `ccsd events`
# must print these texts byte for byte.
EVENT_TEXTS = [
    '{"event":"connection","id":1,"endpoint":"127.0.0.1:5235","state":"connected","seq":1,"time":"2026-11-30T12:00:00.000Z"}',
    '{"event":"accepted","message_id":"m-1","seq":2,"time":"2026-11-30T12:00:00.100Z"}',
    '{"event":"acked","message_id":"m-1","to":"tok","seq":3,"time":"2026-11-30T12:00:00.200Z"}',
    '{"event":"upstream","message_id":"u-1","from":"dev","category":"app","data":{"k":"v","n":2419201.0,"e":1E2,"z":-0,"x":1e308,"s":"caf\\u00e9 [a,b] \\" }"},"seq":4,"time":"2026-11-30T12:00:00.300Z"}',
    '{"event":"nacked","message_id":"m-2","error":"DEVICE_UNREGISTERED","description":null,"final":true,"invalid_token":true,"seq":5,"time":"2026-11-30T12:00:00.400Z"}',
]
EVENTS = [json.loads(text) for text in EVENT_TEXTS]
STATUS = {
    "lifecycle": "running", "store_writable": True,
    "connections": [
        {"id": 1, "endpoint": "127.0.0.1:5235", "state": "ready", "in_flight": 12, "window": 100},
        {"id": 2, "endpoint": "127.0.0.1:5236", "state": "connecting", "in_flight": 0, "window": 100},
    ],
    "queued": 7, "in_flight": 12, "outstanding": 19,
    "recent_errors": [{"time": "2026-11-30T12:00:01.000Z", "connection": 2, "message": "TLS handshake failed"}],
}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def address_string(self):
        return "stub"

    def answer(self, status, obj, headers=()):
        self.answer_text(status, json.dumps(obj), headers)

    def answer_text(self, status, text, headers=()):
        body = (text + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def error(self, status, code, message, headers=()):
        self.answer(status, {"error": {"status": status, "code": code, "message": message}}, headers)

    def handle_any(self, method):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        with open(log_path, "a") as log:
            log.write(json.dumps({"method": method, "path": self.path, "content_type": self.headers.get("Content-Type"),
                                  "authorization": self.headers.get("Authorization"), "body": body}) + "\n")
        if token is not None and self.headers.get("Authorization") != "Bearer " + token:
            return self.error(401, "unauthorized", "missing or wrong bearer token", [("WWW-Authenticate", "Bearer")])
        url = urllib.parse.urlparse(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        route = (method, url.path)
        if route == ("POST", "/v1/messages"):
            try:
                if (self.headers.get("Content-Type") or "").startswith("application/x-ndjson"):
                    batch = [json.loads(line) for line in body.splitlines() if line.strip()]
                else:
                    parsed = json.loads(body)
                    batch = parsed if isinstance(parsed, list) else [parsed]
            except ValueError as e:
                return self.error(400, "bad_json", str(e))
            results = []
            for index, message in enumerate(batch):
                mid = message.get("message_id")
                if message.get("to") == "reject-me":
                    r = {"index": index, "status": "rejected", "field": "to", "rule": "must be a registration token",
                         "error": "to: must be a registration token (got \"reject-me\")", "retryable": False}
                    if mid:
                        r["message_id"] = mid
                    results.append(r)
                    continue
                if mid == "done-before":
                    results.append({"index": index, "message_id": mid, "status": "rejected", "field": "message_id",
                                    "rule": "already final", "error": "message_id: already final",
                                    "outcome": {"event": "acked", "message_id": mid, "to": "tok", "seq": 9}})
                    continue
                if not mid:
                    counter[0] += 1
                    mid = "srv-%d" % counter[0]
                messages[mid] = 0
                results.append({"index": index, "message_id": mid, "status": "accepted"})
            accepted = sum(1 for r in results if r["status"] == "accepted")
            return self.answer(202, {"accepted": accepted, "rejected": len(results) - accepted, "results": results})
        if method == "GET" and url.path.startswith("/v1/messages/"):
            mid = urllib.parse.unquote(url.path[len("/v1/messages/"):])
            if mid not in messages:
                return self.error(404, "not_found", "no message " + mid)
            messages[mid] += 1
            if messages[mid] < 2:
                return self.answer(200, {"message_id": mid, "state": "in_flight", "attempts": 1, "connection": 1,
                                         "last_error": None, "outcome": None})
            if "nack" in mid:
                outcome = {"event": "nacked", "message_id": mid, "error": "DEVICE_UNREGISTERED", "description": None,
                           "final": True, "invalid_token": True}
            elif "expire" in mid:
                outcome = {"event": "expired", "message_id": mid}
            else:
                outcome = {"event": "acked", "message_id": mid, "to": "tok"}
            return self.answer(200, {"message_id": mid, "state": "final", "attempts": 1, "connection": 1,
                                     "last_error": None, "outcome": outcome})
        if route == ("GET", "/v1/events"):
            after = int(query.get("after", acked_through[0]))
            limit = int(query.get("limit", 100))
            page = [(e["seq"], text) for e, text in zip(EVENTS, EVENT_TEXTS) if e["seq"] > after][:limit]
            return self.answer_text(200, '{"events":[' + ",".join(text for _, text in page) + '],"next":'
                                    + str(page[-1][0] if page else after) + "}")
        if route == ("POST", "/v1/events/ack"):
            acked_through[0] = json.loads(body)["through"]
            return self.answer(200, {"consumer": "api", "through": acked_through[0]})
        if route == ("GET", "/v1/status"):
            return self.answer(200, STATUS)
        if route == ("GET", "/v1/busy"):
            return self.error(503, "unavailable", "the queue is full", [("Retry-After", "5")])
        if route == ("GET", "/v1/slow"):
            time.sleep(3)
            return self.answer(200, {})
        return self.error(404, "not_found", "no route %s %s" % (method, url.path))

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")


class UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class TCPServer(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


if tcp_port_file:
    server = TCPServer(("127.0.0.1", 0), Handler)
    with open(tcp_port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tcp_port_file + ".tmp", tcp_port_file)
else:
    if os.path.exists(socket_path):
        os.unlink(socket_path)
    server = UnixServer(socket_path, Handler)
# Bound and listening: the test waits for this file (the socket file alone appears before listen()).
with open(log_path + ".ready", "w") as f:
    f.write("ready")
server.serve_forever()
