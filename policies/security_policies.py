"""Security: pinned charts from allow-listed sources, hardened nodes and GPU containers, Pod Security, no admin IAM."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pulumi_policy import PolicyConfigSchema, ReportViolation, ResourceValidationArgs

from .common import (
    ADVISORY,
    DEFAULT_ALLOWED_DIGESTS,
    DEFAULT_ALLOWED_SOURCES,
    DEFAULT_PRIVILEGED_NAMESPACES,
    EC2_NODE_CLASS,
    EKS_CLUSTER,
    GKE_CLUSTER,
    GKE_NODE_POOL,
    HELM_CHART_V4,
    HELM_RELEASE,
    IAM_GROUP_POLICY,
    IAM_POLICY,
    IAM_ROLE,
    IAM_ROLE_POLICY,
    IAM_USER_POLICY,
    LAUNCH_TEMPLATE,
    MANAGED_BY_LABEL,
    MANAGED_BY_VALUE,
    MANDATORY,
    NAMESPACE,
    OPERATOR_NAMESPACE_LABEL,
    PSA_ENFORCE,
    TENANT_LABEL,
    WORKLOAD_KINDS,
    TypedResourcePolicy,
    _config_strs,
    _get,
    _labels,
    _map,
    _meta,
    _obj_name,
    _seq,
    _strs,
    _truthy,
    gke_gpu_reason,
    gpu_containers,
    k8s_group_kind,
    pod_templates,
)

# ----------------------------------------------------------------------------------- Helm releases

_EXACT_VERSION = re.compile(
    r"^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$"
)


_DIGEST = re.compile(r"^chart sha256:([0-9a-f]{64})$")


def chart_source(props: Mapping[str, Any]) -> str | None:
    """Where a release's chart comes from: the registry path of an oci:// chart, else repositoryOpts.repo, else
    the folder of a local chart archive (``<folder>/<name>-<version>.tgz``)."""
    chart = props.get("chart")
    if isinstance(chart, str) and chart.startswith("oci://"):
        return chart.rsplit("/", 1)[0]
    repo = _get(props, "repositoryOpts", "repo")
    if isinstance(repo, str) and repo:
        return repo
    archive = local_archive(props)
    return archive.rsplit("/", 1)[0] if archive else None


def local_archive(props: Mapping[str, Any]) -> str | None:
    """The path of a release's chart when it is a local archive (``<folder>/<name>-<version>.tgz``: no oci://
    reference, no repositoryOpts.repo), else None."""
    chart = props.get("chart")
    if not isinstance(chart, str) or chart.startswith("oci://") or _get(props, "repositoryOpts", "repo"):
        return None
    return chart if chart.endswith(".tgz") and "/" in chart else None


def _norm(source: str) -> str:
    return source.strip().rstrip("/")


def _local_archive(chart: str, version: str, report: ReportViolation, props: Mapping[str, Any], args: Any) -> None:
    """A local archive is accepted by name and digest: ``<name>-<version>.tgz`` matching the pinned version (Helm
    ignores ``version`` for a path), and the sha256 the program read from the file among ``allowedDigests``."""
    if not chart.rsplit("/", 1)[-1].endswith(f"-{version.strip()}.tgz"):
        report(f"chart archive {chart!r} is not the pinned version {version!r} (<name>-<version>.tgz).", None)
    description = props.get("description")
    m = _DIGEST.match(description) if isinstance(description, str) else None
    allowed = set(_config_strs(args, "allowedDigests", DEFAULT_ALLOWED_DIGESTS))
    if m is None:
        report(f"chart archive {chart!r} carries no digest (description 'chart sha256:<hex>').", None)
    elif m.group(1) not in allowed:
        report(
            f"chart archive {chart!r} has sha256 {m.group(1)}, which is not among the allowed digests: add it to "
            "this policy's allowedDigests in the policy pack config (gpu-platform check --policy-config FILE, "
            "pulumi --policy-pack-config FILE)",
            None,
        )


def _helm_chart_pinned(args: ResourceValidationArgs, report: ReportViolation) -> None:
    props = args.props
    chart = props.get("chart")
    version = props.get("version")
    if not isinstance(version, str) or not version.strip():
        report(f"chart {chart!r} has no version: Helm would install whatever is newest. Pin an exact version.", None)
    elif not _EXACT_VERSION.match(version.strip()):
        report(f"chart {chart!r} version {version!r} is not an exact version (ranges and wildcards float).", None)
    allowed = sorted({_norm(s) for s in _config_strs(args, "allowedSources", DEFAULT_ALLOWED_SOURCES)})
    source = chart_source(props)
    if source is None:
        report(
            f"chart {chart!r} names no repository (no oci:// reference, no repositoryOpts.repo, no "
            f"<folder>/<name>-<version>.tgz archive). Allowed sources: {', '.join(allowed)}.",
            None,
        )
        return
    if _norm(source) not in allowed:
        report(
            f"chart {chart!r} comes from {source}, which is not allow-listed ({', '.join(allowed)}). A mirror of "
            f"your own: add {source} to this policy's allowedSources in the policy pack config (gpu-platform check "
            f'--policy-config FILE, pulumi --policy-pack-config FILE): {{"helm-chart-pinned": {{"allowedSources": '
            f'[...the defaults, "{source}"]}}}}',
            None,
        )
    archive = local_archive(props)
    if archive and isinstance(version, str) and version.strip():
        _local_archive(archive, version, report, props, args)


helm_chart_pinned = TypedResourcePolicy(
    resource_types=(HELM_RELEASE, HELM_CHART_V4),
    name="helm-chart-pinned",
    description="Helm releases pin an exact chart version from an allow-listed source; local archives by digest.",
    enforcement_level=MANDATORY,
    validate=_helm_chart_pinned,
    config_schema=PolicyConfigSchema(
        properties={
            "allowedSources": {
                "type": "array",
                "items": {"type": "string"},
                "default": list(DEFAULT_ALLOWED_SOURCES),
                "description": "Helm repository URLs, oci:// registry paths (the chart reference without its "
                "last segment) and folders of packaged charts (relative to the project) releases may come from.",
            },
            "allowedDigests": {
                "type": "array",
                "items": {"type": "string"},
                "default": list(DEFAULT_ALLOWED_DIGESTS),
                "description": "sha256 (hex) of the local chart archives releases may install; default: the "
                "archives bundled in upstream/charts/.",
            },
        }
    ),
    remediation_steps="Use the versions in components/data/versions.py (the only place charts are written down); "
    "list a mirror in allowedSources, and a local archive's sha256 in allowedDigests.",
)


# ------------------------------------------------------------------------------- node IMDS and disks


def _imds_ok(options: Mapping[str, Any], default_tokens: str | None) -> bool:
    if options.get("httpEndpoint") == "disabled":
        return True
    tokens = options.get("httpTokens", default_tokens)
    return tokens == "required"


def _node_imdsv2_and_encryption(args: ResourceValidationArgs, report: ReportViolation) -> None:
    props = args.props
    if args.resource_type == LAUNCH_TEMPLATE:
        options = _map(props.get("metadataOptions"))
        if not _imds_ok(options, None):
            got = options.get("httpTokens")
            report(
                "launch template does not require IMDSv2: metadataOptions.httpTokens is "
                f"{got!r} (unset leaves it to the AMI or account default). Set httpTokens: required.",
                None,
            )
        mappings, flag = _seq(props.get("blockDeviceMappings")), "blockDeviceMappings"
    elif args.resource_type == EC2_NODE_CLASS:
        spec = _map(props.get("spec"))
        options = _map(spec.get("metadataOptions"))
        # The CRD defaults httpTokens to "required" when metadataOptions or the field is omitted.
        if not _imds_ok(options, "required"):
            report(
                f"EC2NodeClass sets spec.metadataOptions.httpTokens: {options.get('httpTokens')!r}; use required.", None
            )
        mappings, flag = _seq(spec.get("blockDeviceMappings")), "spec.blockDeviceMappings"
    else:
        return
    if not mappings:
        report(
            f"{flag} is empty: the root volume's encryption is left to the AMI / account default. Declare every "
            "volume (root included) with ebs.encrypted: true.",
            None,
        )
    for i, m in enumerate(mappings):
        m = _map(m)
        if m.get("noDevice") is not None or m.get("virtualName"):
            continue  # suppressed device or instance store: no EBS volume
        device = m.get("deviceName") or i
        # A volume restored from a snapshot takes the snapshot's encryption: the EC2 API refuses an encryption value
        # with a snapshot (LaunchTemplateEbsBlockDeviceRequest.Encrypted), and account-level encryption by default
        # encrypts it whatever the snapshot.
        if _get(m, "ebs", "snapshotId") or _get(m, "ebs", "snapshotID"):
            continue
        if not _truthy(_get(m, "ebs", "encrypted")):
            report(f"{flag}[{device}]: EBS volume is not encrypted (ebs.encrypted must be true).", None)


node_imdsv2_and_encryption = TypedResourcePolicy(
    resource_types=(LAUNCH_TEMPLATE, EC2_NODE_CLASS),
    name="node-imdsv2-and-encryption",
    description="EC2NodeClasses and launch templates require IMDSv2 (httpTokens: required) and encrypt "
    "all EBS volumes.",
    enforcement_level=MANDATORY,
    validate=_node_imdsv2_and_encryption,
    remediation_steps="Set metadataOptions.httpTokens: required and ebs.encrypted: true on every block device mapping.",
)


# --------------------------------------------------------------------------------- GKE GPU hardening


def _gke_gpu_node_hardening(args: ResourceValidationArgs, report: ReportViolation) -> None:
    reason = gke_gpu_reason(args.props)
    if reason is None:
        return
    node_config = _map(args.props.get("nodeConfig"))
    if _get(node_config, "shieldedInstanceConfig", "enableSecureBoot") is not True:
        report(
            f"GKE GPU pool ({reason}) does not enable secure boot (nodeConfig.shieldedInstanceConfig."
            "enableSecureBoot). GKE-installed drivers are signed; only operator-compiled drivers need it off.",
            None,
        )
    mode = _get(node_config, "workloadMetadataConfig", "mode")
    if mode != "GKE_METADATA":
        report(
            f"GKE GPU pool ({reason}) exposes the node's metadata server to pods (workloadMetadataConfig.mode is "
            f"{mode!r}); use GKE_METADATA (Workload Identity) so pods cannot use the node's service account.",
            None,
        )


gke_gpu_node_hardening = TypedResourcePolicy(
    resource_types=(GKE_NODE_POOL,),
    name="gke-gpu-node-hardening",
    description="GKE GPU node pools use shielded nodes with secure boot and the GKE_METADATA workload metadata mode.",
    enforcement_level=ADVISORY,
    validate=_gke_gpu_node_hardening,
)


# --------------------------------------------------------------------------------- GKE cluster hardening


def gke_cluster_findings(props: Mapping[str, Any]) -> list[str]:
    """What leaves a GKE cluster the stack creates open (cluster.create): nodes with public addresses, pods
    reaching the node's credentials, unverified boot, legacy ABAC, client certificates, a public endpoint open to
    all. The settings of Google's "Harden your cluster's security" guide that cluster-toolkit's gke-cluster sets."""
    out = []
    private = _map(props.get("privateClusterConfig"))
    if private.get("enablePrivateNodes") is not True:
        out.append("its nodes get public IP addresses (privateClusterConfig.enablePrivateNodes is not true)")
    if not _get(props, "workloadIdentityConfig", "workloadPool"):
        out.append(
            "it has no Workload Identity (workloadIdentityConfig.workloadPool): pods would use the node's account"
        )
    if props.get("enableShieldedNodes") is False:
        out.append("its nodes are not shielded (enableShieldedNodes: false): no verified boot or node identity")
    if _truthy(props.get("enableLegacyAbac")):
        out.append("legacy ABAC is on (enableLegacyAbac): it grants permissions around RBAC")
    if _get(props, "masterAuth", "clientCertificateConfig", "issueClientCertificate") is True:
        out.append("it issues a client certificate (masterAuth), a credential that cannot be revoked")
    if private.get("enablePrivateEndpoint") is not True:
        authorized = props.get("masterAuthorizedNetworksConfig")
        blocks = [_map(b).get("cidrBlock") for b in _seq(_map(authorized).get("cidrBlocks"))]
        if authorized is None:
            out.append("its public endpoint takes connections from any address (no masterAuthorizedNetworksConfig)")
        elif any(isinstance(b, str) and b.endswith("/0") for b in blocks):
            out.append("its public endpoint's authorized networks include the whole internet (a /0 block)")
        elif _truthy(_map(authorized).get("gcpPublicCidrsAccessEnabled")):
            out.append("its public endpoint admits every Google Cloud public address (gcpPublicCidrsAccessEnabled)")
    return out


