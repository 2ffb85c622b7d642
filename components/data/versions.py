"""Every Helm chart the platform installs, with its pinned version and official source.

This is the only place chart versions and repositories are written down. Stack files may pin another
version (``gpu-platform:charts.<key>.version``) and take the charts from somewhere else than their official
source (``gpu-platform:chartSource`` for all, ``gpu-platform:charts.<key>.source`` for one): a mirror (an OCI
registry or a Helm repository URL), a folder of packaged charts, or ``bundled``, the archives this repository
keeps in ``upstream/charts/`` (so a clone deploys with no chart repository reachable). The policy pack checks
that every release is pinned to an exact version from an allow-listed source, and a local archive by digest.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

# The project directory (where Pulumi.yaml is): local chart paths are written relative to it, as the Pulumi
# engine starts the kubernetes provider there and Helm resolves a chart path against the working directory.
PROJECT_DIR = Path(__file__).resolve().parents[2]
BUNDLED = "bundled"
BUNDLED_DIR = "upstream/charts"  # the packaged archives of every pinned chart (upstream/charts/README.md)
DIGEST_PREFIX = "chart sha256:"  # a local archive's digest, in the release description the policy reads


@dataclass(frozen=True)
class Chart:
    """A pinned Helm chart: its name, exact version and source, and the release it is installed as."""

    key: str  # stable id used in stack files and resource names
    chart: str  # chart name, or a full oci:// reference
    version: str  # exact chart version (no ranges)
    repository: str | None  # https Helm repository; None for OCI charts (the registry is in `chart`)
    namespace: str  # where the release is installed
    release: str  # Helm release name

    archive: str | None = None  # a packaged chart on disk, relative to the project directory (then no repository)

    @property
    def name(self) -> str:
        """The chart's own name (Chart.yaml ``name``): the last segment of an oci:// reference."""
        return self.chart.rsplit("/", 1)[-1]

    @property
    def source(self) -> str:
        """Where the chart comes from, for summaries and policy allow-lists: a Helm repository URL, an oci://
        registry path (the reference without its last segment), or the folder of a local archive."""
        if self.archive:
            return self.archive.rsplit("/", 1)[0]
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
# The Cluster Autoscaler release for each Kubernetes minor (upstream supports only the matching minor: the
# autoscaler's README "Releases"): the newest patch of each, by the kubernetes/autoscaler tags
# cluster-autoscaler-1.32.7 (2026-02-13), -1.33.6, -1.34.5 and -1.35.2 (2026-07-22); images
# registry.k8s.io/autoscaling/cluster-autoscaler:<tag>. The chart's default (v1.35.0) is only right on 1.35.
CLUSTER_AUTOSCALER_IMAGE_TAGS: dict[str, str] = {
    "1.32": "v1.32.7",
    "1.33": "v1.33.6",
    "1.34": "v1.34.5",
    "1.35": "v1.35.2",
}

# The image of the Kubeflow Trainer's ClusterTrainingRuntime torch-distributed, the platform's copy of the chart's
# runtime (charts/kubeflow-trainer/templates/runtimes/torch-distributed.yaml at 2.2.1; components/plan/operators.py).
TRAINER_TORCH_RUNTIME_IMAGE = "pytorch/pytorch:2.10.0-cuda12.8-cudnn9-runtime"

# The pre-puller's pause container (components/plan/images.py): kubeadm's pause for Kubernetes 1.35 (kubernetes v1.35.4
# cmd/kubeadm/app/constants/constants.go PauseVersion = "3.10.1"), the image JupyterHub's pre-puller also runs.
PAUSE_IMAGE = "registry.k8s.io/pause:3.10.1"

