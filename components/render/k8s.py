"""Kubernetes building blocks the components share: how a Kubernetes object or Helm release is registered,
Pod Security labels, a chart's namespace (with the quota GKE needs before it admits system-critical pods), a
Helm release of a pinned chart, and an admission policy with its binding.

Registration: pulumi_kubernetes' typed classes (``core.v1.Namespace``, ``helm.v3.Release``...) only turn their
snake_case arguments into the object's camelCase fields and register the resource under its type token, with
the provider plugin's version and, for some kinds, aliases to the API versions the kind was served at before.
``KubeResource`` registers the same type token, fields and options through ``pulumi.CustomResource`` directly,
as ``pulumi_kubernetes.apiextensions.CustomResource`` does for custom resources (which go through it too):
importing a typed package loads every kind of its group (``core.v1`` alone ~0.5 s) and each typed resource
costs ~1/3 more to register. None of the kinds used here declares a secret output.
tests/test_k8s_registration.py registers every kind both ways and compares what the engine receives.
``KubeProvider`` does the same for ``pulumi_kubernetes.Provider``, and the plugin version is read without
``_utilities`` (``plugin_version``): a synth never imports pulumi_kubernetes (tests/test_k8s_provider_registration.py).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pulumi

from ..data import versions
from ..plan import derive
from ..plan.plan import AddonPlan
from ..plan.tenancy import PSA_VERSION, psa_labels  # noqa: F401  (re-exported: the renderers' name)

CRITICAL_PRIORITY_CLASSES = ("system-node-critical", "system-cluster-critical")
RELEASE = "kubernetes:helm.sh/v3:Release"
ADMISSION_API = "admissionregistration.k8s.io/v1"

# The aliases a typed class adds to its resources (``alias_opts`` in pulumi_kubernetes 4.34.2
# scheduling/v1/PriorityClass.py, rbac/v1/ClusterRole.py, rbac/v1/ClusterRoleBinding.py,
# admissionregistration/v1/ValidatingAdmissionPolicy[Binding].py, apiextensions/v1/CustomResourceDefinition.py,
# resource/v1/ResourceClaimTemplate.py, storage/v1/StorageClass.py, rbac/v1/Role[Binding].py, batch/v1/CronJob.py);
# the other kinds used here add none.
TYPE_ALIASES: dict[str, tuple[str, ...]] = {
    "kubernetes:storage.k8s.io/v1:StorageClass": ("kubernetes:storage.k8s.io/v1beta1:StorageClass",),
    "kubernetes:scheduling.k8s.io/v1:PriorityClass": (
        "kubernetes:scheduling.k8s.io/v1alpha1:PriorityClass",
        "kubernetes:scheduling.k8s.io/v1beta1:PriorityClass",
    ),
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole": (
        "kubernetes:rbac.authorization.k8s.io/v1alpha1:ClusterRole",
        "kubernetes:rbac.authorization.k8s.io/v1beta1:ClusterRole",
    ),
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding": (
        "kubernetes:rbac.authorization.k8s.io/v1alpha1:ClusterRoleBinding",
        "kubernetes:rbac.authorization.k8s.io/v1beta1:ClusterRoleBinding",
    ),
    "kubernetes:rbac.authorization.k8s.io/v1:Role": (
        "kubernetes:rbac.authorization.k8s.io/v1alpha1:Role",
        "kubernetes:rbac.authorization.k8s.io/v1beta1:Role",
    ),
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": (
        "kubernetes:rbac.authorization.k8s.io/v1alpha1:RoleBinding",
        "kubernetes:rbac.authorization.k8s.io/v1beta1:RoleBinding",
    ),
    "kubernetes:batch/v1:CronJob": ("kubernetes:batch/v1beta1:CronJob", "kubernetes:batch/v2alpha1:CronJob"),
    "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy": (
        "kubernetes:admissionregistration.k8s.io/v1alpha1:ValidatingAdmissionPolicy",
        "kubernetes:admissionregistration.k8s.io/v1beta1:ValidatingAdmissionPolicy",
    ),
    "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding": (
        "kubernetes:admissionregistration.k8s.io/v1alpha1:ValidatingAdmissionPolicyBinding",
        "kubernetes:admissionregistration.k8s.io/v1beta1:ValidatingAdmissionPolicyBinding",
    ),
    "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition": (
        "kubernetes:apiextensions.k8s.io/v1beta1:CustomResourceDefinition",
    ),
    "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate": tuple(
        f"kubernetes:resource.k8s.io/{v}:ResourceClaimTemplate"
        for v in ("v1alpha1", "v1alpha2", "v1alpha3", "v1beta1", "v1beta2")
    ),
}


def type_token(api_version: str, kind: str) -> str:
    """pulumi_kubernetes' type token of a kind: ``kubernetes:<group>/<version>:<Kind>``, group ``core`` for
    the core API (``v1``)."""
    return f"kubernetes:{api_version if '/' in api_version else f'core/{api_version}'}:{kind}"


_RELEASE = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)")


def plugin_version(package: str, utilities: Callable[[], Any]) -> str:
    """The plugin version a Pulumi SDK's typed classes send (``<package>._utilities.get_version()``), without
    importing the package (its root imports its provider and input types, and ``_utilities`` imports parver):
    ``_get_semver_version`` turns the installed distribution's PEP 440 version into semver, which for a release
    (``4.34.2``) is that version itself (pulumi_kubernetes 4.34.2 / pulumi_aws 7.51.1 ``_utilities.py``). Any
    other version (a pre-release, a dev or local build) is asked of ``utilities()`` (the ``_utilities`` module).
    importlib.metadata costs nothing more here: pydantic imports it for its plugin discovery
    (pydantic 2.14.4 ``plugin/_loader.py``) before any spec is read."""
    from importlib.metadata import version

    installed = version(package)
    return installed if _RELEASE.fullmatch(installed) else str(utilities().get_version())


def _utilities() -> Any:
    from pulumi_kubernetes import _utilities

    return _utilities


@functools.cache
def _version() -> str:
    """The plugin version pulumi_kubernetes' typed classes send (``_utilities.get_resource_opts_defaults()``, whose
    plugin download URL is None: pulumi_kubernetes 4.34.2 ``get_plugin_download_url``)."""
    return plugin_version("pulumi_kubernetes", _utilities)


def with_plugin_version(
    opts: pulumi.ResourceOptions | None, version: str, aliases: Sequence[str] = ()
) -> pulumi.ResourceOptions:
    """What a typed class registers ``opts`` with: ``merge(get_resource_opts_defaults(), opts)`` (the plugin version
    unless ``opts`` names one, no download URL unless it names one), then for a kind with older API versions
    ``merge(opts, ResourceOptions(aliases=[Alias(type_=t)...]))``. The same options, made as one copy of ``opts``:
    ``ResourceOptions.merge`` copies both sides, rebuilds every list, a hook binding and the providers map field by
    field (~12 us a call, ~1,100 calls in a 200-tenant render). What merge normalises on the way (depends_on None
    to [], no hooks to an empty binding, a providers list to a map) registers the same: tests/test_k8s_registration.py
    registers options of eight shapes both ways (none, one dependency not in a list, lifecycle flags, a providers
    list, a version of their own, aliases...) and compares what the engine receives; the caller's ``opts`` is left
    as it was."""
    merged = opts._copy() if opts is not None else pulumi.ResourceOptions()
    if merged.version is None:
        merged.version = version
    if aliases:
        merged.aliases = [*(merged.aliases or ()), *(pulumi.Alias(type_=t) for t in aliases)]
    return merged


class KubeResource(pulumi.CustomResource):
    """A pulumi_kubernetes resource registered as its typed class registers it (see the module docstring):
    ``props`` are the camelCase fields (a None field is left out, as the SDK leaves it out of the request)."""

    def __init__(
        self,
        token: str,
        resource_name: str,
        props: Mapping[str, Any],
        opts: pulumi.ResourceOptions | None = None,
        outputs: tuple[str, ...] = (),
    ):
        """``outputs``: fields the server fills that the program reads (a token Secret's ``data``): attributes as
        the typed class has them; an unset (None) property is not sent, as the typed class does not send it."""
        # The typed classes: merge(get_resource_opts_defaults(), opts), then merge(opts, alias_opts).
        opts = with_plugin_version(opts, _version(), TYPE_ALIASES.get(token, ()))
        sent = {k: v for k, v in props.items() if v is not None}
        super().__init__(token, resource_name, {**{k: None for k in outputs}, **sent}, opts)


SECRET_OUTPUTS = ["data", "stringData"]


def kube_object(
    resource_name: str, api_version: str, kind: str, opts: pulumi.ResourceOptions | None = None, **fields: Any
) -> KubeResource:
    """A Kubernetes object; ``fields``: its top-level fields besides apiVersion and kind, named as in the object
    (``metadata``, ``spec``, ``data``, ``rules``, ``roleRef``...).

    A v1 Secret's ``data`` and ``stringData`` are secret, in and out, as the typed class makes them
    (pulumi_kubernetes 4.34.2 core/v1/Secret.py: ``Output.secret`` on both, ``additional_secret_outputs``): else a
    token the API server fills in would sit in plain text in the stack's state."""
    if api_version == "v1" and kind == "Secret":
        for field in ("data", "stringData"):
            if fields.get(field) is not None:
                fields[field] = pulumi.Output.secret(fields[field])
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=SECRET_OUTPUTS))
    return KubeResource(
        type_token(api_version, kind), resource_name, {"apiVersion": api_version, "kind": kind, **fields}, opts
    )


