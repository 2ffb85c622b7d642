"""The ECR pull-through cache as the AL2023 nodes' containerd mirror (issue 39.2, components/plan/aws/ecr_mirror.py).

The user data is taken from the rendered launch templates and EC2NodeClasses, its refresher script is run by bash
against a fake `aws` and against the real AWS CLI talking to a fake IMDS and ECR on 127.0.0.1, and the files it writes
are read as containerd would: hosts.toml per containerd's docs/hosts.md (server, [host."URL"], capabilities,
override_path, [host."URL".header]), the URL's path `/v2/<prefix>` with the prefix of the rendered
PullThroughCacheRule, the header ECR's HTTP API takes (`Authorization: Basic <token>`, ECR user guide "Private
registry authentication")."""

from __future__ import annotations

import base64
import configparser
import email
import json
import os
import stat
import subprocess
import sys
import threading
import tomllib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import rendered, stack_config

from components.cli.loader import load_spec
from components.plan import plan as plan_module
from components.plan.aws import ecr_mirror

ECR = "123456789012.dkr.ecr.us-east-1.amazonaws.com"  # prod-aws: images.pullThrough.accountId and aws:region
RULE = "aws:ecr/pullThroughCacheRule:PullThroughCacheRule"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
SHELL = "text/x-shellscript"
NODEADM = "application/node.eks.aws"
# containerd docs/hosts.md: Docker Hub's namespace is served by registry-1.docker.io ("Simple (default) Host Config
# for Docker"); every other upstream by its own host
UPSTREAM_SERVER = {"docker.io": "https://registry-1.docker.io"}


def _parts(user_data: str) -> dict[str, str]:
    message = email.message_from_string(user_data)
    assert message.is_multipart() and message.get_boundary() == "//"
    return {p.get_content_type(): p.get_payload() for p in message.get_payload()}


def _launch_template_user_data(pool: str) -> str | None:
    data = rendered("prod-aws").find(LAUNCH_TEMPLATE, pool).inputs.get("userData")
    return base64.b64decode(data).decode() if data else None


def _node_classes() -> list[dict[str, Any]]:
    return [m for m in rendered("prod-aws").manifests if m["kind"] == "EC2NodeClass"]


def _refresher(install: str) -> str:
    """The refresher as the install script writes it (its quoted heredoc: written byte for byte)."""
    head = "<<'REFRESHER'\n"
    return install[install.index(head) + len(head) : install.index("\nREFRESHER\n") + 1]


def _rule_prefixes() -> dict[str, str]:
    """upstream host -> the rendered rule's ecrRepositoryPrefix (what the cache serves under /v2/<prefix>/)."""
    rules = rendered("prod-aws").of_type(RULE)
    by_url = {"registry-1.docker.io": "docker.io"}
    return {
        by_url.get(r.inputs["upstreamRegistryUrl"], r.inputs["upstreamRegistryUrl"]): r.inputs["ecrRepositoryPrefix"]
        for r in rules
    }


def _run(script: str, tmp: Path, env: dict[str, str], hosts_dir: Path) -> subprocess.CompletedProcess:
    """The refresher with its hosts directory moved under ``tmp`` (the one line that names it)."""
    moved = script.replace(f"hosts_dir='{ecr_mirror.HOSTS_DIR}'", f"hosts_dir='{hosts_dir}'")
    moved = moved.replace("sleep $((attempt * 5))", "sleep 0")
    assert moved.count(str(hosts_dir)) == 1
    path = tmp / "refresher"
    path.write_text(moved)
    return subprocess.run(["bash", str(path)], env=env, capture_output=True, text=True, timeout=120)


