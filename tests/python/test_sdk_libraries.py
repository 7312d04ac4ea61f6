"""The JavaScript and Python template libraries that `prompt-host new`
vendors (host/templates/js/prompt-pack.js, host/templates/python/prompt_pack.py)
run the same cases and must answer as the Rust SDK does: the outcomes are
written out here, and the Rust SDK's unit tests
(plugins/prompt-pack/src/template.rs) assert the same ones for the same
cases (the refusal message names the code hook as each language does): the first
mistake check() names, replies (values percent-encoded in URIs, a prompt
written in code given only the arguments passed or defaulted, literal
braces), and completions (at most 100, ASCII case folded).

Each case is a list of steps, played on each library's builder:
["template", name, description], ["required" | "optional", name,
description, [[method, *arguments], ...]], ["code"] (a prompt written in
code that replies with its arguments as JSON), ["completeWith", n] (n
values), or a builder method and its arguments."""

import json
import subprocess
import tempfile
from pathlib import Path

from server import ROOT

JS_LIBRARY = ROOT / "host/templates/js/prompt-pack.js"
PYTHON_LIBRARY = ROOT / "host/templates/python/prompt_pack.py"
COMPONENTIZE_PY = ROOT / "tests/.venv/bin/componentize-py"
PYTHON = ROOT / "tests/.venv/bin/python"

AT = "template of prompt 'a'"
CHECKS = [
    ([["template", "a", "A"], ["required", "p", "P"], ["resource", "{p}", "text/plain", "x"]],
     f"{AT} has the URI \"{{p}}\", which does not start with a scheme (such as https: or file:) before its first "
     "placeholder: a URI must be absolute, and values are percent-encoded into it"),
    ([["template", "a", "A"], ["resource", "file:///x", "text", "x"]],
     f"{AT} has the media type \"text\", which is not of the form type/subtype"),
    ([["template", "a", "A"], ["required", "n", "N"], ["link", "https://example.com/", "{n}"]],
     f"{AT} has a link whose name has no text of its own: an empty value would leave it without a name"),
    # A mistake in the declaration is named before the messages-or-code rules.
    ([["template", "a", "A"], ["user", "{nope}"], ["code"]], f"{AT} uses {{nope}}, which is not one of its arguments"),
    ([["template", "a", "A"], ["required", "x", "X", [["default", "1"]]]],
     f"{AT} sets a default for 'x', which is required: it would never be used"),
    ([["template", "a", "A"]], f"{AT} has no messages: give it one (.user(...)), or reply in code (.{{reply}}(...))"),
    ([["template", "a", "A"], ["user", "x"], ["code"]],
     f"{AT} has messages and replies in code (.{{reply}}): its messages would never be used"),
    ([["template", "a", "A"], ["user", "Hello {name"]],
     f"{AT}: an unclosed '{{' in \"Hello {{name\": write '{{{{' for a literal brace"),
    ([["template", "a", "A"], ["optional", "x", "X", [["choice", ["1", "2"]], ["default", "3"]]], ["user", "{x}"]],
     f"{AT} defaults 'x' to \"3\", which is not one of its choices"),
    ([["template", "a", "A"], ["required", "x", "X"], ["user", "{{x}} {x}"]], None),
]

INCIDENT = [["template", "incident", "I"], ["required", "service", "S"], ["required", "logs", "L"],
            ["user", "Explain {service}."], ["resource", "file:///logs/{service}.log", "text/plain", "{logs}"],
            ["link", "https://runbooks.example/{service}", "runbook for {service}"]]
COUNT = [["template", "count", "C"], ["required", "text", "T"], ["optional", "note", "N"],
         ["optional", "unit", "U", [["choice", ["words", "characters"]], ["default", "words"]]], ["code"]]
