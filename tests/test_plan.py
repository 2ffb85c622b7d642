"""The plan (components/plan/plan.py, issue 28): what the platform decides per pool, tenant and add-on, frozen and
pure data; each shipped stack's plan committed as a snapshot; the plan agreeing with what the synth renders;
``gpu-platform plan`` printing it."""

from __future__ import annotations

import dataclasses
import json

import pytest
from conftest import STACKS, manifest, manifests, rendered, stack_config

from components.cli import main as cli, plans
from components.cli.loader import load_spec
from components.plan import plan


def _local() -> plan.Plan:
    return plan.build(load_spec(stack_config("local")), "local")


@pytest.mark.parametrize("stack", STACKS)
def test_each_shipped_stacks_plan_is_its_committed_snapshot(stack):
    """A change to what the platform decides shows up as a diff of tests/snapshots/plans/<stack>.json."""
    path = plans.snapshot_dir() / f"{stack}.json"
    assert path.exists(), f"no plan snapshot for {stack}: run {plans.REGENERATE}"
    got = plan.build(load_spec(stack_config(stack)), stack).to_json()
    assert got == path.read_text(encoding="utf-8"), f"{stack}: the plan changed; review it and run {plans.REGENERATE}"


def test_the_local_plan_by_hand():
    """stacks/Pulumi.local.yaml: one L4 workstation shared by MPS x2 on an existing cluster, tenant dev with that
    one GPU, Kueue and Volcano on (dev is Kueue's: its ceiling and queues)."""
    p = _local()
    ws = p.pools["workstation"]
    assert (ws.provisioner, ws.gpu_model, ws.gpus_per_node, ws.min_nodes, ws.max_nodes) == ("existing", "L4", 1, 0, 1)
    assert dict(ws.units_per_gpu) == {"nvidia.com/gpu": 2} == dict(ws.units_per_node) == dict(ws.max_units)
    assert dict(ws.sharing) == {"strategy": "mps", "replicas": 2, "config": "workstation"}
    assert (ws.schedulers, ws.kueue_flavor, ws.one_unit_opt_in, ws.efa) == (("kueue",), "workstation", False, False)
    assert [dict(t) for t in ws.taints] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    dev = p.tenants["dev"]
    assert (dev.namespace, dev.scheduler, dev.local_queue, dev.cluster_queue, dev.volcano_queue) == (
        "dev",
        "kueue",
        "default",
        "dev",
        None,
    )
    assert dict(dev.quota_hard) == {"requests.nvidia.com/gpu": "2"}
    assert {k: dict(v) for k, v in dev.pool_units.items()} == {"workstation": {"nvidia.com/gpu": 2}}
    assert dev.forbidden_priority_classes == ("batch", "inference", "training", "training-critical")
    assert {k for k, a in p.addons.items() if a.enabled} == {"gpuOperator", "kubePrometheusStack", "kueue", "volcano"}
    assert p.addons["kueue"].version == "0.19.2" and p.addons["kueue"].namespace == "kueue-system"


def test_the_plan_is_frozen_all_the_way_down():
    p = _local()
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.stack = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        p.tenants["dev"].quota_hard["requests.nvidia.com/gpu"] = "99"  # type: ignore[index]
    with pytest.raises(TypeError):
        p.pools["new"] = p.pools["workstation"]  # type: ignore[index]
    assert isinstance(p.pools["workstation"].taints, tuple)


def test_a_frozen_value_thaws_to_plain_dicts_and_lists_with_dataclasses_as_camel_case_dicts():
    import enum

    from components.plan.frozen import freeze, plain

    class Word(enum.StrEnum):
        A = "a"

    @dataclasses.dataclass(frozen=True)
    class Point:
        pool_name: str
        gpu_units: tuple

    thawed = plain(freeze({"m": {"t": (1, 2.5, True, None)}, "p": [Point("p1", ({"k": "v"},))], "w": Word.A}))
    assert thawed == {"m": {"t": [1, 2.5, True, None]}, "p": [{"poolName": "p1", "gpuUnits": [{"k": "v"}]}], "w": "a"}
    assert type(thawed["m"]) is dict and type(thawed["m"]["t"]) is list and type(thawed["p"][0]["gpuUnits"]) is list
    assert thawed["w"] is Word.A  # a leaf of another type stays itself


