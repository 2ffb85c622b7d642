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
most it can hold when it borrows all it may (``derive.capability_units``; 0 for GPU resources it cannot
reach; cpu/memory when the tenant sets them), ``weight`` = ``tenants[].queueWeight``, reclaimable.
Volcano queues are cluster-scoped and any namespace could name any queue, so a ValidatingAdmissionPolicy
requires Volcano Jobs and PodGroups in a tenant namespace to use the tenant's own queue.

Volcano schedules only pods with ``schedulerName: volcano``; Kueue manages only workloads carrying the
``kueue.x-k8s.io/queue-name`` label. Run a job under one of them, never both.
"""

from __future__ import annotations

from ..plan import derive
from ..plan.plan import plain
from ..plan.volcano import (  # re-exported: what the objects are made of
    ACTIONS as ACTIONS,
    ADMISSION_LABELS as ADMISSION_LABELS,
    ADMISSION_PDB as ADMISSION_PDB,
    ADMISSION_REPLICAS as ADMISSION_REPLICAS,
    API as API,
    BINPACK_GPU_WEIGHT as BINPACK_GPU_WEIGHT,
    CHART as CHART,
    PODS_POLICY_NAME as PODS_POLICY_NAME,
    QUEUE_POLICY_NAME as QUEUE_POLICY_NAME,
    RESERVED_QUEUES as RESERVED_QUEUES,
    SCHEDULER_NAME as SCHEDULER_NAME,
    admission_affinity as admission_affinity,
    admission_pdb as admission_pdb,
    helm_values as helm_values,
    queue_policy as queue_policy,
    queue_spec as queue_spec,
    scheduler_config as scheduler_config,
    scheduler_config_yaml as scheduler_config_yaml,
    scheduler_tiers as scheduler_tiers,
    tenant_pods_policy as tenant_pods_policy,
    webhook_probe as webhook_probe,
)
from . import addon, k8s
from .kueue import GKE_CRITICAL_PODS


class Volcano(addon.ChartAddon):
    """Namespace, the volcano release, a Queue per Volcano tenant and the tenant-queue admission policy."""

    TYPE = "gpu-platform:scheduling:Volcano"
    CHART = CHART

    def build(self) -> None:
        # Volcano's containers add DAC_OVERRIDE (chart default_csc): Pod Security 'baseline', warn on restricted.
        # Its pods are system-cluster-critical: on GKE the namespace needs the critical-pods quota.
        before = self.create_namespace(addon.NamespacePolicy("volcano", k8s.psa_labels("baseline"), GKE_CRITICAL_PODS))
        # Uninstalling Volcano deletes its CRDs and with them every Volcano Job and PodGroup: protected.
        # Queues wait for Volcano's admission webhooks to answer (components/render/webhooks.py), not only for the
        # release.
        decided = self.plan.addons["volcano"]
        self.install(
            "volcano",
            plain(decided.values),
            before,
            probe=decided.probe,
            protect=self.plan.protect["schedulerReleases"],
        )
        after = self.after_release()
        self.add_pdb("volcano-admission-pdb", admission_pdb(self.chart.namespace))
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
        if any(t.volcano_queue is not None for t in self.plan.tenants.values()):
            k8s.admission_policy("volcano-tenant-pods", self, self.provider, PODS_POLICY_NAME, tenant_pods_policy())
        if self.plan.tenants:
            k8s.admission_policy(
                "volcano-tenant-queue",
                self,
                self.provider,
                QUEUE_POLICY_NAME,
                queue_policy(),
                depends_on=[self.release],
            )
        self.register_outputs({"namespace": self.chart.namespace, "queues": self.queues})