def _gke_cluster_hardening(args: ResourceValidationArgs, report: ReportViolation) -> None:
    name = args.props.get("name") or args.name
    for finding in gke_cluster_findings(args.props):
        report(f"GKE cluster {name}: {finding}.", None)


gke_cluster_hardening = TypedResourcePolicy(
    resource_types=(GKE_CLUSTER,),
    name="gke-cluster-hardening",
    description="GKE clusters the stack creates have private nodes, Workload Identity, shielded nodes, no legacy "
    "ABAC or client certificate, and a public endpoint only behind authorized networks.",
    enforcement_level=MANDATORY,
    validate=_gke_cluster_hardening,
    remediation_steps="Keep cluster.create.gke's defaults; list the networks that may reach a public endpoint in "
    "authorizedNetworks (never 0.0.0.0/0), or set privateEndpoint.",
)


# --------------------------------------------------------------------------------- container hardening


def _non_root(pod: Mapping[str, Any], container: Mapping[str, Any]) -> bool:
    csc, psc = _map(container.get("securityContext")), _map(pod.get("securityContext"))
    non_root = csc.get("runAsNonRoot", psc.get("runAsNonRoot"))
    user = csc.get("runAsUser", psc.get("runAsUser"))
    if isinstance(user, (int, float)) and not isinstance(user, bool):
        return user != 0 and non_root is not False
    return non_root is True


