"""Cluster Autoscaler for EKS managed node groups (issue 10 §1): chart, values, IAM, identity, placement, the
ProvisioningRequest CRD, the GPU label, and when it is installed.

Upstream facts the expectations below are written from (not from the code under test):

- upstream/cluster-autoscaler/iam-actions.json: the AWS README's "Full Cluster Autoscaler Features
  Policy (Recommended)" (README lines 34-69): nine read actions on "*", and SetDesiredCapacity /
  TerminateInstanceInAutoScalingGroup, the block upstream says to restrict "using tag based conditionals".
- EKS tags every managed node group's Auto Scaling group k8s.io/cluster-autoscaler/enabled=true and
  k8s.io/cluster-autoscaler/<cluster>=owned (EKS user guide, "Managed node groups").
- cluster-autoscaler 1.35.0 config/flags/flags.go: the flag names passed as extraArgs.
- cloudprovider/aws/aws_cloud_provider.go (1.35.0): GPULabel = "k8s.amazonaws.com/accelerator"; README
  "Special note on GPU instances": the label is set on the node through kubelet --node-labels.
"""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import HELM_RELEASE, UPSTREAM, render_config, rendered, stack_config
from values_paths import unknown_paths

from components.cli.loader import load_spec
from components.data import versions
from components.plan.aws import managed_pools as plan, plan as aws_plan
from components.render.aws import cluster_autoscaler as ca
from components.spec.model import SpecError

POLICY = "aws:iam/policy:Policy"
ROLE = "aws:iam/role:Role"
POD_IDENTITY = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"


def _release(r):
    (rel,) = [x for x in r.of_type(HELM_RELEASE) if x.name == "cluster-autoscaler"]
    return rel


def _policy(r) -> dict:
    (p,) = [x for x in r.of_type(POLICY) if x.parent == "cluster-autoscaler"]
    return json.loads(p.inputs["policy"])


# ------------------------------------------------------------------------------------------ installed when


@pytest.mark.parametrize(("stack", "expected"), [("dev-aws", True), ("prod-aws", True), ("dev-gcp", False)])
def test_installed_whenever_an_aws_stack_has_managed_pools(stack, expected):
    r = rendered(stack)
    assert bool([x for x in r.of_type(HELM_RELEASE) if x.name == "cluster-autoscaler"]) is expected
    assert bool(r.of_type(CRD)) is expected


def test_switch_off_and_karpenter_only_stacks_install_nothing():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:addons"]["clusterAutoscaler"] = False
    cfg["gpu-platform:nodePools"][0]["minNodes"] = 1  # at 0 the rule refuses it (test_spec_errors)
    r = render_config(cfg)
    assert not [x for x in r.of_type(HELM_RELEASE) if x.name == "cluster-autoscaler"]
    assert not [x for x in r.of_type(POLICY) if x.parent == "cluster-autoscaler"]
    from components.cli import synth

    summary = synth.files(r)["summary.md"]
    assert "| l4-shared | nobody: fixed at 1 node(s) (addons.clusterAutoscaler is off) | - |" in summary
    cfg = stack_config("dev-aws")
    del cfg["gpu-platform:nodePools"][0]
    cfg["gpu-platform:tenants"][0]["gpuQuota"] = {"a10g-spot": 8}
    assert load_spec(cfg).cluster_autoscaler_enabled is False


# ----------------------------------------------------------------------------------------------- chart


def test_chart_pinned_from_the_official_repository():
    rel = _release(rendered("prod-aws")).inputs
    assert rel["chart"] == "cluster-autoscaler"
    assert rel["version"] == "9.59.0"
    assert rel["repositoryOpts"] == {"repo": "https://kubernetes.github.io/autoscaler"}
    assert rel["namespace"] == "kube-system"


def test_chart_pin_matches_the_upstream_chart():
    chart = yaml.safe_load((UPSTREAM / "cluster-autoscaler" / "Chart.yaml").read_text())
    assert (chart["name"], chart["version"], chart["appVersion"]) == ("cluster-autoscaler", "9.59.0", "1.35.0")
    assert versions.CLUSTER_AUTOSCALER.version == chart["version"]


