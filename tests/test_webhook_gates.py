"""Issue 10 §6: no custom resource an add-on's admission webhook guards is created before that webhook answers.

The mechanism is a batch/v1 Job per add-on that dry-runs one guarded object through the API server until it
succeeds; pulumi-kubernetes awaits the Job's Complete condition, so dependsOn edges on the Job order the
deployment under the real engine. These tests check the edges for every guarded CR of every stack, and the
probe's privileges and Pod Security."""

from __future__ import annotations

import hashlib
import json
import re

import pytest
import yaml
from conftest import (
    STACKS,
    UPSTREAM,
    manifest,
    release,
    render_config,
    rendered,
    stack_config,
    strict_crd_schema,
    upstream_of,
)
from jsonschema import Draft7Validator

from components.cli.loader import SpecError, load_spec
from components.data import versions
from components.render import kueue, volcano, webhooks

JOB = "kubernetes:batch/v1:Job"
GATED = {
    # type prefix of the guarded CRs -> (probe Job resource name, release resource name)
    "kubernetes:kueue.x-k8s.io/": ("kueue-webhook-ready", "kueue"),
    "kubernetes:scheduling.volcano.sh/": ("volcano-webhook-ready", "volcano"),
    "kubernetes:trainer.kubeflow.org/": ("trainer-webhook-ready", "trainer"),
}


def _gated(r, prefix):
    return [x for x in r.resources if x.type.startswith(prefix)]


@pytest.mark.parametrize("stack", STACKS)
def test_every_guarded_custom_resource_depends_directly_on_its_webhook_gate(stack):
    r = rendered(stack)
    seen = 0
    for prefix, (gate, rel) in GATED.items():
        for res in _gated(r, prefix):
            assert gate in res.depends_on, (res.type, res.name, res.depends_on)
            assert rel in res.depends_on, (res.type, res.name)
            seen += 1
    assert seen > 0
    # and the gate itself waits for the release (CRDs, webhook configurations) and its own RBAC
    spec = r.spec
    for prefix, (gate, rel) in GATED.items():
        on = (
            (prefix.startswith("kubernetes:kueue") and spec.addons.kueue)
            or (prefix.startswith("kubernetes:scheduling.volcano") and spec.addons.volcano)
            or (prefix.startswith("kubernetes:trainer") and spec.addons.trainer)
        )
        if not on:
            with pytest.raises(KeyError):
                r.find(JOB, gate)
            continue
        job = r.find(JOB, gate)
        name = gate.split("-")[0]
        assert set(job.depends_on) == {rel, f"gpu-platform-{name}-webhook-probe", gate}  # release, binding, ConfigMap


def test_prod_aws_guarded_resources_are_all_counted():
    """prod-aws: 5 WorkloadPriorityClasses, 1 Topology, 5 ResourceFlavors (the 4 pools Kueue hands out +
    default; a100-gang is Volcano's), 3 ClusterQueues and 3 LocalQueues (research, serving, notebooks: applied-ml
    is Volcano's) behind the Kueue gate; 1 Volcano Queue (applied-ml) behind Volcano's."""
    r = rendered("prod-aws")
    kinds = sorted(x.type.rsplit(":", 1)[-1] for x in _gated(r, "kubernetes:kueue.x-k8s.io/"))
    assert kinds.count("WorkloadPriorityClass") == 5
    assert kinds.count("ResourceFlavor") == 5
    assert kinds.count("ClusterQueue") == 3 and kinds.count("LocalQueue") == 3
    assert kinds.count("Topology") == 1
    assert [x.name for x in _gated(r, "kubernetes:scheduling.volcano.sh/")] == ["applied-ml-volcano-queue"]


def test_prod_gcp_admission_checks_wait_for_the_gate():
    r = rendered("prod-gcp")
    for t in (
        "kubernetes:kueue.x-k8s.io/v1beta2:AdmissionCheck",
        "kubernetes:kueue.x-k8s.io/v1beta2:ProvisioningRequestConfig",
    ):
        found = r.of_type(t)
        assert found, t
        assert all("kueue-webhook-ready" in x.depends_on for x in found)


