"""docs/registry.md, run as written: a registry on loopback (Debian's
docker-registry on port 5000), publish, keygen, sign, add with signatures
required, update to a new tag, an unsigned pack refused."""

import socket
import subprocess
import tempfile
from pathlib import Path

from doc_runner import environment, run_document
from server import BINARY, ROOT

RECIPE = (ROOT / "docs/registry.md").read_text()


def test_the_registry_recipe_runs_as_written():
    with socket.socket() as probe:
        # The recipe's port: taken, the recipe cannot run (say so, not a skip).
        probe.bind(("127.0.0.1", 5000))
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        try:
            # Each command, and each output compared: the registry, the key, add, update, the refusal.
            assert run_document(RECIPE, work, environment(BINARY)) == 11
        finally:
            pid = work / "registry/pid"
            if pid.exists():
                subprocess.run(["kill", pid.read_text().strip()], capture_output=True)