def camel(name: str) -> str:
    """The Pulumi SDKs' wire name of a Python argument (``skip_crds`` -> ``skipCrds``)."""
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def helm_release(resource_name: str, opts: pulumi.ResourceOptions | None = None, **args: Any) -> KubeResource:
    """A ``helm.v3.Release``; ``args`` as the typed class takes them (snake_case: ``repository_opts``,
    ``skip_crds``...), sent camelCase with the ``compat: "true"`` the typed class always adds
    (pulumi_kubernetes 4.34.2 helm/v3/Release.py)."""
    return KubeResource(RELEASE, resource_name, {"compat": "true", **{camel(k): v for k, v in args.items()}}, opts)


# Options of every Kubernetes provider the platform creates (aws/cluster.py, gcp/cluster.py, existing.py):
# server-side apply; and ConfigMaps updated in place. pulumi-kubernetes otherwise replaces a ConfigMap whose data
# changes, and with a fixed name that is delete-then-create: adding a tenant replaced the cost ConfigMap (its
# figures change), and a sharing change replaced the device-plugin config the GPU Operator reads, with a window
# where it did not exist (seen under the real engine: tests/engine).
PROVIDER_OPTIONS = {"enable_server_side_apply": True, "enable_config_map_mutable": True}

# pulumi_kubernetes 4.34.2 provider.py ``Provider._internal_init``: each input by its Python name -> (its name on
# the wire (``ProviderArgs``' getters), whether it is sent as JSON (``Output.from_input(v).apply(to_json)``), the
# environment variable read when it is not given (``get_env`` for KUBECONFIG, ``get_env_bool`` for the others)).
# helm_release_settings and kube_client_settings (input types, JSON too) are not used here and not accepted.
PROVIDER_INPUTS: dict[str, tuple[str, bool, str | None]] = {
    "always_render": ("alwaysRender", True, None),
    "cluster": ("cluster", False, None),
    "cluster_identifier": ("clusterIdentifier", False, None),
    "context": ("context", False, None),
    "delete_unreachable": ("deleteUnreachable", True, "PULUMI_K8S_DELETE_UNREACHABLE"),
    "enable_config_map_mutable": ("enableConfigMapMutable", True, "PULUMI_K8S_ENABLE_CONFIGMAP_MUTABLE"),
    "enable_patch_force": ("enablePatchForce", True, "PULUMI_K8S_ENABLE_PATCH_FORCE"),
    "enable_secret_mutable": ("enableSecretMutable", True, "PULUMI_K8S_ENABLE_SECRET_MUTABLE"),
    "enable_server_side_apply": ("enableServerSideApply", True, "PULUMI_K8S_ENABLE_SERVER_SIDE_APPLY"),
    "kubeconfig": ("kubeconfig", False, "KUBECONFIG"),
    "namespace": ("namespace", False, None),
    "render_yaml_to_directory": ("renderYamlToDirectory", False, None),
    "skip_update_unreachable": ("skipUpdateUnreachable", True, "PULUMI_K8S_SKIP_UPDATE_UNREACHABLE"),
    "suppress_deprecation_warnings": ("suppressDeprecationWarnings", True, "PULUMI_K8S_SUPPRESS_DEPRECATION_WARNINGS"),
    "suppress_helm_hook_warnings": ("suppressHelmHookWarnings", True, "PULUMI_K8S_SUPPRESS_HELM_HOOK_WARNINGS"),
    "upsert_existing_objects": ("upsertExistingObjects", True, "PULUMI_K8S_UPSERT_EXISTING_OBJECTS"),
}
# pulumi_kubernetes 4.34.2 _utilities.py get_env_bool (Go's strconv.ParseBool words); anything else: not set
_ENV_BOOLS = {**dict.fromkeys(("1", "t", "T", "true", "TRUE", "True"), True),
              **dict.fromkeys(("0", "f", "F", "false", "FALSE", "False"), False)}  # fmt: skip