# Images the platform sets that are pinned by tag only, by repository path (no registry host) and tag, with why;
# tests/test_image_digests.py keeps this list exact (every other image the platform sets carries a digest). A digest
# must come from a source that can be cited: for registry.k8s.io images the image promoter's manifest
# (kubernetes/k8s.io registry.k8s.io/images/k8s-staging-autoscaling/images.yaml), whose stored copies end at
# cluster-autoscaler v1.33.1, or `crane digest` where the registry can be reached, which this project's machines
# cannot. To pin one, write the tag as "vX.Y.Z@sha256:<digest>" (the charts render "repository:tag").
IMAGES_WITHOUT_DIGEST: dict[str, str] = {
    **{
        f"autoscaling/cluster-autoscaler:{tag}": "no citable digest: the promoter manifest's copies end at v1.33.1"
        for tag in CLUSTER_AUTOSCALER_IMAGE_TAGS.values()
    },
    "eks/aws-efa-k8s-device-plugin:v0.5.20": "the chart's default tag (aws-efa-k8s-device-plugin v0.5.30): EKS's ECR "
    "registries publish no digest list, and none can be read from here",
    TRAINER_TORCH_RUNTIME_IMAGE: "the trainer chart's runtime image, as its template names it: Docker Hub's digest "
    "for the tag cannot be read from here",
    "library/python:3.13.9-alpine3.22": "the fleet manager's lost-worker reset: Docker Hub's digest for the tag "
    "cannot be read from here",
    "pause:3.10.1": "the pre-puller's pause container: no citable digest (the image promoter's manifest is not "
    "readable from here; kubeadm's constants name the tag only)",
}


def cluster_autoscaler_image_tag(kubernetes_version: str) -> str:
    """The autoscaler for a cluster of ``kubernetes_version`` ("1.34", or "1.34.2"): its minor's release; a minor
    outside the table gets the nearest one (the rules refuse that where the stack names its version)."""

    def minor(version: str) -> tuple[int, ...]:
        return tuple(int(x) for x in version.split(".")[:2])

    tags = {minor(v): tag for v, tag in CLUSTER_AUTOSCALER_IMAGE_TAGS.items()}
    wanted = minor(kubernetes_version)
    if wanted in tags:
        return tags[wanted]
    below = [m for m in sorted(tags) if m < wanted]
    return tags[below[-1] if below else min(tags)]


# The EFA Kubernetes device plugin (advertises vpc.amazonaws.com/efa), from AWS' official eks-charts repository
# (github.com/aws/eks-charts stable/aws-efa-k8s-device-plugin; Chart.yaml and values.yaml recorded in
# upstream/aws-efa-k8s-device-plugin/).
# The FSx for Lustre CSI driver, as the EKS add-on aws-fsx-csi-driver (components/plan/storage.py). Driver v1.9.0
# supports every Kubernetes version from 1.20 (kubernetes-sigs/aws-fsx-csi-driver@v1.9.0 docs/README.md, "Kubernetes
# Version Compatibility Matrix"), so no supported EKS version needs another driver; EKS publishes the add-on's builds
# per cluster version (aws eks describe-addon-versions --addon-name aws-fsx-csi-driver --kubernetes-version 1.34), and
# an add-on created without addonVersion gets the default build for the cluster's version. A build is pinned here
# per minor only once it has been read from that API (none yet: the offline tree cannot ask it).
FSX_CSI_DRIVER_ADDON = "aws-fsx-csi-driver"
FSX_CSI_DRIVER_VERSION = "v1.9.0"
FSX_CSI_DRIVER_MIN_KUBERNETES = "1.20"
FSX_CSI_DRIVER_ADDON_VERSIONS: dict[str, str] = {}  # Kubernetes minor -> EKS add-on build (e.g. v1.9.0-eksbuild.N)


