"""Image delivery (issue 39, docs/concepts/images.md): the rules, the cloud caches, the warm paths per pool, what a cold
pull costs and explain's note. Expected values come from the stack files and the upstream documents the decisions
cite (ECR user guide, GKE secondary boot disks, nodeadm, Spegel, the Karpenter CRD), never from the code under test."""

from __future__ import annotations

import email
import json
import re
import tomllib
from typing import Any

import kubernetes_validate
import pytest
import yaml
from conftest import ROOT, UPSTREAM, manifest, render_config, rendered, stack_config
from jsonschema import Draft7Validator

from components.cli import main as cli
from components.cli.loader import load_spec
from components.explain import trace as explain
from components.plan import plan as plan_module
from components.spec.model import SpecError

ECR = "123456789012.dkr.ecr.us-east-1.amazonaws.com"  # prod-aws: images.pullThrough.accountId and aws:region
AR = "us-central1-docker.pkg.dev/ml-prod-project"  # prod-gcp: the cluster's region and gcp:project
PYTORCH = "nvcr.io/nvidia/pytorch:25.08-py3"  # both prod stacks' declared image
RULE = "aws:ecr/pullThroughCacheRule:PullThroughCacheRule"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
REPOSITORY = "gcp:artifactregistry/repository:Repository"
NODE_POOL = "gcp:container/nodePool:NodePool"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"


