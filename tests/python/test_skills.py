"""Skills and resources from packs (issue "Every client reaches a pack",
SEP-2640): the official MCP Python SDK client lists the skills a WIT 0.4 pack
carries, reads every file back with `resources/read` and checks it against
the digest and size `skills/list` gave, over stdio and over Streamable HTTP;
a hot add tells it with `notifications/resources/list_changed`; a pack whose
skill breaks a rule is refused at load, naming the file. The SDK has no
skills helper yet: `skills/*` go through its raw `send_request`."""

import base64
import hashlib
import shutil
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import TypeAdapter

from mcp import Client, ClientSession, StdioServerParameters, types
from mcp.shared.exceptions import MCPError

from server import BINARY, BUILT, http_server, install

RAW = TypeAdapter(dict[str, Any])
SKILLS = "io.modelcontextprotocol/skills"


class RawRequest(types.Request[dict[str, Any] | None, str]):
    """A request of a method the SDK does not know, its params as given."""


async def raw(session: ClientSession, method: str, params: dict | None = None) -> dict:
    return await session.send_request(RawRequest(method=method, params=params), RAW)


async def every_skill(session: ClientSession) -> list[dict]:
    skills, cursor = [], None
    while True:
        page = await raw(session, "skills/list", {"cursor": cursor} if cursor else None)
        skills += page["skills"]
        cursor = page.get("nextCursor")
        if cursor is None:
            return skills


def content_bytes(contents) -> bytes:
    if getattr(contents, "text", None) is not None:
        return contents.text.encode()
    return base64.b64decode(contents.blob)


async def read_and_verify_every_file(session: ClientSession, skills: list[dict]) -> dict[str, bytes]:
    """Reads each file every skill lists; asserts its bytes match the digest
    and size it was listed with; returns the bytes by URI."""
    read = {}
    for skill in skills:
        for entry in skill["resources"]:
            result = await session.read_resource(entry["uri"])
            [contents] = result.contents
            assert contents.uri == entry["uri"]
            data = content_bytes(contents)
            assert entry["digest"] == "sha256:" + hashlib.sha256(data).hexdigest(), entry["uri"]
            assert entry["size"] == len(data), entry["uri"]
            read[entry["uri"]] = data
    return read


def stdio(tmp_path: Path, plugins: list[str]) -> tuple[StdioServerParameters, Path]:
    plugin_dir = tmp_path / "plugins"
    plugin_dir.mkdir()
    for plugin in plugins:
        shutil.copy(BUILT / f"{plugin}.wasm", plugin_dir / f"{plugin}.wasm")
    log = tmp_path / "server.log"
    args = ["serve", "--plugins", str(plugin_dir), "--cache-dir", str(tmp_path / "cache")]
    return StdioServerParameters(command=BINARY, args=args), log


EXPECTED_URIS = [
    "skill://analyze-project/SKILL.md",
    "skill://analyze-project/references/checklist.md",
    "skill://release-notes/SKILL.md",
    "skill://release-notes/assets/logo.png",
    "skill://release-notes/scripts/collect.sh",
]