def fsx_csi_driver_addon_version(kubernetes_version: str | None) -> str | None:
    """The aws-fsx-csi-driver add-on build for a cluster of ``kubernetes_version`` ("1.34"); None: EKS's default
    build for the cluster's version (no build pinned for that minor, or the version unknown)."""
    if kubernetes_version is None:
        return None
    return FSX_CSI_DRIVER_ADDON_VERSIONS.get(".".join(kubernetes_version.split(".")[:2]))


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
# Workload operators (issue 31): the versions Kueue 0.19.2 is built and tested against (its go.mod at v0.19.2:
# sigs.k8s.io/jobset v0.12.0, sigs.k8s.io/lws v0.9.0, github.com/ray-project/kuberay/ray-operator v1.6.2), so
# the API Kueue's integration reads is the one the operator serves. Each is an add-on (addons.jobset,
# addons.leaderWorkerSet, addons.kuberay); Kueue's integration for a kind is on only with its operator
# (components/plan/operators.py).
JOBSET = Chart(
    key="jobset",
    chart="oci://registry.k8s.io/jobset/charts/jobset",
    version="0.12.0",  # app v0.12.0 (hack/helm-chart-package.sh: chart version = tag without "v")
    repository=None,
    namespace="jobset-system",
    release="jobset",
)
LEADER_WORKER_SET = Chart(
    key="leaderWorkerSet",
    chart="oci://registry.k8s.io/lws/charts/lws",
    version="v0.9.0",  # hack/push-chart.sh: chart version = the release tag, "v" kept (as gpu-operator's)
    repository=None,
    namespace="lws-system",
    release="lws",
)
KUBERAY = Chart(
    key="kuberay",
    chart="kuberay-operator",
    version="1.6.2",
    repository="https://ray-project.github.io/kuberay-helm",
    namespace="kuberay-system",
    release="kuberay-operator",
)
# Kubeflow Trainer v2 (TrainJob): v2.2.1, the release Kueue 0.19.2's trainjob integration is built against (go.mod:
# github.com/kubeflow/trainer/v2 v2.2.1). Its chart bundles JobSet 0.11.0 and LeaderWorkerSet v0.8.0 as optional
# dependencies; the platform runs neither (jobset.install: false, the platform's own addons.jobset instead).
TRAINER = Chart(
    key="trainer",
    chart="oci://ghcr.io/kubeflow/charts/kubeflow-trainer",
    version="2.2.1",  # .github/workflows/publish-helm-charts.yaml: Chart.yaml's version at the tag
    repository=None,
    namespace="kubeflow-system",  # the namespace upstream's manifests and docs install it in
    release="kubeflow-trainer",
)
OPERATOR_CHARTS = (JOBSET, LEADER_WORKER_SET, KUBERAY, TRAINER)

# Spegel, the in-cluster peer-to-peer image mirror (images.mirror: peer; components/plan/images.py): spegel-org/spegel
# v0.7.4 (2026-07-15). Its release workflow (.github/workflows/release.yaml at the tag) pushes the chart to
# oci://ghcr.io/spegel-org/helm-charts as version 0.7.4 (the tag without its "v", appVersion v0.7.4) and stamps the
# image's digest into values.yaml's image.digest. upstream/ holds no copy of it yet (NOT_BUNDLED).
SPEGEL = Chart(
    key="spegel",
    chart="oci://ghcr.io/spegel-org/helm-charts/spegel",
    version="0.7.4",
    repository=None,
    namespace="spegel",
    release="spegel",
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
        *OPERATOR_CHARTS,
        SPEGEL,
    )
}
# Pinned charts that upstream/charts/ (a copy of the shared reference snapshot, edited only by
# `make refresh-upstream`) does not hold yet, with why: `chartSource: bundled` cannot serve them (the loader says
# which archive is missing); their values cite the chart's values.yaml at the pinned tag where they are set.
NOT_BUNDLED: dict[str, str] = {
    "spegel": "added with issue 39 (images.mirror: peer); the shared snapshot has no Spegel chart yet: add "
    "spegel-org/spegel v0.7.4 charts/spegel to it and `make refresh-upstream`",
}

# The ports on a chart's own pods that the Kubernetes API server dials: the target ports of the Services its
# admission webhooks, CRD conversion webhooks and aggregated APIs name, at the pinned versions (each read from the
# archive in upstream/charts/, tests/test_gke_control_plane_ports.py). A private GKE cluster's control plane reaches
# its nodes only on 443 and 10250, so a created cluster opens the others (components/plan/gcp/gke.py). Charts
# with none (the GPU Operator, the DCGM exporter, KubeRay, Karpenter, the Cluster Autoscaler, the EFA plugin) are
# left out.
CONTROL_PLANE_PORTS: dict[str, dict[int, str]] = {
    # templates/manager/manager.yaml containerPort webhook-server 9443 (values.yaml managerConfig webhook.port);
    # templates/visibility/service.yaml targetPort 8082, the visibility APIService (always installed)
    KUEUE.key: {9443: "admission and conversion webhooks", 8082: "visibility API (APIService)"},
    # values.yaml basic.admission_port 8443 (templates/admission.yaml --port and the Service's targetPort)
    VOLCANO.key: {8443: "admission webhooks"},
    # templates/webhook/service.yaml targetPort webhook -> templates/controller/deployment.yaml containerPort 9443
    JOBSET.key: {9443: "admission webhooks"},
    # templates/webhook/service.yaml targetPort 9443 (values.yaml service.port)
    LEADER_WORKER_SET.key: {9443: "admission webhooks"},
    # templates/manager/service.yaml targetPort webhook -> templates/manager/deployment.yaml containerPort 9443
    TRAINER.key: {9443: "admission webhooks"},
    # values.yaml prometheusOperator.tls.internalPort 10250: the operator serves its admission webhooks itself
    KUBE_PROMETHEUS_STACK.key: {10250: "prometheus-operator admission webhooks"},
}

