"""`prompt-host new` in each language: the pack builds with the toolchain
its README names against WIT 0.4, `prompt-host inspect` accepts it as it is
and shows what it says it is and the skill it carries, and the official
Python SDK client lists, gets and completes its starter prompt (the host
completing and checking its `length` choice), fills in the form the host
builds for the text when it is left out, and lists the starter's skill and
reads it back against its digest, with the same answers in Rust,
JavaScript and Python. Each
starter's own native tests pass, and fail, naming the mistake, on a typo in
a placeholder."""

import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult, PromptReference

from doc_runner import blocks, environment, run_document
from server import BINARY, ROOT
from test_skills import every_skill, read_and_verify_every_file

# How each language builds, as the pack's README says, and what it builds.
BUILDS = {
    "rust": (["cargo", "build", "--release"], "target/wasm32-wasip2/release/starter.wasm"),
    "js": (["npm", "run", "build"], "starter.wasm"),
    "python": (
        [str(ROOT / "tests/.venv/bin/componentize-py"), "-d", "wit", "-w", "prompt-pack-with-content", "componentize",
         "app", "-o", "starter.wasm"],
        "starter.wasm",
    ),
}

SUMMARIZE = {
    "name": "summarize",
    "title": "Summarize text",
    "description": "Asks for a summary of a text",
    "arguments": [
        {"name": "text", "description": "The text to summarize", "required": True},
        {"name": "length", "description": "How long the summary is (one of: short, medium, long; default short)",
         "required": False},
    ],
}

# The starter's skill, the same file in every language (host/templates/skills/).
SKILL_FILE = (ROOT / "host/templates/skills/summarizing/SKILL.md").read_bytes()
SKILL = {
    "uri": "skill://summarizing/SKILL.md",
    "frontmatter": {
        "name": "summarizing",
        "description": "Summarizes a text at the length the user asks for. Use when asked for a summary, a TL;DR or "
                       "the gist of a text.",
    },
    "resources": [{"uri": "skill://summarizing/SKILL.md", "digest": "sha256:" + hashlib.sha256(SKILL_FILE).hexdigest(),
                   "size": len(SKILL_FILE)}],
}


# The starters' own tests, run natively as their README says: what to run
# once first, the tests, what the runner prints when all pass, and the file
# in which a typo goes.
PYTHON = str(ROOT / "tests/.venv/bin/python")
NATIVE_TESTS = {
    # TAP, which Node 20 writes when not on a terminal and later versions only when asked.
    "js": ([], ["npm", "test", "--", "--test-reporter=tap"], "# pass 5\n# fail 0\n", "pack.js"),
    "python": (
        # The tests import the generated records (wit_world); bindings writes them once, and refuses again.
        [str(ROOT / "tests/.venv/bin/componentize-py"), "-d", "wit", "-w", "prompt-pack-with-content", "bindings", "."],
        [PYTHON, "-m", "unittest", "test_app"],
        "Ran 5 tests in ",
        "app.py",
    ),
}
MISTAKE = "template of prompt 'summarize' uses {txet}, which is not one of its arguments"
# Each build of a starter with that mistake, and what the host says of it.
REFUSED = {
    "js": [
        (["npm", "run", "build"], f"Failed to call 'listPrompts': Exception(Exception {{ message: Some(\"{MISTAKE}\")"),
        (["npm", "run", "build:spidermonkey"], f"{MISTAKE} (at pack.js)\n"),
    ],
    "python": [(BUILDS["python"][0], f"{MISTAKE} (at app.py)\n")],
}


