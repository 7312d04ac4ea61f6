"""Replicas behind a real nginx, restarted one at a time under load.

Three `prompt-host serve --http` replicas serve one plugin directory on
loopback, sharing one request-state key; Debian's nginx, started here with
docs/deploy/nginx.conf (the file docs/deploy.md shows, only the addresses
and the port replaced: plain round robin), is in front. Clients of the
official MCP Python SDK, of 2026-07-28 and of 2025-11-25 (a session), page
through prompts/list and call prompts/get without pause while each replica
in turn gets SIGTERM and is started again. nginx's access log (JSON, one
line a request, with the replica that answered) tells which replica
answered what."""

import json
from collections import Counter
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import hashlib
import secrets

import anyio
import httpx2
import pytest

from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client

from server import BUILT, ROOT, Replica

NGINX_CONF = ROOT / "docs/deploy/nginx.conf"
PLUGINS = ["code_review", "dev_assistant"]
NAMES = ["code_review", "git-commit", "explain-code", "debug-error"]
CODE = "def hello():\n    print('world')"
REVIEW = f"Please review this Python code:\n{CODE}"

# What the test adds around the tested file: a main configuration that keeps
# everything nginx writes in the test's directory, and an access log in JSON
# naming the replica (or replicas, when nginx tried the next one) each request
# went to.
NGINX_MAIN = """\
daemon off;
worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/error.log notice;
events {{ worker_connections 512; }}
http {{
    log_format replicas escape=json
        '{{"upstream":"$upstream_addr","upstream_status":"$upstream_status","status":"$status",'
        '"method":"$request_method","protocol":"$http_mcp_protocol_version","session":"$http_mcp_session_id",'
        '"body":"$request_body"}}';
    access_log {work}/access.log replicas;
    client_body_temp_path {work}/client_body;
    proxy_temp_path {work}/proxy;
    fastcgi_temp_path {work}/fastcgi;
    uwsgi_temp_path {work}/uwsgi;
    scgi_temp_path {work}/scgi;
    include {work}/prompt-host.conf;
}}
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def nginx_config(listen: int, replicas: list[int]) -> str:
    """docs/deploy/nginx.conf with the test's port and replicas' addresses."""
    text = NGINX_CONF.read_text()
    for pattern, replacement, count in [
        (r"listen 8080;", f"listen 127.0.0.1:{listen};", 1),
        *((rf"server 127\.0\.0\.1:808{index + 1};", f"server 127.0.0.1:{port};", 1)
          for index, port in enumerate(replicas)),
    ]:
        text, replaced = re.subn(pattern, replacement, text)
        assert replaced == count, f"{NGINX_CONF} no longer says {pattern!r} {count} times"
    return text


@dataclass
class Deployment:
    url: str
    replicas: list[Replica]
    addresses: list[str]
    access_log: Path

    def requests(self, start: int = 0) -> list[dict]:
        """The requests nginx answered, from the `start`th on, each with the
        replica that answered it (the last nginx tried)."""
        text = self.access_log.read_text()
        # nginx may be writing a line as it is read: only whole lines count.
        lines = text[: text.rfind("\n") + 1].splitlines()[start:]
        requests = [json.loads(line) for line in lines]
        for request in requests:
            request["answered_by"] = request["upstream"].split(", ")[-1]
            request["body"] = json.loads(request["body"]) if request["body"] else None
        return requests

    def count(self) -> int:
        # Whole lines only, as `requests` reads them.
        return self.access_log.read_text().count("\n")


# What every replica shares: the request-state key, which seals the
# `requestState` of input-required prompts and the session ids.
CONFIG = """\
[server]
request_state_key_file = "state.key"
"""

# Named tokens (docs/http.md), for the test of a session id replayed by
# another token's holder.
TOKENS = {name: f"ph_{name}_{secrets.token_urlsafe(24)}" for name in ["alice", "bob"]}


@contextmanager
def nginx_in_front(work: Path, ports: list[int]):
    """Debian's nginx with docs/deploy/nginx.conf in front of the replicas
    on `ports`, its files in `work`: yields its URL and its access log."""
    assert shutil.which("nginx"), "nginx is not installed: run tests/setup"
    os.chmod(work, 0o755)  # nginx's workers run as another user
    listen = free_port()
    (work / "prompt-host.conf").write_text(nginx_config(listen, ports))
    (work / "nginx.conf").write_text(NGINX_MAIN.format(work=work))
    (work / "access.log").touch()
    nginx_command = ["nginx", "-p", str(work), "-c", str(work / "nginx.conf"), "-e", str(work / "error.log")]
    checked = subprocess.run([*nginx_command, "-t"], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    nginx = subprocess.Popen(nginx_command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", listen)) == 0:
                    break
            assert nginx.poll() is None, (work / "error.log").read_text()
            time.sleep(0.05)
        yield f"http://127.0.0.1:{listen}/mcp", work / "access.log"
    finally:
        nginx.terminate()
        nginx.wait(timeout=10)


@contextmanager
def replicas_behind_nginx(*extra: str):
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        plugin_dir = work / "plugins"
        plugin_dir.mkdir()
        for plugin in PLUGINS:
            shutil.copyfile(BUILT / f"{plugin}.wasm", plugin_dir / f"{plugin}.wasm")
        (work / "state.key").write_text(secrets.token_hex(32))
        (work / "prompt-host.toml").write_text(CONFIG)
        ports = [free_port(), free_port(), free_port()]
        replicas = []
        for index, port in enumerate(ports):
            (work / f"replica{index}").mkdir()
            replicas.append(Replica(plugin_dir, work / f"replica{index}", f"127.0.0.1:{port}", "--page-size", "1",
                                    "--config", str(work / "prompt-host.toml"), *extra))
        try:
            for replica in replicas:
                replica.start()
            with nginx_in_front(work, ports) as (url, access_log):
                yield Deployment(url, replicas, [f"127.0.0.1:{port}" for port in ports], access_log)
        finally:
            for replica in replicas:
                replica.close()


@dataclass
class Tally:
    """Every request a client made through nginx, and every one that failed
    (an exception, or an answer other than the expected one)."""
    requests: int = 0
    failures: list[str] = field(default_factory=list)

    async def call(self, what: str, request):
        self.requests += 1
        try:
            return await request
        except Exception as error:
            self.failures.append(f"{what}: {error!r}")
            return None


async def keep_listing(url: str, tally: Tally, stop: anyio.Event) -> None:
    """Pages through prompts/list, one prompt a page, over and over."""
    # No client-side cache: every page is a request.
    async with Client(url, cache=None) as client:
        assert client.session.protocol_version == "2026-07-28"
        while not stop.is_set():
            names, cursor = [], None
            while True:
                page = await tally.call("prompts/list", client.list_prompts(cursor=cursor))
                if page is None:
                    break
                names += [prompt.name for prompt in page.prompts]
                cursor = page.next_cursor
                if cursor is None:
                    if names != NAMES:
                        tally.failures.append(f"prompts/list: the pages listed {names}")
                    break


async def keep_getting(url: str, tally: Tally, stop: anyio.Event) -> None:
    async with Client(url, cache=None) as client:
        while not stop.is_set():
            result = await tally.call("prompts/get", client.get_prompt("code_review", {"code": CODE}))
            if result is not None and result.messages[0].content.text != REVIEW:
                tally.failures.append(f"prompts/get: answered {result.messages[0].content.text!r}")


async def keep_getting_in_a_session(url: str, tally: Tally, stop: anyio.Event) -> None:
    """A client of 2025-11-25: one session, opened once, through every restart."""
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        assert (await session.initialize()).protocol_version == "2025-11-25"
        while not stop.is_set():
            result = await tally.call("prompts/get in a session", session.get_prompt("code_review", {"code": CODE}))
            if result is not None and result.messages[0].content.text != REVIEW:
                tally.failures.append(f"prompts/get in a session: answered {result.messages[0].content.text!r}")


async def answered_by(deployment: Deployment, address: str, since: int, count: int) -> None:
    """Waits until `address` has answered `count` requests logged after the `since`th."""
    while sum(r["answered_by"] == address for r in deployment.requests(since)) < count:
        await anyio.sleep(0.05)


@pytest.mark.anyio
async def test_rolling_restarts_behind_nginx_fail_no_request_and_cursors_cross_replicas():
    with replicas_behind_nginx() as deployment:
        tally, stop = Tally(), anyio.Event()
        first_cursor = None
        with anyio.fail_after(180):
            async with Client(deployment.url, cache=None) as client:
                first_cursor = (await client.list_prompts()).next_cursor
            async with anyio.create_task_group() as clients:
                clients.start_soon(keep_listing, deployment.url, tally, stop)
                clients.start_soon(keep_getting, deployment.url, tally, stop)
                clients.start_soon(keep_getting_in_a_session, deployment.url, tally, stop)
                for address in deployment.addresses:
                    await answered_by(deployment, address, 0, 20)
                for replica, address in zip(deployment.replicas, deployment.addresses):
                    requests_before = tally.requests
                    exit_code = await anyio.to_thread.run_sync(replica.stop)
                    assert exit_code == 0, replica.log_path.read_text()
                    stopped_at = deployment.count()
                    # The other replica answers alone meanwhile.
                    other = next(a for a in deployment.addresses if a != address)
                    await answered_by(deployment, other, stopped_at, 20)
                    await anyio.to_thread.run_sync(replica.start)
                    # Back in nginx's rotation (after nginx's fail_timeout).
                    await answered_by(deployment, address, deployment.count(), 20)
                    assert tally.requests > requests_before
                stop.set()

            # A cursor issued before both replicas restarted still reads the
            # same catalog: the version is derived from the plugins, not the
            # process.
            async with Client(deployment.url, cache=None) as client:
                second = await client.list_prompts(cursor=first_cursor)
                assert [prompt.name for prompt in second.prompts] == NAMES[1:2]

        requests = deployment.requests()
        listed = [r for r in requests if r["body"] and r["body"]["method"] == "prompts/list"]
        # A page asked with a cursor another replica issued (the listing
        # client waits for each page before it asks for the next).
        crossed = sum(1 for before, after in zip(listed, listed[1:])
                      if "cursor" in after["body"].get("params", {}) and before["answered_by"] != after["answered_by"])
        retried = [r for r in requests if ", " in r["upstream"]]
        # The session's requests went to every replica, each restarted once
        # under it: one session, never opened again.
        in_session = [r for r in requests if r["session"]]
        assert {r["answered_by"] for r in in_session} == set(deployment.addresses)
        assert sum(1 for r in requests if r["body"] and r["body"]["method"] == "initialize") == 1
        print(f"\nrequests made: {tally.requests}, failed: {len(tally.failures)}; nginx logged {len(requests)} "
              f"({len(listed)} prompts/list), of which {crossed} pages read a cursor another replica issued "
              f"and {len(retried)} were refused by a stopped replica and answered by the other")
        assert tally.failures == [], tally.failures
        # Every answer a success: 202 for the session's one notification.
        accepted = [r for r in requests if r["status"] == "202"]
        assert [r["body"]["method"] for r in accepted] == ["notifications/initialized"]
        assert [r for r in requests if r["status"] not in ("200", "202")] == []
        assert crossed > 0
        for replica in deployment.replicas:
            log = replica.log_path.read_text()
            # Each replica was stopped by SIGTERM once and stopped cleanly.
            assert log.count("SIGTERM: stopping") == 1, log
            assert log.count(" stopped\n") == 1, log


@pytest.mark.anyio
async def test_a_cursor_from_one_replica_is_accepted_by_another():
    with replicas_behind_nginx() as deployment:
        a, b, _ = deployment.replicas
        async with Client(a.url, cache=None) as on_a, Client(b.url, cache=None) as on_b:
            cursor = (await on_a.list_prompts()).next_cursor
            assert [p.name for p in (await on_b.list_prompts(cursor=cursor)).prompts] == NAMES[1:2]
            assert [p.name for p in (await on_a.list_prompts(cursor=cursor)).prompts] == NAMES[1:2]


def ping(address: str, session_id: str, token: str | None = None) -> httpx2.Response:
    headers = {"Accept": "application/json, text/event-stream", "Mcp-Session-Id": session_id,
               "MCP-Protocol-Version": "2025-11-25"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return httpx2.post(f"http://{address}/mcp", json={"jsonrpc": "2.0", "id": 1000, "method": "ping"},
                       headers=headers, timeout=10)


@pytest.mark.anyio
async def test_a_session_of_an_earlier_revision_is_served_by_every_replica():
    with replicas_behind_nginx() as deployment:
        async with streamable_http_client(deployment.url) as (read, write), ClientSession(read, write) as session:
            initialized = await session.initialize()
            assert initialized.protocol_version == "2025-11-25"
            for _ in range(20):
                assert [p.name for p in (await session.list_prompts()).prompts] == NAMES[:1]
                result = await session.get_prompt("code_review", {"code": CODE})
                assert result.messages[0].content.text == REVIEW
            [session_id] = {r["session"] for r in deployment.requests() if r["session"]}
            # Every replica serves it, those that never saw its initialize too.
            for address in deployment.addresses:
                answer = ping(address, session_id)
                assert answer.status_code == 200, answer.text
                answered = [json.loads(line[len("data: "):]) for line in answer.text.splitlines()
                            if line.startswith("data: {")]
                assert answered == [{"jsonrpc": "2.0", "id": 1000, "result": {}}], answer.text
            # An id altered by one character names no session anywhere.
            altered = session_id[:-1] + ("A" if session_id[-1] != "A" else "B")
            for address in deployment.addresses:
                assert ping(address, altered).status_code == 404
        expected = {
            ("POST", "initialize"): 1,
            ("POST", "notifications/initialized"): 1,
            ("POST", "prompts/list"): 20,
            ("POST", "prompts/get"): 20,
            ("GET", None): 1,  # the session's event stream
            ("DELETE", None): 1,  # the end of the session
        }
        # nginx logs a request once its answer is sent, and the event
        # stream's once it ends: both may come just after the client is done.
        deadline = time.monotonic() + 5
        while True:
            requests = deployment.requests()
            counted = Counter((r["method"], r["body"] and r["body"]["method"]) for r in requests)
            if counted == expected or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert counted == expected
        assert [r for r in requests if r["status"] not in ("200", "202")] == []
        # Round robin: the session's requests went to every replica.
        assert {r["answered_by"] for r in requests if r["session"]} == set(deployment.addresses)
        # The replica that answered the DELETE answers the ended session
        # 404; another would restore it, for the same user only, until it
        # expires (docs/security/http.md).
        [deleted_by] = {r["answered_by"] for r in requests if r["method"] == "DELETE"}
        assert ping(deleted_by, session_id).status_code == 404


@pytest.mark.anyio
async def test_a_session_id_opens_for_no_other_token_on_any_replica(tmp_path):
    tokens = tmp_path / "tokens.toml"
    tokens.write_text("".join(f'[[token]]\nname = "{name}"\nsha256 = "{hashlib.sha256(token.encode()).hexdigest()}"\n\n'
                              for name, token in TOKENS.items()))
    with replicas_behind_nginx("--auth-tokens-file", str(tokens)) as deployment:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKENS['alice']}"}) as alice, \
                streamable_http_client(deployment.url, http_client=alice) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            await session.list_prompts()
            [session_id] = {r["session"] for r in deployment.requests() if r["session"]}
            for address in deployment.addresses:
                # Its own user: served everywhere.
                assert ping(address, session_id, TOKENS["alice"]).status_code == 200
                # Another token's holder: no such session, on any replica,
                # whether it holds the session or would restore it.
                refused = ping(address, session_id, TOKENS["bob"])
                assert (refused.status_code, refused.text) == (404, "Not Found: Session not found")
        for replica in deployment.replicas:
            assert "refused a session id not given to this token's holder" in replica.log_path.read_text()


def session_post(url: str, body: dict, session: str | None = None) -> httpx2.Response:
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    if session:
        headers["Mcp-Session-Id"] = session
    return httpx2.post(url, json=body, headers=headers, timeout=10)


def answer_of(response: httpx2.Response) -> dict:
    [answer] = [json.loads(line[len("data: "):]) for line in response.text.splitlines() if line.startswith("data: {")]
    return answer


INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def open_session(url: str) -> str:
    opened = session_post(url, INITIALIZE)
    session = opened.headers["mcp-session-id"]
    assert session_post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session).status_code == 202
    return session


@contextmanager
def two_replicas(tmp_path: Path, packs: list[str], *extra: str):
    """Replicas a and b sharing one request-state key, each serving its own
    copy of its pack (`packs`, one each) with `extra`: yields their URLs and
    their plugin directories."""
    (tmp_path / "state.key").write_text(secrets.token_hex(32))
    (tmp_path / "prompt-host.toml").write_text(CONFIG)
    replicas = []
    try:
        for name, pack in zip(["a", "b"], packs):
            (tmp_path / name / "plugins").mkdir(parents=True)
            shutil.copyfile(BUILT / f"{pack}.wasm", tmp_path / name / "plugins" / f"{pack}.wasm")
            replicas.append(Replica(tmp_path / name / "plugins", tmp_path / name, "127.0.0.1:0",
                                    "--config", str(tmp_path / "prompt-host.toml"), *extra))
        yield [replica.start() for replica in replicas], [tmp_path / name / "plugins" for name in ["a", "b"]]
    finally:
        for replica in replicas:
            replica.close()


def test_a_restored_session_declares_what_its_client_was_told_not_what_the_replica_serves(tmp_path):
    # Issue "A fleet that follows its registry" (review): a restore replayed
    # the initialize against the packs the replica served then, so a
    # session told of no skills was answered skills/list on another replica.
    with two_replicas(tmp_path, ["code_review", "project_insights"]) as (urls, _):
        told_nothing, told_skills = open_session(urls[0]), open_session(urls[1])
        skills = {"jsonrpc": "2.0", "id": 5, "method": "skills/list"}
        # Opened where no pack carries a skill: no skills on the replica that has them.
        refused = answer_of(session_post(urls[1], skills, told_nothing))
        assert refused["error"]["code"] == -32601, refused
        # Opened where one does: its skills, on that replica.
        listed = answer_of(session_post(urls[1], skills, told_skills))
        assert [skill["uri"] for skill in listed["result"]["skills"]] == ["skill://analyze-project/SKILL.md"], listed
        # And restored where no pack carries one: declared, an empty list.
        listed = answer_of(session_post(urls[0], skills, told_skills))
        assert listed["result"]["skills"] == [], listed


def test_a_restore_takes_a_place_under_the_session_cap(tmp_path):
    with two_replicas(tmp_path, ["code_review", "code_review"], "--max-sessions", "1") as ((a, b), _):
        from_a, on_b = open_session(a), open_session(b)
        ping = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
        # b holds its one session, in use: no room to restore a's there.
        full = session_post(b, ping, from_a)
        assert (full.status_code, full.text) == (503, "service unavailable: the server holds its maximum of 1 sessions "
                                                      "(--max-sessions); retry later, or end a session with DELETE\n")
        assert answer_of(session_post(b, ping, on_b))["result"] == {}
        assert answer_of(session_post(a, ping, from_a))["result"] == {}


def test_a_session_whose_initialized_notification_went_to_another_replica_still_hears_list_changed(tmp_path):
    # Issue "A fleet that follows its registry" (found by tests/python/test_fleet.py):
    # under round robin the client's notifications/initialized reached
    # another replica, and the replica that opened the session never
    # started its list_changed notifier.
    with two_replicas(tmp_path, ["code_review", "code_review"]) as (urls, plugins):
        session = session_post(urls[0], INITIALIZE).headers["mcp-session-id"]
        assert session_post(urls[1], {"jsonrpc": "2.0", "method": "notifications/initialized"}, session).status_code == 202
        headers = {"Accept": "text/event-stream", "MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": session}
        with httpx2.stream("GET", urls[0], headers=headers, timeout=httpx2.Timeout(10, read=30)) as stream:
            assert stream.status_code == 200
            lines = stream.iter_lines()
            shutil.copyfile(BUILT / "dev_assistant.wasm", plugins[0] / "dev_assistant.wasm")
            # Keep-alive comments come every 15 s: a notification that never
            # comes fails the test at the first one past the deadline.
            deadline = time.monotonic() + 10
            for line in lines:
                assert time.monotonic() < deadline, "no list_changed on the replica that opened the session"
                if line.startswith("data: {"):  # past the priming event's empty data
                    assert json.loads(line[len("data: "):]) == {"jsonrpc": "2.0",
                                                                "method": "notifications/prompts/list_changed"}
                    break