def _fake_aws(tmp: Path, token: str) -> Path:
    """An `aws` that records its arguments and environment and prints ``token``."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp / "aws.log"
    aws = bin_dir / "aws"
    aws.write_text(
        "#!/bin/bash\n"
        f'printf "%s\\n" "$*" >>{log}\n'
        f'printf "V1_DISABLED=%s\\n" "${{AWS_EC2_METADATA_V1_DISABLED:-}}" >>{log}\n'
        f"printf '%s\\n' {json.dumps(token)}\n"
    )
    aws.chmod(0o755)
    return bin_dir


def _env(tmp: Path, path: str) -> dict[str, str]:
    home, tmpdir = tmp / "home", tmp / "tmp"
    home.mkdir(exist_ok=True)
    tmpdir.mkdir(exist_ok=True)
    return {"PATH": path, "HOME": str(home), "TMPDIR": str(tmpdir), "LANG": "C"}


def _files_holding(tmp: Path, secret: str) -> list[Path]:
    """Files holding ``secret`` where the refresher may write: its HOME, TMPDIR and the hosts directory (the fake
    `aws` and its log, which print the token, are elsewhere)."""
    roots = [tmp / "home", tmp / "tmp", tmp / "certs.d"]
    return sorted(p for r in roots for p in r.rglob("*") if p.is_file() and secret in p.read_text(errors="replace"))


# --------------------------------------------------------------------------------------------- which nodes


def test_al2023_pools_carry_the_mirror_and_bottlerocket_pools_do_not():
    """prod-aws: its AL2023 managed groups and its Karpenter AL2023 class run the installer (a shell part cloud-init
    runs); its Bottlerocket pools keep their TOML settings and rewritten references."""
    for pool in ("h100-inference", "l4-notebooks"):
        parts = _parts(_launch_template_user_data(pool))
        assert SHELL in parts, pool
        assert "systemctl enable --now gpu-platform-ecr-mirror.timer" in parts[SHELL]
    for pool in ("a100-train", "a100-gang"):
        assert "MIME-Version" not in (_launch_template_user_data(pool) or "")
    al2023 = [c for c in _node_classes() if c["spec"]["amiSelectorTerms"][0]["alias"].startswith("al2023@")]
    assert al2023 and all(SHELL in _parts(c["spec"]["userData"]) for c in al2023)

    p = plan_module.build(load_spec(stack_config("prod-aws")), "prod-aws").images
    hosts = tuple(sorted(_rule_prefixes()))
    assert {n: x.mirror_hosts for n, x in p.pools.items()} == {
        "a100-train": (),
        "h100-inference": hosts,
        "h100-spot": hosts,
        "l4-notebooks": hosts,
        "a100-gang": (),
    }
    from components.cli import main as cli
    from components.plan import images_text

    lines = images_text.text(p)
    spot = next(x for x in lines if x.startswith("  h100-spot:"))
    assert f"containerd mirror: {', '.join(hosts)} through {ECR} (the image's own reference)" in spot
    gang = next(x for x in lines if x.startswith("  a100-gang:"))
    assert f"references rewritten to {ECR};" in gang and "containerd mirror" not in gang
    groups = cli.plan_text(plan_module.build(load_spec(stack_config("prod-aws")), "prod-aws"))
    (inference,) = [x for x in groups if "node group" in x and "h100-inference" in x]
    assert "nodeadm NodeConfig, containerd mirror of the ECR cache" in inference


def test_a_fast_image_pull_pool_keeps_rewritten_references():
    """FastImagePull's SOCI snapshotter fetches layers itself and reads no hosts.toml (awslabs/soci-snapshotter#1561):
    a pool holding a declared image keeps the cache's reference and gets no mirror; the plan says why."""
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:images"]["workloads"][0]["pools"].append("h100-inference")
    spec = load_spec(cfg)
    p = plan_module.build(spec, "prod-aws")
    assert p.images.pools["h100-inference"].mirror_hosts == ()
    ud = p.aws.node_groups["h100-inference"].launch_template.user_data
    assert set(_parts(ud)) == {NODEADM}
    from components.plan import images_text

    line = next(x for x in images_text.text(p.images) if x.startswith("  h100-inference:"))
    assert f"references rewritten to {ECR} (FastImagePull's SOCI snapshotter reads no hosts.toml)" in line


def test_declared_images_name_the_cache_on_every_pool():
    """A pool that holds a declared image runs FastImagePull on AL2023 (so no mirror there), a Bottlerocket pool has
    no mirror: the declared image names the cache wherever it is warm, and the pre-puller pulls that reference."""
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:images"]["workloads"].append(
        {"name": "server", "image": "docker.io/vllm/vllm-openai:v0.11.0", "pools": ["h100-spot", "a100-train"]}
    )
    p = plan_module.build(load_spec(cfg), "prod-aws").images
    for pool in ("h100-spot", "a100-train"):
        (server,) = [i for i in p.pools[pool].images if i.name == "server"]
        assert server.pull == f"{ECR}/docker.io/vllm/vllm-openai:v0.11.0", pool
        assert p.pools[pool].mirror_hosts == ()
    init = p.pools["h100-spot"].pre_puller["spec"]["template"]["spec"]["initContainers"]
    assert f"{ECR}/docker.io/vllm/vllm-openai:v0.11.0" in [c["image"] for c in init]


