"""The monitoring files docs/deploy ships, checked by the tools that read
them: the alert rules by `promtool check rules` and by their own unit tests
(`promtool test rules`), then loaded, with every query of the Grafana
dashboard, into a real Prometheus (Debian's) scraping a real prompt-host
that served calls and refused a client: no rule and no query errs, and the
ones that should see data do."""

import json
import re
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import httpx2
import pytest

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from doc_runner import blocks as doc_blocks
from server import ROOT, http_server

DEPLOY = ROOT / "docs/deploy"
RULES = DEPLOY / "prometheus-rules.yml"
DASHBOARD = json.loads((DEPLOY / "grafana-dashboard.json").read_text())


def reference_rows() -> dict[str, tuple[str, set[str]]]:
    """docs/operating.md's metrics table: each metric's type and labels."""
    rows = {}
    for line in (ROOT / "docs/operating.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`prompt_host_"):
            kind = cells[1].split()[0]
            labels = set(re.findall(r"`([a-z_]+)`", cells[2]))
            for name in re.findall(r"`(prompt_host_[a-z_]+)`", cells[0]):
                rows[name] = (kind, labels)
    return rows


def metrics_the_reference_misses(exposition: str) -> list[str]:
    """What of a Prometheus text exposition the reference does not say: a
    family it does not name, of another type, or a label it does not list."""
    rows, missed, types = reference_rows(), [], {}
    for line in exposition.splitlines():
        typed = re.match(r"# TYPE (prompt_host_\w+) (\w+)", line)
        if typed:
            types[typed.group(1)] = typed.group(2)
            if typed.group(1) not in rows:
                missed.append(f"{typed.group(1)}: not in the table")
            elif rows[typed.group(1)][0] != typed.group(2):
                missed.append(f"{typed.group(1)}: a {typed.group(2)}, the table says {rows[typed.group(1)][0]}")
        sample = re.match(r"(prompt_host_\w+?)(_bucket|_sum|_count)?\{(.*)\} ", line)
        if sample and sample.group(1) in rows:
            for label in re.findall(r'(\w+)="', sample.group(3)):
                if label != "le" and label not in rows[sample.group(1)][1]:
                    missed.append(f"{sample.group(1)}: label {label} not listed")
    assert len(types) >= 15, f"too few families scraped to check: {sorted(types)}"
    return sorted(set(missed))


def test_the_metrics_check_finds_what_the_reference_misses():
    exposition = ("# TYPE prompt_host_new_thing_total counter\n"
                  "# TYPE prompt_host_plugins_loaded counter\n"
                  'prompt_host_plugin_calls_total{plugin="a",method="list",outcome="ok",tenant="x"} 1\n' +
                  "".join(f"# TYPE prompt_host_filler_{index} gauge\n" for index in range(15)))
    missed = metrics_the_reference_misses(exposition)
    assert "prompt_host_new_thing_total: not in the table" in missed
    assert "prompt_host_plugins_loaded: a counter, the table says gauge" in missed
    assert "prompt_host_plugin_calls_total: label tenant not listed" in missed


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_alert_rules_pass_promtool_and_their_unit_tests():
    checked = subprocess.run(["promtool", "check", "rules", str(RULES)], capture_output=True, text=True)
    assert checked.returncode == 0 and "SUCCESS: 8 rules found" in checked.stdout, checked.stdout + checked.stderr
    tested = subprocess.run(["promtool", "test", "rules", "prometheus-rules.test.yml"], cwd=DEPLOY, capture_output=True, text=True)
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr


def queries() -> list[str]:
    """Every query of the dashboard, as Grafana sends it with a 1m rate interval."""
    return [target["expr"].replace("$__rate_interval", "1m") for panel in DASHBOARD["panels"] for target in panel["targets"]]