async def check_both_packs(session: ClientSession) -> None:
    skills = await every_skill(session)
    assert [skill["uri"] for skill in skills] == ["skill://analyze-project/SKILL.md", "skill://release-notes/SKILL.md"]
    read = await read_and_verify_every_file(session, skills)
    assert sorted(read) == EXPECTED_URIS
    assert read["skill://release-notes/assets/logo.png"] == (ROOT_PLUGINS / "conformance/src/pixel.png").read_bytes()
    # The frontmatter verbatim, as JSON: YAML's booleans and numbers stay typed.
    release = skills[1]["frontmatter"]
    assert release["metadata"] == {"audience": "maintainers", "reviewed": True, "level": 2}
    assert release["allowed-tools"] == ["Read"]
    assert read["skill://release-notes/SKILL.md"].startswith(b"---\nname: release-notes\n")
    # skills/get gives the entry skills/list gave; an unserved URI is -32602 naming it.
    got = await raw(session, "skills/get", {"uri": "skill://release-notes/SKILL.md"})
    assert got["skill"] == skills[1]
    with pytest.raises(MCPError) as raised:
        await raw(session, "skills/get", {"uri": "skill://no-such-skill/SKILL.md"})
    assert (raised.value.error.code, raised.value.error.data) == (-32602, {"uri": "skill://no-such-skill/SKILL.md"})
    # A URI that is no SKILL.md's is refused by rmcp before the handler.
    with pytest.raises(MCPError) as raised:
        await raw(session, "skills/get", {"uri": "skill://release-notes/scripts/collect.sh"})
    assert raised.value.error.code == -32602
    # resources/list: plugin by plugin, each skill's files (SKILL.md named and
    # described by its frontmatter), then its static resources (the one
    # project_insights embeds in replies).
    listed = (await session.list_resources()).resources
    assert [resource.uri for resource in listed] == EXPECTED_URIS[:2] + ["prompt-pack://project-insights/checklist.md"] + EXPECTED_URIS[2:]
    skill_md = next(resource for resource in listed if resource.uri == "skill://release-notes/SKILL.md")
    assert (skill_md.name, skill_md.description, skill_md.mime_type) == ("release-notes", release["description"], "text/markdown")
    # A folder lists its children, folders as inode/directory.
    folder = await raw(session, "resources/directory/read", {"uri": "skill://release-notes"})
    assert [(child["uri"], child.get("mimeType")) for child in folder["resources"]] == [
        ("skill://release-notes/assets", "inode/directory"),
        ("skill://release-notes/scripts", "inode/directory"),
        ("skill://release-notes/SKILL.md", "text/markdown"),
    ]
    with pytest.raises(MCPError) as raised:
        await session.read_resource("skill://release-notes/../analyze-project/SKILL.md")
    assert (raised.value.error.code, raised.value.error.data) == (-32602, {"uri": "skill://release-notes/../analyze-project/SKILL.md"})


ROOT_PLUGINS = Path(__file__).resolve().parents[2] / "plugins"


@pytest.mark.anyio
async def test_over_stdio_every_file_of_every_skill_matches_its_digest(tmp_path):
    server, _ = stdio(tmp_path, ["project_insights", "release_skills"])
    async with Client(server) as client:
        capabilities = client.server_capabilities
        assert capabilities.extensions == {SKILLS: {"directoryRead": True}}
        assert capabilities.resources is not None and capabilities.resources.list_changed is True
        await check_both_packs(client.session)


@pytest.mark.anyio
async def test_over_http_every_file_of_every_skill_matches_its_digest():
    with http_server(["project_insights", "release_skills"]) as (url, _):
        async with Client(url) as client:
            assert client.server_capabilities.extensions == {SKILLS: {"directoryRead": True}}
            await check_both_packs(client.session)


@pytest.mark.anyio
async def test_a_hot_add_of_a_skill_is_heard_by_a_listening_client_over_stdio(tmp_path):
    server, _ = stdio(tmp_path, ["project_insights"])
    plugin_dir = tmp_path / "plugins"
    async with Client(server) as client:
        assert client.session.protocol_version == "2026-07-28"
        assert [skill["uri"] for skill in await every_skill(client.session)] == ["skill://analyze-project/SKILL.md"]
        async with client.listen(resources_list_changed=True) as subscription:
            assert subscription.honored.resources_list_changed is True
            install(plugin_dir, "release_skills")
            with anyio.fail_after(20):
                event = await subscription.__anext__()
            assert type(event).__name__ == "ResourcesListChanged"
        skills = await every_skill(client.session)
        assert [skill["uri"] for skill in skills] == ["skill://analyze-project/SKILL.md", "skill://release-notes/SKILL.md"]
        await read_and_verify_every_file(client.session, skills)


