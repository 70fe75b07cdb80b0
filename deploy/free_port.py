#!/usr/bin/env python3
"""A free TCP port on 127.0.0.1 for a test daemon (fuzz.sh, the console's browser test).

Chosen below Linux's ephemeral range (32768-60999): a port from that range (`bind(0)`) may be taken, between this
check and the daemon's own bind, by any outgoing connection's local port (a restart's reconnects make that likely).
Checked free by binding it. Printed when run as a script."""

import random
import socket


def free_port(low=20000, high=32767, attempts=200):
    for _ in range(attempts):
        port = random.randint(low, high)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {low}-{high} after {attempts} tries")


if __name__ == "__main__":
    print(free_port())