def test_equal_values_frozen_while_a_plan_is_built_are_one_object_and_unequal_ones_stay_apart():
    from components.plan.frozen import freeze, sharing

    with sharing():
        a = freeze({"b": [1, {"c": "x"}], "a": None})
        b = freeze({"a": None, "b": [1, {"c": "x"}]})
        kinds = [freeze({"v": v}) for v in (1, 1.0, True, 0.0, -0.0, "1", [1], (1.0,))]
        ordered = [freeze({"x": 1, "y": 2}, keep_order=True), freeze({"y": 2, "x": 1}, keep_order=True)]
        again = freeze({"v": (1,)})
    assert a is b and a["b"][1] is b["b"][1]
    assert len({id(k) for k in kinds}) == len(kinds) and again is kinds[6]  # a list and a tuple freeze alike
    assert [type(k["v"]) for k in kinds[:3]] == [int, float, bool] and repr(kinds[4]["v"]) == "-0.0"
    assert list(ordered[0]) == ["x", "y"] and list(ordered[1]) == ["y", "x"]
    assert freeze({"a": 1}) is not freeze({"a": 1})  # outside a plan build nothing is kept


def test_a_value_frozen_again_while_a_plan_is_built_is_itself_unless_its_keys_must_be_sorted_again():
    from components.plan.frozen import freeze, sharing

    with sharing():
        made = freeze({"b": [1, {"c": "x"}], "a": None})
        ordered = freeze({"y": 2, "x": 1}, keep_order=True)
        again = freeze({"outer": made, "kept": ordered})
    assert freeze(made) is not made  # outside a plan build: a new copy
    assert again["outer"] is made and list(again["kept"]) == ["x", "y"]  # sorted as freeze sorts, not as it was kept


def test_an_interned_part_is_made_once_per_exact_key_while_a_plan_is_built():
    from components.plan.frozen import freeze, interned, sharing

    made = []

    def part(n):
        return interned(lambda: made.append(n) or {"n": n, "list": [n]}, "part", n)

    with sharing():
        first, second = part(1), part(1)
        others = [part(True), part(1.0), part(2)]
        whole = freeze({"parts": [first, second]})
    assert first is second and made == [1, True, 1.0, 2]  # 1, True and 1.0 are asked apart
    assert [type(o["n"]) for o in others] == [bool, float, int]
    assert whole["parts"][0] is first and whole["parts"][1] is first
    assert type(first) is not dict and first["list"] == (1,)  # frozen like any plan value
    assert part(1) is not part(1) and made[-2:] == [1, 1]  # outside a plan build: made each time


@pytest.mark.parametrize("part", [["a"], {"a": 1}, ("a",), object()])
def test_an_interned_part_refuses_a_key_that_is_not_a_plain_value(part):
    """A container in the key would be told apart by an id the table does not keep alive; refused, in a plan build
    or out of one, before anything is made."""
    from components.plan.frozen import interned, sharing

    made = []
    with pytest.raises(TypeError, match="key part"), sharing():
        interned(lambda: made.append(1) or {}, "part", part)
    with pytest.raises(TypeError, match="key part"):
        interned(lambda: made.append(1) or {}, "part", part)
    assert made == []


def test_a_big_plan_shares_its_equal_parts():
    """Tenants' equal frozen values (labels, quotas per pool) are one object: the plan lives to the end of the synth."""
    from bench_synth import generated_config

    p = plan.build(load_spec(generated_config(40, 6)), "bench")
    frozen, distinct = 0, set()

    def walk(v):
        nonlocal frozen
        if isinstance(v, tuple | type(p.protect)):
            frozen += 1
            distinct.add(id(v))
            for x in v.values() if hasattr(v, "values") else v:
                walk(x)
        elif dataclasses.is_dataclass(v):
            for f in dataclasses.fields(v):
                walk(getattr(v, f.name))

    walk(p)
    assert frozen > 2 * len(distinct)