@asynccontextmanager
async def session_hearing_resource_changes(url: str):
    """An initialized session over HTTP whose event stream is open, and the
    event set when `notifications/resources/list_changed` reaches it."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    from server import on_stream_opened

    heard, opened = anyio.Event(), anyio.Event()

    async def on_message(message):
        if getattr(message, "method", None) == "notifications/resources/list_changed":
            heard.set()

    http = create_mcp_http_client()
    http.event_hooks["response"].append(on_stream_opened(opened))
    async with http, streamable_http_client(url, http_client=http) as (read, write), \
            ClientSession(read, write, message_handler=on_message) as session:
        await session.initialize()
        with anyio.fail_after(20):
            await opened.wait()
        yield session, heard


@pytest.mark.anyio
async def test_a_hot_add_of_a_skill_is_heard_by_a_session_over_http():
    with http_server(["project_insights"]) as (url, plugin_dir):
        async with session_hearing_resource_changes(url) as (session, heard):
            install(plugin_dir, "release_skills")
            with anyio.fail_after(20):
                await heard.wait()
            skills = await every_skill(session)
            assert [skill["uri"] for skill in skills] == ["skill://analyze-project/SKILL.md", "skill://release-notes/SKILL.md"]
            await read_and_verify_every_file(session, skills)


def wait_for_line(log: Path, text: str, seconds: float = 20) -> str:
    import time

    until = time.monotonic() + seconds
    while time.monotonic() < until:
        for line in log.read_text().splitlines():
            if text in line:
                return line
        time.sleep(0.05)
    raise AssertionError(f"no line with {text!r} in {log.read_text()}")


@pytest.mark.anyio
async def test_a_hot_add_never_takes_a_uri_a_running_pack_serves():
    with http_server(["project_insights"]) as (url, plugin_dir):
        async with Client(url) as client:
            before = await every_skill(client.session)
            # The same pack under a name that sorts first: its skill is skipped,
            # said once, naming both plugins.
            shutil.copyfile(BUILT / "project_insights.wasm", plugin_dir / ".aaa_copy.partial")
            (plugin_dir / ".aaa_copy.partial").rename(plugin_dir / "aaa_copy.wasm")
            line = wait_for_line(plugin_dir.parent / "server.log", "already serves that URI")
            assert "'skill://analyze-project/SKILL.md' of plugin 'aaa_copy' is skipped: plugin 'project_insights' already serves that URI" in line
            assert await every_skill(client.session) == before


@pytest.mark.anyio
async def test_a_pack_whose_skill_breaks_a_rule_is_refused_naming_the_file():
    with http_server(["hostile_skills", "code_review"]) as (url, plugin_dir):
        line = wait_for_line(plugin_dir.parent / "server.log", "hostile_skills")
        async with Client(url) as client:
            # Nothing of it is served: no skills extension, no resources, no prompt.
            assert client.server_capabilities.extensions is None
            assert client.server_capabilities.resources is None
            assert [prompt.name for prompt in (await client.list_prompts()).prompts] == ["code_review"]
        log = (plugin_dir.parent / "server.log").read_text()
        assert 'skill file \\"evil/../../etc/passwd\\": its path has the segment \\"..\\"' in log, log


# The attacks of the issue "Every client reaches a pack" that must end in a
# clear refusal at load, naming the pack: each made by the hostile_skills
# fixture once its marker names it (see plugins/hostile-skills), and what
# the host says of it. The huge file is 100 MiB (a 1 GiB one would exceed
# the pack's own memory limit before the host saw it); the host refuses it
# at the copy, before it holds it.
ATTACKS = {
    "alias": 'skill "laughs": its SKILL.md: its frontmatter uses a YAML anchor (&a0) at line 4: anchors are refused, '
             "write the value out",
    "deep": 'skill "deep": its SKILL.md: its frontmatter nests deeper than 8 levels',
    "big-front": 'skill "big": its SKILL.md: its frontmatter has no closing --- line within 16384 bytes, the most '
                 "frontmatter may hold",
    "dotdot": 'skill file "a/../b/SKILL.md": its path has the segment "..": paths name files beneath the skill, never above',
    "absolute": 'skill file "/etc/a/SKILL.md": its path has an empty segment (a leading, trailing or doubled \'/\'): '
                "paths are relative",
    "backslash": "skill file \"a\\\\b.md\": its path holds '\\\\', which a skill path may not",
    "nul": "skill file \"a/b\\\\u{0}.md\": its path holds '\\0', which a skill path may not",
    "control": "skill file \"a/b\\\\u{7}.md\": its path holds '\\u{7}', which a skill path may not",
    "bidi": "skill file \"a/b\\\\u{202e}dm.exe\": its path holds '\\u{202e}', which a skill path may not",
    "long-path": "its path is 4098 bytes, more than the limit of 256 (limits.max_content_path_bytes)",
    "case": 'skill files "a/notes.md" and "a/Notes.md" differ only in case',
    "normalize": "skill file \"a/caf\\u{e9}.md\": its path holds 'é', which a skill path may not",
    "file-dir": 'skill file "a/b" is also a folder of other files',
    "name-diff": 'skill "reviews": its SKILL.md names it "review", and a skill\'s name must be its folder\'s name',
    "many-files": "it carries 100001 skill files, more than 64 skills of 256 files each (limits.max_skill_files)",
    "huge-file": "failed while listing its prompts: it returned more than the 5210112 bytes the host copies out of one call",
    "not-utf8": 'skill "a": its SKILL.md is not UTF-8 text',
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_each_attack_on_skills_is_refused_at_load_naming_the_pack_and_the_reason(attack, tmp_path):
    import subprocess

    from doc_runner import environment

    marker = b"hostile-skills-attack:default\0\0\0"
    built = (BUILT / "hostile_skills.wasm").read_bytes()
    assert built.count(marker) == 1
    wasm = tmp_path / "hostile_skills.wasm"
    wasm.write_bytes(built.replace(marker, (b"hostile-skills-attack:" + attack.encode()).ljust(len(marker), b"\0")))
    # Memory enough for the pack to make its 100 MiB file: the host's bound must refuse it, not the pack's.
    config = tmp_path / "prompt-host.toml"
    config.write_text("[plugins.hostile_skills.limits]\nmemory_mib = 512\n")
    inspected = subprocess.run([BINARY, "inspect", "--config", str(config), str(wasm)], env=environment(BINARY),
                               capture_output=True, text=True, timeout=120)
    assert inspected.returncode == 1, inspected.stdout + inspected.stderr
    # The pack named, then the reason (the paths that are not ASCII are two problems, each named).
    problems = "2 problems" if attack == "normalize" else "1 problem"
    assert inspected.stdout.startswith(f"hostile_skills: this host would refuse it ({problems})\n"), inspected.stdout
    assert f"    1. {ATTACKS[attack]}" in inspected.stdout or (attack == "long-path" and ATTACKS[attack] in inspected.stdout), \
        inspected.stdout


@pytest.mark.anyio
async def test_each_tenant_sees_and_reads_only_its_own_packs_skills():
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    from test_authorization import site

    with site(packs={"acme": ["project_insights"], "globex": ["release_skills"]}) as (provider, url, _, _):
        tokens = {tenant: provider.token(f"{tenant}-client") for tenant in ("acme", "globex")}
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {tokens['acme']}"}) as acme_http, \
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {tokens['globex']}"}) as globex_http, \
                streamable_http_client(url, http_client=acme_http) as (read_a, write_a), \
                streamable_http_client(url, http_client=globex_http) as (read_g, write_g), \
                ClientSession(read_a, write_a) as acme, ClientSession(read_g, write_g) as globex:
            await acme.initialize()
            await globex.initialize()
            acme_skills = await every_skill(acme)
            globex_skills = await every_skill(globex)
            assert [skill["uri"] for skill in acme_skills] == ["skill://analyze-project/SKILL.md"]
            assert [skill["uri"] for skill in globex_skills] == ["skill://release-notes/SKILL.md"]
            await read_and_verify_every_file(globex, globex_skills)
            # Another tenant's skill and files are answered exactly as unknown ones.
            for uri in ("skill://release-notes/SKILL.md", "skill://release-notes/scripts/collect.sh"):
                with pytest.raises(MCPError) as raised:
                    await acme.read_resource(uri)
                assert (raised.value.error.code, raised.value.error.data) == (-32602, {"uri": uri})
            with pytest.raises(MCPError) as raised:
                await raw(acme, "skills/get", {"uri": "skill://release-notes/SKILL.md"})
            assert (raised.value.error.code, raised.value.error.data) == (-32602, {"uri": "skill://release-notes/SKILL.md"})
            with pytest.raises(MCPError) as raised:
                await raw(acme, "resources/directory/read", {"uri": "skill://release-notes"})
            assert raised.value.error.code == -32602


@pytest.mark.anyio
async def test_a_session_keeps_the_capabilities_it_was_told_of_when_the_packs_change():
    # Review of this feature: the methods followed the packs of the moment,
    # so a session told of skills got -32601 once they went.
    from mcp.client.streamable_http import streamable_http_client

    with http_server(["project_insights", "code_review"]) as (url, plugin_dir):
        async with session_hearing_resource_changes(url) as (told, heard), \
                streamable_http_client(url) as (read_b, write_b), ClientSession(read_b, write_b) as untold:
            (plugin_dir / "project_insights.wasm").unlink()
            with anyio.fail_after(20):
                await heard.wait()
            # Told of skills at initialize: the methods stay, with nothing in them.
            assert (await raw(told, "skills/list"))["skills"] == []
            with pytest.raises(MCPError) as raised:
                await told.read_resource("skill://analyze-project/SKILL.md")
            assert (raised.value.error.code, raised.value.error.data) == (-32602, {"uri": "skill://analyze-project/SKILL.md"})
            # A session opened now is told of none, and keeps that when skills come.
            result = await untold.initialize()
            assert result.capabilities.extensions is None and result.capabilities.resources is None
            install(plugin_dir, "release_skills")
            wait_for_line(plugin_dir.parent / "server.log", "plugin=release_skills")
            with pytest.raises(MCPError) as raised:
                await raw(untold, "skills/list")
            assert raised.value.error.code == -32601


@pytest.mark.anyio
async def test_a_skill_prefix_serves_two_packs_with_the_same_skill_side_by_side(tmp_path):
    # Two packs carrying skill://analyze-project: without a prefix the
    # second is skipped (above); with [plugins.NAME] skill_prefix both serve.
    config = tmp_path / "prompt-host.toml"
    config.write_text('[plugins.second_insights]\nskill_prefix = "team-b"\nprefix = "b-"\n')
    with http_server(["project_insights"], "--config", str(config)) as (url, plugin_dir):
        shutil.copyfile(BUILT / "project_insights.wasm", plugin_dir / ".second.partial")
        (plugin_dir / ".second.partial").rename(plugin_dir / "second_insights.wasm")
        wait_for_line(plugin_dir.parent / "server.log", "plugin=second_insights")
        async with Client(url) as client:
            skills = await every_skill(client.session)
            assert [skill["uri"] for skill in skills] == [
                "skill://analyze-project/SKILL.md",
                "skill://team-b/analyze-project/SKILL.md",
            ]
            assert [entry["uri"] for entry in skills[1]["resources"]] == [
                "skill://team-b/analyze-project/SKILL.md",
                "skill://team-b/analyze-project/references/checklist.md",
            ]
            read = await read_and_verify_every_file(client.session, skills)
            assert read["skill://team-b/analyze-project/SKILL.md"] == read["skill://analyze-project/SKILL.md"]
        # The prefix is the skills': a static resource keeps the URI its pack
        # gave it, and the copy's is skipped as any clash is.
        skipped = [line for line in (plugin_dir.parent / "server.log").read_text().splitlines() if "already serves that URI" in line]
        assert len(skipped) == 1 and "'prompt-pack://project-insights/checklist.md' of plugin 'second_insights'" in skipped[0], skipped
