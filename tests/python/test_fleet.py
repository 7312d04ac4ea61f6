"""A fleet that follows its registry (issue "A fleet that follows its
registry", its "Done when"): a real registry (Debian's docker-registry,
through tests/registry/registry_tool.py) on loopback; three replicas, each
with its own plugin directory and one shared request-state key, following
the registry's tag ([server] update_interval = "2s", signatures required);
Debian's nginx in front with docs/deploy/nginx.conf (plain round robin, no
stickiness). A client of 2025-11-25 (the official Python SDK's
`ClientSession` over HTTP, one session) and one of 2026-07-28 (its `Client`,
listening with `subscriptions/listen`) list and get prompts across the
replicas; a new version is published and signed to the tag; every replica
serves it, both clients hear `list_changed` and then get the new prompt; a
replica is restarted under load before and after, and no request fails.
Then an unsigned pack, and the first pack again (one every replica was
updated past), pushed to the tag are refused by every replica, which keeps
serving what it had."""

import re
import secrets
import time

import anyio
import httpx2
import pytest

from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client

from server import BINARY, Replica
from test_following_the_registry import PASSWORD, publish, run
from test_registry_tooling import Registry
from test_replicas import Tally, free_port, nginx_in_front

UPDATE_INTERVAL_S = 2
OLD = ["code_review"]
NEW = ["git-commit", "explain-code", "debug-error"]
CODE = "def hello():\n    print('world')"


def replica_config(registry: Registry, source: str, shared: str) -> str:
    """The config of a replica (or of the publisher), whose shared files
    (the key, the public key) are in the folder `shared` names."""
    return (
        f'[server]\nplugins = "packs"\nupdate_interval = "{UPDATE_INTERVAL_S}s"\n'
        f'request_state_key_file = "{shared}state.key"\n\n'
        f'[registry]\nplain_http = ["{registry.address}"]\n\n'
        f'[signatures]\nrequire = true\npublic_keys = ["{shared}cosign.pub"]\n\n'
        f'[plugins.review]\nsource = "{source}"\n'
    )


async def listed_by(address: str) -> list[str]:
    """The prompts one replica lists, asked directly (2026-07-28, no session)."""
    async with Client(f"http://{address}/mcp", cache=None) as client:
        return [prompt.name for prompt in (await client.list_prompts()).prompts]


def update_checks(metrics: str, outcome: str) -> int:
    found = re.search(r'prompt_host_pack_updates_total\{outcome="' + outcome + r'",plugin="review"\} (\d+)',
                      httpx2.get(metrics, timeout=10).text)
    return int(found.group(1)) if found else 0


async def keep_getting(url: str, prompt: str, arguments: dict, tally: Tally, stop: anyio.Event) -> None:
    async with Client(url, cache=None) as client:
        while not stop.is_set():
            await tally.call(f"prompts/get {prompt}", client.get_prompt(prompt, arguments))


async def keep_getting_in(session: ClientSession, prompt: str, arguments: dict, tally: Tally, stop: anyio.Event) -> None:
    while not stop.is_set():
        await tally.call(f"prompts/get {prompt} in a session", session.get_prompt(prompt, arguments))


async def restart_under_load(replica: Replica, tally: Tally, load) -> None:
    """Runs `load` (a function of a stop event) while `replica` is stopped
    (SIGTERM) and started again; fails if a request of it failed."""
    stop = anyio.Event()
    async with anyio.create_task_group() as group:
        load(group, stop)
        await anyio.sleep(1)
        before = tally.requests
        assert await anyio.to_thread.run_sync(replica.stop) == 0, replica.log_path.read_text()
        await anyio.sleep(1)
        await anyio.to_thread.run_sync(replica.start)
        await anyio.sleep(2)
        stop.set()
    assert tally.requests > before
    assert tally.failures == [], tally.failures


