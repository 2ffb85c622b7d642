"""Karpenter on EKS: the controller install, its IAM, interruption handling, and the GPU EC2NodeClasses and
NodePools -- checked against the shipped stacks, the upstream chart values and CRD schemas (v1.14.1), and
the event kinds / IAM statements of upstream's getting-started CloudFormation template."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
import yaml
from conftest import HELM_RELEASE, UPSTREAM, release, render_config, rendered, stack_config

from components.cli.loader import SpecError, load_spec
from components.data import versions
from components.plan import derive
from components.render.aws import iam_karpenter, karpenter

NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
ROLE = "aws:iam/role:Role"
POLICY = "aws:iam/policy:Policy"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
QUEUE = "aws:sqs/queue:Queue"
QUEUE_POLICY = "aws:sqs/queuePolicy:QueuePolicy"
RULE = "aws:cloudwatch/eventRule:EventRule"
TARGET = "aws:cloudwatch/eventTarget:EventTarget"
ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"
POD_IDENTITY = "aws:eks/podIdentityAssociation:PodIdentityAssociation"

# The five EventBridge rules of Karpenter's v1.14 getting-started CloudFormation template
# (ScheduledChangeRule, SpotInterruptionRule, RebalanceRule, InstanceStateChangeRule,
# CapacityReservationInterruptionRule), written out from the template, not from the code.
UPSTREAM_EVENTS = {
    ("aws.health", "AWS Health Event"),
    ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    ("aws.ec2", "EC2 Instance State-change Notification"),
    ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
}


def _nodepools(r) -> dict[str, dict[str, Any]]:
    return {x.inputs["metadata"]["name"]: x.inputs for x in r.of_type(NODEPOOL)}


def _nodeclasses(r) -> dict[str, dict[str, Any]]:
    return {x.inputs["metadata"]["name"]: x.inputs for x in r.of_type(NODECLASS)}


def _policies(r) -> dict[str, dict[str, Any]]:
    """Karpenter's own policies (the Cluster Autoscaler's are tested in test_cluster_autoscaler.py)."""
    return {x.name: json.loads(x.inputs["policy"]) for x in r.of_type(POLICY) if x.parent == "karpenter"}


def _statements(r) -> list[dict[str, Any]]:
    return [s for doc in _policies(r).values() for s in doc["Statement"]]


def _as_list(v: Any) -> list[str]:
    return v if isinstance(v, list) else [v]


def _spec(stack: str, **changes: Any):
    cfg = stack_config(stack)
    cfg.update(changes)
    return load_spec(cfg)


def _problems(cfg: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(SpecError) as exc:
        load_spec(cfg)
    return {p.path: p.message for p in exc.value.problems}


# --------------------------------------------------------------------------------------- controller


@pytest.mark.parametrize("stack", ["dev-aws", "prod-aws"])
def test_controller_release_is_pinned_with_crds_as_their_own_release(stack):
    r = rendered(stack)
    main = release(r, "karpenter")
    crds = release(r, "karpenter-crd")
    assert (main["chart"], main["version"]) == ("oci://public.ecr.aws/karpenter/karpenter", "1.14.1")
    assert (crds["chart"], crds["version"]) == ("oci://public.ecr.aws/karpenter/karpenter-crd", "1.14.1")
    assert main["skipCrds"] is True and not crds.get("skipCrds")
    assert "repositoryOpts" not in main  # OCI: the registry is in the chart reference
    # kube-system: the namespace Karpenter's API Priority and Fairness FlowSchemas cover
    assert main["namespace"] == crds["namespace"] == "kube-system"
    assert "karpenter-crd" in r.find(HELM_RELEASE, "karpenter").depends_on


def test_pinned_version_is_the_upstream_chart():
    chart = yaml.safe_load((UPSTREAM / "karpenter" / "Chart.yaml").read_text())
    assert versions.KARPENTER.version == versions.KARPENTER_CRD.version == chart["version"] == "1.14.1"


def test_chart_version_override_moves_both_releases():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:charts"] = {"karpenter": {"version": "1.14.2"}, "karpenterCrd": {"version": "1.14.2"}}
    r = render_config(cfg)
    assert release(r, "karpenter")["version"] == release(r, "karpenter-crd")["version"] == "1.14.2"
    # the summary names the version that is deployed, not the pinned default
    spec = load_spec(cfg)
    controller_line = karpenter.summary_lines(spec)[2]
    assert controller_line.startswith("Controller 1.14.2 in `kube-system` ("), controller_line
    assert karpenter.summary_lines(load_spec(stack_config("dev-aws")))[2].startswith("Controller 1.14.1 in ")


def test_controller_settings():
    r = rendered("prod-aws")
    values = release(r, "karpenter")["values"]
    queue = r.find(QUEUE, "karpenter-interruption-queue").inputs
    assert values["settings"]["clusterName"] == "ml-prod"
    # the queue *name* (the controller resolves the URL with sqs:GetQueueUrl)
    assert values["settings"]["interruptionQueue"] == queue["name"] == "ml-prod-karpenter"
    assert values["settings"]["clusterEndpoint"].startswith("https://")
    assert values["serviceAccount"]["name"] == "karpenter"
    assert values["controller"]["resources"] == {
        "requests": {"cpu": "1", "memory": "1Gi"},
        "limits": {"cpu": "1", "memory": "1Gi"},
    }
    assert values["replicas"] == 2


def _tolerates(toleration: dict[str, str], taint) -> bool:
    """Kubernetes toleration matching: an empty key with Exists matches every taint."""
    key = toleration.get("key", "")
    if key and key != taint.key:
        return False
    if toleration.get("effect") and toleration["effect"] != taint.effect:
        return False
    return toleration.get("operator", "Equal") == "Exists" or toleration.get("value") == taint.value


def test_toleration_matcher():
    assert _tolerates({"operator": "Exists"}, derive.GPU_TAINT)
    assert _tolerates({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, derive.GPU_TAINT)
    assert not _tolerates({"key": "CriticalAddonsOnly", "operator": "Exists"}, derive.GPU_TAINT)


@pytest.mark.parametrize("stack", ["dev-aws", "prod-aws"])
def test_controller_never_runs_on_gpu_or_karpenter_nodes(stack):
    values = release(rendered(stack), "karpenter")["values"]
    assert not any(_tolerates(t, derive.GPU_TAINT) for t in values["tolerations"])
    assert [t["key"] for t in values["tolerations"]] == ["CriticalAddonsOnly"]
    terms = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert len(terms) == 1
    expressions = {(e["key"], e["operator"]) for e in terms[0]["matchExpressions"]}
    assert ("karpenter.sh/nodepool", "DoesNotExist") in expressions
    assert ("gpu-platform/pool", "DoesNotExist") in expressions
    assert values["nodeSelector"] == {"kubernetes.io/os": "linux"}


def test_controller_follows_the_system_node_selector():
    spec = _spec("dev-aws", **{"gpu-platform:systemNodeSelector": {"node-role": "system"}})
    values = karpenter.controller_values(spec)
    assert values["nodeSelector"] == {"kubernetes.io/os": "linux", "node-role": "system"}


def _walk_values(ours: dict[str, Any], theirs: dict[str, Any], path: str = "") -> list[str]:
    """Value paths we set that the chart does not define (maps that are free-form in the chart, such as
    ``{}`` defaults and nodeSelector, accept any key below them)."""
    free_form = {"nodeSelector"}
    missing = []
    for k, v in ours.items():
        here = f"{path}.{k}" if path else k
        if not isinstance(theirs, dict) or k not in theirs:
            missing.append(here)
            continue
        default = theirs[k]
        if default is not None and not isinstance(v, type(default)):
            numbers = isinstance(v, (int, float)) and isinstance(default, (int, float))
            if not numbers and not isinstance(v, bool | str) and not isinstance(default, bool | str):
                missing.append(f"{here} (type {type(v).__name__}, chart has {type(default).__name__})")
        if isinstance(v, dict) and isinstance(default, dict) and default and here not in free_form:
            missing += _walk_values(v, default, here)
    return missing


@pytest.mark.parametrize("identity", ["pod-identity", "irsa"])
def test_every_value_path_exists_in_the_upstream_chart(identity):
    upstream = yaml.safe_load((UPSTREAM / "karpenter" / "values.yaml").read_text())
    spec = _spec(
        "prod-aws",
        **{"gpu-platform:karpenter": {"identity": identity, "zonalShift": True}},
        **{"gpu-platform:systemNodeSelector": {"node-role": "system"}},
    )
    values = karpenter.controller_values(
        spec, cluster_endpoint="https://x", queue="q", irsa_role_arn="arn:aws:iam::1:role/r"
    )
    assert _walk_values(values, upstream) == []
    assert _walk_values(release(rendered("prod-aws"), "karpenter")["values"], upstream) == []
    # the check itself catches a misplaced key (webhook.* was dropped from the chart in v1.1)
    assert _walk_values({"webhook": {"enabled": False}, "settings": {"clusterNmae": "x"}}, upstream) == [
        "webhook",
        "settings.clusterNmae",
    ]


# ---------------------------------------------------------------------------------------------- IAM


def test_pod_identity_association_and_trust():
    r = rendered("prod-aws")
    assoc = r.find(POD_IDENTITY, "karpenter-pod-identity").inputs
    assert (assoc["clusterName"], assoc["namespace"], assoc["serviceAccount"]) == (
        "ml-prod",
        "kube-system",
        "karpenter",
    )
    role = r.find(ROLE, "karpenter-controller-role").inputs
    trust = json.loads(role["assumeRolePolicy"])["Statement"]
    assert len(trust) == 1
    assert trust[0]["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert sorted(trust[0]["Action"]) == ["sts:AssumeRole", "sts:TagSession"]
    assert trust[0]["Condition"]["StringEquals"] == {
        "aws:RequestTag/eks-cluster-name": "ml-prod",
        "aws:RequestTag/kubernetes-namespace": "kube-system",
        "aws:RequestTag/kubernetes-service-account": "karpenter",
    }
    assert assoc["roleArn"].endswith(":role/ml-prod-karpenter")
    assert "serviceAccount" in release(r, "karpenter")["values"]
    assert "annotations" not in release(r, "karpenter")["values"]["serviceAccount"]


def test_irsa_variant():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:karpenter"] = {"identity": "irsa"}
    r = render_config(cfg)
    assert r.of_type(POD_IDENTITY) == []
    role = r.find(ROLE, "karpenter-controller-role").inputs
    stmt = json.loads(role["assumeRolePolicy"])["Statement"][0]
    host = "oidc.eks.placeholder.amazonaws.com.invalid/id/offline-placeholder"  # synth.LOOKUPS issuer
    assert stmt["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert stmt["Principal"] == {"Federated": f"arn:aws:iam::000000000000:oidc-provider/{host}"}
    assert stmt["Condition"]["StringEquals"] == {
        f"{host}:aud": "sts.amazonaws.com",
        f"{host}:sub": "system:serviceaccount:kube-system:karpenter",
    }
    annotations = release(r, "karpenter")["values"]["serviceAccount"]["annotations"]
    assert annotations["eks.amazonaws.com/role-arn"].endswith(":role/ml-dev-karpenter")


def test_node_role_policies_and_access_entry():
    r = rendered("dev-aws")
    role = r.find(ROLE, "karpenter-node-role").inputs
    assert role["name"] == "ml-dev-karpenter-node"
    assert json.loads(role["assumeRolePolicy"])["Statement"][0]["Principal"] == {"Service": "ec2.amazonaws.com"}
    node_arns = sorted(a.inputs["policyArn"] for a in r.of_type(ATTACHMENT) if a.name.startswith("karpenter-node-"))
    assert node_arns == [
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
        "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
    ]
    entry = r.find(ACCESS_ENTRY, "karpenter-node-access").inputs
    assert entry["type"] == "EC2_LINUX"
    assert entry["clusterName"] == "ml-dev"
    assert entry["principalArn"].endswith(":role/ml-dev-karpenter-node")
    # EC2_LINUX entries take no groups or user name (EKS sets system:node:{{EC2PrivateDNSName}})
    assert "kubernetesGroups" not in entry and "userName" not in entry


def test_controller_policies_are_the_upstream_groups_attached_to_the_controller_role():
    r = rendered("prod-aws")
    names = {x.inputs["name"] for x in r.of_type(POLICY) if x.parent == "karpenter"}
    assert names == {
        "ml-prod-karpenter-node-lifecycle",
        "ml-prod-karpenter-iam-integration",
        "ml-prod-karpenter-eks-integration",
        "ml-prod-karpenter-interruption",
        "ml-prod-karpenter-resource-discovery",
    }
    attached = {a.name for a in r.of_type(ATTACHMENT) if a.name.startswith("karpenter-controller-")}
    assert len(attached) == 5
    for doc in _policies(r).values():
        assert len(json.dumps(doc, separators=(",", ":"))) < 6144  # IAM managed-policy size limit


def test_no_wildcard_admin_and_every_mutation_is_scoped_to_the_cluster():
    statements = _statements(rendered("prod-aws"))
    sids = [s["Sid"] for s in statements]
    assert len(sids) == len(set(sids)) == 17
    owned = "kubernetes.io/cluster/ml-prod"
    shared_inputs = ("image/", "snapshot/", "security-group/", "subnet/", "capacity-reservation/", "placement-group/")
    mutating = ("Create", "Delete", "Terminate", "Tag", "AddRole", "RemoveRole", "RunInstances", "PassRole")
    tag_scoped = 0
    for s in statements:
        actions = _as_list(s["Action"])
        resources = _as_list(s["Resource"])
        assert s["Effect"] == "Allow"
        assert "*" not in actions and not any(a.endswith(":*") for a in actions), s["Sid"]
        if "*" in resources:
            # only reads may be unscoped, and each is pinned by a condition or has no resource-level form
            assert all(a.split(":")[1].startswith(("Describe", "Get", "List")) for a in actions), s["Sid"]
        condition_keys = json.dumps(s.get("Condition", {}))
        if owned in condition_keys:
            tag_scoped += 1
            assert '"owned"' in condition_keys
        if not any(a.split(":")[1].startswith(mutating) for a in actions):
            continue
        if s["Sid"] == "AllowPassingInstanceRole":
            assert resources == ["arn:aws:iam::000000000000:role/ml-prod-karpenter-node"]
            assert s["Condition"]["StringEquals"]["iam:PassedToService"][0] == "ec2.amazonaws.com"
        elif all("*" not in res for res in resources):
            # one named resource of this cluster: its interruption queue
            assert s["Sid"] == "AllowInterruptionQueueActions" and resources[0].endswith("ml-prod-karpenter")
        elif all(any(k in res for k in shared_inputs) for res in resources):
            # launch inputs (AMIs, subnets, ...); the instance itself needs a tag-scoped statement
            assert set(actions) == {"ec2:RunInstances", "ec2:CreateFleet"}
        else:
            assert owned in condition_keys, s["Sid"]
    assert tag_scoped == 8  # 5 EC2 lifecycle + 3 instance-profile statements
    regional = next(s for s in statements if s["Sid"] == "AllowRegionalReadActions")
    assert regional["Condition"] == {"StringEquals": {"aws:RequestedRegion": "us-east-1"}}
    describe = next(s for s in statements if s["Sid"] == "AllowAPIServerEndpointDiscovery")
    assert describe["Resource"] == "arn:aws:eks:us-east-1:000000000000:cluster/ml-prod"


def test_interruption_permissions_name_the_queue_only():
    r = rendered("prod-aws")
    stmt = next(s for s in _statements(r) if s["Sid"] == "AllowInterruptionQueueActions")
    assert sorted(stmt["Action"]) == ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"]
    # the mock engine's placeholder ARN of the queue registered by the program
    assert stmt["Resource"] == "arn:aws:sqs::000000000000:queue/ml-prod-karpenter"


def test_zonal_shift_adds_its_policy_and_setting():
    scope = iam_karpenter.Scope("aws", "us-east-1", "111122223333", "c", "arn:node", "arn:queue")
    assert "zonal-shift" not in iam_karpenter.controller_policies(scope)
    doc = iam_karpenter.controller_policies(scope, with_zonal_shift=True)["zonal-shift"]
    assert doc["Statement"][0]["Condition"] == {
        "StringEquals": {"arc-zonal-shift:ResourceIdentifier": "arn:aws:eks:us-east-1:111122223333:cluster/c"}
    }
    spec = _spec("dev-aws", **{"gpu-platform:karpenter": {"zonalShift": True}})
    assert karpenter.controller_values(spec)["settings"]["enableZonalShift"] is True


# ----------------------------------------------------------------------------------- interruption


def test_interruption_queue():
    r = rendered("dev-aws")
    queue = r.find(QUEUE, "karpenter-interruption-queue").inputs
    assert queue["messageRetentionSeconds"] == 300
    assert queue["sqsManagedSseEnabled"] is True
    policy = json.loads(r.find(QUEUE_POLICY, "karpenter-interruption-queue-policy").inputs["policy"])
    allow = [s for s in policy["Statement"] if s["Effect"] == "Allow"]
    assert len(allow) == 1
    assert sorted(allow[0]["Principal"]["Service"]) == ["events.amazonaws.com", "sqs.amazonaws.com"]
    assert allow[0]["Action"] == "sqs:SendMessage"
    deny = next(s for s in policy["Statement"] if s["Effect"] == "Deny")
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert allow[0]["Resource"] == deny["Resource"] and deny["Resource"].endswith("ml-dev-karpenter")


def test_event_rules_match_upstream_and_target_the_queue():
    r = rendered("prod-aws")
    rules = {x.inputs["name"]: json.loads(x.inputs["eventPattern"]) for x in r.of_type(RULE)}
    assert len(rules) == 5
    seen = set()
    for pattern in rules.values():
        assert set(pattern) == {"source", "detail-type"}
        assert len(pattern["source"]) == len(pattern["detail-type"]) == 1
        seen.add((pattern["source"][0], pattern["detail-type"][0]))
    assert seen == UPSTREAM_EVENTS
    assert all(len(name) <= 64 and name.startswith("ml-prod-karpenter-") for name in rules)
    queue_arn = "arn:aws:sqs::000000000000:queue/ml-prod-karpenter"  # placeholder ARN of the mock engine
    targets = r.of_type(TARGET)
    assert len(targets) == 5
    assert sorted(t.inputs["rule"] for t in targets) == sorted(rules)
    for t in targets:
        assert t.inputs["arn"] == queue_arn
        assert t.inputs["targetId"] == "KarpenterInterruptionQueueTarget"


# ---------------------------------------------------------------------------------- EC2NodeClasses


def test_dev_node_class():
    classes = _nodeclasses(rendered("dev-aws"))
    assert list(classes) == ["gpu-al2023-200gib"]
    spec = classes["gpu-al2023-200gib"]["spec"]
    assert spec["amiSelectorTerms"] == [{"alias": "al2023@latest"}]
    assert spec["role"] == "ml-dev-karpenter-node"
    assert spec["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "ml-dev"}}]
    assert spec["securityGroupSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "ml-dev"}}]
    [disk] = spec["blockDeviceMappings"]
    assert disk["deviceName"] == "/dev/xvda"
    assert disk["ebs"]["volumeSize"] == "200Gi"  # the pool's diskGib default
    assert (disk["ebs"]["volumeType"], disk["ebs"]["encrypted"]) == ("gp3", True)
    assert spec["metadataOptions"]["httpTokens"] == "required"
    assert spec["metadataOptions"]["httpPutResponseHopLimit"] == 1
    assert spec["tags"]["environment"] == "dev"


def test_prod_node_class_is_pinned():
    classes = _nodeclasses(rendered("prod-aws"))
    assert list(classes) == ["gpu-al2023-200gib"]
    assert classes["gpu-al2023-200gib"]["spec"]["amiSelectorTerms"] == [{"alias": "al2023@v20251120"}]


def test_node_classes_are_shared_by_need_and_named_by_it():
    cfg = stack_config("dev-aws")
    pools = cfg["gpu-platform:nodePools"]
    base = pools[1]
    pools.append({**base, "name": "a10g-big", "diskGib": 500})
    pools.append({**base, "name": "a10g-same"})
    pools.append({**base, "name": "a10g-br", "os": "bottlerocket", "karpenter": {"amiVersion": "v1.26.2"}})
    spec = load_spec(cfg)
    needs = {n.name: n for n in karpenter.node_class_needs(spec)}
    assert sorted(needs) == ["gpu-al2023-200gib", "gpu-al2023-500gib", "gpu-bottlerocket-200gib"]
    br = karpenter.ec2_node_class_spec(spec, needs["gpu-bottlerocket-200gib"], "role")
    assert br["amiSelectorTerms"] == [{"alias": "bottlerocket@v1.26.2"}]
    devices = {d["deviceName"]: d["ebs"] for d in br["blockDeviceMappings"]}
    assert devices["/dev/xvda"]["volumeSize"] == "4Gi"  # Bottlerocket OS volume
    assert devices["/dev/xvdb"]["volumeSize"] == "200Gi"  # data volume: images and logs
    assert all(d["encrypted"] and d["volumeType"] == "gp3" for d in devices.values())


def test_ami_bump_updates_the_node_class_in_place():
    """Bumping the pinned amiVersion (what prod stacks should do) changes one field of one resource. A new
    class name would make Pulumi create a class and delete the old one, whose finalizer waits until every
    node it launched has drained (terminationGracePeriod, 4h) -- ``pulumi up`` would block that long.
    In place, Karpenter sees the changed amiSelectorTerms as drift and replaces nodes within the budgets."""
    before = rendered("prod-aws")
    cfg = stack_config("prod-aws")
    h100 = next(p for p in cfg["gpu-platform:nodePools"] if p["name"] == "h100-spot")
    assert h100["karpenter"]["amiVersion"] == "v20251120"
    h100["karpenter"]["amiVersion"] = "v20251209"
    after = render_config(cfg, "prod-aws")
    assert [(r.type, r.name) for r in after.resources] == [(r.type, r.name) for r in before.resources]
    changed = [(b.type, b.name) for b, a in zip(before.resources, after.resources, strict=True) if b.inputs != a.inputs]
    assert changed == [(NODECLASS, "ec2nodeclass-gpu-al2023-200gib")]
    old, new = (r.find(NODECLASS, "ec2nodeclass-gpu-al2023-200gib").inputs for r in (before, after))
    assert new["metadata"] == old["metadata"]
    assert new["metadata"]["name"] == "gpu-al2023-200gib"
    assert [k for k in sorted(old["spec"]) if old["spec"][k] != new["spec"][k]] == ["amiSelectorTerms"]
    assert old["spec"]["amiSelectorTerms"] == [{"alias": "al2023@v20251120"}]
    assert new["spec"]["amiSelectorTerms"] == [{"alias": "al2023@v20251209"}]


def _prod_with_second_spot_pool(**changes: Any) -> dict[str, Any]:
    """prod-aws plus a karpenter pool like h100-spot (nodePools[2], al2023, 200 GiB, pinned v20251120), appended
    after prod-aws's five pools: nodePools[5]."""
    cfg = stack_config("prod-aws")
    pools = cfg["gpu-platform:nodePools"]
    assert pools[2]["name"] == "h100-spot" and len(pools) == 5
    pools.append({**pools[2], "name": "h100-spot-b", "karpenter": {}, **changes})
    return cfg


