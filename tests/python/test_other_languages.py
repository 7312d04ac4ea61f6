"""Packs written in JavaScript (jco componentize, on SpiderMonkey and on
QuickJS) and Python (componentize-py)
against the same WIT as the Rust packs, loaded by the host under its default
limits and fetched through the official Python SDK client. tests/build-packs
builds them."""

import shutil
import tempfile
from pathlib import Path

import pytest

from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from server import BINARY, ROOT

COMPONENTS = ROOT / "plugins/target/components"
CODE = "def hello():\n    print('world')"


@pytest.mark.anyio
@pytest.mark.parametrize("pack", ["js_code_review", "js_qjs_code_review", "py_code_review"])
async def test_a_pack_in_another_language_answers_like_the_rust_one(pack):
    with tempfile.TemporaryDirectory() as work:
        plugins = Path(work) / "plugins"
        plugins.mkdir()
        shutil.copyfile(COMPONENTS / f"{pack}.wasm", plugins / f"{pack}.wasm")
        server = StdioServerParameters(
            command=BINARY, args=["serve", "--plugins", str(plugins), "--cache-dir", str(Path(work) / "cache")]
        )
        async with Client(server, read_timeout_seconds=120) as client:
            listed = (await client.list_prompts()).prompts
            assert [(p.name, p.title, p.description) for p in listed] == [
                ("code_review", "Request Code Review", "Asks the LLM to analyze code quality and suggest improvements")
            ]
            assert [(a.name, a.description, a.required) for a in listed[0].arguments] == [
                ("code", "The code to review", True)
            ]
            result = await client.get_prompt("code_review", {"code": CODE})
            assert result.description == "Code review prompt"
            assert [(m.role, m.content.type, m.content.text) for m in result.messages] == [
                ("user", "text", "Please review this Python code:\n" + CODE)
            ]
            with pytest.raises(MCPError) as raised:
                await client.get_prompt("code_review")
            assert raised.value.error.message == "prompt 'code_review' is missing required arguments: code"
