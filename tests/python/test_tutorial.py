"""docs/tutorial.md, run as written: each command, file and output in it."""

import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from doc_runner import blocks, environment, run_document
from server import BINARY, ROOT

TUTORIAL = (ROOT / "docs/tutorial.md").read_text()


# The same pack, built in each language by the tutorial.
BUILDS = {
    "rust": "release_notes/target/wasm32-wasip2/release/release_notes.wasm",
    "js": "release_notes_js/release_notes.wasm",
    "python": "release_notes_py/release_notes.wasm",
}

# What the three are asked, as a client would ask: each call's arguments
# for `prompt-host`, after the file.
CALLS = [
    ["get", "release-notes", "version=2.1.0", "changes=Faster start", "audience=developers"],
    ["get", "release-notes", "version=2.1.0", "--answer", "changes=Faster start"],
    ["get", "announce", "version=2.1.0", "highlight=Smaller"],
    ["get", "release-notes", "version=next", "changes=Faster start"],
    ["get", "announce", "version=2.1.0"],
    ["complete", "release-notes", "audience", "d"],
    ["complete", "release-notes", "changes", "F"],
    ["get", "next-version", "version=2.1.7", "change=breaking"],
    ["get", "next-version", "version=2.1.7"],
    ["complete", "next-version", "change", "f"],
]


def answers(wasm: Path, env: dict[str, str]) -> list:
    """What the pack says of itself and its prompts, and each call's outcome."""
    inspected = subprocess.run([BINARY, "inspect", "--json", str(wasm)], env=env, capture_output=True, text=True)
    assert inspected.returncode == 0, inspected.stdout + inspected.stderr
    report = json.loads(inspected.stdout)
    outcomes = [(report["pack"], report["prompts"], report["problems"], report["skills"])]
    for call in CALLS:
        ran = subprocess.run([BINARY, call[0], str(wasm), *call[1:]], env=env, capture_output=True, text=True,
                             stdin=subprocess.DEVNULL)
        outcomes.append((ran.returncode, json.loads(ran.stdout) if ran.returncode == 0 else ran.stderr.strip()))
    return outcomes


def test_the_tutorial_runs_as_written():
    with tempfile.TemporaryDirectory() as work:
        env = environment(BINARY)
        # Section 8's Python: componentize-py and python from the virtual
        # environment the tutorial has the reader make and activate.
        env["PATH"] = f"{ROOT / 'tests/.venv/bin'}{os.pathsep}{env['PATH']}"
        checks = run_document(TUTORIAL, Path(work), env)
        # new, the skill's folder, test, build, inspect and its three excerpts,
        # get and its output twice; then the second pack's new, its build and
        # get with a grant, and its output; then in JavaScript and in Python
        # each: new, test and build, get and its output; then the Python
        # pack's inspect and its skill.
        assert checks == 25

        # The JavaScript and Python packs answer as the Rust one does.
        rust, js, python = (answers(Path(work) / BUILDS[lang], env) for lang in ["rust", "js", "python"])
        assert js == rust
        assert python == rust
        assert [skill["uri"] for skill in rust[0][3]] == ["skill://writing-release-notes/SKILL.md"]
        # What they all answer, so that the comparison compares something.
        assert rust[1][1]["messages"] == [
            {"role": "user", "content": {"type": "text", "text":
                "Write the release notes of version 2.1.0 for developers, from the changes attached."}},
            {"role": "user", "content": {"type": "resource", "resource": {
                "uri": "file:///changes/2.1.0.txt", "mimeType": "text/plain", "text": "Faster start"}}},
        ]
        assert rust[4][0] == 1 and "argument 'version' must be text of at most 32 characters" in rust[4][1], rust[4]
        assert rust[6] == (0, {"completion": {"values": ["developers"], "total": 1, "hasMore": False}}), rust[6]
        # The prompt written in code, its default filled in by the host.
        explain = "Explain in one sentence why the release after 2.1.7 is {}."
        assert rust[8] == (0, {"messages": [{"role": "user", "content": {"type": "text", "text": explain.format("3.0.0")}}]})
        assert rust[9] == (0, {"messages": [{"role": "user", "content": {"type": "text", "text": explain.format("2.1.8")}}]})
        assert rust[10] == (0, {"completion": {"values": ["fix", "feature"], "total": 2, "hasMore": False}}), rust[10]

        # The tutorial's lib.rs keeps the starter's self-check: a typo in a
        # placeholder fails `cargo test`, naming that test.
        pack = Path(work) / "release_notes"
        source = (pack / "src/lib.rs").read_text()
        (pack / "src/lib.rs").write_text(source.replace("of version {version} for", "of version {versoin} for", 1))
        test = subprocess.run(["bash", "-c", 'cargo test --target "$(rustc -vV | sed -n \'s/^host: //p\')"'],
                              cwd=pack, env=env, capture_output=True, text=True)
        assert test.returncode != 0, test.stdout
        assert "test tests::the_templates_pass_the_checks_the_host_runs_at_load ... FAILED" in test.stdout, test.stdout
        assert "versoin" in test.stdout, test.stdout


def test_the_runner_reads_every_kind_of_block():
    kinds = [info for info, _ in blocks(TUTORIAL)]
    assert kinds == ["sh no-run", "sh", "rust file=src/lib.rs", "sh", "markdown file=skills/writing-release-notes/SKILL.md",
                     "sh", "sh", "sh", "text output", "text output", "text output", "sh",
                     "json output", "sh", "json output", "sh no-run", "sh", "rust file=src/lib.rs", "sh", "json output",
                     "sh", "js file=pack.js", "js file=pack.test.js", "sh", "sh", "json output",
                     "sh", "python file=app.py", "python file=test_app.py", "sh no-run", "sh", "sh", "json output",
                     "sh", "text output"]


def test_the_runner_fails_on_output_that_differs(tmp_path):
    document = "```sh\nmkdir sub\ncd sub\necho '{\"a\": 1}'\n```\n\n```json output\n{\"a\": 2}\n```\n"
    with pytest.raises(AssertionError, match='expected {"a": 2}'):
        run_document(document, tmp_path, environment(BINARY))
    # The command did run, in the directory it started in.
    assert (tmp_path / "sub").is_dir()


def test_the_runner_matches_whole_lines_of_text(tmp_path):
    command = "```sh\nprintf 'one\\ntwo three\\nfour\\n'\n```\n\n"
    run_document(command + "```text output\ntwo three\nfour\n```\n", tmp_path, environment(BINARY))
    with pytest.raises(AssertionError, match="expected the lines"):
        run_document(command + "```text output\nthree\n```\n", tmp_path, environment(BINARY))
