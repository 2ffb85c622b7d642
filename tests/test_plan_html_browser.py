"""The plan page (``gpu-platform plan STACK --html FILE``) in a real browser: the system's Chromium (Debian package
``chromium``) driven by Playwright, offline.

The page is opened from file://; every request it makes is routed here, and one to anything but file:// fails the
test (the page must load nothing), as does any console error or uncaught exception. Expected values come from the
stack files and the plan/cost objects (the numbers ``gpu-platform plan`` and ``cost`` print), never from the page
generator. Without chromium the tests skip, except under CI (CI=true), which installs it (.ci/run).

``GPU_PLATFORM_DOCS_SCREENSHOT=docs/images/plan-html.png`` also writes the docs' screenshot of prod-aws's page.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.cli import main as cli
from components.cli.plans import shipped_plan
from components.cli.urns import ROOT
from components.plan import cost
from components.plan.cost_text import usd

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _browser_or_skip():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover - the dev lock has it
        sync_playwright = None
    if CHROMIUM is None or sync_playwright is None:
        reason = "chromium (apt-get install chromium) or the playwright package is missing"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the browser test: {reason} (.ci/run installs chromium)")
        pytest.skip(reason)
    return sync_playwright


@pytest.fixture(scope="module")
def browser():
    sync_playwright = _browser_or_skip()
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


class Opened:
    def __init__(self, page: Any) -> None:
        self.page = page
        self.errors: list[str] = []
        self.outside: list[str] = []


def _open(browser, path: Path) -> Opened:
    page = browser.new_page()
    opened = Opened(page)

    def route(r):
        url = r.request.url
        if url.startswith("file://"):
            r.continue_()
        else:
            opened.outside.append(url)
            r.abort()

    page.route("**/*", route)
    page.on("console", lambda m: m.type == "error" and opened.errors.append(m.text))
    page.on("pageerror", lambda e: opened.errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_function("() => window.cy && window.cy.nodes().length > 0")
    return opened


def _stack(stack: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]


def _page(tmp_path: Path, stack: str, *extra: str) -> Path:
    out = tmp_path / f"{stack}.html"
    assert cli.main(["plan", stack, "--html", str(out), *extra]) == 0
    return out


def _row(page, table: str, key: str, name: str) -> list[str]:
    cells = page.locator(f'#{table} tr[data-{key}="{name}"] td')
    return [c.strip() for c in cells.all_inner_texts()]


@pytest.mark.parametrize("stack", ["prod-aws", "dra-existing", "dev-gcp"])
def test_every_pool_and_tenant_shows_the_plans_numbers_offline(browser, tmp_path, stack):
    cfg = _stack(stack)
    decided = shipped_plan(stack)
    doc = cost.report_of(decided)
    opened = _open(browser, _page(tmp_path, stack))
    page = opened.page
    pools = {p["name"]: p for p in doc["pools"]}
    for spec in cfg["gpu-platform:nodePools"]:
        name = spec["name"]
        row = _row(page, "pool-table", "pool", name)
        assert row and row[0] == name
        p = decided.pools[name]  # nodes x GPUs per node (the stack file's, defaults filled by the plan)
        assert p.gpus_per_node == spec["gpu"]["perNode"]
        assert row[7] == f"{p.min_nodes * p.gpus_per_node}..{p.max_nodes * p.gpus_per_node}", name
        assert row[3] == decided.pools[name].capacity
        assert row[1] == decided.pools[name].provisioner
        assert row[10] == usd(pools[name]["hourlyUsd"]["max"]), name
        uncovered = decided.pools[name].uncovered_gpus
        assert row[12].startswith(f"⚠ {uncovered} ") if uncovered else row[12] == ("-" if uncovered is None else "0")
        assert page.locator(f'#pool-table tr[data-pool="{name}"].uncovered').count() == (1 if uncovered else 0)
    tenants = {t["name"]: t for t in doc["tenants"]}
    for spec in cfg.get("gpu-platform:tenants", []):
        name = spec["name"]
        row = _row(page, "tenant-table", "tenant", name)
        assert row and row[0] == name
        nominal = ", ".join(f"{pool}: {n}" for pool, n in sorted(spec["gpuQuota"].items()))
        assert row[3] == nominal, name
        assert row[4] == usd(tenants[name]["nominal"]["hourlyUsd"]), name
    graph_nodes = set(page.evaluate("() => window.cy.nodes().map(n => n.id())"))
    # a node per cohort and pool where a Kueue tenant of the cohort lends something (the plan's pool_lent_units)
    cohorts = {
        f"cohort:{t.cohort}/{pool}"
        for t in decided.tenants.values()
        if t.cluster_queue and t.cohort
        for pool, units in t.pool_lent_units.items()
        if any(units.values())
    }
    assert (
        graph_nodes
        == {f"pool:{p['name']}" for p in cfg["gpu-platform:nodePools"]}
        | {f"tenant:{t['name']}" for t in cfg.get("gpu-platform:tenants", [])}
        | cohorts
    )
    assert page.locator("#graph canvas").count() > 0  # Cytoscape drew
    assert opened.outside == [] and opened.errors == []
    page.close()


def test_the_graph_says_what_each_tenant_lends_its_cohort_and_can_borrow_from_it(browser, tmp_path):
    """dra-existing, cohort shared: on h100 research lends 10 and serving 4 (notebooks, dev, nothing), so the
    cohort holds 14 there and each can borrow what the others lend: research 4, serving 10, notebooks 14; on
    a100-mig (2 MIG devices per GPU) research and serving lend 8 each and each can borrow the other's 8."""
    opened = _open(browser, _page(tmp_path, "dra-existing"))
    page = opened.page
    edges = page.evaluate(
        "() => window.cy.edges().filter(e => ['lend', 'borrow'].includes(e.data('kind')))"
        ".map(e => [e.source().id(), e.target().id(), e.data('label')])"
    )
    h100, mig = "gpu.nvidia.com/devices", "mig.nvidia.com/devices"
    assert sorted(map(tuple, edges)) == sorted(
        [
            ("tenant:research", "cohort:shared/h100", f"lends 10 {h100}"),
            ("tenant:serving", "cohort:shared/h100", f"lends 4 {h100}"),
            ("tenant:research", "cohort:shared/a100-mig", f"lends 8 {mig}"),
            ("tenant:serving", "cohort:shared/a100-mig", f"lends 8 {mig}"),
            ("cohort:shared/h100", "tenant:research", f"borrows up to 4 {h100}"),
            ("cohort:shared/h100", "tenant:serving", f"borrows up to 10 {h100}"),
            ("cohort:shared/h100", "tenant:notebooks", f"borrows up to 14 {h100}"),
            ("cohort:shared/a100-mig", "tenant:research", f"borrows up to 8 {mig}"),
            ("cohort:shared/a100-mig", "tenant:serving", f"borrows up to 8 {mig}"),
        ]
    )
    labels = dict(page.evaluate("() => window.cy.nodes('.cohort').map(n => [n.id(), n.data('label')])"))
    assert labels == {
        "cohort:shared/h100": f"cohort shared on h100\n14 {h100} lent",
        "cohort:shared/a100-mig": f"cohort shared on a100-mig\n16 {mig} lent",
    }
    notebooks = _row(page, "tenant-table", "tenant", "notebooks")
    assert notebooks[7:9] == [f"cohort shared on h100 (up to 14 {h100})", "-"]
    research = _row(page, "tenant-table", "tenant", "research")
    assert research[8] == f"cohort shared on a100-mig (8 {mig}); cohort shared on h100 (10 {h100})"
    assert opened.outside == [] and opened.errors == []


