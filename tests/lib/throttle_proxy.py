#!/usr/bin/python3
"""A degraded link for tests: a loopback TCP proxy that forwards at a fixed rate.

usage: throttle_proxy.py --port PORT --to HOST:PORT --rate BYTES_PER_S [--stats FILE]

Every connection accepted on 127.0.0.1:PORT (0: a free one) is forwarded to --to. Bytes in
each direction share one budget per direction across all connections (one slow link, not a
slow connection each): at most --rate bytes a second, sent in small slices every 20 ms, so
the link is slow but never stalled. Once listening it prints "ready PORT" (flushed) on
stdout. With --stats, FILE holds "up <bytes> down <bytes>" (client->server, server->client),
rewritten as bytes move, so a test can wait until an upload is under way.

Python 3 standard library only; run with /usr/bin/python3.
"""

import argparse
import os
import socket
import sys
import threading
import time

TICK = 0.02


class Bucket:
    """A token bucket shared by every connection of one direction."""

    def __init__(self, rate):
        self.rate = rate
        self.tokens = 0.0
        self.last = time.monotonic()
        self.lock = threading.Lock()
        self.total = 0

    def take(self, want):
        """Blocks until some of want bytes may go; returns how many (at least 1)."""
        while True:
            with self.lock:
                now = time.monotonic()
                self.tokens = min(self.tokens + (now - self.last) * self.rate, self.rate * TICK * 2)
                self.last = now
                if self.tokens >= 1:
                    n = int(min(want, self.tokens))
                    self.tokens -= n
                    self.total += n
                    return n
            time.sleep(TICK)


class Proxy:
    def __init__(self, args):
        host, port = args.to.rsplit(":", 1)
        self.target = (host, int(port))
        self.up = Bucket(args.rate)
        self.down = Bucket(args.rate)
        self.stats = args.stats
        self.stats_lock = threading.Lock()

    def write_stats(self):
        if not self.stats:
            return
        with self.stats_lock:
            tmp = self.stats + ".tmp"
            with open(tmp, "w") as f:
                f.write("up %d down %d\n" % (self.up.total, self.down.total))
            os.replace(tmp, self.stats)

    def pump(self, src, dst, bucket):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                while data:
                    n = bucket.take(len(data))
                    dst.sendall(data[:n])
                    data = data[n:]
                    self.write_stats()
        except OSError:
            pass
        for s in (dst, src):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def serve(self, client):
        try:
            upstream = socket.create_connection(self.target)
        except OSError:
            client.close()
            return
        t = threading.Thread(target=self.pump, args=(upstream, client, self.down), daemon=True)
        t.start()
        self.pump(client, upstream, self.up)
        t.join()
        client.close()
        upstream.close()


def main(argv):
    ap = argparse.ArgumentParser(description="a slow (not stalled) loopback TCP link")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--to", required=True, help="HOST:PORT to forward to")
    ap.add_argument("--rate", type=int, required=True, help="bytes per second, each direction")
    ap.add_argument("--stats", help="file kept holding 'up <bytes> down <bytes>'")
    args = ap.parse_args(argv)
    if args.rate <= 0:
        ap.error("--rate must be positive")
    proxy = Proxy(args)
    proxy.write_stats()
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", args.port))
    srv.listen(64)
    sys.stdout.write("ready %d\n" % srv.getsockname()[1])
    sys.stdout.flush()
    while True:
        client, _ = srv.accept()
        threading.Thread(target=proxy.serve, args=(client,), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