def test_explain_says_a_workload_on_a_mirror_pool_pulls_its_own_reference_through_the_mirror():
    """An image naming docker.io on an AL2023 pool: pulled through the nodes' containerd mirror, no warning; on a
    Bottlerocket pool: neither warm nor mirrored (a warning naming the way out); NGC's (copied, no rule) on the
    AL2023 pool: not mirrored either."""
    from components.explain import images as explain_images

    p = plan_module.build(load_spec(stack_config("prod-aws")), "prod-aws")
    vllm = "docker.io/vllm/vllm-openai:v0.11.0"
    on_al2023 = explain_images.note(p.images, p.pools["h100-spot"], [vllm])
    assert on_al2023.startswith(f"{vllm} is pulled through the mirror (the nodes' containerd mirror), not warm on")
    on_bottlerocket = explain_images.note(p.images, p.pools["a100-gang"], [vllm])
    assert on_bottlerocket.startswith(f"warning: {vllm} is neither warm nor mirrored on a100-gang")
    ngc = explain_images.note(p.images, p.pools["h100-spot"], ["nvcr.io/nvidia/tritonserver:25.08-py3"])
    assert ngc.startswith("warning: nvcr.io/nvidia/tritonserver:25.08-py3 is neither warm nor mirrored")


# ------------------------------------------------------------------------------------ the rendered files


def _install_script(pool: str = "h100-inference") -> str:
    return _parts(_launch_template_user_data(pool))[SHELL]


def test_every_al2023_user_data_installs_the_same_refresher():
    """Managed groups and Karpenter classes get the one script (stack-wide), so a shared class is still shared."""
    scripts = {_install_script(p) for p in ("h100-inference", "l4-notebooks")}
    scripts |= {
        _parts(c["spec"]["userData"])[SHELL]
        for c in _node_classes()
        if c["spec"]["amiSelectorTerms"][0]["alias"].startswith("al2023@")
    }
    assert len(scripts) == 1


def test_the_scripts_are_bash_and_the_units_run_before_nodeadm_and_well_within_the_token_life():
    install = _install_script()
    for script in (install, _refresher(install)):
        assert subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True).returncode == 0
    units = {}
    for name in ("service", "timer"):
        head = f"cat >/etc/systemd/system/gpu-platform-ecr-mirror.{name} <<'UNIT'\n"
        body = install[install.index(head) + len(head) :]
        parser = configparser.ConfigParser(strict=False, interpolation=None)
        parser.optionxform = str
        parser.read_string(body[: body.index("\nUNIT\n")])
        units[name] = parser
    service, timer = units["service"], units["timer"]
    # nodeadm-run.service starts containerd and the kubelet (amazon-eks-ami v20260724 templates/al2023/runtime)
    assert {"nodeadm-run.service", "kubelet.service"} <= set(service["Unit"]["Before"].split())
    assert service["Service"]["ExecStart"] == ecr_mirror.REFRESHER and service["Service"]["Type"] == "oneshot"
    hours = {k: timer["Timer"][k] for k in ("OnActiveSec", "OnUnitActiveSec")}
    assert all(v.endswith("h") and 0 < int(v[:-1]) <= 6 for v in hours.values()), hours  # ECR tokens live 12 h
    # the installer runs the refresher once itself, and a failure does not stop the boot
    assert install.rstrip().splitlines()[-1].startswith(f"{ecr_mirror.REFRESHER} || ")


def test_the_refresher_writes_hosts_toml_in_containerds_format_for_each_rule(tmp_path):
    """Run against a fake `aws`: one hosts.toml per rendered pull-through rule, at <config_path>/<upstream>/, as
    containerd's docs/hosts.md describes it, pointing at the rule's prefix on the cache; mode 0600."""
    token = base64.b64encode(b"AWS:" + b"x" * 1500).decode()
    bin_dir = _fake_aws(tmp_path, token)
    hosts_dir = tmp_path / "certs.d"
    run = _run(_refresher(_install_script()), tmp_path, _env(tmp_path, f"{bin_dir}:/usr/bin:/bin"), hosts_dir)
    assert run.returncode == 0, run.stderr
    prefixes = _rule_prefixes()
    assert sorted(p.name for p in hosts_dir.iterdir()) == sorted(prefixes)
    for upstream, prefix in prefixes.items():
        path = hosts_dir / upstream / "hosts.toml"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        doc = tomllib.loads(path.read_text())
        assert doc["server"] == UPSTREAM_SERVER.get(upstream, f"https://{upstream}")
        url = f"https://{ECR}/v2/{prefix}"
        assert list(doc["host"]) == [url]
        host = doc["host"][url]
        assert host["capabilities"] == ["pull", "resolve"]
        assert host["override_path"] is True  # the URL path is the API root: /v2/<prefix>/<repository>/...
        assert host["header"] == {"Authorization": f"Basic {token}"}
    log = (tmp_path / "aws.log").read_text().splitlines()
    assert log[0] == (
        "ecr get-authorization-token --region us-east-1 --output text --query authorizationData[0].authorizationToken"
    )
    assert log[1] == "V1_DISABLED=true"  # IMDSv2 only for the instance role's credentials
    assert token not in run.stdout + run.stderr
    assert _files_holding(tmp_path, token) == sorted(hosts_dir / u / "hosts.toml" for u in prefixes)


