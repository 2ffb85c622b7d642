"""Every image block of every chart the platform installs (``versions.CHARTS``), with the chart's defaults: where
the platform sets each block's registry part so every image follows the stack's mirror (``components/plan/mirror.py``,
issue 39.2). Data only; tests/test_image_registry.py checks it against each chart's values.yaml."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ChartImage:
    """An image block of a chart's values: where it is, and the registry its chart pulls it from by default."""

    path: str  # dotted path of the block in the chart's values ("controllerManager.manager.image")
    repository: str | None  # the default repository: host/path, or the path alone where ``registry`` is its own key
    registry: str | None = None  # the default registry host, for charts that keep it in a key of its own
    registry_key: str = "registry"  # that key's name (Volcano: basic.image_registry)
    names: tuple[str, ...] = ()  # Volcano: the repositories its registry key serves (basic.*_image_name)


def _gpu_operator_images() -> tuple[ChartImage, ...]:
    # gpu-operator v26.7.0 values.yaml: each operand's image is <repository>/<image>:<version>; vgpuManager's
    # repository is empty (the user's own vGPU driver image, never used here). node-feature-discovery 0.19.0
    # (its sub-chart, on by default) values.yaml image.repository.
    nvidia = {
        "validator": "nvcr.io/nvidia",
        "operator": "nvcr.io/nvidia",
        "driver": "nvcr.io/nvidia",
        "driver.manager": "nvcr.io/nvidia/cloud-native",
        "toolkit": "nvcr.io/nvidia/k8s",
        "devicePlugin": "nvcr.io/nvidia",
        "dcgm": "nvcr.io/nvidia/cloud-native",
        "dcgmExporter": "nvcr.io/nvidia/k8s",
        "gfd": "nvcr.io/nvidia",
        "migManager": "nvcr.io/nvidia/cloud-native",
        "nodeStatusExporter": "nvcr.io/nvidia",
        "gds": "nvcr.io/nvidia/cloud-native",
        "gdrcopy": "nvcr.io/nvidia/cloud-native",
        "vgpuManager.driverManager": "nvcr.io/nvidia/cloud-native",
        "vgpuDeviceManager": "nvcr.io/nvidia/cloud-native",
        "vfioManager": "nvcr.io/nvidia/cloud-native",
        "vfioManager.driverManager": "nvcr.io/nvidia/cloud-native",
        "sandboxDevicePlugin": "nvcr.io/nvidia",
        "kataSandboxDevicePlugin": "nvcr.io/nvidia/cloud-native",
        "ccManager": "nvcr.io/nvidia/cloud-native",
        "draDriver": "nvcr.io/nvidia",
    }
    return (
        *(ChartImage(path, repo) for path, repo in nvidia.items()),
        ChartImage("node-feature-discovery.image", "registry.k8s.io/nfd/node-feature-discovery"),
    )


def _registry_images(prefix: str, images: dict[str, tuple[str, str]]) -> tuple[ChartImage, ...]:
    return tuple(ChartImage(f"{prefix}{path}", repo, registry) for path, (registry, repo) in images.items())


