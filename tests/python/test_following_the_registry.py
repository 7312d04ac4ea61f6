"""A server that follows its registry ([server] update_interval, issue "A
fleet that follows its registry"), against a real registry (Debian's
docker-registry, through tests/registry/registry_tool.py) on loopback and
the official Python SDK client over stdio: a new signed pack published
under the tag a source names is installed while the server serves, and the
client sees its prompts without a restart; an unsigned one pushed over it
is refused at every round but said once, and the signed pack keeps
serving; /metrics says which pack each plugin serves, and how the checks
ended."""

import hashlib
import re
import subprocess
from pathlib import Path

import anyio
import httpx2
import pytest

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from doc_runner import environment
from server import BINARY
from test_monitoring import free_port
from test_registry_tooling import Registry

PASSWORD = {"COSIGN_PASSWORD": "correct-horse"}


def run(*args: str, cwd: Path, env: dict | None = None) -> str:
    ran = subprocess.run([BINARY, *args], cwd=cwd, env={**environment(BINARY), **(env or {})}, capture_output=True,
                         text=True)
    assert ran.returncode == 0, ran.stderr
    return ran.stdout.strip()


def publish(work: Path, pack: str, reference: str, signed: bool) -> str:
    digest = run("publish", f"examples/plugins/{pack}.wasm", reference, "--config", "prompt-host.toml", cwd=work)
    if signed:
        repository = reference.rsplit(":", 1)[0]
        run("sign", f"{repository}@{digest}", "--key", "cosign.key", "--config", "prompt-host.toml", cwd=work, env=PASSWORD)
    return digest


async def names(session: ClientSession) -> list[str]:
    return [prompt.name for prompt in (await session.list_prompts()).prompts]


@pytest.mark.anyio
async def test_a_server_installs_what_its_sources_tag_while_it_serves(tmp_path):
    registry = Registry(tmp_path)
    try:
        work = tmp_path / "work"
        work.mkdir()
        run("examples", "--out", "examples", cwd=work)
        run("keygen", cwd=work, env=PASSWORD)
        source = f"oci://{registry.address}/acme/review:stable"
        (work / "prompt-host.toml").write_text(
            '[server]\nplugins = "packs"\nupdate_interval = "1s"\n\n'
            f'[registry]\nplain_http = ["{registry.address}"]\n\n'
            '[signatures]\nrequire = true\npublic_keys = ["cosign.pub"]\n\n'
            f'[plugins.review]\nsource = "{source}"\n'
        )
        (work / "packs").mkdir()
        first = publish(work, "code_review", source, signed=True)
        metrics_port = free_port()
        log_path = tmp_path / "server.log"
        server = StdioServerParameters(command=BINARY, cwd=str(work),
                                       args=["serve", "--config", "prompt-host.toml", "--metrics", f"127.0.0.1:{metrics_port}"])
        with log_path.open("w") as log:
            async with stdio_client(server, errlog=log) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                # Installed from its source at start, then checked at each round.
                assert await names(session) == ["code_review"]
                metrics = f"http://127.0.0.1:{metrics_port}/metrics"

                def checks(outcome: str) -> int:
                    found = re.search(r'prompt_host_pack_updates_total\{outcome="' + outcome + r'",plugin="review"\} (\d+)',
                                      httpx2.get(metrics, timeout=10).text)
                    return int(found.group(1)) if found else 0

                with anyio.fail_after(60):
                    while checks("up-to-date") < 2:
                        await anyio.sleep(0.2)

                # A new pack, signed, under the same tag: installed while serving.
                second = publish(work, "dev_assistant", source, signed=True)
                with anyio.fail_after(60):
                    while await names(session) != ["git-commit", "explain-code", "debug-error"]:
                        await anyio.sleep(0.2)
                said = log_path.read_text()
                assert re.search(r'updated from its source plugin="review" reference="' + re.escape(source) +
                                 f'" digest="{second}" previous="{first}"', said), said

                # An unsigned pack over it: refused at every round, said once.
                publish(work, "media_prompts", source, signed=False)
                with anyio.fail_after(60):
                    while checks("refused") < 3:
                        await anyio.sleep(0.2)
                said = log_path.read_text()
                refused = [line for line in said.splitlines() if "following the registry" in line and "review" in line]
                assert len(refused) == 1, refused
                assert "not updated, the installed pack stays" in refused[0] and "no signature" in refused[0], refused
                assert await names(session) == ["git-commit", "explain-code", "debug-error"]

                # What each replica serves, for an alert on replicas that
                # disagree: the file's SHA-256 (dev_assistant, a WIT 0.1 pack,
                # says no version).
                scraped = httpx2.get(metrics, timeout=10).text
                served = hashlib.sha256((work / "packs/review.wasm").read_bytes()).hexdigest()
                info = [line for line in scraped.splitlines() if line.startswith("prompt_host_pack_info{")]
                assert info == [f'prompt_host_pack_info{{digest="{served}",plugin="review",version=""}} 1'], info
                assert checks("updated") == 1
    finally:
        registry.stop()
