"""Pinned charts (components/data/versions.py) and the pack data generated from them (components/cli/policy_data.py):
where a chart comes from, how a stack's version override applies, the release arguments, and the generator's
write / --check modes."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from components.cli import policy_data
from components.data import versions
from components.data.versions import Chart


def test_a_charts_source_is_its_repository_or_its_oci_registry_path():
    """https charts come from their repository; an oci:// chart from its reference without the chart name."""
    assert versions.VOLCANO.source == "https://volcano-sh.github.io/helm-charts"
    assert versions.KUEUE.source == "oci://registry.k8s.io/kueue/charts"
    assert versions.KARPENTER.source == versions.KARPENTER_CRD.source == "oci://public.ecr.aws/karpenter"


def test_allowed_sources_are_every_charts_source_once_sorted():
    """The policy pack's default allow-list: each official source once (karpenter and its CRD chart share one),
    and the folder of the bundled archives (accepted by digest, tests/test_chart_sources.py)."""
    assert versions.ALLOWED_SOURCES == (
        "https://aws.github.io/eks-charts",
        "https://helm.ngc.nvidia.com/nvidia",
        "https://kubernetes.github.io/autoscaler",
        "https://nvidia.github.io/dcgm-exporter/helm-charts",
        "https://prometheus-community.github.io/helm-charts",
        "https://ray-project.github.io/kuberay-helm",
        "https://volcano-sh.github.io/helm-charts",
        "oci://ghcr.io/kubeflow/charts",
        "oci://ghcr.io/spegel-org/helm-charts",
        "oci://public.ecr.aws/karpenter",
        "oci://registry.k8s.io/jobset/charts",
        "oci://registry.k8s.io/kueue/charts",
        "oci://registry.k8s.io/lws/charts",
        "upstream/charts",
    )
    assert set(versions.CHARTS) == {
        "gpuOperator",
        "dcgmExporter",
        "kueue",
        "volcano",
        "karpenter",
        "karpenterCrd",
        "clusterAutoscaler",
        "kubePrometheusStack",
        "efaDevicePlugin",
        "jobset",
        "leaderWorkerSet",
        "kuberay",
        "trainer",
        "spegel",
    }
    assert all(key == c.key for key, c in versions.CHARTS.items())


def test_an_override_changes_the_version_only():
    """A stack may pin another chart version; chart, repository, namespace and release stay."""
    overrides = {"volcano": SimpleNamespace(version="1.15.2")}
    got = versions.resolve(versions.VOLCANO, overrides)
    assert got == Chart("volcano", "volcano", "1.15.2", versions.VOLCANO.repository, "volcano-system", "volcano")
    assert versions.resolve(versions.VOLCANO, {"kueue": SimpleNamespace(version="9")}) is versions.VOLCANO
    assert versions.resolve(versions.VOLCANO, None) is versions.VOLCANO
    # keyed by the stack-file key (gpuOperator), not the release name (gpu-operator)
    assert versions.resolve(versions.GPU_OPERATOR, {"gpuOperator": SimpleNamespace(version="v26.7.1")}).version == (
        "v26.7.1"
    )
    assert versions.resolve(versions.GPU_OPERATOR, {"gpu-operator": SimpleNamespace(version="x")}).version == "v26.7.0"
    assert versions.resolve(versions.VOLCANO) is versions.VOLCANO


def test_release_args_name_the_repository_only_for_https_charts():
    """https charts get repositoryOpts; OCI charts carry the registry in the chart reference."""
    assert versions.release_args(
        versions.resolve(versions.VOLCANO, {"volcano": SimpleNamespace(version="1.15.2")})
    ) == {
        "name": "volcano",
        "chart": "volcano",
        "version": "1.15.2",
        "namespace": "volcano-system",
        "repository_opts": {"repo": "https://volcano-sh.github.io/helm-charts"},
    }
    assert versions.release_args(versions.KUEUE) == {
        "name": "kueue",
        "chart": "oci://registry.k8s.io/kueue/charts/kueue",
        "version": "0.19.2",
        "namespace": "kueue-system",
    }


# ------------------------------------------------------------------------------------------ pack data


def test_pack_data_lists_charts_and_gpu_types_sorted():
    """The pack data: each chart's fields, sorted type lists, the allow-list, a do-not-edit note; render is its JSON."""
    d = policy_data.data()
    assert d["charts"]["kueue"] == {
        "chart": "oci://registry.k8s.io/kueue/charts/kueue",
        "version": "0.19.2",
        "repository": None,
        "source": "oci://registry.k8s.io/kueue/charts",
        "namespace": "kueue-system",
        "release": "kueue",
    }
    assert list(d["charts"]) == sorted(versions.CHARTS)
    assert d["allowedSources"] == list(versions.ALLOWED_SOURCES)
    for k in ("awsGpuInstanceTypes", "awsGpuInstanceFamilies", "gcpGpuMachineTypes"):
        assert d[k] == sorted(set(d[k])) and d[k], k
    assert "p5.48xlarge" in d["awsGpuInstanceTypes"] and "p5" in d["awsGpuInstanceFamilies"]
    assert "a3-highgpu-8g" in d["gcpGpuMachineTypes"]
    assert d["$comment"].startswith(
        "Generated from components/data/catalog.py and components/data/versions.py by `make "
    )
    text = policy_data.render()
    assert text.endswith("}\n") and json.loads(text) == d


def test_generator_writes_a_stale_file_and_check_reports_it(tmp_path, monkeypatch, capsys):
    """--check exits 1 naming the command while the file is stale and writes nothing; a plain run writes it
    (saying so) and is then quiet; --check then passes."""
    target = tmp_path / "policies" / "pack_data.json"
    target.parent.mkdir()
    target.write_text("{}\n")
    monkeypatch.setattr(policy_data, "PATH", target)
    monkeypatch.setattr(policy_data, "ROOT", tmp_path)
    assert policy_data.main(["--check"]) == 1
    assert capsys.readouterr().err == "policies/pack_data.json is out of date: run `make policy-data`\n"
    assert target.read_text() == "{}\n"
    assert policy_data.main([]) == 0
    assert capsys.readouterr().err == "wrote policies/pack_data.json\n"
    assert target.read_text() == policy_data.render()
    assert policy_data.main([]) == 0 and capsys.readouterr().err == ""
    assert policy_data.main(["--check"]) == 0


def test_generator_creates_a_missing_file(tmp_path, monkeypatch):
    """--check fails on a missing file without creating it; a plain run creates it."""
    target = tmp_path / "pack_data.json"
    monkeypatch.setattr(policy_data, "PATH", target)
    monkeypatch.setattr(policy_data, "ROOT", tmp_path)
    assert policy_data.main(["--check"]) == 1
    assert not target.exists()
    assert policy_data.main([]) == 0 and target.read_text() == policy_data.render()


def test_policy_data_help_says_what_it_does_and_what_check_means(capsys):
    """`python -m components.cli.policy_data --help` is how a maintainer learns that --check writes nothing and fails
    (exit 1) when the pack's data has drifted: both sentences are in the help."""
    with pytest.raises(SystemExit) as done:
        policy_data.main(["--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert "Regenerate policies/pack_data.json from components." in text.splitlines()  # the description, alone
    out = " ".join(text.split())
    assert "--check exit 1 if the file is not up to date; write nothing" in out
