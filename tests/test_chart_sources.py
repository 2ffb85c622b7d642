"""Charts from a mirror or from the repository itself (issue 27, point 1): ``gpu-platform:chartSource`` for every
chart, ``charts.<key>.source`` for one, ``gpu-platform:imageRegistry`` for the images the platform sets; the
release arguments each source gives, the rule that a local source holds the pinned archive, and the policy that
accepts exactly the allowed sources, a local archive by name and digest."""

from __future__ import annotations

import copy
import hashlib

import pytest
from conftest import STACKS, manifests, rendered, stack_config
from test_policies import check

from components.cli.loader import SpecError, load_spec
from components.cli.synth import render
from components.data import versions
from components.plan import rules_core
from policies import common, security_policies

RELEASE = "kubernetes:helm.sh/v3:Release"
# the archives of the charts the `local` stack installs
ARCHIVES = ("gpu-operator-v26.7.0.tgz", "kube-prometheus-stack-88.5.3.tgz", "kueue-0.19.2.tgz", "volcano-1.15.1.tgz")


def _spec(**extra):
    cfg = copy.deepcopy(stack_config("local"))
    cfg.update({f"gpu-platform:{k}": v for k, v in extra.items()})
    return load_spec(cfg)


def _problems(**extra):
    with pytest.raises(SpecError) as err:
        _spec(**extra)
    return {p.path: p.message for p in err.value.problems}


# --------------------------------------------------------------------------------------- what a source gives


def test_an_oci_mirror_names_the_chart_under_the_mirror_path():
    """Kueue's official reference is oci://registry.k8s.io/kueue/charts/kueue; from a mirror it is the mirror
    path plus the chart's own name, with no repositoryOpts (Helm takes OCI charts by reference)."""
    c = versions.with_source(versions.KUEUE, "oci://harbor.internal/helm/")
    assert (c.chart, c.repository, c.archive, c.version) == ("oci://harbor.internal/helm/kueue", None, None, "0.19.2")
    assert (
        versions.with_source(versions.VOLCANO, "oci://harbor.internal/helm").chart
        == "oci://harbor.internal/helm/volcano"
    )


def test_a_helm_repository_mirror_names_the_chart_by_name_with_the_mirror_as_repository():
    c = versions.with_source(versions.KARPENTER_CRD, "https://charts.internal/stable/")
    assert (c.chart, c.repository, c.archive) == ("karpenter-crd", "https://charts.internal/stable", None)


def test_bundled_and_folder_sources_name_the_archive_helm_package_writes():
    """<folder>/<Chart.yaml name>-<version>.tgz, relative to the project; version overrides follow."""
    c = versions.with_source(versions.GPU_OPERATOR, "bundled")
    assert (c.chart, c.repository, c.archive) == ("upstream/charts/gpu-operator-v26.7.0.tgz", None, c.chart)
    assert c.source == "upstream/charts"
    c = versions.with_source(versions.KUBE_PROMETHEUS_STACK, "vendor/charts/")
    assert c.archive == "vendor/charts/kube-prometheus-stack-88.5.3.tgz"


def test_a_charts_own_source_beats_the_stacks_and_the_official_one_stays_without_either():
    spec = _spec(chartSource="oci://mirror.internal/charts", charts={"volcano": {"source": "https://volcano.internal"}})
    assert versions.for_spec(versions.KUEUE, spec).chart == "oci://mirror.internal/charts/kueue"
    volcano = versions.for_spec(versions.VOLCANO, spec)
    assert (volcano.chart, volcano.repository) == ("volcano", "https://volcano.internal")
    assert versions.for_spec(versions.KUEUE, _spec()) is versions.KUEUE


def test_a_local_archive_release_carries_its_sha256_and_no_repository(tmp_path):
    """Helm ignores `version` for a chart path, so the digest of the file is what the policy can check."""
    folder = tmp_path / "charts"
    folder.mkdir()
    payload = b"not really a chart, but bytes with a digest"
    for name in ARCHIVES:
        (folder / name).write_bytes(b"x")
    (folder / "volcano-1.15.1.tgz").write_bytes(payload)
    spec = _spec(chartSource=str(folder))
    args = versions.release_args(versions.for_spec(versions.VOLCANO, spec))
    assert args == {
        "name": "volcano",
        "chart": f"{folder}/volcano-1.15.1.tgz",
        "version": "1.15.1",
        "namespace": "volcano-system",
        "description": "chart sha256:" + hashlib.sha256(payload).hexdigest(),
    }


def test_the_images_the_platform_sets_keep_their_registry_under_the_mirror():
    assert versions.image("registry.k8s.io/kubectl:v1.34.1", None) == "registry.k8s.io/kubectl:v1.34.1"
    assert versions.image("registry.k8s.io/kubectl:v1.34.1", "mirror.internal:5000/proxy/") == (
        "mirror.internal:5000/proxy/registry.k8s.io/kubectl:v1.34.1"
    )
    cfg = {**stack_config("local"), "gpu-platform:imageRegistry": "mirror.internal:5000/proxy"}
    jobs = manifests(render("local", cfg), "Job")
    images = {c["image"] for j in jobs for c in j["spec"]["template"]["spec"]["containers"]}
    assert images == {f"mirror.internal:5000/proxy/{versions.KUBECTL_IMAGE}"}
    assert versions.KUBECTL_IMAGE.startswith("registry.k8s.io/kubectl:v1.34.1@sha256:")


