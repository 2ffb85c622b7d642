"""What Volcano decides (pure): its scheduler configuration and chart values, each Volcano tenant's Queue spec
(``TenantPlan.volcano_queue_spec``), the tenant-queue and tenant-pods admission policies, its webhook probe and its
admission spread. The objects are ``components/render/volcano.py``'s."""

from __future__ import annotations

from typing import Any

import yaml

from ..data import versions
from ..spec.model import StackSpec, Tenant
from . import derive, webhooks
from .tenancy import POOLS_ANNOTATION, SHARED_POOLS_ANNOTATION, all_gpu_resources

CHART = versions.VOLCANO
API = versions.VOLCANO_QUEUE_API
SCHEDULER_NAME = "volcano"
QUEUE_POLICY_NAME = "gpu-platform-volcano-tenant-queue"
PODS_POLICY_NAME = "gpu-platform-volcano-tenant-pods"
# Queues Volcano creates itself; a tenant of that name would collide.
RESERVED_QUEUES = ("default", "root")
ACTIONS = ("enqueue", "allocate", "preempt", "reclaim", "backfill")
BINPACK_GPU_WEIGHT = 10


def scheduler_tiers(spec: StackSpec) -> list[dict[str, Any]]:
    gpu = all_gpu_resources(spec)
    binpack: dict[str, Any] = {
        "binpack.weight": 10,
        "binpack.cpu": 1,
        "binpack.memory": 1,
        "binpack.resources": ", ".join(gpu),
    }
    binpack.update({f"binpack.resources.{name}": BINPACK_GPU_WEIGHT for name in gpu})
    return [
        {
            "plugins": [
                {"name": "priority"},
                {"name": "gang", "enablePreemptable": False},
                {"name": "conformance"},
            ]
        },
        {
            "plugins": [
                {"name": "resourcequota"},
                {"name": "predicates"},
                {"name": "proportion"},
                {"name": "nodeorder", "arguments": {"leastrequested.weight": 0, "balancedresource.weight": 0}},
                {"name": "binpack", "arguments": binpack},
            ]
        },
    ]


def scheduler_config(spec: StackSpec) -> dict[str, Any]:
    return {"actions": ", ".join(ACTIONS), "tiers": scheduler_tiers(spec)}


def scheduler_config_yaml(spec: StackSpec) -> str:
    return yaml.safe_dump(scheduler_config(spec), sort_keys=False, default_flow_style=False, width=1000)


# Volcano's admission webhooks fail closed (failurePolicy: Fail on pods, jobs, podgroups and queues in the pinned
# chart's templates/admission.yaml); with the chart's one replica (custom.admission_replicas: 1) a node drain or a
# crash refuses pod creation in every namespace they select. Two replicas on different nodes, and a disruption
# budget that keeps one through voluntary evictions.
ADMISSION_REPLICAS = webhooks.FAIL_CLOSED_REPLICAS
ADMISSION_LABELS = {"app": "volcano-admission"}  # the chart's Deployment selector (templates/admission.yaml)
ADMISSION_PDB = "volcano-admission"


def admission_affinity() -> dict[str, Any]:
    """Spread the admission replicas over nodes (preferred: a single system node still runs both)."""
    return webhooks.spread(ADMISSION_LABELS)


def admission_pdb(namespace: str) -> dict[str, Any]:
    return webhooks.pdb(ADMISSION_PDB, namespace, ADMISSION_LABELS)


def helm_values(spec: StackSpec) -> dict[str, Any]:
    """Values of the volcano release; every path exists in the pinned chart's values.yaml."""
    return {
        "basic": {"image_pull_policy": "IfNotPresent"},  # images are pinned by tag
        "custom": {
            "scheduler_config_override": scheduler_config_yaml(spec),
            "default_ns": derive.system_node_selector(spec),  # admission, controller, scheduler
            "admission_replicas": ADMISSION_REPLICAS,
            "admission_affinity": admission_affinity(),
        },
    }


def queue_policy() -> dict[str, Any]:
    """ValidatingAdmissionPolicy spec: in tenant namespaces, Volcano Jobs and PodGroups use the queue named
    after the namespace (the tenant's)."""
    ops = ["CREATE", "UPDATE"]
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "namespaceSelector": {"matchExpressions": [{"key": derive.TENANT_LABEL, "operator": "Exists"}]},
            "resourceRules": [
                {"apiGroups": ["batch.volcano.sh"], "apiVersions": ["*"], "resources": ["jobs"], "operations": ops},
                {
                    "apiGroups": ["scheduling.volcano.sh"],
                    "apiVersions": ["*"],
                    "resources": ["podgroups"],
                    "operations": ops,
                },
            ],
        },
        "validations": [
            {
                "expression": "has(object.spec.queue) && object.spec.queue == namespaceObject.metadata.name",
                "messageExpression": "'use the Volcano queue ' + namespaceObject.metadata.name + "
                "' (this tenant\\'s queue), not ' + (has(object.spec.queue) ? object.spec.queue : 'default')",
                "reason": "Forbidden",
            }
        ],
    }


