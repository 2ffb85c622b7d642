"""What ``gpu-platform explain`` checks a pod against: Pod Security, a Volcano tenant's GPU pod policy, node
selection and tolerations, and the facts of one pool (what its nodes carry and advertise, what its provisioner
and DCGM see)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from ..plan import derive, gpu_operator, kueue, tenancy, volcano
from ..plan.plan import Plan, PoolPlan, TenantPlan
from .nodes import LabelValues, autoscaler_template_labels, node_label_values
from .workloads import GPU_PREFIX, PodSet, Workload, _device_resources


def _units(units: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {r}" for r, n in sorted(units.items())) or "nothing"


# ------------------------------------------------------------------------------------- pod security

# Pod Security Standards (kubernetes.io/docs/concepts/security/pod-security-standards): the obvious checks.
BASELINE_CAPABILITIES = frozenset(
    {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE", "SETFCAP"}
    | {"SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
)


def pod_security_problems(pod: Mapping[str, Any], level: str) -> list[str]:
    problems = []
    containers = [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(key):
            problems.append(f"{key}: true")
    for v in pod.get("volumes") or []:
        if "hostPath" in v:
            problems.append(f"hostPath volume {v.get('name')}")
    psc = pod.get("securityContext") or {}
    for c in containers:
        sc = c.get("securityContext") or {}
        cname = c.get("name")
        if sc.get("privileged"):
            problems.append(f"container {cname} privileged")
        for port in c.get("ports") or []:
            if port.get("hostPort"):
                problems.append(f"container {cname} hostPort {port['hostPort']}")
        added = set((sc.get("capabilities") or {}).get("add") or [])
        allowed = {"NET_BIND_SERVICE"} if level == "restricted" else BASELINE_CAPABILITIES
        if added - allowed:
            problems.append(f"container {cname} adds capabilities {sorted(added - allowed)}")
        if level != "restricted":
            continue
        if sc.get("allowPrivilegeEscalation") is not False:
            problems.append(f"container {cname} lacks allowPrivilegeEscalation: false")
        if "ALL" not in ((sc.get("capabilities") or {}).get("drop") or []):
            problems.append(f"container {cname} does not drop ALL capabilities")
        if not sc.get("runAsNonRoot", psc.get("runAsNonRoot")):
            problems.append(f"container {cname} lacks runAsNonRoot: true")
        seccomp = (sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            problems.append(f"container {cname} lacks seccompProfile RuntimeDefault")
    return problems


# --------------------------------------------------------------------------------- node selection


_ABSENT = ()  # no node of the pool carries the label


def _values(labels: Mapping[str, LabelValues], key: str) -> tuple[str, ...] | None:
    if key not in labels:
        return _ABSENT
    value = labels[key]
    return (value,) if isinstance(value, str) else value


def _expr_matches(expr: Mapping[str, Any], labels: Mapping[str, LabelValues]) -> bool:
    """Whether some node of the pool can satisfy the expression (kube-scheduler's node affinity operators)."""
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    have = _values(labels, key)
    if op == "Exists":
        return have != _ABSENT
    if op == "DoesNotExist":
        return have == _ABSENT
    if op == "In":
        return have is None or any(v in values for v in have)
    if op == "NotIn":
        return have is None or have == _ABSENT or any(v not in values for v in have)
    if op in ("Gt", "Lt"):
        if have is None:
            return True
        try:
            bound = int(values[0])
        except (ValueError, IndexError):
            return False
        return any(n > bound if op == "Gt" else n < bound for n in _ints(have))
    return False


def _ints(values: tuple[str, ...]) -> list[int]:
    out = []
    for v in values:
        try:
            out.append(int(v))
        except ValueError:
            continue
    return out


def _shown(have: tuple[str, ...] | None) -> str:
    return " or ".join(have) if have else "no such label"


def selection_problems(pod: Mapping[str, Any], labels: Mapping[str, LabelValues]) -> list[str]:
    """Why no node with these labels satisfies the pod's nodeSelector and required node affinity."""
    out = []
    for k, v in sorted((pod.get("nodeSelector") or {}).items()):
        have = _values(labels, k)
        if have is not None and v not in have:
            out.append(f"nodeSelector {k}={v} (nodes have {_shown(have)})")
    required = (
        ((pod.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
        or {}
    ).get("nodeSelectorTerms") or []
    if required and not any(
        all(_expr_matches(e, labels) for e in term.get("matchExpressions") or []) for term in required
    ):
        out.append("required node affinity matches no term")
    return out


def flavor_selection_problems(pod: Mapping[str, Any], flavor_labels: Mapping[str, str]) -> list[str]:
    """Why Kueue finds the pod does not match a ResourceFlavor: its nodeSelector and required node affinity
    reduced to the keys the flavor's nodeLabels name, the rest ignored (kueue v0.19.2
    pkg/scheduler/flavorassigner/flavorassigner.go:1224-1227, only this flavor's own keys; flavorSelector
    1278-1320: nodeSelector entries and affinity expressions on other keys are dropped, and a term left empty
    matches any flavor, dropping the whole affinity). So a pod selecting ``kubernetes.io/arch`` or a zone is
    matched on those keys by the node, not by Kueue."""
    keys = set(flavor_labels)
    reduced: dict[str, Any] = {"nodeSelector": {k: v for k, v in (pod.get("nodeSelector") or {}).items() if k in keys}}
    required = (
        ((pod.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
        or {}
    ).get("nodeSelectorTerms") or []
    terms = []
    for term in required:
        exprs = [e for e in term.get("matchExpressions") or [] if e.get("key") in keys]
        if not exprs:  # an emptied term matches every flavor: the terms are ORed
            terms = []
            break
        terms.append({"matchExpressions": exprs})
    if terms:
        reduced["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
        }
    return selection_problems(reduced, flavor_labels)


def _tolerates(tol: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    if tol.get("effect") and tol["effect"] != taint["effect"]:
        return False
    if not tol.get("key"):
        return tol.get("operator") == "Exists"
    if tol["key"] != taint["key"]:
        return False
    if tol.get("operator") == "Exists":
        return True
    return str(tol.get("value", "")) == str(taint.get("value") or "")


def untolerated(tolerations: list[Mapping[str, Any]], taints: list[Mapping[str, Any]]) -> list[str]:
    return [
        f"{t['key']}={t.get('value') or ''}:{t['effect']}"
        for t in taints
        if t["effect"] in ("NoSchedule", "NoExecute") and not any(_tolerates(x, t) for x in tolerations)
    ]


def flavor_opt_in_problem(podsets: list[PodSet], flavor: Mapping[str, Any]) -> str | None:
    """Why Kueue does not assign a flavor for its nodeTaints: a pod set that tolerates neither by itself nor by
    the flavor's injected tolerations one of them (kueue v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go:
    1239-1245). The platform's only flavor nodeTaint is the shared-GPU opt-in (``derive.SHARED_GPU_TAINT``)."""
    for ps in podsets:
        missing = untolerated(
            [*(ps.pod.get("tolerations") or []), *flavor["tolerations"]], flavor.get("nodeTaints", [])
        )
        if missing:
            return f"shared GPUs, the pod set does not tolerate {missing[0]} (tolerate it to opt in to a slice)"
    return None


def pod_selection(
    decided: Plan, pool: PoolPlan, podsets: list[PodSet], gpu: Mapping[str, int]
) -> tuple[str, list[str]]:
    """Without Kueue nothing pins a pod but its own nodeSelector, affinity and tolerations: (how it came to
    ``pool``, the other pools whose nodes take it as well). Other pools of the whole stack count (a
    ResourceQuota counts resource names, not pools): their nodes match it, it tolerates them, and they
    advertise what it asks."""
    pools = decided.pools
    order = sorted(pools.values(), key=lambda p: (derive.FLAVOR_CLASSES.index(p.flavor_class), p.name))
    unselected = [
        p
        for p in order
        if p.name != pool.name and not any(selection_problems(ps.pod, node_label_values(decided, p)) for ps in podsets)
    ]
    also = [
        p.name
        for p in unselected
        if set(gpu) <= set(p.units_per_gpu)
        and not any(untolerated(ps.pod.get("tolerations") or [], list(p.taints)) for ps in podsets)
    ]
    if not unselected:
        return "the pod selects and tolerates", []
    if also:
        return f"the pod selects no pool: nodes of {', '.join(also)} take it as well", also
    return f"the pod selects no pool; {pool.name}'s are the only nodes it tolerates that advertise {', '.join(gpu)}", []


# ------------------------------------------------------------------- a Volcano tenant's GPU pods


RAY_KINDS = frozenset({("ray.io", "RayCluster"), ("ray.io", "RayJob")})


def ray_batch_scheduler(decided: Plan) -> str | None:
    """KubeRay's batch scheduler as the plan installs it (``operators.ray_batch_scheduler``)."""
    addon = decided.addons.get("kuberay")
    if addon is None or not addon.enabled:
        return None
    return ((addon.values or {}).get("batchScheduler") or {}).get("name")


def kuberay_sets_volcano(decided: Plan, w: Workload) -> bool:
    """KubeRay sets ``schedulerName: volcano`` on the kind's pods before it creates them (kuberay v1.6.2
    batchscheduler/volcano/volcano_scheduler.go AddMetadataToChildResource)."""
    return (w.group, w.kind) in RAY_KINDS and ray_batch_scheduler(decided) == volcano.SCHEDULER_NAME


def volcano_pods_policy_applies(decided: Plan, tenant: TenantPlan) -> bool:
    """The admission policy ``volcano.PODS_POLICY_NAME`` exists (Volcano is on and has tenants: some tenant has a
    Volcano queue) and selects the tenant's namespace (labelled ``gpu-platform/scheduler: volcano``)."""
    return any(t.volcano_queue for t in decided.tenants.values()) and (
        tenant.namespace_labels.get(derive.SCHEDULER_LABEL) == volcano.SCHEDULER_NAME
    )


def policy_gpu_resources(pod: Mapping[str, Any]) -> list[str]:
    """The ``nvidia.com/*`` resources a pod's containers (init containers too) name in their limits or requests:
    a pod with one is what the policy calls a GPU pod (its variable ``gpu``)."""
    names: set[str] = set()
    for c in [*(pod.get("containers") or []), *(pod.get("initContainers") or [])]:
        res = c.get("resources") or {}
        for section in ("limits", "requests"):
            names.update(n for n in res.get(section) or {} if str(n).startswith(GPU_PREFIX))
    return sorted(names)


def volcano_pod_refusal(
    tenant: TenantPlan, pod_set: str, pod: Mapping[str, Any], scheduler_name: str | None
) -> str | None:
    """Why the admission policy ``volcano.PODS_POLICY_NAME`` refuses a GPU pod of ``pod_set`` in the tenant's
    namespace, or None: its validations in their order (``volcano.tenant_pods_policy``), read against the pools
    the namespace's annotations list (``tenancy.namespace_annotations``), split as the policy splits them.
    ``scheduler_name``: the pod's own, or its Volcano Job's when the template names none (the job controller
    copies it: volcano v1.15.1 pkg/controllers/job/job_controller_util.go, createJobPod)."""
    annotations = tenant.namespace_annotations

    def listed(annotation: str) -> list[str]:
        return annotations[annotation].split(",") if annotation in annotations else []

    pools, one_unit = listed(tenancy.POOLS_ANNOTATION), listed(tenancy.SHARED_POOLS_ANNOTATION)
    refuses = f"the admission policy {volcano.PODS_POLICY_NAME} refuses it"
    if scheduler_name != volcano.SCHEDULER_NAME:
        return (
            f"pod set {pod_set} asks for {', '.join(policy_gpu_resources(pod))} with schedulerName "
            f"{scheduler_name or 'unset (default-scheduler)'} in {tenant.name}, whose GPU pods Volcano schedules; "
            f"{refuses}: set schedulerName: {volcano.SCHEDULER_NAME}"
        )
    selected = (pod.get("nodeSelector") or {}).get(derive.POOL_LABEL, "")
    if selected not in pools:
        return (
            f"pod set {pod_set} selects {f'pool {selected}' if selected else 'no pool'}, not one of "
            f"{tenant.name}'s ({', '.join(pools)}); {refuses}: select one with nodeSelector {derive.POOL_LABEL}"
        )
    if selected in one_unit:
        for c in [*(pod.get("containers") or []), *(pod.get("initContainers") or [])]:
            limits = (c.get("resources") or {}).get("limits") or {}
            # the policy compares limits only: an extended resource's request must equal its limit
            asked = _device_resources({"resources": {"limits": limits}})
            for r, n in asked.items():
                if r.startswith(GPU_PREFIX) and n > 1:
                    return (
                        f"container {c.get('name')} of pod set {pod_set} asks {n} {r} on {selected}, which shares "
                        f"its GPUs (the device plugin refuses more than one unit); {refuses}: ask for 1 per "
                        "container (more pods instead)"
                    )
    return None


def volcano_pods_admission(decided: Plan, tenant: TenantPlan, w: Workload) -> tuple[str | None, str | None]:
    """(why the policy refuses the workload's first refused GPU pod set, what it admitted): (None, None) where
    it does not look at the workload's pods (another namespace, or no GPU pod)."""
    if not volcano_pods_policy_applies(decided, tenant):
        return None, None
    gpu_sets = [ps for ps in w.podsets if ps.count > 0 and policy_gpu_resources(ps.pod)]  # pods that get created
    for ps in gpu_sets:
        # a Volcano Job (no Kueue integration) hands its schedulerName to templates that name none
        scheduler_name = ps.pod.get("schedulerName") or (w.scheduler_name if w.integration is None else None)
        if kuberay_sets_volcano(decided, w):
            scheduler_name = volcano.SCHEDULER_NAME
        why = volcano_pod_refusal(tenant, ps.name, ps.pod, scheduler_name)
        if why:
            return why, None
    if not gpu_sets:
        return None, None
    pools = ", ".join(sorted({ps.pod["nodeSelector"][derive.POOL_LABEL] for ps in gpu_sets}))
    return None, f"{volcano.PODS_POLICY_NAME} admits its GPU pods (schedulerName volcano, pool {pools})"


# --------------------------------------------------------------------------- facts of one pool
# One function per fact; each reads what the component renders from.


def pool_tolerations(p: PoolPlan) -> list[dict[str, str]]:
    """The pool's tolerations as a pod spec writes them (key, operator, effect, value), for a message."""
    return [{k: t[k] for k in ("key", "operator", "effect", "value") if k in t} for t in p.tolerations]


def bottlerocket_plugin(decided: Plan, pool: PoolPlan) -> Mapping[str, Any]:
    """The settings of Bottlerocket's host device plugin on the pool's nodes (``AwsPlan.bottlerocket_device_plugins``,
    from its node group's or EC2NodeClass's user data); empty where Bottlerocket's plugin does not serve it."""
    return decided.aws.bottlerocket_device_plugins.get(pool.name, {}) if decided.aws is not None else {}


def node_advertises(decided: Plan, pool: PoolPlan) -> tuple[dict[str, int], str | None]:
    """(resources one node of the pool advertises, why it differs from what quotas count or None).

    Bottlerocket's host device plugin shares GPUs only when the sharing settings reach the node through its
    user data: managed node groups carry them (``managed_pools.user_data``); for Karpenter pools they must be
    in the EC2NodeClass ``userData``, else the node advertises whole GPUs."""
    units = dict(pool.units_per_node)
    if pool.provisioner == "karpenter" and "device-sharing-strategy" in bottlerocket_plugin(decided, pool):
        assert decided.karpenter is not None
        node_class = next(c for c in decided.karpenter.node_classes if pool.name in c.pools)
        if "device-sharing-strategy" not in str(node_class.spec.get("userData") or ""):
            whole = {derive.GPU_RESOURCE: pool.gpus_per_node}
            return whole, (
                f"the Bottlerocket node advertises {_units(whole)} (its EC2NodeClass has no userData with "
                f"the sharing settings) while quotas count {_units(units)}"
            )
    return dict(pool.advertises), None  # its units and, on EFA pools, the EFA interfaces


def karpenter_sees(decided: Plan, pool: PoolPlan) -> dict[str, int]:
    """Extended resources Karpenter believes a node of the pool brings before it exists: nvidia.com/gpu from
    EC2 instance data (the GPU count), overridden key by key by the pool's NodeOverlay capacity when it has
    one (Karpenter applies it with lo.Assign; ``KarpenterPlan.node_overlays``)."""
    from ..plan.aws import efa

    sees = {derive.GPU_RESOURCE: pool.gpus_per_node}
    if efa.efa_capable_types(pool.instance_types):  # Karpenter's instance types carry it from EC2 network info
        sees[efa.EFA_RESOURCE] = efa.interfaces_of_types(pool.instance_types)
    overlays = decided.karpenter.node_overlays if decided.karpenter is not None else ()
    for overlay in (o for o in overlays if o.pool == pool.name):
        sees.update({name: int(n) for name, n in overlay.capacity.items()})
    return sees


def autoscaler_sees(
    decided: Plan, pool: PoolPlan
) -> tuple[dict[str, int], dict[str, LabelValues], list[dict[str, Any]]]:
    """What the Cluster Autoscaler's scale-from-zero template says of a managed pool's node: resources,
    labels and taints, read back from the node group's ``k8s.io/cluster-autoscaler/node-template/*`` tags
    (``NodeGroupPlan.tags``); its labels joined with those the autoscaler adds itself
    (``explain_nodes.autoscaler_template_labels``)."""
    from ..plan.aws import managed_pools

    assert decided.aws is not None
    tags = decided.aws.node_groups[pool.name].tags
    prefix = managed_pools.CA_TEMPLATE + "/"
    resources: dict[str, int] = {derive.GPU_RESOURCE: pool.gpus_per_node}  # from the instance type
    labels: dict[str, str] = {}
    taints: list[dict[str, Any]] = []
    for k, v in tags.items():
        if not k.startswith(prefix):
            continue
        kind, _, name = k[len(prefix) :].partition("/")
        if kind == "resources":
            resources[name] = int(v)
        elif kind == "label":
            labels[name] = v
        elif kind == "taint":
            value, _, effect = v.rpartition(":")
            taints.append({"key": name, "value": value or None, "effect": effect})
    return resources, autoscaler_template_labels(decided, pool, labels), taints


def exporter_values(decided: Plan) -> Mapping[str, Any]:
    """The dcgm-exporter's settings as deployed: the GPU Operator's ``dcgmExporter`` values, or the standalone
    chart's values without the operator (the add-ons' values in the plan)."""
    operator = decided.addons["gpuOperator"]
    if operator.enabled:
        return (operator.values or {}).get("dcgmExporter") or {}
    return decided.addons["dcgmExporter"].values or {}


def dcgm_attribution(decided: Plan, pool: PoolPlan, resources: list[str]) -> str | None:
    """Why dcgm-exporter cannot tie the pool's GPU metrics to the pod, or None.

    dcgm-exporter asks the kubelet's pod-resources API which pod holds which device and matches device IDs
    as GPU UUIDs by default (dcgm-exporter ``internal/pkg/collector/types.go``, ``pkg/.../kubernetes.go``);
    it only looks at ``nvidia.com/gpu`` and MIG resources unless told more names."""
    from ..plan import sharing

    values = exporter_values(decided)
    env = {e["name"]: e.get("value") for e in [*(values.get("env") or []), *(values.get("extraEnv") or [])]}
    plugin = pool.device_plugin
    if plugin == "gke" and env.get(gpu_operator.DCGM_GPU_ID_TYPE_ENV) != "device-name":
        return (
            "GKE's device plugin names devices nvidiaN, the exporter matches UUIDs: set its Kubernetes GPU "
            "id type to device-name"
        )
    if plugin == "bottlerocket":
        plug = bottlerocket_plugin(decided, pool)  # managed and Karpenter user data
        if plug.get(sharing.BOTTLEROCKET_DEVICE_ID_STRATEGY) != "uuid":
            return (
                "Bottlerocket's device plugin hands out device indexes, the exporter matches UUIDs: set "
                "settings.kubelet-device-plugins.nvidia.device-id-strategy = uuid"
            )
    listed = (env.get(gpu_operator.DCGM_RESOURCE_NAMES_ENV) or "").split(",")
    skipped = [r for r in resources if r != derive.GPU_RESOURCE and not r.startswith("nvidia.com/mig-")]
    if skipped and not set(skipped) <= set(listed):
        return (
            f"the exporter skips {', '.join(skipped)} (renameByDefault) unless listed in "
            f"{gpu_operator.DCGM_RESOURCE_NAMES_ENV}"
        )
    return None


# ------------------------------------------------------------------------------------------------ DRA


def resolve_claims(decided: Plan, tenant: TenantPlan, w: Workload) -> str | None:
    """DRA: each pod's resourceClaims, from a template or claim in the file or one the stack creates for the
    tenant (``DraPlan.claim_templates``), become device counts under the quota resource Kueue maps their
    DeviceClass to (``derive.DRA_CLASS_OF``, the deviceClassMappings), in ``PodSet.claims``; why one cannot be
    resolved, or None."""
    by_class = {c: r for r, c in derive.DRA_CLASS_OF.items()}
    created = decided.dra.claim_templates.get(tenant.name, {}) if decided.dra is not None else {}
    stack_templates = {n: t["spec"] for n, t in created.items()}
    for ps in w.podsets:
        for ref in ps.pod.get("resourceClaims") or []:
            if ref.get("resourceClaimTemplateName"):
                name = ref["resourceClaimTemplateName"]
                body = w.claim_specs.get(("template", name), stack_templates.get(name))
                what = f"ResourceClaimTemplate {name}"
            else:
                name = ref.get("resourceClaimName")
                body = w.claim_specs.get(("claim", name))
                what = f"ResourceClaim {name}"
            if body is None:
                known = ", ".join(sorted(stack_templates)) or "none"
                return f"{what} is neither in the file nor created for {tenant.name} ({known})"
            for req in (body.get("devices") or {}).get("requests") or []:
                exactly = req.get("exactly") or req
                cls = exactly.get("deviceClassName")
                if cls not in by_class:
                    return f"{what}: DeviceClass {cls} is not one the stack serves ({', '.join(by_class)})"
                if exactly.get("allocationMode", "ExactCount") != "ExactCount":
                    return f"{what}: allocationMode {exactly['allocationMode']} is not traced"
                ps.claims[by_class[cls]] = ps.claims.get(by_class[cls], 0) + int(exactly.get("count", 1))
    return None


# ----------------------------------------------------------------------------------------- explain


def kueue_request(w: Workload, ps: PodSet) -> dict[str, int]:
    """GPU units Kueue counts for one pod set of one workload: a pod's request times the pod set's pods in the
    workload (a Deployment's or StatefulSet's pods are a workload each, a LeaderWorkerSet's groups one each:
    ``Workload.workload_copies``) -- the pod set's ``TotalRequests`` (kueue v0.19.2 flavorassigner.go
    ``assignFlavors``)."""
    pods = 1 if w.per_pod_workloads else ps.count // w.workload_copies
    return {name: n * pods for name, n in ps.requests().items()}


def _total(w: Workload) -> dict[str, int]:
    """Units one Kueue workload holds: every pod of every pod set (``kueue_request`` summed)."""
    total: dict[str, int] = defaultdict(int)
    for ps in w.podsets:
        for name, n in kueue_request(w, ps).items():
            total[name] += n
    return dict(sorted(total.items()))


def asks_topology(ps: PodSet) -> bool:
    """The pod set asks Kueue for a topology (its template's preferred or required topology annotation): Kueue's
    ``TopologyRequest``, checked per pod set (kueue v0.19.2 tas_flavorassigner.go checkPodSetAndFlavorMatchForTAS)."""
    keys = (kueue.PREFERRED_TOPOLOGY_ANNOTATION, kueue.REQUIRED_TOPOLOGY_ANNOTATION)
    return any(k in ((ps.metadata or {}).get("annotations") or {}) for k in keys)


def gpu_podsets(w: Workload) -> list[PodSet]:
    """The pod sets that ask for a GPU (and get pods): only they go to the GPU pool. A pod set asking none (a CPU
    Ray head, an MPI launcher) goes to Kueue's default-flavor, whose GPU quota is 0 and which has no node labels
    (``kueue.resource_groups``), or under Volcano wherever it fits, and runs on non-GPU nodes: it needs no node
    of the pool and is matched against none of its labels."""
    return [ps for ps in w.podsets if ps.count > 0 and ps.requests()]
