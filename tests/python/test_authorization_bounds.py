"""The resource server's bounds, over the real binary: introspection that junk
tokens cannot lock, introspection answers checked claim by claim, keys held
that serve while the key set endpoint is slow or failing, and the leeway's
bound. The real OpenID provider (tests/oauth/provider.mjs) issues the JWTs;
beside it, an introspection endpoint and a key set endpoint of the test's own
on loopback, whose delays and answers the test chooses."""

import base64
import http.client
import json
import socket
import subprocess
import itertools
import threading
import time
import uuid
from base64 import b64encode
from collections import Counter
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import httpx2

from server import BINARY
from test_authorization import HEADERS, INITIALIZE, post, site

CLIENT_CREDENTIALS = "Basic " + b64encode(b"prompt-host:prompt-host-secret").decode()


class Endpoint:
    """A loopback HTTP server of the test's own, answering with `answer(handler)`
    after `delay` seconds, counting what it was asked. While `junk_held` is
    cleared, a question about a `junk…` token is not answered: the test
    holds the host's turns for as long as it needs, however loaded the
    machine."""

    def __init__(self, answer, delay: float = 0.0):
        self.answer, self.delay, self.asked = answer, delay, Counter()
        self.in_flight, self.most_in_flight, self.lock = 0, 0, threading.Lock()
        self.junk_held, self.junk_waiting = threading.Event(), 0
        self.junk_held.set()
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
        with self.lock:
            self.asked[key] += 1
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        if key.startswith("junk"):
            with self.lock:
                self.junk_waiting += 1
            self.junk_held.wait(timeout=60)
            with self.lock:
                self.junk_waiting -= 1
        time.sleep(self.delay)
        with self.lock:
            self.in_flight -= 1
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
        self.junk_held.set()
        self.server.shutdown()
        self.server.server_close()

    @contextmanager
    def holding_junk(self, threads: list[threading.Thread], under_way: int):
        """Holds every question about a junk token until the block ends:
        starts `threads`, and waits for `under_way` of them to be asked.
        (Keep the block well under the host's 10 s wait for the issuer.)"""
        self.junk_held.clear()
        try:
            for thread in threads:
                thread.start()
            deadline = time.monotonic() + 30
            while self.junk_waiting < under_way:
                assert time.monotonic() < deadline, f"{self.junk_waiting} of {under_way} questions asked"
                time.sleep(0.02)
            yield
        finally:
            self.junk_held.set()


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


@contextmanager
def introspected_site(delay: float = 0.0, authorization_extra: str = ""):
    """An introspection endpoint of the test's own answering in `delay`
    seconds, and the site introspecting there: (introspector, provider,
    url, log_path)."""
    introspector = Introspector(delay=delay)
    try:
        with site(authorization_extra=authorization_extra, introspection_endpoint=f"{introspector.url}/introspect") \
                as (provider, url, _, log_path):
            yield introspector, provider, url, log_path
    finally:
        introspector.close()