@pytest.mark.anyio
async def test_replicas_follow_their_registry_and_serve_every_client_through_a_publish_and_restarts(tmp_path):
    registry = Registry(tmp_path)
    replicas: list[Replica] = []
    try:
        work = tmp_path / "work"
        work.mkdir()
        run("examples", "--out", "examples", cwd=work)
        run("keygen", cwd=work, env=PASSWORD)
        (work / "state.key").write_text(secrets.token_hex(32))
        source = f"oci://{registry.address}/acme/review:stable"
        (work / "prompt-host.toml").write_text(replica_config(registry, source, ""))
        first = publish(work, "code_review", source, signed=True)

        ports, metrics = [], []
        for index in range(3):
            home = work / f"replica{index}"
            (home / "packs").mkdir(parents=True)
            (home / "prompt-host.toml").write_text(replica_config(registry, source, "../"))
            port, metrics_port = free_port(), free_port()
            replica = Replica(home / "packs", home, f"127.0.0.1:{port}")
            replica.command = [BINARY, "serve", "--config", str(home / "prompt-host.toml"), "--http",
                               f"127.0.0.1:{port}", "--metrics", f"127.0.0.1:{metrics_port}"]
            replicas.append(replica)
            ports.append(port)
            metrics.append(f"http://127.0.0.1:{metrics_port}/metrics")
        for replica in replicas:
            replica.start()
        addresses = [f"127.0.0.1:{port}" for port in ports]
        for address in addresses:
            assert await listed_by(address) == OLD

        heard = {"session": anyio.Event()}

        async def on_message(message) -> None:
            if getattr(getattr(message, "root", message), "method", None) == "notifications/prompts/list_changed":
                heard["session"].set()

        tally = Tally()
        (tmp_path / "nginx").mkdir()
        with nginx_in_front(tmp_path / "nginx", ports) as (url, _), anyio.fail_after(240):
            async with streamable_http_client(url) as (read, write), \
                    ClientSession(read, write, message_handler=on_message) as session, \
                    Client(url, cache=None) as client:
                assert (await session.initialize()).protocol_version == "2025-11-25"
                assert client.session.protocol_version == "2026-07-28"
                for _ in range(6):
                    assert [p.name for p in (await session.list_prompts()).prompts] == OLD
                    assert [p.name for p in (await client.list_prompts()).prompts] == OLD
                    await session.get_prompt("code_review", {"code": CODE})
                    await client.get_prompt("code_review", {"code": CODE})

                def old_load(group, stop):
                    group.start_soon(keep_getting, url, "code_review", {"code": CODE}, tally, stop)
                    group.start_soon(keep_getting_in, session, "code_review", {"code": CODE}, tally, stop)

                await restart_under_load(replicas[0], tally, old_load)

                async with client.listen(prompts_list_changed=True) as subscription:
                    assert subscription.honored.prompts_list_changed is True
                    published = time.monotonic()
                    second = publish(work, "dev_assistant", source, signed=True)
                    served_after = {}
                    while len(served_after) < len(addresses):
                        for address in addresses:
                            if address not in served_after and await listed_by(address) == NEW:
                                served_after[address] = time.monotonic() - published
                        await anyio.sleep(0.1)
                    event = await subscription.__anext__()
                    assert type(event).__name__ == "PromptsListChanged"
                await heard["session"].wait()
                print(f"\npublished {second}: served by each replica after "
                      + ", ".join(f"{seconds:.1f} s" for seconds in sorted(served_after.values()))
                      + f" (update_interval {UPDATE_INTERVAL_S} s, give or take a tenth)")

                for _ in range(6):
                    assert [p.name for p in (await session.list_prompts()).prompts] == NEW
                    assert [p.name for p in (await client.list_prompts()).prompts] == NEW
                    await session.get_prompt("explain-code", {"code": CODE})
                    await client.get_prompt("explain-code", {"code": CODE})

                def new_load(group, stop):
                    group.start_soon(keep_getting, url, "explain-code", {"code": CODE}, tally, stop)
                    group.start_soon(keep_getting_in, session, "explain-code", {"code": CODE}, tally, stop)

                await restart_under_load(replicas[1], tally, new_load)

                # An unsigned pack over the tag: refused by every replica.
                publish(work, "media_prompts", source, signed=False)
                while not all(update_checks(address, "refused") >= 1 for address in metrics):
                    await anyio.sleep(0.2)
                # The first pack again, which every replica was updated past.
                assert publish(work, "code_review", source, signed=True) == first
                while not all(update_checks(address, "refused") >= 3 for address in metrics):
                    await anyio.sleep(0.2)
                for address in addresses:
                    assert await listed_by(address) == NEW
                assert [p.name for p in (await session.list_prompts()).prompts] == NEW

        for replica in replicas:
            said = replica.log_path.read_text()
            refusals = [line for line in said.splitlines() if "following the registry" in line]
            assert any("no signature" in line for line in refusals), refusals
            assert any(f"now names {first}, which review was updated past" in line for line in refusals), refusals
        assert sum(1 for replica in replicas for line in replica.log_path.read_text().splitlines()
                   if "SIGTERM: stopping" in line) == 2
        assert tally.failures == [], tally.failures
    finally:
        for replica in replicas:
            replica.close()
        registry.stop()
