"""examples/: every object validates (core kinds with kubernetes-validate strict for 1.33 and 1.37, Volcano Jobs
with the upstream strict schema), and every workload uses what its target stack renders: the namespace,
the LocalQueue or Volcano queue, a PriorityClass within the tenant's ceiling, a GPU resource a pool the tenant
has quota on advertises, and tolerations for that pool's taints."""

from __future__ import annotations

import copy
import functools
import json
import re
import tarfile
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from conftest import (
    ROOT,
    STACKS,
    UPSTREAM,
    kubernetes_schemas_parsed_once,
    manifest,
    release,
    rendered,
    stack_config,
    strict_crd_schema,
    upstream_of,
    upstream_yaml_docs,
)
from jsonschema import Draft7Validator

from components.data import versions
from components.plan import derive
from components.plan.tenancy import KUEUE_PRIORITY_LABEL
from components.render import kueue

kubernetes_schemas_parsed_once()

EXAMPLES = ROOT / "examples"
FILES = sorted(EXAMPLES.glob("*.yaml"))
K8S_VERSIONS = ("1.33.0", "1.37.0")
CORE_GROUPS = {"v1", "apps", "batch"}
VOLCANO_JOB = ("batch.volcano.sh/v1alpha1", "Job")
TARGET = re.compile(
    r"^# Target stack: (?P<stack>[a-z0-9-]+) -- tenant (?P<tenant>[a-z0-9-]+), pool (?P<pool>[a-z0-9-]+)"
)


@functools.cache
def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]


@functools.cache
def _target(path: Path) -> dict[str, str]:
    m = TARGET.match(path.read_text().splitlines()[0])
    assert m, f"{path.name}: first line must be '# Target stack: <stack> -- tenant <t>, pool <p>'"
    return m.groupdict()


def _core(doc) -> bool:
    api = doc["apiVersion"]
    return (api.split("/")[0] if "/" in api else api) in CORE_GROUPS


def _pod_specs(doc) -> list[dict[str, Any]]:
    """(pod spec, pod metadata) of a workload; [] for non-workloads."""
    kind = (doc["apiVersion"], doc["kind"])
    if kind == ("v1", "Pod"):
        return [{"spec": doc["spec"], "metadata": doc["metadata"]}]
    if kind in (("batch/v1", "Job"), ("apps/v1", "Deployment"), ("apps/v1", "StatefulSet")):
        return [doc["spec"]["template"]]
    if kind == VOLCANO_JOB:
        return [t["template"] for t in doc["spec"]["tasks"]]
    if kind == ("jobset.x-k8s.io/v1alpha2", "JobSet"):  # each replicated Job's pod template
        return [r["template"]["spec"]["template"] for r in doc["spec"]["replicatedJobs"]]
    if kind == ("ray.io/v1", "RayJob"):  # each GPU worker group's pod template (the CPU head: _operator_pods)
        return [g["template"] for g in doc["spec"]["rayClusterSpec"]["workerGroupSpecs"]]
    if kind == TRAINJOB:
        return [_trainjob_node_pod(doc)]
    return []


TRAINJOB = ("trainer.kubeflow.org/v1alpha1", "TrainJob")