def _memory_shm(pod: Mapping[str, Any], container: Mapping[str, Any]) -> bool:
    volumes = {_map(v).get("name"): _map(v) for v in _seq(pod.get("volumes"))}
    for m in _seq(container.get("volumeMounts")):
        m = _map(m)
        if str(m.get("mountPath", "")).rstrip("/") == "/dev/shm":
            return _get(volumes.get(m.get("name"), {}), "emptyDir", "medium") == "Memory"
    return False


def _gpu_container_hardening(args: ResourceValidationArgs, report: ReportViolation) -> None:
    _, kind = k8s_group_kind(args.resource_type)
    for t in pod_templates(args.resource_type, args.props):
        for c in gpu_containers(t.spec):
            where = f"{kind} {_obj_name(args.props, args.name)} {t.where} container {c.get('name')!r}"
            if not _non_root(t.spec, c):
                report(
                    f"{where} may run as root: set securityContext.runAsNonRoot: true (and a non-zero runAsUser).", None
                )
            if not _memory_shm(t.spec, c):
                report(
                    f"{where} has no memory-backed /dev/shm: the default 64Mi breaks NCCL and DataLoader workers. "
                    "Mount an emptyDir {medium: Memory, sizeLimit: ...} at /dev/shm.",
                    None,
                )