def tenant_pods_policy() -> dict[str, Any]:
    """ValidatingAdmissionPolicy spec: in a Volcano tenant's namespace, a Pod that asks for a GPU resource
    (``nvidia.com/*``) is scheduled by Volcano, on one of the tenant's own pools, and on a pool whose device
    plugin refuses more than one shared unit it asks for one at most.

    Why: Kueue leaves these namespaces alone and Volcano schedules only ``schedulerName: volcano`` pods, so a
    pod with the default scheduler would hold GPUs neither counts; Volcano queues count resource names, not
    pools, so nothing else keeps a tenant's pods off pools another scheduler hands out (a Volcano queue's node
    affinity needs the nodegroup plugin and node labels per group); and a whole-GPU request bound to a
    time-sliced node is refused by the kubelet (k8s-device-plugin v0.20.0 README.md:405-408,
    UnexpectedAdmissionError). The pool is the ``gpu-platform/pool`` nodeSelector, the one key every pool's
    nodes carry; the namespace lists the tenant's pools in annotations (``tenancy.namespace_annotations``):
    read in variables, where kube-apiserver provides ``namespaceObject`` (not in matchConditions)."""
    annotations = "namespaceObject.metadata.annotations"

    def listed(annotation: str) -> str:
        return (
            f"namespaceObject != null && has({annotations}) && '{annotation}' in {annotations} ? "
            f"{annotations}['{annotation}'].split(',').filter(p, p != '') : []"
        )

    gpu = "k.startsWith('nvidia.com/')"
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "namespaceSelector": {
                "matchExpressions": [
                    {"key": derive.TENANT_LABEL, "operator": "Exists"},
                    {"key": derive.SCHEDULER_LABEL, "operator": "In", "values": [SCHEDULER_NAME]},
                ]
            },
            "resourceRules": [
                {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE"]}
            ],
        },
        "variables": [
            {
                "name": "containers",
                "expression": "object.spec.containers + "
                "(has(object.spec.initContainers) ? object.spec.initContainers : [])",
            },
            {
                "name": "gpu",
                "expression": "variables.containers.exists(c, has(c.resources) && "
                f"((has(c.resources.limits) && c.resources.limits.exists(k, {gpu})) || "
                f"(has(c.resources.requests) && c.resources.requests.exists(k, {gpu}))))",
            },
            {
                "name": "pool",
                "expression": f"has(object.spec.nodeSelector) && '{derive.POOL_LABEL}' in object.spec.nodeSelector ? "
                f"object.spec.nodeSelector['{derive.POOL_LABEL}'] : ''",
            },
            {"name": "pools", "expression": listed(POOLS_ANNOTATION)},
            {"name": "oneUnit", "expression": listed(SHARED_POOLS_ANNOTATION)},
        ],
        "validations": [
            {
                "expression": "!variables.gpu || "
                f"(has(object.spec.schedulerName) && object.spec.schedulerName == '{SCHEDULER_NAME}')",
                "message": "GPU pods in this namespace are scheduled by Volcano: set schedulerName: volcano "
                "(Kueue leaves this namespace alone; a pod of the default scheduler would hold GPUs no queue counts)",
                "reason": "Forbidden",
            },
            {
                "expression": "!variables.gpu || variables.pool in variables.pools",
                "messageExpression": f"'select one of this tenant\\'s pools with nodeSelector {derive.POOL_LABEL}: ' + "
                "variables.pools.join(', ')",
                "reason": "Forbidden",
            },
            {
                "expression": "!variables.gpu || !(variables.pool in variables.oneUnit) || "
                "variables.containers.all(c, !has(c.resources) || !has(c.resources.limits) || "
                f"c.resources.limits.all(k, !({gpu}) || "
                "quantity(c.resources.limits[k]).compareTo(quantity('1')) <= 0))",
                "messageExpression": "'pool ' + variables.pool + ' shares its GPUs: a container may ask for "
                "one unit at most (the device plugin refuses more)'",
                "reason": "Forbidden",
            },
        ],
    }


def webhook_probe(spec: StackSpec) -> webhooks.Probe:
    """A Queue dry-run: it passes Volcano's queue mutating and validating webhooks (failurePolicy Fail; volcano
    v1.15.1 installer/helm/chart/volcano/templates/webhooks.yaml)."""
    chart = versions.for_spec(CHART, spec)
    return webhooks.custom_resource_probe("volcano", chart, API, "Queue", "queues", {"weight": 1, "reclaimable": True})


def queue_spec(spec: StackSpec, tenant: Tenant) -> dict[str, Any]:
    nominal = derive.tenant_units(spec, tenant)
    ceiling = derive.capability_units(spec, tenant)
    capability: dict[str, str] = {name: str(ceiling.get(name, 0)) for name in all_gpu_resources(spec)}
    if tenant.quota.cpu:
        capability["cpu"] = tenant.quota.cpu
    if tenant.quota.memory:
        capability["memory"] = tenant.quota.memory
    out: dict[str, Any] = {
        "weight": tenant.queue_weight,
        "reclaimable": True,
        "capability": dict(sorted(capability.items())),
    }
    guarantee = {name: str(n) for name, n in nominal.items() if n > 0}
    if guarantee:
        out["guarantee"] = {"resource": guarantee}
        # Volcano's queue webhook requires guarantee <= deserved <= capability for every guaranteed resource.
        # proportion computes its own deserved share from the weights; the capacity plugin would read this one.
        out["deserved"] = dict(guarantee)
    return out
