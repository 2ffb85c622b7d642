"""Every Helm chart the platform installs, with its pinned version and official source.

This is the only place chart versions and repositories are written down. Stack files may override a
version (``gpu-platform:charts``), but never the repository; the policy pack checks that every release
is pinned to an exact version from an allow-listed repository.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Chart:
    key: str  # stable id used in stack files and resource names
    chart: str  # chart name, or a full oci:// reference
    version: str  # exact chart version (no ranges)
    repository: str | None  # https Helm repository; None for OCI charts (the registry is in `chart`)
    namespace: str  # where the release is installed
    release: str  # Helm release name

    @property
    def source(self) -> str:
        """Where the chart comes from, for summaries and policy allow-lists."""
        return self.repository or self.chart.rsplit("/", 1)[0]


GPU_OPERATOR = Chart(
    key="gpuOperator",
    chart="gpu-operator",
    version="v26.7.0",
    repository="https://helm.ngc.nvidia.com/nvidia",
    namespace="gpu-operator",
    release="gpu-operator",
)
DCGM_EXPORTER = Chart(
    key="dcgmExporter",
    chart="dcgm-exporter",
    version="4.8.2",
    repository="https://nvidia.github.io/dcgm-exporter/helm-charts",
    namespace="gpu-monitoring",
    release="dcgm-exporter",
)
KUEUE = Chart(
    key="kueue",
    chart="oci://registry.k8s.io/kueue/charts/kueue",
    version="0.19.2",
    repository=None,
    namespace="kueue-system",
    release="kueue",
)
VOLCANO = Chart(
    key="volcano",
    chart="volcano",
    version="1.15.1",
    repository="https://volcano-sh.github.io/helm-charts",
    namespace="volcano-system",
    release="volcano",
)
KARPENTER = Chart(
    key="karpenter",
    chart="oci://public.ecr.aws/karpenter/karpenter",
    version="1.14.1",
    repository=None,
    namespace="kube-system",  # Karpenter's API Priority and Fairness FlowSchemas only cover kube-system
    release="karpenter",
)
KARPENTER_CRD = Chart(
    key="karpenterCrd",
    chart="oci://public.ecr.aws/karpenter/karpenter-crd",
    version="1.14.1",
    repository=None,
    namespace="kube-system",
    release="karpenter-crd",
)
CLUSTER_AUTOSCALER = Chart(
    key="clusterAutoscaler",
    chart="cluster-autoscaler",
    version="9.59.0",  # app 1.35.0
    repository="https://kubernetes.github.io/autoscaler",
    namespace="kube-system",
    release="cluster-autoscaler",
)
# The EFA Kubernetes device plugin (advertises vpc.amazonaws.com/efa), from AWS' official eks-charts repository
# (github.com/aws/eks-charts stable/aws-efa-k8s-device-plugin; Chart.yaml and values.yaml recorded in
# upstream/aws-efa-k8s-device-plugin/).
EFA_DEVICE_PLUGIN = Chart(
    key="efaDevicePlugin",
    chart="aws-efa-k8s-device-plugin",
    version="v0.5.30",  # app v0.5.20
    repository="https://aws.github.io/eks-charts",
    namespace="kube-system",
    release="aws-efa-k8s-device-plugin",
)

KUBE_PROMETHEUS_STACK = Chart(
    key="kubePrometheusStack",
    chart="kube-prometheus-stack",
    version="88.5.3",  # prometheus-operator v0.93.1
    repository="https://prometheus-community.github.io/helm-charts",
    namespace="monitoring",
    release="kube-prometheus-stack",  # its objects carry release=<this>: the default serviceMonitorLabels
)
# node-exporter (a kube-prometheus-stack sub-chart) needs host network, PID and paths: Pod Security privileged,
# so it gets a namespace of its own and the rest of the stack stays baseline.
NODE_EXPORTER_NAMESPACE = "monitoring-node-exporter"

CHARTS: dict[str, Chart] = {
    c.key: c
    for c in (
        GPU_OPERATOR,
        DCGM_EXPORTER,
        KUEUE,
        VOLCANO,
        KARPENTER,
        KARPENTER_CRD,
        CLUSTER_AUTOSCALER,
        KUBE_PROMETHEUS_STACK,
        EFA_DEVICE_PLUGIN,
    )
}

# Sources a release may come from; the policy pack's default allow-list.
ALLOWED_SOURCES: tuple[str, ...] = tuple(sorted({c.source for c in CHARTS.values()}))

# kubectl from the official Kubernetes registry, for the webhook readiness probes (components/webhooks.py):
# shell-free, entrypoint kubectl; one minor of skew either side of the API server is supported.
KUBECTL_IMAGE = "registry.k8s.io/kubectl:v1.34.1"

# API versions of the custom resources the platform writes (pinned with the charts above).
KUEUE_API = "kueue.x-k8s.io/v1beta2"
VOLCANO_QUEUE_API = "scheduling.volcano.sh/v1beta1"
KARPENTER_NODEPOOL_API = "karpenter.sh/v1"
KARPENTER_NODECLASS_API = "karpenter.k8s.aws/v1"
KARPENTER_NODEOVERLAY_API = "karpenter.sh/v1alpha1"  # alpha in Karpenter 1.14 (feature gate nodeOverlay)
MONITORING_API = "monitoring.coreos.com/v1"
# ProvisioningRequest CRD the Cluster Autoscaler serves (components/aws/data/, from cluster-autoscaler 1.35.0).
PROVISIONING_REQUEST_API = "autoscaling.x-k8s.io/v1"


def resolve(chart: Chart, overrides: dict | None = None) -> Chart:
    """The chart with a stack's version override applied (``gpu-platform:charts.<key>.version``).

    ``overrides`` is ``spec.charts``; the repository never changes.
    """
    override = (overrides or {}).get(chart.key)
    if override is None:
        return chart
    from dataclasses import replace

    return replace(chart, version=override.version)


def release_args(chart: Chart, overrides: dict | None = None) -> dict:
    """Keyword arguments for ``helm.v3.Release`` naming the chart, pinned version and repository."""
    c = resolve(chart, overrides)
    args: dict = {
        "name": c.release,
        "chart": c.chart,
        "version": c.version,
        "namespace": c.namespace,
    }
    if c.repository:
        args["repository_opts"] = {"repo": c.repository}
    return args
