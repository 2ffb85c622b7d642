"""The security policies (policies/security_policies.py) one behaviour at a time: what each accepts, what it
refuses, and the exact message a user reads, with inputs shaped as the engine hands them over (camelCase, numbers
as floats, read-only proxies: test_policies.check).

Expected messages are written out by hand from the policies' documented intent (descriptions, remediation text);
the accepted / refused verdicts follow Kubernetes, Helm, EC2 and IAM semantics cited per test.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_policies import check, k8s

from policies import common, security_policies

GPU = {"limits": {"nvidia.com/gpu": 1}}
SOURCES = {"allowedSources": ["https://charts.example.com/", "oci://registry.example.com/charts"]}
ALLOWED = "https://charts.example.com, oci://registry.example.com/charts"

# ----------------------------------------------------------------------------- gpu-container-hardening


def _pod(container: dict[str, Any] | None = None, **spec: Any) -> tuple[str, str, dict]:
    c = {"name": "main", "image": "i", "resources": GPU, **(container or {})}
    return k8s("v1", "Pod", "nb", "ml", spec={"containers": [c], **spec})


def _hardening(doc: tuple[str, str, dict]) -> list[str]:
    return check(security_policies.gpu_container_hardening, doc[0], doc[2])


ROOT_MSG = (
    "Pod ml/nb spec container 'main' may run as root: set securityContext.runAsNonRoot: true (and a non-zero "
    "runAsUser)."
)
SHM_MSG = (
    "Pod ml/nb spec container 'main' has no memory-backed /dev/shm: the default 64Mi breaks NCCL and DataLoader "
    "workers. Mount an emptyDir {medium: Memory, sizeLimit: ...} at /dev/shm."
)
MEMORY_SHM = {"name": "dshm", "emptyDir": {"medium": "Memory"}}
NON_ROOT = {"securityContext": {"runAsNonRoot": True}}


def test_gpu_container_hardening_messages():
    """A bare GPU container gets both findings, word for word, naming the object, the pod template and the
    container, and telling the user the fix."""
    assert _hardening(_pod()) == [ROOT_MSG, SHM_MSG]


@pytest.mark.parametrize(
    "mount_path",
    ["/dev/shm", "/dev/shm/", "/dev/shm//"],
)
def test_a_memory_emptydir_at_dev_shm_is_accepted_with_or_without_trailing_slash(mount_path):
    """Kubernetes treats /dev/shm/ and /dev/shm as the same mount point, so a trailing slash still counts."""
    mount = {"volumeMounts": [{"name": "dshm", "mountPath": mount_path}], **NON_ROOT}
    assert _hardening(_pod(mount, volumes=[MEMORY_SHM])) == []


@pytest.mark.parametrize(
    ("mounts", "volumes"),
    [
        ([{"name": "dshm", "mountPath": "/dev/shm"}], [{"name": "dshm", "emptyDir": {}}]),  # disk-backed
        ([{"name": "dshm", "mountPath": "/dev/shm"}], [{"name": "other", "emptyDir": {"medium": "Memory"}}]),
        ([{"name": "dshm", "mountPath": "/dev/shm "}], [MEMORY_SHM]),  # another path
        ([{"name": "dshm", "mountPath": "/dev/shmem"}], [MEMORY_SHM]),
        ([{"name": "dshm"}], [MEMORY_SHM]),  # no mount path
        ([], [MEMORY_SHM]),  # the volume exists but is not mounted
    ],
)
def test_no_memory_backed_dev_shm(mounts, volumes):
    """Only a mount at /dev/shm of a volume of the pod that is an emptyDir with medium Memory lifts the 64Mi
    default; a disk emptyDir, a volume of another name, another path or no mount does not."""
    assert _hardening(_pod({"volumeMounts": mounts, **NON_ROOT}, volumes=volumes)) == [SHM_MSG]


def test_the_first_dev_shm_mount_decides():
    """The API server rejects two mounts at one path, so such a spec never runs as written; the policy judges the
    first /dev/shm mount it meets and a later memory-backed one does not turn the finding off."""
    mounts = [{"name": "disk", "mountPath": "/dev/shm"}, {"name": "dshm", "mountPath": "/dev/shm"}]
    volumes = [{"name": "disk", "emptyDir": {}}, MEMORY_SHM]
    assert _hardening(_pod({"volumeMounts": mounts, **NON_ROOT}, volumes=volumes)) == [SHM_MSG]


@pytest.mark.parametrize(
    ("container_sc", "pod_sc", "root"),
    [
        ({"runAsNonRoot": True}, None, False),
        ({"runAsUser": 1000}, None, False),  # a non-zero uid is not root
        ({"runAsUser": 0}, None, True),
        ({"runAsUser": 1000, "runAsNonRoot": False}, None, True),  # explicitly allowed to be root
        ({"runAsNonRoot": False}, None, True),
        ({}, None, True),
        (None, {"runAsNonRoot": True}, False),  # inherited from the pod
        (None, {"runAsUser": 1000}, False),
        (None, {"runAsUser": 0}, True),
        ({"runAsUser": 0}, {"runAsNonRoot": True}, True),  # uid 0 cannot be non-root
        ({"runAsNonRoot": False}, {"runAsNonRoot": True}, True),  # the container overrides the pod
        ({"runAsUser": 1000}, {"runAsUser": 0}, False),
        ({"runAsUser": True}, None, True),  # a boolean is no uid
        ({"runAsNonRoot": "true"}, None, True),  # only the boolean true
    ],
)
def test_may_run_as_root(container_sc, pod_sc, root):
    """Kubernetes' rules: the container's securityContext overrides the pod's; a non-zero runAsUser is not root
    unless runAsNonRoot is explicitly false; without a uid only runAsNonRoot: true guarantees non-root."""
    container: dict[str, Any] = {"volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}]}
    if container_sc is not None:
        container["securityContext"] = container_sc
    spec: dict[str, Any] = {"volumes": [MEMORY_SHM]}
    if pod_sc is not None:
        spec["securityContext"] = pod_sc
    assert _hardening(_pod(container, **spec)) == ([ROOT_MSG] if root else [])


def test_hardening_skips_cpu_containers_and_names_other_templates():
    """CPU-only containers are not judged; in a Deployment the message names the Deployment and its template."""
    cpu = _pod({"resources": {"limits": {"cpu": "1"}}})
    assert _hardening(cpu) == []
    deploy = k8s(
        "apps/v1",
        "Deployment",
        "srv",
        "ml",
        spec={"template": {"spec": {"containers": [{"name": "s", "resources": GPU, **NON_ROOT}]}}},
    )
    assert _hardening(deploy) == [
        "Deployment ml/srv spec.template.spec container 's' has no memory-backed /dev/shm: the default 64Mi "
        "breaks NCCL and DataLoader workers. Mount an emptyDir {medium: Memory, sizeLimit: ...} at /dev/shm."
    ]


# ----------------------------------------------------------------------------------- helm-chart-pinned


def _helm(props: dict[str, Any], type_: str = common.HELM_RELEASE) -> list[str]:
    return check(security_policies.helm_chart_pinned, type_, props, SOURCES)


def test_helm_chart_pinned_accepts_pinned_charts_from_allowed_sources():
    """An exact version from an allow-listed Helm repo or OCI registry path passes, for a Release and a v4 Chart;
    a trailing slash or surrounding space in either URL does not matter."""
    assert _helm({"chart": "c", "version": "1.2.3", "repositoryOpts": {"repo": " https://charts.example.com/ "}}) == []
    assert _helm({"chart": "oci://registry.example.com/charts/c", "version": " v1.2.3 "}, common.HELM_CHART_V4) == []
    assert check(security_policies.helm_chart_pinned, common.NAMESPACE, {"chart": "c"}, SOURCES) == []


def test_helm_chart_pinned_messages():
    """Each problem word for word: no version, a range, no repository, a repository not allow-listed."""
    assert _helm({"chart": "c", "repositoryOpts": {"repo": "https://charts.example.com"}}) == [
        "chart 'c' has no version: Helm would install whatever is newest. Pin an exact version."
    ]
    assert _helm({"chart": "c", "version": "  ", "repositoryOpts": {"repo": "https://charts.example.com"}}) == [
        "chart 'c' has no version: Helm would install whatever is newest. Pin an exact version."
    ]
    assert _helm({"chart": "c", "version": "~1.2", "repositoryOpts": {"repo": "https://charts.example.com"}}) == [
        "chart 'c' version '~1.2' is not an exact version (ranges and wildcards float)."
    ]
    assert _helm({"chart": "oci://registry.example.com/charts/c", "version": "1.x"}, common.HELM_CHART_V4) == [
        "chart 'oci://registry.example.com/charts/c' version '1.x' is not an exact version (ranges and wildcards "
        "float)."
    ]
    assert _helm({"chart": "./local", "version": "1.0.0", "repositoryOpts": {"repo": ""}}) == [
        "chart './local' names no repository (no oci:// reference, no repositoryOpts.repo, no "
        f"<folder>/<name>-<version>.tgz archive). Allowed sources: {ALLOWED}."
    ]
    assert _helm({"chart": "oci://ghcr.io/x/charts/c", "version": "1.0.0"}) == [
        f"chart 'oci://ghcr.io/x/charts/c' comes from oci://ghcr.io/x/charts, which is not allow-listed ({ALLOWED}). "
        "A mirror of your own: add oci://ghcr.io/x/charts to this policy's allowedSources in the policy pack config "
        '(gpu-platform check --policy-config FILE, pulumi --policy-pack-config FILE): {"helm-chart-pinned": '
        '{"allowedSources": [...the defaults, "oci://ghcr.io/x/charts"]}}'
    ]


def test_helm_chart_pinned_default_allow_list_is_the_pack_data():
    """Without config the allow-list is the one generated from components/data/versions.py into pack_data.json."""
    sources = list(common.PACK_DATA["allowedSources"])
    props = {"chart": "c", "version": "1.0.0", "repositoryOpts": {"repo": sources[0]}}
    assert check(security_policies.helm_chart_pinned, common.HELM_RELEASE, props) == []
    (msg,) = check(security_policies.helm_chart_pinned, common.HELM_RELEASE, {"chart": "c", "version": "1.0.0"})
    assert msg.endswith(f"Allowed sources: {', '.join(sorted(s.rstrip('/') for s in sources))}.")


# -------------------------------------------------------------------------- node-imdsv2-and-encryption


def _nodes(type_: str, props: dict[str, Any]) -> list[str]:
    return check(security_policies.node_imdsv2_and_encryption, type_, props)


ENCRYPTED = [{"deviceName": "/dev/xvda", "ebs": {"encrypted": "true"}}]


def test_launch_template_imds_and_encryption_messages():
    """A launch template must require IMDSv2 (unset is left to the AMI, so refused) unless the metadata endpoint
    is off, and encrypt every EBS mapping; instance-store and suppressed devices carry no EBS volume."""
    lt = common.LAUNCH_TEMPLATE
    assert _nodes(lt, {"metadataOptions": {"httpTokens": "required"}, "blockDeviceMappings": ENCRYPTED}) == []
    assert _nodes(lt, {"metadataOptions": {"httpEndpoint": "disabled"}, "blockDeviceMappings": ENCRYPTED}) == []
    assert _nodes(lt, {"blockDeviceMappings": ENCRYPTED}) == [
        "launch template does not require IMDSv2: metadataOptions.httpTokens is None (unset leaves it to the AMI "
        "or account default). Set httpTokens: required."
    ]
    mappings = [
        {"deviceName": "/dev/sdb", "virtualName": "ephemeral0"},
        {"deviceName": "/dev/sdc", "noDevice": ""},
        {"ebs": {"encrypted": "false"}},
        {"deviceName": "/dev/xvdd", "ebs": {}},
        {"deviceName": "/dev/xvde", "ebs": {"encrypted": True}},
    ]
    assert _nodes(lt, {"metadataOptions": {"httpTokens": "optional"}, "blockDeviceMappings": mappings}) == [
        "launch template does not require IMDSv2: metadataOptions.httpTokens is 'optional' (unset leaves it to the "
        "AMI or account default). Set httpTokens: required.",
        "blockDeviceMappings[2]: EBS volume is not encrypted (ebs.encrypted must be true).",
        "blockDeviceMappings[/dev/xvdd]: EBS volume is not encrypted (ebs.encrypted must be true).",
    ]
    assert _nodes(lt, {"metadataOptions": {"httpTokens": "required"}}) == [
        "blockDeviceMappings is empty: the root volume's encryption is left to the AMI / account default. Declare "
        "every volume (root included) with ebs.encrypted: true."
    ]


def test_ec2_node_class_imds_and_encryption_messages():
    """An EC2NodeClass defaults httpTokens to required (the CRD's default), so only an explicit other value is
    refused; its mappings live under spec."""
    nc = common.EC2_NODE_CLASS
    assert _nodes(nc, {"spec": {"blockDeviceMappings": ENCRYPTED}}) == []
    assert (
        _nodes(nc, {"spec": {"metadataOptions": {"httpPutResponseHopLimit": 1}, "blockDeviceMappings": ENCRYPTED}})
        == []
    )
    assert _nodes(nc, {"spec": {"metadataOptions": {"httpTokens": "optional"}}}) == [
        "EC2NodeClass sets spec.metadataOptions.httpTokens: 'optional'; use required.",
        "spec.blockDeviceMappings is empty: the root volume's encryption is left to the AMI / account default. "
        "Declare every volume (root included) with ebs.encrypted: true.",
    ]
    assert _nodes(
        nc, {"spec": {"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"encrypted": False}}]}}
    ) == ["spec.blockDeviceMappings[/dev/xvda]: EBS volume is not encrypted (ebs.encrypted must be true)."]
    assert _nodes(common.EKS_NODE_GROUP, {}) == []


# ----------------------------------------------------------------------------------- gke-gpu-node-hardening


def test_gke_gpu_node_hardening_messages():
    """A GKE GPU pool without secure boot or GKE_METADATA gets each finding, naming why it is a GPU pool; a CPU
    pool is not judged."""
    p = security_policies.gke_gpu_node_hardening
    gpu = {"nodeConfig": {"machineType": "g2-standard-8"}}
    assert check(p, common.GKE_NODE_POOL, gpu) == [
        "GKE GPU pool (machine type g2-standard-8) does not enable secure boot (nodeConfig.shieldedInstanceConfig."
        "enableSecureBoot). GKE-installed drivers are signed; only operator-compiled drivers need it off.",
        "GKE GPU pool (machine type g2-standard-8) exposes the node's metadata server to pods (workloadMetadataConfig"
        ".mode is None); use GKE_METADATA (Workload Identity) so pods cannot use the node's service account.",
    ]
    good = {
        "nodeConfig": {
            "machineType": "g2-standard-8",
            "shieldedInstanceConfig": {"enableSecureBoot": True},
            "workloadMetadataConfig": {"mode": "GKE_METADATA"},
        }
    }
    assert check(p, common.GKE_NODE_POOL, good) == []
    assert check(p, common.GKE_NODE_POOL, {"nodeConfig": {"machineType": "n2-standard-8"}}) == []
    assert check(p, common.EKS_NODE_GROUP, gpu) == []


# ----------------------------------------------------------------------------------- gke-cluster-hardening

HARDENED_GKE = {
    "name": "ml",
    "privateClusterConfig": {"enablePrivateNodes": True, "enablePrivateEndpoint": False},
    "workloadIdentityConfig": {"workloadPool": "p.svc.id.goog"},
    "enableShieldedNodes": True,
    "enableLegacyAbac": False,
    "masterAuthorizedNetworksConfig": {"cidrBlocks": [{"cidrBlock": "203.0.113.0/24"}]},
}


def test_gke_cluster_hardening_accepts_a_hardened_cluster():
    p = security_policies.gke_cluster_hardening
    assert check(p, common.GKE_CLUSTER, HARDENED_GKE) == []
    # a private endpoint needs no authorized networks (only the VPC reaches it)
    private = {**HARDENED_GKE, "privateClusterConfig": {"enablePrivateNodes": True, "enablePrivateEndpoint": True}}
    del private["masterAuthorizedNetworksConfig"]
    assert check(p, common.GKE_CLUSTER, private) == []
    assert check(p, common.GKE_NODE_POOL, {}) == []  # judges clusters only


def test_gke_cluster_hardening_messages():
    """Each open setting is one finding, in the order a reader checks them: nodes, identity, boot, RBAC, credentials,
    endpoint."""
    p = security_policies.gke_cluster_hardening
    open_ = {
        "name": "ml",
        "enableShieldedNodes": False,
        "enableLegacyAbac": True,
        "masterAuth": {"clientCertificateConfig": {"issueClientCertificate": True}},
    }
    assert check(p, common.GKE_CLUSTER, open_) == [
        "GKE cluster ml: its nodes get public IP addresses (privateClusterConfig.enablePrivateNodes is not true).",
        "GKE cluster ml: it has no Workload Identity (workloadIdentityConfig.workloadPool): pods would use the "
        "node's account.",
        "GKE cluster ml: its nodes are not shielded (enableShieldedNodes: false): no verified boot or node identity.",
        "GKE cluster ml: legacy ABAC is on (enableLegacyAbac): it grants permissions around RBAC.",
        "GKE cluster ml: it issues a client certificate (masterAuth), a credential that cannot be revoked.",
        "GKE cluster ml: its public endpoint takes connections from any address (no masterAuthorizedNetworksConfig).",
    ]
    world = {**HARDENED_GKE, "masterAuthorizedNetworksConfig": {"cidrBlocks": [{"cidrBlock": "0.0.0.0/0"}]}}
    assert check(p, common.GKE_CLUSTER, world) == [
        "GKE cluster ml: its public endpoint's authorized networks include the whole internet (a /0 block)."
    ]
    google = {**HARDENED_GKE, "masterAuthorizedNetworksConfig": {"gcpPublicCidrsAccessEnabled": True}}
    assert check(p, common.GKE_CLUSTER, google) == [
        "GKE cluster ml: its public endpoint admits every Google Cloud public address (gcpPublicCidrsAccessEnabled)."
    ]


# ----------------------------------------------------------------------------------- namespace-pod-security


def _ns(name: str, config: dict | None = None, **labels: str) -> list[str]:
    doc = k8s("v1", "Namespace", name, metadata={"labels": labels})[2]
    return check(security_policies.namespace_pod_security, common.NAMESPACE, doc, config)


ENFORCE = "pod-security.kubernetes.io/enforce"


def test_namespace_pod_security_messages():
    """Exact messages for a tenant below baseline and for a privileged namespace that is not an operator's."""
    assert _ns("t", **{"gpu-platform/tenant": "t", ENFORCE: "privileged"}) == [
        "tenant namespace 't' enforces Pod Security level 'privileged'; tenants need "
        "pod-security.kubernetes.io/enforce baseline or restricted."
    ]
    assert _ns("rogue", {"privilegedNamespaces": ["b-ops", "a-ops"]}, **{ENFORCE: "privileged"}) == [
        "namespace 'rogue' is privileged but is not an operator namespace (allowed: a-ops, b-ops, or labels "
        "app.kubernetes.io/managed-by=gpu-platform + gpu-platform/operator-namespace=true)."
    ]


@pytest.mark.parametrize("level", ["baseline", "restricted"])
def test_tenants_at_baseline_or_restricted_pass(level):
    """The two Pod Security levels that forbid privileged pods are both fine for a tenant."""
    assert _ns("t", **{"gpu-platform/tenant": "t", ENFORCE: level}) == []


@pytest.mark.parametrize("level", [None, "privileged", "Baseline"])
def test_tenants_below_baseline_are_refused(level):
    """No enforce label, privileged, or a mis-cased level (Kubernetes level names are lower case) is refused."""
    labels = {"gpu-platform/tenant": "t", **({ENFORCE: level} if level else {})}
    assert _ns("t", **labels) == [
        f"tenant namespace 't' enforces Pod Security level {level!r}; tenants need "
        "pod-security.kubernetes.io/enforce baseline or restricted."
    ]


def test_non_tenant_namespaces_below_privileged_are_not_judged():
    """Only the privileged level is restricted to operators; other namespaces at any lower level pass."""
    for labels in ({}, {ENFORCE: "baseline"}, {ENFORCE: "restricted"}, {"gpu-platform/tenant": ""}):
        assert _ns("x", **labels) == [], labels


def test_a_privileged_tenant_is_reported_once_even_if_allow_listed():
    """A tenant namespace is judged as a tenant (one finding), never let through by the operator allow-list."""
    labels = {"gpu-platform/tenant": "t", ENFORCE: "privileged"}
    assert len(_ns("t", {"privilegedNamespaces": ["t"]}, **labels)) == 1


def test_the_operator_marker_needs_both_labels_with_exact_values():
    """Only managed-by=gpu-platform together with operator-namespace=true marks an operator namespace."""
    marker = {"app.kubernetes.io/managed-by": "gpu-platform", "gpu-platform/operator-namespace": "true"}
    assert _ns("ops", **{ENFORCE: "privileged"}, **marker) == []
    for key, wrong in (("app.kubernetes.io/managed-by", "helm"), ("gpu-platform/operator-namespace", "True")):
        assert len(_ns("ops", **{ENFORCE: "privileged"}, **{**marker, key: wrong})) == 1, key


def test_namespace_pod_security_reads_namespaces_only():
    """Pod Security labels only act on Namespaces; the same labels on another object are not judged."""
    labels = {"gpu-platform/tenant": "t", ENFORCE: "privileged"}
    doc = k8s("v1", "ConfigMap", "t", metadata={"labels": labels})[2]
    assert check(security_policies.namespace_pod_security, "kubernetes:core/v1:ConfigMap", doc) == []


def test_default_privileged_namespaces_are_the_operator_chart_namespaces():
    """Without config the GPU Operator's and dcgm-exporter's namespaces may be privileged, nothing else."""
    for name in {common.GPU_OPERATOR_CHART["namespace"], common.DCGM_EXPORTER_CHART["namespace"]}:
        assert _ns(name, **{ENFORCE: "privileged"}) == [], name
    assert len(_ns("default", **{ENFORCE: "privileged"})) == 1


# ----------------------------------------------------------------------------------- iam-no-admin-wildcard


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ({"Effect": "Allow", "Action": "*", "Resource": "*"}, ["Statement[0] allows Action * on every resource"]),
        ({"Action": "*:*", "Resource": ["*"]}, ["Statement[0] allows Action * on every resource"]),  # Allow default
        ({"Sid": "All", "Action": "*", "NotResource": "arn:x"}, ["All allows Action * on every resource"]),
        (
            {"Effect": "Allow", "NotAction": ["iam:*", "organizations:*"], "Resource": "*"},
            ["Statement[0] allows every action except iam:*, organizations:* on Resource *"],
        ),
        ({"Effect": "Allow", "NotAction": "iam:*", "NotResource": "arn:x"}, []),  # not on Resource *
        ({"Effect": "Deny", "Action": "*", "Resource": "*"}, []),
        ({"Effect": "Allow", "Action": "s3:*", "Resource": "*"}, []),
        ({"Effect": "Allow", "Action": "*", "Resource": "arn:aws:s3:::b"}, []),
        ({"Effect": "Allow", "Action": ["*"]}, []),  # no resource at all
    ],
)
def test_admin_statements(statement, expected):
    """IAM: an Allow (the default Effect) of every action (* or *:*) on every resource (Resource * or any
    NotResource), or NotAction on Resource *, is administrator access; anything narrower is not."""
    assert security_policies.admin_statements({"Statement": [statement]}) == expected


