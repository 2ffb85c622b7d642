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

from collections.abc import Sequence
from typing import Any, NamedTuple

import pulumi
import yaml

from ..plan import derive

# re-exported: the renderer's names for what it is made of (components/plan/webhooks.py)
from ..plan.webhooks import (
    ACTIVE_DEADLINE_SECONDS as ACTIVE_DEADLINE_SECONDS,
    AWAIT_TIMEOUT as AWAIT_TIMEOUT,
    BACKOFF_LIMIT as BACKOFF_LIMIT,
    PROBE_FILE as PROBE_FILE,
    PROBE_OBJECT_NAME as PROBE_OBJECT_NAME,
    PROBE_USER as PROBE_USER,
    RBAC_API as RBAC_API,
    Probe as Probe,
    cluster_role_name as cluster_role_name,
    cluster_role_rules as cluster_role_rules,
    custom_resource_probe as custom_resource_probe,
    job_name as job_name,
    job_object_name as job_object_name,
    job_spec as job_spec,
    service_account_name as service_account_name,
)
from . import k8s

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


class Gate(NamedTuple):
    job: pulumi.Resource  # what every custom resource the add-on's webhooks guard depends on
    annotation: dict[str, pulumi.Output[str]]  # what each of them carries (``gate_annotation``)


def addon_gate(
    parent: pulumi.Resource,
    provider: pulumi.ProviderResource,
    probe: Probe,
    body: dict[str, Any],
    depends_on: Sequence[pulumi.Resource],
) -> Gate:
    """The probe's ServiceAccount, RBAC, ConfigMap and Job (``body``: its spec, ``job_spec``): the Job, and the
    annotation of the objects behind it. Make every custom resource the add-on's webhooks guard depend on the
    Job."""
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
    name = job_object_name(body, probe)
    job = k8s.kube_object(
        job_name(probe),
        "batch/v1",
        "Job",
        metadata={"name": name, "namespace": probe.namespace, "labels": labels},
        spec=body,
        opts=pulumi.ResourceOptions(
            parent=parent,
            provider=provider,
            depends_on=[*depends_on, binding, config],
            custom_timeouts=pulumi.CustomTimeouts(create=AWAIT_TIMEOUT, update=AWAIT_TIMEOUT),
        ),
    )
    return Gate(job, gate_annotation(job, name))
