"""Webhook readiness gates: no custom resource an add-on's admission webhook guards is created before that
webhook answers.

Why: Kueue's webhook server starts serving 10-30 s after its pod is Running when it manages its own
certificates (the chart's default; kubernetes-sigs/kueue#13036), and Volcano's admission service likewise
answers after its Deployment is Ready. ``helm.v3.Release`` waits for Deployments to be Ready, not for the
webhook to answer; pulumi-kubernetes retries a create only on NotFound/NoMatch (CRD not there yet), so the
first ClusterQueue or Queue of a fresh cluster fails with "failed calling webhook ... connection refused /
502" and ``pulumi up`` stops.

How: a ``batch/v1`` Job per add-on that asks the API server for a **server-side dry-run create** of one
object the webhook guards (``kubectl create --dry-run=server``: admission, webhooks included, runs in full;
nothing is persisted). While the webhook does not answer, the pod fails and the Job controller retries it
(back-off 10 s, 20 s, 40 s ...). pulumi-kubernetes awaits a Job until its ``Complete`` condition and fails
it on ``Failed`` (the Job awaiter, in the provider since v1.x; ``kubernetes.batch.v1.Job`` docs), so every
resource that depends on the Job is created only after the webhook has answered once. Kueue's upstream e2e
scripts wait the same way (kubernetes-sigs/kueue#12016: a retried ``kubectl create --dry-run=server``).

Alternatives considered: ``helm.v3.Release`` ``waitForJobs`` only waits for the chart's own Jobs (neither
chart has one that probes its webhook); ``helm.v4.Chart`` is a remote component whose await covers its
objects' readiness, not a webhook's; Kueue's chart has no readiness option for the webhook (the issue above
is open); Volcano's chart has none either. Only a probe through the API server, as a real client sees it,
proves the webhook answers.

Least privilege: each probe has its own ServiceAccount, bound to a ClusterRole that may only ``create`` the
one probed resource (a dry-run still needs the verb); the pod runs as non-root, read-only, without
capabilities (Pod Security ``restricted``), on system nodes, from a pinned image of the official Kubernetes
registry (``versions.KUBECTL_IMAGE``). It runs in the add-on's own namespace, which the add-on's Job/Pod
webhooks leave alone (Kueue's only touch tenant namespaces; Volcano's skip its release namespace).

The Job carries the probed release's chart version in its pod template, so a chart upgrade replaces the Job
and the gate runs again. A Job's pod template is immutable (the API server answers ``spec.template: field is
immutable`` to an update), so the Job's name ends in a digest of its spec (``job_object_name``): any change
to the spec is a new name, which pulumi-kubernetes replaces (create the new Job, then delete the old) instead
of updating in place. The Pulumi resource name stays ``<addon>-webhook-ready``, so the URN does not change.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import yaml

from components.data import versions
from components.plan import derive
from components.render import k8s
from components.spec.model import StackSpec

RBAC_API = "rbac.authorization.k8s.io/v1"
PROBE_FILE = "probe.yaml"
# Name of the object each probe dry-runs; a rule keeps pools and tenants off it (a dry-run create of an existing
# name fails with AlreadyExists, and the gate would never open).
PROBE_OBJECT_NAME = "gpu-platform-webhook-probe"
PROBE_USER = 65532  # "nonroot" in distroless images
# Pod retries while the webhook is not answering: back-off 10 s doubling (capped at 6 min), so 6 retries
# cover about 10 minutes; the webhook normally answers within 30 s of its Deployment being Ready.
BACKOFF_LIMIT = 6
ACTIVE_DEADLINE_SECONDS = 900
AWAIT_TIMEOUT = "20m"  # pulumi's Job await (default 10 m) must outlast the Job's own deadline


@dataclass(frozen=True)
class Probe:
    """What to dry-run create to know an add-on's webhook answers."""

    name: str  # add-on key: resource names and the ServiceAccount derive from it
    namespace: str  # where the probe Job runs (the add-on's namespace)
    api_group: str  # RBAC group of the probed resource
    resource: str  # RBAC resource (plural) of the probed object
    obj: dict[str, Any]  # the object sent with dryRun=All (never stored)
    chart_version: str  # the release's chart version (a change re-runs the gate)


def custom_resource_probe(
    name: str, chart: versions.Chart, api: str, kind: str, resource: str, body: dict[str, Any]
) -> Probe:
    """The probe of an add-on whose webhooks guard its custom resources: a dry-run of a ``kind`` (``api``,
    RBAC ``resource``) named ``PROBE_OBJECT_NAME`` with ``spec`` ``body``, run in the release's namespace
    (``chart``, resolved: its version re-runs the gate on upgrade)."""
    return Probe(
        name=name,
        namespace=chart.namespace,
        api_group=api.split("/")[0],
        resource=resource,
        obj={
            "apiVersion": api,
            "kind": kind,
            "metadata": {"name": PROBE_OBJECT_NAME, "labels": derive.MANAGED_BY},
            "spec": body,
        },
        chart_version=chart.version,
    )


def job_name(probe: Probe) -> str:
    return f"{probe.name}-webhook-ready"


def job_object_name(body: dict[str, Any], probe: Probe) -> str:
    """The Job's ``metadata.name``: ``<addon>-webhook-ready-<8 hex of sha256 over its spec>``."""
    digest = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return f"{job_name(probe)}-{digest[:8]}"


def service_account_name(probe: Probe) -> str:
    return f"{probe.name}-webhook-probe"