@pytest.mark.parametrize("addon", ["kueue", "volcano", "trainer"])
def test_probe_job_is_restricted_pinned_and_on_system_nodes(addon):
    r = rendered("prod-aws")
    ns = {"kueue": versions.KUEUE.namespace, "volcano": versions.VOLCANO.namespace, "trainer": "kubeflow-system"}[addon]
    record = r.find("kubernetes:batch/v1:Job", f"{addon}-webhook-ready")
    assert record.inputs["metadata"]["namespace"] == ns
    job = record.inputs["spec"]
    pod = job["template"]["spec"]
    assert pod["serviceAccountName"] == f"{addon}-webhook-probe"
    assert pod["restartPolicy"] == "Never"
    assert pod["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (c,) = pod["containers"]
    assert upstream_of(c["image"], stack_config("prod-aws")).startswith("registry.k8s.io/kubectl:v1.")
    assert c["args"][:2] == ["create", "--dry-run=server"]
    assert c["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert "tolerations" not in pod  # never on GPU nodes
    # retried while the webhook refuses; bounded so a broken webhook fails the deploy instead of hanging
    assert 1 <= job["backoffLimit"] <= 10
    assert job["activeDeadlineSeconds"] <= 20 * 60


@pytest.mark.parametrize(
    ("addon", "group", "resource"),
    [
        ("kueue", "kueue.x-k8s.io", "resourceflavors"),
        ("volcano", "scheduling.volcano.sh", "queues"),
        ("trainer", "trainer.kubeflow.org", "clustertrainingruntimes"),
    ],
)
def test_probe_may_only_create_the_probed_resource(addon, group, resource):
    r = rendered("prod-aws")
    role = manifest(r, "ClusterRole", f"gpu-platform-{addon}-webhook-probe")
    assert role["rules"] == [{"apiGroups": [group], "resources": [resource], "verbs": ["create"]}]
    binding = manifest(r, "ClusterRoleBinding", f"gpu-platform-{addon}-webhook-probe")
    ns = {"kueue": "kueue-system", "volcano": "volcano-system", "trainer": "kubeflow-system"}[addon]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": f"{addon}-webhook-probe", "namespace": ns}]
    assert binding["roleRef"]["name"] == f"gpu-platform-{addon}-webhook-probe"


@pytest.mark.parametrize(
    ("addon", "schema"),
    [
        ("kueue", "kueue/resourceflavor.kueue.x-k8s.io.v1beta2.strict.json"),
        ("volcano", "volcano/queue.scheduling.volcano.sh.v1beta1.strict.json"),
    ],
)
def test_probed_object_validates_and_is_what_the_role_allows(addon, schema):
    r = rendered("prod-aws")
    ns = {"kueue": "kueue-system", "volcano": "volcano-system", "trainer": "kubeflow-system"}[addon]
    cm = manifest(r, "ConfigMap", f"{addon}-webhook-ready", ns)
    obj = yaml.safe_load(cm["data"][webhooks.PROBE_FILE])
    validator = Draft7Validator(json.loads((UPSTREAM / schema).read_text()))
    assert [e.message for e in validator.iter_errors(obj)] == []
    assert obj["metadata"]["name"] == webhooks.PROBE_OBJECT_NAME
    role = manifest(r, "ClusterRole", f"gpu-platform-{addon}-webhook-probe")["rules"][0]
    assert obj["apiVersion"].split("/")[0] == role["apiGroups"][0]
    probe = {"kueue": kueue.webhook_probe, "volcano": volcano.webhook_probe}[addon](r.spec)
    assert probe.namespace == ns  # the add-on's namespace, which its own Job/Pod webhooks leave alone


def test_a_chart_upgrade_reruns_the_gate():
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:charts"] = {"kueue": {"version": "0.19.3"}}
    spec = load_spec(cfg)
    from components.render import webhooks as w

    body = w.job_spec(spec, kueue.webhook_probe(spec))
    assert body["template"]["metadata"]["annotations"]["gpu-platform/probed-chart-version"] == "0.19.3"


def test_names_the_probe_dry_runs_are_reserved():
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:tenants"][2]["name"] = webhooks.PROBE_OBJECT_NAME
    cfg["gpu-platform:nodePools"][3]["name"] = webhooks.PROBE_OBJECT_NAME
    with pytest.raises(SpecError) as err:
        load_spec(cfg)
    paths = {p.path for p in err.value.problems}
    assert "gpu-platform:tenants[2].name" in paths
    assert "gpu-platform:nodePools[3].name" in paths


def test_the_probe_pod_reads_the_object_it_is_given_and_writes_only_to_tmp():
    """kubectl is pointed at the file the probe ConfigMap holds, mounted read-only from that ConfigMap (named
    after the Job); its HOME (discovery cache) is the one writable emptyDir; it runs as the distroless nonroot
    user (65532), with a small request and a memory limit."""
    spec = load_spec(stack_config("prod-aws"))
    probe = kueue.webhook_probe(spec)
    pod = webhooks.job_spec(spec, probe)["template"]["spec"]
    (c,) = pod["containers"]
    assert c["name"] == "probe"
    assert c["args"] == ["create", "--dry-run=server", "-f", "/probe/probe.yaml"]
    assert webhooks.PROBE_FILE == "probe.yaml"
    assert c["volumeMounts"] == [
        {"name": "probe", "mountPath": "/probe", "readOnly": True},
        {"name": "tmp", "mountPath": "/tmp"},
    ]
    assert pod["volumes"] == [
        {"name": "probe", "configMap": {"name": "kueue-webhook-ready"}},
        {"name": "tmp", "emptyDir": {"sizeLimit": "16Mi"}},
    ]
    assert c["env"] == [{"name": "HOME", "value": "/tmp"}]
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 65532,
        "runAsGroup": 65532,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert c["resources"] == {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}}


def test_the_probe_job_retries_about_ten_minutes_and_is_labelled():
    """Six retries at the Job controller's doubling back-off from 10 s (10+20+40+80+160+320 s, about 10
    minutes) within a 15-minute deadline, which the provider's 20-minute await outlasts."""
    spec = load_spec(stack_config("prod-aws"))
    probe = volcano.webhook_probe(spec)
    job = webhooks.job_spec(spec, probe)
    assert (job["backoffLimit"], job["activeDeadlineSeconds"]) == (6, 900)
    assert webhooks.AWAIT_TIMEOUT == "20m"
    meta = job["template"]["metadata"]
    assert meta["labels"] == {
        "app.kubernetes.io/managed-by": "gpu-platform",
        "app.kubernetes.io/name": "volcano-webhook-ready",
    }
    assert meta["annotations"] == {"gpu-platform/probed-chart-version": "1.15.1"}
    assert webhooks.cluster_role_name(probe) == "gpu-platform-volcano-webhook-probe"


def test_the_gate_runs_only_once_its_account_binding_and_file_exist():
    """The probe Job starts after the release, the RBAC binding (so its first try is authorised) and the probe
    ConfigMap (its mounted file); the binding after the account and the role; everything in the add-on's
    namespace is labelled managed-by."""
    r = rendered("prod-aws")
    job = r.find("kubernetes:batch/v1:Job", "volcano-webhook-ready")
    assert sorted(job.depends_on) == ["gpu-platform-volcano-webhook-probe", "volcano", "volcano-webhook-ready"]
    binding = r.find("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", "gpu-platform-volcano-webhook-probe")
    assert sorted(binding.depends_on) == ["gpu-platform-volcano-webhook-probe", "volcano-webhook-probe"]
    labels = {"app.kubernetes.io/managed-by": "gpu-platform"}
    job_name = "volcano-webhook-ready-" + _spec_digest(job.inputs["spec"])
    for type_, name, object_name in (
        ("kubernetes:core/v1:ServiceAccount", "volcano-webhook-probe", "volcano-webhook-probe"),
        ("kubernetes:core/v1:ConfigMap", "volcano-webhook-ready", "volcano-webhook-ready"),
        ("kubernetes:batch/v1:Job", "volcano-webhook-ready", job_name),
    ):
        rec = r.find(type_, name)
        assert rec.inputs["metadata"] == {"name": object_name, "namespace": "volcano-system", "labels": labels}, name
        assert rec.parent == "volcano"
    role = r.find("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "gpu-platform-volcano-webhook-probe")
    assert role.inputs["metadata"] == {"name": "gpu-platform-volcano-webhook-probe", "labels": labels}
    assert binding.inputs["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "gpu-platform-volcano-webhook-probe",
    }


def _spec_digest(spec) -> str:
    """sha256 over the spec's canonical JSON (sorted keys, no blanks), first 8 hex digits: worked out here, the
    way the name is documented, not by calling the code that names it. The engine's wire format carries numbers
    as floats (protobuf Struct); the program hashed the ints it wrote (the synth's own conversion undoes that)."""
    from components.cli.synth import _ints as ints

    return hashlib.sha256(json.dumps(ints(spec), sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:8]


def test_a_chart_bump_renames_the_gate_job_and_keeps_its_urn():
    """The API server refuses to update a Job's pod template in place (``spec.template: field is immutable``,
    proven on a real server by tests/cluster): a changed gate must be a new Job. The name follows the spec;
    the Pulumi resource name, and so the URN, does not change."""
    cfg = stack_config("prod-aws")
    before = rendered("prod-aws").find("kubernetes:batch/v1:Job", "kueue-webhook-ready")
    cfg["gpu-platform:charts"] = {"kueue": {"version": "0.19.3"}}
    after = render_config(cfg, "prod-aws").find("kubernetes:batch/v1:Job", "kueue-webhook-ready")
    assert before.urn == after.urn
    assert before.inputs["metadata"]["name"] == "kueue-webhook-ready-" + _spec_digest(before.inputs["spec"])
    assert after.inputs["metadata"]["name"] == "kueue-webhook-ready-" + _spec_digest(after.inputs["spec"])
    assert before.inputs["metadata"]["name"] != after.inputs["metadata"]["name"]


@pytest.mark.parametrize("stack", ["local", "prod-aws"])
def test_a_guarded_object_names_its_gate_and_is_unknown_in_a_preview_until_the_gate_exists(stack):
    """A preview dry-runs every object it would create through the add-on's webhooks unless an input is unknown
    (pulumi-kubernetes provider.go Create: skipPreview := hasComputedValue(newInputs)). After an up interrupted
    between a release and its gate, the webhooks are registered but may not answer: the guarded objects carry
    the gate Job's name as an annotation, known in an up (and in state once the gate exists) and unknown in a
    preview that still has to create the gate, so that preview does not call the webhooks."""
    from components.cli.synth import UNKNOWN, render

    up = rendered(stack)
    preview = render(stack, stack_config(stack), preview=True)
    jobs = {x.name: x.inputs["metadata"]["name"] for x in up.resources if x.type == JOB}
    seen = 0
    for prefix, (gate, _) in GATED.items():
        for res in _gated(up, prefix):
            assert res.inputs["metadata"]["annotations"] == {webhooks.GATE_ANNOTATION: jobs[gate]}, res.name
            seen += 1
        for res in _gated(preview, prefix):
            assert res.inputs["metadata"]["annotations"] == {webhooks.GATE_ANNOTATION: UNKNOWN}, res.name
            assert res.inputs["spec" if "spec" in res.inputs else "metadata"] != UNKNOWN
    assert seen > 3


@pytest.mark.parametrize("stack", ["local", "prod-aws", "prod-gcp"])
def test_gated_releases_skip_helms_wait_and_the_others_keep_it(stack):
    """A gated release (Kueue, Volcano, the Trainer) leaves readiness to its gate and does not wait on uninstall,
    where Helm polls for a ClusterRole the aggregation controller re-created (a destroy hung on it under the real
    engine); every other release keeps Helm's wait (its readiness is the only signal a broken install gives)."""
    releases = {r.name: r.inputs for r in rendered(stack).resources if r.type == "kubernetes:helm.sh/v3:Release"}
    gated = {rel for _, (_, rel) in GATED.items()} & set(releases)
    assert gated == {"kueue", "volcano", "trainer"} & set(releases) and gated
    for name, inputs in releases.items():
        assert inputs.get("skipAwait", False) is (name in gated), name


@pytest.mark.parametrize("stack", STACKS)
def test_every_image_the_platform_sets_itself_is_pinned_by_digest(stack):
    """The platform's own pods (the webhook gates') run an image named by tag and digest, so a re-pushed tag
    cannot change what runs (charts' images are the charts'; the pre-pullers run the stack's declared images and a
    pause container listed without a citable digest: tests/test_image_digests.py)."""
    images = [
        c["image"]
        for m in rendered(stack).manifests
        if m["kind"] != "DaemonSet" or not m["metadata"]["name"].startswith("image-prepull-")
        for c in (m.get("spec", {}).get("template", {}).get("spec", {}).get("containers") or [])
    ]
    assert images, stack
    assert all(re.fullmatch(r"[a-z0-9.\-/]+:[\w.\-]+@sha256:[0-9a-f]{64}", i) for i in images), images


def test_the_trainer_gate_dry_runs_the_runtime_the_platform_then_creates():
    """The Trainer's chart would create ClusterTrainingRuntimes in the same Helm install as the fail-closed webhook
    that guards them, before the manager serves it: the release makes none, the gate dry-runs the runtime (same
    spec, the probe's name), and the runtime object waits for the gate. Both validate against the upstream CRD."""
    from components.plan import operators

    r = rendered("prod-aws")
    runtimes = release(r, "kubeflow-trainer")["values"]["runtimes"]
    assert runtimes["torchDistributed"] == {"enabled": False}
    assert not any(v.get("enabled") for v in runtimes.values())  # the others: only their images moved to the mirror
    cm = manifest(r, "ConfigMap", "trainer-webhook-ready", "kubeflow-system")
    probed = yaml.safe_load(cm["data"][webhooks.PROBE_FILE])
    (runtime,) = r.of_type("kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime")
    assert runtime.inputs["metadata"]["name"] == "torch-distributed"
    assert probed["spec"] == runtime.inputs["spec"] and probed["metadata"]["name"] == webhooks.PROBE_OBJECT_NAME
    assert {"trainer", "trainer-webhook-ready"} <= set(runtime.depends_on)
    crd = yaml.safe_load(
        (UPSTREAM / "crds" / "kubeflow-trainer" / "trainer.kubeflow.org_clustertrainingruntimes.yaml").read_text()
    )
    (version,) = crd["spec"]["versions"]
    validator = Draft7Validator(strict_crd_schema(version["schema"]["openAPIV3Schema"]))
    assert [e.message for e in validator.iter_errors(probed)] == []
    assert operators.trainer_probe(r.spec).namespace == "kubeflow-system"


def test_the_runtime_image_follows_the_image_registry():
    """The runtime's image is one the platform sets: with imageRegistry it comes from the mirror, under Docker Hub's
    host as the mirror's first path segment (versions.image's layout); the gate dry-runs the same image."""
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:imageRegistry"] = "harbor.internal/mirror"
    images = cfg["gpu-platform:images"]  # one mirror: imageRegistry, not the stack's ECR cache
    images["mirror"] = "none"
    del images["pullThrough"]
    r = render_config(cfg, "prod-aws")
    (runtime,) = r.of_type("kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime")
    (job,) = runtime.inputs["spec"]["template"]["spec"]["replicatedJobs"]
    (container,) = job["template"]["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "harbor.internal/mirror/docker.io/pytorch/pytorch:2.10.0-cuda12.8-cudnn9-runtime"
    cm = manifest(r, "ConfigMap", "trainer-webhook-ready", "kubeflow-system")
    assert yaml.safe_load(cm["data"][webhooks.PROBE_FILE])["spec"] == runtime.inputs["spec"]
