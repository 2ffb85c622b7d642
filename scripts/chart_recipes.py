"""The recipes ``scripts/package_charts.py`` packages: one per chart ``components/data/versions.py`` pins (``RECIPES``).

Each names the upstream repository, the release tag and the commit it points at, the chart folder, and the changes
the upstream release job makes before or during ``helm package`` (package_charts.py's module docstring, step 3);
dependencies fetched from a chart repository at release time are recipes of their own (``Recipe.deps``). The texts
(``stamping``, ``in_tree``, ``notes``, ``reference``) are what ``upstream/charts/README.md`` shows. Data only.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Source:
    """Where a chart comes from: the upstream repository, tag, commit and chart folder."""

    repo: str  # owner/name on GitHub
    ref: str  # the release tag (or, without one, the commit's description)
    commit: str  # the commit the tag points at: what is packaged
    path: str  # the chart folder in the repository
    date: str  # commit date, for the README


Edit = tuple[str, tuple[str, ...], str]  # (file, YAML key path, new scalar value)


@dataclass(frozen=True)
class Recipe:
    """How one pinned chart is packaged: its source and the release job's changes."""

    name: str  # Chart.yaml name
    version: str  # released chart version (the archive's)
    source: Source
    licence: str = "Apache-2.0"
    # release stamping (see package_charts.py's module docstring, step 3)
    chart_version: str | None = None  # helm package --version
    app_version: str | None = None  # helm package --app-version
    edits: tuple[Edit, ...] = ()  # yq-style "<path> = <value>" edits, in order
    seds: tuple[tuple[str, str, str], ...] = ()  # (file, old text, new text): sed s|old|new|g
    stamping: str = "none: the chart in git is the released chart"  # for the README, naming the upstream file
    deps: tuple[Recipe, ...] = ()  # dependencies fetched from a chart repository at release time
    in_tree: tuple[str, ...] = ()  # sub-charts committed under charts/, for the README
    notes: str = ""
    # how the archive's Chart.yaml / values.yaml compare with upstream/<name>/ (tests/test_chart_archives.py checks)
    reference: str = "`Chart.yaml` and `values.yaml` byte-identical to `upstream/{name}/`"

    @property
    def archive(self) -> str:
        return f"{self.name}-{self.version}.tgz"


KUEUE_TAG = "v0.19.2"
KARPENTER_DIGEST = "sha256:723130949e4cab989461ff07d1be4cd781d63515432494641b33c235f300ae23"