class KubeProvider(pulumi.ProviderResource):
    """A Kubernetes provider registered as ``pulumi_kubernetes.Provider`` registers it (type
    ``pulumi:providers:kubernetes``, inputs as listed in ``PROVIDER_INPUTS``, the plugin version), without
    importing pulumi_kubernetes (~0.01 s with parver). ``args`` as the typed class takes them (snake_case);
    tests/test_k8s_provider_registration.py registers both and compares what the engine receives."""

    def __init__(self, resource_name: str, opts: pulumi.ResourceOptions | None = None, **args: Any):
        unknown = set(args) - set(PROVIDER_INPUTS)
        if unknown:
            raise TypeError(f"KubeProvider: unsupported inputs {sorted(unknown)}")
        props: dict[str, Any] = {}
        for name, (wire, as_json, env) in PROVIDER_INPUTS.items():
            value = args.get(name)
            if value is None and env is not None:
                value = os.environ.get(env) if name == "kubeconfig" else _ENV_BOOLS.get(os.environ.get(env, ""))
            if value is not None and as_json:
                value = pulumi.Output.from_input(value).apply(pulumi.runtime.to_json)
            props[wire] = value
        super().__init__("kubernetes", resource_name, props, with_plugin_version(opts, _version()))


def critical_pods_quota(pods: int) -> dict[str, Any]:
    """``spec`` of the ResourceQuota GKE requires in a namespace before it admits system-node-critical /
    system-cluster-critical pods outside kube-system."""
    return {
        "hard": {"pods": str(pods)},
        "scopeSelector": {
            "matchExpressions": [
                {"scopeName": "PriorityClass", "operator": "In", "values": list(CRITICAL_PRIORITY_CLASSES)}
            ]
        },
    }