def test_pools_sharing_a_node_class_must_pin_the_same_ami():
    problems = _problems(_prod_with_second_spot_pool(karpenter={"amiVersion": "v20251209"}))
    assert list(problems) == ["gpu-platform:nodePools[5].karpenter.amiVersion"]
    message = problems["gpu-platform:nodePools[5].karpenter.amiVersion"]
    assert message.startswith("is 'v20251209', but nodePools[2] (h100-spot) has 'v20251120'")
    assert "EC2NodeClass gpu-al2023-200gib" in message
    # leaving the second pool on latest is a different release too
    problems = _problems(_prod_with_second_spot_pool())
    assert problems["gpu-platform:nodePools[5].karpenter.amiVersion"].startswith("is 'latest', but nodePools[2]")


def test_pools_with_the_same_pin_share_a_class_and_others_get_their_own():
    spec = load_spec(_prod_with_second_spot_pool(karpenter={"amiVersion": "v20251120"}))
    [need] = karpenter.node_class_needs(spec)
    assert (need.name, need.alias) == ("gpu-al2023-200gib", "al2023@v20251120")
    plans = karpenter.nodepool_plans(spec)
    assert {karpenter.node_pool_spec(spec, p)["template"]["spec"]["nodeClassRef"]["name"] for p in plans} == {
        "gpu-al2023-200gib"
    }
    # another disk size is another class, free to pin its own release
    spec = load_spec(_prod_with_second_spot_pool(diskGib=400, karpenter={"amiVersion": "v20251209"}))
    aliases = {n.name: n.alias for n in karpenter.node_class_needs(spec)}
    assert aliases == {"gpu-al2023-200gib": "al2023@v20251120", "gpu-al2023-400gib": "al2023@v20251209"}