def cluster_role_name(probe: Probe) -> str:
    return f"gpu-platform-{probe.name}-webhook-probe"


def cluster_role_rules(probe: Probe) -> list[dict[str, Any]]:
    return [{"apiGroups": [probe.api_group], "resources": [probe.resource], "verbs": ["create"]}]


def job_spec(spec: StackSpec, probe: Probe) -> dict[str, Any]:
    """The probe Job's spec: Pod Security 'restricted', system nodes, a pinned kubectl from registry.k8s.io."""
    return {
        "backoffLimit": BACKOFF_LIMIT,
        "activeDeadlineSeconds": ACTIVE_DEADLINE_SECONDS,
        "template": {
            "metadata": {
                "labels": {**derive.MANAGED_BY, "app.kubernetes.io/name": job_name(probe)},
                "annotations": {"gpu-platform/probed-chart-version": probe.chart_version},
            },
            "spec": {
                "serviceAccountName": service_account_name(probe),
                "restartPolicy": "Never",
                "nodeSelector": derive.system_node_selector(spec),
                "securityContext": {
                    "runAsNonRoot": True,
                    "runAsUser": PROBE_USER,
                    "runAsGroup": PROBE_USER,
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "containers": [
                    {
                        "name": "probe",
                        "image": versions.image(versions.KUBECTL_IMAGE, spec.image_registry),
                        "args": ["create", "--dry-run=server", "-f", f"/probe/{PROBE_FILE}"],
                        # kubectl caches discovery under $HOME/.kube: a writable emptyDir, the rest read-only
                        "env": [{"name": "HOME", "value": "/tmp"}],
                        "securityContext": {
                            "allowPrivilegeEscalation": False,
                            "readOnlyRootFilesystem": True,
                            "capabilities": {"drop": ["ALL"]},
                        },
                        "resources": {
                            "requests": {"cpu": "10m", "memory": "32Mi"},
                            "limits": {"memory": "128Mi"},
                        },
                        "volumeMounts": [
                            {"name": "probe", "mountPath": "/probe", "readOnly": True},
                            {"name": "tmp", "mountPath": "/tmp"},
                        ],
                    }
                ],
                "volumes": [
                    {"name": "probe", "configMap": {"name": job_name(probe)}},
                    {"name": "tmp", "emptyDir": {"sizeLimit": "16Mi"}},
                ],
            },
        },
    }


GATE_ANNOTATION = "gpu-platform/webhook-gate"


def gate_annotation(gate: pulumi.CustomResource, name: str) -> dict[str, pulumi.Output[str]]:
    """The annotation every object behind a gate carries: the gate Job's name, known only once the Job exists.

    A preview sends each object to be created through a server-side dry run, and so through the add-on's
    webhooks, unless its inputs hold an unknown value (pulumi-kubernetes provider/pkg/provider/provider.go,
    ``Create``: ``skipPreview := hasComputedValue(newInputs) || ...``). ``dependsOn`` does not stop that: after an
    ``up`` interrupted between the release (its webhooks registered) and the gate, a preview's dry run of a
    ResourceFlavor was refused ("failed calling webhook"). The Job's id is unknown while the Job is still to be
    created, so is this value, and the preview skips the dry run exactly until the gate has passed."""
    return {GATE_ANNOTATION: gate.id.apply(lambda _: name)}


def webhook_gate(
    parent: pulumi.Resource,
    provider: pulumi.ProviderResource,
    spec: StackSpec,
    probe: Probe,
    depends_on: Sequence[pulumi.Resource],
) -> pulumi.Resource:
    """The probe's ServiceAccount, RBAC, ConfigMap and Job; returns the Job. Make every custom resource the
    add-on's webhooks guard depend on it (``depends_on=[gate]``)."""
    opts = pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=list(depends_on))
    labels = derive.MANAGED_BY
    sa = k8s.kube_object(
        service_account_name(probe),
        "v1",
        "ServiceAccount",
        metadata={"name": service_account_name(probe), "namespace": probe.namespace, "labels": labels},
        opts=opts,
    )
    role = k8s.kube_object(
        cluster_role_name(probe),
        RBAC_API,
        "ClusterRole",
        metadata={"name": cluster_role_name(probe), "labels": labels},
        rules=cluster_role_rules(probe),
        opts=pulumi.ResourceOptions(parent=parent, provider=provider),
    )
    binding = k8s.kube_object(
        cluster_role_name(probe),
        RBAC_API,
        "ClusterRoleBinding",
        metadata={"name": cluster_role_name(probe), "labels": labels},
        roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role_name(probe)},
        subjects=[{"kind": "ServiceAccount", "name": service_account_name(probe), "namespace": probe.namespace}],
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=[sa, role]),
    )
    config = k8s.kube_object(
        job_name(probe),
        "v1",
        "ConfigMap",
        metadata={"name": job_name(probe), "namespace": probe.namespace, "labels": labels},
        data={PROBE_FILE: yaml.safe_dump(probe.obj, sort_keys=False)},
        opts=opts,
    )
    body = job_spec(spec, probe)
    return k8s.kube_object(
        job_name(probe),
        "batch/v1",
        "Job",
        metadata={"name": job_object_name(body, probe), "namespace": probe.namespace, "labels": labels},
        spec=body,
        opts=pulumi.ResourceOptions(
            parent=parent,
            provider=provider,
            depends_on=[*depends_on, binding, config],
            custom_timeouts=pulumi.CustomTimeouts(create=AWAIT_TIMEOUT, update=AWAIT_TIMEOUT),
        ),
    )