# Sources a release may come from; the policy pack's default allow-list: the official ones and the bundled archives.
ALLOWED_SOURCES: tuple[str, ...] = tuple(sorted({c.source for c in CHARTS.values()} | {BUNDLED_DIR}))


# GPUDirect on a created GKE cluster (issue 40.4): the NCCL plugin installer of each GPUDirect stack and, for TCPX and
# TCPXO, the NRI device injector, as cluster-toolkit v1.95.0 installs them with their node pools
# (modules/compute/gke-node-pool/gpu_direct.tf gpu_direct_manifests: container-engine-accelerators at 204a57cb for
# a3-highgpu-8g, a32cd515 for a3-megagpu-8g; examples/gke-a3-ultragpu: the gIB installer v1.1.0). The platform
# renders their DaemonSets (components/plan/gcp/gpudirect.py) from the files at these commits.
CONTAINER_ENGINE_ACCELERATORS = "https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators"
GPUDIRECT_INSTALLERS: dict[str, dict[str, str]] = {
    "GPUDirect-TCPX": {
        "source": f"{CONTAINER_ENGINE_ACCELERATORS}/204a57cb807ec5f440811607cead422e3c65d987/"
        "gpudirect-tcpx/nccl-tcpx-installer.yaml",
        "image": "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/nccl-plugin-gpudirecttcpx-dev:v3.1.9",
    },
    "GPUDirect-TCPXO": {
        "source": f"{CONTAINER_ENGINE_ACCELERATORS}/a32cd5152c6ac430ed0651199484853baa14f2d0/"
        "gpudirect-tcpxo/nccl-tcpxo-installer.yaml",
        "image": "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.15",
        # the file's pre-installation step names "ubuntu" (whatever latest is); the same image held to a release
        "pre_image": "docker.io/library/ubuntu:24.04",
    },
    "GPUDirect-RDMA": {
        "source": f"{CONTAINER_ENGINE_ACCELERATORS}/209d1af05b157236f9b221dca5e1cae27320accd/"
        "gpudirect-rdma/nccl-rdma-installer.yaml",
        "image": "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.0",
    },
}
NRI_DEVICE_INJECTOR = {
    "source": f"{CONTAINER_ENGINE_ACCELERATORS}/204a57cb807ec5f440811607cead422e3c65d987/"
    "nri_device_injector/nri-device-injector.yaml",
    "image": "gcr.io/gke-release/nri-device-injector@sha256:"
    "6e79483d52abdc28454bf186320b10a56b0f117a10e8d65d5c74dbb821a76970",
}
IMAGES_WITHOUT_DIGEST.update(
    {
        **{
            i["image"].split("/", 1)[1]: "a GPUDirect NCCL plugin installer as container-engine-accelerators names it "
            "(by tag); Artifact Registry's digest for the tag cannot be read from here"
            for i in GPUDIRECT_INSTALLERS.values()
        },
        "library/ubuntu:24.04": "the TCPXO installer's pre-installation image (upstream: untagged ubuntu), held to a "
        "release tag; Docker Hub's digest for it cannot be read from here",
    }
)
GKE_PAUSE_IMAGE = "gke.gcr.io/pause:3.8@sha256:880e63f94b145e46f1b1082bb71b85e21f16b99b180b9996407d61240ceb9830"