def problems(config: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as err:
        load_spec(config)
    return [f"{p.path}: {p.message}" for p in err.value.problems]


def images(config: dict[str, Any]) -> dict[str, Any]:
    return config["gpu-platform:images"]


# ---------------------------------------------------------------------------------------------------- rules


def test_ngc_through_ecr_is_refused_with_the_way_out():
    """NGC is no upstream ECR pull-through cache supports (ECR user guide, "Sync an upstream registry"): without
    pullThrough.copied the stack is refused where the image is declared, naming the copy and the alternative."""
    cfg = stack_config("prod-aws")
    images(cfg)["pullThrough"]["copied"] = []
    found = problems(cfg)
    at = [p for p in found if p.startswith("gpu-platform:images.workloads[0].image: nvcr.io (NGC) is not an upstream")]
    assert len(at) == 1
    assert f"copy its images into ECR under {ECR}/nvcr.io/" in at[0]
    assert "images.pullThrough.copied" in at[0] and "mirror: peer" in at[0]


def test_ngc_through_artifact_registry_is_accepted():
    """Artifact Registry remote repositories take any Docker registry as a custom upstream: prod-gcp pulls nvcr.io
    through one without copying."""
    spec = load_spec(stack_config("prod-gcp"))
    (u,) = [u for u in plan_module.build(spec, "prod-gcp").images.upstreams if u.host == "nvcr.io"]
    assert (u.how, u.base) == ("pull-through", f"{AR}/nvcr-io")


def test_the_cli_refuses_an_unsupported_upstream_with_one_line_per_problem_and_writes_nothing(tmp_path, capsys):
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.prod-aws.yaml").read_text())
    stack["config"]["gpu-platform:images"]["pullThrough"]["copied"] = []
    del stack["config"]["gpu-platform:images"]["pullThrough"]["credentials"]["docker.io"]
    path = tmp_path / "Pulumi.prod-aws.yaml"
    path.write_text(yaml.safe_dump(stack))
    out_dir = tmp_path / "out"
    code = cli.main(["synth", "prod-aws", "--config", str(path), "--out", str(out_dir)])
    err = capsys.readouterr().err
    assert code == 2 and not out_dir.exists()
    lines = [line for line in err.splitlines() if line.startswith(str(path))]
    assert any(": gpu-platform:images.workloads[0].image: nvcr.io (NGC)" in line for line in lines)
    assert any(
        ": gpu-platform:images.pullThrough.credentials: docker.io: ECR pulls through it only with a Secrets Manager"
        in line
        for line in lines
    )


@pytest.mark.parametrize("host", ["docker.io", "ghcr.io"])
def test_ecr_needs_a_secrets_manager_secret_for_docker_hub_and_ghcr(host):
    """Docker Hub and GHCR (both among prod-aws's upstreams) need a secret (ECR user guide)."""
    cfg = stack_config("prod-aws")
    del images(cfg)["pullThrough"]["credentials"][host]
    (found,) = problems(cfg)
    assert found.startswith(f"gpu-platform:images.pullThrough.credentials: {host}: ECR pulls through it only with")


def test_a_pasted_token_is_refused_and_never_repeated():
    cfg = stack_config("prod-aws")
    token = "dckr_pat_0123456789abcdefABCDEF"
    images(cfg)["pullThrough"]["credentials"]["docker.io"] = {"secret": token}
    found = problems(cfg)
    assert any(
        p.startswith("gpu-platform:images.pullThrough.credentials.docker.io.secret: must reference") for p in found
    )
    assert not any(token in p for p in found)


def test_the_secret_must_be_in_the_cache_account_and_region_and_named_for_ecr():
    cfg = stack_config("prod-aws")
    creds = images(cfg)["pullThrough"]["credentials"]
    creds["docker.io"] = {"secret": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:ecr-pullthroughcache/d"}
    creds["ghcr.io"] = {"secret": "arn:aws:secretsmanager:us-east-1:123456789012:secret:registry/ghcr"}
    found = problems(cfg)
    assert any(
        p.startswith("gpu-platform:images.pullThrough.credentials.docker.io.secret: the secret must be in")
        for p in found
    )
    assert any(
        "credentials.ghcr.io.secret: the secret's name must start with ecr-pullthroughcache/" in p for p in found
    )


def test_gcp_credentials_need_the_user_name():
    cfg = stack_config("prod-gcp")
    del images(cfg)["pullThrough"]["credentials"]["docker.io"]["username"]
    assert problems(cfg) == [
        "gpu-platform:images.pullThrough.credentials.docker.io.username: is required on gcp: the remote repository "
        "signs in with it and the secret"
    ]


def test_a_snapshot_is_refused_on_al2023_with_the_alternative():
    """Only Bottlerocket keeps containerd's images on a volume of their own (/dev/xvdb)."""
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:nodePools"][4]["os"] = "al2023"
    (found,) = problems(cfg)
    assert found.startswith("gpu-platform:nodePools[4].imageCache.snapshotId: only Bottlerocket")
    assert "use os: bottlerocket" in found and "pre-puller" in found


def test_a_disk_image_needs_gcp_cos_or_gke_135_and_image_streaming():
    aws = stack_config("prod-aws")
    aws["gpu-platform:nodePools"][0]["imageCache"] = {"diskImage": "global/images/x"}
    assert any(
        p.startswith("gpu-platform:nodePools[0].imageCache.diskImage: a secondary boot disk") for p in problems(aws)
    )
    gcp = stack_config("prod-gcp")
    gcp["gpu-platform:nodePools"][0]["os"] = "ubuntu"
    gcp["gpu-platform:nodePools"][0]["gke"]["imageStreaming"] = False
    found = problems(gcp)
    assert any(p.startswith("gpu-platform:nodePools[0].imageCache.diskImage: Ubuntu nodes boot") for p in found)
    assert any(p.startswith("gpu-platform:nodePools[0].gke.imageStreaming: a secondary boot disk") for p in found)


def test_declared_images_are_checked():
    cfg = stack_config("prod-aws")
    images(cfg)["workloads"] += [
        {"name": "pytorch", "image": "nvcr.io/nvidia/pytorch:25.09-py3", "pools": ["a100-train"]},
        {"name": "bare", "image": "quay.io/org/img", "pools": ["nope"]},
        {"name": "nowhere", "image": "quay.io/org/img:1"},
    ]
    found = problems(cfg)
    assert "gpu-platform:images.workloads[1].name: 'pytorch' is declared twice" in found
    assert any(p.startswith("gpu-platform:images.workloads[2].image: name a tag or a sha256 digest") for p in found)
    assert any(p.startswith("gpu-platform:images.workloads[2].pools[0]: unknown pool 'nope'") for p in found)
    assert "gpu-platform:images.workloads[3]: name the pools (or tenants) whose nodes hold it warm" in found


def test_one_mirror_and_what_each_needs():
    aws = stack_config("prod-aws")
    aws["gpu-platform:imageRegistry"] = "harbor.internal/mirror"
    del images(aws)["pullThrough"]["accountId"]
    found = problems(aws)
    assert any(p.startswith("gpu-platform:imageRegistry: pull-through on aws is the cloud's own cache") for p in found)
    assert any(p.startswith("gpu-platform:images.pullThrough.accountId: is required") for p in found)
    gcp = stack_config("prod-gcp")
    images(gcp)["mirror"] = "peer"
    found = problems(gcp)
    assert any(p.startswith("gpu-platform:images.mirror: Spegel does not run on GKE") for p in found)
    assert "gpu-platform:images.pullThrough: only with images.mirror: pull-through" in found


def test_a_pool_cache_names_its_images():
    cfg = stack_config("prod-aws")
    images(cfg)["workloads"][0]["pools"] = ["a100-train"]
    (found,) = problems(cfg)
    assert found.startswith("gpu-platform:nodePools[4].imageCache: declare the images it holds in images.workloads")


# ------------------------------------------------------------------------------------------------- aws: ECR


def test_prod_aws_has_one_rule_per_upstream_ecr_caches():
    """One rule per upstream the platform's images and the declared one come from, its prefix the upstream host, its
    upstreamRegistryUrl as the ECR API reference spells it, its credential the stack file's ARN; none for nvcr.io
    (copied) or for the EKS registries (already ECR)."""
    r = rendered("prod-aws")
    creds = images(stack_config("prod-aws"))["pullThrough"]["credentials"]
    rules = {x.inputs["ecrRepositoryPrefix"]: x.inputs for x in r.of_type(RULE)}
    assert {k: v["upstreamRegistryUrl"] for k, v in rules.items()} == {
        "docker.io": "registry-1.docker.io",
        "ghcr.io": "ghcr.io",
        "public.ecr.aws": "public.ecr.aws",
        "quay.io": "quay.io",
        "registry.k8s.io": "registry.k8s.io",
    }
    assert {k: v.get("credentialArn") for k, v in rules.items() if v.get("credentialArn")} == {
        h: c["secret"] for h, c in creds.items()
    }
    assert all(v["region"] == "us-east-1" for v in rules.values())


def test_the_node_roles_may_fill_the_cache_and_nothing_more():
    """ECR user guide, "IAM permissions required to sync an upstream registry": the first pull imports the image and
    creates its repository."""
    r = rendered("prod-aws")
    policies = {x.inputs["role"]: json.loads(x.inputs["policy"]) for x in r.of_type(ROLE_POLICY)}
    assert set(policies) == {"ml-prod-gpu-node", "ml-prod-karpenter-node"}
    for doc in policies.values():
        (statement,) = doc["Statement"]
        assert statement["Effect"] == "Allow"
        assert sorted(statement["Action"]) == ["ecr:BatchImportUpstreamImage", "ecr:CreateRepository"]
        assert sorted(statement["Resource"]) == sorted(
            f"arn:aws:ecr:us-east-1:123456789012:repository/{p}/*"
            for p in ("docker.io", "ghcr.io", "public.ecr.aws", "quay.io", "registry.k8s.io")
        )


def test_every_image_prod_aws_installs_names_ecr():
    """An air-gapped prod-aws pulls nothing from the internet: every image of every chart and every object names the
    account's cache, or an ECR registry already (the EKS add-on registries)."""
    from test_image_registry import every_image

    found = every_image(rendered("prod-aws"))
    assert len(found) > 40
    outside = {
        w: ref for w, ref in found.items() if not re.match(r"[0-9]{12}\.dkr\.ecr\.[a-z0-9-]+\.amazonaws\.com/", ref)
    }
    assert outside == {}
    assert any(ref.startswith(f"{ECR}/nvcr.io/nvidia") for ref in found.values())


def test_a100_gang_boots_its_data_volume_from_the_snapshot():
    """The launch template's /dev/xvdb from the stack's snapshot, initialized at 300 MiB/s (the EC2NodeClass CRD's
    maximum volumeInitializationRate), its encryption the snapshot's (EC2: no encryption value with a snapshot); the
    OS volume still encrypted."""
    lt = rendered("prod-aws").find(LAUNCH_TEMPLATE, "a100-gang").inputs
    mappings = {m["deviceName"]: m["ebs"] for m in lt["blockDeviceMappings"]}
    snapshot = stack_config("prod-aws")["gpu-platform:nodePools"][4]["imageCache"]["snapshotId"]
    assert mappings["/dev/xvdb"]["snapshotId"] == snapshot
    assert mappings["/dev/xvdb"]["volumeInitializationRate"] == 300
    assert "encrypted" not in mappings["/dev/xvdb"]
    assert mappings["/dev/xvda"]["encrypted"] == "true"
    crd = json.loads((UPSTREAM / "karpenter" / "ec2nodeclass.karpenter.k8s.aws.v1.json").read_text())
    rate = crd["properties"]["spec"]["properties"]["blockDeviceMappings"]["items"]["properties"]["ebs"]["properties"]
    assert rate["volumeInitializationRate"]["maximum"] == 300


def test_al2023_user_data_is_a_nodeconfig_nodeadm_reads():
    """The MIME multi-part form of nodeadm's user data (Karpenter's al2023-custom-userdata example), a NodeConfig of
    node.eks.aws/v1alpha1: FastImagePull for a pool holding a declared image (nodeadm docs), and with peer the
    containerd setting Spegel needs (its compatibility notes: discard_unpacked_layers = false)."""
    cfg = stack_config("prod-aws")
    images(cfg)["workloads"][0]["pools"].append("h100-inference")
    spec = load_spec(cfg)
    lt = plan_module.build(spec, "prod-aws").aws.node_groups["h100-inference"].launch_template
    message = email.message_from_string(lt.user_data)
    assert message.is_multipart()
    (part,) = message.get_payload()
    assert part.get_content_type() == "application/node.eks.aws"
    config = yaml.safe_load(part.get_payload())
    assert (config["apiVersion"], config["kind"]) == ("node.eks.aws/v1alpha1", "NodeConfig")
    # the one NodeConfig also stripes p5's NVMe (components/plan/aws/local_disks.py): images and disks compose
    assert config["spec"] == {
        "featureGates": {"FastImagePull": True},
        "instance": {"localStorage": {"strategy": "RAID0"}},
    }
    assert {m["deviceName"]: m["ebs"]["throughput"] for m in lt.block_device_mappings} == {"/dev/xvda": 1000}

    karpenter = yaml.safe_load((ROOT / "tests" / "fixtures" / "coverage" / "Pulumi.coverage-aws.yaml").read_text())
    k = plan_module.build(load_spec(karpenter["config"]), "coverage-aws").karpenter
    (a10g,) = [c for c in k.node_classes if "a10g-spot" in c.pools]
    (part,) = email.message_from_string(a10g.spec["userData"]).get_payload()
    toml = yaml.safe_load(part.get_payload())["spec"]["containerd"]["config"]
    assert tomllib.loads(toml) == tomllib.loads(SPEGEL_EKS_AL2023)
    # nodeadm takes it as a version-3 config (no `containerd config migrate`): it names io.containerd.cri.v1.images
    # (awslabs/amazon-eks-ami v20260724 nodeadm/internal/containerd/config.go Version3configInNodeConfig)
    assert "io.containerd.cri.v1.images" in toml and "io.containerd.grpc.v1.cri" not in toml


# Spegel's docs for EKS AL2023 (spegel-org/website content/docs/getting-started.md at 957ba46, the docs of Spegel
# v0.7.4, "Compatibility" > "EKS" > "AL2023"): the NodeConfig's spec.containerd.config, as published
SPEGEL_EKS_AL2023 = """
[plugins."io.containerd.cri.v1.images".registry]
  config_path = "/etc/containerd/certs.d"
[plugins.'io.containerd.cri.v1.images']
  discard_unpacked_layers = false
"""


def test_bottlerocket_pools_keep_their_settings_only():
    """Image delivery adds nothing to Bottlerocket's settings TOML (no mirror entry: references name the cache)."""
    a100 = rendered("prod-aws").find(LAUNCH_TEMPLATE, "a100-train").inputs
    import base64

    text = base64.b64decode(a100["userData"]).decode()
    assert "container-registry" not in text
    # the device plugin's settings, and the p4de's NVMe striped (components/plan/aws/local_disks.py), nothing else
    assert set(tomllib.loads(text)["settings"]) == {"kubelet-device-plugins", "bootstrap-commands"}


# -------------------------------------------------------------------------------------------- the pre-puller


@pytest.mark.parametrize("stack,pool", [("prod-aws", "a100-train"), ("prod-gcp", "h100-burst")])
def test_the_pre_puller_tolerates_the_pool_holds_no_gpu_and_requests_almost_nothing(stack, pool):
    r = rendered(stack)
    ds = manifest(r, "DaemonSet", f"image-prepull-{pool}", "gpu-platform-images")
    kubernetes_validate.validate(ds, "1.33.0", strict=True)
    pod = ds["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"gpu-platform/pool": pool}
    cfg = next(p for p in stack_config(stack)["gpu-platform:nodePools"] if p["name"] == pool)
    # the GPU taint every pool carries (docs/concepts/pools.md), GKE's own on queued-provisioning pools
    taints = {("nvidia.com/gpu", "present", "NoSchedule")}
    if (cfg.get("gke") or {}).get("queuedProvisioning"):
        taints.add(("cloud.google.com/gke-queued", "true", "NoSchedule"))
    assert {(t["key"], t.get("value"), t["effect"]) for t in pod["tolerations"]} == taints
    containers = [*pod["initContainers"], *pod["containers"]]
    for c in containers:
        assert c["resources"]["requests"] == {"cpu": "1m", "memory": "8Mi"}
        assert not any("/" in name for part in c["resources"].values() for name in part)  # no GPU, no device
        assert {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"} in c["env"]
    mirror = ECR if stack == "prod-aws" else f"{AR}/nvcr-io"
    declared = f"{mirror}/nvidia/pytorch:25.08-py3" if stack == "prod-gcp" else f"{ECR}/{PYTORCH}"
    assert [c["image"] for c in pod["initContainers"]] == [declared]
    assert pod["initContainers"][0]["command"] == ["sh", "-c", "true"]
    assert pod["containers"][0]["image"].endswith("/pause:3.10.1")
    ns = manifest(r, "Namespace", "gpu-platform-images")
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    from components.explain.facts import pod_security_problems

    assert pod_security_problems(pod, "restricted") == []


def test_the_pre_puller_pins_the_digest_the_stack_gives():
    r = render_config(
        yaml.safe_load((ROOT / "tests" / "fixtures" / "coverage" / "Pulumi.coverage-aws.yaml").read_text())["config"],
        "coverage-aws",
    )
    ds = manifest(r, "DaemonSet", "image-prepull-h100-mig", "gpu-platform-images")
    (init,) = ds["spec"]["template"]["spec"]["initContainers"]
    assert init["image"] == (
        "docker.io/vllm/vllm-openai:v0.11.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
    )
    # l4-notebooks boots the image from its snapshot: no pre-puller there
    assert not [m for m in r.manifests if m["metadata"].get("name") == "image-prepull-l4-notebooks"]


# ------------------------------------------------------------------------------------------------------- gcp


def test_prod_gcp_h100_train_boots_a_secondary_boot_disk_with_image_streaming():
    """GKE: nodeConfig.secondaryBootDisks [{diskImage, mode CONTAINER_IMAGE_CACHE}], which needs image streaming;
    h100-burst streams; the pools without declared images change nothing."""
    r = rendered("prod-gcp")
    disk = stack_config("prod-gcp")["gpu-platform:nodePools"][0]["imageCache"]["diskImage"]
    train = r.find(NODE_POOL, "gke-h100-train").inputs["nodeConfig"]
    assert train["secondaryBootDisks"] == [{"diskImage": disk, "mode": "CONTAINER_IMAGE_CACHE"}]
    assert train["gcfsConfig"] == {"enabled": True}
    assert r.find(NODE_POOL, "gke-h100-burst").inputs["nodeConfig"]["gcfsConfig"] == {"enabled": True}
    for name in ("gke-a100-inference", "gke-l4-serving"):
        cfg = r.find(NODE_POOL, name).inputs["nodeConfig"]
        assert "gcfsConfig" not in cfg and "secondaryBootDisks" not in cfg


def test_prod_gcp_remote_repositories():
    """One Docker remote repository per upstream in the cluster's region and project: Docker Hub by its preset with
    the stack's user and Secret Manager version, the others by their URI (nvcr.io among them)."""
    r = rendered("prod-gcp")
    repos = {x.inputs["repositoryId"]: x.inputs for x in r.of_type(REPOSITORY)}
    assert set(repos) == {"docker-io", "ghcr-io", "nvcr-io", "quay-io", "registry-k8s-io"}
    for repo in repos.values():
        assert (repo["format"], repo["mode"], repo["location"], repo["project"]) == (
            "DOCKER",
            "REMOTE_REPOSITORY",
            "us-central1",
            "ml-prod-project",
        )
    hub = repos["docker-io"]["remoteRepositoryConfig"]
    assert hub["dockerRepository"] == {"publicRepository": "DOCKER_HUB"}
    cred = images(stack_config("prod-gcp"))["pullThrough"]["credentials"]["docker.io"]
    assert hub["upstreamCredentials"]["usernamePasswordCredentials"] == {
        "username": cred["username"],
        "passwordSecretVersion": cred["secret"],
    }
    assert repos["nvcr-io"]["remoteRepositoryConfig"]["commonRepository"] == {"uri": "https://nvcr.io"}


def test_the_plan_prints_the_disk_image_build():
    """gke-disk-image-builder's flags (its README): the project, the image name, the pool's zone, the images as the
    nodes pull them (through Artifact Registry: a service-account token), a disk that holds them."""
    (line,) = [
        x for x in cli.plan_text(plan_module.build(load_spec(stack_config("prod-gcp")), "prod-gcp")) if "go run" in x
    ]
    assert "--project-name=ml-prod-project --image-name=pytorch-25-08-cache --zone=us-central1-a" in line
    assert f"--container-image={AR}/nvcr-io/nvidia/pytorch:25.08-py3" in line
    assert "--image-pull-auth=ServiceAccountToken" in line
    assert int(re.search(r"--disk-size-gb=(\d+)", line).group(1)) >= 22


# ---------------------------------------------------------------------------------------------- cold pulls


def test_a_cold_pull_costs_gpu_time_at_the_pools_price():
    """3.5 GB a minute (the AWS ML blog's 15-20 GB in 4-6 minutes): prod-aws's 22 GiB image on a100-train."""
    p = plan_module.build(load_spec(stack_config("prod-aws")), "prod-aws")
    cold = p.pools["a100-train"].cost["coldPull"]
    minutes = 22 * 1.073741824 / 3.5
    node = p.pools["a100-train"].price["onDemandPerNodeHour"]
    assert cold["minutes"] == round(minutes, 1)
    assert cold["gpuHoursPerNode"] == round(8 * minutes / 60, 2)
    assert cold["usdPerNode"] == pytest.approx(node * minutes / 60, abs=1e-4)
    assert cold["usdMaxScale"] == pytest.approx(node * minutes / 60 * 4, abs=1e-3)  # maxNodes 4
    assert (cold["warm"], cold["avoided"]) == ("pre-pull", False)
    gang = p.pools["a100-gang"].cost["coldPull"]
    assert (gang["warm"], gang["avoided"]) == ("snapshot", True)
    other = p.pools["h100-inference"].cost["coldPull"]
    assert (other["gib"], other["size"], other["warm"]) == (20, "default", "none")


def test_stacks_without_an_image_section_keep_their_cost_document():
    p = plan_module.build(load_spec(stack_config("dev-aws")), "dev-aws")
    assert p.images is None
    assert all("coldPull" not in pool.cost for pool in p.pools.values())


# ----------------------------------------------------------------------------------------------------- explain


def _pod(namespace: str, image: str, pool: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": namespace},
            "spec": {
                "nodeSelector": {"gpu-platform/pool": pool},
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                "containers": [{"name": "c", "image": image, "resources": {"limits": {"nvidia.com/gpu": 1}}}],
            },
        }
    )


def _gang_note(image: str) -> str:
    """The image layer of the Volcano example (applied-ml's gang on a100-gang) running ``image``."""
    text = (ROOT / "examples" / "volcano-pytorch-job.yaml").read_text().replace(f"{ECR}/{PYTORCH}", image)
    (t,) = explain.explain_all(load_spec(stack_config("prod-aws")), text)
    (layer,) = [x for x in t.layers if x.name == "image"]
    assert layer.ok and t.pending is None  # a note: a cold pull delays pods, it does not keep them Pending
    return layer.detail


def test_explain_says_warm_mirrored_or_neither():
    warm = _gang_note(f"{ECR}/{PYTORCH}")
    assert warm == f"{ECR}/{PYTORCH} is warm on a100-gang: on the node's data volume at boot (snapshot)"
    # the training example (a topology-aware gang on a100-train), as prod-aws's cache serves its image
    text = (ROOT / "examples" / "kueue-pytorch-training-job.yaml").read_text()
    (t,) = explain.explain_all(load_spec(stack_config("prod-aws")), text)
    (pulled,) = [x.detail for x in t.layers if x.name == "image"]
    assert pulled.startswith(f"{ECR}/{PYTORCH} is warm on a100-train: pre-pulled")
    upstream = _gang_note(PYTORCH)
    assert upstream.startswith(f"warning: {PYTORCH} is declared for a100-gang but warm and mirrored as {ECR}/{PYTORCH}")
    mirrored = _gang_note(f"{ECR}/quay.io/org/train:1")
    assert mirrored.startswith(f"{ECR}/quay.io/org/train:1 is pulled through the mirror, not warm on a100-gang")
    neither = _gang_note("quay.io/org/train:1")
    assert neither.startswith("warning: quay.io/org/train:1 is neither warm nor mirrored on a100-gang")
    assert "declare it in images.workloads for a100-gang" in neither


def test_explain_says_nothing_of_images_on_a_stack_without_an_image_section():
    (t,) = explain.explain_all(load_spec(stack_config("dev-aws")), _pod("ml-dev", "quay.io/org/x:1", "a10g-spot"))
    assert "image" not in [x.name for x in t.layers]


# ----------------------------------------------------------------------------------------------------- peer


def _coverage_aws() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "tests" / "fixtures" / "coverage" / "Pulumi.coverage-aws.yaml").read_text())["config"]


def test_peer_installs_spegel_only_on_the_nodes_that_keep_unpacked_layers():
    """coverage-aws (mirror: peer): Spegel's chart (spegel-org/spegel v0.7.4, oci://ghcr.io/spegel-org/helm-charts) in
    a privileged operator namespace (its DaemonSet mounts containerd's socket and config directory from the host), its
    pods only on the AL2023 pools' nodes, whose user data keeps unpacked layers; the Bottlerocket pools are no peers."""
    r = render_config(_coverage_aws(), "coverage-aws")
    rel = next(x.inputs for x in r.releases if x.inputs["name"] == "spegel")
    assert (rel["chart"], rel["version"], rel["namespace"]) == (
        "oci://ghcr.io/spegel-org/helm-charts/spegel",
        "0.7.4",
        "spegel",
    )
    terms = rel["values"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    (term,) = terms["nodeSelectorTerms"]
    (match,) = term["matchExpressions"]
    pools = _coverage_aws()["gpu-platform:nodePools"]
    al2023 = sorted(p["name"] for p in pools if p.get("os", "al2023") == "al2023")
    assert (match["key"], match["operator"], sorted(match["values"])) == ("gpu-platform/pool", "In", al2023)
    ns = manifest(r, "Namespace", "spegel")
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    assert ns["metadata"]["labels"]["gpu-platform/operator-namespace"] == "true"


def test_peer_needs_containerd_2_and_an_al2023_pool():
    """EKS's AL2023 AMIs ship containerd 1.7 before Kubernetes 1.30 (amazon-eks-ami
    templates/al2023/variables-1.29.json), where nodeadm refuses the version-3 config Spegel's docs give; a stack of
    Bottlerocket pools only has no node the platform can make a peer (Spegel's docs: Bottlerocket takes a mirror from
    a bootstrap container only)."""
    old = _coverage_aws()
    old["gpu-platform:cluster"]["kubernetesVersion"] = "1.29"
    (found,) = [p for p in problems(old) if p.startswith("gpu-platform:images.mirror:")]
    assert found.startswith("gpu-platform:images.mirror: peer needs containerd 2 on the AL2023 nodes")
    assert "1.30 or later" in found
    new = _coverage_aws()
    new["gpu-platform:cluster"]["kubernetesVersion"] = "1.32"  # the oldest the autoscaler pins
    assert load_spec(new).images.mirror == "peer"
    bottlerocket = _coverage_aws()
    for pool in bottlerocket["gpu-platform:nodePools"]:
        pool["os"] = "bottlerocket"
    found = problems(bottlerocket)
    assert any(p.startswith("gpu-platform:images.mirror: peer serves images between AL2023 nodes") for p in found)


def test_spegel_is_not_among_the_bundled_archives():
    """upstream/charts holds no Spegel chart (versions.NOT_BUNDLED): chartSource bundled is refused with the archive
    it lacks, at the key that named the source."""
    cfg = _coverage_aws()
    cfg["gpu-platform:chartSource"] = "bundled"
    cfg.pop("gpu-platform:charts", None)
    found = problems(cfg)
    assert any(p.startswith("gpu-platform:chartSource:") and "spegel-0.7.4.tgz" in p for p in found), found


def test_explain_says_a_declared_image_nothing_warms():
    """coverage-gcp declares its notebook image but turns the pre-puller off: declared, not warm, streamed."""
    cfg = yaml.safe_load((ROOT / "tests" / "fixtures" / "coverage" / "Pulumi.coverage-gcp.yaml").read_text())["config"]
    image = "quay.io/jupyter/pytorch-notebook:cuda12-2025-08-18"
    pod = yaml.safe_load(_pod("sandbox", image, "l4-timeshare"))
    pod["spec"]["tolerations"].append({"key": "workload.example.com/preemptible", "operator": "Exists"})
    pod["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "gpu-jobs"}  # its scheduling.localQueueName
    (t,) = explain.explain_all(load_spec(cfg), yaml.safe_dump(pod))
    (note,) = [x.detail for x in t.layers if x.name == "image"]
    assert note.startswith(f"{image} is declared for l4-timeshare but not warm (images.prePull is off); image stream")


def test_the_karpenter_classes_with_images_validate_against_the_upstream_crd():
    """coverage-aws's EC2NodeClasses (a snapshot data volume, nodeadm user data) against the strict EC2NodeClass schema
    (upstream/karpenter), and its CEL rule: volumeInitializationRate only with a snapshotID."""
    schema = json.loads((UPSTREAM / "karpenter" / "ec2nodeclass.karpenter.k8s.aws.v1.strict.json").read_text())
    validator = Draft7Validator(schema)
    classes = [m for m in render_config(_coverage_aws(), "coverage-aws").manifests if m["kind"] == "EC2NodeClass"]
    assert any("snapshotID" in b["ebs"] for c in classes for b in c["spec"]["blockDeviceMappings"])
    for c in classes:
        assert [e.message for e in validator.iter_errors(c)] == [], c["metadata"]["name"]
        for b in c["spec"]["blockDeviceMappings"]:
            assert "volumeInitializationRate" not in b["ebs"] or b["ebs"].get("snapshotID")


def test_the_summary_warns_that_a_found_clusters_system_nodes_need_to_fill_the_cache():
    """prod-aws finds its cluster: the controllers' first pulls through ECR run on nodes the platform does not own."""
    from components.explain import summary

    assert any(
        "ecr:BatchImportUpstreamImage" in w
        for w in summary.warnings(plan_module.build(load_spec(stack_config("prod-aws")), "prod-aws"))
    )
    assert not any(
        "ECR" in w for w in summary.warnings(plan_module.build(load_spec(stack_config("dev-aws")), "dev-aws"))
    )
