"""``gpu-platform diff STACK --config NEW.yaml``: what a change to a stack file does, offline (issue 41.7).

Both sides are rendered under the synth's mock engine (``synth.render``), so resources are compared by URN, as the
engine knows them: a URN that leaves without an alias is **deleted** (for a namespace, everything in it), a URN that
stays but changes a replace-on-change property is **replaced**. Replace-on-change properties are the resource's own
``replaceOnChanges`` option (Kueue's immutable fields, ``components/render/kueue.py``) and the provider's
force-new properties of the pool resources (``PROVIDER_REPLACES``). Pools and quotas are compared on the plans, the
cost on their cost documents (the numbers ``plan`` and ``cost`` print).

The baseline (``--against``) is the stack file in ``stacks/`` by default, another stack file, or a plan saved with
``gpu-platform plan STACK --json``; a plan has no URNs, so against one only pools, quotas and cost are compared.

A pool whose nodes go away -- removed, renamed (a new name is a new node group, NodePool or GKE node pool, and the
old one's nodes are drained and deleted), or changed in a property that replaces its node group -- is listed under
``drained``. Exit codes: 0 nothing is replaced, deleted or drained (additions and in-place updates only, or no
change); 3 something is (review it before ``pulumi up``); 2 a stack file or the plan is unusable.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from html import escape
from typing import Any

from ..plan.cost_text import usd

EXIT_DESTRUCTIVE = 3

# Properties whose change makes the provider replace a pool's resource (create the new one, delete the old),
# beyond the resource's own replaceOnChanges option: terraform-provider-aws internal/service/eks/node_group.go
# (ResourceNodeGroup: ami_type, capacity_type, cluster_name, disk_size, instance_types, launch_template id/name,
# node_group_name(_prefix), node_role_arn, remote_access, subnet_ids are ForceNew), which pulumi-aws bridges;
# terraform-provider-google node_pool.go (name, location, cluster are ForceNew).
PROVIDER_REPLACES: Mapping[str, tuple[str, ...]] = {
    "aws:eks/nodeGroup:NodeGroup": (
        "amiType",
        "capacityType",
        "clusterName",
        "diskSize",
        "instanceTypes",
        "launchTemplate.id",
        "launchTemplate.name",
        "nodeGroupName",
        "nodeGroupNamePrefix",
        "nodeRoleArn",
        "remoteAccess",
        "subnetIds",
    ),
    "gcp:container/nodePool:NodePool": ("name", "location", "cluster"),
}

# Pool properties (plan fields) whose change gives the pool new nodes: another instance or machine type, GPU,
# capacity type, OS or provisioner replaces the node group (or drifts every Karpenter node), draining the old ones.
POOL_NODE_FIELDS = ("provisioner", "gpuModel", "gpusPerNode", "instanceTypes", "capacity", "os")
POOL_FIELDS = (*POOL_NODE_FIELDS, "minNodes", "maxNodes", "sharing", "taints", "maxGpus")
TENANT_FIELDS = ("poolGpus", "poolCeilingGpus", "borrowingLimits", "lendingLimits", "cohort", "scheduler")


def _flat(value: Any, path: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flat(v, f"{path}.{k}" if path else k))
        return out or {path: {}}
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        out = {}
        for i, v in enumerate(value):
            out.update(_flat(v, f"{path}[{i}]"))
        return out
    return {path: value}


def _under(changed: str, prop: str) -> bool:
    """A changed property path equals or lies under (or above) a replace-on-change one (pulumi/pulumi
    pkg/resource/deploy/step_generator.go applyReplaceOnChanges compares paths the same way)."""
    c = changed.replace("[", ".[")
    return c == prop or c.startswith(prop + ".") or prop.startswith(c + ".")


def replaced_by(old: Mapping[str, Any], new: Any) -> list[str]:
    """The replace-on-change paths of ``new`` (a rendering Record) that changed from ``old``'s inputs."""
    a, b = _flat(dict(old)), _flat(dict(new.inputs))
    changed = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    props = [*new.replace_on_changes, *PROVIDER_REPLACES.get(new.type, ())]
    return [c for c in changed if any(_under(c, p) for p in props)]