GPU_OPERATOR = Recipe(
    name="gpu-operator",
    version="v26.7.0",
    source=Source(
        "NVIDIA/gpu-operator",
        "v26.7.0",
        "10ee5b3638b89e11e949412aafa5ba99279c3721",
        "deployments/gpu-operator",
        "2026-08-20",
    ),
    # git carries placeholders (version v1.0.0-devel, appVersion "main-latest"); the release packages the chart with
    # `helm package --version <tag> --app-version <tag>` (.github/workflows/publish-helm-oci-chart.yaml does the same
    # for its dev builds; upstream/README.md, Versions). operator.version is unset, so the image tag is appVersion.
    chart_version="v26.7.0",
    app_version="v26.7.0",
    stamping='Chart.yaml `version: v1.0.0-devel` -> `v26.7.0`, `appVersion: "main-latest"` -> `"v26.7.0"` '
    "(`helm package --version v26.7.0 --app-version v26.7.0`, as `.github/workflows/publish-helm-oci-chart.yaml`)",
    reference="`values.yaml` byte-identical to `upstream/gpu-operator/`; `Chart.yaml` differs by the two stamped "
    "lines only; `charts/node-feature-discovery/` `Chart.yaml`, `values.yaml`, `values.schema.json` byte-identical "
    "to `upstream/gpu-operator/node-feature-discovery/`",
    in_tree=(
        "node-feature-discovery 0.19.0 (appVersion v0.19.0): committed as `deployments/gpu-operator/charts/"
        "node-feature-discovery/` (Chart.lock: `oci://registry.k8s.io/nfd/charts` 0.19.0, kubernetes-sigs/"
        "node-feature-discovery v0.19.0), packaged as committed. It is that release chart unpacked: every file is "
        "byte-identical to node-feature-discovery `v0.19.0` (`45d276ed9d3f`, 2026-07-10) "
        "`deployment/helm/node-feature-discovery/` but `Chart.yaml` (Helm-serialised, version 0.19.0 stamped), and "
        "the four `*.gotmpl` files its `.helmignore` keeps out are absent",
    ),
)
DCGM_EXPORTER = Recipe(
    name="dcgm-exporter",
    version="4.8.2",
    source=Source(
        "NVIDIA/dcgm-exporter", "4.5.3-4.8.2", "691c92762eb551313c825f6efe4ceeee20982801", "deployment", "2026-05-06"
    ),
)
KUEUE = Recipe(
    name="kueue",
    version="0.19.2",
    source=Source(
        "kubernetes-sigs/kueue", KUEUE_TAG, "8eab68778fc1b52affe165fdf5af29d1e9b4f3cb", "charts/kueue", "2026-08-20"
    ),
    # hack/helm-chart-package.sh (at the tag): a tag matching ^v[0-9]+(\.[0-9]+){1,2}$ sets IMAGE_REGISTRY to
    # registry.k8s.io/kueue, then yq sets the controller and KueueViz images to ${IMAGE_REGISTRY}/<image>:${GIT_TAG}
    # with pullPolicy IfNotPresent, and runs `helm package --version 0.19.2 --app-version v0.19.2` (Chart.yaml
    # already says so). The kueue-populator and kueue-priority-booster charts it also packages are not used here.
    chart_version="0.19.2",
    app_version=KUEUE_TAG,
    edits=(
        ("values.yaml", ("controllerManager", "manager", "image", "repository"), "registry.k8s.io/kueue/kueue"),
        ("values.yaml", ("controllerManager", "manager", "image", "tag"), KUEUE_TAG),
        ("values.yaml", ("controllerManager", "manager", "image", "pullPolicy"), "IfNotPresent"),
        ("values.yaml", ("kueueViz", "backend", "image", "repository"), "registry.k8s.io/kueue/kueueviz-backend"),
        ("values.yaml", ("kueueViz", "backend", "image", "tag"), KUEUE_TAG),
        ("values.yaml", ("kueueViz", "backend", "image", "pullPolicy"), "IfNotPresent"),
        ("values.yaml", ("kueueViz", "frontend", "image", "repository"), "registry.k8s.io/kueue/kueueviz-frontend"),
        ("values.yaml", ("kueueViz", "frontend", "image", "tag"), KUEUE_TAG),
        ("values.yaml", ("kueueViz", "frontend", "image", "pullPolicy"), "IfNotPresent"),
    ),
    reference="`Chart.yaml` byte-identical to `upstream/kueue/`; `values.yaml` differs by the 9 stamped lines only "
    "(upstream/ has the chart as in git, with the staging images)",
    stamping="values.yaml: `controllerManager.manager.image`, `kueueViz.backend.image`, `kueueViz.frontend.image` "
    "-> `registry.k8s.io/kueue/<image>`, tag `v0.19.2`, pullPolicy `IfNotPresent` (9 values; yq in "
    "`hack/helm-chart-package.sh`); `helm package --version 0.19.2 --app-version v0.19.2` (Chart.yaml unchanged)",
)
VOLCANO = Recipe(
    name="volcano",
    version="1.15.1",
    source=Source(
        "volcano-sh/volcano",
        "v1.15.1",
        "0a56ed331897f5455916a44d3075671376d731d6",
        "installer/helm/chart/volcano",
        "2026-07-30",
    ),
    # hack/generate-charts.sh (run by .github/workflows/release_chart.yaml with TAG=1.15.1): sed
    # `image_tag_version: "latest"` -> "v1.15.1" in every values.yaml, then `helm package --version 1.15.1
    # --app-version 1.15.1`. At this tag both are already in git, so the stamping changes nothing.
    chart_version="1.15.1",
    app_version="1.15.1",
    seds=(("values.yaml", 'image_tag_version: "latest"', 'image_tag_version: "v1.15.1"'),),
    stamping='`hack/generate-charts.sh`: sed `image_tag_version: "latest"` -> `"v1.15.1"` and `helm package '
    "--version 1.15.1 --app-version 1.15.1`; both already so in git at the tag (no byte changes)",
    in_tree=(
        "jobflow 1.0.0 (appVersion 0.1): committed as `installer/helm/chart/volcano/charts/jobflow/` "
        "(Chart.yaml dependency `file://./charts/jobflow`)",
    ),
    notes="`crd/v1` and `charts/jobflow/crd/v1` are symlinks to `bases` in git; Helm follows them, so the "
    "archive holds the CRDs under both names, as the released chart does.",
)
KARPENTER_SOURCE = Source(
    "aws/karpenter-provider-aws",
    "v1.14.1",
    "bde00654cd316fddb3dccfba3f5ac07039865429",
    "charts/karpenter",
    "2026-08-20",
)
KARPENTER_STAMPING = (
    "`hack/release/common.sh` (`build`, `publishHelmChart`): yq sets Chart.yaml `version`/`appVersion` "
    "`1.13.0` -> `1.14.1`"
)
KARPENTER = Recipe(
    name="karpenter",
    version="1.14.1",
    source=KARPENTER_SOURCE,
    # hack/release/common.sh at the tag: `build` publishes the controller image with ko, then yq sets
    # .controller.image.repository/.tag/.digest in values.yaml; `publishHelmChart` sets .appVersion and .version in
    # Chart.yaml with yq and runs `helm package`. The tag still says 1.13.0 (the release job does not commit); the
    # published digest is the one upstream committed on main afterwards (1d927085dd81, "docs: update for patch
    # release v1.14.1", charts/karpenter/values.yaml; upstream/karpenter/values.yaml is that file).
    chart_version="1.14.1",
    app_version="1.14.1",
    edits=(
        ("Chart.yaml", ("appVersion",), "1.14.1"),
        ("Chart.yaml", ("version",), "1.14.1"),
        ("values.yaml", ("controller", "image", "repository"), "public.ecr.aws/karpenter/controller"),
        ("values.yaml", ("controller", "image", "tag"), "1.14.1"),
        ("values.yaml", ("controller", "image", "digest"), KARPENTER_DIGEST),
    ),
    stamping=KARPENTER_STAMPING + "; values.yaml `controller.image.tag` `1.13.0` -> `1.14.1`, "
    "`controller.image.digest` -> `" + KARPENTER_DIGEST + "` (the published image; as committed on main at "
    "`1d927085dd81`)",
    notes="`crds/*.yaml` are symlinks to `pkg/apis/crds/` in git, packaged as the files they point at.",
    reference="`Chart.yaml` byte-identical to `upstream/karpenter/` (taken there from main `1d927085dd81`, which "
    "committed the stamped file); `values.yaml` lacks the 5 lines `settings.awsFeatureGates.nodeClassCEL: false` "
    "(with its comments) that `upstream/karpenter/values.yaml` has from main: that key came after the v1.14.1 tag "
    '(commit `0156bcf5e`, "add aws specific feature gates"), the 1.14.1 templates do not read it, and the released '
    "chart is the tag's. Otherwise the same bytes",
)
KARPENTER_CRD = Recipe(
    name="karpenter-crd",
    version="1.14.1",
    source=Source(
        KARPENTER_SOURCE.repo,
        KARPENTER_SOURCE.ref,
        KARPENTER_SOURCE.commit,
        "charts/karpenter-crd",
        KARPENTER_SOURCE.date,
    ),
    chart_version="1.14.1",
    app_version="1.14.1",
    edits=(
        ("Chart.yaml", ("appVersion",), "1.14.1"),
        ("Chart.yaml", ("version",), "1.14.1"),
    ),
    stamping=KARPENTER_STAMPING,
    reference="no reference folder in `upstream/` (its CRDs are `upstream/crds/karpenter/`)",
)
CLUSTER_AUTOSCALER = Recipe(
    name="cluster-autoscaler",
    version="9.59.0",
    source=Source(
        "kubernetes/autoscaler",
        "cluster-autoscaler-chart-9.59.0",
        "5a0b98e45f896e98132737240ac131a519d3b33d",
        "cluster-autoscaler/charts/cluster-autoscaler",
        "2026-07-21",
    ),
)
EFA_DEVICE_PLUGIN = Recipe(
    name="aws-efa-k8s-device-plugin",
    version="v0.5.30",
    # eks-charts has no chart tags: scripts/package-charts.sh packages stable/* as committed on every release. This
    # is the commit that set version v0.5.30; the folder is unchanged (same tree) at 5239609242f3, the commit
    # upstream/aws-efa-k8s-device-plugin/ was copied from.
    source=Source(
        "aws/eks-charts",
        "",
        "bfe91c4b9257c80f754ad4b3d6a9a3c239b2b8ec",
        "stable/aws-efa-k8s-device-plugin",
        "2026-07-21",
    ),
    notes="aws/eks-charts tags no chart releases (its release job packages `stable/*` on every push): "
    "`bfe91c4b9257` is the commit that set `version: v0.5.30`; the chart folder is the same git tree "
    "(`163ff055569d`) at `5239609242f3`, the commit `upstream/aws-efa-k8s-device-plugin/` names.",
)
PROMETHEUS_COMMUNITY = "prometheus-community/helm-charts"
KUBE_STATE_METRICS = Recipe(
    name="kube-state-metrics",
    version="8.4.0",
    source=Source(
        PROMETHEUS_COMMUNITY,
        "kube-state-metrics-8.4.0",
        "1982f1c5828920f5d4ea5d04956169e81f8c5129",
        "charts/kube-state-metrics",
        "2026-08-18",
    ),
)
NODE_EXPORTER = Recipe(
    name="prometheus-node-exporter",
    version="4.56.1",
    source=Source(
        PROMETHEUS_COMMUNITY,
        "prometheus-node-exporter-4.56.1",
        "8b8e639cac80a3001412f187060068978f649a55",
        "charts/prometheus-node-exporter",
        "2026-07-14",
    ),
)
GRAFANA = Recipe(
    name="grafana",
    version="12.11.1",
    source=Source(
        "grafana-community/helm-charts",
        "grafana-12.11.1",
        "864f7794683680e5100a38670e103c4fa6e37e29",
        "charts/grafana",
        "2026-08-19",
    ),
)
WINDOWS_EXPORTER = Recipe(
    name="prometheus-windows-exporter",
    version="0.12.8",
    source=Source(
        PROMETHEUS_COMMUNITY,
        "prometheus-windows-exporter-0.12.8",
        "43a82e944bf3ca3aab1703613ca5cf09851b23ec",
        "charts/prometheus-windows-exporter",
        "2026-07-22",
    ),
    notes="kube-prometheus-stack asks for `0.12.*` and commits no Chart.lock; 0.12.8 (2026-07-22) is the newest "
    "0.12.x tagged before kube-prometheus-stack-88.5.3 was released (2026-08-21), so the one its release resolved.",
)
KUBE_PROMETHEUS_STACK = Recipe(
    name="kube-prometheus-stack",
    version="88.5.3",
    source=Source(
        PROMETHEUS_COMMUNITY,
        "kube-prometheus-stack-88.5.3",
        "ea930baeebeba39f56d6b44e351f23b2a072a600",
        "charts/kube-prometheus-stack",
        "2026-08-21",
    ),
    reference="`Chart.yaml` and `values.yaml` byte-identical to `upstream/kube-prometheus-stack/`, and those of "
    "`charts/grafana/`, `charts/kube-state-metrics/`, `charts/prometheus-node-exporter/` to "
    "`upstream/kube-prometheus-stack/<sub-chart>/`",
    # .github/workflows/release.yaml: chart-releaser (`cr package`, dependency update from the chart repositories)
    # packages the chart as committed; the dependencies are the released charts of their own tags.
    deps=(KUBE_STATE_METRICS, NODE_EXPORTER, GRAFANA, WINDOWS_EXPORTER),
    in_tree=("crds 0.0.0: committed as `charts/kube-prometheus-stack/charts/crds/` (a folder in the archive too)",),
    notes="The release job resolves the dependencies (`helm dependency update`) and so also packages a generated "
    "`Chart.lock`; git has none, and this archive neither (the dependency versions are those of Chart.yaml).",
)