def test_selector_and_imds_overrides():
    spec = _spec(
        "dev-aws",
        **{
            "gpu-platform:karpenter": {
                "subnetIds": ["subnet-0abc"],
                "securityGroupTags": {"team": "ml"},
                "securityGroupIds": ["sg-0def"],
                "imdsHopLimit": 2,
            }
        },
    )
    need = karpenter.node_class_needs(spec)[0]
    body = karpenter.ec2_node_class_spec(spec, need, "role")
    assert body["subnetSelectorTerms"] == [{"id": "subnet-0abc"}]
    assert body["securityGroupSelectorTerms"] == [{"tags": {"team": "ml"}}, {"id": "sg-0def"}]
    assert body["metadataOptions"]["httpPutResponseHopLimit"] == 2
    assert body["metadataOptions"]["httpTokens"] == "required"


# --------------------------------------------------------------------------------------- NodePools


def test_dev_spot_nodepool():
    r = rendered("dev-aws")
    pools = _nodepools(r)
    assert list(pools) == ["a10g-spot"]  # the managed l4-shared pool is not Karpenter's
    np = pools["a10g-spot"]["spec"]
    cfg_pool = stack_config("dev-aws")["gpu-platform:nodePools"][1]
    assert np["limits"]["nvidia.com/gpu"] == str(cfg_pool["maxGpus"]) == "8"
    assert np["limits"]["nodes"] == "8"  # 1 GPU per g5 node of the pool
    reqs = {q["key"]: (q["operator"], q["values"]) for q in np["template"]["spec"]["requirements"]}
    assert reqs["karpenter.sh/capacity-type"] == ("In", ["spot"])
    assert reqs["node.kubernetes.io/instance-type"] == ("In", ["g5.2xlarge", "g5.4xlarge", "g5.xlarge"])
    assert reqs["karpenter.k8s.aws/instance-gpu-name"] == ("In", ["a10g"])
    assert reqs["karpenter.k8s.aws/instance-gpu-count"] == ("In", ["1"])
    assert reqs["kubernetes.io/arch"] == ("In", ["amd64"])
    assert np["template"]["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert "weight" not in np
    assert np["disruption"] == {
        "consolidationPolicy": "WhenEmpty",
        "consolidateAfter": "10m",
        "budgets": [{"nodes": "10%"}],
    }
    assert np["template"]["spec"]["expireAfter"] == "720h"
    assert np["template"]["spec"]["terminationGracePeriod"] == "4h"
    assert np["template"]["spec"]["nodeClassRef"] == {
        "group": "karpenter.k8s.aws",
        "kind": "EC2NodeClass",
        "name": "gpu-al2023-200gib",
    }


def test_nodepool_labels_are_the_pool_labels_every_provisioner_uses():
    r = rendered("dev-aws")
    labels = _nodepools(r)["a10g-spot"]["spec"]["template"]["metadata"]["labels"]
    # dev-aws a10g-spot: whole A10G GPUs served by the operator's device plugin, so no config label
    assert labels == {
        "gpu-platform/gpu-model": "a10g",
        "gpu-platform/pool": "a10g-spot",
        "nvidia.com/gpu.present": "true",
    }
    assert labels["gpu-platform/pool"] == "a10g-spot"
    assert labels["gpu-platform/gpu-model"] == "a10g"


def test_prod_spot_with_on_demand_fallback():
    r = rendered("prod-aws")
    pools = _nodepools(r)
    assert sorted(pools) == ["h100-spot", "h100-spot-on-demand"]
    spot, od = pools["h100-spot"]["spec"], pools["h100-spot-on-demand"]["spec"]
    assert spot["weight"] > od["weight"]
    assert (spot["weight"], od["weight"]) == (50, 10)

    def capacity(np):
        return next(
            q["values"] for q in np["template"]["spec"]["requirements"] if q["key"] == "karpenter.sh/capacity-type"
        )

    assert capacity(spot) == ["spot"] and capacity(od) == ["on-demand"]
    # the pool's cap (maxGpus: 32 in the stack file) is split, never doubled
    max_gpus = next(p for p in stack_config("prod-aws")["gpu-platform:nodePools"] if p["name"] == "h100-spot")[
        "maxGpus"
    ]
    gpus = [int(np["limits"]["nvidia.com/gpu"]) for np in (spot, od)]
    assert sum(gpus) == max_gpus == 32
    assert gpus == [16, 16]
    assert sum(int(np["limits"]["nodes"]) for np in (spot, od)) == 4  # 8 GPUs per p5.48xlarge
    for np in (spot, od):
        assert np["template"]["metadata"]["labels"]["gpu-platform/pool"] == "h100-spot"
        assert np["template"]["spec"]["taints"][0] == {
            "key": "nvidia.com/gpu",
            "value": "present",
            "effect": "NoSchedule",
        }
        assert np["disruption"]["consolidateAfter"] == "15m"
        assert np["template"]["spec"]["nodeClassRef"]["name"] == "gpu-al2023-200gib"


def test_fallback_split_override_and_default():
    spec = _spec("prod-aws")
    pool = spec.pool("h100-spot")
    assert karpenter.fallback_split(pool) == (16, 16)
    cfg = stack_config("prod-aws")
    h100 = next(p for p in cfg["gpu-platform:nodePools"] if p["name"] == "h100-spot")
    h100["karpenter"]["onDemandMaxGpus"] = 8
    h100["maxGpus"] = 40
    spec = load_spec(cfg)
    plans = {p.name: p for p in karpenter.nodepool_plans(spec)}
    assert (plans["h100-spot"].gpus, plans["h100-spot-on-demand"].gpus) == (32, 8)
    del h100["karpenter"]["onDemandMaxGpus"]
    assert karpenter.fallback_split(load_spec(cfg).pool("h100-spot")) == (24, 16)  # 5 nodes: 3 spot, 2 on-demand


def test_gpu_limit_counts_advertised_units_and_nodes_hold_the_physical_cap():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"][1]["sharing"] = {"strategy": "time-slicing", "replicas": 4}
    cfg["gpu-platform:tenants"][0]["gpuQuota"]["a10g-spot"] = 2
    spec = load_spec(cfg)
    [plan] = karpenter.nodepool_plans(spec)
    # initialized time-sliced nodes report 4 nvidia.com/gpu per GPU: 8 GPUs advertise 32
    assert karpenter.limits(spec, plan) == {"nvidia.com/gpu": "32", "nodes": "8"}


def test_g5g_selects_the_t4g_gpu_name_and_arm64():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"][1].update(
        gpu={"model": "T4", "perNode": 1}, instanceTypes=["g5g.xlarge", "g5g.2xlarge"]
    )
    spec = load_spec(cfg)
    [plan] = karpenter.nodepool_plans(spec)
    reqs = {q["key"]: q["values"] for q in karpenter.requirements(plan)}
    assert reqs["karpenter.k8s.aws/instance-gpu-name"] == ["t4g"]
    assert reqs["kubernetes.io/arch"] == ["arm64"]