# Flags of cluster-autoscaler 1.35.0 (config/flags/flags.go) the platform may pass through extraArgs, which the
# chart renders as --key=value (templates/deployment.yaml); extraArgs is free-form in values.yaml.
CA_135_FLAGS = {
    "expander",
    "balance-similar-node-groups",
    "skip-nodes-with-local-storage",
    "scale-down-unneeded-time",
    "scale-down-delay-after-add",
    "max-node-provision-time",
    "enable-provisioning-requests",
    "kube-api-content-type",
    "logtostderr",
    "stderrthreshold",
    "v",
}


@pytest.mark.parametrize("identity", ["pod-identity", "irsa"])
def test_values_exist_in_the_upstream_chart(identity):
    upstream = yaml.safe_load((UPSTREAM / "cluster-autoscaler" / "values.yaml").read_text())
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:karpenter"] = {"identity": identity}
    values = ca.helm_values(aws_plan.build(load_spec(cfg)), "arn:aws:iam::1:role/x")
    args = values.pop("extraArgs")
    assert unknown_paths(values, upstream) == []
    assert set(args) <= CA_135_FLAGS
    assert all(isinstance(v, str) for v in args.values())  # rendered verbatim into --key=value


def test_autodiscovery_by_the_tags_eks_puts_on_managed_node_groups():
    values = yaml.safe_load(json.dumps(_release(rendered("prod-aws")).inputs["values"]))
    assert values["cloudProvider"] == "aws"
    assert values["awsRegion"] == "us-east-1"
    assert values["autoDiscovery"] == {
        "clusterName": "ml-prod",
        "tags": ["k8s.io/cluster-autoscaler/enabled", "k8s.io/cluster-autoscaler/ml-prod", "gpu-platform/pool"],
    }
    # and every managed node group carries both tags, so nothing depends on EKS alone
    for ng in rendered("prod-aws").of_type(NODE_GROUP):
        tags = ng.inputs["tags"]
        assert tags["k8s.io/cluster-autoscaler/enabled"] == "true"
        assert tags["k8s.io/cluster-autoscaler/ml-prod"] == "owned"


def test_the_autoscaler_discovers_only_the_platforms_own_node_groups():
    """EKS tags the Auto Scaling group of every managed node group with the two cluster-autoscaler keys, the
    cluster's system group too; discovery also needs the pool tag, which an autoscaling.Tag puts on the group of
    each of the stack's pools (and nothing else), and the chart ANDs the keys (templates/deployment.yaml joins
    autoDiscovery.tags into one asg:tag= list, every key of which a group must carry)."""
    import tarfile

    from conftest import ROOT

    with tarfile.open(ROOT / "upstream" / "charts" / "cluster-autoscaler-9.59.0.tgz") as tar:
        template = tar.extractfile("cluster-autoscaler/templates/deployment.yaml").read().decode()
    assert 'asg:tag={{ tpl (join "," .Values.autoDiscovery.tags) . }}' in template
    r = rendered("prod-aws")
    groups = {ng.name for ng in r.of_type(NODE_GROUP)}
    tags = {t.name: t.inputs for t in r.of_type("aws:autoscaling/tag:Tag")}
    assert set(tags) == {f"{g}-asg-pool-tag" for g in groups}
    for g in groups:
        assert tags[f"{g}-asg-pool-tag"]["tag"] == {"key": "gpu-platform/pool", "value": g, "propagateAtLaunch": False}
        assert tags[f"{g}-asg-pool-tag"]["autoscalingGroupName"].startswith("eks-")


def test_gpu_and_gang_settings():
    args = _release(rendered("prod-aws")).inputs["values"]["extraArgs"]
    assert args["enable-provisioning-requests"] == "true"  # FAQ "Enabling ProvisioningRequest Support" step 2
    assert args["kube-api-content-type"] == "application/json"  # step 3
    assert args["skip-nodes-with-local-storage"] == "false"  # emptyDir /dev/shm must not pin idle GPU nodes
    assert args["expander"] == "least-waste"
    assert args["balance-similar-node-groups"] == "true"