# Every image block of every chart the platform installs, with the chart's defaults (each chart's values.yaml in
# upstream/charts/<chart>-<version>.tgz; tests/test_image_registry.py reads them from there and checks this table
# against them): with a mirror (imageRegistry, or images.mirror pull-through) the platform sets each block's
# registry part, so an air-gapped cluster pulls nothing from the internet (components/plan/images.py). Blocks of
# components the platform leaves off are moved too: a later toggle cannot reach the internet either.
CHART_IMAGES: dict[str, tuple[ChartImage, ...]] = {
    "gpuOperator": _gpu_operator_images(),
    "dcgmExporter": (ChartImage("image", "nvcr.io/nvidia/k8s/dcgm-exporter"),),
    "kueue": (
        ChartImage("controllerManager.manager.image", "registry.k8s.io/kueue/kueue"),
        ChartImage("kueueViz.backend.image", "registry.k8s.io/kueue/kueueviz-backend"),
        ChartImage("kueueViz.frontend.image", "registry.k8s.io/kueue/kueueviz-frontend"),
    ),
    # volcano 1.15.1 values.yaml: every image is <basic.image_registry>/<basic.*_image_name>:<tag>
    "volcano": (
        ChartImage(
            "basic",
            None,
            "docker.io",
            "image_registry",
            tuple(
                f"volcanosh/vc-{n}"
                for n in ("controller-manager", "scheduler", "agent-scheduler", "webhook-manager", "agent")
            ),
        ),
    ),
    "karpenter": (ChartImage("controller.image", "public.ecr.aws/karpenter/controller"),),
    "karpenterCrd": (),
    "clusterAutoscaler": (ChartImage("image", "registry.k8s.io/autoscaling/cluster-autoscaler"),),
    "efaDevicePlugin": (
        ChartImage("image", "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin"),
    ),
    # kube-prometheus-stack 88.5.3 and its enabled sub-charts (grafana 12.11.1, kube-state-metrics 8.4.0,
    # prometheus-node-exporter 4.56.1): <registry>/<repository>:<tag>, global.imageRegistry left empty
    "kubePrometheusStack": (
        *_registry_images(
            "",
            {
                "crds.upgradeJob.image.busybox": ("docker.io", "busybox"),
                "crds.upgradeJob.image.kubectl": ("registry.k8s.io", "kubectl"),
                "alertmanager.alertmanagerSpec.image": ("quay.io", "prometheus/alertmanager"),
                "prometheusOperator.admissionWebhooks.deployment.image": (
                    "quay.io",
                    "prometheus-operator/admission-webhook",
                ),
                "prometheusOperator.admissionWebhooks.patch.image": ("ghcr.io", "jkroepke/kube-webhook-certgen"),
                "prometheusOperator.image": ("quay.io", "prometheus-operator/prometheus-operator"),
                "prometheusOperator.prometheusConfigReloader.image": (
                    "quay.io",
                    "prometheus-operator/prometheus-config-reloader",
                ),
                "prometheusOperator.thanosImage": ("quay.io", "thanos/thanos"),
                "prometheus.prometheusSpec.image": ("quay.io", "prometheus/prometheus"),
                "thanosRuler.thanosRulerSpec.image": ("quay.io", "thanos/thanos"),
            },
        ),
        *_registry_images(
            "grafana.",
            {
                "image": ("docker.io", "grafana/grafana"),
                "testFramework.image": ("docker.io", "bats/bats"),
                "downloadDashboardsImage": ("docker.io", "curlimages/curl"),
                "initChownData.image": ("docker.io", "library/busybox"),
                "sidecar.image": ("quay.io", "kiwigrid/k8s-sidecar"),
                "imageRenderer.image": ("docker.io", "grafana/grafana-image-renderer"),
            },
        ),
        *_registry_images(
            "kube-state-metrics.",
            {
                "image": ("registry.k8s.io", "kube-state-metrics/kube-state-metrics"),
                "kubeRBACProxy.image": ("quay.io", "brancz/kube-rbac-proxy"),
            },
        ),
        *_registry_images(
            "prometheus-node-exporter.",
            {
                "image": ("quay.io", "prometheus/node-exporter"),
                "kubeRBACProxy.image": ("quay.io", "brancz/kube-rbac-proxy"),
                "permissionInitContainer.image": ("quay.io", "prometheus/busybox"),
            },
        ),
    ),
    "jobset": (ChartImage("image", "registry.k8s.io/jobset/jobset"),),
    "leaderWorkerSet": (ChartImage("image.manager", "registry.k8s.io/lws/lws"),),
    "kuberay": (ChartImage("image", "quay.io/kuberay/operator"),),
    # kubeflow-trainer 2.2.1: <registry>/<repository>:<tag>; its jobset and lws sub-charts stay off (plan/operators.py)
    # spegel v0.7.4 values.yaml: image.repository (tag the chart's appVersion, digest stamped at release)
    "spegel": (ChartImage("image", "ghcr.io/spegel-org/spegel"),),
    "trainer": _registry_images(
        "",
        {
            "image": ("ghcr.io", "kubeflow/trainer/trainer-controller-manager"),
            "dataCache.cacheImage": ("ghcr.io", "kubeflow/trainer/data-cache"),
            "runtimes.deepspeedDistributed.image": ("ghcr.io", "kubeflow/trainer/deepspeed-runtime"),
            "runtimes.mlxDistributed.image": ("ghcr.io", "kubeflow/trainer/mlx-runtime"),
            "runtimes.xgboostDistributed.image": ("ghcr.io", "kubeflow/trainer/xgboost-runtime"),
            "runtimes.torchtuneDistributed.image": ("ghcr.io", "kubeflow/trainer/torchtune-trainer"),
        },
    ),
}