def test_custom_resources_wait_for_the_controller():
    r = rendered("prod-aws")
    for np in r.of_type(NODEPOOL):
        assert {"karpenter", "karpenter-crd", "ec2nodeclass-gpu-al2023-200gib"} <= set(np.depends_on)
        assert np.provider == "kubernetes"
    nodeclass = r.find(NODECLASS, "ec2nodeclass-gpu-al2023-200gib")
    assert {"karpenter", "karpenter-crd", "karpenter-node-access"} <= set(nodeclass.depends_on)
    controller = r.find(HELM_RELEASE, "karpenter").depends_on
    assert {"karpenter-pod-identity", "karpenter-interruption-queue-policy", "karpenter-spot-target"} <= set(controller)


def test_no_karpenter_without_karpenter_pools():
    for stack in ("dev-gcp", "prod-gcp", "local"):
        r = rendered(stack)
        assert r.of_type(NODEPOOL) == [] and r.of_type(karpenter.Karpenter.TYPE) == []
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"] = cfg["gpu-platform:nodePools"][:1]
    cfg["gpu-platform:tenants"][0]["gpuQuota"] = {"l4-shared": 4}
    assert not load_spec(cfg).karpenter_enabled
    cfg["gpu-platform:addons"]["karpenter"] = True  # asked for explicitly: controller, no NodePools
    r = render_config(cfg)
    assert release(r, "karpenter") and r.of_type(NODEPOOL) == [] and r.of_type(NODECLASS) == []