gpu_container_hardening = TypedResourcePolicy(
    kinds=WORKLOAD_KINDS,  # pod_templates gives [] for any other kind: nothing to judge
    name="gpu-container-hardening",
    description="GPU containers run as non-root and mount a memory-backed /dev/shm.",
    enforcement_level=ADVISORY,
    validate=_gpu_container_hardening,
)


# ----------------------------------------------------------------------------------- Pod Security


def _namespace_pod_security(args: ResourceValidationArgs, report: ReportViolation) -> None:
    labels = _labels(args.props)
    name = _meta(args.props).get("name") or args.name
    level = labels.get(PSA_ENFORCE)
    tenant = labels.get(TENANT_LABEL)
    if tenant and level not in ("baseline", "restricted"):
        report(
            f"tenant namespace {name!r} enforces Pod Security level {level!r}; tenants need {PSA_ENFORCE} "
            "baseline or restricted.",
            None,
        )
        return
    if level != "privileged":
        return
    allowed = set(_config_strs(args, "privilegedNamespaces", DEFAULT_PRIVILEGED_NAMESPACES))
    marked = labels.get(MANAGED_BY_LABEL) == MANAGED_BY_VALUE and labels.get(OPERATOR_NAMESPACE_LABEL) == "true"
    if name not in allowed and not marked:
        report(
            f"namespace {name!r} is privileged but is not an operator namespace (allowed: "
            f"{', '.join(sorted(allowed))}, or labels {MANAGED_BY_LABEL}={MANAGED_BY_VALUE} + "
            f"{OPERATOR_NAMESPACE_LABEL}=true).",
            None,
        )


