#!/usr/bin/env python3
"""A TCP proxy on 127.0.0.1 in front of a test server that can play a stalled server.

usage: stall_proxy.py LISTEN_PORT UPSTREAM_PORT STALL_FILE

Bytes pass through unchanged (so SigV4 signatures made for the proxy's address still
verify). While STALL_FILE exists, a request whose first line names a path with PATTERN
("/chunks/") is not forwarded: the connection stays open with no answer, the way a hung
server or a black-holed network looks; once STALL_FILE is removed the request goes on as if
the server had been slow. Prints "ready" once listening and "stalled <line>" for each request
it holds.
"""
import os
import select
import socket
import sys
import threading

PATTERN = b"/chunks/"


def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def client_to_upstream(client, upstream, stall_file):
    try:
        while True:
            data = client.recv(65536)
            if not data:
                break
            first = data.split(b"\r\n", 1)[0]
            if os.path.exists(stall_file) and PATTERN in first and first[:4] in (b"GET ", b"HEAD"):
                print("stalled " + first.decode("latin-1"), flush=True)
                # Hold the request until the stall ends or the client goes.
                while os.path.exists(stall_file):
                    if select.select([client], [], [], 0.05)[0]:
                        more = client.recv(65536)
                        if not more:
                            return
                        data += more
            upstream.sendall(data)
    except OSError:
        pass
    finally:
        for s in (client, upstream):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(conn, upstream_port, stall_file):
    try:
        up = socket.create_connection(("127.0.0.1", upstream_port))
    except OSError:
        conn.close()
        return
    threading.Thread(target=pump, args=(up, conn), daemon=True).start()
    client_to_upstream(conn, up, stall_file)


def main():
    listen_port, upstream_port, stall_file = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", listen_port))
    srv.listen(64)
    print("ready", flush=True)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn, upstream_port, stall_file), daemon=True).start()


if __name__ == "__main__":
    main()