RENDERS = [
    (INCIDENT, {"service": "../a b?#é", "logs": "E1"}, [
        ["user", "text", "Explain ../a b?#é."],
        ["user", "resource", "file:///logs/..%2Fa%20b%3F%23%C3%A9.log", "text/plain", "E1"],
        ["user", "link", "https://runbooks.example/..%2Fa%20b%3F%23%C3%A9", "runbook for ../a b?#é"],
    ]),
    (INCIDENT, {"service": "..", "logs": "E1"},
     "argument 'service' cannot be \"..\": it goes into a URI, where it would name another path"),
    # Only what was passed or has a default: `note` stays absent.
    (COUNT, {"text": "hi"}, [["user", "text", '{"text":"hi","unit":"words"}']]),
    ([["template", "a", "A"], ["required", "x", "X"], ["user", "{{x}} {x}"]], {"x": "{y}"}, [["user", "text", "{x} {y}"]]),
]

COMPLETIONS = [
    ([["template", "a", "A"], ["required", "x", "X"], ["user", "{x}"], ["completeWith", 150]], "x", "",
     {"values": [f"v{i}" for i in range(100)], "total": 150, "hasMore": True}),
    ([["template", "a", "A"], ["optional", "x", "X", [["choice", ["Éclair", "eclair", "Medium"]], ["default", "eclair"]]],
      ["user", "{x}"]], "x", "m", {"values": ["Medium"], "total": 1, "hasMore": False}),
    # Case is folded for ASCII letters only, as Rust's to_ascii_lowercase does.
    ([["template", "a", "A"], ["optional", "x", "X", [["choice", ["Éclair", "eclair", "Medium"]], ["default", "eclair"]]],
      ["user", "{x}"]], "x", "é", {"values": [], "total": 0, "hasMore": False}),
]

JS_RUNNER = """
import * as sdk from %(library)s;
const cases = JSON.parse(process.argv[2]);
const echo = (args) => sdk.reply([sdk.userText(JSON.stringify(Object.fromEntries(Object.entries(args).sort())))]);
function build(steps) {
  let t;
  for (const [op, ...a] of steps) {
    if (op === "template") t = sdk.template(a[0], a[1]);
    else if (op === "required" || op === "optional") {
      let d = sdk[op](a[0], a[1]);
      for (const [method, ...x] of a[2] ?? []) d = d[method](...x);
      t = t.argument(d);
    } else if (op === "code") t = t.replyWith(echo);
    else if (op === "completeWith") t = t.completeWith(() => Array.from({ length: a[0] }, (_, i) => `v${i}`));
    else t = t[op](...a);
  }
  return t;
}
function flat(message) {
  const { tag, val } = message.content;
  if (tag === "text") return [message.role, "text", val.text];
  if (tag === "resource") return [message.role, "resource", val.uri, val.mimeType, val.body.val];
  return [message.role, "link", val.uri, val.name];
}
console.log(JSON.stringify({
  checks: cases.checks.map(([steps]) => build(steps).check()),
  renders: cases.renders.map(([steps, args]) => {
    try {
      return build(steps).render(Object.entries(args).map(([name, value]) => ({ name, value }))).messages.map(flat);
    } catch (error) {
      return error.val;
    }
  }),
  completions: cases.completions.map(([steps, argument, typed]) => build(steps).complete(argument, typed)),
}));
"""

PYTHON_RUNNER = """
import json, sys
import prompt_pack as sdk
from componentize_py_types import Err
from wit_world.exports.prompt_provider import Argument, Content_Text, Content_Resource, Role

cases = json.loads(sys.argv[1])
def echo(args):
    return sdk.reply([sdk.user_text(json.dumps(dict(sorted(args.items())), separators=(",", ":")))])
def build(steps):
    t = None
    for op, *a in steps:
        if op == "template":
            t = sdk.template(a[0], a[1])
        elif op in ("required", "optional"):
            d = getattr(sdk, op)(a[0], a[1])
            for method, *x in (a[2] if len(a) > 2 else []):
                d = getattr(d, method)(*x)
            t = t.argument(d)
        elif op == "code":
            t = t.reply_with(echo)
        elif op == "completeWith":
            t = t.complete_with(lambda argument, typed, n=a[0]: [f"v{i}" for i in range(n)])
        else:
            t = getattr(t, op)(*a)
    return t
def flat(message):
    role = "user" if message.role == Role.USER else "assistant"
    content = message.content
    if isinstance(content, Content_Text):
        return [role, "text", content.value.text]
    if isinstance(content, Content_Resource):
        return [role, "resource", content.value.uri, content.value.mime_type, content.value.body.value]
    return [role, "link", content.value.uri, content.value.name]
def render(steps, args):
    try:
        return [flat(m) for m in build(steps).render([Argument(name=k, value=v) for k, v in args.items()]).messages]
    except Err as error:
        return error.value.value
def completion(c):
    return {"values": c.values, "total": c.total, "hasMore": c.has_more}
print(json.dumps({
    "checks": [build(steps).check() for steps, _ in cases["checks"]],
    "renders": [render(steps, args) for steps, args, _ in cases["renders"]],
    "completions": [completion(build(steps).complete(argument, typed)) for steps, argument, typed, _ in cases["completions"]],
}, ensure_ascii=False))
"""


