#!/usr/bin/env python3
"""A free TCP port on 127.0.0.1 for a test daemon (fuzz.sh, the console's browser test), or the first of a block of
free ports (the Patroni drill: `free_port.py --block 80 10000 19999`).

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


def free_block(size, low, high, attempts=200):
    """The first port of `size` consecutive ports in low..high, every one of them checked free by binding it."""
    for _ in range(attempts):
        base = random.randint(low, high - size + 1)
        sockets = []
        try:
            for port in range(base, base + size):
                s = socket.socket()
                sockets.append(s)
                s.bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
        return base
    raise RuntimeError(f"no {size} free consecutive ports in {low}-{high} after {attempts} tries")


if __name__ == "__main__":
    import sys

    if len(sys.argv) == 5 and sys.argv[1] == "--block":
        print(free_block(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])))
    else:
        print(free_port())