# ------------------------------------------------------------------------------------------ stack-file rules


def test_a_folder_without_the_pinned_archives_is_refused_where_the_stack_names_it():
    """local installs the GPU Operator, kube-prometheus-stack, Kueue and Volcano: one problem per missing archive,
    at chartSource, through the stack-file loader."""
    with pytest.raises(SpecError) as err:
        _spec(chartSource="vendor/charts")
    assert [(p.path, p.message) for p in err.value.problems] == [
        (
            "gpu-platform:chartSource",
            f"vendor/charts/{name} does not exist (a folder of packaged charts: <name>-<version>.tgz)",
        )
        for name in ARCHIVES
    ]


def test_only_the_missing_archives_are_refused(tmp_path):
    (tmp_path / "kueue-0.19.2.tgz").write_bytes(b"x")
    (tmp_path / "volcano-1.15.1.tgz").write_bytes(b"x")
    got = [p.message for p in rules_core.charts(_unchecked(chartSource=str(tmp_path)))]
    assert got == [
        f"{tmp_path}/{name} does not exist (a folder of packaged charts: <name>-<version>.tgz)"
        for name in ("gpu-operator-v26.7.0.tgz", "kube-prometheus-stack-88.5.3.tgz")
    ]


def test_a_charts_own_source_is_blamed_on_its_own_key():
    got = [(p.path, p.message) for p in rules_core.charts(_unchecked(charts={"volcano": {"source": "vendor"}}))]
    assert got == [
        (
            "gpu-platform:charts.volcano.source",
            "vendor/volcano-1.15.1.tgz does not exist (a folder of packaged charts: <name>-<version>.tgz)",
        )
    ]


def test_a_version_the_repository_does_not_bundle_is_refused_with_what_it_bundles():
    got = [
        (p.path, p.message)
        for p in rules_core.charts(_unchecked(chartSource="bundled", charts={"kueue": {"version": "0.19.3"}}))
    ]
    assert got == [
        (
            "gpu-platform:chartSource",
            "upstream/charts/kueue-0.19.3.tgz is not bundled: this repository keeps kueue-0.19.2.tgz of kueue (a "
            "version override needs a mirror or a folder holding that version)",
        )
    ]


def test_charts_a_stack_does_not_install_need_no_archive(tmp_path):
    """Karpenter's archive is not asked of an existing-cluster stack: only the charts program.run installs."""
    for name in (
        "gpu-operator-v26.7.0.tgz",
        "kube-prometheus-stack-88.5.3.tgz",
        "kueue-0.19.2.tgz",
        "volcano-1.15.1.tgz",
    ):
        (tmp_path / name).write_bytes(b"x")
    assert list(rules_core.charts(_unchecked(chartSource=str(tmp_path)))) == []


@pytest.mark.parametrize("bad", ["oci://", "file:///charts", "has space", "https//x"])
def test_a_malformed_source_is_refused_at_its_key(bad):
    assert set(_problems(chartSource=bad)) == {"gpu-platform:chartSource"}


@pytest.mark.parametrize("stack", STACKS)
def test_installed_charts_are_exactly_the_releases_the_program_registers(stack):
    """The rule asks archives of exactly the charts program.run installs: same set as the synth's releases."""
    spec = load_spec(stack_config(stack))
    releases = sorted(r.inputs["name"] for r in rendered(stack).resources if r.type == RELEASE)
    assert sorted(c.release for c in rules_core.installed_charts(spec)) == releases


def _unchecked(**extra):
    """The spec model without the stack-file rules (to call one rule alone)."""
    from components.spec.model import StackSpec

    cfg = {k.split(":", 1)[1]: v for k, v in stack_config("local").items()}
    cfg.update(extra)
    return StackSpec.model_validate(cfg)


# -------------------------------------------------------------------------------------------------- the policy

POLICY = security_policies.helm_chart_pinned
DIGEST = "ab" * 32
LOCAL = {"allowedSources": ["upstream/charts"], "allowedDigests": [DIGEST]}


def _local(chart="upstream/charts/kueue-0.19.2.tgz", version="0.19.2", description=f"chart sha256:{DIGEST}"):
    props = {"chart": chart, "version": version, "description": description}
    return check(POLICY, common.HELM_RELEASE, {k: v for k, v in props.items() if v is not None}, LOCAL)


def test_the_policy_accepts_an_allowed_archive_by_folder_name_and_digest():
    assert _local() == []


