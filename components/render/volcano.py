"""Volcano: the official chart with a GPU-oriented scheduler configuration, and a Queue per Volcano tenant.

Scheduler plugins (``custom.scheduler_config_override``, rendered from SCHEDULER_TIERS) and why each:

- ``priority``: orders jobs and tasks by PriorityClass, which the ``preempt`` action needs.
- ``gang``: a job starts only when ``minAvailable`` pods can be placed together; a distributed training job
  never holds GPUs while waiting for peers. Its preemption veto is off (``enablePreemptable: false``, as
  upstream ships it): with ``minAvailable`` equal to the replicas the veto would make gang jobs
  unpreemptable; evicting a pod of a gang restarts the whole job instead.
- ``conformance``: never evicts critical system pods.
- ``resourcequota``: a job enters the queue only while the namespace ResourceQuota has room for its
  minimum, so it waits as Pending instead of creating pods the quota rejects (the quota also counts the
  tenant's Kueue workloads).
- ``predicates``: the kube-scheduler filters (taints and tolerations, node selectors and affinity, GPU
  resources), so pods are bound only to nodes that can run them.
- ``proportion``: shares the cluster between tenant queues by ``weight``, caps each at ``capability`` and
  reserves its ``guarantee``; with the ``reclaim`` action a queue gets back resources lent to others.
  ``guarantee`` also lets a tenant's jobs into the queue while its pools are scaled to zero (proportion
  admits up to the guarantee whatever the current cluster size), so the autoscaler sees the pending pods.
- ``nodeorder`` with least-requested and balanced-resource scoring off: node affinity, pod affinity and
  taint toleration still score, but nothing spreads pods across GPU nodes ...
- ``binpack`` (GPU resources weighted over cpu/memory): ... because packing fills GPU nodes one by one,
  keeps whole nodes free for the next 8-GPU gang and lets idle nodes scale down.

Actions: ``enqueue`` (quota and capability gate), ``allocate``, ``preempt`` (within a queue, by priority),
``reclaim`` (across queues, back to their share), ``backfill``.

Queues: one ``scheduling.volcano.sh/v1beta1`` Queue per tenant whose ``scheduler`` is ``volcano``
(``derive.volcano_tenants``), named after it. Only those: proportion caps every queue at (cluster total -
all queues' guarantees) + its own guarantee (volcano v1.15.1 ``pkg/scheduler/plugins/proportion/
proportion.go``, OnSessionOpen), so a guarantee is reserved whether or not its queue has jobs, and queues of
Kueue tenants would leave the Volcano tenants nothing to borrow (``derive.volcano_queue_cap``). Each has
``guarantee.resource`` = the tenant's nominal GPU units (the numbers of its ResourceQuota and ClusterQueue;
``deserved`` the same, as Volcano's webhook requires guarantee <= deserved <= capability), ``capability`` = the
most it can hold when it borrows all it may (``derive.tenant_ceiling_units``; 0 for GPU resources it cannot
reach; cpu/memory when the tenant sets them), ``weight`` = ``tenants[].queueWeight``, reclaimable.
Volcano queues are cluster-scoped and any namespace could name any queue, so a ValidatingAdmissionPolicy
requires Volcano Jobs and PodGroups in a tenant namespace to use the tenant's own queue.

Volcano schedules only pods with ``schedulerName: volcano``; Kueue manages only workloads carrying the
``kueue.x-k8s.io/queue-name`` label. Run a job under one of them, never both.
"""

from __future__ import annotations

from typing import Any

import yaml

from components.data import versions
from components.plan import derive
from components.plan.plan import plain
from components.plan.volcano import queue_spec as queue_spec  # re-exported: the renderer's name for it
from components.render import addon, k8s, webhooks
from components.render.kueue import GKE_CRITICAL_PODS
from components.render.tenancy import POOLS_ANNOTATION, SHARED_POOLS_ANNOTATION, all_gpu_resources
from components.spec.model import StackSpec

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
ADMISSION_REPLICAS = 2
ADMISSION_LABELS = {"app": "volcano-admission"}  # the chart's Deployment selector (templates/admission.yaml)
ADMISSION_PDB = "volcano-admission"


def admission_affinity() -> dict[str, Any]:
    """Spread the admission replicas over nodes (preferred: a single system node still runs both)."""
    return {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": dict(ADMISSION_LABELS)},
                        "topologyKey": "kubernetes.io/hostname",
                    },
                }
            ]
        }
    }


def admission_pdb(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": ADMISSION_PDB, "namespace": namespace, "labels": derive.MANAGED_BY},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": dict(ADMISSION_LABELS)}},
    }


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


class Volcano(addon.ChartAddon):
    """Namespace, the volcano release, a Queue per Volcano tenant and the tenant-queue admission policy."""

    TYPE = "gpu-platform:scheduling:Volcano"
    CHART = CHART

    def build(self, spec: StackSpec) -> None:

        # Volcano's containers add DAC_OVERRIDE (chart default_csc): Pod Security 'baseline', warn on restricted.
        # Its pods are system-cluster-critical: on GKE the namespace needs the critical-pods quota.
        before = self.create_namespace(addon.NamespacePolicy("volcano", k8s.psa_labels("baseline"), GKE_CRITICAL_PODS))
        # Uninstalling Volcano deletes its CRDs and with them every Volcano Job and PodGroup: protected.
        # Queues wait for Volcano's admission webhooks to answer (components/render/webhooks.py), not only for the
        # release.
        self.install(
            "volcano", helm_values(spec), before, probe=webhook_probe(spec), protect=spec.protect.scheduler_releases
        )
        after = self.after_release()
        pdb = admission_pdb(self.chart.namespace)
        k8s.kube_object(
            "volcano-admission-pdb",
            "policy/v1",
            "PodDisruptionBudget",
            metadata=pdb["metadata"],
            spec=pdb["spec"],
            opts=self.child([self.release]),
        )
        self.queues: list[str] = []
        for tenant in self.plan.tenants.values():  # the plan's Volcano tenants, in stack-file order
            if tenant.volcano_queue is None:
                continue
            k8s.kube_object(
                f"{tenant.name}-volcano-queue",
                api_version=API,
                kind="Queue",
                metadata=self.gated(
                    {"name": tenant.volcano_queue, "labels": {**derive.MANAGED_BY, derive.TENANT_LABEL: tenant.name}}
                ),
                spec=plain(tenant.volcano_queue_spec),
                opts=after,
            )
            self.queues.append(tenant.name)
        if derive.volcano_tenants(spec):
            k8s.admission_policy("volcano-tenant-pods", self, self.provider, PODS_POLICY_NAME, tenant_pods_policy())
        if spec.tenants:
            k8s.admission_policy(
                "volcano-tenant-queue",
                self,
                self.provider,
                QUEUE_POLICY_NAME,
                queue_policy(),
                depends_on=[self.release],
            )
        self.register_outputs({"namespace": self.chart.namespace, "queues": self.queues})