# -------------------------------------------------------------------------------- upstream schemas


def _schema(name: str) -> jsonschema.Draft7Validator:
    schema = json.loads((UPSTREAM / "karpenter" / name).read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def _errors(validator, doc) -> list[str]:
    body = {"apiVersion": doc["apiVersion"], "kind": doc["kind"], "metadata": doc["metadata"], "spec": doc["spec"]}
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(body)]


RESTRICTED_LABEL_DOMAINS = ("karpenter.sh", "karpenter.k8s.aws")
# EC2NodeClass spec.tags CEL rules (besides the kubernetes.io/cluster prefix)
CRD_RESTRICTED_TAGS = (
    "eks:eks-cluster-name",
    "karpenter.sh/nodepool",
    "karpenter.sh/nodeclaim",
    "karpenter.k8s.aws/ec2nodeclass",
)


def _cel_nodepool(doc) -> list[str]:
    """The CRD's CEL rules that apply to what we write (jsonschema does not evaluate CEL)."""
    spec, out = doc["spec"], []
    template = spec["template"]
    for key in template["metadata"]["labels"]:
        domain = key.split("/")[0] if "/" in key else ""
        if domain.endswith(RESTRICTED_LABEL_DOMAINS) or key == "kubernetes.io/hostname":
            out.append(f"restricted label {key}")
    for req in template["spec"]["requirements"]:
        if req["operator"] == "In" and not req["values"]:
            out.append(f"In without values: {req['key']}")
        if req["key"] in ("karpenter.sh/nodepool", "kubernetes.io/hostname"):
            out.append(f"restricted requirement {req['key']}")
    for budget in spec["disruption"].get("budgets", []):
        if ("schedule" in budget) != ("duration" in budget):
            out.append("schedule without duration")
    if "replicas" in spec and ("weight" in spec or set(spec.get("limits", {})) - {"nodes"}):
        out.append("static NodePool with weight or resource limits")
    return out


def _cel_nodeclass(doc) -> list[str]:
    spec, out = doc["spec"], []
    if ("role" in spec) == ("instanceProfile" in spec):
        out.append("exactly one of role / instanceProfile")
    terms = spec["amiSelectorTerms"]
    if any("alias" in t for t in terms):
        if len(terms) != 1 or set(terms[0]) != {"alias"}:
            out.append("alias must be the only AMI selector term")
        family = terms[0]["alias"].split("@")[0]
        if family not in ("al2", "al2023", "bottlerocket"):
            out.append(f"alias family {family}")
    for name in spec.get("tags", {}):
        if name.startswith("kubernetes.io/cluster") or name in CRD_RESTRICTED_TAGS:
            out.append(f"restricted tag {name}")
    for field in ("subnetSelectorTerms", "securityGroupSelectorTerms"):
        for term in spec[field]:
            if not term or ("id" in term and len(term) > 1):
                out.append(f"{field}: bad term {term}")
            if any(not k or not v for k, v in term.get("tags", {}).items()):
                out.append(f"{field}: empty tag")
    for bdm in spec.get("blockDeviceMappings", []):
        if "volumeSize" not in bdm["ebs"] and "snapshotID" not in bdm["ebs"]:
            out.append("ebs without size")
    return out


def _variant_docs() -> list[dict[str, Any]]:
    """NodePools/EC2NodeClasses of option combinations the shipped stacks do not use (pure builders)."""
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:karpenter"] = {
        "subnetIds": ["subnet-0abc"],
        "securityGroupTags": {"team": "ml"},
        "imdsHopLimit": 2,
    }
    cfg["gpu-platform:nodePools"].append(
        {
            "name": "t4-arm",
            "gpu": {"model": "T4", "perNode": 2},
            "instanceTypes": ["g5g.16xlarge"],
            "capacity": "on-demand",
            "provisioner": "karpenter",
            "maxNodes": 3,
            "os": "bottlerocket",
            "diskGib": 300,
            "taints": [{"key": "team", "value": "vision", "effect": "NoSchedule"}],
            "sharing": {"strategy": "time-slicing", "replicas": 4},
            "karpenter": {
                "amiVersion": "v1.26.2",
                "expireAfter": "Never",
                "consolidationPolicy": "WhenEmptyOrUnderutilized",
            },
        }
    )
    spec = load_spec(cfg)
    docs = []
    for need in karpenter.node_class_needs(spec):
        docs.append(
            {
                "apiVersion": versions.KARPENTER_NODECLASS_API,
                "kind": "EC2NodeClass",
                "metadata": {"name": need.name},
                "spec": karpenter.ec2_node_class_spec(spec, need, "role-name"),
            }
        )
    for plan in karpenter.nodepool_plans(spec):
        docs.append(
            {
                "apiVersion": versions.KARPENTER_NODEPOOL_API,
                "kind": "NodePool",
                "metadata": {"name": plan.name},
                "spec": karpenter.node_pool_spec(spec, plan),
            }
        )
    assert {d["kind"] for d in docs} == {"EC2NodeClass", "NodePool"} and len(docs) == 5
    return docs


@pytest.mark.parametrize("source", ["dev-aws", "prod-aws", "variants"])
def test_custom_resources_validate_against_the_strict_upstream_schemas(source):
    validators = {
        "NodePool": _schema("nodepool.karpenter.sh.v1.strict.json"),
        "EC2NodeClass": _schema("ec2nodeclass.karpenter.k8s.aws.v1.strict.json"),
    }
    cel = {"NodePool": _cel_nodepool, "EC2NodeClass": _cel_nodeclass}
    if source == "variants":
        docs = _variant_docs()
    else:
        r = rendered(source)
        docs = [x.inputs for x in (*r.of_type(NODEPOOL), *r.of_type(NODECLASS))]
        assert len(docs) >= 2
    for doc in docs:
        assert doc["apiVersion"] == {"NodePool": "karpenter.sh/v1", "EC2NodeClass": "karpenter.k8s.aws/v1"}[doc["kind"]]
        assert _errors(validators[doc["kind"]], doc) == [], doc["metadata"]["name"]
        assert cel[doc["kind"]](doc) == [], doc["metadata"]["name"]


def test_strict_schemas_catch_misplaced_fields():
    """The validation above is not vacuous: a field in the wrong place fails."""
    r = rendered("dev-aws")
    np = json.loads(json.dumps(_nodepools(r)["a10g-spot"]))
    np["spec"]["template"]["spec"]["weight"] = 10  # weight belongs to spec, not the template
    assert _errors(_schema("nodepool.karpenter.sh.v1.strict.json"), np)
    nc = json.loads(json.dumps(_nodeclasses(r)["gpu-al2023-200gib"]))
    nc["spec"]["metadataOptions"]["httpTokens"] = "optional-ish"
    assert _errors(_schema("ec2nodeclass.karpenter.k8s.aws.v1.strict.json"), nc)


