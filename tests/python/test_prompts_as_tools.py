"""Prompts for clients that only call tools (issue "Every client reaches a
pack", `[server] prompts_as_tools`): the official MCP Python SDK client, over
stdio, lists the two tools and calls them; a tool call is answered exactly as
the `prompts/list` or `prompts/get` it stands for, refusals included."""

import json
import os
import shutil
from pathlib import Path

import pytest

from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

ROOT = Path(__file__).resolve().parents[2]
BINARY = os.environ.get("PROMPT_HOST_BIN", str(ROOT / "target/debug/prompt-host"))
BUILT = ROOT / "plugins/target/wasm32-wasip2/release"


def serving(tmp_path: Path, prompts_as_tools: bool | None) -> StdioServerParameters:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    shutil.copy(BUILT / "typed_arguments.wasm", plugins / "typed_arguments.wasm")
    setting = "" if prompts_as_tools is None else f"prompts_as_tools = {str(prompts_as_tools).lower()}\n"
    config = tmp_path / "prompt-host.toml"
    config.write_text(f'[server]\nplugins = "plugins"\ncache_dir = "cache"\n{setting}')
    return StdioServerParameters(command=BINARY, args=["serve", "--config", str(config)])


@pytest.fixture
async def client(tmp_path):
    async with Client(serving(tmp_path, True)) as client:
        yield client


@pytest.mark.anyio
async def test_the_two_tools_and_get_prompts_schema_from_the_typed_arguments(client):
    assert client.server_capabilities.tools is not None
    assert client.server_capabilities.tools.list_changed is True
    tools = (await client.list_tools()).tools
    assert [tool.name for tool in tools] == ["list_prompts", "get_prompt"]
    schema = tools[1].input_schema
    assert schema["required"] == ["name"]
    # In the order prompts/list gives them.
    assert schema["properties"]["name"]["enum"] == ["report", "confirm", "announce"]
    listed = {prompt.name: prompt for prompt in (await client.list_prompts()).prompts}
    # No combinator at the top, which some model APIs refuse: each prompt's
    # arguments under `arguments`' anyOf, titled with the prompt's name.
    assert [key for key in schema if key in ("anyOf", "oneOf", "allOf")] == []
    options = schema["properties"]["arguments"]["anyOf"]
    by_prompt = {option.pop("title"): option for option in options}
    assert sorted(by_prompt) == ["announce", "confirm", "report"]
    # Each prompt's arguments are the schema prompts/list publishes for them.
    for name, prompt in listed.items():
        assert by_prompt[name] == prompt.meta["prompt-host/arguments"], name
    assert by_prompt["report"]["properties"]["tone"]["enum"] == ["formal", "casual", "friendly"]
    assert by_prompt["report"]["required"] == ["count"]


@pytest.mark.anyio
async def test_get_prompt_answers_as_prompts_get_does(client):
    expected = await client.get_prompt("report", {"count": "3", "tone": "casual"})
    # A model sends a typed argument as JSON: the integer 3.
    result = await client.call_tool("get_prompt", {"name": "report", "arguments": {"count": 3, "tone": "casual"}})
    assert result.is_error is False
    page = expected.model_dump(mode="json", by_alias=True, exclude_none=True)
    page.pop("resultType", None)
    assert result.structured_content == page
    assert [block.model_dump(mode="json", exclude_none=True) for block in result.content] == [
        message.content.model_dump(mode="json", exclude_none=True) for message in expected.messages
    ]


@pytest.mark.anyio
async def test_a_value_outside_the_choices_is_refused_exactly_as_prompts_get_refuses_it(client):
    with pytest.raises(MCPError) as by_prompt:
        await client.get_prompt("report", {"count": "3", "tone": "rude"})
    with pytest.raises(MCPError) as by_tool:
        await client.call_tool("get_prompt", {"name": "report", "arguments": {"count": 3, "tone": "rude"}})
    assert by_tool.value.error.code == by_prompt.value.error.code == -32602
    assert by_tool.value.error.message == by_prompt.value.error.message
    assert by_tool.value.error.message == "prompt 'report': argument 'tone' must be one of: formal, casual, friendly, not \"rude\""
    assert by_tool.value.error.data == by_prompt.value.error.data


@pytest.mark.anyio
async def test_list_prompts_answers_the_page_prompts_list_gives(client):
    expected = await client.list_prompts()
    result = await client.call_tool("list_prompts", {})
    page = expected.model_dump(mode="json", by_alias=True, exclude_none=True)
    page.pop("resultType", None)
    assert result.structured_content == page
    assert json.loads(result.content[0].text) == page


