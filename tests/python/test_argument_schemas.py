"""The argument schema a client sees is the one the host enforces (issue
"The argument schema a client sees is the one the host enforces"): for every
typed argument of the bundled packs and of the fixtures `schema_table` and
`typed_arguments`, the JSON Schema the host publishes in the prompt's
`_meta["prompt-host/arguments"]` is compiled by the official TypeScript
SDK's validator (ajv, tests/schema-verdicts.mjs) and by python-jsonschema,
and over a table of values (every value the review named among them) both
give the verdict the host gives when the value is sent with `prompts/get`.

A value is read as a client reads an MCP argument against a typed schema:
as JSON when the property's type is integer, number or boolean and the
whole string is a JSON number, `true` or `false`; as the string otherwise.
"""

import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

import jsonschema

ROOT = Path(__file__).resolve().parents[2]
BINARY = os.environ.get("PROMPT_HOST_BIN", str(ROOT / "target/debug/prompt-host"))
BUILT = ROOT / "plugins/target/wasm32-wasip2/release"
NODE = os.environ.get("NODE", "node")

JSON_SCALAR = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false")

VALUES = [
    "", "a", "b", "x", "w", "ab", "abab", "abc", "ABC", "abc1", "abc\n", "a\rb", "a\nb", "a\u2028b", "a\u2029b",
    "a\u0085b", "a\tb", "\u0661\u0662\u0663", "123", "été", "&", "a&&b", "1", "0", "-0", "1.0", "1e2", "1E1", "1.5",
    "007", "+5", " 5", "5 ", "10", "10.00", "11", "-12", "9007199254740993", "99999999999999999999", "1e19", "1e400",
    "NaN", "0.5", "-0.5", "2", "true", "false", "True", " true", "formal", "Formal", "é", "e\u0301",
    "https://example.com", "HTTPS://example.com/a", "File:///src/a.py", "file:///x", "x-foo:bar", "X-FOO:bar",
    "git+ssh://h/r", "http://example.com", "relative/path", "https://a\u202eb", "https://a\u200bb", "https://a b",
    "https:", "1x:y", "mailto:a@b", "ABé.", "Cé.x", "Cé. ", "Aé.\u3000", "ÀBC", "\u0000", "abc\u0000", "c", "cab",
    "abx", "w" * 40, "w" * 41, "abcd", "a b", "a\u00a0b", "😀", "9007199254740991", "-9007199254740991",
    "9007199254740992", "9007199254740993.0", "-9223372036854775809", "0.99999999999999999999", "9007199254740991.4",
]


def typed(schema: dict, value: str):
    if schema.get("type") in ("integer", "number", "boolean") and JSON_SCALAR.fullmatch(value):
        return json.loads(value)
    return value


