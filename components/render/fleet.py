"""A fleet's objects (``Plan.fleet`` on the manager, ``Plan.fleet_worker`` on a worker; ``components/plan/fleet.py``).

The credential crosses stacks only as a secret: the worker exports ``multikueueKubeconfig`` with
``pulumi.Output.secret`` (the state and ``pulumi stack output`` show ``[secret]``), the manager reads it through a
``StackReference`` (secret outputs stay secret) into a Secret in ``kueue-system``, whose ``data`` the kubernetes
provider keeps secret too. The token is that of a ``kubernetes.io/service-account-token`` Secret on the worker: the
kubernetes provider waits for the token controller to fill it (pulumi/pulumi-kubernetes#2048, "Add awaiter for
service-account-token secret"). Why a Secret-based token and not a TokenRequest: Kueue reads a MultiKueueCluster's
kubeconfig from a Secret and never renews it, and Pulumi runs only at deploy, so a TokenRequest token would expire
between deploys and the manager would lose the worker (its running workloads evicted after workerLostTimeout). The
lifetime is bounded by the stack instead: ``fleetWorker.credential.rotateBy`` (``gpu-platform plan`` warns from 14
days before it, ``pulumi up`` of the manager refuses a credential past it), and rotation replaces the Secret
(``credential.generation``): deleting the old Secret invalidates its token at once.
"""

from __future__ import annotations

import base64
import datetime
from typing import Any

import pulumi
import yaml

from ..plan import derive, fleet as fleet_plan, fleet_reset
from ..plan.frozen import plain
from ..plan.plan import Plan
from . import k8s
from .placeholders import under_mock_engine

API = fleet_plan.KUEUE_API


class FleetProblem(pulumi.RunError):
    """What a worker stack's outputs say disagrees with the manager's plan, or a credential is past its date."""


def kubeconfig_text(name: str, endpoint: str, ca_b64: str, token: str) -> str:
    """The kubeconfig Kueue accepts (kueue v0.19.2 pkg/controller/admissionchecks/multikueue/multikueuecluster.go
    validateKubeconfig): a bearer token inline, CA data inline (no file paths, no insecure TLS, no exec plugin)."""
    server = endpoint if endpoint.startswith("https://") else f"https://{endpoint}"
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority-data": ca_b64}}],
            "users": [{"name": f"{name}-{fleet_plan.MANAGER_SA}", "user": {"token": token}}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": f"{name}-{fleet_plan.MANAGER_SA}"}}],
            "current-context": name,
        },
        sort_keys=True,
    )


def overdue(rotate_by: str, today: datetime.date) -> int:
    """Days past ``rotate_by`` (negative: days left)."""
    return (today - datetime.date.fromisoformat(rotate_by)).days


def credential_lines(p: fleet_plan.FleetPlan, today: datetime.date) -> list[str]:
    """One line per worker whose credential is due within ``ROTATION_WARN_DAYS`` or past its date."""
    out = []
    for w in p.workers.values():
        if not w.rotate_by:
            continue
        late = overdue(w.rotate_by, today)
        if late > 0:
            out.append(
                f"worker {w.name}: its credential for this manager was due for rotation on {w.rotate_by}: bump "
                f"fleetWorker.credential.generation and rotateBy in its stack, pulumi up it, then this stack"
            )
        elif late > -fleet_plan.ROTATION_WARN_DAYS:
            out.append(f"worker {w.name}: its credential for this manager is due for rotation on {w.rotate_by}")
    return out


def check_worker(manager: str, w: fleet_plan.WorkerPlan, kinds: tuple[str, ...], facts: Any) -> Any:
    """The worker stack's ``fleetWorker`` output against the plan (pure: tested directly): the stack file read
    before deploy must be what is deployed."""
    if not isinstance(facts, dict):
        raise FleetProblem(f"fleet.workers {w.name}: stack {w.stack} exports no fleetWorker output (pulumi up it)")
    problems = []
    if facts.get("manager") not in (manager, None) and not under_mock_engine():
        problems.append(f"it grants manager {facts.get('manager')}, not {manager}")
    missing = [k for k in kinds if k not in (facts.get("kinds") or [])]
    if missing:
        problems.append(f"it does not run {', '.join(missing)}")
    if str(facts.get("kueueVersion", "")).split(".")[:2] != w.kueue_version.split(".")[:2]:
        problems.append(f"it runs Kueue {facts.get('kueueVersion')}, its stack file says {w.kueue_version}")
    absent = [t for t in w.tenants if t not in (facts.get("tenants") or [])]
    if absent:
        problems.append(f"its deployed stack has no tenant {', '.join(absent)}")
    if problems:
        raise FleetProblem(f"fleet.workers {w.name} (stack {w.stack}): " + "; ".join(problems))
    return facts


