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
    by_prompt = {option["properties"]["name"]["const"]: option["properties"]["arguments"] for option in schema["anyOf"]}
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
    assert result.structured_content == expected.model_dump(mode="json", by_alias=True, exclude_none=True)
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