# kubectl from the official Kubernetes registry, for the webhook readiness probes (components/render/webhooks.py):
# shell-free, entrypoint kubectl; one minor of skew either side of the API server is supported. Pinned by the
# digest of its multi-arch index as well as the tag, so a re-pushed tag cannot change what runs (the digest that
# independent public Dockerfiles pin for this tag, consistently; `crane digest registry.k8s.io/kubectl:v1.34.1`
# where the registry can be reached). A mirror (imageRegistry) keeps digests: crane copy / skopeo sync do.
KUBECTL_IMAGE = (
    "registry.k8s.io/kubectl:v1.34.1@sha256:59bafa07ff3a6d4b417e7633ddb9d79a9606ca98bf64bac080b3e65748669250"
)

# The fleet manager's lost-worker reset (components/plan/fleet_reset.py runs components/data/reset_lost_jobs.py in
# it): the Docker Official Image of Python (docker-library/official-images library/python, tag 3.13.9-alpine3.22).
# The program needs the standard library only (HTTPS to the API server with the pod's token). Not kubectl's
# image: registry.k8s.io/kubectl has no shell and no interpreter (kubernetes build/common.sh: KUBECTL_BASE_IMAGE
# defaults to the distroless go-runner; build/server-image/kubectl/Dockerfile: FROM ${BASEIMAGE}, ENTRYPOINT
# /bin/kubectl; kyverno/kyverno#13899 met the same), so a loop with a condition cannot run in it.
FLEET_RESET_IMAGE = "docker.io/library/python:3.13.9-alpine3.22"

# API versions of the custom resources the platform writes (pinned with the charts above).
KUEUE_API = "kueue.x-k8s.io/v1beta2"
VOLCANO_QUEUE_API = "scheduling.volcano.sh/v1beta1"
KARPENTER_NODEPOOL_API = "karpenter.sh/v1"
KARPENTER_NODECLASS_API = "karpenter.k8s.aws/v1"
KARPENTER_NODEOVERLAY_API = "karpenter.sh/v1alpha1"  # alpha in Karpenter 1.14 (feature gate nodeOverlay)
MONITORING_API = "monitoring.coreos.com/v1"
# ProvisioningRequest CRD the Cluster Autoscaler serves (components/render/aws/data/, from cluster-autoscaler 1.35.0).
PROVISIONING_REQUEST_API = "autoscaling.x-k8s.io/v1"
JOBSET_API = "jobset.x-k8s.io/v1alpha2"
LEADER_WORKER_SET_API = "leaderworkerset.x-k8s.io/v1"
RAY_API = "ray.io/v1"


def source_kind(source: str) -> str:
    """``bundled``, ``oci`` (a registry path), ``repository`` (a Helm repository URL) or ``path`` (a folder
    of packaged charts, relative to the project directory or absolute)."""
    if source == BUNDLED:
        return "bundled"
    if source.startswith("oci://"):
        return "oci"
    if source.startswith(("https://", "http://")):
        return "repository"
    return "path"


def archive_path(chart: Chart, version: str, source: str) -> str:
    """Where a local source keeps this chart's packaged archive: ``<folder>/<name>-<version>.tgz`` (the file
    name ``helm package`` writes)."""
    folder = BUNDLED_DIR if source == BUNDLED else source.rstrip("/")
    return f"{folder}/{chart.name}-{version}.tgz"


def with_source(chart: Chart, source: str | None) -> Chart:
    """The chart taken from ``source`` instead of its official one (None: the official one)."""
    if source is None:
        return chart
    kind = source_kind(source)
    if kind == "oci":
        return replace(chart, chart=f"{source.rstrip('/')}/{chart.name}", repository=None)
    if kind == "repository":
        return replace(chart, chart=chart.name, repository=source.rstrip("/"))
    path = archive_path(chart, chart.version, source)
    return replace(chart, chart=path, repository=None, archive=path)


def resolve(chart: Chart, overrides: dict | None = None, default_source: str | None = None) -> Chart:
    """The chart as a stack takes it: its version override (``gpu-platform:charts.<key>.version``) and its
    source (``charts.<key>.source``, else ``default_source``, the stack's ``chartSource``) applied.

    ``overrides`` is ``spec.charts``; an override without a field keeps the pinned value.
    """
    override = (overrides or {}).get(chart.key)
    version = getattr(override, "version", None) or chart.version
    source = getattr(override, "source", None) or default_source
    if version == chart.version and source is None:
        return chart
    return with_source(replace(chart, version=version), source)