def addon_namespace(
    parent: pulumi.Resource,
    provider: pulumi.ProviderResource,
    addon: AddonPlan,
    prefix: str,
    namespace: str,
    labels: Mapping[str, str],
    critical_pods: int | None = None,
    quota_name: str = "critical-pods",
) -> list[pulumi.Resource]:
    """The namespace a chart installs into, created here so it carries Pod Security labels, and the
    critical-pods quota when the cloud needs one (``addon.critical_pods_quota``: GKE) and the chart's pods run at
    a system-critical priority (``critical_pods`` set). Returns what the release must wait for. Resource names
    start with what they are (``namespace-<prefix>``), so they can never equal a tenant's (``<tenant>-namespace``),
    whatever a tenant is called."""
    quota = critical_pods if addon.critical_pods_quota else None
    return _namespace(parent, provider, prefix, namespace, labels, quota, quota_name)


def _namespace(
    parent: pulumi.Resource,
    provider: pulumi.ProviderResource,
    prefix: str,
    namespace: str,
    labels: Mapping[str, str],
    critical_pods: int | None,
    quota_name: str,
) -> list[pulumi.Resource]:
    """The namespace, and the critical-pods quota when ``critical_pods`` is set."""
    # Until d22b537 these were '<prefix>-namespace' / '<prefix>-critical-pods' (same parent): the aliases keep
    # deployed stacks from creating the new ones and deleting the old, and the chart with its namespace.
    ns = kube_object(
        f"namespace-{prefix}",
        "v1",
        "Namespace",
        metadata={"name": namespace, "labels": {**derive.MANAGED_BY, **labels}},
        opts=pulumi.ResourceOptions(
            parent=parent, provider=provider, aliases=[pulumi.Alias(name=f"{prefix}-namespace")]
        ),
    )
    out: list[pulumi.Resource] = [ns]
    if critical_pods is not None:
        out.append(
            kube_object(
                f"critical-pods-{prefix}",
                "v1",
                "ResourceQuota",
                metadata={"name": quota_name, "namespace": namespace, "labels": derive.MANAGED_BY},
                spec=critical_pods_quota(critical_pods),
                opts=pulumi.ResourceOptions(
                    parent=parent,
                    provider=provider,
                    depends_on=[ns],
                    aliases=[pulumi.Alias(name=f"{prefix}-critical-pods")],
                ),
            )
        )
    return out


