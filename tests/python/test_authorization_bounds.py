"""The resource server's bounds, over the real binary: introspection that junk
tokens cannot lock, introspection answers checked claim by claim, keys held
that serve while the key set endpoint is slow or failing, and the leeway's
bound. The real OpenID provider (tests/oauth/provider.mjs) issues the JWTs;
beside it, an introspection endpoint and a key set endpoint of the test's own
on loopback, whose delays and answers the test chooses."""

import base64
import http.client
import json
import subprocess
import threading
import time
import uuid
from base64 import b64encode
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import httpx2

from server import BINARY
from test_authorization import HEADERS, INITIALIZE, post, site

CLIENT_CREDENTIALS = "Basic " + b64encode(b"prompt-host:prompt-host-secret").decode()


class Endpoint:
    """A loopback HTTP server of the test's own, answering with `answer(handler)`
    after `delay` seconds, counting what it was asked."""

    def __init__(self, answer, delay: float = 0.0):
        self.answer, self.delay, self.asked = answer, delay, Counter()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                endpoint.serve(self, None)

            def do_POST(self):
                form = parse_qs(self.rfile.read(int(self.headers.get("Content-Length", 0))).decode())
                endpoint.serve(self, form)

            def log_message(self, *_):
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 256

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def serve(self, handler, form):
        key = form["token"][0] if form else handler.path
        self.asked[key] += 1
        time.sleep(self.delay)
        status, body = self.answer(handler, form)
        data = json.dumps(body).encode()
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
        except OSError:
            pass  # the host gave up waiting

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Introspector(Endpoint):
    """An introspection endpoint (RFC 7662) for prompt-host's client: what the
    test registered for a token, else inactive."""

    def __init__(self, delay: float = 0.0):
        self.answers = {}
        super().__init__(self.introspect, delay)

    def introspect(self, handler, form):
        if handler.headers.get("Authorization") != CLIENT_CREDENTIALS:
            return 401, {"error": "invalid_client"}
        return 200, self.answers.get(form["token"][0], {"active": False})

    def issue(self, issuer: str, audience: str, **claims) -> str:
        """A fresh opaque token, active for this resource unless `claims` say otherwise."""
        token = f"opaque-{uuid.uuid4().hex}"
        now = int(time.time())
        self.answers[token] = {"active": True, "iss": issuer, "aud": audience, "exp": now + 300, "iat": now,
                               "scope": "prompts", "tenant": "acme", "sub": "alice", "token_type": "Bearer", **claims}
        return token


def request_from(source: str, url: str, token: str) -> tuple[int, bytes]:
    """POSTs an initialize with `token` from the loopback address `source`."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30, source_address=(source, 0))
    try:
        connection.request("POST", parts.path, json.dumps(INITIALIZE), {**HEADERS, "Authorization": f"Bearer {token}"})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_introspection_answers_are_checked_claim_by_claim():
    introspector = Introspector()
    try:
        with site(introspection_endpoint=f"{introspector.url}/introspect") as (provider, url, _, log_path):
            issue = lambda **claims: introspector.issue(provider.issuer, url, **claims)  # noqa: E731
            now = int(time.time())
            refused = {
                "the issuer says it is a \\\"refresh_token\\\" token, not a bearer access token": issue(token_type="refresh_token"),
                "the issuer says it is a \\\"DPoP\\\" token, not a bearer access token": issue(token_type="DPoP"),
                "it is not valid yet (nbf)": issue(nbf=now + 600),
                f"its issuer is not {provider.issuer}": issue(iss=provider.issuer + "/other"),
                "it is bound to a proof of possession (cnf": issue(cnf={"x5t#S256": "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"}),
                "it has expired": issue(exp=now - 3600),
            }
            for reason, token in refused.items():
                answer = post(url, token)
                assert (answer.status_code, answer.text) == (401, "unauthorized: the access token is not valid\n"), reason
                assert reason in log_path.read_text(), (reason, log_path.read_text())

            # A token that cannot be one is refused without asking the issuer.
            for junk in ("not!a-token", "x" * 2049):
                answer = post(url, junk)
                assert (answer.status_code, answer.text) == (401, "unauthorized: the access token is not valid\n")
                assert introspector.asked[junk] == 0
            assert "it is neither a JWT nor an opaque token (at most 2048 bytes of the characters RFC 6750 allows)" \
                in log_path.read_text()

            # Active, of a bearer kind, valid since a minute: counts, and is asked about once.
            good = issue(nbf=now - 60, token_type="bearer")
            assert [post(url, good).status_code for _ in range(3)] == [200, 200, 200]
            assert introspector.asked[good] == 1
            untyped = issue()
            del introspector.answers[untyped]["token_type"]
            assert post(url, untyped).status_code == 200
    finally:
        introspector.close()


def test_one_client_has_at_most_two_introspections_under_way_unless_configured():
    for per_client, authorization_extra in ((2, ""), (3, "introspections_per_client = 3\n")):
        introspector = Introspector(delay=1.0)
        try:
            with site(authorization_extra=authorization_extra, introspection_endpoint=f"{introspector.url}/introspect") \
                    as (provider, url, _, log_path):
                answers = []
                threads = [threading.Thread(target=lambda: answers.append(request_from("127.0.0.7", url, f"junk{uuid.uuid4().hex}")))
                           for _ in range(per_client)]
                for thread in threads:
                    thread.start()
                time.sleep(0.3)
                over = request_from("127.0.0.7", url, f"junk{uuid.uuid4().hex}")
                # Another address is not held up by that client's turns.
                valid = request_from("127.0.0.8", url, introspector.issue(provider.issuer, url))
                for thread in threads:
                    thread.join()
                assert over == (503, b"service unavailable: access tokens cannot be checked now\n")
                assert valid[0] == 200
                assert sorted(status for status, _ in answers) == [401] * per_client
                assert f"the token cannot be checked now: {per_client} introspections from this client are under way" \
                    in log_path.read_text()
        finally:
            introspector.close()


def flood(delay: float, valid_tokens: int) -> tuple[float, Counter]:
    """Fresh valid opaque tokens from 4 addresses while 8 other addresses send
    junk opaque tokens, 3 at a time each, to an issuer answering in `delay`
    seconds: the fraction of valid tokens served, and the junk's answers."""
    introspector = Introspector(delay=delay)
    try:
        with site(introspection_endpoint=f"{introspector.url}/introspect") as (provider, url, _, _):
            tokens = [introspector.issue(provider.issuer, url) for _ in range(valid_tokens)]
            stop, junk_answers, served = threading.Event(), Counter(), Counter()

            def junk(source: str):
                while not stop.is_set():
                    try:
                        status, _ = request_from(source, url, f"junk{uuid.uuid4().hex}")
                    except OSError as error:
                        status = type(error).__name__
                    junk_answers[status] += 1

            def valid(source: str, mine: list[str]):
                for token in mine:
                    served[request_from(source, url, token)[0]] += 1

            flooders = [threading.Thread(target=junk, args=(f"127.0.0.{10 + peer}",)) for peer in range(8) for _ in range(3)]
            for thread in flooders:
                thread.start()
            time.sleep(2 * delay + 0.5)  # the junk holds every turn it can
            users = [threading.Thread(target=valid, args=(f"127.0.0.{2 + user}", tokens[user::4])) for user in range(4)]
            started = time.monotonic()
            for thread in users:
                thread.start()
            for thread in users:
                thread.join(timeout=120)
            stop.set()
            for thread in flooders:
                thread.join(timeout=60)
            assert time.monotonic() - started < 120
            print(f"issuer at {delay * 1000:.0f} ms: {served[200]} of {valid_tokens} fresh valid opaque tokens served "
                  f"({served[200] / valid_tokens:.0%}; other answers {dict(served - Counter({200: served[200]}))}) "
                  f"under {sum(junk_answers.values())} junk requests ({dict(junk_answers)})")
            return served[200] / valid_tokens, junk_answers
    finally:
        introspector.close()


