"""What a cluster stack (``cluster.fromStack``) answers the offline synth: every output
``components/plan/cluster_stack.py`` reads, per cloud, with the same placeholders as the lookups
(``synth.LOOKUPS``); the cluster's name (and on gcp its location and project) are the stack file's
(``stack_identity``), which the platform requires them to be."""

from __future__ import annotations

from typing import Any


def stack_outputs(lookups: dict[str, dict[str, Any]], placeholder: str, ca_data: str) -> dict[str, dict[str, Any]]:
    eks = lookups["aws:eks/getCluster:getCluster"]
    return {
        "aws": {
            "clusterArn": eks["arn"],
            "endpoint": eks["endpoint"],
            "certificateAuthority": ca_data,
            "oidcIssuer": eks["identities"][0]["oidcs"][0]["issuer"],
            "clusterSecurityGroupId": f"sg-{placeholder}",
            "vpcId": f"vpc-{placeholder}",
            "privateSubnetIds": [f"subnet-{placeholder}-a", f"subnet-{placeholder}-b"],
            "kubernetesVersion": eks["version"],
        },
        "gcp": {
            "endpoint": lookups["gcp:container/getCluster:getCluster"]["endpoint"],
            "clusterCaCertificate": ca_data,
            "nodeLocations": [f"{placeholder}-zone-{z}" for z in "abc"],
        },
    }


def stack_identity(spec: Any) -> dict[str, Any]:
    """The outputs a referenced cluster stack must answer as the stack file says them (``cluster_stack.identity``)."""
    from ..plan.cluster_stack import identity

    return identity(spec)


def fleet_outputs(spec: Any, placeholder: str) -> dict[str, dict[str, Any]]:
    """What each worker stack of a fleet manager answers: its ``fleetWorker`` facts as its stack file decides them,
    and a placeholder credential (``multikueueKubeconfig``, a secret output)."""
    if spec.fleet is None:
        return {}
    from ..plan import fleet, plan

    out = {}
    for w in spec.fleet.workers:
        wspec = spec.fleet.worker_spec(w.name)
        if wspec is None:
            continue
        decided = plan.build(wspec, w.stack.rsplit("/", 1)[-1]).fleet_worker
        facts = {} if decided is None else plan.plain(decided.facts)
        out[w.stack] = {fleet.OUTPUT_FACTS: facts, fleet.OUTPUT_KUBECONFIG: f"{placeholder}-kubeconfig-{w.name}"}
    return out