def release_args(addon: AddonPlan) -> dict[str, Any]:
    """``helm.v3.Release`` arguments naming the add-on's chart as the plan has it (version override and source
    applied): ``versions.release_args`` of ``addon.chart_ref()``."""
    return versions.release_args(addon.chart_ref())


def addon_release(
    resource_name: str,
    parent: pulumi.Resource,
    provider: pulumi.ProviderResource,
    addon: AddonPlan,
    values: dict[str, Any],
    depends_on: Sequence[pulumi.Resource],
    timeout: int = 600,
    protect: bool = False,
    **extra: Any,
) -> pulumi.Resource:
    """A ``helm.v3.Release`` of the add-on's pinned chart (the plan's version and source) into a namespace that
    already exists; ``protect``: the engine refuses to delete it (uninstall)."""
    return _release(resource_name, parent, provider, addon.chart_ref(), values, depends_on, timeout, protect, **extra)


def _release(
    resource_name: str,
    parent: pulumi.Resource,
    provider: pulumi.ProviderResource,
    chart: versions.Chart,
    values: dict[str, Any],
    depends_on: Sequence[pulumi.Resource],
    timeout: int,
    protect: bool,
    **extra: Any,
) -> pulumi.Resource:
    return helm_release(
        resource_name,
        **versions.release_args(chart),
        create_namespace=False,
        values=values,
        timeout=timeout,
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=list(depends_on), protect=protect),
        **extra,
    )


def admission_policy(
    prefix: str,
    parent: pulumi.Resource,
    provider: pulumi.ProviderResource,
    policy_name: str,
    policy_spec: dict[str, Any],
    depends_on: Sequence[pulumi.Resource] = (),
    param_ref: dict[str, Any] | None = None,
) -> pulumi.Resource:
    """A ValidatingAdmissionPolicy and the binding that makes it deny (``param_ref``: the binding's params, for a
    policy with a ``paramKind``); returns the binding, what an object the policy must guard waits for."""
    meta = {"name": policy_name, "labels": derive.MANAGED_BY}
    policy = kube_object(
        f"{prefix}-policy",
        ADMISSION_API,
        "ValidatingAdmissionPolicy",
        metadata=meta,
        spec=policy_spec,
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=list(depends_on)),
    )
    return kube_object(
        f"{prefix}-binding",
        ADMISSION_API,
        "ValidatingAdmissionPolicyBinding",
        metadata=meta,
        spec={
            "policyName": policy_name,
            "validationActions": ["Deny"],
            **({"paramRef": param_ref} if param_ref else {}),
        },
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=[policy]),
    )
