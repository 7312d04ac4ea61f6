"""End-to-end: the official MCP Python SDK client drives prompt-host over
stdio, serving the example packs bundled into the binary."""

import base64
import os
import re
from pathlib import Path

import pytest

from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp.types import PromptReference

ROOT = Path(__file__).resolve().parents[2]
BINARY = os.environ.get("PROMPT_HOST_BIN", str(ROOT / "target/debug/prompt-host"))
SERVER = StdioServerParameters(command=BINARY, args=["serve", "--page-size", "2"])


def asset(name: str) -> str:
    return base64.b64encode((ROOT / "plugins/media-prompts/assets" / name).read_bytes()).decode()


@pytest.fixture
async def client():
    async with Client(SERVER) as client:
        yield client


@pytest.mark.anyio
async def test_every_page_lists_the_bundled_prompts_in_order(client):
    pages, cursor = [], None
    while True:
        page = await client.list_prompts(cursor=cursor)
        pages.append([prompt.name for prompt in page.prompts])
        cursor = page.next_cursor
        if cursor is None:
            break
    assert pages == [
        ["code_review", "git-commit"],
        ["explain-code", "debug-error"],
        ["describe-image", "transcribe-audio"],
        ["analyze-project"],
    ]


@pytest.mark.anyio
async def test_code_review_replies_exactly_as_in_the_specification(client):
    result = await client.get_prompt("code_review", {"code": "def hello():\n    print('world')"})
    assert result.description == "Code review prompt"
    assert len(result.messages) == 1
    message = result.messages[0]
    assert message.role == "user"
    assert message.content.type == "text"
    assert message.content.text == "Please review this Python code:\ndef hello():\n    print('world')"


@pytest.mark.anyio
async def test_an_image_prompt_carries_the_packs_png(client):
    result = await client.get_prompt("describe-image", {"audience": "long-description"})
    image, text = result.messages
    assert (image.content.type, image.content.mime_type, image.content.data) == ("image", "image/png", asset("chart.png"))
    assert text.content.text == "Write a long-description description of the image above."


@pytest.mark.anyio
async def test_typed_arguments_reach_the_client_as_a_json_schema_in_meta(client):
    # The bundled analyze-project declares typed arguments (WIT 0.3).
    prompts, cursor = [], None
    while True:
        page = await client.list_prompts(cursor=cursor)
        prompts.extend(page.prompts)
        cursor = page.next_cursor
        if cursor is None:
            break
    analyze = next(prompt for prompt in prompts if prompt.name == "analyze-project")
    schema = analyze.meta["prompt-host/arguments"]
    file_uri = dict(schema["properties"]["fileUri"])
    pattern = file_uri.pop("pattern")
    assert {**schema, "properties": {**schema["properties"], "fileUri": file_uri}} == {
        "type": "object",
        "properties": {
            "timeframe": {"type": "string", "enum": ["15m", "1h", "6h", "24h", "7d"]},
            "fileUri": {"type": "string", "examples": ["file:///src/app.py"]},
        },
        "required": ["timeframe", "fileUri"],
    }
    # The URI pattern is the host's own check, read by Python's re as
    # python-jsonschema reads it.
    values = ["file:///src/app.py", "FILE:///src/app.py", "file:", "https://example.com/", "file:///a b", "file:///a\u200bb", " file:///a"]
    assert [(value, re.search(pattern, value) is not None) for value in values] == [
        ("file:///src/app.py", True),
        ("FILE:///src/app.py", True),
        ("file:", False),
        ("https://example.com/", False),
        ("file:///a b", False),
        ("file:///a\u200bb", False),
        (" file:///a", False),
    ]
    assert analyze.arguments[0].description == "Time period to analyze logs (one of: 15m, 1h, 6h, 24h, 7d)"


@pytest.mark.anyio
async def test_an_embedded_resource_arrives_whole(client):
    result = await client.get_prompt("analyze-project", {"timeframe": "7d", "fileUri": "file:///srv/app.py"})
    embedded = result.messages[3].content
    assert embedded.type == "resource"
    assert str(embedded.resource.uri) == "prompt-pack://project-insights/checklist.md"
    assert embedded.resource.mime_type == "text/markdown"
    assert embedded.resource.text.startswith("# Project analysis checklist\n")


@pytest.mark.anyio
async def test_an_argument_completes_from_the_owning_pack(client):
    result = await client.complete(PromptReference(type="ref/prompt", name="explain-code"), {"name": "language", "value": "s"})
    assert result.completion.values == ["scala", "sql", "swift"]
    assert result.completion.total == 3
    assert result.completion.has_more is False


@pytest.mark.anyio
async def test_an_unknown_prompt_is_invalid_params(client):
    with pytest.raises(MCPError) as raised:
        await client.get_prompt("no-such-prompt")
    assert raised.value.error.code == -32602
    assert raised.value.error.message == "unknown prompt 'no-such-prompt'"