@pytest.mark.parametrize("stack", ["prod-aws", "prod-gcp", "dra-existing"])
def test_the_plan_agrees_with_what_the_synth_renders(stack):
    """Quotas, namespace labels and annotations, ResourceFlavors and Volcano queues: the rendered objects are
    exactly the plan's (both come from the same functions; a plan that drifted from the renderers fails here)."""
    p = plan.build(load_spec(stack_config(stack)), stack)
    r = rendered(stack)
    for t in p.tenants.values():
        ns = manifest(r, "Namespace", t.namespace)["metadata"]
        assert ns["labels"] == dict(t.namespace_labels), t.name
        assert ns.get("annotations", {}) == dict(t.namespace_annotations), t.name
        quota = manifest(r, "ResourceQuota", "gpu-quota", t.namespace)
        assert quota["spec"]["hard"] == dict(t.quota_hard), t.name
    flavors = {m["metadata"]["name"] for m in manifests(r, "ResourceFlavor")} - {"default-flavor"}
    assert flavors == {n for n, pool in p.pools.items() if pool.kueue_flavor}
    queues = {m["metadata"]["name"] for m in manifests(r, "Queue")}
    assert queues == {t.volcano_queue for t in p.tenants.values() if t.volcano_queue}
    cluster_queues = {m["metadata"]["name"] for m in manifests(r, "ClusterQueue")}
    assert cluster_queues == {t.cluster_queue for t in p.tenants.values() if t.cluster_queue}


def test_plan_json_is_the_snapshot_format_and_the_text_names_every_pool_tenant_and_addon(capsys):
    assert cli.main(["plan", "prod-aws", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc == json.loads((plans.snapshot_dir() / "prod-aws.json").read_text())
    assert doc["schemaVersion"] == plan.SCHEMA_VERSION
    assert cli.main(["plan", "prod-aws"]) == 0
    text = capsys.readouterr().out
    rows = {line.split()[0]: line.split("  ") for line in text.splitlines() if line.startswith("  ") and line.split()}
    for name in [*doc["pools"], *doc["tenants"]]:
        assert name in rows, name  # a row of the Pools or Tenants table
    for name in doc["addons"]:
        assert f"  {name}: " in text, name
    # the tables are aligned: every row of a table as long as its rule (trailing cells may be blank)
    pools_table = text.split("\nPools\n", 1)[1].split("\n\n", 1)[0].splitlines()
    header, rule, *body = pools_table
    assert set(rule.strip()) == {"-", " "} and len(header) <= len(rule)
    assert sorted(line.split()[0] for line in body[: len(doc["pools"])]) == sorted(doc["pools"])
    assert all(line.index("on-demand") == header.index("capacity") for line in body if " on-demand " in line)
    assert "research    research    baseline      Kueue default -> research   gpu-platform" in text
    assert "  dcgmExporter: off" in text
    assert "{" not in text.split("\nAdd-ons\n")[0]  # no Python dict literal (issue 41.6)
    # research's ceiling per pool is Kueue's: its borrowingLimit of 8 on a100-train has no lender behind it (nobody
    # else in cohort gpu-platform has quota there); dra-existing research borrows serving's 4 H100 on h100
    assert (
        "  research on a100-train: borrowingLimit 8 GPUs adds nothing: no other ClusterQueue of cohort gpu-platform "
        "lends a100-train\n"
    ) in text
    assert cli.main(["plan", "dra-existing"]) == 0
    out = capsys.readouterr().out
    assert "  research   h100      10 gpu.nvidia.com/devices  14 gpu.nvidia.com/devices\n" in out


def test_plan_of_an_invalid_stack_prints_nothing_and_exits_2(tmp_path, capsys):
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text(
        "config:\n  gpu-platform:cloud: existing\n  gpu-platform:tenants: [{name: x, gpuQuota: {nope: 1}}]\n"
    )
    assert cli.main(["plan", "bad", "--config", str(bad)]) == 2
    out = capsys.readouterr()
    assert out.out == "" and "gpu-platform:tenants[0].gpuQuota.nope" in out.err