class FleetManager(pulumi.ComponentResource):
    """The manager's MultiKueue objects, after the Kueue release (``kueue``: the Kueue component)."""

    TYPE = "gpu-platform:scheduling:FleetManager"

    def __init__(self, name: str, plan: Plan, provider: pulumi.ProviderResource, kueue: Any, opts=None):
        super().__init__(self.TYPE, name, None, opts)
        p = plan.fleet
        assert p is not None
        if not under_mock_engine():
            late = credential_lines(p, datetime.date.today())
            if any("was due" in line for line in late) and not pulumi.runtime.is_dry_run():
                raise FleetProblem("fleet credentials past their date:\n" + "\n".join(late))
            for line in late:
                pulumi.log.warn(line)
        labels = derive.MANAGED_BY
        crs = pulumi.ResourceOptions.merge(kueue.after_release(), pulumi.ResourceOptions(parent=self))

        def cr(res: str, kind: str, obj: str, spec: Any, ns: str | None = None, o=crs, **extra: Any) -> Any:
            meta: dict[str, Any] = {"name": obj, "labels": labels, **({"namespace": ns} if ns else {})}
            return k8s.kube_object(res, API, kind, o, metadata=kueue.gated(meta), spec=spec, **extra)

        flavor = cr("fleet-flavor", "ResourceFlavor", fleet_plan.FLAVOR, {})
        manager = f"{pulumi.get_organization()}/{pulumi.get_project()}/{pulumi.get_stack()}"
        removal_guard = self._removal_guard(p, provider, crs)
        clusters: dict[str, pulumi.Resource] = {}
        for w in p.workers.values():
            ref = pulumi.StackReference(
                f"fleet-worker-{w.name}", stack_name=w.stack, opts=pulumi.ResourceOptions(parent=self)
            )
            facts = ref.get_output(fleet_plan.OUTPUT_FACTS).apply(lambda f, w=w: check_worker(manager, w, p.kinds, f))
            kubeconfig = pulumi.Output.all(ref.get_output(fleet_plan.OUTPUT_KUBECONFIG), facts).apply(lambda a: a[0])
            # Removing a worker deletes its MultiKueueCluster, and Kueue then re-dispatches what runs there from
            # scratch (kueue v0.19.2 multikueue/workload.go: an admitting cluster gone from the config is "not
            # visible", retried at once): protected until the worker is retired (fleet.retiredWorkers). The engine
            # updates the tenants' MultiKueueConfigs before it reaches that delete: the removal policy
            # (_removal_guard) refuses those updates.
            keep = pulumi.ResourceOptions(parent=self, provider=provider, protect=not w.retired)
            secret = k8s.kube_object(
                f"fleet-{w.name}-kubeconfig",
                "v1",
                "Secret",
                keep,
                metadata={"name": w.secret, "namespace": fleet_plan.KUEUE_NAMESPACE, "labels": labels},
                type="Opaque",
                stringData={fleet_plan.KUBECONFIG_KEY: pulumi.Output.secret(kubeconfig)},
            )
            clusters[w.name] = cr(
                f"fleet-{w.name}-cluster",
                "MultiKueueCluster",
                w.name,
                {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": w.secret}}},
                o=pulumi.ResourceOptions.merge(crs, pulumi.ResourceOptions(depends_on=[secret], protect=not w.retired)),
            )
        self.namespaces: dict[str, Any] = {}
        namespaces: dict[str, pulumi.Resource] = {}
        for t in p.tenants.values():
            # as a local tenant's (render/tenancy.py): deleting it deletes its jobs, so the namespace, its quota and
            # its queues follow protect.tenantNamespaces
            guard = plan.protect["tenantNamespaces"]
            ns = k8s.kube_object(
                f"{t.name}-namespace",
                "v1",
                "Namespace",
                pulumi.ResourceOptions(parent=self, provider=provider, protect=guard),
                metadata={"name": t.namespace, "labels": dict(t.namespace_labels)},
            )
            self.namespaces[t.name] = t.namespace
            namespaces[t.namespace] = ns
            # nothing of a fleet tenant runs on the manager (its Jobs stay suspended, managed by MultiKueue): a pod
            # that bypassed the queue gets no GPU here
            k8s.kube_object(
                f"{t.name}-gpu-quota",
                "v1",
                "ResourceQuota",
                pulumi.ResourceOptions(parent=self, provider=provider, protect=guard, depends_on=[ns]),
                metadata={"name": "gpu-quota", "namespace": t.namespace, "labels": labels},
                spec={"hard": {f"requests.{r}": "0" for r in (t.quota or {"nvidia.com/gpu": 0})}},
            )
            config = cr(
                f"fleet-{t.name}-config",
                "MultiKueueConfig",
                t.check,
                plain(t.multikueue_config_spec),
                o=pulumi.ResourceOptions.merge(
                    crs, pulumi.ResourceOptions(depends_on=[*clusters.values(), *removal_guard])
                ),
            )
            check = cr(
                f"fleet-{t.name}-check",
                "AdmissionCheck",
                t.check,
                plain(t.admission_check_spec),
                o=pulumi.ResourceOptions.merge(crs, pulumi.ResourceOptions(depends_on=[config])),
            )
            queue = cr(
                f"{t.name}-cluster-queue",
                "ClusterQueue",
                t.name,
                plain(t.cluster_queue_spec),
                o=pulumi.ResourceOptions.merge(crs, pulumi.ResourceOptions(depends_on=[flavor, check], protect=guard)),
            )
            cr(
                f"{t.name}-local-queue",
                "LocalQueue",
                t.local_queue,
                {"clusterQueue": t.name},
                ns=t.namespace,
                o=pulumi.ResourceOptions.merge(crs, pulumi.ResourceOptions(depends_on=[queue, ns], protect=guard)),
            )
        if p.reset is not None:
            lost_job_reset(p.reset, crs, namespaces)  # after the release: its namespace, kueue-system
        self.register_outputs({"workers": sorted(p.workers), "tenants": sorted(p.tenants)})

    def _removal_guard(
        self, p: fleet_plan.FleetPlan, provider: pulumi.ProviderResource, crs: pulumi.ResourceOptions
    ) -> list[pulumi.Resource]:
        """The API server's guard against draining a worker (``fleet_plan.removal_policy``): its params, a ConfigMap in
        kueue-system (after the Kueue release: its namespace), the policy, and its binding reading that ConfigMap;
        returns what the tenants' MultiKueueConfigs wait for.

        Each retired worker's key is its own ConfigMapPatch (server-side apply; its own field manager), not a key of
        the ConfigMap's ``data``: a worker retired in this deploy is in the params before a config drops it (the
        configs wait for its patch), and in the deploy that removes the worker from the stack file the engine updates
        the configs first and deletes the patch, which takes its key off, last (the engine deletes what the program no
        longer declares after every create and update). One ``data`` rewritten with the stack file would lose the
        worker's key before the configs drop it, and the server would refuse the documented removal."""
        meta = {"name": fleet_plan.RETIRED_PARAMS, "namespace": fleet_plan.KUEUE_NAMESPACE, "labels": derive.MANAGED_BY}
        params = k8s.kube_object("fleet-retired-workers", "v1", "ConfigMap", crs, metadata=meta)
        keys = [
            k8s.KubeResource(
                k8s.type_token("v1", "ConfigMapPatch"),
                f"fleet-{worker}-retired",
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
                    "data": {worker: value},
                },
                pulumi.ResourceOptions.merge(crs, pulumi.ResourceOptions(depends_on=[params])),
            )
            for worker, value in fleet_plan.retired_params(p).items()
        ]
        binding = k8s.admission_policy(
            "fleet-worker-removal",
            self,
            provider,
            fleet_plan.REMOVAL_POLICY,
            fleet_plan.removal_policy(),
            param_ref={
                "name": fleet_plan.RETIRED_PARAMS,
                "namespace": fleet_plan.KUEUE_NAMESPACE,
                "parameterNotFoundAction": "Deny",
            },
        )
        return [params, *keys, binding]