def cases() -> str:
    return json.dumps({"checks": CHECKS, "renders": RENDERS, "completions": COMPLETIONS}, ensure_ascii=False)


def expected(reply: str) -> dict:
    """The outcomes the cases expect, naming the code hook as the language does."""
    return {
        "checks": [None if message is None else message.replace("{reply}", reply) for _, message in CHECKS],
        "renders": [messages for _, _, messages in RENDERS],
        "completions": [completion for *_, completion in COMPLETIONS],
    }


def test_the_javascript_library_answers_as_the_rust_sdk():
    with tempfile.TemporaryDirectory() as work:
        runner = Path(work) / "runner.mjs"
        runner.write_text(JS_RUNNER % {"library": json.dumps(JS_LIBRARY.as_uri())})
        ran = subprocess.run(["node", str(runner), cases()], capture_output=True, text=True)
        assert ran.returncode == 0, ran.stderr
        assert json.loads(ran.stdout) == expected("replyWith")


def test_the_python_library_answers_as_the_rust_sdk():
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        # The library imports the records componentize-py generates.
        python_library_beside_its_bindings(work)
        (work / "runner.py").write_text(PYTHON_RUNNER)
        ran = subprocess.run([str(PYTHON), "runner.py", cases()], cwd=work, capture_output=True, text=True)
        assert ran.returncode == 0, ran.stderr
        assert json.loads(ran.stdout) == expected("reply_with")


def python_library_beside_its_bindings(work: Path):
    """The library imports the records componentize-py generates, for WIT
    0.4's world, which new packs target."""
    bindings = subprocess.run([str(COMPONENTIZE_PY), "-d", str(ROOT / "wit/0.4"), "-w", "prompt-pack-with-content",
                               "bindings", str(work)], capture_output=True, text=True)
    assert bindings.returncode == 0, bindings.stderr
    (work / "prompt_pack.py").write_text(PYTHON_LIBRARY.read_text())


def a_folder_of_skills(work: Path):
    """Skills with what an author's folder holds: nested files, bytes that
    are not UTF-8, text that is not ASCII, and what the machine leaves
    there (hidden files and folders)."""
    files = {
        "skills/a/SKILL.md": b"---\nname: a\ndescription: A\n---\n",
        "skills/a/.DS_Store": b"finder",
        "skills/.git/config": b"[core]",
        "skills/a-b/SKILL.md": "---\nname: a-b\ndescription: Caf\u00e9\n---\n".encode(),
        "skills/b-skill/SKILL.md": b"---\nname: b-skill\ndescription: B\n---\n",
        "skills/b-skill/references/table.bin": bytes(range(256)),
    }
    for path, data in files.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_bytes(data)
    # Hidden ones left out; sorted by the paths' bytes ('-' before '/'), as
    # the Rust SDK's include_skills! sorts them.
    return [[path.removeprefix("skills/"), data.hex()] for path, data in files.items() if "/." not in path and
            not path.startswith("skills/.")]


EMBEDDED_IN_ORDER = ["a-b/SKILL.md", "a/SKILL.md", "b-skill/SKILL.md", "b-skill/references/table.bin"]