namespace_pod_security = TypedResourcePolicy(
    resource_types=(NAMESPACE,),
    name="namespace-pod-security",
    description="Tenant namespaces enforce Pod Security baseline or restricted; only operator "
    "namespaces are privileged.",
    enforcement_level=MANDATORY,
    validate=_namespace_pod_security,
    config_schema=PolicyConfigSchema(
        properties={
            "privilegedNamespaces": {
                "type": "array",
                "items": {"type": "string"},
                "default": list(DEFAULT_PRIVILEGED_NAMESPACES),
                "description": "Namespaces that may enforce the privileged Pod Security level.",
            }
        }
    ),
)


# ------------------------------------------------------------------------------------------- IAM


def _policy_documents(type_token: str, props: Mapping[str, Any]) -> list[tuple[str, Any]]:
    if type_token in (IAM_POLICY, IAM_ROLE_POLICY, IAM_USER_POLICY, IAM_GROUP_POLICY):
        return [("policy", props.get("policy"))]
    if type_token == IAM_ROLE:
        return [
            (f"inlinePolicies[{_map(p).get('name') or i}]", _map(p).get("policy"))
            for i, p in enumerate(_seq(props.get("inlinePolicies")))
        ]
    return []


def admin_statements(document: Mapping[str, Any]) -> list[str]:
    """Descriptions of the Allow statements of an IAM policy document that grant every action on every resource
    (``Action: *`` with ``Resource: *`` or a NotResource; ``NotAction`` with ``Resource: *``)."""
    statements = document.get("Statement")
    out = []
    for i, s in enumerate([statements] if isinstance(statements, Mapping) else _seq(statements)):
        s = _map(s)
        if s.get("Effect", "Allow") != "Allow":
            continue
        every_resource = "*" in _strs(s.get("Resource")) or "NotResource" in s
        label = s.get("Sid") or f"Statement[{i}]"
        if every_resource and any(a in ("*", "*:*") for a in _strs(s.get("Action"))):
            out.append(f"{label} allows Action * on every resource")
        elif every_resource and "NotAction" in s and "*" in _strs(s.get("Resource")):
            out.append(f"{label} allows every action except {', '.join(_strs(s.get('NotAction')))} on Resource *")
    return out