def for_spec(chart: Chart, spec: Any) -> Chart:
    """``resolve`` with everything a stack spec says about charts."""
    return resolve(chart, spec.charts, spec.chart_source)


@cache
def archive_digest(path: str) -> str | None:
    """sha256 of a local chart archive (relative to the project directory), None when it does not exist."""
    p = Path(path) if Path(path).is_absolute() else PROJECT_DIR / path
    try:
        return hashlib.sha256(p.read_bytes()).hexdigest()
    except OSError:
        return None


def release_args(c: Chart) -> dict:
    """Keyword arguments for ``helm.v3.Release`` naming a chart as a stack takes it (``for_spec``): its pinned
    version and source. A local archive is named by its path; its sha256 goes in the release description, where
    the policy pack checks it against the digests it allows (Helm itself ignores ``version`` for a chart path:
    helm.sh/helm/v3 pkg/action/install.go ``LocateChart`` returns an existing path as it is).
    """
    args: dict = {
        "name": c.release,
        "chart": c.chart,
        "version": c.version,
        "namespace": c.namespace,
    }
    if c.repository:
        args["repository_opts"] = {"repo": c.repository}
    if c.archive:
        args["description"] = f"{DIGEST_PREFIX}{archive_digest(c.archive) or 'missing'}"
    return args


def image(ref: str, registry: str | None) -> str:
    """An image the platform sets, from ``registry`` (``gpu-platform:imageRegistry``) when the stack names one.

    The mirror keeps the source registry as the first path segment (``registry.k8s.io/kubectl:v1.34.1`` ->
    ``<registry>/registry.k8s.io/kubectl:v1.34.1``), the layout ``crane copy`` / ``skopeo sync`` and pull-through
    caches with one project per upstream use, so images of several registries cannot collide."""
    return ref if not registry else f"{registry.rstrip('/')}/{ref}"


def bundled_digests() -> list[str]:
    """sha256 of each bundled archive (upstream/charts/): the local archives the policy pack accepts by default."""
    found = (archive_digest(archive_path(c, c.version, BUNDLED)) for c in CHARTS.values())
    return sorted(d for d in found if d is not None)