def test_admin_statements_label_by_sid_or_index_and_accept_a_single_statement():
    """Findings name the statement by Sid, else by its index; a lone statement object is read as a list of one."""
    doc = {"Statement": [{"Action": "s3:GetObject", "Resource": "*"}, {"Action": "*", "Resource": "*"}]}
    assert security_policies.admin_statements(doc) == ["Statement[1] allows Action * on every resource"]
    assert security_policies.admin_statements({"Statement": {"Sid": "S", "Action": "*", "Resource": "*"}}) == [
        "S allows Action * on every resource"
    ]
    assert security_policies.admin_statements({}) == []
    deny_first = {"Statement": [{"Effect": "Deny", "Action": "*", "Resource": "*"}, {"Action": "*", "Resource": "*"}]}
    assert security_policies.admin_statements(deny_first) == ["Statement[1] allows Action * on every resource"]


def test_iam_no_admin_wildcard_messages_per_resource_type():
    """Each IAM policy type reads its `policy`, a Role its inlinePolicies (named, else indexed); the message says
    where and why."""
    p = security_policies.iam_no_admin_wildcard
    admin = json.dumps({"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})
    finding = (
        "Statement[0] allows Action * on every resource; that is administrator access. Scope actions and resources."
    )
    for type_ in (common.IAM_POLICY, common.IAM_ROLE_POLICY, common.IAM_USER_POLICY, common.IAM_GROUP_POLICY):
        assert check(p, type_, {"policy": admin}) == [f"policy: {finding}"], type_
    role = {"inlinePolicies": [{"policy": admin}, {"name": "ok", "policy": "{}"}, {"name": "x", "policy": admin}]}
    assert check(p, common.IAM_ROLE, role) == [f"inlinePolicies[0]: {finding}", f"inlinePolicies[x]: {finding}"]
    assert check(p, common.IAM_POLICY, {"policy": "{"}) == ["policy is not a JSON policy document"]
    # one unreadable or non-document inline policy does not stop the others being judged
    mixed = {"inlinePolicies": [{"name": "bad", "policy": "{"}, {"name": "list", "policy": "[1]"}, {"policy": admin}]}
    assert check(p, common.IAM_ROLE, mixed) == [
        "inlinePolicies[bad] is not a JSON policy document",
        f"inlinePolicies[2]: {finding}",
    ]
    assert check(p, common.IAM_POLICY, {"policy": "[1]"}) == []  # JSON, but no document to judge
    assert check(p, common.IAM_ROLE, {"policy": admin}) == []  # a Role's own field is not read
    assert check(p, common.NAMESPACE, {"policy": admin}) == []


# ------------------------------------------------------------------------------------ eks-cluster-hardening

CLUSTER = {
    "name": "c",
    "encryptionConfig": {"provider": {"keyArn": "arn:k"}, "resources": ["secrets"]},
    "enabledClusterLogTypes": ["api", "audit", "authenticator", "controllerManager", "scheduler"],
    "vpcConfig": {"endpointPublicAccess": True, "publicAccessCidrs": ["203.0.113.0/24"], "subnetIds": ["s"]},
}


def _eks(**changes: Any) -> list[str]:
    return check(security_policies.eks_cluster_hardening, common.EKS_CLUSTER, {**CLUSTER, **changes})


def test_a_hardened_cluster_passes_and_a_private_one_needs_no_cidrs():
    assert _eks() == []
    assert _eks(vpcConfig={"endpointPublicAccess": False, "endpointPrivateAccess": True}) == []


def test_eks_cluster_hardening_messages():
    """EKS's defaults fail all three: no encryptionConfig, no logs, the endpoint public to everyone when
    endpointPublicAccess and publicAccessCidrs are left out."""
    bare = {"name": "c", "vpcConfig": {"subnetIds": ["s"]}}
    assert check(security_policies.eks_cluster_hardening, common.EKS_CLUSTER, bare) == [
        "EKS cluster c: Secrets are not envelope-encrypted (encryptionConfig.resources lacks 'secrets' with a KMS "
        "key).",
        "EKS cluster c: control-plane logs api, audit, authenticator are off (enabledClusterLogTypes).",
        "EKS cluster c: the public API endpoint is open to every address (vpcConfig.publicAccessCidrs empty or "
        "0.0.0.0/0); name the networks that may reach it, or turn endpointPublicAccess off.",
    ]


@pytest.mark.parametrize("cidrs", [["0.0.0.0/0"], ["10.0.0.0/8", "0.0.0.0/0"], []])
def test_an_open_public_endpoint_is_refused(cidrs):
    got = _eks(vpcConfig={"endpointPublicAccess": True, "publicAccessCidrs": cidrs})
    assert len(got) == 1 and "open to every address" in got[0]


def test_the_required_logs_are_configurable():
    logs = {"enabledClusterLogTypes": ["audit"]}
    assert _eks(**logs) == ["EKS cluster c: control-plane logs api, authenticator are off (enabledClusterLogTypes)."]
    assert (
        check(
            security_policies.eks_cluster_hardening,
            common.EKS_CLUSTER,
            {**CLUSTER, **logs},
            {"requiredLogTypes": ["audit"]},
        )
        == []
    )


def test_other_resources_are_not_eks_clusters():
    assert check(security_policies.eks_cluster_hardening, common.IAM_ROLE, {"name": "r"}) == []
