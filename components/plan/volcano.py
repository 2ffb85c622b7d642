"""What Volcano decides (pure): its scheduler configuration and chart values, each Volcano tenant's Queue spec
(``TenantPlan.volcano_queue_spec``), the tenant-queue and tenant-pods admission policies, its webhook probe and its
admission spread. The objects are ``components/render/volcano.py``'s."""

from __future__ import annotations

from typing import Any

from ..data import versions
from ..spec.model import StackSpec, Tenant
from . import derive, webhooks, yaml_text
from .tenancy import POOLS_ANNOTATION, SHARED_POOLS_ANNOTATION, VOLCANO_QUEUE_ANNOTATION, all_gpu_resources

CHART = versions.VOLCANO
API = versions.VOLCANO_QUEUE_API
SCHEDULER_NAME = "volcano"
QUEUE_POLICY_NAME = "gpu-platform-volcano-tenant-queue"
PODS_POLICY_NAME = "gpu-platform-volcano-tenant-pods"
# Queues Volcano creates itself; a tenant of that name would collide.
RESERVED_QUEUES = ("default", "root")
ACTIONS = ("enqueue", "allocate", "preempt", "reclaim", "backfill")
BINPACK_GPU_WEIGHT = 10

# Where Volcano reads a PodGroup's queue, on a pod and on a namespace (tenancy.VOLCANO_QUEUE_ANNOTATION). And the
# label KubeRay copies into the PodGroup it makes for a RayCluster or RayJob (kuberay v1.6.2 ray-operator/
# controllers/ray/batchscheduler/volcano/volcano_scheduler.go QueueNameLabelKey, createPodGroup).
QUEUE_ANNOTATION = VOLCANO_QUEUE_ANNOTATION
RAY_QUEUE_LABEL = "volcano.sh/queue-name"
# The pinned chart's admission paths (values.yaml custom.enabled_admissions, volcano 1.15.1) plus /podgroups/mutate.
# How a PodGroup gets its queue (volcano v1.15.1):
# - a Volcano Job's PodGroup: the Job's spec.queue (pkg/controllers/job/job_controller_actions.go); /jobs/mutate
#   fills "default" when it is empty (pkg/webhooks/admission/jobs/mutate/mutate_job.go patchDefaultQueue);
# - any other volcano pod without a PodGroup (Deployment, StatefulSet, Job, JobSet, LWS, bare Pod): vc-controller
#   makes one per pod with spec.queue = the POD's scheduling.volcano.sh/queue-name annotation and nothing else;
#   the owner's annotations are inherited only under the "volcano.sh/" prefix, into metadata.annotations, never the
#   queue (pkg/controllers/podgroup/pg_controller_handler.go buildPodGroupFromPod, inheritUpperAnnotations);
# - KubeRay's PodGroup: the RayCluster's or RayJob's volcano.sh/queue-name label (kuberay, above);
# - otherwise spec.queue is empty and the PodGroup CRD defaults it to "default".
# Only /podgroups/mutate reads the namespace: a PodGroup created in queue "default" gets the namespace's
# scheduling.volcano.sh/queue-name annotation (pkg/webhooks/admission/podgroups/mutate/mutate_podgroup.go
# createPodGroupPatch). The chart leaves it off; on, with each Volcano tenant's namespace annotated with its queue
# (tenancy.namespace_annotations), every kind whose pods name no queue lands in the tenant's queue instead of
# "default" (which the queue policy below refuses, leaving the pods Pending with no event). The chart gives the
# webhook the namespaces read it needs with it (templates/admission.yaml), and it fails closed as the others do.
CHART_ADMISSIONS = (
    "/jobs/mutate,/jobs/validate,/podgroups/validate,/queues/mutate,/queues/validate,/hypernodes/validate,"
    "/cronjobs/validate"
)
ENABLED_ADMISSIONS = CHART_ADMISSIONS + ",/podgroups/mutate"


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
    return yaml_text.safe_dump(scheduler_config(spec), sort_keys=False, width=1000)


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
            "enabled_admissions": ENABLED_ADMISSIONS,
        },
    }


def queue_policy() -> dict[str, Any]:
    """ValidatingAdmissionPolicy spec: in tenant namespaces, Volcano Jobs and PodGroups use the queue named
    after the namespace (the tenant's), and a RayCluster or RayJob that names a Volcano queue
    (``RAY_QUEUE_LABEL``, which KubeRay copies into its PodGroup) names that one: refused at creation with the
    queue to use, rather than a PodGroup KubeRay cannot create. The Ray rules match nothing without KubeRay's CRDs.

    A PodGroup made without a queue (vc-controller's for a Deployment's pod, KubeRay's for an unlabelled
    RayCluster) arrives here already in the tenant's queue: Volcano's /podgroups/mutate webhook (a mutating
    webhook, which kube-apiserver runs before validating policies) moved it from "default" (``ENABLED_ADMISSIONS``)."""
    ops = ["CREATE", "UPDATE"]

    def rule(group: str, resource: str) -> dict[str, Any]:
        return {"apiGroups": [group], "apiVersions": ["*"], "resources": [resource], "operations": ops}

    labels = "object.metadata.labels"
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "namespaceSelector": {"matchExpressions": [{"key": derive.TENANT_LABEL, "operator": "Exists"}]},
            "resourceRules": [
                rule("batch.volcano.sh", "jobs"),
                rule("scheduling.volcano.sh", "podgroups"),
                rule("ray.io", "rayclusters"),
                rule("ray.io", "rayjobs"),
            ],
        },
        "variables": [
            {
                "name": "queue",
                "expression": "request.kind.group == 'ray.io' ? "
                f"(has({labels}) && '{RAY_QUEUE_LABEL}' in {labels} ? {labels}['{RAY_QUEUE_LABEL}'] : "
                "namespaceObject.metadata.name) : "
                "(has(object.spec.queue) ? object.spec.queue : 'default')",
            }
        ],
        "validations": [
            {
                "expression": "variables.queue == namespaceObject.metadata.name",
                "messageExpression": "'use the Volcano queue ' + namespaceObject.metadata.name + "
                "' (this tenant\\'s queue), not ' + variables.queue",
                "reason": "Forbidden",
            }
        ],
    }


def tenant_pods_policy() -> dict[str, Any]:
    """ValidatingAdmissionPolicy spec: in a Volcano tenant's namespace, a Pod that asks for a GPU resource
    (``nvidia.com/*``) is scheduled by Volcano, on one of the tenant's own pools, and on a pool whose device
    plugin refuses more than one shared unit it asks for one at most. And any pod that names a Volcano queue
    (``QUEUE_ANNOTATION``) names the tenant's.

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
            {
                "name": "queue",
                "expression": f"has(object.metadata.annotations) && '{QUEUE_ANNOTATION}' in "
                f"object.metadata.annotations ? object.metadata.annotations['{QUEUE_ANNOTATION}'] : "
                "namespaceObject.metadata.name",
            },
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
            {
                # vc-controller gives the pod's PodGroup the queue this annotation names (``ENABLED_ADMISSIONS``):
                # another queue's PodGroup would be refused, and the pod would wait with no event.
                "expression": "variables.queue == namespaceObject.metadata.name",
                "messageExpression": f"'{QUEUE_ANNOTATION} names ' + variables.queue + ': this tenant\\'s Volcano "
                "queue is ' + namespaceObject.metadata.name + ' (leave it out: the namespace names it)'",
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