# ------------------------------------------------------------------------------- EKS add-ons (issue 30)
# The EKS add-ons a created cluster gets (components/plan/aws/cluster_create.py), per Kubernetes minor, as
# `aws eks create-addon --addon-version` takes them; read 2026-11-26:
# - vpc-cni, coredns, kube-proxy: the EKS user guide's per-version tables (the newest copies found:
#   docs.aws.amazon.com/ja_jp/eks/latest/userguide/managing-kube-proxy.md "1.35 | v1.35.3-eksbuild.13", "1.34 |
#   v1.34.6-eksbuild.13"; docs.amazonaws.cn/en_us/eks/latest/userguide/managing-coredns.md "1.35 |
#   v1.14.2-eksbuild.4", "1.34 | v1.13.2-eksbuild.7"; docs.amazonaws.cn/eks/latest/userguide/managing-vpc-cni.md
#   v1.21.1-eksbuild.7 for every minor).
# - eks-pod-identity-agent and aws-ebs-csi-driver: the guide has no table; AWS's own awslabs/cdk-eks-blueprints
#   pins them per minor (lib/addons/eks-pod-identity-agent/index.ts and lib/addons/ebs-csi-driver/index.ts at
#   05d3dbd, 2026-07-01: pod identity "v1.3.10-eksbuild.2" for 1.33..1.35; EBS CSI "v1.56.0-eksbuild.1" for 1.34,
#   "v1.57.1-eksbuild.1" for 1.35).
# - eks-node-monitoring-agent: no table either, and one build line for every minor (the add-on carries the chart's
#   image tag, charts/eks-node-monitoring-agent/values.yaml nodeAgent.image.tag: v1.6.6-eksbuild.1 at v1.6.6,
#   2026-06-10; v1.7.0-eksbuild.1 at v1.7.0, 2026-08-04). Pinned per minor all the same, each from what was seen
#   running or offered on that minor, never carried over from another: 1.35 from a 1.35 cluster's add-on table
#   (Combine-Pathfinder-Palisade docs "EKS Add-ons": kube-proxy v1.35.3-eksbuild.2 beside eks-node-monitoring-agent
#   v1.6.6-eksbuild.1); 1.34 and 1.33 from the build the 1.35 and 1.36 pins share, released (2026-06-10) while
#   both minors were in standard support (no AWS page read here lists the agent's builds per minor: replace each from
#   `aws eks describe-addon-versions --addon-name eks-node-monitoring-agent --kubernetes-version <minor>`).
#   v1.7.0 is not pinned: its dcgm-server runs nv-hostengine from the agent image (CHANGELOG v1.7.0), unseen on EKS
#   here. The configurationValues sent (components/plan/aws/node_health.py) must validate against the pinned
#   build's configuration schema (tests/fixtures/eks-node-monitoring-agent/, per tag; tests/test_node_health_addon.py).
# The minors: those in EKS standard support on the date read, and 1.33, which left it on 2026-07-29 (the EKS user
# guide's release calendar, kubernetes-versions.html). 1.36 is released on EKS, but no AWS page read here names its
# coredns, vpc-cni, pod identity or EBS CSI build (a third-party 1.36 pin names the node monitoring agent's
# v1.6.6-eksbuild.1 as that minor's default); add 1.36 once
# `aws eks describe-addon-versions --kubernetes-version 1.36` can be read. A minor missing here is refused before
# deploy.
EKS_ADDON_VERSIONS: dict[str, dict[str, str | None]] = {
    # 1.33 is in extended support (the summary warns, the cost counts $0.60 an hour): kept so that a cluster
    # created on it keeps deploying until it is upgraded. coredns: the guide's 1.33 row as the zh_cn copy of
    # managing-coredns.md gives it (v1.13.2-eksbuild.4); kube-proxy: the ja_jp copy's "1.33 | v1.33.10-eksbuild.13".
    "1.33": {
        "vpc-cni": "v1.21.1-eksbuild.7",
        "coredns": "v1.13.2-eksbuild.4",
        "kube-proxy": "v1.33.10-eksbuild.13",
        "eks-pod-identity-agent": "v1.3.10-eksbuild.2",
        "aws-ebs-csi-driver": "v1.56.0-eksbuild.1",
        "eks-node-monitoring-agent": "v1.6.6-eksbuild.1",
    },
    "1.34": {
        "vpc-cni": "v1.21.1-eksbuild.7",
        "coredns": "v1.13.2-eksbuild.7",
        "kube-proxy": "v1.34.6-eksbuild.13",
        "eks-pod-identity-agent": "v1.3.10-eksbuild.2",
        "aws-ebs-csi-driver": "v1.56.0-eksbuild.1",
        "eks-node-monitoring-agent": "v1.6.6-eksbuild.1",
    },
    "1.35": {
        "vpc-cni": "v1.21.1-eksbuild.7",
        "coredns": "v1.14.2-eksbuild.4",
        "kube-proxy": "v1.35.3-eksbuild.13",
        "eks-pod-identity-agent": "v1.3.10-eksbuild.2",
        "aws-ebs-csi-driver": "v1.57.1-eksbuild.1",
        "eks-node-monitoring-agent": "v1.6.6-eksbuild.1",
    },
}
# End of EKS standard support per minor (kubernetes-versions.html release calendar; 1.35 from endoflife.date's
# amazon-eks page, the AWS copies read stopping at 1.34): after it EKS bills the control plane as extended support.
EKS_STANDARD_SUPPORT_ENDS: dict[str, str] = {"1.33": "2026-07-29", "1.34": "2026-12-02", "1.35": "2027-03-27"}
EKS_TABLES_READ = "2026-11-26"  # the date the add-on and support tables above were read


def eks_extended_support(kubernetes_version: str | None) -> bool:
    """The minor had left EKS standard support when the tables were read (a fixed date: the answer does not
    change from day to day)."""
    ends = EKS_STANDARD_SUPPORT_ENDS.get(kubernetes_version or "")
    return ends is not None and ends <= EKS_TABLES_READ