def test_junk_tokens_do_not_starve_valid_opaque_tokens():
    for delay, valid_tokens in ((0.05, 40), (1.0, 20)):
        fraction, junk_answers = flood(delay, valid_tokens)
        assert fraction >= 0.95, (delay, fraction)
        # The junk was refused by the issuer, or held to its own two turns.
        assert set(junk_answers) <= {401, 503}, junk_answers
        assert junk_answers[401] > 0


def test_keys_held_serve_while_the_key_set_endpoint_is_slow_or_failing():
    mode = {"now": "serve"}
    keys = {}

    def key_set(handler, _form):
        if mode["now"] == "slow":
            time.sleep(8)  # within the host's 10 s fetch timeout
        if mode["now"] == "fail":
            return 500, {"error": "down"}
        return 200, keys["set"]

    jwks = Endpoint(key_set)
    try:
        with site(authorization_extra=f'jwks_uri = "{jwks.url}/jwks"\njwks_max_age_secs = 1\n') as (provider, url, _, log_path):
            keys["set"] = httpx2.get(f"{provider.issuer}/jwks", timeout=10).json()
            token = provider.token("acme-client")
            assert post(url, token).status_code == 200
            assert jwks.asked["/jwks"] == 1
            for now in ("fail", "slow"):
                mode["now"] = now
                time.sleep(1.2)  # the keys held are now older than jwks_max_age_secs
                took = []
                for _ in range(4):
                    started = time.monotonic()
                    assert post(url, token).status_code == 200
                    took.append(time.monotonic() - started)
                    time.sleep(0.4)
                # Each answered long before the key set endpoint did.
                assert max(took) < 4, (now, took)
                if now == "fail":
                    assert "cannot fetch the issuer's keys; the ones held, if any, still serve" in log_path.read_text()
            # The keys were fetched again, in the background: failing, then slow.
            assert jwks.asked["/jwks"] >= 3, jwks.asked
    finally:
        jwks.close()


def test_the_leeway_has_an_upper_bound(tmp_path):
    config = tmp_path / "prompt-host.toml"
    config.write_text('[authorization]\nresource = "http://127.0.0.1:1/mcp"\nissuer = "http://127.0.0.1:2"\nleeway_secs = 301\n')
    run = subprocess.run([BINARY, "serve", "--config", str(config), "--http", "127.0.0.1:0", "--cache-dir", str(tmp_path / "cache")],
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    assert run.returncode != 0
    assert run.stdout == ""
    assert "authorization.leeway_secs must be at most 300" in run.stderr, run.stderr


def test_a_refused_algorithm_is_logged_cut_and_escaped():
    def b64(value) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    with site() as (_, url, _, log_path):
        token = f"{b64({'alg': 'A' * 3000 + chr(27) + chr(0x202E), 'typ': 'at+jwt'})}.{b64({})}.c2ln"
        answer = post(url, token)
        assert (answer.status_code, answer.text) == (401, "unauthorized: the access token is not valid\n")
        log = log_path.read_text()
        assert 'reason="invalid token: its algorithm \\"' + "A" * 256 + '\\" is not accepted' in log, log
        assert "A" * 257 not in log and chr(27) not in log and chr(0x202E) not in log
