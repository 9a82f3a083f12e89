#!/usr/bin/env python3
"""A tiny webhook receiver for ccsd's tests, on loopback only.

Usage: webhook_receiver.py RECORD_FILE [STATUS,STATUS,...]

Listens on 127.0.0.1 on a free port and prints the port on its first stdout line. Answers the n-th POST
with the n-th given status (then 200), and appends one JSON line per POST to RECORD_FILE:
{"status": S, "authorization": "...", "body": <the posted JSON>}. Stopped by its PID (SIGTERM).
"""
import json
import signal
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

# The test process may block SIGTERM in the threads it starts processes from: unblock it, so that a stop by
# PID always ends this process.
signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])
signal.signal(signal.SIGTERM, signal.SIG_DFL)

record_path = sys.argv[1]
statuses = [int(s) for s in sys.argv[2].split(",") if s] if len(sys.argv) > 2 else []


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        status = statuses.pop(0) if statuses else 200
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = {"unparsable": body.decode("utf-8", "replace")}
        with open(record_path, "a") as record:
            record.write(json.dumps({"status": status, "content_type": self.headers.get("Content-Type", ""),
                                     "authorization": self.headers.get("Authorization", ""), "body": parsed}) + "\n")
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