def run_all(threads: list[threading.Thread]):
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def request_from(source: str, url: str, token: str, forwarded_for: str | None = None) -> tuple[int, bytes]:
    """POSTs an initialize with `token` from the loopback address `source`
    (saying it forwards a request from `forwarded_for`, if given)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30, source_address=(source, 0))
    forwarded = {"X-Forwarded-For": forwarded_for} if forwarded_for else {}
    try:
        connection.request("POST", parts.path, json.dumps(INITIALIZE), {**HEADERS, **forwarded, "Authorization": f"Bearer {token}"})
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
                with introspector.holding_junk(threads, under_way=per_client):
                    over = request_from("127.0.0.7", url, f"junk{uuid.uuid4().hex}")
                    # Another address is not held up by that client's turns.
                    valid = request_from("127.0.0.8", url, introspector.issue(provider.issuer, url))
                for thread in threads:
                    thread.join()
                assert over == (503, b"service unavailable: access tokens cannot be checked now\n")
                assert valid[0] == 200
                assert sorted(status for status, _ in answers) == [401] * per_client
                assert f'reason="{per_client} introspections from this client are under way or waiting"' in log_path.read_text()
        finally:
            introspector.close()


def flood(delay: float, valid_tokens: int, networks: int, threads: int, fresh_addresses: bool = False) -> tuple[float, Counter]:
    """Fresh valid opaque tokens from 4 addresses while `networks` other
    addresses, each in its own /24, send junk opaque tokens, `threads` at a
    time each, to an issuer answering in `delay` seconds: the fraction of
    valid tokens served, and the junk's answers. With `fresh_addresses`, each
    junk request comes from an address of its /24 never used before, and
    each user presented one valid token before the junk began."""
    introspector = Introspector(delay=delay)
    try:
        with site(introspection_endpoint=f"{introspector.url}/introspect") as (provider, url, _, _):
            tokens = [introspector.issue(provider.issuer, url) for _ in range(valid_tokens)]
            stop, junk_answers, served = threading.Event(), Counter(), Counter()

            fresh = itertools.count()

            def junk(source: str):
                while not stop.is_set():
                    if fresh_addresses:
                        n = next(fresh)
                        source = f"{source.rsplit('.', 2)[0]}.{n // 250 % 250}.{n % 250 + 2}"
                    try:
                        status, _ = request_from(source, url, f"junk{uuid.uuid4().hex}")
                    except OSError as error:
                        status = type(error).__name__
                    junk_answers[status] += 1

            def valid(source: str, mine: list[str]):
                for token in mine:
                    served[request_from(source, url, token)[0]] += 1

            if fresh_addresses:
                for user in range(4):
                    assert request_from(f"127.0.0.{2 + user}", url, introspector.issue(provider.issuer, url))[0] == 200
            flooders = [threading.Thread(target=junk, args=(f"127.{10 + peer}.0.1",)) for peer in range(networks) for _ in range(threads)]
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
            print(f"issuer at {delay * 1000:.0f} ms, {networks} junk networks x {threads}: {served[200]} of {valid_tokens} "
                  f"fresh valid opaque tokens served ({served[200] / valid_tokens:.0%}; other answers "
                  f"{dict(served - Counter({200: served[200]}))}) under {sum(junk_answers.values())} junk requests "
                  f"({dict(junk_answers)}); the issuer was asked {sum(introspector.asked.values())} times")
            return served[200] / valid_tokens, junk_answers
    finally:
        introspector.close()


def test_junk_tokens_do_not_starve_valid_opaque_tokens():
    # 16 threads per network: more than the 16 turns in all without the
    # per-client bound; 64 networks: more than the 16 turns even with it.
    for networks, threads in ((8, 16), (64, 3)):
        for delay, valid_tokens in ((0.05, 40), (1.0, 20)):
            fraction, junk_answers = flood(delay, valid_tokens, networks, threads)
            assert fraction >= 0.95, (networks, delay, fraction)
            # The junk was refused by the issuer, or held to its own turns.
            assert set(junk_answers) <= {401, 503}, junk_answers
            assert junk_answers[401] > 0


def test_junk_from_never_used_addresses_does_not_starve_networks_that_presented_a_valid_token():
    # Issue "Hardening, round 3", item 5: a network was suspect only after a
    # refusal of its own, so junk from fresh addresses took the clean turns
    # (3 of 20 valid tokens served with the issuer at 1 s). Suspicion is now
    # per /24, and networks that presented a valid token lately have turns
    # of their own. (Fresh addresses in fresh /24s would take the clean turns
    # still: docs/security/oauth.md says so.)
    for networks, threads in ((10, 16), (40, 4)):
        fraction, junk_answers = flood(1.0, 20, networks, threads, fresh_addresses=True)
        assert fraction >= 0.95, (networks, threads, fraction)
        assert set(junk_answers) <= {401, 503}, junk_answers


def test_a_network_that_sends_junk_loses_the_turns_its_valid_token_earned():
    # Issue "Hardening, round 3", item 5: a network that presented a valid
    # token lately has 4 turns of its own, even from a suspect /24, until the
    # issuer refuses a token from it.
    with introspected_site(delay=0.0) as (introspector, provider, url, log_path):
        a = "127.0.6.1"

        def valid_while_the_suspect_turns_are_taken():
            """A fresh valid token from `a` while junk from its /24 holds the
            4 suspect turns until `a` is answered (a turn is waited for 5 s)."""
            junk = [threading.Thread(target=request_from, args=(f"127.0.6.{host}", url, f"junk{uuid.uuid4().hex}"))
                    for host in (2, 3) for _ in range(2)]
            with introspector.holding_junk(junk, under_way=4):
                answer = request_from(a, url, introspector.issue(provider.issuer, url))
            for thread in junk:
                thread.join()
            return answer

        # `a` presents a valid token; a neighbour's junk makes the /24 suspect.
        assert request_from(a, url, introspector.issue(provider.issuer, url))[0] == 200
        assert request_from("127.0.6.2", url, f"junk{uuid.uuid4().hex}")[0] == 401
        # Vouched for: its own turns serve it.
        assert valid_while_the_suspect_turns_are_taken()[0] == 200
        # It sends junk: vouched for no more, it waits behind its /24's junk.
        assert request_from(a, url, f"junk{uuid.uuid4().hex}")[0] == 401
        assert valid_while_the_suspect_turns_are_taken() == (503, b"service unavailable: access tokens cannot be checked now\n")
        assert 'reason="the 4 introspection turns of its kind stayed taken for 5 s"' in log_path.read_text()


def test_a_client_that_goes_away_keeps_its_turns_until_the_issuer_answers():
    with introspected_site(delay=1.0) as (introspector, _, url, _):
        parts = urlsplit(url)
        body = json.dumps(INITIALIZE).encode()
        sent, until = 0, time.monotonic() + 3
        while time.monotonic() < until:
            # Send a request with a made-up token, and hang up at once.
            with socket.create_connection((parts.hostname, parts.port), source_address=("127.0.0.9", 0)) as connection:
                connection.sendall(
                    f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nAuthorization: Bearer junk{uuid.uuid4().hex}\r\n"
                    f"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
                sent += 1
            time.sleep(0.01)
        time.sleep(1.5)
        # At most its 2 turns at the issuer at once, each held for the issuer's whole second.
        assert introspector.most_in_flight == 2, (introspector.most_in_flight, sent)
        assert 2 <= sum(introspector.asked.values()) <= 8, (introspector.asked, sent)
        assert sent > 50


def test_requests_with_the_same_fresh_token_share_one_introspection():
    with introspected_site(delay=1.0) as (introspector, provider, url, _):
        token = introspector.issue(provider.issuer, url)
        answers = []
        run_all([threading.Thread(target=lambda: answers.append(request_from("127.0.0.7", url, token)[0])) for _ in range(6)])
        assert answers == [200] * 6
        assert introspector.asked[token] == 1


def test_one_prefix_has_at_most_eight_introspections_under_way_and_busy_refusals_are_logged_apart():
    with introspected_site(delay=1.5) as (introspector, provider, url, log_path):
        answers = []
        threads = [threading.Thread(target=lambda host=host: answers.append(request_from(f"127.0.0.{host}", url, f"junk{uuid.uuid4().hex}")))
                   for host in range(20, 24) for _ in range(2)]
        # Another /24 presents a valid token: it has turns of its own (the
        # junk takes all 8 clean turns below).
        assert request_from("127.0.1.30", url, introspector.issue(provider.issuer, url))[0] == 200
        with introspector.holding_junk(threads, under_way=8):
            # Another address of the same /24 is over the prefix's 8; one of another /24 is not.
            over = [request_from("127.0.0.30", url, f"junk{uuid.uuid4().hex}") for _ in range(25)]
            valid = request_from("127.0.1.30", url, introspector.issue(provider.issuer, url))
        # 25 busy refusals do not use up the refusal log's 20 lines.
        assert post(url, "not!a-token").status_code == 401
        for thread in threads:
            thread.join()
        assert over == [(503, b"service unavailable: access tokens cannot be checked now\n")] * 25
        assert valid[0] == 200
        assert sorted(status for status, _ in answers) == [401] * 8
        log = log_path.read_text()
        assert 'reason="8 introspections from this client\'s /24 are under way or waiting"' in log, log
        assert "it is neither a JWT nor an opaque token" in log, log


def test_behind_a_trusted_proxy_each_forwarded_client_has_its_own_turns():
    with introspected_site(delay=1.0, authorization_extra='trusted_proxies = ["127.0.0.1"]\n') as (introspector, provider, url, log_path):
        def junk(source: str, forwarded_for: str):
            return request_from(source, url, f"junk{uuid.uuid4().hex}", forwarded_for)

        answers = []
        threads = [threading.Thread(target=lambda source=source, forwarded=forwarded: answers.append(junk(source, forwarded)))
                   for source, forwarded in [("127.0.0.1", "192.0.2.1")] * 2 + [("127.0.0.5", "192.0.2.50"), ("127.0.0.5", "192.0.2.51")]]
        busy = (503, b"service unavailable: access tokens cannot be checked now\n")
        with introspector.holding_junk(threads, under_way=4):
            # Through the proxy: the client is the rightmost address it did not write itself.
            assert junk("127.0.0.1", "198.51.100.7, 192.0.2.1") == busy
            # Not through a trusted proxy: the header is the client's, and not read.
            assert junk("127.0.0.5", "192.0.2.52") == busy
            assert request_from("127.0.0.1", url, introspector.issue(provider.issuer, url), "192.0.2.2")[0] == 200
        for thread in threads:
            thread.join()
        assert sorted(status for status, _ in answers) == [401] * 4
        log = log_path.read_text()
        assert 'peer=192.0.2.1 reason="2 introspections from this client are under way or waiting"' in log, log
        assert 'peer=127.0.0.5 reason="2 introspections from this client are under way or waiting"' in log, log


def test_an_active_answer_is_cached_until_exp_and_longer_than_a_minute():
    with introspected_site(authorization_extra="leeway_secs = 0\n") as (introspector, provider, url, log_path):
        started = time.time()
        lasting = introspector.issue(provider.issuer, url)
        short = introspector.issue(provider.issuer, url, exp=int(started) + 3)
        assert [post(url, lasting).status_code, post(url, short).status_code, post(url, short).status_code] == [200, 200, 200]
        assert (introspector.asked[lasting], introspector.asked[short]) == (1, 1)
        time.sleep(max(0, int(started) + 4.2 - time.time()))  # exp is in whole seconds
        answer = post(url, short)
        assert (answer.status_code, answer.text) == (401, "unauthorized: the access token is not valid\n")
        assert introspector.asked[short] == 2
        assert 'reason="invalid token: it has expired"' in log_path.read_text()
        # The active answer outlives the minute it was once held at most.
        time.sleep(max(0, started + 62 - time.time()))
        assert post(url, lasting).status_code == 200
        assert introspector.asked[lasting] == 1


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


def test_a_rotated_key_waits_for_the_fetch_under_way_and_a_background_fetch_is_applied():
    keys, delay = {}, {"now": 0.0}

    def key_set(_handler, _form):
        time.sleep(delay["now"])
        return 200, keys["set"]

    jwks = Endpoint(key_set)
    try:
        with site(authorization_extra=f'jwks_uri = "{jwks.url}/jwks"\njwks_max_age_secs = 1\n') as (provider, url, _, log_path):
            first = httpx2.get(f"{provider.issuer}/jwks", timeout=10).json()["keys"]
            second_file = provider.make_key("second")
            second = [{name: value for name, value in key.items() if name != "d"} for key in json.loads(second_file.read_text())["keys"]]
            keys["set"] = {"keys": first}
            old, rotated = provider.token("acme-client"), provider.forge("valid", keys=second_file)
            assert post(url, old).status_code == 200
            assert jwks.asked["/jwks"] == 1
            # The issuer rotates; its key set endpoint is slow.
            keys["set"], delay["now"] = {"keys": first + second}, 3.0
            time.sleep(1.2)  # the keys held are stale: the next request starts a background fetch
            assert post(url, old).status_code == 200
            time.sleep(0.2)
            # The rotated key is not held: its request waits for the fetch under way.
            started = time.monotonic()
            assert post(url, rotated).status_code == 200
            assert 2 < time.monotonic() - started < 5
            assert jwks.asked["/jwks"] == 2
            # The issuer withdraws the first key: the background fetch's result counts.
            keys["set"], delay["now"] = {"keys": second}, 0.0
            time.sleep(1.2)
            assert post(url, old).status_code == 200  # held, stale: fetched again in the background
            # Once the background fetch is in (the requests meanwhile start no other within a second).
            deadline = time.monotonic() + 5
            while (answer := post(url, old)).status_code == 200 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert (answer.status_code, answer.text) == (401, "unauthorized: the access token is not valid\n")
            assert "it is signed by a key the issuer does not publish" in log_path.read_text()
            assert post(url, rotated).status_code == 200
    finally:
        jwks.close()


def test_the_leeway_and_the_refresh_interval_are_bounded(tmp_path):
    for setting, error in (("leeway_secs = 301", "authorization.leeway_secs must be at most 300"),
                           ("jwks_min_refresh_secs = 0", "authorization.jwks_min_refresh_secs must be at least 1")):
        config = tmp_path / "prompt-host.toml"
        config.write_text(f'[authorization]\nresource = "http://127.0.0.1:1/mcp"\nissuer = "http://127.0.0.1:2"\n{setting}\n')
        run = subprocess.run([BINARY, "serve", "--config", str(config), "--http", "127.0.0.1:0", "--cache-dir", str(tmp_path / "cache")],
                             stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
        assert run.returncode != 0
        assert run.stdout == ""
        assert error in run.stderr, run.stderr


def test_a_refused_algorithm_is_logged_cut_and_escaped():
    def b64(value) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    with site() as (_, url, _, log_path):
        # ESC and U+202E (right-to-left override) within the 256 bytes kept.
        token = f"{b64({'alg': 'A' * 10 + chr(27) + chr(0x202E) + 'A' * 3000, 'typ': 'at+jwt'})}.{b64({})}.c2ln"
        answer = post(url, token)
        assert (answer.status_code, answer.text) == (401, "unauthorized: the access token is not valid\n")
        log = log_path.read_text()
        # 10 + 1 + 3 + 242 bytes, each control escaped (twice: in the reason, then in the log line).
        kept = "A" * 10 + "\\\\u{1b}\\\\u{202e}" + "A" * 242
        assert 'reason="invalid token: its algorithm \\"' + kept + '\\" is not accepted' in log, log
        assert "A" * 243 not in log and chr(27) not in log and chr(0x202E) not in log


def test_tokens_naming_an_unknown_key_wait_for_a_slow_key_set_only_a_few_at_a_time_and_not_long():
    # Issue "Hardening, round 3", item 6: a JWT naming an unknown key id held
    # its connection up to 10 s while the key set endpoint was slow, as many
    # as a client sent.
    slow = {"on": False}
    keys = {}

    def key_set(_handler, _form):
        if slow["on"]:
            time.sleep(8)
        return 200, keys["set"]

    jwks = Endpoint(key_set)
    try:
        with site(authorization_extra=f'jwks_uri = "{jwks.url}/jwks"\n') as (provider, url, _, log_path):
            keys["set"] = httpx2.get(f"{provider.issuer}/jwks", timeout=10).json()
            assert post(url, provider.token("acme-client")).status_code == 200
            stranger = provider.forge("valid", provider.make_key("stranger"))
            slow["on"] = True
            time.sleep(1.1)  # a fetch is due again
            answers, took = [], []

            def unknown_key():
                started = time.monotonic()
                answers.append(request_from("127.0.0.9", url, stranger))
                took.append(time.monotonic() - started)

            run_all([threading.Thread(target=unknown_key) for _ in range(6)])
            statuses = sorted(status for status, _ in answers)
            # Two wait (at most 5 s, then 503: the keys did not come), four
            # are refused at once; /healthz was never held up.
            assert statuses == [503] * 6, answers
            # (Bounds with room for a loaded machine: "at once" is well under the 5 s wait.)
            assert max(took) < 7.5, took
            assert sum(1 for spent in took if spent < 2.5) == 4, took
            log = log_path.read_text()
            assert "2 requests from this client (or 8 from its prefix) already wait for the issuer's keys" in log, log
            assert "its key is not held, and the issuer's keys did not come within 5 s" in log, log
            parts = urlsplit(url)
            health = http.client.HTTPConnection(parts.hostname, parts.port, timeout=2, source_address=("127.0.0.10", 0))
            health.request("GET", "/healthz", headers={"Host": parts.netloc})
            assert health.getresponse().status == 200
            health.close()
    finally:
        jwks.close()
