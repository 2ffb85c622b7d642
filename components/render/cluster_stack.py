"""A cluster taken from another Pulumi stack (``Plan.cluster_stack``, ``components/plan/cluster_stack.py``): a
``pulumi.StackReference`` to the cluster stack, its outputs read into what the cloud's renderers read of a found
cluster. A missing output fails the deployment with one error naming the stack and every missing output; a
``clusterName`` other than the stack file's ``cluster.name`` does too (the plan's names are made from it).
"""

from __future__ import annotations

from typing import Any

import pulumi

from ..plan.cluster_stack import AWS_OUTPUTS, GCP_OUTPUTS, LIST_OUTPUTS, ClusterStackPlan
from ..plan.plan import Plan


class MissingOutputs(pulumi.RunError):
    """The cluster stack lacks outputs the platform needs (or names another cluster)."""


def check_outputs(p: ClusterStackPlan, outputs: dict[str, Any] | None) -> dict[str, Any]:
    """The referenced stack's outputs, or ``MissingOutputs`` naming what is missing (pure: tested directly)."""
    outputs = outputs or {}
    described = AWS_OUTPUTS if p.cloud == "aws" else GCP_OUTPUTS
    missing = [o for o in p.required if outputs.get(o) in (None, "") and o not in LIST_OUTPUTS]
    missing += [o for o in p.required if o in LIST_OUTPUTS and outputs.get(o) is None]
    if missing:
        what = "; ".join(f"{o} ({described[o]})" for o in sorted(missing, key=list(described).index))
        raise MissingOutputs(f"gpu-platform:cluster.fromStack: stack {p.stack} has no output {what}")
    keys = {"clusterName": "cluster.name", "location": "cluster.location", "project": "cluster.project"}
    for output, want in p.identity.items():
        if outputs[output] != want:
            raise MissingOutputs(
                f"gpu-platform:cluster.fromStack: stack {p.stack} exports {output} {outputs[output]!r}, "
                f"but gpu-platform:{keys[output]} is {want!r}"
            )
    for o in (o for o in described if o in LIST_OUTPUTS and outputs.get(o) is not None):
        problem = _list_problem(outputs[o], required=o in p.required)
        if problem:
            raise MissingOutputs(
                f"gpu-platform:cluster.fromStack: stack {p.stack} exports {o} as {problem}: it must be a list of "
                f"at least one {LIST_OUTPUTS[o]}"
                if o in p.required
                else f"gpu-platform:cluster.fromStack: stack {p.stack} exports {o} as {problem}: it must be a list"
            )
    return outputs


def _list_problem(value: Any, required: bool) -> str | None:
    """What is wrong with a list output's value, or None: not a list (a string would be read character by
    character), an empty entry, or empty where the output is required."""
    if not isinstance(value, list | tuple):
        return f"{type(value).__name__} {value!r}"[:80]
    if any(not isinstance(v, str) or not v for v in value):
        return f"{list(value)!r} (an entry that is not a non-empty string)"[:120]
    if required and not value:
        return "an empty list"
    return None


def _reference(p: ClusterStackPlan, parent: pulumi.Resource) -> pulumi.Output[dict[str, Any]]:
    ref = pulumi.StackReference("cluster-stack", stack_name=p.stack, opts=pulumi.ResourceOptions(parent=parent))
    return ref.outputs.apply(lambda o: check_outputs(p, o))


def aws_cluster(p: ClusterStackPlan, parent: pulumi.Resource) -> Any:
    """The referenced EKS cluster as ``EksAccess.cluster`` (``sdk.ClusterView``: the lookup's attributes)."""
    from .aws import sdk

    outputs = _reference(p, parent)

    def out(name: str) -> Any:
        return outputs.apply(lambda o: o.get(name))

    return sdk.ClusterView(
        name=out("clusterName"),
        arn=out("clusterArn"),
        endpoint=out("endpoint"),
        version=out("kubernetesVersion"),
        certificate_authorities=outputs.apply(lambda o: [sdk.result({"data": o["certificateAuthority"]})]),
        identities=outputs.apply(lambda o: [sdk.result({"oidcs": [{"issuer": o.get("oidcIssuer")}]})]),
        vpc_config=outputs.apply(
            lambda o: sdk.result(
                {
                    "subnetIds": list(o["privateSubnetIds"]),
                    "vpcId": o["vpcId"],
                    "clusterSecurityGroupId": o["clusterSecurityGroupId"],
                }
            )
        ),
    )


def gke_kubeconfig(p: ClusterStackPlan, plan: Plan, outputs: dict[str, Any]) -> str:
    from .gcp.cluster import kubeconfig_of

    assert plan.gke is not None
    return kubeconfig_of(plan.gke.cluster, outputs["endpoint"], outputs["clusterCaCertificate"])


def _checked_lookup(
    plan: Plan, outputs: pulumi.Output[dict[str, Any]], parent: pulumi.Resource
) -> tuple[Any, pulumi.Output[bool]]:
    """The referenced cluster as GKE describes it, checked as a found one is (``gcp.cluster.problems_of``): an
    Autopilot cluster, or one without Workload Identity, stops the deploy before any node pool is sent. The stack's
    outputs say where the cluster is, not what it is; a hand-written cluster stack exports no such flags. The
    lookup waits on the outputs' check, so a missing output is reported first."""
    import pulumi_gcp as gcp

    from .gcp.cluster import checked

    assert plan.gke is not None
    found = gcp.container.get_cluster_output(
        name=outputs.apply(lambda o: o["clusterName"]),
        location=outputs.apply(lambda o: o["location"]),
        project=outputs.apply(lambda o: o["project"]),
        opts=pulumi.InvokeOutputOptions(parent=parent),
    )
    return found, checked(plan.gke.cluster, found)


class GkeStackAccess(pulumi.ComponentResource):
    """A GKE cluster from its stack's outputs, offering what ``GkeAccess`` offers the node pools: ``endpoint``,
    ``ready`` (the outputs' check, then GKE's answer checked for Autopilot and Workload Identity),
    ``node_locations`` (waits on ``ready``), ``kubeconfig`` and ``provider``."""

    TYPE = "gpu-platform:gcp:GkeStackAccess"

    def __init__(self, name: str, plan: Plan, opts: pulumi.ResourceOptions | None = None):
        super().__init__(self.TYPE, name, None, opts)

        from .k8s import PROVIDER_OPTIONS, KubeProvider

        p = plan.cluster_stack
        assert p is not None and plan.gke is not None
        outputs = _reference(p, self)
        self.endpoint = outputs.apply(lambda o: o["endpoint"])
        # the cluster as GKE describes it (what a found cluster's lookup gives: the storage add-on check reads it)
        self.cluster, self.ready = _checked_lookup(plan, outputs, self)
        # the zones the cluster's nodes span (optional output nodeLocations; a zonal cluster's own zone counts)
        # every node pool reads this, so none registers before the check passed (as with GkeAccess)
        self.node_locations = pulumi.Output.all(self.ready, outputs).apply(
            lambda r: list(r[1].get("nodeLocations") or [])
        )
        self.kubeconfig = outputs.apply(lambda o: gke_kubeconfig(p, plan, o))
        ident = outputs.apply(
            lambda o: f"projects/{o['project']}/locations/{o['location']}/clusters/{o['clusterName']}"
        )
        self.provider = KubeProvider(
            "kubernetes",
            kubeconfig=self.kubeconfig,
            cluster_identifier=ident,
            opts=pulumi.ResourceOptions(parent=self),
            **PROVIDER_OPTIONS,
        )
        self.register_outputs({"endpoint": self.endpoint, "stack": p.stack})