def lost_job_reset(r: fleet_reset.ResetPlan, o: pulumi.ResourceOptions, namespaces: dict[str, pulumi.Resource]) -> None:
    """The lost-worker reset (``components/plan/fleet_reset.py``): its ServiceAccount, a Role and RoleBinding in each
    tenant namespace, the CronJob (after its grant, so its first run is not refused)."""
    labels = {**derive.MANAGED_BY, "app.kubernetes.io/name": r.name}
    sa = k8s.kube_object(
        "fleet-lost-job-reset-sa",
        "v1",
        "ServiceAccount",
        o,
        metadata={"name": r.name, "namespace": r.namespace, "labels": labels},
    )
    grants: list[pulumi.Resource] = []
    for ns in r.namespaces:
        after_ns = pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(depends_on=[namespaces[ns]]))
        role = k8s.kube_object(
            f"fleet-lost-job-reset-{ns}-role",
            fleet_reset.RBAC_API,
            "Role",
            after_ns,
            metadata={"name": r.name, "namespace": ns, "labels": labels},
            rules=[plain(rule) for rule in r.rules],
        )
        grants.append(
            k8s.kube_object(
                f"fleet-lost-job-reset-{ns}-binding",
                fleet_reset.RBAC_API,
                "RoleBinding",
                pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(depends_on=[role, sa])),
                metadata={"name": r.name, "namespace": ns, "labels": labels},
                roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": r.name},
                subjects=[{"kind": "ServiceAccount", "name": r.name, "namespace": r.namespace}],
            )
        )
    k8s.kube_object(
        "fleet-lost-job-reset",
        "batch/v1",
        "CronJob",
        pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(depends_on=[sa, *grants])),
        metadata={"name": r.name, "namespace": r.namespace, "labels": labels},
        spec=plain(r.cron_job_spec),
    )


