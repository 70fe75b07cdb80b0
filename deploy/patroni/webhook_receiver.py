#!/usr/bin/env python3
"""The failover drill's webhook consumer (deploy/patroni/drill.sh): a receiver as docs/feeds.md asks one to be.

It listens on 127.0.0.1:PORT, checks each delivery's `Ledger-Signature` (HMAC-SHA256 of "<t>.<body>" under the
secret read from SECRET_FILE, compared in constant time with every `v1=`), and appends "<received ms> <position>
<hash>" of every signed delivery to LOG; a delivery whose signature does not verify, or whose body is not an event
whose position matches `Ledger-Event-Position`, is answered 400 and logged to LOG.bad (the drill fails on any).
Delivery is at least once, so a position may arrive twice: the drill checks that both times it carried the same
hash. It stops by itself after MAX_SECONDS, or when STOP_FILE exists.

Usage: webhook_receiver.py PORT SECRET_FILE LOG STOP_FILE MAX_SECONDS
"""
import hashlib
import hmac
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

port, secret_file, log_path, stop_file, max_seconds = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5])
with open(secret_file, "rb") as f:
    secret = f.read().strip()
lock = threading.Lock()


def record(path, line):
    with lock, open(path, "a") as f:
        f.write(line + "\n")


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        signature = self.headers.get("Ledger-Signature", "")
        parts = dict(p.split("=", 1) for p in signature.split(",") if "=" in p)
        given = [p.split("=", 1)[1] for p in signature.split(",") if p.startswith("v1=")]
        expected = hmac.new(secret, parts.get("t", "").encode() + b"." + body, hashlib.sha256).hexdigest()
        ok = any(hmac.compare_digest(expected, g) for g in given)
        try:
            event = json.loads(body)
            position, event_hash = int(event["position"]), str(event["hash"])
            ok = ok and str(position) == self.headers.get("Ledger-Event-Position", "")
        except (ValueError, KeyError, TypeError):
            ok = False
        now = int(time.time() * 1000)
        if ok:
            record(log_path, f"{now} {position} {event_hash}")
            self.send_response(200)
        else:
            record(log_path + ".bad", f"{now} signature={signature!r} body={body[:200]!r}")
            self.send_response(400)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", int(port)), Receiver)
server.timeout = 0.5
deadline = time.time() + max_seconds
while time.time() < deadline and not os.path.exists(stop_file):
    server.handle_request()