def test_runs_on_system_nodes_never_on_gpu_nodes():
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:systemNodeSelector"] = {"node-role": "system"}
    values = ca.helm_values(aws_plan.build(load_spec(cfg)))
    assert values["nodeSelector"] == {"kubernetes.io/os": "linux", "node-role": "system"}
    assert all(t.get("key") != "nvidia.com/gpu" for t in values["tolerations"])
    assert values["tolerations"] == [{"key": "CriticalAddonsOnly", "operator": "Exists"}]
    terms = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert {"key": "gpu-platform/pool", "operator": "DoesNotExist"} in terms[0]["matchExpressions"]
    assert values["securityContext"]["runAsNonRoot"] is True
    assert values["containerSecurityContext"]["allowPrivilegeEscalation"] is False


# ------------------------------------------------------------------------------------------------- IAM

# Statement by statement, as data. Actions: the upstream policy (iam-actions.json fullFeaturesPolicy).
EXPECTED_STATEMENTS = [
    {
        "Sid": "DescribeForAutoDiscovery",
        "Effect": "Allow",
        "Action": [
            "autoscaling:DescribeAutoScalingGroups",
            "autoscaling:DescribeAutoScalingInstances",
            "autoscaling:DescribeLaunchConfigurations",
            "autoscaling:DescribeScalingActivities",
            "ec2:DescribeImages",
            "ec2:DescribeInstanceTypes",
            "ec2:DescribeLaunchTemplateVersions",
            "ec2:GetInstanceTypesFromInstanceRequirements",
            "eks:DescribeNodegroup",
        ],
        "Resource": "*",
    },
    {
        "Sid": "ScaleThisClustersNodeGroups",
        "Effect": "Allow",
        "Action": ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"],
        "Resource": "*",
        "Condition": {
            "StringEquals": {
                "aws:ResourceTag/k8s.io/cluster-autoscaler/ml-prod": "owned",
                "aws:ResourceTag/k8s.io/cluster-autoscaler/enabled": "true",
            },
            # the pool tag must exist: the cluster's other node groups (EKS tags them all) stay out of reach
            "Null": {"aws:ResourceTag/gpu-platform/pool": "false"},
        },
    },
]


def test_policy_statement_by_statement():
    doc = _policy(rendered("prod-aws"))
    assert doc["Version"] == "2012-10-17"
    assert doc["Statement"] == EXPECTED_STATEMENTS


def test_policy_grants_exactly_the_upstream_auto_discovery_actions():
    upstream = json.loads((UPSTREAM / "cluster-autoscaler" / "iam-actions.json").read_text())
    read, mutating = upstream["fullFeaturesPolicy"]["statements"]
    doc = _policy(rendered("prod-aws"))
    by_sid = {s["Sid"]: s for s in doc["Statement"]}
    assert sorted(by_sid["DescribeForAutoDiscovery"]["Action"]) == sorted(read["Action"])
    assert sorted(by_sid["ScaleThisClustersNodeGroups"]["Action"]) == sorted(mutating["Action"])
    # only reads are unconditioned; every other action sits under this cluster's tag
    for s in doc["Statement"]:
        if "Condition" not in s:
            assert all(a.split(":")[1].startswith("Describe") or a.startswith("ec2:Get") for a in s["Action"])


# -------------------------------------------------------------------------------------------- identity


