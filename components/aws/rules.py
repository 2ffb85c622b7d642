"""AWS rules, checked before anything is registered: instance types must carry the declared GPUs, the
AMI family must match their architecture, and Karpenter pools exist only on aws."""

from __future__ import annotations

from collections.abc import Iterator

from components import catalog
from components.spec import Problem, StackSpec, key, rule

AWS_OS = ("al2023", "bottlerocket")


@rule
def aws_pools(spec: StackSpec) -> Iterator[Problem]:
    for i, pool in enumerate(spec.node_pools):
        if pool.provisioner == "karpenter" and spec.cloud != "aws":
            yield Problem(key("nodePools", i, "provisioner"), f"karpenter pools need cloud aws, not {spec.cloud}")
        if spec.cloud != "aws":
            if "karpenter" in pool.model_fields_set:
                yield Problem(key("nodePools", i, "karpenter"), f"does not apply when cloud is {spec.cloud}")
            continue
        if "gke" in pool.model_fields_set:
            yield Problem(key("nodePools", i, "gke"), "does not apply when cloud is aws")
        if pool.os is not None and pool.os not in AWS_OS:
            yield Problem(key("nodePools", i, "os"), f"must be one of {', '.join(AWS_OS)} on aws")
        if not pool.instance_types:
            yield Problem(key("nodePools", i, "instanceTypes"), "needs at least one instance type on aws")
        arches = set()
        for j, name in enumerate(pool.instance_types):
            it = catalog.aws_instance_type(name)
            at = key("nodePools", i, "instanceTypes", j)
            if it is None:
                yield Problem(at, f"{name!r} is not a known NVIDIA GPU instance type")
                continue
            arches.add(it.arch)
            if it.gpu_model != pool.gpu.model:
                yield Problem(at, f"{name} carries {it.gpu_model}, not {pool.gpu.model}")
            elif it.gpu_count != pool.gpu.per_node:
                yield Problem(at, f"{name} has {it.gpu_count} GPUs, but gpu.perNode is {pool.gpu.per_node}")
        if len(arches) > 1:
            yield Problem(
                key("nodePools", i, "instanceTypes"),
                "mixes x86_64 and arm64 instance types; one pool runs one AMI architecture",
            )
        if len(set(pool.instance_types)) != len(pool.instance_types):
            yield Problem(key("nodePools", i, "instanceTypes"), "lists an instance type twice")
