"""docs/clients.md, run as written: the official Python and TypeScript SDK
snippets, each against the binary serving the bundled packs over stdio,
with the SDK versions pinned in tests/requirements.txt and
tests/package.json, which the page names."""

import json
import os
from pathlib import Path

from doc_runner import blocks, environment, run_document
from server import BINARY, ROOT

PAGE = (ROOT / "docs/clients.md").read_text()


def test_the_client_guide_runs_as_written(tmp_path: Path):
    env = environment(BINARY)
    # `python` is the virtual environment's, holding the pinned mcp, as the
    # page has the reader make it; `node` resolves the pinned SDK from here.
    env["PATH"] = f"{ROOT / 'tests/.venv/bin'}{os.pathsep}{env['PATH']}"
    (tmp_path / "node_modules").symlink_to(ROOT / "tests/node_modules")
    checks = run_document(PAGE, tmp_path, env)
    # Each snippet's run and its output.
    assert checks == 4
    assert (tmp_path / "client.py").exists() and (tmp_path / "client.mjs").exists()


def test_the_guide_names_the_versions_the_tests_pin():
    pinned_python = next(line for line in (ROOT / "tests/requirements.txt").read_text().splitlines()
                         if line.startswith("mcp=="))
    pinned_typescript = json.loads((ROOT / "tests/package.json").read_text())["dependencies"]["@modelcontextprotocol/sdk"]
    installs = [body for info, body in blocks(PAGE) if info == "sh no-run"]
    assert f"pip install {pinned_python}\n" in installs[1], installs
    assert installs[2] == f"npm install @modelcontextprotocol/sdk@{pinned_typescript}\n", installs
    assert f"`{pinned_python.replace('==', '` ')}" in PAGE and f"`@modelcontextprotocol/sdk` {pinned_typescript}" in PAGE
