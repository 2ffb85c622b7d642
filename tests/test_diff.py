"""``gpu-platform diff`` (components/cli/diff.py), the lending graph's uncovered GPUs and its Mermaid in summary.md
(components/plan/lending.py; its edges: tests/test_lending_graph.py) and the page's self-containment (the browser
test, tests/test_plan_html_browser.py, opens it)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from components.cli import main as cli, synth
from components.cli.plans import shipped_plan
from components.cli.tables import table
from components.cli.urns import ROOT
from components.plan import cost, lending
from tests.conftest import rendered

PROD = ROOT / "stacks" / "Pulumi.prod-aws.yaml"
NODE_GROUP = "gpu-platform:aws:EksGpuNodeGroups$aws:eks/nodeGroup:NodeGroup::"


def _edited(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "Pulumi.prod-aws.yaml"
    path.write_text(text)
    return path


def _diff(capsys, *args: str) -> tuple[int, dict]:
    code = cli.main(["diff", "prod-aws", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_renaming_a_pool_is_flagged_as_replace_and_drain_with_the_deleted_urns(tmp_path, capsys):
    new = _edited(tmp_path, PROD.read_text().replace("a100-train", "a100-big"))
    code, doc = _diff(capsys, "--config", str(new))
    assert code == 3
    assert doc["pools"]["renamed"] == [{"from": "a100-train", "to": "a100-big"}]
    assert doc["pools"]["drained"] == ["a100-train"] and doc["pools"]["removed"] == []
    deleted = doc["resources"]["deleted"]
    assert f"urn:pulumi:prod-aws::gpu-platform::{NODE_GROUP}a100-train" in deleted
    assert any(u.endswith("ResourceFlavor::flavor-a100-train") for u in deleted)
    assert f"urn:pulumi:prod-aws::gpu-platform::{NODE_GROUP}a100-big" in doc["resources"]["created"]
    # same shape, same price: the stack costs what it did
    assert doc["cost"]["maxHourlyUsd"]["delta"] == 0
    cli.main(["diff", "prod-aws", "--config", str(new)])
    text = capsys.readouterr().out
    assert "REPLACE+DRAIN pool a100-train -> a100-big" in text.splitlines()[1]
    assert text.rstrip().endswith("review before pulumi up (exit 3)")


def test_another_instance_type_replaces_the_node_group_and_drains_the_pool(tmp_path, capsys):
    lines = PROD.read_text().splitlines(keepends=True)
    assert lines[9].strip() == "gpu: {model: A100-80GB, perNode: 8}" and "p4de.24xlarge" in lines[10]
    lines[9] = lines[9].replace("A100-80GB", "A100-40GB")
    lines[10] = lines[10].replace("p4de", "p4d")
    code, doc = _diff(capsys, "--config", str(_edited(tmp_path, "".join(lines))))
    assert code == 3
    replaced = {r["urn"].rsplit("::", 1)[1]: r["because"] for r in doc["resources"]["replaced"]}
    assert replaced == {"a100-train": ["instanceTypes"]}  # the EKS node group, ForceNew instance_types
    (change,) = doc["pools"]["changed"]
    assert change["pool"] == "a100-train" and change["newNodes"]
    assert change["fields"]["instanceTypes"] == [["p4de.24xlarge"], ["p4d.24xlarge"]]


def test_growing_a_pool_is_an_update_priced_by_its_node_price(tmp_path, capsys):
    before = {p["name"]: p for p in cost.report_of(shipped_plan("prod-aws"))["pools"]}["a100-train"]
    assert before["nodes"]["max"] == 4
    new = _edited(tmp_path, PROD.read_text().replace("      maxNodes: 4\n", "      maxNodes: 6\n", 1))
    code, doc = _diff(capsys, "--config", str(new))
    assert code == 0  # nothing replaced, deleted or drained
    assert doc["resources"]["replaced"] == [] and doc["resources"]["deleted"] == []
    assert f"urn:pulumi:prod-aws::gpu-platform::{NODE_GROUP}a100-train" in doc["resources"]["updated"]
    assert doc["pools"]["changed"] == [
        {"pool": "a100-train", "fields": {"maxNodes": [4, 6], "maxGpus": [32, 48]}, "newNodes": False}
    ]
    two_nodes = 2 * before["onDemandPerNodeHour"]["usd"]
    assert abs(doc["cost"]["maxHourlyUsd"]["delta"] - two_nodes) < 0.01
    assert abs(doc["cost"]["pools"]["a100-train"]["delta"] - two_nodes) < 0.01


def test_against_a_saved_plan_compares_pools_and_cost_but_not_urns(tmp_path, capsys):
    assert cli.main(["plan", "prod-aws", "--json"]) == 0
    saved = tmp_path / "before.json"
    saved.write_text(capsys.readouterr().out)
    new = _edited(tmp_path, PROD.read_text().replace("a100-train", "a100-big"))
    code, doc = _diff(capsys, "--config", str(new), "--against", str(saved))
    assert code == 3 and doc["resources"] is None
    assert doc["pools"]["renamed"] == [{"from": "a100-train", "to": "a100-big"}]
    assert cli.main(["diff", "prod-aws", "--against", str(saved)]) == 0  # the same stack: nothing changes
    assert "Resources: not compared" in capsys.readouterr().out


def test_an_unusable_side_is_one_line_naming_the_file_and_key_exit_2(tmp_path, capsys):
    bad = _edited(tmp_path, PROD.read_text().replace("perNode: 8}", "perNode: -1}", 1))
    assert cli.main(["diff", "prod-aws", "--config", str(bad)]) == 2
    out = capsys.readouterr()
    assert out.out == "" and "Traceback" not in out.err
    assert re.search(r"Pulumi\.prod-aws\.yaml: gpu-platform:nodePools\[0\]\.gpu\.perNode", out.err), out.err
    junk = tmp_path / "old.json"
    junk.write_text('{"pools": {}}')
    assert cli.main(["diff", "prod-aws", "--against", str(junk)]) == 2
    assert "not a plan of schemaVersion" in capsys.readouterr().err


def test_uncovered_gpus_are_marked_as_the_stack_file_adds_them_up():
    cfg = yaml.safe_load(PROD.read_text())["config"]
    quota: dict[str, int] = {}
    for t in cfg["gpu-platform:tenants"]:
        if t.get("scheduler") != "volcano":
            for pool, n in t["gpuQuota"].items():
                quota[pool] = quota.get(pool, 0) + n
    decided = shipped_plan("prod-aws")
    expected = {}
    for p in cfg["gpu-platform:nodePools"]:
        gpus = decided.pools[p["name"]].max_nodes * p["gpu"]["perNode"]
        if p["name"] in quota and gpus > quota[p["name"]]:
            expected[p["name"]] = gpus - quota[p["name"]]
    assert lending.graph(decided).uncovered == expected
    mermaid = "\n".join(lending.mermaid(decided))
    for name, n in expected.items():
        assert f"{name}<br/>" in mermaid and f"⚠ {n} GPUs in no nominal quota" in mermaid
    assert "class " + ",".join(f"pool_{n.replace('-', '_')}" for n in sorted(expected)) + " uncovered" in mermaid


def test_summary_carries_the_mermaid_graph_and_the_synth_writes_the_page():
    files = synth.files(rendered("prod-aws"))
    summary = files["summary.md"]
    block = summary.split("## Who can take what from whom\n\n```mermaid\n", 1)[1].split("```", 1)[0]
    assert block.startswith("flowchart LR\n")
    assert '  pool_a100_gang -- "nominal 16 GPUs" --> tenant_applied_ml\n' in block
    # research lends its 16 a100-train GPUs to its cohort (the default, gpu-platform): a hexagon per cohort and pool
    assert (
        '  cohort_gpu_platform_ON_a100_train{{"cohort gpu-platform<br/>on a100-train: 16 nvidia.com/gpu lent"}}\n'
        in block
    )
    assert '  tenant_research -. "lends 16 nvidia.com/gpu" .-> cohort_gpu_platform_ON_a100_train\n' in block
    page = files["plan.html"]
    assert "default-src 'none'" in page  # the CSP: the page may fetch nothing
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # nothing loaded from elsewhere


def test_tables_align_columns_and_right_align_numbers():
    out = table(["pool", "GPUs"], [["a", "8"], ["longer", "16"]])
    assert out == ["  pool    GPUs", "  ------  ----", "  a          8", "  longer    16"]


def test_an_unwritable_page_is_one_line_exit_2(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert cli.main(["plan", "local", "--html", str(blocker / "page.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{blocker / 'page.html'}: cannot write: ") and "Traceback" not in err