def _trainjob_node_pod(doc) -> dict[str, Any]:
    """The pod template of a TrainJob's trainer step as far as the file decides it: the runtimePatches' pod fields
    for the replicated Job ``node`` with the ``node`` container's image, command and resources from ``trainer``
    (kubeflow/trainer v2.2.1 pkg/runtime/framework/plugins/jobset/builder.go ``Trainer``)."""
    (patch,) = doc["spec"]["runtimePatches"]
    (job,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    assert job["name"] == "node"
    tpl = job["template"]["spec"]["template"]
    trainer = doc["spec"]["trainer"]
    (node,) = tpl["spec"]["containers"]
    assert node["name"] == "node"
    container = {**node, "image": trainer["image"], "command": trainer["command"]}
    container["resources"] = trainer["resourcesPerNode"]
    return {**tpl, "spec": {**tpl["spec"], "containers": [container]}}


def _workloads(path):
    return [d for d in _docs(path) if _pod_specs(d)]


def _gpu_requests(pod_spec) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in pod_spec.get("containers", []) + pod_spec.get("initContainers", []):
        for section in ("requests", "limits"):
            for name, n in (c.get("resources", {}).get(section) or {}).items():
                if name.startswith("nvidia.com/"):
                    out[name] = max(out.get(name, 0), int(n))
    return out


def _claim_classes(pod_spec, namespace, rendering, docs) -> dict[str, int]:
    """DRA: devices per DeviceClass the pod's claims ask for, reading each ResourceClaimTemplate from the example
    file or, failing that, from what the target stack renders in the namespace. Every container listing a claim
    must name one the pod declares."""
    declared = {c["name"]: c for c in pod_spec.get("resourceClaims", [])}
    for c in pod_spec["containers"]:
        for claim in c.get("resources", {}).get("claims", []):
            assert claim["name"] in declared, claim
    local = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ResourceClaimTemplate"}
    out: dict[str, int] = {}
    for claim in declared.values():
        name = claim["resourceClaimTemplateName"]
        tpl = local.get(name) or manifest(rendering, "ResourceClaimTemplate", name, namespace)
        assert tpl["metadata"]["namespace"] == namespace
        for req in tpl["spec"]["spec"]["devices"]["requests"]:
            cls = req["exactly"]["deviceClassName"]
            out[cls] = out.get(cls, 0) + req["exactly"].get("count", 1)
    return out


def test_there_are_examples_for_kueue_volcano_mig_and_time_slicing():
    names = {p.name for p in FILES}
    assert names == {
        "kueue-pytorch-training-job.yaml",
        "volcano-pytorch-job.yaml",
        "mig-inference-deployment.yaml",
        "timesliced-notebook-pod.yaml",
        "dra-training-job.yaml",
        "dra-mig-inference-deployment.yaml",
        "dra-notebook-shared-claim.yaml",
        "jobset-training.yaml",
        "ray-training-job.yaml",
        "starter-finetune-job.yaml",
        "starter-gcp-finetune-job.yaml",
        "trainjob-training.yaml",
    }


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_readme_lists_each_example_with_its_stack(path):
    readme = (EXAMPLES / "README.md").read_text()
    t = _target(path)
    row = next(line for line in readme.splitlines() if f"[`{path.name}`]" in line)
    assert f"| `{t['stack']}` |" in row and f"{t['tenant']} / {t['pool']}" in row


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_core_objects_validate_strictly(path, version):
    docs = [d for d in _docs(path) if _core(d)]
    # Volcano tasks' pod templates are core PodSpecs too
    for d in _docs(path):
        if (d["apiVersion"], d["kind"]) == VOLCANO_JOB:
            for t in d["spec"]["tasks"]:
                docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": t["name"]}, **t["template"]})
        elif not _core(d):  # operator kinds (JobSet, RayJob): their pod templates are core PodSpecs
            templates = _pod_specs(d)
            if d["kind"] == "RayJob":
                templates = [d["spec"]["rayClusterSpec"]["headGroupSpec"]["template"], *templates]
            for i, t in enumerate(templates):
                docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"t{i}"}, "spec": t["spec"]})
    assert docs
    for doc in docs:
        kubernetes_validate.validate(doc, version, strict=True)