def test_pod_identity_by_default():
    r = rendered("prod-aws")
    (assoc,) = [x for x in r.of_type(POD_IDENTITY) if x.parent == "cluster-autoscaler"]
    assert assoc.inputs["namespace"] == "kube-system"
    assert assoc.inputs["serviceAccount"] == "cluster-autoscaler"
    assert assoc.inputs["clusterName"] == "ml-prod"
    assert assoc.inputs["region"] == "us-east-1"
    (role,) = [x for x in r.of_type(ROLE) if x.name == "cluster-autoscaler-role"]
    (stmt,) = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
    assert stmt["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert stmt["Condition"]["StringEquals"] == {
        "aws:RequestTag/eks-cluster-name": "ml-prod",
        "aws:RequestTag/kubernetes-namespace": "kube-system",
        "aws:RequestTag/kubernetes-service-account": "cluster-autoscaler",
    }
    values = _release(r).inputs["values"]
    assert values["rbac"]["serviceAccount"]["name"] == "cluster-autoscaler"
    assert "annotations" not in values["rbac"]["serviceAccount"]
    # the release waits for its permissions and its identity
    assert {"cluster-autoscaler-policy-attachment", "cluster-autoscaler-pod-identity"} <= set(_release(r).depends_on)


def test_irsa_when_karpenter_identity_says_so():
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:karpenter"] = {"identity": "irsa"}
    r = render_config(cfg)
    assert not [x for x in r.of_type(POD_IDENTITY) if x.parent == "cluster-autoscaler"]
    (role,) = [x for x in r.of_type(ROLE) if x.name == "cluster-autoscaler-role"]
    (stmt,) = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
    assert stmt["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert "oidc-provider/" in stmt["Principal"]["Federated"]
    assert [v for k, v in stmt["Condition"]["StringEquals"].items() if k.endswith(":sub")] == [
        "system:serviceaccount:kube-system:cluster-autoscaler"
    ]
    annotations = _release(r).inputs["values"]["rbac"]["serviceAccount"]["annotations"]
    assert list(annotations) == ["eks.amazonaws.com/role-arn"]


# ------------------------------------------------------------------------------ ProvisioningRequest CRD


def test_provisioning_request_crd_is_installed_before_kueue_and_the_autoscaler():
    r = rendered("prod-aws")
    (crd,) = r.of_type(CRD)
    assert crd.inputs["metadata"]["name"] == "provisioningrequests.autoscaling.x-k8s.io"
    spec = crd.inputs["spec"]
    assert spec["group"] == "autoscaling.x-k8s.io"
    assert spec["names"]["kind"] == "ProvisioningRequest"
    assert [v["name"] for v in spec["versions"] if v.get("storage")] == ["v1"]
    assert crd.name in _release(r).depends_on
    # Kueue sets up its ProvisioningRequest admission check only if the API exists when it starts
    (kueue,) = [x for x in r.of_type(HELM_RELEASE) if x.name == "kueue"]
    assert crd.name in kueue.depends_on


# ----------------------------------------------------------------------------------- GPU node label


@pytest.mark.parametrize(
    ("stack", "pool", "value"),
    [
        ("prod-aws", "a100-train", "nvidia-tesla-a100"),  # in the autoscaler's availableGPUTypes
        ("prod-aws", "l4-notebooks", "nvidia-l4"),
        ("dev-aws", "l4-shared", "nvidia-l4"),
    ],
)
def test_gpu_nodes_carry_the_accelerator_label_and_its_template_tag(stack, pool, value):
    (ng,) = [x for x in rendered(stack).of_type(NODE_GROUP) if x.name == pool]
    assert ng.inputs["labels"]["k8s.amazonaws.com/accelerator"] == value
    assert ng.inputs["tags"]["k8s.io/cluster-autoscaler/node-template/label/k8s.amazonaws.com/accelerator"] == value


def test_no_accelerator_label_where_nodes_advertise_no_nvidia_gpu():
    """gpu_processor.go (1.35.0): a node with the GPU label but no GPU allocatable is "unready" to the
    autoscaler; a mixed-MIG node (nvidia.com/mig-* only) would be so forever."""
    (ng,) = [x for x in rendered("prod-aws").of_type(NODE_GROUP) if x.name == "h100-inference"]
    assert "k8s.amazonaws.com/accelerator" not in ng.inputs["labels"]
    assert not [k for k in ng.inputs["tags"] if k.endswith("/label/k8s.amazonaws.com/accelerator")]
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"][0]["sharing"]["renameByDefault"] = True  # advertises nvidia.com/gpu.shared
    spec = load_spec(cfg)
    assert "k8s.amazonaws.com/accelerator" not in plan.labels(spec, spec.pool("l4-shared"))


def test_template_tags_follow_the_readme_formats():
    """README "Auto-Discovery Setup": label tags key .../label/<name> = value, taints .../taint/<key> =
    <value>:<effect>, resources .../resources/<name> = quantity."""
    spec = rendered("prod-aws").spec
    tags = plan.autoscaler_tags(spec, spec.pool("l4-notebooks"))
    prefix = "k8s.io/cluster-autoscaler/node-template"
    assert tags[f"{prefix}/taint/nvidia.com/gpu"] == "present:NoSchedule"
    assert tags[f"{prefix}/resources/nvidia.com/gpu"] == "16"  # 4 L4 x time-slicing 4
    assert tags[f"{prefix}/label/gpu-platform/pool"] == "l4-notebooks"


def test_karpenter_nodes_do_not_get_the_autoscaler_label():
    r = rendered("prod-aws")
    for np in [m for m in r.manifests if m["kind"] == "NodePool"]:
        assert "k8s.amazonaws.com/accelerator" not in np["spec"]["template"]["metadata"]["labels"]


def test_summary_says_who_scales_each_pool():
    from components.cli import synth

    text = synth.files(rendered("prod-aws"))["summary.md"]
    assert (
        "| a100-train | Cluster Autoscaler (chart 9.59.0), EKS managed node group | `a100-train-atomic` "
        "(best-effort-atomic-scale-up.autoscaling.x-k8s.io) |" in text
    )
    assert "| h100-spot | Karpenter, for pending pods | - |" in text
    assert "`k8s.amazonaws.com/accelerator=nvidia-tesla-a100`" in text


def test_helm_values_whole_document():
    """Every value of the chart for dev-aws with pod identity (no service-account annotation): the flags with
    their reasons (module docstring of cluster_autoscaler.py, FAQ defaults stated explicitly), system nodes only,
    a restricted container (non-root nobody, no privilege escalation, no capabilities, read-only root, runtime
    seccomp), two replicas under leader election, memory limit = request, system-cluster-critical priority."""
    values = ca.helm_values(aws_plan.build(load_spec(stack_config("dev-aws"))))
    assert values == {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "gpu-platform/pool", "operator": "DoesNotExist"},
                                {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"},
                            ]
                        }
                    ]
                }
            }
        },
        "autoDiscovery": {
            "clusterName": "ml-dev",
            "tags": ["k8s.io/cluster-autoscaler/enabled", "k8s.io/cluster-autoscaler/ml-dev", "gpu-platform/pool"],
        },
        "image": {"tag": "v1.35.2"},  # no version known to helm_values alone: the chart's minor, newest patch
        "awsRegion": "us-east-1",
        "cloudProvider": "aws",
        "containerSecurityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
        },
        "extraArgs": {
            "expander": "least-waste",
            "balance-similar-node-groups": "true",
            "skip-nodes-with-local-storage": "false",
            "scale-down-unneeded-time": "10m",
            "scale-down-delay-after-add": "10m",
            "max-node-provision-time": "25m",
            "enable-provisioning-requests": "true",
            "kube-api-content-type": "application/json",
        },
        "fullnameOverride": "cluster-autoscaler",
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "priorityClassName": "system-cluster-critical",
        "rbac": {"serviceAccount": {"create": True, "name": "cluster-autoscaler"}},
        "replicaCount": 2,
        "resources": {"limits": {"memory": "600Mi"}, "requests": {"cpu": "100m", "memory": "600Mi"}},
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 65534,
            "runAsGroup": 65534,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
    }