def native_tests(pack: Path, lang: str, env: dict[str, str]):
    """Runs the starter's tests natively; then checks that a typo the host
    would refuse at load fails them, with the SDK's own message."""
    first, tests, passed, source_file = NATIVE_TESTS[lang]
    if first:
        ran = subprocess.run(first, cwd=pack, env=env, capture_output=True, text=True)
        assert ran.returncode == 0, ran.stdout + ran.stderr

    def run():
        ran = subprocess.run(tests, cwd=pack, env=env, capture_output=True, text=True)
        return ran, ran.stdout + ran.stderr

    ran, output = run()
    assert ran.returncode == 0 and passed in output, output
    source = (pack / source_file).read_text()
    (pack / source_file).write_text(source.replace(r"summary of this text:\n\n{text}", "summary of {txet}"))
    ran, output = run()
    assert ran.returncode != 0, output
    if lang == "js":
        # node --test shows the values compared: the message, and the null expected.
        assert f'+ "{MISTAKE}"\n    - null' in output, output
    else:
        assert f'AssertionError: "{MISTAKE}" is not None' in output, output
    # Built as it is, the host refuses it at load, saying the same: as the
    # library writes it, or (on QuickJS, which has no console) inside the
    # QuickJS runtime's own panic.
    _, wasm = BUILDS[lang]
    for build, said in REFUSED[lang]:
        built = subprocess.run(build, cwd=pack, env=env, capture_output=True, text=True)
        assert built.returncode == 0, built.stdout + built.stderr
        inspected = subprocess.run([BINARY, "inspect", str(pack / wasm)], env=env, capture_output=True, text=True)
        assert inspected.returncode == 1, inspected.stdout + inspected.stderr
        assert f"failed while listing its prompts: it panicked: {said}" in inspected.stderr, inspected.stderr
        (pack / wasm).unlink()
    (pack / source_file).write_text(source)


def new_pack(work: Path, lang: str) -> Path:
    """Creates and builds the starter pack; returns its .wasm file."""
    env = environment(BINARY)
    created = subprocess.run([BINARY, "new", "starter", "--lang", lang], cwd=work, env=env, capture_output=True, text=True)
    assert created.returncode == 0, created.stderr
    assert created.stdout.startswith("Created the ")
    pack = work / "starter"
    contract = (ROOT / "wit/0.4/prompt-provider.wit").read_text()
    assert (pack / "skills/summarizing/SKILL.md").read_bytes() == SKILL_FILE
    if lang == "rust":
        # The SDK builds against every version, laid out as in this repository.
        assert (pack / "wit/0.4/prompt-provider.wit").read_text() == contract
        assert (pack / "wit/prompt-provider.wit").read_text() == (ROOT / "wit/prompt-provider.wit").read_text()
    else:
        assert (pack / "wit/prompt-provider.wit").read_text() == contract
    if lang == "js":
        # As the README says; the packages come from npm's cache, which tests/setup filled.
        installed = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefer-offline"], cwd=pack,
                                   env=env, capture_output=True, text=True)
        assert installed.returncode == 0, installed.stdout + installed.stderr
    if lang == "rust":
        # The starter's own tests, run natively as its README says.
        host = subprocess.run(["rustc", "-vV"], capture_output=True, text=True).stdout.split("host: ")[1].split()[0]
        tested = subprocess.run(["cargo", "test", "--target", host], cwd=pack, env=env, capture_output=True, text=True)
        assert tested.returncode == 0 and "test result: ok. 5 passed" in tested.stdout, tested.stdout + tested.stderr
        # A template mistake that the host would refuse at load fails the starter's own tests.
        source = (pack / "src/lib.rs").read_text()
        (pack / "src/lib.rs").write_text(source.replace(r"summary of this text:\n\n{text}", "summary of {txet}"))
        broken = subprocess.run(["cargo", "test", "--target", host, "the_templates"], cwd=pack, env=env,
                                capture_output=True, text=True)
        assert broken.returncode != 0, broken.stdout
        assert "template of prompt 'summarize' uses {txet}, which is not one of its arguments" in broken.stdout, \
            broken.stdout + broken.stderr
        (pack / "src/lib.rs").write_text(source)
    if lang in NATIVE_TESTS:
        native_tests(pack, lang, env)
    command, wasm = BUILDS[lang]
    built = subprocess.run(command, cwd=pack, env=env, capture_output=True, text=True)
    assert built.returncode == 0, built.stdout + built.stderr
    return pack / wasm