JOBSET = Recipe(
    name="jobset",
    version="0.12.0",
    source=Source(
        "kubernetes-sigs/jobset", "v0.12.0", "f22e565ac3cc3265c7c45ef67ecffdc689af5d77", "charts/jobset", "2026-05-08"
    ),
    # hack/helm-chart-package.sh (at the tag): a tag matching ^v[0-9]+(\.[0-9]+){1,2}$ sets IMAGE_REGISTRY to
    # registry.k8s.io/jobset, then yq sets .image.repository/.tag/.pullPolicy and runs `helm package --version
    # 0.12.0 --app-version v0.12.0` (Chart.yaml in git has version 0.12.0 and no appVersion: Helm adds it).
    chart_version="0.12.0",
    app_version="v0.12.0",
    edits=(
        ("values.yaml", ("image", "repository"), "registry.k8s.io/jobset/jobset"),
        ("values.yaml", ("image", "tag"), "v0.12.0"),
        ("values.yaml", ("image", "pullPolicy"), "IfNotPresent"),
    ),
    stamping="values.yaml `image.repository` -> `registry.k8s.io/jobset/jobset`, `image.tag` -> `v0.12.0`, "
    "`image.pullPolicy` -> `IfNotPresent` (yq in `hack/helm-chart-package.sh`); `helm package --version 0.12.0 "
    "--app-version v0.12.0` (Chart.yaml gains `appVersion: v0.12.0`)",
    reference="`values.yaml` differs from `upstream/jobset/` by the 3 stamped lines only; `Chart.yaml` by the "
    "added `appVersion` line only",
)
LEADER_WORKER_SET = Recipe(
    name="lws",
    version="v0.9.0",
    source=Source(
        "kubernetes-sigs/lws", "v0.9.0", "f056f611ae7721f9983ac35f26bfbae8547fd9f3", "charts/lws", "2026-06-17"
    ),
    # hack/push-chart.sh (run by cloudbuild.yaml `make helm-chart-push` with EXTRA_TAG = the pushed tag): a tag
    # matching ^v([0-9]+)(\.[0-9]+){1,2}$ makes the image registry.k8s.io/lws/lws and the chart version the tag
    # itself; yq sets .image.manager.repository/.tag/.pullPolicy, then `helm package --version v0.9.0
    # --app-version v0.9.0`. (The docs install it with `--version=0.9.0`: Helm matches the tag as a semver.)
    chart_version="v0.9.0",
    app_version="v0.9.0",
    edits=(
        ("values.yaml", ("image", "manager", "repository"), "registry.k8s.io/lws/lws"),
        ("values.yaml", ("image", "manager", "tag"), "v0.9.0"),
        ("values.yaml", ("image", "manager", "pullPolicy"), "IfNotPresent"),
    ),
    stamping="values.yaml `image.manager.repository` -> `registry.k8s.io/lws/lws` (already so), `image.manager.tag` "
    "-> `v0.9.0`, `image.manager.pullPolicy` -> `IfNotPresent` (yq in `hack/push-chart.sh`); `helm package "
    '--version v0.9.0 --app-version v0.9.0` (Chart.yaml `version: 0.1.0` -> `v0.9.0`, `appVersion: "v0.9.0"` kept)',
    reference="`values.yaml` differs from `upstream/lws/` by the 2 stamped lines only; `Chart.yaml` by the "
    "stamped `version` line only",
)
KUBERAY = Recipe(
    name="kuberay-operator",
    version="1.6.2",
    source=Source(
        "ray-project/kuberay",
        "v1.6.2",
        "598eb66aa077c55ae04fa87b192238a3ec184e88",
        "helm-chart/kuberay-operator",
        "2026-06-17",
    ),
    # .github/workflows/helm.yaml: chart-releaser packages helm-chart/* as committed into ray-project/kuberay-helm;
    # at the tag Chart.yaml says 1.6.2 and values.yaml `image.tag: v1.6.2`.
)