class FleetWorker(pulumi.ComponentResource):
    """The worker's grant to its manager and the credential it exports (``kubeconfig``, a secret Output)."""

    TYPE = "gpu-platform:scheduling:FleetWorker"

    def __init__(self, name: str, plan: Plan, provider: pulumi.ProviderResource, endpoint: Any, opts=None):
        super().__init__(self.TYPE, name, None, opts)
        p = plan.fleet_worker
        assert p is not None
        o = pulumi.ResourceOptions(parent=self, provider=provider)
        labels = {**derive.MANAGED_BY, "gpu-platform/fleet-manager": p.manager.replace("/", ".")[:63]}
        sa = k8s.kube_object(
            "fleet-manager-sa",
            "v1",
            "ServiceAccount",
            o,
            metadata={"name": p.service_account, "namespace": p.namespace, "labels": labels},
            automountServiceAccountToken=False,
        )
        role = k8s.kube_object(
            "fleet-manager-role",
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            o,
            metadata={"name": p.cluster_role, "labels": labels},
            rules=[plain(r) for r in p.rules],
        )
        k8s.kube_object(
            "fleet-manager-binding",
            "rbac.authorization.k8s.io/v1",
            "ClusterRoleBinding",
            pulumi.ResourceOptions.merge(o, pulumi.ResourceOptions(depends_on=[sa, role])),
            metadata={"name": p.cluster_role, "labels": labels},
            roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": p.cluster_role},
            subjects=[{"kind": "ServiceAccount", "name": p.service_account, "namespace": p.namespace}],
        )
        # a new generation is a new Secret (a new token) made before the old one is deleted (Pulumi's default
        # replacement order for a new name): the manager keeps working until its next deploy takes the new one
        token = k8s.KubeResource(
            k8s.type_token("v1", "Secret"),
            f"fleet-manager-token-{p.generation}",
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": p.token_secret,
                    "namespace": p.namespace,
                    "labels": labels,
                    "annotations": {
                        "kubernetes.io/service-account.name": p.service_account,
                        "gpu-platform/rotate-by": p.rotate_by,
                    },
                },
                "type": "kubernetes.io/service-account-token",
            },
            pulumi.ResourceOptions.merge(
                o, pulumi.ResourceOptions(depends_on=[sa], additional_secret_outputs=["data"])
            ),
            outputs=("data",),
        )
        server = p.endpoint or endpoint
        data = token.data  # type: ignore[attr-defined]
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(server, data).apply(
                lambda a: kubeconfig_text(
                    "worker", str(a[0]), (a[1] or {}).get("ca.crt", ""), _b64decode((a[1] or {}).get("token", ""))
                )
            )
        )
        self.register_outputs({})


def _b64decode(value: str) -> str:
    try:
        return base64.b64decode(value).decode()
    except (ValueError, UnicodeError):
        return value  # the offline synth's placeholder