@pytest.mark.anyio
async def test_every_dashboard_query_and_alert_rule_runs_on_a_real_prometheus(tmp_path):
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    metrics_port = free_port()
    with http_server(["code_review", "hostile"], "--metrics", f"127.0.0.1:{metrics_port}",
                     "--auth-token-file", str(token)) as (url, _):
        # Calls that succeed and fail, and a client refused for its token.
        async with create_mcp_http_client(headers={"Authorization": "Bearer s3cret"}) as http, \
                streamable_http_client(url, http_client=http) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.get_prompt("code_review", {"code": "x"})
            with pytest.raises(MCPError):
                await session.get_prompt("code_review", {})
            with pytest.raises(MCPError):
                await session.get_prompt("spin", {})
        assert httpx2.post(url, json={}, headers={"Authorization": "Bearer wrong"}).status_code == 401
        # The metrics reference names every family the live /metrics serves,
        # with its type and every label its samples carry.
        scraped = httpx2.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).text
        assert metrics_the_reference_misses(scraped) == []

        web_port = free_port()
        config = tmp_path / "prometheus.yml"
        # docs/operating.md's scrape config, as written but for the port and
        # the rules' path, after a global section that scrapes every second.
        [documented] = [body for info, body in doc_blocks((ROOT / "docs/operating.md").read_text()) if info == "yaml"]
        assert "prometheus-rules.yml   #" in documented and '"127.0.0.1:9464"' in documented, documented
        config.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            + documented.replace("prometheus-rules.yml   #", f"{RULES}   #")
            .replace('"127.0.0.1:9464"', f'"127.0.0.1:{metrics_port}"')
        )
        with tempfile.TemporaryDirectory() as storage:
            prometheus = subprocess.Popen(
                ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={storage}",
                 f"--web.listen-address=127.0.0.1:{web_port}"],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            )
            try:
                api = f"http://127.0.0.1:{web_port}/api/v1"

                def query(expr: str) -> dict:
                    return httpx2.get(f"{api}/query", params={"query": expr}, timeout=10).json()

                # Until it has scraped a few times (rates need two samples).
                deadline = time.monotonic() + 60
                while True:
                    try:
                        count = query("count_over_time(up{job=\"prompt-host\"}[1m])")
                        if count["data"]["result"] and float(count["data"]["result"][0]["value"][1]) >= 4:
                            break
                    except (httpx2.HTTPError, ValueError):  # not up yet, or not ready (503, text)
                        pass
                    assert time.monotonic() < deadline and prometheus.poll() is None, prometheus.stderr.read().decode()
                    time.sleep(0.5)

                answered = {}
                for expr in queries():
                    result = query(expr)
                    assert result["status"] == "success", f"{expr}: {result}"
                    answered[expr] = result["data"]["result"]
                assert len(answered) == 16
                with_data = [expr for expr, result in answered.items() if result]
                for seen in ["prompt_host_prompt_calls_total", "prompt_host_plugin_calls_total[", "prompt_host_plugins_loaded",
                             "prompt_host_catalog_prompts", "prompt_host_http_refusals_total", "=~\"fuel|"]:
                    assert any(seen in expr for expr in with_data), f"no data for {seen}: {answered}"
                # The refusal is counted by its reason; the fuel run-out as a limit hit.
                refusals = query("sum by (reason) (prompt_host_http_refusals_total)")["data"]["result"]
                assert [(r["metric"]["reason"], r["value"][1]) for r in refusals] == [("wrong-token", "1")]

                # Every alert rule is evaluated without error.
                time.sleep(2)
                rules = httpx2.get(f"{api}/rules", timeout=10).json()["data"]["groups"][0]["rules"]
                assert sorted(rule["name"] for rule in rules) == sorted([
                    "PromptHostDown", "PromptHostNoPluginLoaded", "PromptHostPluginFailing", "PromptHostPluginHittingLimits",
                    "PromptHostPluginLoadFailed", "PromptHostSlowPrompts", "PromptHostRefusingClients",
                    "PromptHostReplicasDisagree",
                ])
                assert [(rule["name"], rule["health"]) for rule in rules if rule["health"] != "ok"] == []
            finally:
                prometheus.terminate()
                prometheus.wait(timeout=30)