def resources(old: Any, new: Any) -> dict[str, Any]:
    """URN by URN, two renderings (``explain.rendering.Rendering``): created, deleted, replaced, moved by alias."""
    before = {r.urn: r for r in old.resources}
    after = {r.urn: r for r in new.resources}
    aliased = {a for r in new.resources for a in r.aliases}
    replaced, updated = [], []
    for urn in sorted(before.keys() & after.keys()):
        r = after[urn]
        if r.custom and (paths := replaced_by(before[urn].inputs, r)):
            replaced.append({"urn": urn, "because": paths, "deleteFirst": r.delete_before_replace})
        elif before[urn].inputs != r.inputs:
            updated.append(urn)
    gone = sorted(before.keys() - after.keys())
    return {
        "created": sorted(after.keys() - before.keys() - {u for r in new.resources for u in r.aliases if u in before}),
        "deleted": [u for u in gone if u not in aliased],
        "moved": [u for u in gone if u in aliased],
        "replaced": replaced,
        "updated": updated,
        "protectedDeleted": [u for u in gone if u not in aliased and before[u].protect],
    }


def _shape(p: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(json.dumps(p.get(f), sort_keys=True) for f in (*POOL_NODE_FIELDS, "sharing"))


def _changes(a: Mapping[str, Any], b: Mapping[str, Any], fields: Iterable[str]) -> dict[str, list[Any]]:
    return {f: [a.get(f), b.get(f)] for f in fields if a.get(f) != b.get(f)}


def pools(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """Pools added, removed, renamed (a removed pool and an added one of the same shape) and changed."""
    removed = sorted(old.keys() - new.keys())
    added = sorted(new.keys() - old.keys())
    renamed = []
    for name in list(removed):
        twin = next((a for a in added if _shape(new[a]) == _shape(old[name])), None)
        if twin is not None:
            renamed.append({"from": name, "to": twin})
            removed.remove(name)
            added.remove(twin)
    changed = []
    for name in sorted(old.keys() & new.keys()):
        fields = _changes(old[name], new[name], POOL_FIELDS)
        if fields:
            changed.append({"pool": name, "fields": fields, "newNodes": any(f in fields for f in POOL_NODE_FIELDS)})
    drained = [*removed, *(r["from"] for r in renamed), *(c["pool"] for c in changed if c["newNodes"])]
    return {"added": added, "removed": removed, "renamed": renamed, "changed": changed, "drained": sorted(drained)}


def tenants(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    changed = [
        {"tenant": name, "fields": fields}
        for name in sorted(old.keys() & new.keys())
        if (fields := _changes(old[name], new[name], TENANT_FIELDS))
    ]
    return {"added": sorted(new.keys() - old.keys()), "removed": sorted(old.keys() - new.keys()), "changed": changed}


def _totals(plan_doc: Mapping[str, Any]) -> dict[str, float | None]:
    """The stack's hourly USD at max and min scale, as the cost document adds it up (``cost._document``): every
    pool's and fixed cost's; None where one is unpriced."""
    hourly = [p["cost"]["hourlyUsd"] for p in plan_doc["pools"].values()]
    hourly += [f["hourlyUsd"] for f in plan_doc["cost"].get("fixed", [])]
    return {
        k: None if any(h[k] is None for h in hourly) else round(sum(h[k] for h in hourly), 4) for k in ("max", "min")
    }


def _delta(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(b - a, 4)


def costs(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    a, b = _totals(old), _totals(new)
    per_pool = {}
    for name in sorted(old["pools"].keys() | new["pools"].keys()):
        x = old["pools"].get(name, {}).get("cost", {}).get("hourlyUsd", {"max": 0}).get("max")
        y = new["pools"].get(name, {}).get("cost", {}).get("hourlyUsd", {"max": 0}).get("max")
        if x != y:
            per_pool[name] = {"before": x, "after": y, "delta": _delta(x, y)}
    per_tenant = {}
    for name in sorted(old["tenants"].keys() | new["tenants"].keys()):
        x = old["tenants"].get(name, {}).get("cost", {}).get("nominal", {"hourlyUsd": 0}).get("hourlyUsd")
        y = new["tenants"].get(name, {}).get("cost", {}).get("nominal", {"hourlyUsd": 0}).get("hourlyUsd")
        if x != y:
            per_tenant[name] = {"before": x, "after": y, "delta": _delta(x, y)}
    return {
        "maxHourlyUsd": {"before": a["max"], "after": b["max"], "delta": _delta(a["max"], b["max"])},
        "minHourlyUsd": {"before": a["min"], "after": b["min"], "delta": _delta(a["min"], b["min"])},
        "pools": per_pool,
        "tenants": per_tenant,
    }


def compare(old_plan: Mapping[str, Any], new_plan: Mapping[str, Any], old_r: Any = None, new_r: Any = None):
    """The diff document of two plan documents (``Plan.to_dict``) and, when both are given, their renderings."""
    doc = {
        "stack": new_plan["stack"],
        "resources": resources(old_r, new_r) if old_r is not None and new_r is not None else None,
        "pools": pools(old_plan["pools"], new_plan["pools"]),
        "tenants": tenants(old_plan["tenants"], new_plan["tenants"]),
        "cost": costs(old_plan, new_plan),
    }
    return doc


def destructive(doc: Mapping[str, Any]) -> bool:
    r = doc["resources"] or {}
    return bool(r.get("deleted") or r.get("replaced") or doc["pools"]["drained"])


def exit_code(doc: Mapping[str, Any]) -> int:
    return EXIT_DESTRUCTIVE if destructive(doc) else 0


def _signed(x: float | None) -> str:
    if x is None:
        return "unknown"
    return ("+" if x > 0 else "-" if x < 0 else "±") + usd(abs(x))


def _pool_lines(p: Mapping[str, Any]) -> list[str]:
    lines = []
    for r in p["renamed"]:
        lines.append(
            f"REPLACE+DRAIN pool {r['from']} -> {r['to']}: a renamed pool is a new node group; {r['from']}'s nodes "
            "are drained and deleted (keep the old name to keep the nodes)"
        )
    lines += [f"DRAIN pool {n} removed: its nodes are drained and deleted" for n in p["removed"]]
    lines += [f"ADD pool {n}" for n in p["added"]]
    for c in p["changed"]:
        what = "; ".join(f"{f} {json.dumps(a)} -> {json.dumps(b)}" for f, (a, b) in c["fields"].items())
        lines.append(f"{'REPLACE+DRAIN' if c['newNodes'] else 'UPDATE'} pool {c['pool']}: {what}")
    return lines


def text(doc: Mapping[str, Any]) -> list[str]:
    """The diff for a person: one line per change, destructive ones first."""
    lines = [f"Diff of stack {doc['stack']}"]
    lines += _pool_lines(doc["pools"])
    r = doc["resources"]
    if r is None:
        lines.append("Resources: not compared (the baseline is a saved plan, which has no URNs; give a stack file)")
    else:
        lines += [f"REPLACE {x['urn']} (changed: {', '.join(x['because'])})" for x in r["replaced"]]
        lines += [
            f"DELETE {u}"
            + (" (protected: pulumi up refuses until it is unprotected)" if u in r["protectedDeleted"] else "")
            for u in r["deleted"]
        ]
        lines += [f"MOVE {u} (an alias keeps it: no replacement)" for u in r["moved"]]
        lines += [f"CREATE {u}" for u in r["created"]]
        lines += [f"UPDATE {u} (in place)" for u in r["updated"]]
    t = doc["tenants"]
    lines += [f"ADD tenant {n}" for n in t["added"]] + [f"REMOVE tenant {n}" for n in t["removed"]]
    for c in t["changed"]:
        what = "; ".join(f"{f} {json.dumps(a)} -> {json.dumps(b)}" for f, (a, b) in c["fields"].items())
        lines.append(f"UPDATE tenant {c['tenant']}: {what}")
    c = doc["cost"]
    lines.append(
        f"Cost at max scale: {usd(c['maxHourlyUsd']['before'])} -> {usd(c['maxHourlyUsd']['after'])} per hour "
        f"({_signed(c['maxHourlyUsd']['delta'])}); at min size {_signed(c['minHourlyUsd']['delta'])}"
    )
    lines += [f"  pool {n}: {_signed(v['delta'])} per hour at max" for n, v in c["pools"].items()]
    lines += [f"  tenant {n}: {_signed(v['delta'])} per hour nominal" for n, v in c["tenants"].items()]
    n = len(r["replaced"]) + len(r["deleted"]) if r else 0
    lines.append(
        f"{n} resources replaced or deleted, {len(doc['pools']['drained'])} pools drained: "
        + ("review before pulumi up (exit 3)" if destructive(doc) else "nothing destructive (exit 0)")
    )
    return lines


def html_section(doc: Mapping[str, Any]) -> list[str]:
    """The page's section on a diff (``plan --html FILE --against OLD``): the same lines as ``text``."""
    items = []
    for line in text(doc)[1:]:
        cls = "replace" if line.startswith(("REPLACE", "DRAIN")) else "delete" if line.startswith("DELETE") else ""
        items.append(f'<li class="{cls}">{escape(line)}</li>' if cls else f"<li>{escape(line)}</li>")
    return ["<h2 id=diff>What this change does</h2>", '<ul id="diff-lines">', *items, "</ul>"]
