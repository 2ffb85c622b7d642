"""``components.render.k8s.KubeResource`` registers a Kubernetes object or Helm release exactly as pulumi_kubernetes'
typed class would: for every kind the stacks create through it, both are registered under the mock engine
with the same arguments and the requests the engine receives are compared field by field (type token,
properties, plugin version, aliases, timeouts, secret outputs, dependencies...)."""

from __future__ import annotations

import importlib
import re
from typing import Any

import pytest
from conftest import STACKS, rendered
from google.protobuf.json_format import MessageToDict

from components.render import k8s

META = {"name": "x", "namespace": "ns", "labels": {"app.kubernetes.io/managed-by": "gpu-platform"}}
# (typed class, apiVersion, kind, camelCase fields): every kind the components register with KubeResource, with
# the fields they set (tests/test_k8s_registration.py::test_every_registered_kind_is_compared keeps it whole).
CASES: list[tuple[str, str, str, dict[str, Any]]] = [
    ("core.v1.Namespace", "v1", "Namespace", {"metadata": {"name": "x", "labels": {"a": "b"}, "annotations": {}}}),
    ("core.v1.ResourceQuota", "v1", "ResourceQuota", {"metadata": META, "spec": {"hard": {"pods": "10"}}}),
    ("core.v1.LimitRange", "v1", "LimitRange", {"metadata": META, "spec": {"limits": [{"type": "Container"}]}}),
    ("core.v1.ConfigMap", "v1", "ConfigMap", {"metadata": META, "data": {"config.yaml": "a: 1\n"}}),
    ("core.v1.ServiceAccount", "v1", "ServiceAccount", {"metadata": META}),
    (
        "core.v1.Secret",
        "v1",
        "Secret",
        {"metadata": META, "type": "kubernetes.io/service-account-token", "stringData": {"k": "v"}},
    ),
    (
        "scheduling.v1.PriorityClass",
        "scheduling.k8s.io/v1",
        "PriorityClass",
        {
            "metadata": {"name": "x"},
            "value": 1000,
            "preemptionPolicy": "Never",
            "globalDefault": False,
            "description": "d",
        },
    ),
    (
        "rbac.v1.ClusterRole",
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        {"metadata": {"name": "x"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
    ),
    (
        "rbac.v1.ClusterRoleBinding",
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        {
            "metadata": {"name": "x"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "x"},
            "subjects": [{"kind": "ServiceAccount", "name": "x", "namespace": "ns"}],
        },
    ),
    ("batch.v1.Job", "batch/v1", "Job", {"metadata": META, "spec": {"backoffLimit": 6}}),
    (
        "batch.v1.CronJob",
        "batch/v1",
        "CronJob",
        {"metadata": META, "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"backoffLimit": 0}}}},
    ),
    (
        "rbac.v1.Role",
        "rbac.authorization.k8s.io/v1",
        "Role",
        {"metadata": META, "rules": [{"apiGroups": ["batch"], "resources": ["jobs/status"], "verbs": ["patch"]}]},
    ),
    (
        "rbac.v1.RoleBinding",
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        {
            "metadata": META,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "x"},
            "subjects": [{"kind": "ServiceAccount", "name": "x", "namespace": "ns"}],
        },
    ),
    (
        "core.v1.PersistentVolumeClaim",
        "v1",
        "PersistentVolumeClaim",
        {
            "metadata": META,
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "x",
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    ),
    (
        "core.v1.PersistentVolume",
        "v1",
        "PersistentVolume",
        {
            "metadata": {"name": "x"},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "capacity": {"storage": "1Gi"},
                "persistentVolumeReclaimPolicy": "Retain",
                "claimRef": {"namespace": "ns", "name": "x"},
                "csi": {"driver": "gcsfuse.csi.storage.gke.io", "volumeHandle": "bucket"},
            },
        },
    ),
    (
        "storage.v1.StorageClass",
        "storage.k8s.io/v1",
        "StorageClass",
        {
            "metadata": {"name": "x"},
            "provisioner": "fsx.csi.aws.com",
            "parameters": {"deploymentType": "SCRATCH_2"},
            "reclaimPolicy": "Retain",
            "mountOptions": ["flock"],
            "volumeBindingMode": "Immediate",
            "allowVolumeExpansion": True,
        },
    ),
    (
        "admissionregistration.v1.ValidatingAdmissionPolicy",
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicy",
        {"metadata": {"name": "x"}, "spec": {"failurePolicy": "Fail"}},
    ),
    (
        "admissionregistration.v1.ValidatingAdmissionPolicyBinding",
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicyBinding",
        {"metadata": {"name": "x"}, "spec": {"policyName": "x", "validationActions": ["Deny"]}},
    ),
    (
        "apiextensions.v1.CustomResourceDefinition",
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        {"metadata": {"name": "x"}, "spec": {"group": "g", "scope": "Namespaced"}},
    ),
    (
        "resource.v1.ResourceClaimTemplate",
        "resource.k8s.io/v1",
        "ResourceClaimTemplate",
        {"metadata": META, "spec": {"spec": {"devices": {"requests": []}}}},
    ),
]
# Every argument the components give a Release (components/render/k8s.py addon_release, versions.release_args,
# gpu_operator, karpenter).
RELEASE_ARGS = {
    "name": "r",
    "chart": "c",
    "version": "1.0.0",
    "namespace": "ns",
    "repository_opts": {"repo": "https://example.invalid/charts"},
    "create_namespace": False,
    "values": {"a": {"b": [1, "x"]}},
    "timeout": 900,
    "skip_crds": True,
    "disable_openapi_validation": True,
}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def _requests(program) -> dict[str, dict[str, Any]]:
    """What the engine receives for each resource ``program`` registers (by name), minus the source position."""
    import pulumi
    from pulumi.runtime import settings
    from pulumi.runtime.mocks import MockMonitor
    from pulumi.runtime.stack import run_pulumi_func
    from pulumi.runtime.sync_await import _sync_await

    class Mocks(pulumi.runtime.Mocks):
        def new_resource(self, args):
            return (f"id-{args.name}" if args.custom else ""), {}

        def call(self, args):
            return {}

    seen: dict[str, dict[str, Any]] = {}

    class Monitor(MockMonitor):
        def RegisterResource(self, request):
            got = MessageToDict(request)
            for noise in ("sourcePosition", "stackTrace"):
                got.pop(noise, None)
            seen[request.name] = got
            return super().RegisterResource(request)

    mocks = Mocks()
    settings.reset_options(project="p", stack="s", preview=False)
    pulumi.runtime.set_mocks(mocks, project="p", stack="s", preview=False, monitor=Monitor(mocks))
    try:
        _sync_await(run_pulumi_func(program))
    finally:
        settings.reset_options()
    return seen


def _both(typed, generic, shape: str = "the components' usual"):
    """The requests of the same resources registered the typed way and with KubeResource, with options of this
    shape (``_option_shapes``)."""
    import pulumi

    def run(make):
        def program():
            provider = pulumi.ProviderResource("kubernetes", "k8s", {})
            parent = pulumi.ComponentResource("test:index:Parent", "parent")
            before = pulumi.CustomResource("test:index:Before", "before", {})
            make(_option_shapes(parent, provider, before)[shape])

        return _requests(program)

    return run(typed), run(generic)


# Options of every shape the components pass (and a few they may): each registered the typed way (ResourceOptions.merge
# with the plugin defaults) and through k8s.with_plugin_version must reach the engine the same.
def _option_shapes(parent, provider, before) -> dict[str, Any]:
    import pulumi

    return {
        "the components' usual": pulumi.ResourceOptions(
            parent=parent,
            provider=provider,
            depends_on=[before],
            protect=True,
            aliases=[pulumi.Alias(name="old")],
            custom_timeouts=pulumi.CustomTimeouts(create="20m", update="20m"),
        ),
        "none": None,
        "empty": pulumi.ResourceOptions(),
        "one dependency, not a list": pulumi.ResourceOptions(parent=parent, depends_on=before),
        "lifecycle flags": pulumi.ResourceOptions(
            provider=provider,
            ignore_changes=["metadata"],
            replace_on_changes=["spec"],
            delete_before_replace=True,
            retain_on_delete=True,
            deleted_with=before,
        ),
        "providers list": pulumi.ResourceOptions(parent=parent, providers=[provider]),
        "its own version": pulumi.ResourceOptions(version="9.9.9", plugin_download_url="https://example.invalid"),
        "aliases and protect": pulumi.ResourceOptions(aliases=[pulumi.Alias(name="old")], protect=True),
        "an output dependency": pulumi.ResourceOptions(depends_on=[before], additional_secret_outputs=["data"]),
    }


@pytest.mark.parametrize("case", CASES, ids=[c[2] for c in CASES])
def test_an_object_registers_as_its_typed_class(case):
    module, api_version, kind, fields = case
    path, cls_name = module.rsplit(".", 1)
    cls = getattr(importlib.import_module(f"pulumi_kubernetes.{path}"), cls_name)
    typed, generic = _both(
        lambda o: cls("obj", opts=o, **{_snake(k): v for k, v in fields.items()}),
        lambda o: k8s.kube_object("obj", api_version, kind, o, **fields),
    )
    assert generic["obj"] == typed["obj"]
    assert typed["obj"]["type"] == k8s.type_token(api_version, kind)
    assert typed["obj"]["version"]  # the plugin version the typed class sends, sent here too


def test_a_release_registers_as_the_typed_class():
    from pulumi_kubernetes.helm.v3 import Release

    typed, generic = _both(
        lambda o: Release("rel", opts=o, **RELEASE_ARGS), lambda o: k8s.helm_release("rel", o, **RELEASE_ARGS)
    )
    assert generic["rel"] == typed["rel"]
    assert typed["rel"]["object"]["compat"] == "true"
    assert typed["rel"]["object"]["repositoryOpts"] == {"repo": "https://example.invalid/charts"}


def test_a_custom_resource_registers_as_apiextensions_custom_resource():
    from pulumi_kubernetes.apiextensions import CustomResource

    fields = {"metadata": META, "spec": {"clusterQueue": "x"}}
    api, kind = "kueue.x-k8s.io/v1beta2", "LocalQueue"
    typed, generic = _both(
        lambda o: CustomResource("cr", api_version=api, kind=kind, opts=o, **fields),
        lambda o: k8s.kube_object("cr", api, kind, o, **fields),
    )
    assert generic["cr"] == typed["cr"]
    assert typed["cr"]["type"] == "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue"


def test_type_aliases_are_those_of_the_typed_classes():
    """The aliases are sent (a kind with none would compare equal with an empty table too)."""
    typed, _ = _both(
        lambda o: importlib.import_module("pulumi_kubernetes.rbac.v1").ClusterRole("obj", opts=o),
        lambda o: None,
    )
    types = [a["spec"].get("type") for a in typed["obj"]["aliases"] if "spec" in a]
    assert types == [
        None,  # the caller's own alias (a rename) comes first
        "kubernetes:rbac.authorization.k8s.io/v1alpha1:ClusterRole",
        "kubernetes:rbac.authorization.k8s.io/v1beta1:ClusterRole",
    ]


def test_every_registered_kind_is_compared():
    """Each built-in kind (and the Helm release) the shipped stacks register is one of the compared cases:
    a new kind registered through KubeResource cannot skip the comparison."""
    builtin = re.compile(r"^kubernetes:(core|[a-z.]*k8s\.io|batch|helm\.sh)/")
    registered = {r.type for s in STACKS for r in rendered(s).resources if builtin.match(r.type)}
    compared = {k8s.type_token(api, kind) for _, api, kind, _ in CASES} | {k8s.RELEASE}
    assert registered <= compared, sorted(registered - compared)
    assert {"kubernetes:core/v1:Namespace", "kubernetes:helm.sh/v3:Release"} <= registered


# ------------------------------------------------------------------------------------ small building blocks


@pytest.mark.parametrize(
    ("api_version", "kind", "token"),
    [
        ("v1", "Namespace", "kubernetes:core/v1:Namespace"),
        ("apps/v1", "Deployment", "kubernetes:apps/v1:Deployment"),
        ("resource.k8s.io/v1", "ResourceClaimTemplate", "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"),
    ],
)
def test_type_token_names_the_core_group_core(api_version, kind, token):
    """pulumi_kubernetes' tokens: the core API (bare 'v1') under group 'core', every other group as written."""
    assert k8s.type_token(api_version, kind) == token


@pytest.mark.parametrize(
    ("name", "wire"),
    [("values", "values"), ("skip_crds", "skipCrds"), ("repository_opts", "repositoryOpts"), ("a_b_c", "aBC")],
)
def test_camel_is_the_sdks_wire_name(name, wire):
    """snake_case arguments become the SDK's camelCase wire names."""
    assert k8s.camel(name) == wire


def test_psa_labels_enforce_one_level_and_audit_and_warn_another():
    """enforce at the given level, pinned to the latest policy version; audit and warn at 'restricted' unless
    told otherwise, so violations of the stricter level are reported without being refused."""
    assert k8s.psa_labels("baseline") == {
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/enforce-version": "latest",
        "pod-security.kubernetes.io/audit": "restricted",
        "pod-security.kubernetes.io/warn": "restricted",
    }
    labels = k8s.psa_labels("privileged", audit="baseline")
    assert labels["pod-security.kubernetes.io/audit"] == labels["pod-security.kubernetes.io/warn"] == "baseline"


def test_critical_pods_quota_scopes_to_both_system_priority_classes():
    """GKE admits system-node-critical / system-cluster-critical pods outside kube-system only under a quota
    scoped to those PriorityClasses; the pod count is a string quantity."""
    assert k8s.critical_pods_quota(7) == {
        "hard": {"pods": "7"},
        "scopeSelector": {
            "matchExpressions": [
                {
                    "scopeName": "PriorityClass",
                    "operator": "In",
                    "values": ["system-node-critical", "system-cluster-critical"],
                }
            ]
        },
    }


def test_chart_namespaces_keep_their_pre_rename_urns_as_aliases():
    """Until d22b537 a chart's namespace and GKE quota were '<prefix>-namespace' / '<prefix>-critical-pods'
    under the same parent: each carries that URN as an alias, so a deployed stack renames them in place instead
    of deleting the namespace (and the release in it). The quota waits for its namespace."""
    r = rendered("prod-gcp")
    ns = r.find("kubernetes:core/v1:Namespace", "namespace-gpu-operator")
    parent = "urn:pulumi:prod-gcp::gpu-platform::gpu-platform:gpu:GpuOperator$"
    assert ns.aliases == [parent + "kubernetes:core/v1:Namespace::gpu-operator-namespace"]
    quota = r.find("kubernetes:core/v1:ResourceQuota", "critical-pods-gpu-operator")
    assert quota.aliases == [parent + "kubernetes:core/v1:ResourceQuota::gpu-operator-critical-pods"]
    assert quota.depends_on == ["namespace-gpu-operator"]
    assert quota.inputs["metadata"] == {
        "name": "gpu-operator-quota",
        "namespace": "gpu-operator",
        "labels": {"app.kubernetes.io/managed-by": "gpu-platform"},
    }
    kueue_ns = r.find("kubernetes:core/v1:Namespace", "namespace-kueue")
    assert kueue_ns.aliases == [
        "urn:pulumi:prod-gcp::gpu-platform::gpu-platform:scheduling:Kueue$kubernetes:core/v1:Namespace::kueue-namespace"
    ]
    assert r.find("kubernetes:core/v1:ResourceQuota", "critical-pods-kueue").inputs["metadata"]["name"] == (
        "critical-pods"
    )


@pytest.mark.parametrize(
    "shape",
    [
        "none",
        "empty",
        "one dependency, not a list",
        "lifecycle flags",
        "providers list",
        "its own version",
        "aliases and protect",
        "an output dependency",
    ],
)
@pytest.mark.parametrize("kind", ["core.v1.ConfigMap", "scheduling.v1.PriorityClass"])  # no aliases / aliases
def test_options_of_every_shape_register_as_the_typed_class_merges_them(shape, kind):
    module, api_version, kind_name, fields = next(c for c in CASES if c[0] == kind)
    path, cls_name = module.rsplit(".", 1)
    cls = getattr(importlib.import_module(f"pulumi_kubernetes.{path}"), cls_name)
    typed, generic = _both(
        lambda o: cls("obj", opts=o, **{_snake(k): v for k, v in fields.items()}),
        lambda o: k8s.kube_object("obj", api_version, kind_name, o, **fields),
        shape,
    )
    assert generic["obj"] == typed["obj"]
    assert typed["obj"]["version"] == ("9.9.9" if shape == "its own version" else k8s._version())


def test_with_plugin_version_leaves_the_callers_options_as_they_were():
    import pulumi

    opts = pulumi.ResourceOptions(aliases=[pulumi.Alias(name="old")], protect=True)
    made = k8s.with_plugin_version(opts, "1.2.3", ("kubernetes:v1beta1:Kind",))
    assert (opts.version, len(opts.aliases)) == (None, 1)
    assert (made.version, len(made.aliases), made.protect) == ("1.2.3", 2, True)
