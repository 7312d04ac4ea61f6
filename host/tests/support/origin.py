"""A real HTTP origin on loopback for the grants tests: Python's own
http.server, started by the test (never a mock of the host's client).

Takes the first free port of the ones given (the fixture asks for a fixed
set), over TLS with `--tls CERT KEY` first, prints `PORT <n>` once it
listens, and serves:
  /hello            200, "hello from the origin"
  /redirect?to=URL  302 to URL
  /drip             200, then one byte every 100 ms, forever
  /endless          200, chunked, 64 KiB chunks as fast as they go, forever
  /huge-headers     200 with 200 headers of 1 KiB each
  /count            200, how many requests it has answered before this one
  /slow?ms=N        200, "slow", after N ms
  /head?bytes=N     200 with a head (status line, headers, blank line) of
                    exactly N bytes, in headers of at most 1,005 bytes
  /headers          200, the request's header names, one a line
  POST /echo        200, how many body bytes it read
  /api/v1/alerts    200, one firing alert, as Prometheus' HTTP API answers
"""

import http.server
import socketserver
import ssl
import sys
import threading
import time
from urllib.parse import parse_qs, urlparse

# One firing alert, in the shape of Prometheus' GET /api/v1/alerts.
ALERTS = (
    b'{"status":"success","data":{"alerts":[{"labels":{"alertname":"HighErrorRate","severity":"critical",'
    b'"service":"checkout"},"annotations":{"summary":"5% of checkout requests fail"},"state":"firing",'
    b'"activeAt":"2026-11-28T01:00:00Z","value":"5.2e-02"}]}}'
)

seen = 0
seen_lock = threading.Lock()


class Origin(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def count(self):
        global seen
        with seen_lock:
            before = seen
            seen += 1
        return before

    def answer(self, status, body, headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        before = self.count()
        url = urlparse(self.path)
        if url.path == "/hello":
            self.answer(200, b"hello from the origin")
        elif url.path == "/redirect":
            self.answer(302, b"", [("location", parse_qs(url.query)["to"][0])])
        elif url.path == "/drip":
            self.send_response(200)
            self.send_header("content-length", "1000000")
            self.end_headers()
            try:
                while True:
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(0.1)
            except OSError:
                pass
        elif url.path == "/endless":
            self.send_response(200)
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            chunk = b"%x\r\n%s\r\n" % (65536, b"y" * 65536)
            try:
                while True:
                    self.wfile.write(chunk)
            except OSError:
                pass
        elif url.path == "/huge-headers":
            self.answer(200, b"", [("x-filler-%d" % i, "z" * 1024) for i in range(200)])
        elif url.path == "/head":
            size = int(parse_qs(url.query)["bytes"][0])
            status, end = b"HTTP/1.1 200 OK\r\n", b"content-length: 0\r\n\r\n"
            fill = size - len(status) - len(end)
            count = -(-fill // 1005)
            fillers = [b"x: " + b"z" * (fill // count + (1 if at < fill % count else 0) - 5) + b"\r\n" for at in range(count)]
            self.wfile.write(status + b"".join(fillers) + end)
            self.wfile.flush()
        elif url.path == "/slow":
            time.sleep(int(parse_qs(url.query)["ms"][0]) / 1000)
            self.answer(200, b"slow")
        elif url.path == "/count":
            self.answer(200, str(before).encode())
        elif url.path == "/api/v1/alerts":
            self.answer(200, ALERTS, [("content-type", "application/json")])
        elif url.path == "/headers":
            self.answer(200, "\n".join(sorted(self.headers.keys())).encode())
        else:
            self.answer(404, b"not here")

    def do_POST(self):
        self.count()
        length = int(self.headers.get("content-length", "0"))
        read = len(self.rfile.read(length)) if length else 0
        self.answer(200, str(read).encode())


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    # Tests open many connections at once (16 calls of one pack): none may
    # wait on a full backlog (a dropped SYN is retried a second later).
    request_queue_size = 64


def main():
    args = sys.argv[1:]
    tls = None
    if args[:1] == ["--tls"]:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(args[1], args[2])
        args = args[3:]
    for port in [int(port) for port in args]:
        try:
            server = Server(("127.0.0.1", port), Origin)
        except OSError:
            continue
        if tls:
            server.socket = tls.wrap_socket(server.socket, server_side=True)
        print("PORT %d" % port, flush=True)
        server.serve_forever()
    print("no free port", flush=True)
    sys.exit(1)


if __name__ == "__main__":
    main()