def test_the_javascript_library_embeds_a_skills_folder_as_the_rust_sdk_does():
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        expected_files = dict(a_folder_of_skills(work))
        (work / "prompt-pack.js").write_text(JS_LIBRARY.read_text())
        embedded = subprocess.run(["node", str(ROOT / "host/templates/js/embed-skills.mjs")], cwd=work,
                                  capture_output=True, text=True)
        assert embedded.returncode == 0, embedded.stderr
        (work / "runner.mjs").write_text('import skills from "./skills.js";\n'
                                         'console.log(JSON.stringify(skills.map((f) => [f.path, '
                                         'Buffer.from(f.bytes).toString("hex")])));\n')
        ran = subprocess.run(["node", "runner.mjs"], cwd=work, capture_output=True, text=True)
        assert ran.returncode == 0, ran.stderr
        assert json.loads(ran.stdout) == [[path, expected_files[path]] for path in EMBEDDED_IN_ORDER]


def test_the_python_library_embeds_a_skills_folder_as_the_rust_sdk_does():
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        expected_files = dict(a_folder_of_skills(work))
        python_library_beside_its_bindings(work)
        # Run from another directory: the folder is found beside the file that names it.
        (work / "runner.py").write_text("import json, prompt_pack\n"
                                        "print(json.dumps([[f.path, f.bytes.hex()] for f in prompt_pack.include_skills()]))\n")
        ran = subprocess.run([str(PYTHON), str(work / "runner.py")], cwd="/", capture_output=True, text=True)
        assert ran.returncode == 0, ran.stderr
        assert json.loads(ran.stdout) == [[path, expected_files[path]] for path in EMBEDDED_IN_ORDER]


def test_both_libraries_name_a_users_mistake_and_their_own_failure_alike():
    """invalid_arguments / invalidArguments (-32602) and internal (-32603):
    the same WIT error in both libraries."""
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        (work / "prompt-pack.js").write_text(JS_LIBRARY.read_text())
        (work / "runner.mjs").write_text('import { internal, invalidArguments } from "./prompt-pack.js";\n'
                                         'console.log(JSON.stringify([invalidArguments("bad"), internal("down")]));\n')
        ran = subprocess.run(["node", "runner.mjs"], cwd=work, capture_output=True, text=True)
        assert ran.returncode == 0, ran.stderr
        assert json.loads(ran.stdout) == [{"tag": "invalid-arguments", "val": "bad"}, {"tag": "internal", "val": "down"}]

        python_library_beside_its_bindings(work)
        (work / "runner.py").write_text(
            "import prompt_pack\n"
            "from wit_world.exports.prompt_provider import PromptError_Internal, PromptError_InvalidArguments\n"
            "assert prompt_pack.invalid_arguments('bad').value == PromptError_InvalidArguments('bad')\n"
            "assert prompt_pack.internal('down').value == PromptError_Internal('down')\n"
            "print('same')\n")
        ran = subprocess.run([str(PYTHON), "runner.py"], cwd=work, capture_output=True, text=True)
        assert (ran.returncode, ran.stdout) == (0, "same\n"), ran.stderr


# Skills checked as the host checks them at load, in its words: the cases of
# the Rust SDK's check_skills test (plugins/prompt-pack/src/v0_4.rs), with
# the same answers expected of both libraries.
SKILL_CHECKS = [
    ("review/SKILL.md", b"---\nname: review\ndescription: Reviews\n---\nBody\n", None),
    ("acme/review/SKILL.md", b'---\nname: "review"\ndescription: >\n  Reviews\n---\n', None),
    ("review/references/notes.md", b"anything", None),
    ("review/SKILL.md", b"\xff", 'skill "review": its SKILL.md is not UTF-8 text'),
    ("review/SKILL.md", b"# Review\n",
     'skill "review": its SKILL.md: its first line is not --- : a SKILL.md starts with YAML frontmatter between two lines ---'),
    ("review/SKILL.md", b"---\nname: review\n",
     'skill "review": its SKILL.md: its frontmatter has no closing --- line: end it with a line --- before the markdown'),
    ("review/SKILL.md", b"---\ndescription: Reviews\n---\n",
     "skill \"review\": its SKILL.md: its frontmatter has no name: add a line name: followed by the skill's folder name"),
    ("review/SKILL.md", b"---\nname: reviews\ndescription: Reviews\n---\n",
     "skill \"review\": its SKILL.md names it \"reviews\", and a skill's name must be its folder's name"),
    ("review/SKILL.md", b"---\nname: review\n---\n",
     'skill "review": its SKILL.md: its frontmatter has no description: add one saying what the skill does and when to use it'),
]


