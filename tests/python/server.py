"""Starts prompt-host over Streamable HTTP for a test, on a free port."""

import os
import re
import shutil
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from mcp import ClientSession
from mcp.types import PaginatedRequestParams

ROOT = Path(__file__).resolve().parents[2]
BINARY = os.environ.get("PROMPT_HOST_BIN", str(ROOT / "target/debug/prompt-host"))
BUILT = ROOT / "plugins/target/wasm32-wasip2/release"


async def all_names(session: ClientSession) -> list[str]:
    """Every prompt's name, in order, following `prompts/list` page by page."""
    names, cursor = [], None
    while True:
        page = await session.list_prompts(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
        names += [prompt.name for prompt in page.prompts]
        cursor = page.next_cursor
        if cursor is None:
            return names


def on_stream_opened(opened):
    """An httpx2 response hook that sets the event `opened` once the server
    answers a session's GET: the stream its notifications come on is open
    (one sent before it opens is not kept for it)."""
    async def hook(response):
        if response.request.method == "GET" and response.status_code == 200:
            opened.set()
    return hook


def install(plugin_dir: Path, plugin: str) -> None:
    """Copies a built pack in beside, then renames it into place."""
    staging = plugin_dir / f".{plugin}.wasm.partial"
    shutil.copyfile(BUILT / f"{plugin}.wasm", staging)
    staging.rename(plugin_dir / f"{plugin}.wasm")


class Replica:
    """One `prompt-host serve --http` process on `address`, which can be
    stopped (SIGTERM) and started again on the same address."""

    def __init__(self, plugin_dir: Path, work: Path, address: str, *extra: str):
        self.command = [BINARY, "serve", "--plugins", str(plugin_dir), "--cache-dir", str(work / "cache"),
                        "--http", address, *extra]
        self.log_path = work / "server.log"
        self.log = open(self.log_path, "a+")
        self.process = None
        self.url = None

    def start(self) -> str:
        """Starts the server; returns its URL once it listens."""
        start = self.log_path.stat().st_size
        self.process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log)
        for _ in range(400):
            found = re.search(r"http://127\.0\.0\.1:\d+/mcp", self.log_path.read_text()[start:])
            if found:
                self.url = found.group(0)
                return self.url
            assert self.process.poll() is None, self.log_path.read_text()
            time.sleep(0.05)
        raise AssertionError("the server did not start listening")

    def stop(self) -> int:
        """Sends SIGTERM, as systemd and Kubernetes do; returns the exit code."""
        self.process.terminate()
        return self.process.wait(timeout=30)

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.stop()
        self.log.close()


@contextmanager
def http_server(plugins: list[str], *extra: str):
    """Yields (url, plugin_dir) for a server serving copies of `plugins`."""
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        plugin_dir = work / "plugins"
        plugin_dir.mkdir()
        for plugin in plugins:
            shutil.copyfile(BUILT / f"{plugin}.wasm", plugin_dir / f"{plugin}.wasm")
        server = Replica(plugin_dir, work, "127.0.0.1:0", *extra)
        try:
            yield server.start(), plugin_dir
        finally:
            server.close()