def test_role_and_policy_names_descriptions_and_tags():
    """The role and its one policy are both named <cluster>-cluster-autoscaler (the name the rules bound to 64
    characters), described for a console reader, and tagged with the stack's tags plus managed-by."""
    r = rendered("prod-aws")
    tags = {"cost-center": "ml-4711", "environment": "prod", "managed-by": "gpu-platform", "team": "ml-platform"}
    (role,) = [x for x in r.of_type(ROLE) if x.name == "cluster-autoscaler-role"]
    (policy,) = [x for x in r.of_type(POLICY) if x.parent == "cluster-autoscaler"]
    assert role.parent == "cluster-autoscaler"
    assert (role.inputs["name"], role.inputs["description"], role.inputs["tags"]) == (
        "ml-prod-cluster-autoscaler",
        "Cluster Autoscaler of EKS cluster ml-prod (gpu-platform)",
        tags,
    )
    assert (policy.name, policy.inputs["name"], policy.inputs["description"], policy.inputs["tags"]) == (
        "cluster-autoscaler-policy",
        "ml-prod-cluster-autoscaler",
        "Cluster Autoscaler: scale the managed node groups of EKS cluster ml-prod",
        tags,
    )
    assert ca.role_name(aws_plan.build(load_spec(stack_config("dev-aws")))) == "ml-dev-cluster-autoscaler"


