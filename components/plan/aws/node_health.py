"""The EKS node monitoring agent add-on's configuration (issue 40.3): what ``Plan.aws.node_health_configuration``
holds and ``components/render/aws/node_health.py`` sends as the add-on's ``configurationValues``.

The add-on installs two DaemonSets (aws/eks-node-monitoring-agent charts/eks-node-monitoring-agent, v1.6.6 and
v1.7.0): the agent itself, whose values tolerate every taint (``nodeAgent.tolerations: [{operator: Exists}]``),
and ``dcgm-server`` (templates/dcgm-daemonset.yaml), the DCGM host engine the agent's DCGM diagnostics talk to on
port 5555, whose ``dcgmAgent.tolerations`` default is ``[]``. Every GPU node here carries the GPU taint
(``derive.GPU_TAINT``) and its pool's own, so with the defaults DCGM never runs on a GPU node and only kernel-log
XIDs reach repair. The add-on's configuration schema (charts/configuration.schema.json at both tags,
``DCGMAgent.properties.tolerations``: an array of objects) takes tolerations for it: those of every GPU pool's
taints, the same list the GPU Operator's DaemonSets carry (``gpu_operator.gpu_tolerations``). The DaemonSet's
own affinity keeps it on NVIDIA instance types.
"""

from __future__ import annotations

import json
from typing import Any

from ...spec.model import StackSpec
from .. import gpu_operator

NODE_MONITORING_AGENT = "eks-node-monitoring-agent"  # the EKS add-on's name (EKS user guide, "node-health")


def configuration(spec: StackSpec) -> dict[str, Any]:
    """The add-on's configurationValues: the DCGM host engine tolerates every GPU pool's taints."""
    return {"dcgmAgent": {"tolerations": gpu_operator.gpu_tolerations(spec)}}


def configuration_json(config: Any) -> str:
    """As EKS takes it (a JSON string), byte-identical for the same configuration."""
    return json.dumps(config, sort_keys=True, separators=(",", ":"))
