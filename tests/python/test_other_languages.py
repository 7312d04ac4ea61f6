"""Packs written in JavaScript (jco componentize, on SpiderMonkey and on
QuickJS) and Python (componentize-py)
against the same WIT as the Rust packs, loaded by the host under its default
limits and fetched through the official Python SDK client. tests/build-packs
builds them."""

import http.server
import shutil
import tempfile
import threading
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


class Hello(http.server.BaseHTTPRequestHandler):
    """A real HTTP origin (Python's own http.server) for the JavaScript pack."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        body = b"hello from the origin"
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def loopback_origin():
    """An origin on the first free port the JavaScript pack asks for."""
    for port in range(47801, 47809):
        try:
            origin = http.server.ThreadingHTTPServer(("127.0.0.1", port), Hello)
        except OSError:
            continue
        threading.Thread(target=origin.serve_forever, daemon=True).start()
        return origin
    raise AssertionError("none of the ports 47801 to 47808 is free")


@pytest.mark.anyio
async def test_packs_in_javascript_and_python_see_what_they_are_granted_with_their_own_apis():
    origin = loopback_origin()
    port = origin.server_address[1]
    other = 47801 if port != 47801 else 47802
    try:
        with tempfile.TemporaryDirectory() as work:
            work = Path(work)
            (work / "plugins").mkdir()
            for pack in ["js_grants_fetch", "py_grants_reader"]:
                shutil.copyfile(COMPONENTS / f"{pack}.wasm", work / "plugins" / f"{pack}.wasm")
            (work / "logs").mkdir()
            (work / "logs/app.log").write_text("line 1\n")
            (work / "outside.txt").write_text("outside")
            (work / "config.toml").write_text(
                '[server]\nplugins = "plugins"\n\n'
                f'[plugins.js_grants_fetch.grants]\nhttp = ["http://127.0.0.1:{port}"]\n\n'
                f'[plugins.py_grants_reader.grants]\nhttp = ["http://127.0.0.1:{port}"]\n'
                'folders = { logs = "logs" }\nenv = { GREETING = "hello" }\n'
            )
            server = StdioServerParameters(
                command=BINARY, args=["serve", "--config", str(work / "config.toml"), "--cache-dir", str(work / "cache")]
            )
            async with Client(server, read_timeout_seconds=120) as client:
                async def text(prompt, arguments):
                    return (await client.get_prompt(prompt, arguments)).messages[0].content.text

                # JavaScript's fetch() reaches the origin granted, and nothing else.
                assert await text("fetch", {"url": f"http://127.0.0.1:{port}/hello"}) == "status 200: hello from the origin"
                with pytest.raises(MCPError) as raised:
                    await client.get_prompt("fetch", {"url": f"http://127.0.0.1:{other}/hello"})
                assert raised.value.error.code == -32603
                assert raised.value.error.message == (
                    f"plugin 'js_grants_fetch' called http://127.0.0.1:{other}/hello, which no origin granted to it admits: "
                    f'grant it with http = ["http://127.0.0.1:{other}"] in [plugins.js_grants_fetch.grants]'
                )
                # Python's open() reads the folder granted, and nothing out of it.
                assert await text("read", {"path": "/logs/app.log"}) == "read: line 1\n"
                assert await text("read", {"path": "/logs/../outside.txt"}) == "error: PermissionError"
                assert await text("read", {"path": "/etc/passwd"}) == "error: FileNotFoundError"
                # And its wasi:http reaches the origin granted, and nothing else.
                assert await text("fetch-path", {"port": str(port), "path": "/hello"}) == "status 200: hello from the origin"
                with pytest.raises(MCPError) as raised:
                    await client.get_prompt("fetch-path", {"port": str(other), "path": "/hello"})
                assert raised.value.error.message == (
                    f"plugin 'py_grants_reader' called http://127.0.0.1:{other}/hello, which no origin granted to it admits: "
                    f'grant it with http = ["http://127.0.0.1:{other}"] in [plugins.py_grants_reader.grants]'
                )
                # os.environ holds the value granted.
                assert await text("env", {"name": "GREETING"}) == "GREETING=hello"
                assert await text("env", {"name": "PATH"}) == "PATH=(not set)"
    finally:
        origin.shutdown()


def test_the_python_pack_that_reads_a_granted_folder_runs_as_written(tmp_path):
    """docs/other-languages.md, "A Python pack that reads a granted folder",
    run as written: the template API's wants, a prompt in code that reads
    the granted folder with open(), and its reply embedding the lines."""
    import os

    from doc_runner import environment, run_document

    env = environment(BINARY)
    env["PATH"] = f"{ROOT / 'tests/.venv/bin'}{os.pathsep}{env['PATH']}"
    checks = run_document((ROOT / "docs/other-languages.md").read_text(), tmp_path, env)
    # new, the build, get and its output.
    assert checks == 4


def test_inspect_tells_a_long_compile_and_a_toolchains_own_exports():
    """A JavaScript pack on SpiderMonkey compiles for seconds (about 9 to
    14 s on a 2-core machine): the log says so while it runs, every 5 s, not
    only at its start and end. A Python pack exports componentize-py's
    build-time `exports` interface, which the host never calls: inspect
    lists it apart from the contract's exports."""
    import re
    import subprocess

    from doc_runner import environment

    env = environment(BINARY)
    env["RUST_LOG"] = "info"
    compiled = subprocess.run([BINARY, "inspect", "--no-cache", str(COMPONENTS / "js_code_review.wasm")], env=env,
                              capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr
    assert re.search(r"INFO prompt_host::loader: still compiling js_code_review: 5\.\d s so far…", compiled.stderr), \
        compiled.stderr
    inspected = subprocess.run([BINARY, "inspect", str(COMPONENTS / "py_code_review.wasm")], env=env,
                               capture_output=True, text=True)
    assert inspected.returncode == 0, inspected.stderr
    assert "\n  exports   prompt-host:prompts/prompt-provider@0.1.0\n" in inspected.stdout, inspected.stdout
    assert "\n  ignored   exports (exported, never called: not in the WIT contract)\n" in inspected.stdout, inspected.stdout