def test_crd_is_labelled_and_the_release_waits_for_it():
    """The ProvisioningRequest CRD carries the managed-by label; the release depends on it and on the policy
    attachment (the autoscaler starts with its API and its permissions in place)."""
    r = rendered("prod-aws")
    (crd,) = r.of_type(CRD)
    assert crd.inputs["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "gpu-platform"}
    assert crd.name == "provisioningrequests-crd"
    assert {"provisioningrequests-crd", "cluster-autoscaler-policy-attachment"} <= set(_release(r).depends_on)


def test_provisioning_request_crd_is_a_fresh_copy_each_time():
    """Callers may change the returned CRD without changing what the next caller (another stack rendered in the
    same process) gets."""
    first = ca.provisioning_request_crd()
    first["spec"]["group"] = "changed.example.com"
    first["metadata"]["name"] = "changed"
    second = ca.provisioning_request_crd()
    assert second["metadata"]["name"] == "provisioningrequests.autoscaling.x-k8s.io"
    assert second["spec"]["group"] == "autoscaling.x-k8s.io"


@pytest.mark.parametrize(
    ("version", "tag"),
    [
        ("1.32", "v1.32.7"),
        ("1.33", "v1.33.6"),
        ("1.34.2", "v1.34.5"),
        ("1.35", "v1.35.2"),
        ("1.36", "v1.35.2"),
        ("1.30", "v1.32.7"),
    ],
)
def test_the_autoscaler_image_follows_the_clusters_minor(version, tag):
    """Upstream supports only the autoscaler release of the cluster's minor: the newest patch of each, by the
    kubernetes/autoscaler tags (cluster-autoscaler-1.32.7 ... -1.35.2); outside the table, the nearest one."""
    from components.data import versions

    assert versions.cluster_autoscaler_image_tag(version) == tag


def test_the_rendered_autoscaler_runs_the_looked_up_clusters_minor():
    """dev-aws names no Kubernetes version: the tag comes from the EKS lookup (the synth answers 1.33); a stack
    that names its version gets that minor's release without a lookup."""
    values = _release(rendered("dev-aws")).inputs["values"]
    assert values["image"] == {"tag": "v1.33.6"}
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:cluster"] = {**cfg["gpu-platform:cluster"], "kubernetesVersion": "1.34"}
    assert ca.helm_values(aws_plan.build(load_spec(cfg)))["image"] == {"tag": "v1.34.5"}


def test_a_stack_naming_a_minor_without_a_pinned_autoscaler_is_refused():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:cluster"] = {**cfg["gpu-platform:cluster"], "kubernetesVersion": "1.36"}
    with pytest.raises(SpecError) as err:
        load_spec(cfg)
    assert [(p.path, p.message) for p in err.value.problems] == [
        (
            "gpu-platform:cluster.kubernetesVersion",
            "no Cluster Autoscaler release is pinned for Kubernetes 1.36 (upstream supports only the matching "
            "minor; pinned: 1.32, 1.33, 1.34, 1.35)",
        )
    ]
