"""No token can take what other tenants need, against the real OpenID provider
(tests/oauth/provider.mjs) and prompt-host serving two tenants (the `site` of
test_authorization.py): one token holding its cap of long-lived streams, and
idle sockets besides, leaves another tenant's requests and /healthz served;
a tenant's streams have a cap of their own; a tenant whose session table is
full still gets its stateless 2026-07-28 requests served, and another tenant
its sessions. Run with -s to see the latencies BENCHMARKS.md reports."""

import json
import socket
import statistics
import time
from urllib.parse import urlsplit

import httpx2

from test_authorization import INITIALIZE, post, site

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "fair-share-tests", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
LISTEN = {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
          "params": {"notifications": {"promptsListChanged": True}, "_meta": META}}
DISCOVER = {"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {"_meta": META}}
LIST = {"jsonrpc": "2.0", "id": 3, "method": "prompts/list", "params": {"_meta": META}}


def request(url: str, body: dict | None, token: str | None, close: bool = True, path: str = "/mcp") -> bytes:
    address = urlsplit(url).netloc
    headers = f"Host: {address}\r\n"
    if token:
        headers += f"Authorization: Bearer {token}\r\n"
    if close:
        headers += "Connection: close\r\n"
    if body is None:
        return f"GET {path} HTTP/1.1\r\n{headers}\r\n".encode()
    text = json.dumps(body)
    return (f"POST {path} HTTP/1.1\r\n{headers}MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {body['method']}\r\n"
            f"Content-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {len(text)}\r\n\r\n{text}").encode()


def connect(url: str) -> socket.socket:
    host, port = urlsplit(url).netloc.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=30)
    return sock


def exchange(url: str, body: dict | None, token: str | None = None, path: str = "/mcp") -> tuple[int, str, float]:
    """The status and body of one request on a new connection, and how long it took."""
    started = time.monotonic()
    with connect(url) as sock:
        sock.sendall(request(url, body, token, path=path))
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    took = time.monotonic() - started
    text = answer.decode(errors="replace")
    return int(text.split(" ", 2)[1]), text.split("\r\n\r\n", 1)[1], took


def listen(url: str, token: str) -> socket.socket:
    sock = connect(url)
    sock.sendall(request(url, LISTEN, token, close=False))
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        assert chunk, head
        head += chunk
    assert head.startswith(b"HTTP/1.1 200"), head
    return sock


def latencies(url: str, token: str) -> tuple[float, float]:
    """The median of five: globex's server/discover, and /healthz, in ms."""
    discover, health = [], []
    for _ in range(5):
        status, body, took = exchange(url, DISCOVER, token)
        assert status == 200 and '"id":2,"result":{"resultType":"complete","supportedVersions":[' in body, body
        discover.append(took * 1000)
        status, body, took = exchange(url, None, path="/healthz")
        assert status == 200, body
        health.append(took * 1000)
    return statistics.median(discover), statistics.median(health)


def test_one_token_holding_its_stream_cap_leaves_another_tenant_and_healthz_served():
    with site(args=("--max-connections", "4", "--max-streams-per-user", "2")) as (provider, url, _, _):
        acme, globex = provider.token("acme-client"), provider.token("globex-client")
        before = latencies(url, globex)

        streams = [listen(url, acme) for _ in range(2)]
        status, body, _ = exchange(url, LISTEN, acme)
        assert (status, body) == (
            429, "too many requests: this user holds its maximum of 2 open streams (--max-streams-per-user); close one first\n")
        # The same token's client takes the other places with sockets that send nothing.
        idle = [connect(url) for _ in range(2)]
        time.sleep(0.2)
        during = latencies(url, globex)
        assert during[0] < 5000 and during[1] < 5000, during
        print(f"\nglobex server/discover and /healthz, median of 5 (ms): without acme's streams {before[0]:.1f}, "
              f"{before[1]:.1f}; with acme holding 2 streams and 2 idle sockets of 4 connections {during[0]:.1f}, "
              f"{during[1]:.1f}")
        for sock in streams + idle:
            sock.close()


def test_a_tenant_holds_at_most_its_cap_of_streams_whoever_opens_them():
    with site(args=("--max-connections", "16", "--max-streams-per-user", "2", "--max-streams-per-tenant", "3")) \
            as (provider, url, _, _):
        acme, acme_opaque, globex = (provider.token(client) for client in ("acme-client", "opaque-client", "globex-client"))
        streams = [listen(url, acme) for _ in range(2)] + [listen(url, acme_opaque)]
        status, body, _ = exchange(url, LISTEN, acme_opaque)
        assert (status, body) == (
            429, "too many requests: this tenant holds its maximum of 3 open streams (--max-streams-per-tenant); close one first\n")
        streams.append(listen(url, globex))
        for sock in streams:
            sock.close()


def test_with_few_connections_one_tenant_takes_at_most_half_of_the_streams():
    # Four connections: three streams in all; a tenant's share is two, and so
    # a user's, whatever the defaults (32, 256) say.
    with site(args=("--max-connections", "4")) as (provider, url, _, _):
        acme, globex = provider.token("acme-client"), provider.token("globex-client")
        streams = [listen(url, acme) for _ in range(2)]
        status, body, _ = exchange(url, LISTEN, acme)
        assert (status, body) == (
            429, "too many requests: this user holds its maximum of 2 open streams (a tenant's share, below "
                 "--max-streams-per-user); close one first\n")
        # The other tenant still gets the third.
        streams.append(listen(url, globex))
        status, body, _ = exchange(url, LISTEN, globex)
        assert (status, body) == (
            503, "service unavailable: the server holds its maximum of 3 open streams (three quarters of "
                 "--max-connections); retry later\n")
        status, body, _ = exchange(url, None, path="/healthz")
        assert status == 200, body
        for sock in streams:
            sock.close()


def test_a_full_session_table_of_one_tenant_refuses_only_its_initialize():
    with site(args=("--max-sessions", "2")) as (provider, url, _, _):
        acme, globex = provider.token("acme-client"), provider.token("globex-client")
        for _ in range(2):
            assert post(url, acme).status_code == 200
        full = post(url, acme)
        assert (full.status_code, full.text) == (
            503, "service unavailable: the server holds its maximum of 2 sessions (--max-sessions); retry later, or end a "
                 "session with DELETE\n")
        # The tenant's stateless requests are served.
        status, body, _ = exchange(url, DISCOVER, acme)
        assert status == 200 and '"id":2,"result":{"resultType":"complete","supportedVersions":[' in body, body
        status, body, _ = exchange(url, LIST, acme)
        assert status == 200 and '"name":"code_review"' in body, body
        # A made-up session id is an unknown session.
        answer = httpx2.post(url, json=INITIALIZE, timeout=10, headers={
            "Authorization": f"Bearer {acme}", "Mcp-Session-Id": "made-up", "MCP-Protocol-Version": "2025-11-25",
            "Accept": "application/json, text/event-stream", "Content-Type": "application/json"})
        assert answer.status_code == 404, answer.text
        # Another tenant opens sessions.
        assert post(url, globex).status_code == 200