@pytest.mark.anyio
async def test_an_unknown_tool_or_wrong_arguments_are_refused_naming_what_was_wrong(client):
    with pytest.raises(MCPError) as raised:
        await client.call_tool("delete_everything", {})
    assert raised.value.error.code == -32602
    assert raised.value.error.message == (
        "invalid params for tools/call: unknown tool 'delete_everything': this server's tools are list_prompts and get_prompt"
    )
    with pytest.raises(MCPError) as raised:
        await client.call_tool("get_prompt", {"arguments": {}})
    assert raised.value.error.code == -32602
    assert raised.value.error.message == "invalid params for tools/call: tool 'get_prompt': name must be the prompt's name, a string"
    with pytest.raises(MCPError) as raised:
        await client.call_tool("list_prompts", {"cursor": "x", "page\n": 1})
    assert raised.value.error.code == -32602
    assert raised.value.error.message == "invalid params for tools/call: tool 'list_prompts': it takes only a cursor, not 'page\n'"
    with pytest.raises(MCPError) as raised:
        await client.call_tool("get_prompt", {"name": "no-such-prompt"})
    assert raised.value.error.code == -32602
    assert raised.value.error.message == "unknown prompt 'no-such-prompt'"


@pytest.mark.anyio
@pytest.mark.parametrize("setting", [None, False])
async def test_off_by_default_the_server_declares_no_tools(tmp_path, setting):
    async with Client(serving(tmp_path, setting)) as client:
        assert client.server_capabilities.tools is None
        # A 2026-07-28 client is told the method is not there.
        with pytest.raises(MCPError) as raised:
            await client.list_tools()
        assert raised.value.error.code == -32601


class Listening:
    """A 2026-07-28 `subscriptions/listen` for `notifications`, read as it comes."""

    def __init__(self, url: str, notifications: dict):
        from test_fair_share import META, connect, request

        body = {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
                "params": {"notifications": notifications, "_meta": META}}
        self.sock = connect(url)
        self.sock.sendall(request(url, body, None, close=False))
        self.received = b""
        while b"\r\n\r\n" not in self.received:
            chunk = self.sock.recv(4096)
            assert chunk, self.received
            self.received += chunk
        assert self.received.startswith(b"HTTP/1.1 200"), self.received

    def changes(self, count: int, seconds: float) -> list[str]:
        """The list-changed notifications the stream has carried, once
        `count` came or `seconds` passed."""
        import re
        import time

        pattern = rb'"method":"(notifications/[a-z]+/list_changed)"'
        until = time.monotonic() + seconds
        self.sock.settimeout(0.2)
        while time.monotonic() < until and len(re.findall(pattern, self.received)) < count:
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                continue
            if not chunk:
                break
            self.received += chunk
        return [method.decode() for method in re.findall(pattern, self.received)]


@pytest.mark.parametrize("asked, expected", [
    ({"promptsListChanged": True}, ["notifications/prompts/list_changed"] * 2),
    ({"toolsListChanged": True}, ["notifications/tools/list_changed"] * 2),
    ({"promptsListChanged": True, "toolsListChanged": True},
     ["notifications/prompts/list_changed", "notifications/tools/list_changed"] * 2),
])
def test_a_subscription_gets_each_change_of_the_kinds_it_asked_for_and_stays_open(tmp_path, asked, expected):
    # Review of this feature: the tools' notification sent to a subscription
    # that asked only for prompts ended it after the first change.
    from server import http_server, install

    config = tmp_path / "prompt-host.toml"
    config.write_text("[server]\nprompts_as_tools = true\n")
    with http_server(["typed_arguments"], "--config", str(config)) as (url, plugins):
        stream = Listening(url, asked)
        half = len(expected) // 2
        install(plugins, "code_review")
        assert stream.changes(half, 15) == expected[:half]
        install(plugins, "writing_assistant")
        assert stream.changes(len(expected), 15) == expected
        stream.sock.close()


@pytest.mark.parametrize("on, code", [(True, -32602), (False, -32601)])
def test_tools_call_params_rmcp_cannot_read_are_invalid_params_when_tools_are_declared(tmp_path, on, code):
    # Review of this feature: they were -32601 "method not found", with
    # tools declared.
    import subprocess

    server = serving(tmp_path, on)
    process = subprocess.Popen([server.command, *server.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": 5}},
    ]
    output, _ = process.communicate("".join(json.dumps(message) + "\n" for message in messages), timeout=30)
    answers = {answer["id"]: answer for answer in map(json.loads, output.splitlines())}
    assert answers[2]["error"]["code"] == code, answers[2]
    if on:
        assert answers[2]["error"]["message"].startswith("invalid params for tools/call: "), answers[2]