# ------------------------------------------------------------------------------------------ bad input


def test_karpenter_pool_on_gcp():
    cfg = stack_config("dev-gcp")
    pool = dict(cfg["gpu-platform:nodePools"][0], name="gpu-karpenter", provisioner="karpenter")
    cfg["gpu-platform:nodePools"].append(pool)
    i = len(cfg["gpu-platform:nodePools"]) - 1
    problems = _problems(cfg)
    assert "karpenter pools need cloud aws, not gcp" in problems[f"gpu-platform:nodePools[{i}].provisioner"]


def test_max_gpus_not_a_multiple_of_gpus_per_node():
    cfg = stack_config("prod-aws")
    i = next(i for i, p in enumerate(cfg["gpu-platform:nodePools"]) if p["name"] == "h100-spot")
    cfg["gpu-platform:nodePools"][i]["maxGpus"] = 20
    problems = _problems(cfg)
    assert problems[f"gpu-platform:nodePools[{i}].maxGpus"] == "20 is not a multiple of gpu.perNode (8)"


def test_instance_type_without_gpus():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"][1]["instanceTypes"] = ["g5.xlarge", "m5.large"]
    problems = _problems(cfg)
    assert list(problems) == ["gpu-platform:nodePools[1].instanceTypes[1]"]
    assert problems["gpu-platform:nodePools[1].instanceTypes[1]"].startswith(
        "'m5.large' is not a known NVIDIA GPU instance type"
    )


def _dev_karpenter(**changes: Any) -> dict[str, Any]:
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"][1].update(changes)
    return cfg


@pytest.mark.parametrize(
    ("cfg", "path", "fragment"),
    [
        (_dev_karpenter(minNodes=1), "gpu-platform:nodePools[1].minNodes", "scale from zero"),
        (
            _dev_karpenter(karpenter={"amiVersion": "v2025"}),
            "gpu-platform:nodePools[1].karpenter.amiVersion",
            "not an al2023 AMI release (expected latest or vYYYYMMDD",
        ),
        (
            _dev_karpenter(os="bottlerocket", karpenter={"amiVersion": "v20251120"}),
            "gpu-platform:nodePools[1].karpenter.amiVersion",
            "expected latest or vX.Y.Z",
        ),
        (
            _dev_karpenter(maxGpus=1, karpenter={"onDemandFallback": True}),
            "gpu-platform:nodePools[1].karpenter.onDemandFallback",
            "at least one node each (2 GPUs)",
        ),
        (
            _dev_karpenter(karpenter={"onDemandFallback": True, "onDemandMaxGpus": 8}),
            "gpu-platform:nodePools[1].karpenter.onDemandMaxGpus",
            "leaves none of the pool's 8 GPUs for spot",
        ),
        (
            _dev_karpenter(karpenter={"onDemandMaxGpus": 2}),
            "gpu-platform:nodePools[1].karpenter.onDemandMaxGpus",
            "needs onDemandFallback: true",
        ),
        (
            _dev_karpenter(name="l4", karpenter={"onDemandFallback": True})
            | {"gpu-platform:tenants": [{"name": "t", "gpuQuota": {"l4-shared": 1}}]},
            "gpu-platform:nodePools[1].karpenter.onDemandFallback",
            None,
        ),
    ],
    ids=[
        "min-nodes",
        "al2023-version",
        "bottlerocket-version",
        "fallback-one-node",
        "od-takes-all",
        "od-no-fallback",
        "ok",
    ],
)
def test_bad_karpenter_pool(cfg, path, fragment):
    if fragment is None:
        load_spec(cfg)  # a fallback pool whose names do not collide is fine
        return
    problems = _problems(cfg)
    assert fragment in problems[path], problems


def test_bad_karpenter_stack_options():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:addons"]["karpenter"] = False
    assert "pools a10g-spot are provisioned by Karpenter" in _problems(cfg)["gpu-platform:addons.karpenter"]

    cfg = stack_config("dev-aws")
    cfg["gpu-platform:tags"]["kubernetes.io/cluster/ml-dev"] = "owned"
    assert "reserved by Karpenter" in _problems(cfg)["gpu-platform:tags.kubernetes.io/cluster/ml-dev"]

    cfg = stack_config("dev-aws")
    cfg["gpu-platform:cluster"]["name"] = "a-very-long-eks-cluster-name-for-the-ml-team"
    assert "namePrefix" in _problems(cfg)["gpu-platform:cluster.name"]
    cfg["gpu-platform:karpenter"] = {"namePrefix": "ml-dev"}
    load_spec(cfg)

    cfg = stack_config("dev-aws")
    cfg["gpu-platform:karpenter"] = {"identity": "kiam"}
    assert "must be one of" in _problems(cfg)["gpu-platform:karpenter.identity"]

    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:karpenter"] = {"identity": "irsa"}
    assert _problems(cfg)["gpu-platform:karpenter"] == "does not apply when cloud is gcp"

    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"][0]["karpenter"] = {"consolidateAfter": "5m"}
    assert "karpenter pools only" in _problems(cfg)["gpu-platform:nodePools[0].karpenter"]


def test_fallback_name_collision():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"][0]["name"] = "a10g-spot-on-demand"
    cfg["gpu-platform:nodePools"][1]["karpenter"] = {"onDemandFallback": True}
    cfg["gpu-platform:tenants"][0]["gpuQuota"] = {"a10g-spot": 8}
    assert "another pool's name" in _problems(cfg)["gpu-platform:nodePools[1].karpenter.onDemandFallback"]


def test_summary_lists_the_nodepools_and_their_split():
    from components.cli import synth

    text = synth.files(rendered("prod-aws"))["summary.md"]
    assert "| h100-spot | h100-spot | spot | 50 | 16 | 2 | gpu-al2023-200gib |" in text
    assert "| h100-spot-on-demand | h100-spot | on-demand | 10 | 16 | 2 | gpu-al2023-200gib |" in text
    assert "interruption queue `ml-prod-karpenter`" in text
    assert "## Karpenter" not in synth.files(rendered("dev-gcp"))["summary.md"]


def test_regional_objects_go_to_the_cluster_region():
    r = rendered("prod-aws")
    regional = (QUEUE, QUEUE_POLICY, RULE, TARGET, ACCESS_ENTRY, POD_IDENTITY)
    objects = [x for t in regional for x in r.of_type(t) if x.parent == "karpenter"]
    assert len(objects) == 1 + 1 + 5 + 5 + 1 + 1
    assert {x.inputs.get("region") for x in objects} == {"us-east-1"}


def test_controller_values_whole_document():
    """Every value of the karpenter chart for dev-aws (pod identity, no zonal shift, no overlay): system nodes
    only (linux, not on a Karpenter node or a gpu-platform pool node), one replica per node, the critical-addons
    toleration with operator Exists (the CriticalAddonsOnly taint EKS docs use carries a value, "true", which an
    Equal toleration without value would not match), requests = limits, and the queue / endpoint as given."""
    spec = load_spec(stack_config("dev-aws"))
    values = karpenter.controller_values(spec, cluster_endpoint="https://EP.eks.example", queue="q-name")
    assert values == {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"},
                                {"key": "gpu-platform/pool", "operator": "DoesNotExist"},
                            ]
                        }
                    ]
                }
            },
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "kubernetes.io/hostname"}]
            },
        },
        "controller": {
            "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}
        },
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "replicas": 2,
        "serviceAccount": {"name": "karpenter"},
        "settings": {
            "clusterName": "ml-dev",
            "interruptionQueue": "q-name",
            "clusterEndpoint": "https://EP.eks.example",
            # the node monitoring agent is on (dev-aws has a Karpenter pool): Karpenter repairs on its conditions
            "featureGates": {"nodeRepair": True},
        },
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
    }
    tolerate = values["tolerations"][0]
    assert _tolerates(tolerate, type(derive.GPU_TAINT)(key="CriticalAddonsOnly", value="true", effect="NoSchedule"))