def _iam_no_admin_wildcard(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for where, doc in _policy_documents(args.resource_type, args.props):
        if isinstance(doc, str):
            try:
                doc = json.loads(doc)
            except ValueError:
                report(f"{where} is not a JSON policy document", None)
                continue
        if not isinstance(doc, Mapping):
            continue
        for finding in admin_statements(doc):
            report(f"{where}: {finding}; that is administrator access. Scope actions and resources.", None)


iam_no_admin_wildcard = TypedResourcePolicy(
    resource_types=(IAM_POLICY, IAM_ROLE_POLICY, IAM_USER_POLICY, IAM_GROUP_POLICY, IAM_ROLE),
    name="iam-no-admin-wildcard",
    description="IAM policies created by the stack grant no * action on * resource.",
    enforcement_level=MANDATORY,
    validate=_iam_no_admin_wildcard,
)


# ------------------------------------------------------------------------------------- EKS clusters

# Control-plane logs a created cluster must send (audit: who did what through the API; authenticator: which IAM
# principal a request came from; api: the API server's own log).
DEFAULT_REQUIRED_LOG_TYPES: tuple[str, ...] = ("api", "audit", "authenticator")
OPEN_CIDRS = ("0.0.0.0/0", "::/0")


def eks_cluster_findings(props: Mapping[str, Any], required_logs: list[str]) -> list[str]:
    """What an EKS cluster the stack creates lacks: Secrets envelope encryption, its control-plane logs, a
    public endpoint restricted to named networks (or off). EKS's defaults are the unsafe side of each: no
    encryption, no logs, a public endpoint open to 0.0.0.0/0 (EKS API CreateCluster ``publicAccessCidrs``)."""
    out = []
    encrypted = [
        r
        for c in _seq(props.get("encryptionConfig")) or [props.get("encryptionConfig")]
        for r in _strs(_get(c, "resources"))
    ]
    if "secrets" not in encrypted:
        out.append("Secrets are not envelope-encrypted (encryptionConfig.resources lacks 'secrets' with a KMS key)")
    logs = set(_strs(props.get("enabledClusterLogTypes")))
    missing = [t for t in required_logs if t not in logs]
    if missing:
        out.append(f"control-plane logs {', '.join(missing)} are off (enabledClusterLogTypes)")
    vpc = _map(props.get("vpcConfig"))
    public = vpc.get("endpointPublicAccess")
    if public is None or _truthy(public):
        cidrs = _strs(vpc.get("publicAccessCidrs"))
        if not cidrs or any(c in OPEN_CIDRS for c in cidrs):
            out.append(
                "the public API endpoint is open to every address (vpcConfig.publicAccessCidrs empty or 0.0.0.0/0); "
                "name the networks that may reach it, or turn endpointPublicAccess off"
            )
    return out


def _eks_cluster_hardening(args: ResourceValidationArgs, report: ReportViolation) -> None:
    required = _config_strs(args, "requiredLogTypes", DEFAULT_REQUIRED_LOG_TYPES)
    for finding in eks_cluster_findings(args.props, list(required)):
        report(f"EKS cluster {args.props.get('name') or args.name}: {finding}.", None)


eks_cluster_hardening = TypedResourcePolicy(
    resource_types=(EKS_CLUSTER,),
    name="eks-cluster-hardening",
    description="EKS clusters the stack creates encrypt Secrets with KMS, send their control-plane logs and "
    "restrict (or turn off) the public API endpoint.",
    enforcement_level=MANDATORY,
    validate=_eks_cluster_hardening,
    config_schema=PolicyConfigSchema(
        properties={
            "requiredLogTypes": {
                "type": "array",
                "items": {"type": "string"},
                "default": list(DEFAULT_REQUIRED_LOG_TYPES),
                "description": "Control-plane log types every created EKS cluster must enable.",
            }
        }
    ),
)


# Which resource types each policy reads (pack.TARGETS: for the README table and for tests).
TARGETS: dict[str, tuple[str, ...]] = {
    "helm-chart-pinned": (HELM_RELEASE, HELM_CHART_V4),
    "node-imdsv2-and-encryption": (LAUNCH_TEMPLATE, EC2_NODE_CLASS),
    "gke-gpu-node-hardening": (GKE_NODE_POOL,),
    "gke-cluster-hardening": (GKE_CLUSTER,),
    "gpu-container-hardening": ("Pod, Deployment, StatefulSet, Job, CronJob, Volcano Job, Kubeflow jobs, JobSet",),
    "namespace-pod-security": (NAMESPACE,),
    "iam-no-admin-wildcard": (IAM_POLICY, IAM_ROLE_POLICY, IAM_USER_POLICY, IAM_GROUP_POLICY, IAM_ROLE),
    "eks-cluster-hardening": (EKS_CLUSTER,),
}
