"""Starts prompt-host over Streamable HTTP for a test, on a free port."""

import os
import re
import shutil
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BINARY = os.environ.get("PROMPT_HOST_BIN", str(ROOT / "target/debug/prompt-host"))
BUILT = ROOT / "plugins/target/wasm32-wasip2/release"


def install(plugin_dir: Path, plugin: str) -> None:
    """Copies a built pack in beside, then renames it into place."""
    staging = plugin_dir / f".{plugin}.wasm.partial"
    shutil.copyfile(BUILT / f"{plugin}.wasm", staging)
    staging.rename(plugin_dir / f"{plugin}.wasm")


@contextmanager
def http_server(plugins: list[str], *extra: str):
    """Yields (url, plugin_dir) for a server serving copies of `plugins`."""
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        plugin_dir = work / "plugins"
        plugin_dir.mkdir()
        for plugin in plugins:
            shutil.copyfile(BUILT / f"{plugin}.wasm", plugin_dir / f"{plugin}.wasm")
        log = open(work / "server.log", "w+")
        command = [BINARY, "serve", "--plugins", str(plugin_dir), "--cache-dir", str(work / "cache"),
                   "--http", "127.0.0.1:0", *extra]
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        try:
            url = None
            for _ in range(200):
                found = re.search(r"http://127\.0\.0\.1:\d+/mcp", (work / "server.log").read_text())
                if found:
                    url = found.group(0)
                    break
                assert process.poll() is None, (work / "server.log").read_text()
                time.sleep(0.05)
            assert url, "the server did not start listening"
            yield url, plugin_dir
        finally:
            process.terminate()
            process.wait(timeout=10)
            log.close()