def test_controller_values_defaults_and_irsa():
    """Without an endpoint none is set and the queue defaults to <prefix>-karpenter; IRSA annotates the service
    account with the role ARN (the EKS pod identity webhook's eks.amazonaws.com/role-arn)."""
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:karpenter"] = {"identity": "irsa", "zonalShift": True}
    values = karpenter.controller_values(load_spec(cfg), irsa_role_arn="arn:aws:iam::111122223333:role/k")
    assert values["settings"] == {
        "clusterName": "ml-dev",
        "interruptionQueue": "ml-dev-karpenter",
        "enableZonalShift": True,
        "featureGates": {"nodeRepair": True},
    }
    assert values["serviceAccount"] == {
        "name": "karpenter",
        "annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/k"},
    }


def test_node_pool_descriptions():
    """The NodePool's kubernetes.io/description says which pool, capacity type, GPUs per node and cap, and for
    a spot/on-demand split which side it is and that the pool's cap is shared."""
    descriptions = {
        x.inputs["metadata"]["name"]: x.inputs["metadata"]["annotations"]["kubernetes.io/description"]
        for x in rendered("prod-aws").of_type(NODEPOOL)
    }
    split = "the pool's 32 GPUs are split between spot and on-demand"  # by default half each
    assert descriptions == {
        "h100-spot": f"gpu-platform pool h100-spot: spot 8x H100, up to 16 GPUs (preferred; {split})",
        "h100-spot-on-demand": (
            "gpu-platform pool h100-spot: on-demand 8x H100, up to 16 GPUs "
            f"(fallback when spot is unavailable; {split})"
        ),
    }
    dev = {
        x.inputs["metadata"]["name"]: x.inputs["metadata"]["annotations"]["kubernetes.io/description"]
        for x in rendered("dev-aws").of_type(NODEPOOL)
    }
    assert dev == {"a10g-spot": "gpu-platform pool a10g-spot: spot 1x A10G, up to 8 GPUs"}


def test_node_pool_metadata_labels():
    """NodePools carry the managed-by label and the pool they serve."""
    for x in rendered("prod-aws").of_type(NODEPOOL):
        assert x.inputs["metadata"]["labels"] == {
            "app.kubernetes.io/managed-by": "gpu-platform",
            "gpu-platform/pool": "h100-spot",
        }


def test_aws_objects_names_descriptions_and_tags():
    """Every Karpenter AWS object of prod-aws by name, with the description a console reader sees (which cluster,
    which role, which policy group, which interruption event) and the stack's tags plus managed-by. The policy
    groups are upstream's (Karpenter's getting-started CloudFormation: node lifecycle, IAM integration, EKS
    integration, interruption, resource discovery); zonal-shift only with zonalShift."""
    r = rendered("prod-aws")
    tags = {"cost-center": "ml-4711", "environment": "prod", "managed-by": "gpu-platform", "team": "ml-platform"}
    mine = [x for x in r.resources if x.parent == "karpenter" and x.type in (ROLE, POLICY, RULE, QUEUE)]
    for x in mine:
        assert x.inputs["tags"] == tags, x.name
    described = {(x.type, x.inputs["name"]): x.inputs.get("description") for x in mine}
    groups = ("node-lifecycle", "iam-integration", "eks-integration", "interruption", "resource-discovery")
    events = {
        "health": "AWS Health Event",
        "spot": "EC2 Spot Instance Interruption Warning",
        "rebalance": "EC2 Instance Rebalance Recommendation",
        "state-change": "EC2 Instance State-change Notification",
        "reservation": "EC2 Capacity Reservation Instance Interruption Warning",
    }
    assert described == {
        (ROLE, "ml-prod-karpenter-node"): "Nodes Karpenter launches for EKS cluster ml-prod",
        (ROLE, "ml-prod-karpenter"): "Karpenter controller of EKS cluster ml-prod",
        (QUEUE, "ml-prod-karpenter"): None,
        **{(POLICY, f"ml-prod-karpenter-{g}"): f"Karpenter controller ({g}) for EKS cluster ml-prod" for g in groups},
        **{
            (RULE, f"ml-prod-karpenter-{kind}"): f"Karpenter interruption handling for ml-prod: {event}"
            for kind, event in events.items()
        },
    }
    queue = r.find(QUEUE, "karpenter-interruption-queue").inputs
    assert (queue["messageRetentionSeconds"], queue["sqsManagedSseEnabled"]) == (300, True)
    assert {x.inputs["targetId"] for x in r.of_type(TARGET)} == {"KarpenterInterruptionQueueTarget"}


def test_ec2_node_class_spec_whole():
    """dev-aws' one class, every field: the AMI alias, one fast encrypted gp3 root of diskGib (Karpenter's
    quantity string), IMDSv2 with hop limit 1 and IPv6 endpoint off, the node role, discovery-tag selectors
    and the stack's tags plus managed-by; no userData for AL2023."""
    spec = load_spec(stack_config("dev-aws"))
    [need] = karpenter.node_class_needs(spec)
    assert karpenter.ec2_node_class_spec(spec, need, "role-name") == {
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "blockDeviceMappings": [
            {
                "deviceName": "/dev/xvda",
                "ebs": {
                    "deleteOnTermination": True,
                    "encrypted": True,
                    "iops": 3000,
                    "throughput": 500,
                    "volumeSize": "200Gi",
                    "volumeType": "gp3",
                },
            }
        ],
        "metadataOptions": {
            "httpEndpoint": "enabled",
            "httpProtocolIPv6": "disabled",
            "httpPutResponseHopLimit": 1,
            "httpTokens": "required",
        },
        "instanceStorePolicy": "RAID0",  # the local NVMe disks as ephemeral storage (tests/test_local_nvme.py)
        "role": "role-name",
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "ml-dev"}}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "ml-dev"}}],
        "tags": {"environment": "dev", "managed-by": "gpu-platform", "team": "ml-platform"},
    }


def test_bottlerocket_sharing_pool_gets_its_own_class_with_user_data():
    """A Bottlerocket time-slicing pool's class is gpu-bottlerocket-<disk>gib-<pool> with the device-plugin TOML
    as userData; its 4 GiB OS volume is encrypted gp3 at baseline speed (no IOPS / throughput)."""
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"][1].update(os="bottlerocket", sharing={"strategy": "time-slicing", "replicas": 2})
    spec = load_spec(cfg)
    [need] = karpenter.node_class_needs(spec)
    assert need.name == "gpu-bottlerocket-200gib-a10g-spot"
    body = karpenter.ec2_node_class_spec(spec, need, "r")
    assert body["blockDeviceMappings"][0] == {
        "deviceName": "/dev/xvda",
        "ebs": {"deleteOnTermination": True, "encrypted": True, "volumeSize": "4Gi", "volumeType": "gp3"},
    }
    assert body["userData"].startswith('[settings.kubelet-device-plugins.nvidia]\ndevice-id-strategy = "uuid"\n')
    assert "replicas = 2\n" in body["userData"]


def test_selector_terms_sorted_and_combined():
    """Tags (sorted by key) and ids (sorted) are ORed terms; without either, the cluster's discovery tag."""
    spec = _spec(
        "dev-aws",
        **{
            "gpu-platform:karpenter": {
                "subnetTags": {"tier": "private", "env": "dev"},
                "subnetIds": ["subnet-0bbb", "subnet-0aaa"],
            }
        },
    )
    terms = karpenter.subnet_selector_terms(spec)
    assert terms == [{"tags": {"env": "dev", "tier": "private"}}, {"id": "subnet-0aaa"}, {"id": "subnet-0bbb"}]
    assert list(terms[0]["tags"]) == ["env", "tier"]
    assert karpenter.security_group_selector_terms(spec) == [{"tags": {"karpenter.sh/discovery": "ml-dev"}}]


