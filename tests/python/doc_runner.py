"""Runs a Markdown document as a test: its code blocks, in order.

- ```sh        : run with bash -e in the current directory; `cd` carries over.
- ```sh no-run : shown only.
- ```rust file=PATH (any language): written to PATH in the current directory.
- ```text output : these lines appear, one after another, in the output of
                   the last command before it.
- ```json output : the output of the last command before it is this JSON.
Other blocks are prose."""

import json
import os
import re
import subprocess
from pathlib import Path

FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```$", re.S | re.M)


def blocks(markdown: str) -> list[tuple[str, str]]:
    """The fenced blocks of a document: (info string, body)."""
    return [(info.strip(), body) for info, body in FENCE.findall(markdown)]


def run_document(markdown: str, cwd: Path, env: dict[str, str]) -> int:
    """Runs the document's blocks; returns how many checks it made."""
    checks = 0
    output = None
    for info, body in blocks(markdown):
        words = info.split()
        language, options = (words[0] if words else ""), words[1:]
        files = [option.removeprefix("file=") for option in options if option.startswith("file=")]
        if files:
            (cwd / files[0]).write_text(body)
        elif language == "sh" and "no-run" not in options:
            # The last line prints where the block ended, so that `cd` carries over.
            script = body + '\nprintf "\\n__cwd__=%s" "$PWD"\n'
            result = subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True, text=True)
            assert result.returncode == 0, f"{body}\nexited {result.returncode}:\n{result.stdout}\n{result.stderr}"
            output, _, where = result.stdout.rpartition("\n__cwd__=")
            cwd = Path(where)
            checks += 1
        elif "output" in options:
            assert output is not None, f"an output block before any command:\n{body}"
            if language == "json":
                assert json.loads(output) == json.loads(body), f"expected {body}\ngot {output}"
            else:
                # Whole lines: the block's first line starts a line of the output.
                assert ("\n" + body) in ("\n" + output), f"expected the lines\n{body}\nin\n{output}"
            checks += 1
    return checks


def environment(binary: str) -> dict[str, str]:
    """The environment the document's commands run in: `prompt-host` is the
    binary under test, and nothing of the outer cargo leaks in."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("CARGO_") or key == "CARGO_HOME"}
    bin_dir = Path(binary).parent
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env["RUST_LOG"] = "off"
    return env
