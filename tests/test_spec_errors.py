"""Bad stack files: each gets exit 2, one line per problem naming the stack file and key path, no
traceback, and nothing written."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import yaml
from conftest import ROOT, stack_config

from components.cli import main as cli
from components.cli.loader import SpecError, load_spec


def _set(cfg: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """Set a dotted path ('gpu-platform:nodePools.1.sharing.replicas') in a config dict; None deletes."""
    head, *rest = path.split(".")
    node: Any = cfg
    parts: list[Any] = [head, *(int(p) if p.isdigit() else p for p in rest)]
    for p in parts[:-1]:
        node = node[p]
    if value is None:
        del node[parts[-1]]
    else:
        node[parts[-1]] = value
    return cfg


# (id, base stack, [(path, value)], expected key path, fragment of the message)
BAD: list[tuple[str, str, list[tuple[str, Any]], str, str]] = [
    (
        "reserved-pool-label",
        "dev-aws",
        [("gpu-platform:nodePools.0.labels", {"node-role.kubernetes.io/gpu": "true"})],
        "gpu-platform:nodePools[0].labels.node-role.kubernetes.io/gpu",
        "reserved label",
    ),
    (
        "pool-overrides-derived-label",
        "dev-aws",
        [("gpu-platform:nodePools.0.labels", {"gpu-platform/pool": "other"})],
        "gpu-platform:nodePools[0].labels.gpu-platform/pool",
        "the platform derives it",
    ),
    (
        "pool-taint-on-gpu-key",
        "dev-aws",
        [("gpu-platform:nodePools.0.taints", [{"key": "nvidia.com/gpu", "value": "yes", "effect": "NoSchedule"}])],
        "gpu-platform:nodePools[0].taints[0].key",
        "already carries nvidia.com/gpu=present:NoSchedule",
    ),
    ("unknown-cloud", "dev-aws", [("gpu-platform:cloud", "azure")], "gpu-platform:cloud", "must be one of"),
    ("missing-cloud", "dev-aws", [("gpu-platform:cloud", None)], "gpu-platform:cloud", "is required"),
    ("misspelt-top-key", "dev-aws", [("gpu-platform:nodePool", [])], "gpu-platform:nodePool", "did you mean nodePools"),
    (
        "misspelt-pool-key",
        "dev-aws",
        [("gpu-platform:nodePools.0.maxNode", 3)],
        "gpu-platform:nodePools[0].maxNode",
        "unknown key",
    ),
    (
        "replicas-below-2",
        "dev-aws",
        [("gpu-platform:nodePools.0.sharing.replicas", 1)],
        "gpu-platform:nodePools[0].sharing.replicas",
        "must be at least 2",
    ),
    (
        "replicas-missing",
        "dev-aws",
        [("gpu-platform:nodePools.0.sharing.replicas", None)],
        "gpu-platform:nodePools[0].sharing.replicas",
        "is required for time-slicing",
    ),
    (
        "min-above-max",
        "dev-aws",
        [("gpu-platform:nodePools.0.minNodes", 9)],
        "gpu-platform:nodePools[0].minNodes",
        "above maxNodes",
    ),
    (
        "negative-min",
        "dev-aws",
        [("gpu-platform:nodePools.0.minNodes", -1)],
        "gpu-platform:nodePools[0].minNodes",
        "must be at least 0",
    ),
    (
        "duplicate-pool",
        "prod-aws",
        [("gpu-platform:nodePools.1.name", "a100-train")],
        "gpu-platform:nodePools[1].name",
        "duplicate name 'a100-train'",
    ),
    (
        "duplicate-tenant",
        "prod-aws",
        [("gpu-platform:tenants.1.name", "research")],
        "gpu-platform:tenants[1].name",
        "duplicate name",
    ),
    (
        "quota-unknown-pool",
        "prod-aws",
        [("gpu-platform:tenants.0.gpuQuota", {"v100-old": 4})],
        "gpu-platform:tenants[0].gpuQuota.v100-old",
        "unknown pool 'v100-old'",
    ),
    (
        "negative-quota",
        "prod-aws",
        [("gpu-platform:tenants.0.gpuQuota.a100-train", -2)],
        "gpu-platform:tenants[0].gpuQuota.a100-train",
        "must be at least 0",
    ),
    (
        "unknown-gpu-model",
        "dev-aws",
        [("gpu-platform:nodePools.0.gpu.model", "V100")],
        "gpu-platform:nodePools[0].gpu.model",
        "unknown GPU model 'V100'",
    ),
    (
        "model-not-on-instance",
        "dev-aws",
        [("gpu-platform:nodePools.0.gpu.model", "T4")],
        "gpu-platform:nodePools[0].instanceTypes[0]",
        "carries L4, not T4",
    ),
    (
        "mig-on-l4",
        "dev-aws",
        [("gpu-platform:nodePools.0.sharing", {"strategy": "mig", "layout": {"1g.10gb": 7}})],
        "gpu-platform:nodePools[0].sharing.strategy",
        "L4 has no MIG support",
    ),
    (
        "mig-layout-too-big",
        "prod-aws",
        [("gpu-platform:nodePools.1.sharing.layout", {"4g.40gb": 2})],
        "gpu-platform:nodePools[1].sharing.layout",
        "H100",
    ),
    (
        "mig-unknown-profile",
        "prod-aws",
        [("gpu-platform:nodePools.1.sharing.layout", {"1g.5gb": 7})],
        "gpu-platform:nodePools[1].sharing.layout",
        "1g.5gb",
    ),
    (
        "mps-too-many",
        "local",
        [("gpu-platform:nodePools.0.sharing.replicas", 64)],
        "gpu-platform:nodePools[0].sharing.replicas",
        "at most 48",
    ),
    (
        "unknown-priority",
        "prod-aws",
        [("gpu-platform:tenants.0.priority", "urgent")],
        "gpu-platform:tenants[0].priority",
        "unknown PriorityClass 'urgent'",
    ),
    (
        "two-global-defaults",
        "dev-aws",
        [
            (
                "gpu-platform:priorityClasses",
                [
                    {"name": "a", "value": 10, "globalDefault": True},
                    {"name": "b", "value": 5, "globalDefault": True},
                    {"name": "batch", "value": 1},
                    {"name": "training", "value": 2},
                ],
            )
        ],
        "gpu-platform:priorityClasses[1].globalDefault",
        "at most one",
    ),
    (
        "privileged-tenant",
        "prod-aws",
        [("gpu-platform:tenants.0.podSecurity", "privileged")],
        "gpu-platform:tenants[0].podSecurity",
        "must be one of",
    ),
    (
        "system-namespace-tenant",
        "prod-aws",
        [("gpu-platform:tenants.0.name", "kube-system")],
        "gpu-platform:tenants[0].name",
        "system namespace",
    ),
    (
        "bad-tenant-name",
        "prod-aws",
        [("gpu-platform:tenants.0.name", "Research_Team")],
        "gpu-platform:tenants[0].name",
        "'Research_Team' is not a valid name (lower-case letters",
    ),
    ("missing-region", "dev-aws", [("aws:region", None)], "aws:region", "is required when cloud is aws"),
    ("missing-cluster-name", "dev-aws", [("gpu-platform:cluster", {})], "gpu-platform:cluster.name", "is required"),
    (
        "gcp-missing-location",
        "dev-gcp",
        [("gpu-platform:cluster.location", None)],
        "gpu-platform:cluster.location",
        "is required when cloud is gcp",
    ),
    (
        "perNode-not-int",
        "dev-aws",
        [("gpu-platform:nodePools.0.gpu.perNode", "one")],
        "gpu-platform:nodePools[0].gpu.perNode",
        "must be a whole number",
    ),
    (
        "unknown-chart",
        "dev-aws",
        [("gpu-platform:charts", {"nginx": {"version": "1.0.0"}})],
        "gpu-platform:charts.nginx",
        "unknown chart",
    ),
    (
        "chart-range",
        "dev-aws",
        [("gpu-platform:charts", {"kueue": {"version": "^0.19"}})],
        "gpu-platform:charts.kueue.version",
        "does not match",
    ),
    (
        "borrow-unreachable-pool",
        "prod-aws",
        [("gpu-platform:tenants.1.borrowingLimit", {"a100-train": 4})],
        "gpu-platform:tenants[1].borrowingLimit.a100-train",
        "cannot reach pool",
    ),
    (
        "lend-above-quota",
        "prod-aws",
        [("gpu-platform:tenants.1.lendingLimit.h100-inference", 99)],
        "gpu-platform:tenants[1].lendingLimit.h100-inference",
        "above the tenant's quota",
    ),
    (
        "desired-outside-range",
        "dev-aws",
        [("gpu-platform:nodePools.0.desiredNodes", 7)],
        "gpu-platform:nodePools[0].desiredNodes",
        "outside minNodes..maxNodes",
    ),
    # issue 10 §1: a managed pool at minNodes 0 needs the Cluster Autoscaler
    (
        "managed-pool-from-zero-without-autoscaler",
        "dev-aws",
        [("gpu-platform:addons.clusterAutoscaler", False)],
        "gpu-platform:nodePools[0].minNodes",
        "is 0, but gpu-platform:addons.clusterAutoscaler is false",
    ),
    (
        "cluster-autoscaler-on-gke",
        "dev-gcp",
        [("gpu-platform:addons.clusterAutoscaler", True)],
        "gpu-platform:addons.clusterAutoscaler",
        "applies to EKS managed node groups only",
    ),
    (
        "accelerator-label-by-hand",
        "dev-aws",
        [("gpu-platform:nodePools.0.labels", {"k8s.amazonaws.com/accelerator": "l4"})],
        "gpu-platform:nodePools[0].labels.k8s.amazonaws.com/accelerator",
        "is the Cluster Autoscaler's GPU label",
    ),
    # issue 10 §2: TAS on a pool whose provisioner serves no ProvisioningRequests never admits anything
    (
        "topology-aware-karpenter-pool",
        "dev-aws",
        [("gpu-platform:nodePools.1.topologyAware", True)],
        "gpu-platform:nodePools[1].topologyAware",
        "Karpenter serves no ProvisioningRequests",
    ),
]


def _write(tmp_path, cfg: dict[str, Any]):
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(yaml.safe_dump({"config": cfg}))
    return path


def test_table_has_at_least_20_distinct_mistakes():
    assert len({b[0] for b in BAD}) == len(BAD) >= 20
    assert len({b[3] for b in BAD}) >= 20  # distinct key paths, not one mistake repeated


@pytest.mark.parametrize(("case", "base", "edits", "path", "fragment"), BAD, ids=[b[0] for b in BAD])
def test_bad_stack_file(tmp_path, capsys, case, base, edits, path, fragment):
    cfg = stack_config(base)
    for dotted, value in edits:
        _set(cfg, dotted, value)
    stack_file = _write(tmp_path, cfg)
    out = tmp_path / "out"
    code = cli.main(["synth", "bad", "--config", str(stack_file), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert not out.exists()
    lines = err.strip().splitlines()
    assert lines, "no error printed"
    assert all(line.startswith(f"{stack_file}: ") for line in lines), lines
    matching = [line for line in lines if line.startswith(f"{stack_file}: {path}: ")]
    assert matching, f"no line for {path} in {lines}"
    assert any(fragment in line for line in matching), matching
    assert "Traceback" not in err


def test_every_problem_reported_at_once():
    cfg = stack_config("prod-aws")
    _set(cfg, "gpu-platform:nodePools.0.minNodes", 9)
    _set(cfg, "gpu-platform:tenants.0.priority", "urgent")
    _set(cfg, "gpu-platform:nodePools.3.sharing.layout", {"1g.10gb": 7})
    with pytest.raises(SpecError) as err:
        load_spec(cfg)
    paths = [p.path for p in err.value.problems]
    assert paths == sorted(paths)
    assert {
        "gpu-platform:nodePools[0].minNodes",
        "gpu-platform:tenants[0].priority",
        "gpu-platform:nodePools[3].sharing.layout",
    } <= set(paths)


def test_pulumi_encoded_config_is_accepted():
    """Under `pulumi up` objects arrive JSON-encoded and scalars as strings; the spec is the same."""
    import json

    raw = stack_config("prod-aws")
    encoded = {k: v if isinstance(v, str) else json.dumps(v) for k, v in raw.items()}
    assert load_spec(encoded) == load_spec(raw)


def test_real_process_exit_code_and_no_traceback(tmp_path):
    cfg = _set(stack_config("dev-aws"), "gpu-platform:nodePools.0.sharing.replicas", 1)
    stack_file = _write(tmp_path, cfg)
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "components.cli", "synth", "bad", "--config", str(stack_file), "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.strip() == (f"{stack_file}: gpu-platform:nodePools[0].sharing.replicas: must be at least 2")
    assert not out.exists()


def test_not_a_stack_file(tmp_path, capsys):
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text("config: [1, 2\n")
    assert cli.main(["synth", "x", "--config", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}: line ") and "not valid YAML" in err
    missing = tmp_path / "nope.yaml"
    assert cli.main(["check", "x", "--config", str(missing)]) == 2
    assert "no such stack file" in capsys.readouterr().err


def test_pulumi_run_error_names_stack_file(monkeypatch):
    """Under `pulumi up` the same problems end the program through RunError (no stack trace)."""
    import pulumi

    from components.cli import config

    bad = _set(stack_config("dev-aws"), "gpu-platform:nodePools.0.minNodes", 9)
    monkeypatch.setattr(config, "pulumi_config", lambda: bad)
    monkeypatch.setattr(pulumi, "get_stack", lambda: "dev-aws")
    with pytest.raises(pulumi.RunError) as err:
        config.spec_from_pulumi_config()
    assert "stacks/Pulumi.dev-aws.yaml: gpu-platform:nodePools[0].minNodes: 9 is above maxNodes (4)" in str(err.value)


def test_ordinary_pool_labels_and_taints_are_accepted():
    from components.plan import derive

    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"][0]["labels"] = {"team": "ml", "example.com/cost-center": "42"}
    cfg["gpu-platform:nodePools"][0]["taints"] = [
        {"key": "example.com/dedicated", "value": "ml", "effect": "NoSchedule"}
    ]
    spec = load_spec(cfg)
    pool = spec.node_pools[0]
    assert derive.pool_labels(spec, pool)["example.com/cost-center"] == "42"
    assert [t.key for t in derive.pool_taints(pool)] == ["nvidia.com/gpu", "example.com/dedicated"]