def test_reserved_pool_requirements_taints_and_limits():
    """A pool with a reservation is one NodePool of capacity type reserved, pinned to the reservation's AZ; a
    taint without value has no value key; time-slicing (4 replicas) multiplies the nvidia.com/gpu limit while
    the node limit stays physical."""
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"][1].update(
        capacity="on-demand",
        reservation={"ids": ["cr-0123456789abcdef0"], "instanceType": "g5.xlarge", "availabilityZone": "us-east-1c"},
        taints=[{"key": "dedicated", "effect": "NoExecute"}],
        sharing={"strategy": "time-slicing", "replicas": 4},
    )
    spec = load_spec(cfg)
    [plan] = karpenter.nodepool_plans(spec)
    assert (plan.name, plan.capacity_type, plan.gpus, plan.weight, plan.nodes) == ("a10g-spot", "reserved", 8, None, 8)
    assert karpenter.requirements(plan) == [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["reserved"]},
        {
            "key": "node.kubernetes.io/instance-type",
            "operator": "In",
            "values": ["g5.2xlarge", "g5.4xlarge", "g5.xlarge"],
        },
        {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["a10g"]},
        {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "In", "values": ["1"]},
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1c"]},
    ]
    assert karpenter.taints(plan.pool) == [
        {"key": "nvidia.com/gpu", "effect": "NoSchedule", "value": "present"},
        {"key": "dedicated", "effect": "NoExecute"},
    ]
    assert karpenter.limits(spec, plan) == {"nvidia.com/gpu": "32", "nodes": "8"}


def test_karpenter_zone_without_reservation_pins_the_nodepool():
    """An EFA pool's karpenter.zone alone keeps its NodePool in that AZ; without zone or reservation, no zone
    requirement."""
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:nodePools"][2]["karpenter"]["zone"] = "us-east-1b"
    spec = load_spec(cfg)
    for plan in karpenter.nodepool_plans(spec):
        assert karpenter.requirements(plan)[-1] == {
            "key": "topology.kubernetes.io/zone",
            "operator": "In",
            "values": ["us-east-1b"],
        }
    spec = load_spec(stack_config("prod-aws"))
    for plan in karpenter.nodepool_plans(spec):
        assert karpenter.requirements(plan)[-1]["key"] == "kubernetes.io/os"


def test_node_class_metadata_labels():
    """EC2NodeClasses carry the managed-by label (they serve several pools, so no pool label)."""
    [nc] = rendered("dev-aws").of_type(NODECLASS)
    assert nc.inputs["metadata"] == {
        "name": "gpu-al2023-200gib",
        "labels": {"app.kubernetes.io/managed-by": "gpu-platform"},
    }


def test_exact_dependencies_of_the_karpenter_objects():
    """What each Karpenter object waits for, exactly: the controller for its CRDs, the queue (its name is a
    value) and queue policy, all five event targets, all five policy attachments and its identity; the
    EC2NodeClass for both releases, the node role (its name) with all four attachments and its access entry
    (a node must be able to join before the class can launch one); each NodePool for both releases and its
    class. The CRD release waits for nothing."""
    r = rendered("prod-aws")
    controller = set(r.find(HELM_RELEASE, "karpenter").depends_on)
    groups = ("node-lifecycle", "iam-integration", "eks-integration", "interruption", "resource-discovery")
    kinds = ("health", "spot", "rebalance", "state-change", "reservation")
    assert controller == {
        "karpenter-crd",
        "karpenter-interruption-queue",
        "karpenter-interruption-queue-policy",
        "karpenter-pod-identity",
        *(f"karpenter-{k}-target" for k in kinds),
        *(f"karpenter-controller-{g}-attachment" for g in groups),
    }
    policies = ("AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy", "AmazonEC2ContainerRegistryPullOnly")
    assert set(r.find(NODECLASS, "ec2nodeclass-gpu-al2023-200gib").depends_on) == {
        "karpenter",
        "karpenter-crd",
        "karpenter-node-role",
        "karpenter-node-access",
        *(f"karpenter-node-{p}" for p in (*policies, "AmazonSSMManagedInstanceCore")),
    }
    for name in ("nodepool-h100-spot", "nodepool-h100-spot-on-demand"):
        assert set(r.find(NODEPOOL, name).depends_on) == {
            "karpenter",
            "karpenter-crd",
            "ec2nodeclass-gpu-al2023-200gib",
        }
    assert r.find(HELM_RELEASE, "karpenter-crd").depends_on == []
    assert release(r, "karpenter")["skipCrds"] is True


def test_summary_section_whole():
    """dev-aws' Karpenter section line by line: controller version (upstream Chart.yaml 1.14.1), namespace
    (kube-system, where Karpenter's FlowSchemas apply), identity, queue, node role, hop limit; a NodePool row
    with '-' for no weight; nothing on gcp or with Karpenter off."""
    assert karpenter.summary_lines(load_spec(stack_config("dev-aws"))) == [
        "## Karpenter",
        "",
        "Controller 1.14.1 in `kube-system` (pod-identity), interruption queue `ml-dev-karpenter`, node role "
        "`ml-dev-karpenter-node`, IMDSv2 hop limit 1, local NVMe disks striped (RAID0) as the nodes' ephemeral "
        "storage (containerd, kubelet, pod logs).",
        "",
        "| NodePool | pool | capacity | weight | nvidia.com/gpu limit | node limit | EC2NodeClass |",
        "|---|---|---|---|---|---|---|",
        "| a10g-spot | a10g-spot | spot | - | 8 | 8 | gpu-al2023-200gib |",
    ]
    assert karpenter.summary_lines(load_spec(stack_config("dev-gcp"))) == []
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"] = cfg["gpu-platform:nodePools"][:1]
    cfg["gpu-platform:tenants"][0]["gpuQuota"] = {"l4-shared": 4}
    assert karpenter.summary_lines(load_spec(cfg)) == []


def test_which_pools_get_a_node_class_of_their_own():
    """Only pools whose class content is their own get gpu-<os>-<disk>gib-<pool>: Bottlerocket with time-slicing
    / MPS (per-pool user data). An AL2023 sharing pool (the GPU Operator's ConfigMap shares, not user data) and a
    Bottlerocket pool without sharing (only the stack-wide device-id setting) share the os/disk class."""

    def need(**fields: Any):
        cfg = stack_config("dev-aws")
        cfg["gpu-platform:nodePools"][1].update(fields)
        spec = load_spec(cfg)
        return karpenter.node_class_need(spec, spec.pool("a10g-spot"))

    al2023 = need(sharing={"strategy": "time-slicing", "replicas": 2})
    assert (al2023.name, al2023.owner, al2023.user_data, al2023.additions) == ("gpu-al2023-200gib", None, None, "")
    br = need(os="bottlerocket")
    assert (br.name, br.owner) == ("gpu-bottlerocket-200gib", None)
    assert br.user_data == '[settings.kubelet-device-plugins.nvidia]\ndevice-id-strategy = "uuid"\n'
    br_mps = need(os="bottlerocket", sharing={"strategy": "mps", "replicas": 2})
    assert (br_mps.name, br_mps.owner) == ("gpu-bottlerocket-200gib-a10g-spot", "a10g-spot")
    assert br_mps.alias == "bottlerocket@latest"


def test_node_repair_follows_the_node_monitoring_agent():
    """Karpenter's node repair (alpha, off upstream) acts on the conditions the EKS node monitoring agent sets
    (AcceleratedHardwareReady among them: karpenter-provider-aws cloudprovider.go RepairPolicies): on with the
    agent, which a stack with a Karpenter pool gets by default, off with it, and no gate at all without either."""
    upstream = yaml.safe_load((UPSTREAM / "karpenter" / "values.yaml").read_text())
    assert upstream["settings"]["featureGates"]["nodeRepair"] is False
    spec = load_spec(stack_config("dev-aws"))
    assert spec.node_monitoring_agent_enabled
    assert karpenter.controller_values(spec)["settings"]["featureGates"] == {"nodeRepair": True}
    assert [r.name for r in rendered("dev-aws").resources if r.type == "aws:eks/addon:Addon"] == [
        "eks-node-monitoring-agent"
    ]
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:addons"] = {**cfg.get("gpu-platform:addons", {}), "nodeMonitoringAgent": False}
    off = load_spec(cfg)
    assert "featureGates" not in karpenter.controller_values(off)["settings"]
    assert not [r for r in render_config(cfg).resources if r.type == "aws:eks/addon:Addon"]