def test_volcano_job_validates_against_the_strict_schema():
    schema = json.loads((UPSTREAM / "volcano" / "job.batch.volcano.sh.v1alpha1.strict.json").read_text())
    jobs = [d for p in FILES for d in _docs(p) if (d["apiVersion"], d["kind"]) == VOLCANO_JOB]
    assert len(jobs) == 1
    for job in jobs:
        assert [e.message for e in Draft7Validator(schema).iter_errors(job)] == []


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_workloads_use_what_the_target_stack_creates(path):
    t = _target(path)
    r = rendered(t["stack"])
    spec = r.spec
    tenant = next(x for x in spec.tenants if x.name == t["tenant"])
    pool = spec.pool(t["pool"])
    claims = {d["metadata"]["name"] for d in _docs(path) if d["kind"] == "PersistentVolumeClaim"}
    workloads = _workloads(path)
    assert workloads
    for doc in workloads:
        ns = doc["metadata"]["namespace"]
        assert ns == tenant.name
        manifest(r, "Namespace", ns)
        labels = doc["metadata"].get("labels", {})
        ns_labels = manifest(r, "Namespace", ns)["metadata"]["labels"]
        if (doc["apiVersion"], doc["kind"]) == VOLCANO_JOB:
            assert spec.addons.volcano
            # a Volcano tenant's namespace, which Kueue leaves alone (else it gates the gang's pods one by one)
            assert ns_labels[derive.SCHEDULER_LABEL] == "volcano"
            assert kueue.QUEUE_NAME_LABEL not in labels  # never both schedulers
            assert doc["spec"]["queue"] == tenant.name
            manifest(r, "Queue", doc["spec"]["queue"])
            assert doc["spec"]["schedulerName"] == "volcano"
            assert doc["spec"]["minAvailable"] == sum(task["replicas"] for task in doc["spec"]["tasks"])
            priorities = [doc["spec"]["priorityClassName"]]
        else:
            assert spec.addons.kueue
            assert ns_labels[derive.SCHEDULER_LABEL] == "kueue"
            queue = labels[kueue.QUEUE_NAME_LABEL]
            assert queue == spec.scheduling.local_queue_name
            assert manifest(r, "LocalQueue", queue, ns)["spec"]["clusterQueue"] == tenant.name
            # Kueue's priority label names a WorkloadPriorityClass; the platform makes one per PriorityClass
            priorities = [labels[KUEUE_PRIORITY_LABEL]] if KUEUE_PRIORITY_LABEL in labels else []
            for name in priorities:
                manifest(r, "WorkloadPriorityClass", name)
        for tpl in _pod_specs(doc):
            pod = tpl["spec"]
            priorities.append(pod.get("priorityClassName") or priorities[0])
            assert pod["nodeSelector"][derive.POOL_LABEL] == pool.name
            if ns_labels[derive.SCHEDULER_LABEL] == "volcano":
                # the Volcano tenant pod policy: the pool is one the namespace lists, and the pods are Volcano's
                # (the job controller gives a template without schedulerName the job's)
                ns_annotations = manifest(r, "Namespace", ns)["metadata"]["annotations"]
                assert pool.name in ns_annotations["gpu-platform/pools"].split(",")
                assert (pod.get("schedulerName") or doc["spec"]["schedulerName"]) == "volcano"
                if pool.name in ns_annotations.get("gpu-platform/one-unit-pools", "").split(","):
                    for c in pod["containers"] + pod.get("initContainers", []):
                        limits = c.get("resources", {}).get("limits", {})
                        assert all(int(n) <= 1 for r_, n in limits.items() if r_.startswith("nvidia.com/")), c
            gpus = _gpu_requests(pod)
            if derive.dra(spec):
                # DRA: no extended resources (nvidia.com/gpu stays capped at 0); the claimed DeviceClass is the one
                # the pool's devices come through, counted under the name Kueue maps it to
                assert not gpus, gpus
                classes = _claim_classes(pod, ns, r, _docs(path))
                assert classes, "a GPU workload"
                gpus = {f"{cls}/devices": n for cls, n in classes.items()}
            assert gpus, "a GPU workload"
            assert tenant.gpu_quota.get(pool.name, 0) > 0, "the tenant has quota on the pool"
            assert set(gpus) <= set(derive.units_per_gpu(spec, pool)), gpus
            for tol in derive.tolerations(pool):
                assert tol in pod["tolerations"], tol
            for vol in pod.get("volumes", []):
                if "persistentVolumeClaim" in vol:  # the example's own claim, or one the stack makes (storage)
                    name = vol["persistentVolumeClaim"]["claimName"]
                    assert name in claims or manifest(r, "PersistentVolumeClaim", name, ns), name
        for name in priorities:
            manifest(r, "PriorityClass", name)
            assert name not in derive.priority_ceiling_excluded(spec, tenant), name


