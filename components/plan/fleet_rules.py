"""The rules of a fleet (issue 43), checked before anything is deployed on any cluster of it. The manager's rules
read the workers' specs the loader attached (``Fleet.worker_spec``); each problem is one line naming the
manager's key path and the worker it is about. ``plan/fleet.py`` is imported by the rules that read it, after their
``fleet`` check: a stack that is no fleet manager does not load it (its dataclasses, ~3 ms)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..data import versions
from ..spec.model import Problem, StackSpec, key, rule


def _minor(version: str) -> str:
    return ".".join(version.lstrip("v").split(".")[:2])


@rule
def fleet_names(spec: StackSpec) -> Iterator[Problem]:
    """Workers and tenants named once; a retired worker is a worker; a fleet tenant is not also a local one."""
    f = spec.fleet
    if f is None:
        return
    names = [w.name for w in f.workers]
    for i, w in enumerate(f.workers):
        if names.count(w.name) > 1 and names.index(w.name) != i:
            yield Problem(key("fleet", "workers", i, "name"), f"duplicate worker {w.name!r}")
    tenants = [t.name for t in f.tenants]
    local = {t.name for t in spec.tenants}
    for i, t in enumerate(f.tenants):
        if tenants.count(t.name) > 1 and tenants.index(t.name) != i:
            yield Problem(key("fleet", "tenants", i, "name"), f"duplicate fleet tenant {t.name!r}")
        if t.name in local:
            yield Problem(
                key("fleet", "tenants", i, "name"),
                f"{t.name!r} is also in gpu-platform:tenants: a tenant runs on the manager or through the fleet, "
                "not both (remove one entry)",
            )
    for i, r in enumerate(f.retired_workers):
        if r not in names:
            yield Problem(
                key("fleet", "retiredWorkers", i),
                f"{r!r} is not a worker: a worker is retired while still listed in fleet.workers, then removed",
            )


@rule
def fleet_manager_runs_kueue(spec: StackSpec) -> Iterator[Problem]:
    """The manager's Kueue dispatches; it needs every kind's integration (and its CRD, from the operator)."""
    f = spec.fleet
    if f is None:
        return
    from . import fleet as fleet_plan

    if not spec.addons.kueue:
        yield Problem(key("addons", "kueue"), "a fleet manager runs Kueue's MultiKueue: set addons.kueue true")
    if spec.fleet_worker is not None:
        yield Problem(
            key("fleetWorker"),
            "a manager cannot be one of its own workers (kueue v0.19.2 MultiKueue limitation): use another stack",
        )
    for i, kind in enumerate(f.kinds):
        if kind not in spec.scheduling.kueue_integrations:
            addon = fleet_plan.KIND_OPERATOR[kind]
            fix = f"set addons.{addon} true" if addon else "add it to scheduling.kueueIntegrations"
            yield Problem(key("fleet", "kinds", i), f"the manager's Kueue does not manage {kind}: {fix}")
    for i, name in enumerate(spec.scheduling.kueue_integrations):
        if name in fleet_plan.MULTIKUEUE_ADAPTERS and name not in f.kinds:
            yield Problem(
                key("scheduling", "kueueIntegrations", i),
                f"a manager's Kueue watches every integration it manages on every worker, and the workers grant "
                f"only fleet.kinds: {name} would leave every worker inactive (forbidden) — remove it, or add it to "
                "fleet.kinds if the fleet supports it",
            )


@rule
def fleet_tenants_on_their_workers(spec: StackSpec) -> Iterator[Problem]:
    """Every worker a tenant dispatches to is a worker of the fleet, has the tenant on Kueue with the same
    LocalQueue, and runs every dispatched kind (its operator and Kueue integration)."""
    f = spec.fleet
    if f is None:
        return
    names = {w.name for w in f.workers}
    for i, t in enumerate(f.tenants):
        live = [w for w in t.workers if w not in f.retired_workers]
        if t.workers and not live:
            yield Problem(
                key("fleet", "tenants", i, "workers"),
                f"every worker of {t.name} is retired: it would dispatch nowhere (add a worker)",
            )
        for j, w in enumerate(t.workers):
            at = key("fleet", "tenants", i, "workers", j)
            if w not in names:
                yield Problem(at, f"unknown worker {w!r} (fleet.workers names {', '.join(sorted(names))})")
                continue
            wspec = f.worker_spec(w)
            if wspec is None:
                continue
            wt = next((x for x in wspec.tenants if x.name == t.name), None)
            if wt is None:
                yield Problem(
                    at,
                    f"worker {w} has no tenant {t.name}: add it to {f.worker(w).file_name}'s gpu-platform:tenants "
                    "(its namespace and LocalQueue receive what the manager dispatches)",
                )
                continue
            if not wspec.addons.kueue or (wt.scheduler or "kueue") != "kueue":
                yield Problem(at, f"worker {w}: tenant {t.name} is not queued by Kueue there (set scheduler: kueue)")
            if wspec.scheduling.local_queue_name != spec.scheduling.local_queue_name:
                yield Problem(
                    at,
                    f"worker {w} names its LocalQueues {wspec.scheduling.local_queue_name!r}, the manager "
                    f"{spec.scheduling.local_queue_name!r}: a dispatched job keeps its queue-name (set the same "
                    "scheduling.localQueueName)",
                )


@rule
def fleet_kinds_on_workers(spec: StackSpec) -> Iterator[Problem]:
    f = spec.fleet
    if f is None:
        return
    from . import fleet as fleet_plan

    for i, w in enumerate(f.workers):
        wspec = f.worker_spec(w.name)
        if wspec is None:
            continue
        runs = fleet_plan.worker_kinds(wspec)
        for kind in f.kinds:
            if kind not in runs:
                addon = fleet_plan.KIND_OPERATOR[kind]
                fix = f"addons.{addon} true" if addon else f"{kind} in scheduling.kueueIntegrations"
                yield Problem(
                    key("fleet", "workers", i, "stack"),
                    f"worker {w.name} cannot run {kind} (its operator or CRD is missing): set {fix} in {w.file_name}",
                )


@rule
def fleet_kueue_versions(spec: StackSpec) -> Iterator[Problem]:
    """The manager copies its Workloads (kueue.x-k8s.io/v1beta2) to the workers and reads their status: the same
    Kueue minor everywhere, so both ends speak the same Workload API and MultiKueue protocol."""
    f = spec.fleet
    if f is None:
        return
    mine = versions.for_spec(versions.KUEUE, spec).version
    for i, w in enumerate(f.workers):
        wspec = f.worker_spec(w.name)
        if wspec is None:
            continue
        if not wspec.addons.kueue:
            yield Problem(key("fleet", "workers", i, "stack"), f"worker {w.name} does not run Kueue (addons.kueue)")
            continue
        theirs = versions.for_spec(versions.KUEUE, wspec).version
        if _minor(theirs) != _minor(mine):
            yield Problem(
                key("fleet", "workers", i, "stack"),
                f"worker {w.name} runs Kueue {theirs}, the manager {mine}: MultiKueue needs the same minor version "
                "on both (upgrade the workers first, then the manager)",
            )
        if wspec.fleet_worker is None:
            yield Problem(
                key("fleet", "workers", i, "stack"),
                f"worker {w.name}'s stack has no gpu-platform:fleetWorker: it grants the manager nothing and "
                "exports no credential (add fleetWorker.manager and fleetWorker.credential)",
            )
        elif w.name in f.retired_workers and not wspec.fleet_worker.draining:
            yield Problem(
                key("fleet", "workers", i, "stack"),
                f"worker {w.name} is retired here but not draining there: set fleetWorker.draining true in "
                f"{w.file_name} first, so it admits nothing new while its workloads finish",
            )


@rule
def fleet_quota_within_workers(spec: StackSpec) -> Iterator[Problem]:
    """A tenant's fleet quota never exceeds what its workers give it: the manager would admit and dispatch
    workloads no worker can admit (kueue v0.19.2 concepts/multikueue.md)."""
    f = spec.fleet
    if f is None:
        return
    for i, t in enumerate(f.tenants):
        if t.gpu_quota is None:
            continue
        summed: dict[str, int] = {}
        for w in t.workers:
            wspec = f.worker_spec(w)
            if wspec is None or w in f.retired_workers:
                continue
            wt = next((x for x in wspec.tenants if x.name == t.name), None)
            if wt is None:
                continue
            from . import plan as plan_stage

            units = plan_stage.build(wspec, w).tenants[t.name].gpu_quota
            for res, u in units.items():
                summed[res] = summed.get(res, 0) + u
        for res, want in t.gpu_quota.items():
            have = summed.get(res, 0)
            if want > have:
                yield Problem(
                    key("fleet", "tenants", i, "gpuQuota", res),
                    f"{want} is above the {have} its workers give {t.name} "
                    f"({', '.join(w for w in t.workers if w not in f.retired_workers)}): lower it or raise the "
                    "tenant's quota on a worker",
                )


@rule
def fleet_worker_endpoint(spec: StackSpec) -> Iterator[Problem]:
    w = spec.fleet_worker
    if w is None:
        return
    if spec.cloud == "existing" and w.endpoint is None:
        yield Problem(
            key("fleetWorker", "endpoint"),
            "is required on an existing cluster: the URL the manager's Kueue dials (https://...)",
        )
    if not spec.addons.kueue:
        yield Problem(key("addons", "kueue"), "a fleet worker runs Kueue: set addons.kueue true")


# a kubeconfig credential or private key written into a stack file's plain config
_CREDENTIAL = re.compile(
    r"(-----BEGIN [A-Z ]*PRIVATE KEY-----|\b(token|client-key-data|password)\s*:\s*\S{8,}|\beyJ[A-Za-z0-9_-]{20,}\.)"
)


def _strings(value: Any, path: tuple[str | int, ...]) -> Iterator[tuple[tuple[str | int, ...], str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, (*path, i))


@rule
def fleet_no_plain_credentials(spec: StackSpec) -> Iterator[Problem]:
    """A fleet passes credentials only as secret stack outputs (``components/render/fleet.py``): a token, key or
    password written in plain text in a fleet stack's config (tags, descriptions, endpoints) is refused."""
    if spec.fleet is None and spec.fleet_worker is None:
        return
    dumped = spec.model_dump(by_alias=True, exclude_none=True)
    for path, text in _strings(dumped, ()):
        if _CREDENTIAL.search(text):
            yield Problem(
                key(*path),
                "holds what looks like a credential in plain text: the manager takes each worker's credential "
                "from the worker stack's secret output; remove it (pulumi config set --secret for your own)",
            )