def test_a_request_leaving_the_page_is_caught(browser, tmp_path):
    """The guard itself: a page that fetches from the network is reported (else an empty list proves nothing)."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<html><body><script>window.cy={nodes:()=>[1]};</script><img src="http://192.0.2.1/x.png"></body></html>'
    )
    opened = _open(browser, bad)
    opened.page.wait_for_timeout(200)
    assert opened.outside == ["http://192.0.2.1/x.png"]


def test_the_diff_page_flags_a_renamed_pool_as_replace_and_drain(browser, tmp_path):
    cfg = (ROOT / "stacks" / "Pulumi.prod-aws.yaml").read_text()
    new = tmp_path / "Pulumi.prod-aws.yaml"
    new.write_text(cfg.replace("a100-train", "a100-big").replace("name: a100-big\n", "name: a100-big\n", 1))
    out = tmp_path / "diff.html"
    assert (
        cli.main(
            [
                "plan",
                "prod-aws",
                "--config",
                str(new),
                "--html",
                str(out),
                "--against",
                str(ROOT / "stacks" / "Pulumi.prod-aws.yaml"),
            ]
        )
        == 0
    )
    opened = _open(browser, out)
    lines = opened.page.locator("#diff-lines li.replace").all_inner_texts()
    assert any(line.startswith("REPLACE+DRAIN pool a100-train -> a100-big") for line in lines), lines
    deleted = opened.page.locator("#diff-lines li.delete").all_inner_texts()
    assert any(line.endswith("aws:eks/nodeGroup:NodeGroup::a100-train") for line in deleted), deleted
    assert opened.outside == [] and opened.errors == []
    screenshot = os.environ.get("GPU_PLATFORM_DOCS_SCREENSHOT")
    if screenshot:
        page = _open(browser, _page(tmp_path, "prod-aws")).page
        page.set_viewport_size({"width": 1400, "height": 900})
        page.screenshot(path=str(ROOT / screenshot), full_page=True)
