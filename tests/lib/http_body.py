"""Reading a request body in the project's Python test servers (tests/metadata, tests/gcs):
Content-Length or chunked transfer encoding, bounded."""


def read_body(handler, limit, fail):
    """The body of handler's current request (a BaseHTTPRequestHandler), or None after
    fail(status, message) has answered a bad or oversized one."""
    te = (handler.headers.get("Transfer-Encoding") or "").lower()
    if "chunked" in te:
        chunks, total = [], 0
        while True:
            line = handler.rfile.readline(1024)
            try:
                size = int(line.split(b";")[0].strip(), 16)
            except ValueError:
                fail(400, "bad chunk size")
                return None
            if size == 0:
                while handler.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass   # trailers
                return b"".join(chunks)
            total += size
            if total > limit:
                fail(413, "body too large")
                return None
            chunks.append(handler.rfile.read(size))
            handler.rfile.readline(1024)
    raw = handler.headers.get("Content-Length")
    if raw is None:
        return b""
    try:
        n = int(raw)
        if n < 0:
            raise ValueError
    except ValueError:
        fail(400, "bad Content-Length")
        return None
    if n > limit:
        fail(413, "body too large")
        return None
    data = handler.rfile.read(n)
    if len(data) != n:
        handler.close_connection = True
    return data