@pytest.mark.anyio
@pytest.mark.parametrize("lang", ["rust", "js", "python"])
async def test_a_new_pack_builds_passes_inspect_and_serves(lang):
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        wasm = new_pack(work, lang)

        inspected = subprocess.run([BINARY, "inspect", "--json", str(wasm)], capture_output=True, text=True,
                                   env=environment(BINARY))
        assert inspected.returncode == 0, inspected.stdout + inspected.stderr
        report = json.loads(inspected.stdout)
        assert (report["plugin"], report["problems"], report["prompts"]) == ("starter", [], [SUMMARIZE])
        assert report["witVersion"] == "0.4.0"
        assert (report["skills"], report["resources"]) == ([SKILL], [])
        assert report["pack"] == {
            "name": "starter", "version": "0.1.0", "description": "Prompts that starter provides", "authors": [],
            "license": None, "homepage": None, "repository": None,
        }

        plugins = work / "plugins"
        plugins.mkdir()
        os.link(wasm, plugins / "starter.wasm")
        server = StdioServerParameters(command=BINARY, args=["serve", "--plugins", str(plugins), "--no-cache"])
        asked = []

        async def fill_in(context, params):
            asked.append(params)
            return ElicitResult(action="accept", content={"text": "Asked text."})

        async with Client(server, read_timeout_seconds=120, elicitation_callback=fill_in) as client:
            assert [p.name for p in (await client.list_prompts()).prompts] == ["summarize"]
            result = await client.get_prompt("summarize", {"text": "Some text.", "length": "long"})
            assert [(m.role, m.content.text) for m in result.messages] == [
                ("user", "Write a long summary of this text:\n\nSome text.")
            ]
            result = await client.get_prompt("summarize", {"text": "Some text."})
            assert result.messages[0].content.text == "Write a short summary of this text:\n\nSome text."
            # Without the text, the host asks for it; the SDK's callback fills in the form.
            result = await client.get_prompt("summarize", {"length": "medium"})
            assert result.messages[0].content.text == "Write a medium summary of this text:\n\nAsked text."
            assert [(params.message, params.requested_schema) for params in asked] == [(
                "The prompt summarize needs: text",
                {"type": "object", "properties": {"text": {"type": "string", "description": "The text to summarize"}},
                 "required": ["text"]},
            )]
            completion = await client.complete(
                PromptReference(type="ref/prompt", name="summarize"), {"name": "length", "value": "m"}
            )
            assert completion.completion.values == ["medium"]
            with pytest.raises(MCPError) as raised:
                await client.get_prompt("summarize", {"text": "Some text.", "length": "huge"})
            assert raised.value.error.code == -32602
            assert raised.value.error.message == (
                "prompt 'summarize': argument 'length' must be one of: short, medium, long, not \"huge\""
            )
            # The skill, as an agent that loads skills finds it, byte for byte the folder's.
            skills = await every_skill(client.session)
            assert skills == [SKILL]
            assert await read_and_verify_every_file(client.session, skills) == {SKILL["uri"]: SKILL_FILE}


def test_the_readme_writes_a_pack_with_a_skill_in_each_language(tmp_path):
    """README.md's `prompt-host new` commands, run as written: each writes a
    pack of its language carrying the starter's skill, which the packs the
    test above builds from the same templates serve."""
    readme = (ROOT / "README.md").read_text()
    [commands] = [body for info, body in blocks(readme) if info == "sh" and "prompt-host new" in body]
    checks = run_document(f"```sh\n{commands}```\n", tmp_path, environment(BINARY))
    assert checks == 1
    embedding = {"notes": ("src/lib.rs", "prompt_pack::v0_4::include_skills!()"),
                 "notes_js": ("pack.js", 'import skills from "./skills.js";'),
                 "notes_py": ("app.py", "skills=include_skills(),")}
    for pack, (source, line) in embedding.items():
        assert (tmp_path / pack / "skills/summarizing/SKILL.md").read_bytes() == SKILL_FILE, pack
        # Its source embeds the folder in one line.
        assert line in (tmp_path / pack / source).read_text(), pack