def test_the_policy_refuses_an_archive_whose_digest_is_not_allowed():
    assert _local(description="chart sha256:" + "cd" * 32) == [
        "chart archive 'upstream/charts/kueue-0.19.2.tgz' has sha256 " + "cd" * 32 + ", which is not among the "
        "allowed digests: add it to this policy's allowedDigests in the policy pack config (gpu-platform check "
        "--policy-config FILE, pulumi --policy-pack-config FILE)"
    ]
    assert _local(description=None) == [
        "chart archive 'upstream/charts/kueue-0.19.2.tgz' carries no digest (description 'chart sha256:<hex>')."
    ]


def test_the_policy_refuses_an_archive_of_another_version_than_the_pin():
    assert _local(chart="upstream/charts/kueue-0.19.3.tgz") == [
        "chart archive 'upstream/charts/kueue-0.19.3.tgz' is not the pinned version '0.19.2' (<name>-<version>.tgz)."
    ]


# a finding about a source names the policy setting that allows it (issue 41.9)
_ALLOW = (
    "A mirror of your own: add %(s)s to this policy's allowedSources in the policy pack config (gpu-platform "
    'check --policy-config FILE, pulumi --policy-pack-config FILE): {"helm-chart-pinned": {"allowedSources": '
    '[...the defaults, "%(s)s"]}}'
)


def _allow(source: str) -> str:
    return _ALLOW.replace("%(s)s", source)


def test_the_policy_refuses_an_archive_from_a_folder_not_allow_listed():
    assert _local(chart="elsewhere/kueue-0.19.2.tgz") == [
        "chart 'elsewhere/kueue-0.19.2.tgz' comes from elsewhere, which is not allow-listed (upstream/charts). "
        + _allow("elsewhere")
    ]


def test_the_policy_refuses_a_mirror_the_config_does_not_list_and_accepts_it_once_listed():
    props = {"chart": "oci://mirror.internal/charts/kueue", "version": "0.19.2"}
    assert check(POLICY, common.HELM_RELEASE, props, LOCAL) == [
        "chart 'oci://mirror.internal/charts/kueue' comes from oci://mirror.internal/charts, which is not "
        "allow-listed (upstream/charts). " + _allow("oci://mirror.internal/charts")
    ]
    assert check(POLICY, common.HELM_RELEASE, props, {"allowedSources": ["oci://mirror.internal/charts/"]}) == []


def test_by_default_the_policy_accepts_the_bundled_archives_and_nothing_else_local():
    assert set(common.DEFAULT_ALLOWED_DIGESTS) == set(versions.bundled_digests())
    assert len(common.DEFAULT_ALLOWED_DIGESTS) == len(set(versions.CHARTS) - set(versions.NOT_BUNDLED))
    bundled = render("local", {**stack_config("local"), "gpu-platform:chartSource": "bundled"})
    releases = [r for r in bundled.resources if r.type == RELEASE]
    assert releases and all(r.inputs["chart"].startswith("upstream/charts/") for r in releases)
    for r in releases:
        assert check(POLICY, common.HELM_RELEASE, r.inputs) == [], r.name
        digest = hashlib.sha256((versions.PROJECT_DIR / r.inputs["chart"]).read_bytes()).hexdigest()
        assert r.inputs["description"] == f"chart sha256:{digest}"


@pytest.mark.parametrize("source", ["bundled", "oci://harbor.internal/helm"])
def test_mirrored_charts_pass_the_whole_pack_without_false_findings(source, tmp_path):
    """Issue 41.7/9: dev-aws (GPU pools, the GPU Operator with its DCGM exporter) with its charts bundled or from
    an OCI mirror (listed in allowedSources, as the finding says) gets exactly the findings of the official
    sources: no 'no DCGM exporter' advisory from an archive's file name, no source finding."""
    import json

    from components.cli.policy_pack import module

    offline = module("offline")
    official = offline.evaluate(rendered("dev-aws"))
    mirrored = render("dev-aws", {**stack_config("dev-aws"), "gpu-platform:chartSource": source})
    config = tmp_path / "policy.json"
    allowed = [*common.DEFAULT_ALLOWED_SOURCES, source]
    config.write_text(json.dumps({"helm-chart-pinned": {"allowedSources": allowed}}))
    report = offline.evaluate(mirrored, config_file=str(config) if source.startswith("oci") else None)
    assert [v.line() for v in report.violations] == [v.line() for v in official.violations]
    assert not any(v.policy == "dcgm-monitoring" for v in report.violations)


def test_the_dcgm_policy_reads_the_chart_name_of_an_archive_not_its_file_name():
    from policies import monitoring_policies

    name = monitoring_policies._chart_name
    assert name({"chart": "upstream/charts/gpu-operator-v26.7.0.tgz", "version": "v26.7.0"}) == "gpu-operator"
    assert name({"chart": "oci://harbor.internal/helm/dcgm-exporter", "version": "4.1.0"}) == "dcgm-exporter"
    assert name({"chart": "gpu-operator", "version": "v26.7.0"}) == "gpu-operator"
