#!/usr/bin/env python3
"""delay-proxy.py: a TCP proxy that holds every byte for a delay, each way, for the multi-node
tests (tools/netns-lib.sh) on kernels without netem.

  delay-proxy.py --listen ADDR:PORT --port-file FILE --target ADDR:PORT --delay-file FILE

Each connection accepted on --listen is relayed to --target. Bytes read on either side are
written to the other side DELAY milliseconds after they were read, in order, where DELAY is
the number in --delay-file when they were read (re-read at most every 50 ms; 0 relays at
once). A second number in the file makes the link one-way slow: the first is then the delay
of what the client sends, the second that of what --target sends back once the client has
sent more than its first chunk, so "0 6000" delays the answers but not the TLS handshake
(ClientHello, then the server's flight, which passes at once). A one-way delay of the
handshake too would keep every new connection from carrying a request at all: a partition,
not answers that come too late. A side's end of stream reaches the other side after the same delay. The port actually
listened on is written to --port-file once the proxy accepts connections.
"""

import argparse
import asyncio
import os
import sys
import time


class Delay:
    def __init__(self, path):
        self.path = path
        self.values_s = [0.0, 0.0]  # to the target, back from it
        self.one_way = False        # two numbers: the back delay spares the handshake
        self.read_at = 0.0

    def now_s(self, back=False):
        t = time.monotonic()
        if t - self.read_at >= 0.05:
            self.read_at = t
            try:
                with open(self.path) as f:
                    ms = [max(0.0, float(v) / 1000.0) for v in f.read().split()] or [0.0]
                self.values_s = [ms[0], ms[-1]]
                self.one_way = len(ms) > 1
            except (OSError, ValueError):
                pass
        return self.values_s[1 if back else 0]


async def pump(reader, writer, delay, chunks, back=False):
    """Copies reader to writer, each chunk released delay after it was read (the delay of what
    the target sends back, with back). chunks[0]: how many the client has sent so far."""
    queue = asyncio.Queue()

    async def read_side():
        try:
            while True:
                data = await reader.read(65536)
                if not back:
                    chunks[0] += 1
                wait_s = delay.now_s(back)
                if back and delay.one_way and chunks[0] < 2:
                    wait_s = 0.0  # the server's handshake flight, before the client's second chunk
                queue.put_nowait((time.monotonic() + wait_s, data))
                if not data:
                    return
        except (ConnectionError, OSError):
            queue.put_nowait((time.monotonic(), b""))

    reading = asyncio.ensure_future(read_side())
    try:
        while True:
            due, data = await queue.get()
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        reading.cancel()


async def relay(client_reader, client_writer, target, delay):
    host, port = target
    try:
        up_reader, up_writer = await asyncio.open_connection(host, port)
    except OSError as e:
        print(f"delay-proxy: cannot reach {host}:{port}: {e}", file=sys.stderr)
        client_writer.close()
        return
    chunks = [0]
    try:
        await asyncio.gather(pump(client_reader, up_writer, delay, chunks),
                             pump(up_reader, client_writer, delay, chunks, back=True))
    finally:
        for w in (up_writer, client_writer):
            w.close()


def addr(text):
    host, _, port = text.rpartition(":")
    return host, int(port)


async def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", type=addr, required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--target", type=addr, required=True)
    ap.add_argument("--delay-file", required=True)
    a = ap.parse_args()
    delay = Delay(a.delay_file)
    server = await asyncio.start_server(lambda r, w: relay(r, w, a.target, delay), *a.listen)
    port = server.sockets[0].getsockname()[1]
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{port}\n")
    os.rename(tmp, a.port_file)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