# The Kubeflow trainer's dependencies, the released charts its Chart.yaml asks for (jobset 0.11.0, lws 0.8.0), each
# stamped as its own release job stamps it (as JOBSET / LEADER_WORKER_SET above, at their tags).
TRAINER_JOBSET = Recipe(
    name="jobset",
    version="0.11.0",
    source=Source(
        "kubernetes-sigs/jobset", "v0.11.0", "f7035a420bb6ebfe7f05494ce2fdff12ade319bf", "charts/jobset", "2026-01-23"
    ),
    chart_version="0.11.0",  # hack/helm-chart-package.sh at v0.11.0, as at v0.12.0
    app_version="v0.11.0",
    edits=(
        ("values.yaml", ("image", "repository"), "registry.k8s.io/jobset/jobset"),
        ("values.yaml", ("image", "tag"), "v0.11.0"),
        ("values.yaml", ("image", "pullPolicy"), "IfNotPresent"),
    ),
)
TRAINER_LWS = Recipe(
    name="lws",
    # hack/push-chart.sh at v0.8.0, as at v0.9.0: the chart version is the tag, "v" kept; Helm resolves the
    # trainer's `version: 0.8.0` to it (a "v" prefix parses as the same semver)
    version="v0.8.0",
    source=Source(
        "kubernetes-sigs/lws", "v0.8.0", "fc19b9ae9b0113d228ba15f4b62b06bea434b510", "charts/lws", "2026-01-27"
    ),
    chart_version="v0.8.0",
    app_version="v0.8.0",
    edits=(
        ("values.yaml", ("image", "manager", "repository"), "registry.k8s.io/lws/lws"),
        ("values.yaml", ("image", "manager", "tag"), "v0.8.0"),
        ("values.yaml", ("image", "manager", "pullPolicy"), "IfNotPresent"),
    ),
)
TRAINER = Recipe(
    name="kubeflow-trainer",
    version="2.2.1",
    source=Source(
        "kubeflow/trainer",
        "v2.2.1",
        "c505fc7ccec98bb326cee56144bc5ee92be5048d",
        "charts/kubeflow-trainer",
        "2026-06-17",
    ),
    # .github/workflows/publish-helm-charts.yaml (at the tag): `helm dependency build`, then `helm package --version
    # <Chart.yaml's version>` (2.2.1 as committed: nothing stamped), pushed to oci://ghcr.io/kubeflow/charts.
    deps=(TRAINER_JOBSET, TRAINER_LWS),
    reference="`Chart.yaml` and `values.yaml` byte-identical to `upstream/kubeflow-trainer/`",
    notes="`helm dependency build` without a `Chart.lock` in git resolves the dependencies and packages a generated "
    "`Chart.lock`; this archive has none (the dependency versions are those of Chart.yaml). Both dependencies are "
    "off as the platform installs it (`jobset.install: false`: the platform's own JobSet, `addons.jobset`; "
    "`dataCache.enabled: false`, the chart's default) but Helm needs them in the archive to install it.",
)

# Every chart components/data/versions.py pins, by chart name. (dra-driver-nvidia-gpu is not installed as a chart:
# components/render/dra.py runs the GPU Operator's DRA driver instead.)
RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in (
        GPU_OPERATOR,
        DCGM_EXPORTER,
        KUEUE,
        VOLCANO,
        KARPENTER,
        KARPENTER_CRD,
        CLUSTER_AUTOSCALER,
        EFA_DEVICE_PLUGIN,
        KUBE_PROMETHEUS_STACK,
        JOBSET,
        LEADER_WORKER_SET,
        KUBERAY,
        TRAINER,
    )
}