def test_a_token_that_is_not_base64_is_refused_and_the_files_stay(tmp_path):
    """What the CLI prints goes into TOML: anything but a base64 token (a quote would end the string) is refused,
    and the previous files (a still-valid token) stay as they were."""
    hosts_dir = tmp_path / "certs.d"
    good = base64.b64encode(b"AWS:first").decode()
    env = _env(tmp_path, f"{_fake_aws(tmp_path, good)}:/usr/bin:/bin")
    assert _run(_refresher(_install_script()), tmp_path, env, hosts_dir).returncode == 0
    before = {p: p.read_text() for p in hosts_dir.rglob("hosts.toml")}
    _fake_aws(tmp_path, 'abc"\n[host."https://evil"]')
    run = _run(_refresher(_install_script()), tmp_path, env, hosts_dir)
    assert run.returncode == 1 and "no ECR authorization token" in run.stderr
    assert {p: p.read_text() for p in hosts_dir.rglob("hosts.toml")} == before
    assert not [p for p in hosts_dir.rglob("*") if p.is_file() and p.name != "hosts.toml"]  # no temp file left


# --------------------------------------------------------------------- the real AWS CLI, a fake IMDS and ECR


class _FakeAws(BaseHTTPRequestHandler):
    """IMDSv2 (token, role, credentials) and ECR's GetAuthorizationToken on one port; records what it is asked."""

    server: Any

    def log_message(self, *args):  # quiet
        pass

    def _send(self, code: int, body: str, ctype: str = "text/plain") -> None:
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_PUT(self):
        s = self.server
        s.seen.append(("PUT", self.path, {k.lower(): v for k, v in self.headers.items()}))
        if self.path == "/latest/api/token" and s.imdsv2:
            return self._send(200, "imds-session-token")
        return self._send(403, "")

    def do_GET(self):
        s = self.server
        s.seen.append(("GET", self.path, {k.lower(): v for k, v in self.headers.items()}))
        if self.headers.get("X-aws-ec2-metadata-token") != "imds-session-token":
            return self._send(401, "")
        base = "/latest/meta-data/iam/security-credentials/"
        if self.path == base:
            return self._send(200, "gpu-node-role")
        if self.path == base + "gpu-node-role":
            creds = {
                "Code": "Success",
                "Type": "AWS-HMAC",
                "AccessKeyId": "ASIANODEROLE",
                "SecretAccessKey": "node-role-secret",
                "Token": "node-role-session",
                "Expiration": "2099-01-01T00:00:00Z",
                "LastUpdated": "2026-01-01T00:00:00Z",
            }
            return self._send(200, json.dumps(creds), "application/json")
        return self._send(404, "")

    def do_POST(self):
        s = self.server
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        s.seen.append(("POST", self.path, {k.lower(): v for k, v in self.headers.items()}))
        target = self.headers.get("X-Amz-Target", "")
        auth = self.headers.get("Authorization", "")
        signed = "Credential=ASIANODEROLE/" in auth and self.headers.get("X-Amz-Security-Token") == "node-role-session"
        if not target.endswith(".GetAuthorizationToken") or not signed:
            return self._send(403, json.dumps({"__type": "AccessDeniedException"}), "application/x-amz-json-1.1")
        data = {
            "authorizationData": [
                {"authorizationToken": s.token, "expiresAt": 4102444800, "proxyEndpoint": f"https://{ECR}"}
            ]
        }
        return self._send(200, json.dumps(data), "application/x-amz-json-1.1")