def test_training_job_is_a_kueue_gang_on_the_topology():
    path = EXAMPLES / "kueue-pytorch-training-job.yaml"
    job = next(d for d in _docs(path) if d["kind"] == "Job")
    s = job["spec"]
    assert s["completionMode"] == "Indexed"
    assert s["parallelism"] == s["completions"] == 2
    r = rendered("prod-aws")
    cfg = yaml.safe_load(release(r, "kueue")["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert cfg["waitForPodsReady"]["timeout"]  # all-or-nothing start is on in the target stack
    # the pool's flavor only takes topology-requesting workloads: the level must be one of the Topology's
    assert manifest(r, "ResourceFlavor", "a100-train")["spec"]["topologyName"] == kueue.TOPOLOGY_NAME
    levels = [lvl["nodeLabel"] for lvl in manifest(r, "Topology", kueue.TOPOLOGY_NAME)["spec"]["levels"]]
    level = s["template"]["metadata"]["annotations"][kueue.PREFERRED_TOPOLOGY_ANNOTATION]
    assert level in levels
    pod = s["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in pod["containers"][0]["volumeMounts"]}
    assert volumes[mounts["/dev/shm"]]["emptyDir"]["medium"] == "Memory"
    assert "persistentVolumeClaim" in volumes[mounts["/checkpoints"]]
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 8 == r.spec.pool("a100-train").gpu.per_node


def test_restricted_namespaces_get_restricted_pods():
    checked: dict[str, int] = {}
    for path in FILES:
        t = _target(path)
        ns = manifest(rendered(t["stack"]), "Namespace", t["tenant"])["metadata"]["labels"]
        if ns["pod-security.kubernetes.io/enforce"] != "restricted":
            continue
        for doc in _workloads(path):
            for tpl in _pod_specs(doc):
                checked[path.name] = checked.get(path.name, 0) + 1
                pod = tpl["spec"]
                assert pod["securityContext"]["runAsNonRoot"] is True
                assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
                for c in pod["containers"]:
                    assert c["securityContext"]["allowPrivilegeEscalation"] is False
                    assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    # the one example whose tenant is restricted (prod-aws serving, podSecurity: restricted): one pod template
    assert checked == {"mig-inference-deployment.yaml": 1}


def test_mig_and_time_sliced_examples_ask_for_one_unit():
    mig = _workloads(EXAMPLES / "mig-inference-deployment.yaml")[0]
    assert _gpu_requests(mig["spec"]["template"]["spec"]) == {"nvidia.com/mig-1g.10gb": 1}
    dev = rendered("dev-aws").spec
    l4 = dev.pool("l4-shared")
    assert l4.sharing.strategy == "time-slicing" and l4.sharing.fail_requests_greater_than_one
    notebook = _workloads(EXAMPLES / "timesliced-notebook-pod.yaml")[0]
    assert _gpu_requests(notebook["spec"]) == {"nvidia.com/gpu": 1}


def test_examples_target_shipped_stacks():
    assert {_target(p)["stack"] for p in FILES} <= set(STACKS)


# EC2 instances with EFA reserve 5,128 2 MiB hugepages, which libfabric's EFA provider allocates its buffers
# from; a pod reaches them only by requesting hugepages-2Mi (requests equal to limits, as Kubernetes requires
# for hugepages). The EKS user guide's EFA page asks 5120Mi per pod.
EFA_HUGEPAGES = 5128 * 2  # MiB a node of an EFA instance reserves


@pytest.mark.parametrize("name", ["kueue-pytorch-training-job.yaml", "volcano-pytorch-job.yaml"])
def test_efa_examples_request_the_hugepages_the_node_reserves(name):
    docs = [d for d in yaml.safe_load_all((ROOT / "examples" / name).read_text()) if d]
    containers = []
    for d in docs:
        if d["kind"] != "Job":
            continue
        volcano = d["apiVersion"].startswith("batch.volcano.sh/")
        templates = [t["template"] for t in d["spec"]["tasks"]] if volcano else [d["spec"]["template"]]
        containers += [c for t in templates for c in t["spec"]["containers"]]
    efa = [c for c in containers if "vpc.amazonaws.com/efa" in c["resources"]["requests"]]
    assert efa
    for c in efa:
        requests, limits = c["resources"]["requests"], c["resources"]["limits"]
        assert requests["hugepages-2Mi"] == limits["hugepages-2Mi"] == "5120Mi"
        assert int(requests["hugepages-2Mi"].removesuffix("Mi")) <= EFA_HUGEPAGES  # fits what one node reserves


def _quantity_gib(text: str) -> float:
    units = {"Gi": 1, "Ti": 1024, "Mi": 1 / 1024}
    for suffix, factor in units.items():
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    raise AssertionError(f"unexpected storage quantity {text}")


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_example_claims_fit_the_tenants_storage_quota(path):
    """A claim an example makes names a StorageClass its target stack renders, and fits what the tenant's
    ResourceQuota allows of that class (gpu-platform:storage quotas: else the API server refuses it)."""
    t = _target(path)
    r = rendered(t["stack"])
    claims = [d for d in _docs(path) if d["kind"] == "PersistentVolumeClaim"]
    for claim in claims:
        cls = claim["spec"].get("storageClassName")
        assert cls, f"{claim['metadata']['name']}: name the stack's class (no default class is set)"
        manifest(r, "StorageClass", cls)
        hard = manifest(r, "ResourceQuota", "gpu-quota", t["tenant"])["spec"]["hard"]
        wanted = _quantity_gib(claim["spec"]["resources"]["requests"]["storage"])
        assert wanted <= _quantity_gib(hard[f"{cls}.storageclass.storage.k8s.io/requests.storage"])
        assert int(hard[f"{cls}.storageclass.storage.k8s.io/persistentvolumeclaims"]) >= 1


TRAINING_EXAMPLES = (
    "kueue-pytorch-training-job.yaml",
    "volcano-pytorch-job.yaml",
    "jobset-training.yaml",
    "ray-training-job.yaml",
    "trainjob-training.yaml",
)


@pytest.mark.parametrize("name", TRAINING_EXAMPLES)
def test_training_examples_checkpoint_to_the_stacks_shared_file_system(name):
    """Every GPU pod of a training example mounts a claim of a file system its target stack declares
    (gpu-platform:storage) read-write: the checkpoints a preempted or evicted job resumes from outlive its pods."""
    path = EXAMPLES / name
    t = _target(path)
    r = rendered(t["stack"])
    storage_classes = {m["metadata"]["name"] for m in r.manifests if m["kind"] == "StorageClass"}
    assert r.spec.storage.file_systems, "the target stack declares shared storage"
    local = {d["metadata"]["name"]: d for d in _docs(path) if d["kind"] == "PersistentVolumeClaim"}
    for doc in _workloads(path):
        for tpl in _pod_specs(doc):
            pod = tpl["spec"]
            mounted = {
                v["name"]: v["persistentVolumeClaim"]["claimName"]
                for v in pod["volumes"]
                if "persistentVolumeClaim" in v
            }
            assert mounted, f"{name}: a pod without a checkpoint volume"
            for claim_name in mounted.values():
                claim = local.get(claim_name) or manifest(r, "PersistentVolumeClaim", claim_name, t["tenant"])
                assert claim["spec"]["storageClassName"] in storage_classes
                assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
            for c in pod["containers"]:
                mounts = [m for m in c.get("volumeMounts", []) if m["name"] in mounted]
                assert mounts and not any(m.get("readOnly") for m in mounts), c["name"]


# ------------------------------------------------------------------------------------------ TrainJob


def test_trainjob_example_validates_against_the_upstream_crd():
    """The TrainJob against Kubeflow Trainer v2.2.1's own CRD (upstream/crds/kubeflow-trainer/, byte for byte),
    unknown fields refused: runtimePatches' deep nesting is where a misplaced key would be silently pruned. Its
    CEL rules (immutability, name shape) are the real API server's to apply (tests/cluster/)."""
    crd = yaml.safe_load(
        (ROOT / "upstream" / "crds" / "kubeflow-trainer" / "trainer.kubeflow.org_trainjobs.yaml").read_text()
    )
    (version,) = crd["spec"]["versions"]
    schema = strict_crd_schema(version["schema"]["openAPIV3Schema"])
    jobs = [d for p in FILES for d in _docs(p) if (d["apiVersion"], d["kind"]) == TRAINJOB]
    assert len(jobs) == 1
    for job in jobs:
        assert f"{crd['spec']['group']}/{version['name']}" == job["apiVersion"]
        assert [e.message for e in Draft7Validator(schema).iter_errors(job)] == []
        # Kueue's webhook refuses runtimePatches managers that are not a domain-prefixed path (kubeflow/trainer
        # v2.2.1 pkg/runtime/framework/plugins/jobset/jobset.go: validation.IsDomainPrefixedPath)
        for patch in job["spec"]["runtimePatches"]:
            prefix, _, path = patch["manager"].partition("/")
            assert re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", prefix) and path, patch["manager"]


def test_trainjob_example_references_a_runtime_its_stack_installs():
    """torch-distributed is the ClusterTrainingRuntime of the trainer's chart
    (charts/kubeflow-trainer/templates/runtimes/torch-distributed.yaml at v2.2.1), which the platform makes itself
    after the webhook gate instead of the chart (plan/operators.py TORCH_RUNTIME): the object is the template's,
    and its trainer step is the replicated Job and container ``node`` the example patches."""
    path = EXAMPLES / "trainjob-training.yaml"
    (job,) = (d for d in _docs(path) if (d["apiVersion"], d["kind"]) == TRAINJOB)
    ref = job["spec"]["runtimeRef"]
    assert (ref["apiGroup"], ref["kind"], ref["name"]) == (
        "trainer.kubeflow.org",
        "ClusterTrainingRuntime",
        "torch-distributed",
    )
    r = rendered(_target(path)["stack"])
    assert r.spec.addons.trainer and r.spec.addons.jobset
    runtimes = release(r, "kubeflow-trainer")["values"]["runtimes"]
    assert runtimes["torchDistributed"] == {"enabled": False}
    assert not any(v.get("enabled") for v in runtimes.values())  # the others' images only follow the mirror
    # the pinned chart's template: a chart bump compares the platform's copy with the new template
    with tarfile.open(UPSTREAM / "charts" / f"kubeflow-trainer-{versions.TRAINER.version}.tgz") as tar:
        f = tar.extractfile("kubeflow-trainer/templates/runtimes/torch-distributed.yaml")
        assert f is not None
        template = f.read().decode()
    # the template without its Helm lines (the enable condition and the chart's labels) is the object
    template = re.sub(r"\{\{-? /\*.*?\*/ -?\}\}", "", template, flags=re.S)  # the licence comment
    upstream = yaml.safe_load("\n".join(line for line in template.splitlines() if "{{" not in line))
    (runtime,) = [m for m in r.manifests if m["kind"] == "ClusterTrainingRuntime"]
    assert (runtime["apiVersion"], runtime["metadata"]["name"]) == (
        upstream["apiVersion"],
        upstream["metadata"]["name"],
    )
    assert runtime["metadata"]["labels"]["trainer.kubeflow.org/framework"] == "torch"
    # its image as the chart names it (the stack's mirror taken off: conftest.upstream_of)
    ours = copy.deepcopy(runtime["spec"])
    (replicated,) = ours["template"]["spec"]["replicatedJobs"]
    (container,) = replicated["template"]["spec"]["template"]["spec"]["containers"]
    container["image"] = upstream_of(container["image"], stack_config(_target(path)["stack"])).removeprefix(
        "docker.io/"
    )
    assert ours == upstream["spec"]
    node = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]
    assert node["name"] == "node"
    assert node["template"]["spec"]["template"]["spec"]["containers"][0]["name"] == "node"
    assert job["spec"]["trainer"]["numNodes"] == 2
    assert (
        job["spec"]["trainer"]["resourcesPerNode"]["limits"]["nvidia.com/gpu"] == r.spec.pool("h100-spot").gpu.per_node
    )


@functools.cache
def _upstream_crd_versions() -> dict[tuple[str, str], set[str]]:
    """(group, kind) -> served versions of every CRD in upstream/crds (what tests/cluster/apply.py installs into
    the real API server before the cluster tests dry-run-create each example in its target stack)."""
    out: dict[tuple[str, str], set[str]] = {}
    for path in sorted((ROOT / "upstream" / "crds").rglob("*.yaml")):
        for doc in upstream_yaml_docs(path):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                spec = doc["spec"]
                served = {v["name"] for v in spec["versions"] if v.get("served")}
                out.setdefault((spec["group"], spec["names"]["kind"]), set()).update(served)
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_custom_kind_of_an_example_has_its_crd_for_the_cluster_tests(path):
    crds = _upstream_crd_versions()
    for doc in _docs(path):
        group, _, version = doc["apiVersion"].rpartition("/")
        if group in ("", "apps", "batch", "resource.k8s.io"):  # built into the API server
            continue
        assert version in crds.get((group, doc["kind"]), set()), f"{doc['kind']} {doc['apiVersion']}: no CRD"