def test_both_libraries_check_skills_as_the_rust_sdk_does():
    cases = json.dumps([[path, list(data)] for path, data, _ in SKILL_CHECKS])
    expected = [message for *_, message in SKILL_CHECKS]
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        (work / "prompt-pack.js").write_text(JS_LIBRARY.read_text())
        (work / "runner.mjs").write_text(
            'import { checkSkills, skillFile } from "./prompt-pack.js";\n'
            "const cases = JSON.parse(process.argv[2]);\n"
            "console.log(JSON.stringify(cases.map(([path, bytes]) => checkSkills([skillFile(path, bytes)]))));\n")
        ran = subprocess.run(["node", "runner.mjs", cases], cwd=work, capture_output=True, text=True)
        assert ran.returncode == 0, ran.stderr
        assert json.loads(ran.stdout) == expected

        python_library_beside_its_bindings(work)
        (work / "runner.py").write_text(
            "import json, sys, prompt_pack\n"
            "cases = json.loads(sys.argv[1])\n"
            "print(json.dumps([prompt_pack.check_skills([prompt_pack.skill_file(path, bytes(data))]) for path, data in cases]))\n")
        ran = subprocess.run([str(PYTHON), "runner.py", cases], cwd=work, capture_output=True, text=True)
        assert ran.returncode == 0, ran.stderr
        assert json.loads(ran.stdout) == expected


def test_what_is_not_a_file_or_a_folder_stops_the_embedding_naming_it():
    """A FIFO in the skills folder (reading it would block the build) and a
    symlink to a folder (which could loop) stop both libraries' embedding,
    naming the path; no folder at all is said, not silent."""
    import os

    for odd in ["fifo", "symlinked folder"]:
        with tempfile.TemporaryDirectory() as work:
            work = Path(work)
            a_folder_of_skills(work)
            target = work / "skills/a/odd"
            if odd == "fifo":
                os.mkfifo(target)
                said = "is not a regular file"
            else:
                target.symlink_to(work / "skills/b-skill", target_is_directory=True)
                said = "is a symlink to a folder: copy the folder in"
            (work / "prompt-pack.js").write_text(JS_LIBRARY.read_text())
            embedded = subprocess.run(["node", str(ROOT / "host/templates/js/embed-skills.mjs")], cwd=work,
                                      capture_output=True, text=True, timeout=60)
            assert embedded.returncode != 0 and f"embed-skills: skills/a/odd {said}" in embedded.stderr, embedded.stderr
            python_library_beside_its_bindings(work)
            (work / "runner.py").write_text("import prompt_pack\nprompt_pack.include_skills()\n")
            ran = subprocess.run([str(PYTHON), "runner.py"], cwd=work, capture_output=True, text=True, timeout=60)
            assert ran.returncode != 0 and f"include_skills: {work}/skills/a/odd {said}" in ran.stderr, ran.stderr

    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        (work / "prompt-pack.js").write_text(JS_LIBRARY.read_text())
        embedded = subprocess.run(["node", str(ROOT / "host/templates/js/embed-skills.mjs")], cwd=work,
                                  capture_output=True, text=True, timeout=60)
        assert (embedded.returncode, embedded.stderr) == (0, "embed-skills: there is no folder skills/: the pack carries no skills\n")
        python_library_beside_its_bindings(work)
        (work / "runner.py").write_text("import prompt_pack\nprompt_pack.include_skills()\n")
        ran = subprocess.run([str(PYTHON), "runner.py"], cwd=work, capture_output=True, text=True, timeout=60)
        assert f"FileNotFoundError: include_skills: there is no folder {work}/skills: create it, or carry no skills" in ran.stderr
