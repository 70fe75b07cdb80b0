#!/usr/bin/env python3
"""One address in front of several ledgerd daemons, for the failover drill (deploy/ha/drill.sh).

A TCP round-robin balancer: each new connection goes to the next backend in turn; a backend that refuses the
connection is skipped (the next one is tried), so clients see one address whatever daemon answers. Bytes are
relayed as they are (HTTP keep-alive stays on the daemon the connection landed on). 127.0.0.1 only; it stops on
SIGTERM/SIGINT or when its parent's stop file appears.

Usage: balance.py LISTEN_PORT BACKEND_PORT [BACKEND_PORT ...]
"""
import asyncio
import itertools
import signal
import sys


async def relay(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        try:
            writer.close()
        except Exception:
            pass


async def main(listen, backends):
    turn = itertools.cycle(range(len(backends)))

    async def accept(client_reader, client_writer):
        first = next(turn)
        for offset in range(len(backends)):
            port = backends[(first + offset) % len(backends)]
            try:
                server_reader, server_writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                continue
            await asyncio.gather(relay(client_reader, server_writer), relay(server_reader, client_writer))
            return
        client_writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", listen, reuse_address=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    asyncio.run(main(int(sys.argv[1]), [int(port) for port in sys.argv[2:]]))