@pytest.fixture
def fake_aws():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeAws)
    server.seen, server.imdsv2, server.token = [], True, base64.b64encode(b"AWS:first-token").decode()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _cli_env(tmp: Path, port: int) -> dict[str, str]:
    # the dev lock's awscli (pyproject.toml [dev]), beside the interpreter that runs the tests
    aws = str(Path(sys.executable).parent / "aws")
    assert Path(aws).is_file(), f"{aws} missing: `make setup` installs the dev lock's awscli"
    env = _env(tmp, f"{Path(aws).parent}:/usr/bin:/bin")
    none = str(tmp / "no-such-file")
    env.update(
        AWS_CONFIG_FILE=none,
        AWS_SHARED_CREDENTIALS_FILE=none,
        AWS_EC2_METADATA_SERVICE_ENDPOINT=f"http://127.0.0.1:{port}/",
        AWS_ENDPOINT_URL_ECR=f"http://127.0.0.1:{port}",
        AWS_METADATA_SERVICE_NUM_ATTEMPTS="1",
        AWS_MAX_ATTEMPTS="1",
    )
    for key in ("PYENV_ROOT", "PYENV_VERSION"):
        if key in os.environ:
            env[key] = os.environ[key]
    return env


def test_the_refresher_gets_the_token_with_imdsv2_and_refreshes_it(tmp_path, fake_aws):
    """The real AWS CLI: the instance role's credentials from IMDSv2 (a session token first, every read with it), a
    SigV4-signed GetAuthorizationToken with them, the token only in the hosts.toml files; a second run writes the
    new token."""
    env = _cli_env(tmp_path, fake_aws.server_address[1])
    hosts_dir = tmp_path / "certs.d"
    script = _refresher(_install_script())
    run = _run(script, tmp_path, env, hosts_dir)
    assert run.returncode == 0, run.stderr
    first = fake_aws.token
    docker = hosts_dir / "docker.io" / "hosts.toml"
    url = f"https://{ECR}/v2/docker.io"
    assert tomllib.loads(docker.read_text())["host"][url]["header"] == {"Authorization": f"Basic {first}"}
    methods = [(m, p) for m, p, _ in fake_aws.seen]
    assert methods[0] == ("PUT", "/latest/api/token")
    assert all(h.get("x-aws-ec2-metadata-token") == "imds-session-token" for m, _, h in fake_aws.seen if m == "GET")
    assert ("POST", "/") in methods
    assert first not in run.stdout + run.stderr
    assert _files_holding(tmp_path, first) == sorted(hosts_dir.rglob("hosts.toml"))

    fake_aws.token = base64.b64encode(b"AWS:second-token").decode()
    assert _run(script, tmp_path, env, hosts_dir).returncode == 0
    assert tomllib.loads(docker.read_text())["host"][url]["header"] == {"Authorization": f"Basic {fake_aws.token}"}
    assert _files_holding(tmp_path, first) == []


def test_the_refresher_never_falls_back_to_imdsv1(tmp_path, fake_aws):
    """An IMDS that refuses session tokens (v1 only): the CLI must not read the role's credentials without one, so no
    token comes and nothing is written."""
    fake_aws.imdsv2 = False
    env = _cli_env(tmp_path, fake_aws.server_address[1])
    hosts_dir = tmp_path / "certs.d"
    run = _run(_refresher(_install_script()), tmp_path, env, hosts_dir)
    assert run.returncode == 1
    assert not hosts_dir.exists() or not list(hosts_dir.rglob("hosts.toml"))
    assert not [s for s in fake_aws.seen if s[0] == "GET" and "x-aws-ec2-metadata-token" not in s[2]]
    assert not [s for s in fake_aws.seen if s[0] == "POST"]


def test_every_node_role_of_a_mirror_pool_may_get_an_authorization_token():
    """The refresher calls ecr:GetAuthorizationToken with the instance role: AmazonEC2ContainerRegistryPullOnly
    grants it (AWS managed policy reference: its actions are ecr:GetAuthorizationToken, ecr:BatchGetImage,
    ecr:GetDownloadUrlForLayer), and both the managed groups' and Karpenter's node roles carry it."""
    r = rendered("prod-aws")
    attached = [x.inputs for x in r.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")]
    pull_only = [
        a for a in attached if str(a.get("policyArn", "")).endswith(":policy/AmazonEC2ContainerRegistryPullOnly")
    ]
    roles = {str(a["role"]) for a in pull_only}
    assert roles == {"ml-prod-gpu-node", "ml-prod-karpenter-node"}  # the managed groups' node role and Karpenter's
