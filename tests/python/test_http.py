"""End-to-end over Streamable HTTP: the official MCP Python SDK client, and
the transport's security checks with a plain HTTP client."""

import anyio
import httpx2
import pytest

from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import PromptReference

from server import http_server, install, on_stream_opened

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "prompt-host-security-tests", "version": "1.0.0"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def all_names(client) -> list[str]:
    names, cursor = [], None
    while True:
        page = await client.list_prompts(cursor=cursor)
        names += [prompt.name for prompt in page.prompts]
        cursor = page.next_cursor
        if cursor is None:
            return names


@pytest.mark.anyio
async def test_the_sdk_client_in_its_default_mode_lists_gets_and_completes():
    with http_server(["code_review", "dev_assistant"], "--page-size", "2") as (url, _):
        async with Client(url) as client:
            assert await all_names(client) == ["code_review", "git-commit", "explain-code", "debug-error"]
            result = await client.get_prompt("code_review", {"code": "def hello():\n    print('world')"})
            assert result.messages[0].content.text == "Please review this Python code:\ndef hello():\n    print('world')"
            completion = await client.complete(
                PromptReference(type="ref/prompt", name="explain-code"), {"name": "language", "value": "ty"}
            )
            assert completion.completion.values == ["typescript"]
            with pytest.raises(MCPError) as raised:
                await client.get_prompt("no-such-prompt")
            assert (raised.value.error.code, raised.value.error.message) == (-32602, "unknown prompt 'no-such-prompt'")


@pytest.mark.anyio
async def test_two_sessions_hear_that_a_pack_was_added():
    with http_server(["code_review"]) as (url, plugin_dir):
        heard = [anyio.Event(), anyio.Event()]

        def handler(index):
            async def on_message(message):
                if getattr(message, "method", None) == "notifications/prompts/list_changed":
                    heard[index].set()
            return on_message

        opened = [anyio.Event(), anyio.Event()]
        http_a, http_b = create_mcp_http_client(), create_mcp_http_client()
        for http, event in ((http_a, opened[0]), (http_b, opened[1])):
            http.event_hooks["response"].append(on_stream_opened(event))
        async with http_a, http_b, streamable_http_client(url, http_client=http_a) as (read_a, write_a), \
                streamable_http_client(url, http_client=http_b) as (read_b, write_b):
            async with ClientSession(read_a, write_a, message_handler=handler(0)) as a, \
                    ClientSession(read_b, write_b, message_handler=handler(1)) as b:
                await a.initialize()
                await b.initialize()
                assert [p.name for p in (await a.list_prompts()).prompts] == ["code_review"]
                # Both sessions' streams are open before the change.
                with anyio.fail_after(20):
                    await opened[0].wait()
                    await opened[1].wait()
                install(plugin_dir, "media_prompts")
                with anyio.fail_after(20):
                    await heard[0].wait()
                    await heard[1].wait()
                assert [p.name for p in (await b.list_prompts()).prompts] == [
                    "code_review", "describe-image", "transcribe-audio"
                ]


def post(url, body=INITIALIZE, **headers):
    return httpx2.post(url, json=body, headers={**HEADERS, **headers}, timeout=10)


def test_origin_and_host_that_are_not_allowed_get_403():
    with http_server(["code_review"], "--allow-origin", "https://app.example.com") as (url, _):
        assert post(url).status_code == 200
        assert post(url, Origin="http://evil.example.com").status_code == 403
        assert post(url, Origin="https://app.example.com").status_code == 200
        assert post(url, Host="evil.example.com").status_code == 403


def test_a_missing_or_wrong_token_gets_401(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token\n")
    with http_server(["code_review"], "--auth-token-file", str(token_file)) as (url, _):
        missing = post(url)
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"] == "Bearer"
        assert post(url, Authorization="Bearer wrong-token").status_code == 401
        assert post(url, Authorization="Bearer s3cret-token").status_code == 200
        assert post(url, Authorization="bearer s3cret-token").status_code == 200  # the scheme is case-insensitive


@pytest.mark.anyio
async def test_the_sdk_client_ends_its_session_without_a_warning(caplog):
    with http_server(["code_review"]) as (url, _):
        async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            assert [p.name for p in (await session.list_prompts()).prompts] == ["code_review"]
    # The SDK DELETEs the session on close and warns unless it gets 200 or 204.
    assert "Session termination failed" not in caplog.text, caplog.text


@pytest.mark.anyio
async def test_the_sdk_client_connects_with_a_bearer_token(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token\n")
    with http_server(["code_review"], "--auth-token-file", str(token_file)) as (url, _):
        # As docs/http.md shows: the token rides on the SDK's HTTP client handed to the transport.
        async with create_mcp_http_client(headers={"Authorization": "Bearer s3cret-token"}) as http, \
                streamable_http_client(url, http_client=http) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            assert [p.name for p in (await session.list_prompts()).prompts] == ["code_review"]


@pytest.mark.anyio
async def test_a_client_made_as_the_readme_says_still_hears_list_changed_after_the_keep_alive(tmp_path):
    # docs/http.md's way (the SDK's own HTTP client, with the token): its read
    # timeout outlasts the 15 s between keep-alives on an idle event stream,
    # so a change 21 s after the session opened still reaches it.
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token\n")
    with http_server(["code_review"], "--auth-token-file", str(token_file)) as (url, plugin_dir):
        heard = anyio.Event()

        async def on_message(message):
            if getattr(message, "method", None) == "notifications/prompts/list_changed":
                heard.set()

        async with create_mcp_http_client(headers={"Authorization": "Bearer s3cret-token"}) as http, \
                streamable_http_client(url, http_client=http) as (read, write), \
                ClientSession(read, write, message_handler=on_message) as session:
            await session.initialize()
            await anyio.sleep(21)
            install(plugin_dir, "media_prompts")
            with anyio.fail_after(10):
                await heard.wait()
            assert len((await session.list_prompts()).prompts) == 3


def test_a_body_over_the_cap_gets_413():
    with http_server(["code_review"], "--max-request-kib", "1") as (url, _):
        big = {**INITIALIZE, "params": {**INITIALIZE["params"], "padding": "x" * 4096}}
        assert post(url, big).status_code == 413
        assert post(url).status_code == 200


def test_an_unknown_session_gets_404_and_another_path_404():
    with http_server(["code_review"]) as (url, _):
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        assert post(url, ping, **{"Mcp-Session-Id": "no-such-session", "MCP-Protocol-Version": "2025-11-25"}).status_code == 404
        assert post(url.replace("/mcp", "/elsewhere")).status_code == 404


@pytest.mark.anyio
async def test_the_stateless_revision_listens_for_prompt_list_changes():
    with http_server(["code_review"]) as (url, plugin_dir):
        async with Client(url) as client:
            assert client.session.protocol_version == "2026-07-28"
            assert await all_names(client) == ["code_review"]
            async with client.listen(prompts_list_changed=True) as subscription:
                assert subscription.honored.prompts_list_changed is True
                install(plugin_dir, "project_insights")
                with anyio.fail_after(20):
                    event = await subscription.__anext__()
                assert type(event).__name__ == "PromptsListChanged"
            assert await all_names(client) == ["code_review", "analyze-project"]