class Host:
    """prompt-host over stdio, asked with raw JSON-RPC, many requests in flight."""

    def __init__(self, args):
        self.process = subprocess.Popen([BINARY, "serve", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True, encoding="utf-8")
        self.next_id = 0
        self.ask_all([("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                      "clientInfo": {"name": "schema-tests", "version": "1"}})])
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.process.stdin.write(json.dumps(message) + "\n")

    def ask_all(self, requests):
        ids = []
        for method, params in requests:
            self.next_id += 1
            ids.append(self.next_id)
            self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        self.process.stdin.flush()
        answers = {}
        while len(answers) < len(ids):
            message = json.loads(self.process.stdout.readline())
            if "id" in message:
                answers[message["id"]] = message
        return [answers[id] for id in ids]

    def prompts(self):
        prompts, cursor = [], None
        while True:
            [answer] = self.ask_all([("prompts/list", {"cursor": cursor} if cursor else {})])
            prompts += answer["result"]["prompts"]
            cursor = answer["result"].get("nextCursor")
            if cursor is None:
                return prompts

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=30)


def valid_value(schema: dict) -> str:
    """A value of the property's kind, for a required argument not under test."""
    if "default" in schema:
        return json.dumps(schema["default"]) if not isinstance(schema["default"], str) else schema["default"]
    if schema.get("examples"):
        example = schema["examples"][0]
        return example if isinstance(example, str) else json.dumps(example)
    if "enum" in schema:
        return schema["enum"][0]
    return {"integer": str(max(1, schema.get("minimum", 1))), "number": "0.5", "boolean": "true"}.get(schema.get("type"), "x")


def verdicts_of_ajv(cases):
    out = subprocess.run([NODE, str(ROOT / "tests/schema-verdicts.mjs")], input=json.dumps(cases), capture_output=True,
                         text=True, cwd=ROOT / "tests", check=True)
    return json.loads(out.stdout)


def host_verdicts(host: Host, prompt: dict, name: str, schema: dict, values):
    required = prompt["_meta"]["prompt-host/arguments"].get("required", [])
    properties = prompt["_meta"]["prompt-host/arguments"]["properties"]
    base = {other: valid_value(properties[other]) for other in required if other != name}
    answers = host.ask_all([("prompts/get", {"name": prompt["name"], "arguments": {**base, name: value}}) for value in values])
    verdicts = []
    for value, answer in zip(values, answers):
        error = answer.get("error")
        refused = error is not None and error["code"] == -32602 and error.get("data", {}).get("argument") == name
        # Any other answer (the pack's reply, its request for more input) is past the check.
        assert refused or error is None or "argument" not in error.get("data", {}), (prompt["name"], name, value, error)
        verdicts.append(not refused)
    return verdicts


def typed_arguments(host: Host):
    """(prompt, argument name, its schema) for every typed argument served."""
    for prompt in host.prompts():
        schema = prompt.get("_meta", {}).get("prompt-host/arguments")
        for name, property_schema in (schema or {}).get("properties", {}).items():
            yield prompt, name, property_schema


def compare(host: Host):
    """Every typed argument's verdicts, host against both validators; the arguments compared."""
    rows = list(typed_arguments(host))
    assert rows, "no typed argument served"
    ajv = verdicts_of_ajv([{"schema": schema, "values": VALUES} for _, _, schema in rows])
    disagreements = []
    for (prompt, name, schema), ajv_verdicts in zip(rows, ajv):
        jsonschema.Draft202012Validator.check_schema(schema)
        validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
        python_verdicts = [validator.is_valid(typed(schema, value)) for value in VALUES]
        for value, ours, theirs, python in zip(VALUES, host_verdicts(host, prompt, name, schema, VALUES), ajv_verdicts,
                                               python_verdicts):
            if not ours == theirs == python:
                disagreements.append(f"{prompt['name']}.{name} {value!r}: host {ours}, ajv {theirs}, python {python}")
    assert disagreements == []
    return {f"{prompt['name']}.{name}" for prompt, name, _ in rows}


def test_the_fixtures_schemas_give_the_hosts_verdicts_in_ajv_and_python_jsonschema():
    with tempfile.TemporaryDirectory() as work:
        plugins = Path(work) / "plugins"
        plugins.mkdir()
        for pack in ["schema_table", "typed_arguments"]:
            (plugins / f"{pack}.wasm").write_bytes((BUILT / f"{pack}.wasm").read_bytes())
        host = Host(["--plugins", str(plugins), "--cache-dir", str(Path(work) / "cache")])
        try:
            compared = compare(host)
        finally:
            host.close()
    assert {"table.digits", "table.dot", "table.word", "table.ampersands", "table.schemes", "table.integer",
            "report.title", "report.source", "report.count"} <= compared, compared


def test_the_bundled_packs_schemas_give_the_hosts_verdicts():
    host = Host([])
    try:
        compared = compare(host)
    finally:
        host.close()
    assert len(compared) == 2, compared


def test_integers_reach_the_pack_in_plain_decimal_and_schemes_as_written():
    with tempfile.TemporaryDirectory() as work:
        plugins = Path(work) / "plugins"
        plugins.mkdir()
        (plugins / "schema_table.wasm").write_bytes((BUILT / "schema_table.wasm").read_bytes())
        host = Host(["--plugins", str(plugins), "--cache-dir", str(Path(work) / "cache")])
        try:
            [answer] = host.ask_all([("prompts/get", {"name": "table", "arguments": {
                "integer": "1e2", "one-to-ten": "5.0", "schemes": "HTTPS://example.com"}})])
        finally:
            host.close()
    assert answer["result"]["messages"][0]["content"]["text"] == "integer=100\none-to-ten=5\nschemes=HTTPS://example.com"
