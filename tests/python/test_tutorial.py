"""docs/tutorial.md, run as written: each command, file and output in it."""

import subprocess
import tempfile
from pathlib import Path

import pytest

from doc_runner import blocks, environment, run_document
from server import BINARY, ROOT

TUTORIAL = (ROOT / "docs/tutorial.md").read_text()


def test_the_tutorial_runs_as_written():
    with tempfile.TemporaryDirectory() as work:
        env = environment(BINARY)
        checks = run_document(TUTORIAL, Path(work), env)
        # new, test, build, inspect and its three excerpts, get and its output
        # twice; then the second pack's new, its build and get with a grant,
        # and its output.
        assert checks == 14

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
    assert kinds == ["sh no-run", "sh", "rust file=src/lib.rs", "sh", "sh", "sh", "text output", "text output", "text output", "sh",
                     "json output", "sh", "json output", "sh no-run", "sh", "rust file=src/lib.rs", "sh", "json output"]


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
